# ruff: noqa: E501  (a table of test ids, one a line)
"""The test tiers (issue 22): which tests belong to the ``slow`` tier, by measurement.

``python -m pytest -m "not slow"`` is the quick tier; ``python -m pytest`` runs everything.
A test is slow when marked ``@pytest.mark.slow`` where it is written (long runs: the
ego-Facebook graph, large fleets, long benches) or when it is listed in ``SLOW`` below:
the tests that cost 0.5 s or more each, measured on the whole suite (CPU seconds of the
pytest process and its finished children per test function, all parametrisations
together; the wall time of a loaded machine divided by its load factor 3.4 where that was
larger), except one cheap test per test file and a few end-to-end smoke runs kept in the
quick tier so that it still goes through every module (in-memory, embedded-broker and
secure-sum runs, CADR-LDP and GC-DP fleets, the report, the CLI, the layer check).

Keys are ``file::function`` (every parametrisation) or a whole ``file``; the value is the
measured cost in seconds, to re-balance the tiers later. Registered by tests/conftest.py.
"""

from __future__ import annotations

import pytest

SLOW: dict[str, float] = {
    "tests/e2e/test_audit_fleet.py::test_a_wire_bug_the_function_level_audits_pass": 2.9,
    "tests/e2e/test_audit_fleet.py::test_a_world_gives_the_same_trace_values_on_the_embedded_broker": 1.1,
    "tests/e2e/test_audit_fleet.py::test_battery_entry_and_command": 4.3,
    "tests/e2e/test_audit_fleet.py::test_correct_fleet_path_is_inconclusive_with_the_default_trials": 25.8,
    "tests/e2e/test_audit_fleet.py::test_planted_bug_on_the_fleet_path_is_a_violation": 12.3,
    "tests/e2e/test_audit_fleet.py::test_reused_seeds_are_caught_by_the_partner_pairing": 2.5,
    "tests/e2e/test_cadr_fleet.py::test_dp_pipeline_searches_theta_privately_and_releases_the_post_processed_sequence": 0.5,
    "tests/e2e/test_cadr_fleet.py::test_embedded_broker_gives_the_memory_release": 1.7,
    "tests/e2e/test_cadr_fleet.py::test_mosquitto_gives_the_memory_release": 1.1,
    "tests/e2e/test_cadr_fleet.py::test_the_cli_reports_each_cadr_stage_as_it_completes_and_writes_the_report": 1.7,
    "tests/e2e/test_cadr_sides.py::test_a_fleet_without_a_collector_stops_with_one_sentence": 2.7,
    "tests/e2e/test_cadr_sides.py::test_both_sides_in_one_process_over_a_memory_transport": 1.0,
    "tests/e2e/test_cadr_sides.py::test_announce_every_reaches_fleets_that_never_get_the_retained_announcement": 1.1,
    "tests/e2e/test_cadr_theta_noise.py::test_the_count_release_canary_is_in_the_battery_and_holds_its_claim": 0.6,
    "tests/e2e/test_cli.py::test_bench_cadr_over_the_fleet_prints_the_figures": 0.6,
    "tests/e2e/test_cli.py::test_bench_cadr_reference_and_its_errors": 1.9,
    "tests/e2e/test_cli.py::test_collector_and_two_fleet_shards_as_separate_processes": 8.8,
    "tests/e2e/test_cli.py::test_user_errors_are_one_sentence_and_exit_2": 0.6,
    "tests/e2e/test_cpr_runs.py::test_baseline_reconstruction_and_laplace_devices": 0.7,
    "tests/e2e/test_cpr_runs.py::test_bench_cpr_prints_detection_and_cosine_tables": 1.3,
    "tests/e2e/test_fault_collector_kill.py": 11.0,
    "tests/e2e/test_fault_device_crashes.py": 11.5,
    "tests/e2e/test_fault_mosquitto_restart.py": 1.1,
    "tests/e2e/test_fault_reconnect.py": 1.1,
    "tests/e2e/test_fault_shard_kill.py": 27.4,
    "tests/e2e/test_fault_slow_collector.py": 7.2,
    "tests/e2e/test_gateway.py::test_a_gateway_fleet_gives_the_per_device_results": 1.2,
    "tests/e2e/test_gcdp_fleet.py::test_occupancy_release_on_embedded_broker": 3.5,
    "tests/e2e/test_gcdp_fleet.py::test_occupancy_release_on_mosquitto": 1.9,
    "tests/e2e/test_progress.py::test_bench_cpr_counts_its_cells": 2.5,
    "tests/e2e/test_progress.py::test_bench_secagg_shows_the_connect_phase_on_a_terminal": 2.1,
    "tests/e2e/test_progress.py::test_no_progress_under_json_or_into_a_pipe": 4.0,
    "tests/e2e/test_progress.py::test_report_writing_shows_its_sections": 7.0,
    "tests/e2e/test_report.py::test_a_cadr_run_says_its_trace_kept_control_messages_only": 1.1,
    "tests/e2e/test_report.py::test_a_cpr_run_reports_reconstructions_against_the_truth": 1.1,
    "tests/e2e/test_report.py::test_a_gcdp_run_reports_budgets_per_coordinate": 1.1,
    "tests/e2e/test_report.py::test_an_audit_saved_next_to_a_run_is_in_its_report": 0.9,
    "tests/e2e/test_report.py::test_report_command_on_a_secure_aggregation_run": 1.2,
    "tests/e2e/test_report.py::test_the_report_leads_with_a_headline": 0.6,
    "tests/e2e/test_report_browser.py": 9.1,
    "tests/e2e/test_run_folder_clean.py::test_a_cadr_run_leaves_no_wal_files": 1.9,
    "tests/e2e/test_run_folder_clean.py::test_a_stream_run_leaves_no_wal_files": 1.8,
    "tests/e2e/test_run_folder_clean.py::test_a_stream_run_on_the_embedded_broker_leaves_no_wal_files": 6.0,
    "tests/e2e/test_secure_sum.py::test_200_devices_on_mosquitto_with_10_percent_dropout": 1.1,
    "tests/e2e/test_secure_sum.py::test_200_devices_on_the_embedded_broker_with_10_percent_dropout": 2.9,
    "tests/e2e/test_secure_sum.py::test_secure_sum_stage_of_a_scenario": 1.4,
    "tests/e2e/test_sides.py::test_a_collector_without_fleet_says_so_and_exits_1": 2.6,
    "tests/e2e/test_sides.py::test_collector_killed_during_the_secure_sum_stops_the_devices": 9.7,
    "tests/e2e/test_split_run.py::test_ldpfleet_run_on_the_embedded_broker_runs_the_collector_as_its_own_process": 14.2,
    "tests/e2e/test_stream_runs.py::test_a_finished_run_leaves_no_persistent_session_behind": 0.8,
    "tests/e2e/test_stream_runs.py::test_hostile_input_is_rejected_counted_traced_and_never_aggregated": 8.9,
    "tests/e2e/test_stream_runs.py::test_quickstart_on_embedded_broker": 3.8,
    "tests/e2e/test_stream_runs.py::test_quickstart_on_mosquitto_gives_identical_values": 8.4,
    "tests/e2e/test_trace_follow.py::test_follow_shows_a_devices_secure_aggregation_rounds_in_order": 0.7,
    "tests/e2e/test_trace_verify.py::test_a_clean_run_verifies": 11.1,
    "tests/e2e/test_trace_verify.py::test_a_tampered_central_release_is_caught": 3.1,
    "tests/e2e/test_trace_verify.py::test_a_tampered_stream_trace_or_ledger_is_caught": 1.5,
    "tests/e2e/test_trace_verify.py::test_a_whole_trace_rewritten_with_a_new_key_is_caught_by_the_results_key": 0.6,
    "tests/e2e/test_trace_verify.py::test_raising_eps_in_the_trace_and_the_ledger_together_is_caught": 0.9,
    "tests/e2e/test_trace_verify.py::test_swapping_a_senders_report_is_caught": 0.5,
    "tests/e2e/test_trace_verify.py::test_the_run_prints_the_public_key": 1.3,
    "tests/unit/test_acl.py::test_filter_containment_is_sound": 2.3,
    "tests/unit/test_audit.py::test_every_correct_mechanism_passes_its_audit_family_wise": 11.4,
    "tests/unit/test_audit.py::test_every_planted_bug_is_caught": 1.8,
    "tests/unit/test_audit.py::test_false_alarm_rate_of_a_correct_mechanism_is_at_most_gamma": 0.9,
    "tests/unit/test_audit_graph.py::test_correct_pipeline_is_inconclusive_against_the_battery_claim": 8.0,
    "tests/unit/test_audit_graph.py::test_er_construction_runs_and_is_inconclusive": 4.6,
    "tests/unit/test_audit_graph.py::test_finding_the_whole_view_is_not_eps_node_ldp": 2.4,
    "tests/unit/test_audit_graph.py::test_planted_bug_is_caught": 8.5,
    "tests/unit/test_audit_machines.py::test_honest_machines_are_inconclusive_at_their_claims": 11.2,
    "tests/unit/test_audit_machines.py::test_machine_canaries_catch_the_bugs_the_function_level_entries_miss": 19.6,
    "tests/unit/test_audit_machines.py::test_the_test_run_sees_the_mutant_in_a_subprocess": 8.5,
    "tests/unit/test_audit_secagg.py::test_command_runs_secagg_at_eps_0": 3.3,
    "tests/unit/test_audit_secagg.py::test_correct_protocol_is_inconclusive_and_the_planted_bug_is_caught": 11.7,
    "tests/unit/test_bench_gcdp.py::test_command": 1.5,
    "tests/unit/test_bench_gcdp.py::test_deterministic_for_a_seed": 3.9,
    "tests/unit/test_bench_gcdp.py::test_structure": 4.1,
    "tests/unit/test_bench_gcdp_datasets.py::test_deterministic_and_paired": 2.5,
    "tests/unit/test_bench_gcdp_datasets.py::test_intel_structure": 4.4,
    "tests/unit/test_bench_gcdp_datasets.py::test_wisdm_structure": 4.0,
    "tests/unit/test_bench_gcdp_scaling.py::test_commands": 0.7,
    "tests/unit/test_bench_gcdp_scaling.py::test_scaling_plot_written": 1.4,
    "tests/unit/test_bench_mechanisms.py::test_cells_and_agreement_with_the_analytic_mse": 4.3,
    "tests/unit/test_cadr_grid.py::test_the_held_out_graphs_are_new_simple_and_reachable_by_name": 1.0,
    "tests/unit/test_cadr_mechanisms.py::test_exponential_sampling_frequencies_match_probabilities": 4.5,
    "tests/unit/test_cadr_mechanisms.py::test_theta_by_sum_is_the_brute_force_argmin": 2.7,
    "tests/unit/test_cadr_reference.py::test_a_larger_budget_lowers_the_error": 0.9,
    "tests/unit/test_cadr_reference.py::test_private_runs_are_deterministic_and_bounded": 0.8,
    "tests/unit/test_cadr_sweep.py::test_released_noise_has_the_dsr_scale": 1.1,
    "tests/unit/test_cadr_sweep.py::test_sweep_does_not_depend_on_the_worker_count": 0.8,
    "tests/unit/test_cadr_sweep.py::test_sweep_structure": 2.9,
    "tests/unit/test_cli_imports.py::test_the_benches_run_the_registered_command_lines": 0.5,
    "tests/unit/test_codec_fuzz.py::test_arbitrary_bytes_and_json_raise_only_the_declared_error": 3.4,
    "tests/unit/test_codec_fuzz.py::test_round_trip_and_broken_payloads": 97.7,
    "tests/unit/test_cpr.py::test_parallel_fleet_reconstruction_equals_serial": 2.1,
    "tests/unit/test_degree_postprocess.py::test_noise_weight_is_a_fraction_growing_with_eps": 1.3,
    "tests/unit/test_gcdp_allocation.py::test_proposition_2_floor_and_total": 6.0,
    "tests/unit/test_gcdp_attacks.py::test_attack_readings_change_only_the_attack": 1.5,
    "tests/unit/test_gcdp_attacks.py::test_noise_law_is_each_release_s_noise": 0.9,
    "tests/unit/test_gcdp_fleet.py::test_ledger_is_charged_eps_rel_before_each_draw": 0.6,
    "tests/unit/test_gcdp_graph.py::test_degree_cap_is_never_exceeded_and_greedy_is_maximal": 2.5,
    "tests/unit/test_gcdp_exact_gaussian.py::test_rho_and_grid_certify_delta_and_the_cost": 4.5,
    "tests/unit/test_gcdp_readings.py::test_gau_dp_uses_the_given_certificate_statistically": 6.2,
    "tests/unit/test_gcdp_readings.py::test_kept_readings_beat_the_old_ones_on_datatest2": 32.1,
    "tests/unit/test_gcdp_readings.py::test_table8_eps1_within_two_points": 17.5,
    "tests/unit/test_gcdp_release.py::test_gau_dp_uses_the_certified_sigma_of_the_l2_certificate": 4.7,
    "tests/unit/test_gcdp_release.py::test_laplace_release_has_the_certified_scale": 2.5,
    "tests/unit/test_gcdp_release.py::test_worst_case_log_ratio_of_the_pipeline_is_at_most_eps_rel": 1.3,
    "tests/unit/test_gcdp_sensitivity.py::test_analytic_certificates_bound_every_neighbour": 1.8,
    "tests/unit/test_gcdp_sensitivity.py::test_proposition_1_scales_dominate_certified_bounds": 2.7,
    "tests/unit/test_graphs_projection.py::test_every_method_keeps_a_capped_subgraph": 0.8,
    "tests/unit/test_graphs_projection.py::test_projections_deterministic_per_seed_on_facebook": 2.1,
    "tests/unit/test_graphs_projection.py::test_table2_ordering_on_ego_facebook": 9.2,
    "tests/unit/test_graphs_projection.py::test_theta_zero_and_bad_parameters": 0.6,
    "tests/unit/test_kde_baselines_metrics.py::test_kde_density_integrates_to_one_with_mirror": 0.6,
    "tests/unit/test_ledger.py::test_charge_run_equals_sequential_charges": 1.1,
    "tests/unit/test_lpea_machine.py::test_adversarial_delivery_orders_keep_the_invariants": 2.4,
    "tests/unit/test_lpea_machine.py::test_adversarial_finish_requests_with_lost_answers": 1.3,
    "tests/unit/test_lpea_machine.py::test_non_private_limit_reaches_a_maximal_projection": 1.0,
    "tests/unit/test_mechanism_registry.py::test_an_installed_distribution_registers_a_name_through_its_entry_point": 1.7,
    "tests/unit/test_mechanism_registry.py::test_cli_audit_of_a_plugin_and_of_bad_plugins": 6.9,
    "tests/unit/test_mechanism_registry.py::test_cli_run_of_a_bad_plugin_scenario_exits_2": 1.5,
    "tests/unit/test_memory_transport.py::test_trie_agrees_with_topics_matches": 3.1,
    "tests/unit/test_memory_transport.py::test_trie_remove_client_keeps_exactly_the_others_subscriptions": 3.0,
    "tests/unit/test_mqtt_wire.py::test_reader_decodes_the_same_whatever_the_split": 0.5,
    "tests/unit/test_period.py::test_clean_periodic_streams_are_recovered_exactly": 0.5,
    "tests/unit/test_period.py::test_gaussian_noise_is_not_a_period": 1.7,
    "tests/unit/test_period.py::test_shift_discrepancy_matches_naive_loop": 1.2,
    "tests/unit/test_period.py::test_sw_aperiodic_streams_rarely_get_a_period": 2.7,
    "tests/unit/test_period.py::test_three_cycles_of_rough_cycles_are_claimed_where_the_baselines_succeed": 1.7,
    "tests/unit/test_period.py::test_red_streams_with_few_cycles_rarely_get_a_period_through_the_neighbour_test": 5.4,
    "tests/unit/test_samplers.py::test_discrete_laplace_agrees_with_opendp": 1.2,
    "tests/unit/test_samplers.py::test_the_small_request_path_matches_the_pmf_too": 0.5,
    "tests/unit/test_secagg_active.py::test_full_graph_sums_exactly_with_dropouts_at_every_stage": 0.5,
    "tests/unit/test_secagg_machines.py::test_harary_graph_every_dropout_count_up_to_n_minus_t": 0.6,
    "tests/unit/test_sw_em.py::test_batched_rows_equal_rows_run_alone": 1.3,
    "tests/unit/test_sw_em.py::test_transition_matches_quadrature": 1.3,
    "tests/unit/test_topics_codec.py::test_decode_of_arbitrary_json_objects_raises_only_remote_protocol_error": 4.1,
    "tests/unit/test_topics_codec.py::test_decode_of_arbitrary_json_values_raises_only_remote_protocol_error": 0.7,
    "tests/unit/test_topics_codec.py::test_malformed_input_names_the_field": 0.5,
    "tests/unit/test_topics_codec.py::test_valid_messages_round_trip": 1.4,
    "tests/e2e/test_partition_cli.py::test_flags_that_do_not_fit_the_scenario_are_refused": 9.5,
    "tests/e2e/test_partition_cli.py::test_credentials_for_another_partition_count_are_refused": 4.0,
    "tests/e2e/test_partitions.py::test_the_coordinator_keeps_the_secure_sum_over_memory_with_the_acl": 2.2,
    "tests/e2e/test_partition_cadr.py::test_a_missing_worker_stops_the_coordinator_and_the_other_workers": 1.3,
    "tests/e2e/test_partition_cadr.py::test_workers_and_a_coordinator_release_what_one_collector_releases": 6.0,
    "tests/e2e/test_partition_gcdp.py::test_coordinator_releases_from_the_workers_means_over_memory_with_the_acl": 3.9,
    "tests/e2e/test_partition_hostile.py::test_coordinator_workers_and_an_attacking_shard_over_memory_with_the_acl": 1.7,
    "tests/e2e/test_cli.py::test_bench_fleet_reconstructs_during_the_stage_and_says_what_it_added": 1.5,
    "tests/e2e/test_reconstruct_during_stage.py::test_reconstructing_during_the_stage_gives_the_reconstructions_of_after_it": 1.8,
}


def slow_key(nodeid: str) -> tuple[str, str]:
    """(file, file::function) of a test id."""
    function = nodeid.split("[", 1)[0]
    return function.split("::", 1)[0], function


def pytest_collection_modifyitems(config, items) -> None:
    """Mark the tests listed in ``SLOW`` as ``slow``."""
    for item in items:
        path, function = slow_key(item.nodeid)
        if path in SLOW or function in SLOW:
            item.add_marker(pytest.mark.slow)
