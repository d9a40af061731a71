"""``OUT/report.html``: written by ``ldpfleet run`` and ``ldpfleet report DIR``; one
self-contained page (no network fetches, images inline) with a section per capability."""

from __future__ import annotations

import base64
import re

from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.conftest import ROOT

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def sections(page: str) -> list[str]:
    return re.findall(r"<h2>([^<]+)</h2>", page)


def check_self_contained(page: str) -> int:
    """No external fetch of any kind; every image an inline PNG that decodes. Returns the
    number of images."""
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", page), "external reference"
    assert "http://" not in page and "https://" not in page and "@import" not in page
    images = re.findall(r'<img[^>]*src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == page.count("<img")
    for data in images:
        assert base64.b64decode(data).startswith(PNG)
    return len(images)


def run_and_read_report(scenario, out) -> str:
    """``ldpfleet run SCENARIO --broker memory --out OUT``; the report page it wrote."""
    result = runner.invoke(app, ["run", str(scenario), "--broker", "memory", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return (out / "report.html").read_text()


def test_run_writes_a_self_contained_report(tmp_path):
    out = tmp_path / "qs"
    page = run_and_read_report(ROOT / "scenarios" / "quickstart.toml", out)
    assert sections(page)[:5] == [
        "Scenario", "Timing per stage", "Messages", "Privacy ledger", "Stream accuracy",
    ]  # fmt: skip
    assert check_self_contained(page) >= 4
    assert "quickstart" in page and "sw_report" in page


def test_report_command_on_a_secure_aggregation_run(tmp_path):
    scenario = tmp_path / "secure.toml"
    scenario.write_text(
        (ROOT / "scenarios" / "secure-sum.toml")
        .read_text()
        .replace("devices = 100", "devices = 12")
        .replace("steps = 200", "steps = 40")
    )
    out = tmp_path / "ss"
    run_and_read_report(scenario, out)
    (out / "report.html").unlink()
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert "Secure aggregation" in sections(page)
    assert "MaskedInput" in page and "survivors" in page
    check_self_contained(page)


def test_report_of_a_directory_without_a_run_is_a_clear_error(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert "no results.json" in result.output and "Traceback" not in result.output


CPR = """
[scenario]
name = "cpr-small"
seed = 4
[fleet]
devices = 6
[stream]
steps = 300
eps = 5.0
w = 5
reconstruct = "cpr"
[source]
kind = "periodic"
dataset = "synthetic"
"""


def test_a_cpr_run_reports_reconstructions_against_the_truth(tmp_path):
    scenario = tmp_path / "cpr.toml"
    scenario.write_text(CPR)
    out = tmp_path / "cpr"
    page = run_and_read_report(scenario, out)
    assert (out / "truth_sample.npz").exists()
    assert "CPR reconstruction" in sections(page)
    assert 'alt="reconstructions against the truth for sample devices"' in page
    check_self_contained(page)


def test_a_gcdp_run_reports_budgets_per_coordinate(tmp_path):
    out = tmp_path / "gcdp"
    page = run_and_read_report(ROOT / "scenarios" / "occupancy-release.toml", out)
    assert "GC-DP central release" in sections(page)
    assert 'alt="GC-DP budgets per coordinate"' in page and "accuracy: " in page
    check_self_contained(page)


def test_an_audit_saved_next_to_a_run_is_in_its_report(tmp_path):
    out = tmp_path / "qs"
    run_and_read_report(ROOT / "scenarios" / "quickstart.toml", out)
    audit = runner.invoke(app, ["audit", "rr", "--eps", "1", "--trials", "2000"])
    assert audit.exit_code == 0, audit.output
    (out / "audit.json").write_text(audit.output)
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0
    page = (out / "report.html").read_text()
    assert "Privacy audit" in sections(page) and "inconclusive" in page
