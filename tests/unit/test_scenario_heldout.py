"""Scenario files written from the docs alone (helper S, docs/scenario-reference.md's
"Held-out scenario files" table): the wrong ones the loader let through or refused too
late, too vaguely or not at all.

- ``graph.source = "erdos_renyi:n=100000000,p=0.1"`` was not checked on load: the run
  started generating it and was killed by the kernel's OOM killer (23 GB resident);
- ``graph.source = "erdos_reny:n=30,..."`` (a kind misspelt) was read as a missing file,
  with no did-you-mean, after the run's output folder had been created;
- ``stream.mechanism = "laplase"`` listed the built-ins but gave no did-you-mean;
- ``[cpr]`` without ``reconstruct = "cpr"`` was silently ignored;
- ``broker.url = "mqtt:/localhost"`` was refused only when the run connected, without
  naming ``broker.url``;
- ``[cadr] eps = 0.002`` (below the dp θ search's floor) was refused after the output
  folder was created, as ``eps: ...`` without the file or the table.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

STREAM = """\
[scenario]
name = "h"
seed = 1
[fleet]
devices = 4
[stream]
steps = 60
eps = 2.0
w = 5
{stream}
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
period = 12
{more}"""

CADR = """\
[scenario]
name = "c"
[graph]
source = "{source}"
[cadr]
processes = 1
{cadr}"""


def _refused(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("source", "limit"),
    [
        ("erdos_renyi:n=100000000,p=0.1,seed=1", "20,000"),
        ("powerlaw_cluster:n=2000000,m=1,p=0.1", "1,000,000"),
        ("barabasi_albert:n=1000000,m=50", "5,000,000"),
        ("erdos_renyi:n=50000,p=0.0001", "20,000"),
    ],
)
def test_a_generated_graph_too_large_is_refused_on_load(source, limit):
    """Old: not checked on load; the first one was OOM-killed while generating."""
    message = _refused(CADR.format(source=source, cadr=""))
    assert message.startswith("graph.source:"), message
    assert limit in message, message


def test_a_generated_graph_within_the_limits_loads():
    parse_scenario(CADR.format(source="erdos_renyi:n=3000,p=0.004,seed=2", cadr=""))
    parse_scenario(CADR.format(source="barabasi_albert:n=4000,m=4,seed=1", cadr=""))


def test_a_misspelt_generator_kind_gets_a_did_you_mean_on_load():
    """Old: "cannot read the edge list 'erdos_reny:...' (No such file or directory)"."""
    message = _refused(CADR.format(source="erdos_reny:n=30,p=0.2,seed=1", cadr=""))
    assert message.startswith("graph.source:"), message
    assert "did you mean" in message and "erdos_renyi" in message, message


def test_a_graph_file_that_does_not_exist_is_refused_on_load():
    message = _refused(CADR.format(source="graphs/no-such-file.txt", cadr=""))
    assert message.startswith("graph.source:") and "no-such-file.txt" in message, message


def test_a_misspelt_mechanism_gets_a_did_you_mean():
    """Old: the built-ins listed, no suggestion."""
    message = _refused(STREAM.format(stream='mechanism = "laplase"', more=""))
    assert message.startswith("stream.mechanism:"), message
    assert 'did you mean "laplace"' in message, message
    message = _refused(STREAM.format(stream='mechanism = "SW"', more=""))
    assert 'did you mean "sw"' in message, message


def test_a_cpr_section_without_cpr_reconstruction_is_refused():
    """Old: ``[cpr]`` with ``reconstruct = "none"`` ran and ignored it."""
    message = _refused(STREAM.format(stream="", more="[cpr]\nmin_period = 4\n"))
    assert message.startswith("cpr:") and "reconstruct" in message, message
    text = STREAM.format(stream='reconstruct = "cpr"', more="[cpr]\nmin_period = 4\n")
    parse_scenario(text)


@pytest.mark.parametrize("url", ["mqtt:/localhost", "http://host:1883", "mqtt://:1883"])
def test_a_malformed_broker_url_is_refused_on_load(url):
    """Old: refused only when the run connected, as "broker URL ... has no host"."""
    message = _refused(STREAM.format(stream="", more=f'[broker]\nurl = "{url}"\n'))
    assert message.startswith("broker.url:") and url in message, message


@pytest.mark.parametrize("url", ["embedded", "memory", "mqtt://127.0.0.1:1883"])
def test_a_well_formed_broker_url_loads(url):
    parse_scenario(STREAM.format(stream="", more=f'[broker]\nurl = "{url}"\n'))


def test_a_cadr_eps_below_the_theta_search_floor_is_refused_on_load():
    """Old: refused after the output folder was made, as ``eps: ...`` (no file, no table).
    On 20,000 devices: a fleet of 30 takes no θ search at eps 0.002 (the small-fleet rule,
    protocol.cadr_budget.plan_theta), so no floor applies to it."""
    source = "erdos_renyi:n=20000,p=0.0005,seed=1"
    message = _refused(CADR.format(source=source, cadr="eps = 0.002\n"))
    assert message.startswith("cadr.eps:") and "0.002" in message, message
    assert "0.005814" in message, message  # the smallest eps that works at alpha = 0.1
    parse_scenario(CADR.format(source=source, cadr='eps = 0.002\npipeline = "paper"\n'))
    parse_scenario(CADR.format(source=source, cadr="eps = 0.002\ntheta = 3\n"))


def test_the_docs_scenarios_path_runs_the_builtin_from_any_folder(tmp_path, monkeypatch):
    """README and docs/tutorial.md say ``ldpfleet run scenarios/quickstart.toml``; from a
    folder outside the repository (a pip-installed package) that was "scenario file
    scenarios/quickstart.toml does not exist". A file of that path in the folder wins."""
    from ldpfleet.scenarios.builtin import find_scenario, scenario_root
    from ldpfleet.scenarios.schema import load_scenario

    monkeypatch.chdir(tmp_path)
    assert find_scenario("scenarios/quickstart.toml") == scenario_root() / "quickstart.toml"
    assert load_scenario("scenarios/secure-sum.toml").spec.scenario.name == "secure-sum"
    assert find_scenario("scenarios/nosuch.toml") == Path("scenarios/nosuch.toml")
    assert find_scenario("other/quickstart.toml") == Path("other/quickstart.toml")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "quickstart.toml").write_text("# mine\n")
    assert find_scenario("scenarios/quickstart.toml") == Path("scenarios/quickstart.toml")


