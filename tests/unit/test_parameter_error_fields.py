"""Every ``ParameterError`` the library raises carries ``limit=`` and ``value=`` (claim R6).

The sentence of a refusal names the field, the limit and the value for a person; the
attributes give the same to a program (``err.field``, ``err.limit``, ``err.value``), as
``ScenarioError`` and ``OptionError`` do. This test reads the source (AST) of every library
module and lists each ``ParameterError(...)`` call that lacks either keyword. ``PENDING``
holds the modules not yet converted (2026-12-05 night); it may only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("protocol", "broker", "devices", "collector", "scenarios", "app")

PENDING = {
    "app/audit_cli.py",
    "app/audit_fleet.py",
    "app/bench.py",
    "app/bench_commands.py",
    "app/bench_cpr.py",
    "app/bench_gcdp.py",
    "app/bench_gcdp_scaling.py",
    "app/bench_secagg.py",
    "app/cadr_sweep.py",
    "app/certs.py",
    "app/cli.py",
    "app/gcdp_datasets.py",
    "collector/audit/battery.py",
    "collector/audit/cadr_count_canary.py",
    "collector/audit/core.py",
    "collector/audit/graph_canaries.py",
    "collector/audit/mutants.py",
    "collector/audit/selection.py",
    "collector/audit/stats.py",
    "collector/baselines.py",
    "collector/bucket_denoise.py",
    "collector/bucket_isotonic.py",
    "collector/degree_postprocess.py",
    "collector/gcdp/cache.py",
    "collector/gcdp/correlation.py",
    "collector/gcdp/evaluation.py",
    "collector/gcdp/fleet_calibration.py",
    "collector/gcdp/gaussian.py",
    "collector/gcdp/graph.py",
    "collector/gcdp/private_calibration.py",
    "collector/gcdp/release.py",
    "collector/gcdp/sensitivity.py",
    "collector/gcdp/validate.py",
    "collector/gcdp_stage.py",
    "collector/kde.py",
    "collector/metrics.py",
    "collector/projection.py",
    "collector/secure_sum.py",
    "collector/sw_em.py",
    "collector/theta_search.py",
    "devices/graphs.py",
    "protocol/bulk.py",
    "protocol/cadr_budget.py",
    "protocol/cadr_device.py",
    "protocol/cadr_theta_noise.py",
    "protocol/dsr.py",
    "protocol/exponential.py",
    "protocol/gcdp_release.py",
    "protocol/ledger.py",
    "protocol/liveness.py",
    "protocol/lpea.py",
    "protocol/lpea_device.py",
    "protocol/mechanism_contract.py",
    "protocol/mechanisms.py",
    "protocol/peer_relay.py",
    "protocol/raw.py",
    "protocol/readiness.py",
    "protocol/rendezvous.py",
    "protocol/rr.py",
    "protocol/samplers.py",
    "protocol/secagg/active.py",
    "protocol/secagg/client.py",
    "protocol/secagg/crypto.py",
    "protocol/secagg/encoding.py",
    "protocol/secagg/graph.py",
    "protocol/secagg/server.py",
    "protocol/secagg/shamir.py",
    "protocol/stream.py",
    "protocol/sw.py",
    "protocol/topics.py",
    "scenarios/bulk_run.py",
    "scenarios/cadr_run.py",
    "scenarios/coordinator.py",
    "scenarios/plugin_load.py",
    "scenarios/runner.py",
    "scenarios/schema.py",
}


def _calls_lacking_fields(path: Path) -> list[int]:
    """Line numbers of ``ParameterError(...)`` calls in ``path`` without limit= and value=."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        keywords = {k.arg for k in node.keywords}
        if name == "ParameterError" and not {"limit", "value"} <= keywords:
            lines.append(node.lineno)
    return lines


def _library_modules() -> list[Path]:
    return sorted(p for root in LIBRARY for p in (ROOT / root).rglob("*.py"))


def test_every_parameter_error_names_its_limit_and_value():
    missing = {}
    for path in _library_modules():
        relative = path.relative_to(ROOT).as_posix()
        if relative in PENDING:
            continue
        lines = _calls_lacking_fields(path)
        if lines:
            missing[relative] = lines
    assert not missing, f"ParameterError without limit= and value= at {missing}"


def test_pending_modules_still_need_work():
    """A converted module leaves PENDING (so the list cannot hide a regression)."""
    done = [f for f in sorted(PENDING) if not _calls_lacking_fields(ROOT / f)]
    assert not done, f"converted, remove from PENDING: {done}"


def test_the_scan_finds_a_call_without_the_fields(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "raise ParameterError('bad', field='x')\n"
        "raise errors.ParameterError('ok', field='x', limit='> 0', value=-1)\n"
    )
    assert _calls_lacking_fields(sample) == [1]


def test_pending_paths_are_library_modules():
    strays = [
        p for p in sorted(PENDING) if not (ROOT / p).is_file() or p.split("/")[0] not in LIBRARY
    ]
    assert not strays, f"PENDING names no library module: {strays}"
