"""The report in a real browser: headless Chromium (Debian's chromium + chromium-driver)
opens report.html of a run of every capability (stream, CPR, secure sum, GC-DP, CADR-LDP,
faults) and checks what a person would see: the headline block comes first, every image
loads and has alt text and a caption, every table has a header row, nothing is wider than
the page (at 1200 px and at a narrow 760 px window), and the console has no errors. A
full-page screenshot of each is kept in ``test-artifacts/``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.conftest import ROOT, service_missing

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-artifacts"
runner = CliRunner()

# what the page must satisfy, measured in the page itself
LAYOUT = """
const width = document.documentElement.clientWidth;
const imgs = Array.from(document.images);
const tables = Array.from(document.querySelectorAll('table'));
const blocks = Array.from(document.querySelectorAll('body > *, figure, img, table, dl, p'));
const first = document.body.firstElementChild;
return {
  count: imgs.length,
  broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt),
  no_alt: imgs.filter(i => !i.alt || i.alt.length < 8).length,
  no_caption: imgs.filter(i => {
    const f = i.closest('figure');
    const c = f && f.querySelector('figcaption');
    return !(c && c.textContent.trim().length >= 10);
  }).map(i => i.alt),
  tables: tables.length,
  headerless: tables.filter(t => !t.querySelector('thead th')).length,
  page_width: document.documentElement.scrollWidth,
  width: width,
  too_wide: blocks.filter(e => e.getBoundingClientRect().right > width + 1)
                  .map(e => e.tagName + ' ' + (e.alt || e.className || '')),
  headline_first: !!document.querySelector('h1 ~ dl.headline') &&
    document.querySelector('dl.headline').compareDocumentPosition(
      document.querySelector('h2')) === Node.DOCUMENT_POSITION_FOLLOWING,
  keys_collapsed: !!document.querySelector('details:not([open]) > summary'),
  sections: Array.from(document.querySelectorAll('h2')).map(h => h.textContent),
  height: document.documentElement.scrollHeight,
};
"""


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium driven through chromedriver; skipped on a laptop without it,
    a failure in CI (.ci/run installs chromium and chromium-driver)."""
    webdriver = pytest.importorskip("selenium.webdriver")
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_path):
        service_missing(
            "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--hide-scrollbars",
        "--window-size=1200,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = webdriver.ChromeService(executable_path=driver_path)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


def open_report(driver, page: Path, name: str) -> dict:
    """Open the page at 1200 px (full-page screenshot) and at 760 px; the layout facts of
    both, and the console errors."""
    driver.set_window_size(1200, 1000)
    driver.get(page.resolve().as_uri())
    wide = driver.execute_script(LAYOUT)
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    ARTIFACTS.mkdir(exist_ok=True)
    driver.set_window_size(1200, min(wide["height"] + 140, 16_000))
    driver.save_screenshot(str(ARTIFACTS / f"report-{name}.png"))
    driver.set_window_size(760, 1000)
    narrow = driver.execute_script(LAYOUT)
    return {**wide, "narrow": narrow, "errors": errors}


def check_layout(state: dict) -> None:
    for view in (state, state["narrow"]):
        assert view["broken"] == [] and view["no_alt"] == 0, view
        assert view["no_caption"] == [], view
        assert view["tables"] > 0 and view["headerless"] == 0, view
        assert view["page_width"] <= view["width"], view
        assert view["too_wide"] == [], view
    assert state["headline_first"] and state["keys_collapsed"], state
    assert state["errors"] == []


def run(scenario: Path, out: Path, *extra: str, exit_code: int = 0) -> None:
    result = runner.invoke(app, ["run", str(scenario), "--out", str(out), *extra])
    assert result.exit_code == exit_code, result.output
    assert (out / "report.html").exists()


SMALL_CADR = """
[scenario]
name = "browser-degrees"
seed = 2
[graph]
source = "barabasi_albert:n=60,m=2,seed=5"
[cadr]
theta = "auto-dev"
"""

CPR = """
[scenario]
name = "browser-cpr"
seed = 4
[fleet]
devices = 6
[stream]
steps = 1200
eps = 5.0
w = 5
reconstruct = "cpr"
[source]
kind = "periodic"
dataset = "synthetic"
"""


def scenario_file(kind: str, tmp_path: Path) -> Path:
    if kind == "quickstart":
        return ROOT / "scenarios" / "quickstart.toml"
    if kind == "gcdp":
        return ROOT / "scenarios" / "occupancy-release.toml"
    path = tmp_path / f"{kind}.toml"
    if kind == "secure-sum":
        text = (ROOT / "scenarios" / "secure-sum.toml").read_text()
        path.write_text(
            text.replace("devices = 100", "devices = 12").replace("steps = 200", "steps = 40")
        )
    elif kind == "cpr":
        path.write_text(CPR)
    elif kind == "cadr":
        path.write_text(SMALL_CADR)
    return path


@pytest.mark.parametrize(
    ("kind", "sections"),
    [
        ("quickstart", ["Privacy ledger", "Stream accuracy"]),
        ("cpr", ["CPR reconstruction"]),
        ("secure-sum", ["Secure aggregation"]),
        ("gcdp", ["GC-DP central release"]),
        ("cadr", ["CADR-LDP degree release"]),
    ],
)
def test_report_in_chromium(browser, tmp_path, kind, sections):
    out = tmp_path / kind
    run(scenario_file(kind, tmp_path), out, "--broker", "memory")
    state = open_report(browser, out / "report.html", kind)
    check_layout(state)
    assert state["count"] >= 2
    for section in sections:
        assert section in state["sections"], state["sections"]
    assert (ARTIFACTS / f"report-{kind}.png").stat().st_size > 10_000


@pytest.mark.slow
def test_faults_report_in_chromium(browser, tmp_path):
    """The faults scenario loses the reports of the devices that never come back: the run
    exits 1 and its report says so first."""
    out = tmp_path / "faults"
    run(ROOT / "scenarios" / "faults.toml", out, "--broker", "memory", exit_code=1)
    state = open_report(browser, out / "report.html", "faults")
    check_layout(state)
    assert "Delivery and faults" in state["sections"]
    assert "incomplete:" in (out / "report.html").read_text()


@pytest.mark.slow
def test_facebook_report_in_chromium(browser, tmp_path):
    out = tmp_path / "facebook"
    run(ROOT / "scenarios" / "facebook-degrees.toml", out, "--broker", "memory")
    state = open_report(browser, out / "report.html", "facebook")
    check_layout(state)
    assert state["count"] >= 2
    assert "CADR-LDP degree release" in state["sections"]