def test_a_relative_data_path_not_found_says_where_it_looked(tmp_path, monkeypatch):
    """Old: "source.path: file not found: temps.csv (No such file or directory)" for a
    file that sat in another folder: nothing said the path is looked up beside the
    scenario file, one folder up and in the current folder."""
    from ldpfleet.scenarios.schema import load_scenario

    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "temps.csv").write_text("temp\n1\n2\n3\n")
    scenario = tmp_path / "a" / "b" / "s.toml"
    scenario.parent.mkdir(parents=True)
    source = '[source]\nkind = "csv"\npath = "temps.csv"\nbounds = [0.0, 5.0]\n'
    scenario.write_text(STREAM.format(stream="", more="").split("[source]")[0] + source)
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario)
    message = str(info.value)
    assert "source.path" in message and "temps.csv" in message, message
    looked = message.split("looked in ", 1)[1]  # the file's own path names tmp_path too
    for place in (scenario.parent, scenario.parent.parent, tmp_path):
        assert str(place / "temps.csv") in looked, message


def test_a_misspelt_builtin_name_gets_a_did_you_mean(tmp_path, monkeypatch):
    """Old: "scenario file quickstrat does not exist (`ldpfleet scenarios` lists ...)"."""
    from ldpfleet.scenarios.schema import load_scenario

    monkeypatch.chdir(tmp_path)
    for typo in ("quickstrat", "scenarios/quickstrat.toml", "secure_sum"):
        with pytest.raises(ScenarioError) as info:
            load_scenario(typo)
        assert "did you mean" in str(info.value), info.value
    with pytest.raises(ScenarioError) as info:
        load_scenario("my-own-file.toml")
    assert "did you mean" not in str(info.value), info.value


@pytest.mark.parametrize(
    ("old", "new", "key", "shown"),
    [  # the held-out files the loader already refused well: keep them refused, by key
        ("eps = 2.0", "epss = 2.0", "stream.epss:", "did you mean `eps`"),
        ("devices = 4", 'devices = "4"', "fleet.devices:", "'4'"),
        ("eps = 2.0", "eps = nan", "stream.eps:", "nan"),
        ("eps = 2.0", "eps = inf", "stream.eps:", "inf"),
        ("eps = 2.0", "eps = 1e400", "stream.eps:", "inf"),
        ("eps = 2.0", 'eps = "inf"', "stream.eps:", "'inf'"),
        ("w = 5", "w = 0", "stream.w:", ">= 1"),
        ("devices = 4", "devices = 1000000000", "fleet.devices:", "1000000"),
        ("steps = 60", "steps = 1000000000000", "stream.steps:", "10000000"),
        ("eps = 2.0\nw = 5", "eps = 1e-9\nw = 100000", "stream.eps:", "1e-12"),
        ("[source]", "[sorce]", "sorce:", "did you mean `source`"),
        ("period = 12", "period = [24, 12]", "source.period:", "min > max"),
        ('kind = "synthetic"', 'kind = "synthetc"', "source.kind:", 'did you mean "synthetic"'),
    ],
)
def test_held_out_mistakes_stay_refused_by_key(old, new, key, shown):
    text = STREAM.format(stream="", more="")
    assert old in text
    message = _refused(text.replace(old, new, 1))
    assert message.startswith(key) and shown in message, message
