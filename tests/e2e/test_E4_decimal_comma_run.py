"""A fleet replaying a decimal-comma export (``decimal = ","``) runs exactly as the same
readings written with decimal points: the same seed gives the same results.json
``per_device`` (helper E's user trial, round 4; memory transport)."""

from __future__ import annotations

import math

import ldpfleet

SCENARIO = """
[scenario]
name = "euro"
seed = 5
[fleet]
devices = 3
[stream]
steps = 24
eps = 4.0
w = 4
[source]
kind = "csv"
path = "{path}"
column = "Temperatur (°C)"
bounds = [10.0, 30.0]
{extra}
"""


def test_a_decimal_comma_export_runs_as_its_decimal_point_twin(tmp_path):
    readings = [20 + 5 * math.sin(2 * math.pi * k / 12) for k in range(48)]
    rows = [f"01.03.2024 {k // 6:02d}:{k % 6 * 10:02d}" for k in range(48)]
    lines = [
        (t, f"{v:.2f}", f"{50 + k % 7}.5")
        for k, (t, v) in enumerate(zip(rows, readings, strict=True))
    ]
    header = "Zeitstempel;Temperatur (°C);Feuchte\n"
    comma = tmp_path / "komma.csv"
    comma.write_text(
        header + "".join(f"{t};{v.replace('.', ',')};{h.replace('.', ',')}\n" for t, v, h in lines),
        encoding="utf-8",
    )
    point = tmp_path / "punkt.csv"
    point.write_text(header + "".join(f"{t};{v};{h}\n" for t, v, h in lines), encoding="utf-8")
    results = {}
    for name, path, extra in (("comma", comma, 'decimal = ","'), ("point", point, "")):
        scenario = ldpfleet.parse_scenario(SCENARIO.format(path=path.as_posix(), extra=extra))
        results[name] = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / name)
    assert results["comma"]["devices_complete"] == 3 and results["comma"]["reports_lost"] == 0
    assert results["comma"]["per_device"] == results["point"]["per_device"]
    true = [entry["true_mean"] for entry in results["comma"]["per_device"].values()]
    assert all(15 < t < 25 for t in true), true
