"""A refused key does not hide the check of which sections a scenario may hold
(helper Q2): a CADR-LDP file with a refused ``[cpr]`` key, or a ``[graph]`` refused for its
``source``, still has its stray ``[fleet]`` refused in the same load; a ``[cpr]`` set
beside a refused key (in a CADR-LDP file, or a stream scenario without ``reconstruct =
"cpr"``) is refused as not belonging; a bulk scenario's sections check goes on past a
refused ``[faults]`` key or a refused ``[gcdp]``; a refused ``[gcdp]`` still needs a csv
source. Each refusal is the one that mistake alone raises, in the loader's order (the first
found first, the others in file order)."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

from tests.unit.test_E_scenario_errors_all import toml

CADR = (
    '[scenario]\nname = "c"\n[graph]\nsource = "erdos_renyi:n=30,p=0.3,seed=1"\n[cadr]\neps = 2.0\n'
)
FLEET = "[fleet]\ndevices = 3\n"
BAD_CPR = '[cpr]\nmin_cycles = "x"\n'
BULK = {"fleet.connection": '"bulk"'}


def refused(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text)
    return caught.value


def described(error: ScenarioError) -> tuple:
    return (str(error), error.field, error.limit, error.value)


def assert_each_as_alone(error: ScenarioError, alone: dict[str, str]) -> None:
    """Every refusal of ``error`` is described as the first refusal of the text ``alone``
    gives for its field."""
    assert [e.field for e in error.errors] == list(alone)
    for each in error.errors:
        assert described(each) == described(refused(alone[each.field]))


@pytest.mark.parametrize("text", [CADR + FLEET + BAD_CPR, CADR + BAD_CPR + FLEET])
def test_cadr_refused_cpr_key_beside_a_stray_fleet(text):
    """The brief's case: both refused, the [cpr] key first (found first, by the decoding)."""
    assert_each_as_alone(refused(text), {"cpr.min_cycles": CADR + BAD_CPR, "fleet": CADR + FLEET})


def test_cadr_misspelled_cpr_key_beside_a_stray_fleet():
    text = CADR + FLEET + "[cpr]\nmin_cyclez = 4\n"
    alone = {"cpr.min_cyclez": CADR + "[cpr]\nmin_cyclez = 4\n", "fleet": CADR + FLEET}
    assert_each_as_alone(refused(text), alone)


def test_cadr_cpr_set_beside_its_refused_key_does_not_belong():
    """A [cpr] key not refused set off its default shows [cpr] was set: refused as not
    belonging, beside its refused key. With only the refused key, whether [cpr] differs
    from its defaults depends on the value it gets: the key alone is refused (as a
    [faults] with a refused key, which does not belong whatever its keys, is refused
    twice)."""
    text = CADR + BAD_CPR + "min_period = 4\n"
    alone = {"cpr.min_cycles": CADR + BAD_CPR, "cpr": CADR + "[cpr]\nmin_period = 4\n"}
    assert_each_as_alone(refused(text), alone)
    assert [e.field for e in refused(CADR + BAD_CPR).errors] == ["cpr.min_cycles"]
    faults = refused(CADR + "[faults]\ncrash_fraction = 2.0\n")
    assert [e.field for e in faults.errors] == ["faults.crash_fraction", "faults"]


@pytest.mark.parametrize("graph", ["[graph]\n", "[graph]\nsource = 3\n"])
def test_cadr_refused_graph_beside_a_stray_fleet(graph):
    text = f'[scenario]\nname = "c"\n{graph}[cadr]\neps = 2.0\n{FLEET}'
    error = refused(text)
    assert [e.field for e in error.errors] == ["graph.source", "fleet"]
    assert described(error.errors[1]) == described(refused(CADR + FLEET))


def test_stream_cpr_set_beside_its_refused_key_without_cpr_reconstruction():
    changes = {"cpr.min_cycles": '"x"'}
    error = refused(toml(changes, {"cpr.min_period": "4"}))
    alone = {"cpr.min_cycles": toml(changes), "cpr": toml(None, {"cpr.min_period": "4"})}
    assert_each_as_alone(error, alone)
    # the refused key alone: [cpr] may be its defaults once corrected
    assert [e.field for e in refused(toml(changes)).errors] == ["cpr.min_cycles"]
    # with reconstruct = "cpr" the section belongs: its key alone is refused
    cpr = toml(changes, {"cpr.min_period": "4", "stream.reconstruct": '"cpr"'})
    assert [e.field for e in refused(cpr).errors] == ["cpr.min_cycles"]


def test_bulk_sections_checked_past_a_refused_faults_key():
    faults = "[faults]\ncrash_fraction = 2.0\n"
    state_dir = BULK | {"fleet.state_dir": '"x"'}
    alone = {
        "faults.crash_fraction": toml(None, BULK) + faults,
        "fleet.state_dir": toml(None, state_dir),
    }
    assert_each_as_alone(refused(toml(None, state_dir) + faults), alone)
    other = refused(toml(None, BULK) + faults + "hostile_messages = 3\n")
    assert [e.field for e in other.errors] == ["faults.crash_fraction", "faults.hostile_messages"]
    hostile = refused(toml(None, BULK) + "[faults]\nhostile_messages = 3\n")
    assert described(other.errors[1]) == described(hostile)


def test_bulk_sections_checked_past_a_refused_gcdp():
    """[gcdp] refused whole (its required eps_rel missing): its own refusals, the state
    directory a bulk run cannot have, and the csv source [gcdp] needs."""
    state_dir = BULK | {"fleet.state_dir": '"x"'}
    error = refused(toml(None, state_dir) + "[gcdp]\nwindow = 0\n")
    fields = [e.field for e in error.errors]
    assert fields == ["gcdp.window", "fleet.state_dir", "source.kind", "gcdp.eps_rel"]
    assert described(error.errors[1]) == described(refused(toml(None, state_dir)))


def test_a_refused_gcdp_still_needs_a_csv_source():
    error = refused(toml() + "[gcdp]\neps_rel = -1.0\n")
    assert [e.field for e in error.errors] == ["gcdp.eps_rel", "source.kind"]
    assert error.errors[1].limit == '"csv" with [gcdp]'
