"""``OUT/report.html``: written by ``ldpfleet run`` and ``ldpfleet report DIR``; one
self-contained page (no network fetches, images inline) with a section per capability."""

from __future__ import annotations

import base64
import re

import pytest
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
    assert check_self_contained(page) >= 2
    assert "quickstart" in page and "sw_report" in page
    check_for_people(page)


def text_of(page: str) -> str:
    """The page without its inline images."""
    return re.sub(r'src="data:[^"]*"', 'src=""', page)


def headline(page: str) -> dict[str, str]:
    """The headline block's items (it comes before any section)."""
    block = re.search(r'<dl class="headline"[^>]*>(.*?)</dl>', page, re.S)
    assert block and page.index(block.group(0)) < page.index("<h2>"), "no headline first"
    items = re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", block.group(1), re.S)
    return {key: re.sub(r"<[^>]+>", "", value) for key, value in items}


def check_for_people(page: str) -> None:
    """Layout facts: every image in a figure with alt text and a caption, every table with
    a header row, no 16-digit float and no Python ``None`` shown, the scenario keys
    collapsed."""
    text = text_of(page)
    figures = re.findall(r"<figure>(.*?)</figure>", text, re.S)
    assert len(figures) == text.count("<img")
    for figure in figures:
        assert re.search(r'<img alt="[^"]{8,}"', figure), figure
        assert re.search(r"<figcaption>[^<]{10,}</figcaption>", figure), figure
    tables = re.findall(r"<table>(.*?)</table>", text, re.S)
    assert tables and all(t.startswith("<thead><tr><th") for t in tables)
    cells = " ".join(re.findall(r"<td[^>]*>(.*?)</td>", text, re.S))
    assert not re.search(r"\d\.\d{9,}", cells), re.search(r".{40}\d\.\d{9,}.{20}", cells)
    assert ">None<" not in text and "seconds None" not in text
    assert re.search(
        r"<details><summary>Scenario keys \(\d+, defaults included\)</summary><table>", text
    )


def test_the_report_leads_with_a_headline(tmp_path):
    out = tmp_path / "qs"
    page = run_and_read_report(ROOT / "scenarios" / "quickstart.toml", out)
    items = headline(page)
    assert list(items) == [
        "outcome", "ran", "broker", "devices complete", "reports lost", "accuracy", "clipped",
        "privacy", "time",
    ]  # fmt: skip
    # the quickstart's bounds fit its data: a share, no wrong-unit warning
    assert "of the readings were outside the public bounds" in items["clipped"]
    assert "data's unit" not in items["clipped"]
    assert items["outcome"] == "complete"
    assert items["ran"].startswith("quickstart: 50 devices × 200 steps, sw, ε = 2 over any 5")
    assert items["broker"] == "memory (in-process, no MQTT broker)"
    assert items["devices complete"] == "50 / 50"
    assert items["reports lost"] == "0 of 2,000 (0 rejected)"
    assert items["accuracy"].startswith("mean abs error of the device means ")
    # the per-device error beside the constant guess, and what the budget does give
    assert "worse than a constant guess 0.1472" in items["accuracy"]
    assert "fleet average (private) 19.97 ± 1.7 (95 %); true 20.05" in items["accuracy"]
    assert "ε = 2 per 5-step window; worst spend 2 (= the budget); 0 refusals" in items["privacy"]
    assert items["time"].endswith(" s") and " s wall" in items["time"]
    # the scenario names the embedded broker by default; this run used --broker memory
    assert "embedded (this run: memory, from --broker)" in page
    # every device spent exactly its budget: said in words, not drawn right of the line
    assert "Every one of the 50 devices spent exactly its budget ε = 2" in page
    assert "Every device was charged ε = 80 in total" in page


def test_plots_never_use_offset_notation():
    from ldpfleet.app.report import _Plots

    assert _Plots.get().rcParams["axes.formatter.useoffset"] is False


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
    check_for_people(page)
    items = headline(page)
    assert "secure sum exact over" in items["accuracy"]
    assert "secure sum of 16-entry vectors (harary)" in items["ran"]


def test_report_of_a_directory_without_a_run_is_a_clear_error(tmp_path):
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert "no results.json" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "not JSON"),  # a run killed while writing it
        ('{"run": "x", "sce', "not JSON"),
        ("[]", "not a run's results"),
        ("\udcff", "not JSON"),
        (None, "is a directory"),
    ],
)
def test_report_of_an_unreadable_results_json_is_a_clear_error(tmp_path, content, needle):
    """An empty, truncated or non-object results.json (or a directory of that name) ended
    in a JSONDecodeError / AttributeError / IsADirectoryError traceback, exit 1."""
    path = tmp_path / "results.json"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content.encode("utf-8", "surrogateescape"))
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert needle in result.output and "results.json" in result.output, result.output
    assert "Traceback" not in result.output


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
    # 300 steps: a readable window of the first 240, and an overview of all of them
    assert 'alt="reconstructions against the truth for sample devices, first steps"' in page
    assert "the first 240 of 300 steps" in page
    assert 'alt="overview of the whole reconstructed streams"' in page
    check_self_contained(page)
    check_for_people(page)
    assert "period accuracy" in headline(page)["accuracy"]


def test_a_gcdp_run_reports_budgets_per_coordinate(tmp_path):
    out = tmp_path / "gcdp"
    page = run_and_read_report(ROOT / "scenarios" / "occupancy-release.toml", out)
    assert "GC-DP central release" in sections(page)
    assert 'alt="GC-DP budgets per coordinate"' in page and "accuracy: " in page
    check_self_contained(page)
    check_for_people(page)
    # a stage without "seconds" shows its calibration time; long lists are abridged
    assert re.search(r"<td>gcdp</td><td>complete</td><td class=\"num\">[0-9.]+</td>", page)
    assert "(20 values; exact in results.json)" in page
    assert "GC-DP window-mean MAE" in headline(page)["accuracy"]
    assert "the public calibration mean" in headline(page)["accuracy"]  # the free baseline


CADR = """
[scenario]
name = "report-degrees"
seed = 2
[graph]
source = "barabasi_albert:n=30,m=2,seed=5"
[cadr]
theta = 3
"""


def test_a_cadr_run_says_its_trace_kept_control_messages_only(tmp_path):
    scenario = tmp_path / "cadr.toml"
    scenario.write_text(CADR)
    page = run_and_read_report(scenario, tmp_path / "cadr")
    assert "The trace kept control messages only" in page
    assert re.search(r"The devices exchanged [0-9,]+ messages up", page)
    check_self_contained(page)
    check_for_people(page)
    items = headline(page)
    assert items["ran"].startswith("report-degrees: CADR-LDP degree release (clip, ε = 3)")
    assert "degree MAE" in items["accuracy"]
    assert "ε = 3 per device (total)" in items["privacy"]


def test_an_audit_saved_next_to_a_run_is_in_its_report(tmp_path):
    out = tmp_path / "qs"
    run_and_read_report(ROOT / "scenarios" / "quickstart.toml", out)
    audit = runner.invoke(app, ["audit", "rr", "--eps", "1", "--trials", "2000"])
    assert audit.exit_code == 0, audit.output
    (out / "audit.json").write_text(audit.output)
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0
    page = (out / "report.html").read_text()
    assert "Privacy audit" in sections(page) and "inconclusive" in page
