"""The chance that each test running SecAgg+ with dropouts through a scenario, the fleet's
pumps or ``collector.secure_sum`` aborts because of the server's random graph labelling
(``protocol.secagg.graph.abort_probability_bound``; an upper bound, exact arithmetic).

Each row: the test, n devices, the graph, its degree k and threshold t as the server
builds them (``SecAggServer``), how many devices drop, the stage, the bound, and whether
the test's session draws its labelling from os.urandom (``urandom``) or a seeded source
(``seeded``: the bench's ``server_random``, or a test-injected ``random_bytes``; the outcome
is then a fixed function of the seed, bound irrelevant). A full graph has one labelling:
its outcome is fixed by n, t and the dropping count.

Run: python scripts/F_secagg_abort_bounds.py
"""

from __future__ import annotations

from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.graph import abort_probability_bound
from ldpfleet.protocol.secagg.server import SecAggServer

FP = FixedPoint(-1.0, 1.0, 2.0**16)

# (test, n, graph, degree given (None: default), dropping, stage, randomness)
CASES = [
    ("e2e/test_secure_sum.py::test_exact_sum_with_dropouts_at_every_stage (bench, 12)",
     12, "harary", 7, 3, "each", "seeded"),
    ("e2e/test_secure_sum.py::test_200_devices_on_the_embedded_broker... (bench)",
     200, "harary", None, 20, "after_shares", "seeded"),
    ("e2e/test_secure_sum.py::test_200_devices_on_mosquitto... (bench)",
     200, "harary", None, 20, "after_shares", "seeded"),
    ("e2e/test_cadr_loop_clock.py::test_a_secure_sums_stage_seconds... (bench)",
     12, "harary", 7, 1, "before_keys", "seeded"),
    ("e2e/test_exit_codes.py::test_a_run_whose_secure_sum_aborted... (ring, MUST abort)",
     12, "harary", 2, 3, "after_shares", "urandom"),
    ("e2e/test_sides.py (SECURE: 8 devices, dropout 0.25)",
     8, "harary", None, 2, "after_shares", "urandom"),
    ("e2e/test_partitions.py::test_the_coordinator_keeps_the_secure_sum... (16, 0.25)",
     16, "harary", None, 4, "after_shares", "urandom"),
    ("e2e/test_partitions.py::test_ldpfleet_run_keeps_the_secure_sum... (16, 0.25)",
     16, "harary", None, 4, "after_shares", "urandom"),
    ("e2e/test_separate_hosts_partitions.py::...six_hosts_over_tls (12, 0.25)",
     12, "harary", None, 3, "after_shares", "urandom"),
    ("secure-sum.toml with devices = 12 (test_report, test_report_browser, "
     "test_run_folder_clean, test_trace_follow)", 12, "harary", None, 1, "after_shares",
     "urandom"),
    ("scenarios/secure-sum.toml as shipped (test_docs_commands 'ldpfleet run', slow; "
     "test_library_user_scenario_dict loads only)", 100, "harary", None, 10, "after_shares",
     "urandom -> seeded (tests/seeded_secagg.py)"),
    ("e2e/test_secagg_after_masked_dropouts.py[harary] (2 after_masked + 1 after_shares)",
     12, "harary", None, 3, "after_masked", "urandom"),
    ("e2e/test_hostile_secure_sum.py (10 devices, degree 6, 1 silent dropout)",
     10, "harary", 6, 1, "after_shares", "urandom"),
    ("e2e/test_cadr_theta_noise.py::test_noisy_bucket_sum_with_dropouts...",
     30, "harary", None, 3, "after_shares", "urandom"),
    ("e2e/test_cadr_theta_min_inputs.py::test_a_sum_over_fewer... (MUST abort: min_inputs)",
     10, "harary", None, 2, "after_keys", "urandom"),
    ("e2e/test_cadr_theta_min_inputs.py::test_a_sum_that_meets_min_inputs_is_exact",
     10, "harary", None, 1, "after_keys", "urandom"),
]  # fmt: skip


def graph_and_threshold(n: int, graph: str, degree: int | None) -> tuple[int, int]:
    """(k, t) as the server builds them for n devices."""
    server = SecAggServer("r", "s", [f"d{i:04d}" for i in range(n)], 1, FP, graph=graph,
                          degree=degree)  # fmt: skip
    return max(len(v) for v in server.neighbours.values()), server.threshold


def main() -> None:
    print("| test | n | k | t | dropping | stage | bound | labelling |")
    print("|---|---|---|---|---|---|---|---|")
    for name, n, graph, degree, dropping, stage, randomness in CASES:
        k, t = graph_and_threshold(n, graph, degree)
        bound = abort_probability_bound(n, k, t, dropping)
        print(f"| {name} | {n} | {k} | {t} | {dropping} | {stage} | {bound:.3g} | {randomness} |")


if __name__ == "__main__":
    main()
