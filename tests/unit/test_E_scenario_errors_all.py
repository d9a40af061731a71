"""A scenario with several mistakes is refused with all of them at once
(scenarios/schema_collect.py): ``ScenarioError.errors`` lists every independent refusal,
the first found first (the error a file with that mistake alone raises), the others in
file order, at most ``ERRORS_SHOWN`` (``omitted`` counts the rest); a refusal that makes
later checks meaningless (a section without its required key, a misspelled key or
section) adds no refusals of its own consequences; ``ldpfleet run`` prints each on its own
``error:`` line, exit 2."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ldpfleet.app.cli import app
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario
from ldpfleet.scenarios.schema_collect import ERRORS_SHOWN
from typer.testing import CliRunner

# a valid stream scenario, one key per line (the mutations below replace a line's value)
BASE = {
    "scenario": {"name": '"e"', "seed": "7"},
    "fleet": {"devices": "6", "id_prefix": '"d"', "connect_concurrency": "8"},
    "stream": {
        "steps": "40",
        "eps": "2.0",
        "w": "5",
        "mechanism": '"sw"',
        "step_seconds": "0.0",
        "retransmit_after": "5.0",
    },
    "source": {
        "kind": '"synthetic"',
        "bounds": "[5.0, 35.0]",
        "amplitude": "10.0",
        "offset": "20.0",
        "noise": "0.5",
    },
    "collector": {"credit_window": "2", "idle_timeout": "30.0", "partitions": "1"},
    "cpr": {"min_cycles": "3"},
    "privacy": {"device_noise": '"seeded"'},
    "broker": {"url": '"embedded"', "announce_every": "0.0"},
}


def toml(changes: dict[str, str | None] | None = None, extra: dict[str, str] | None = None) -> str:
    """``BASE`` as TOML with ``changes`` (``"stream.eps": "-1"``; None: the key removed)
    and ``extra`` keys added at the end of their section (``"scenario.bogus": "1"``)."""
    changes = changes or {}
    extra = extra or {}
    lines = []
    for section, keys in BASE.items():
        lines.append(f"[{section}]")
        for key, value in keys.items():
            value = changes.get(f"{section}.{key}", value)
            if value is not None:
                lines.append(f"{key} = {value}")
        for dotted, value in extra.items():
            if dotted.split(".")[0] == section:
                lines.append(f"{dotted.split('.', 1)[1]} = {value}")
    return "\n".join(lines) + "\n"


def refused(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text)
    return caught.value


def described(error: ScenarioError) -> tuple:
    return (str(error), error.field, error.limit, error.value)


def test_the_base_scenario_loads():
    assert parse_scenario(toml()).spec.fleet.devices == 6


def test_five_mistakes_across_sections_all_refused_in_file_order():
    changes = {
        "fleet.devices": "-3",  # type/range
        "stream.eps": "-1.0",  # type/range
        "source.bounds": "[35.0, 5.0]",  # a check across keys
        "collector.credit_window": "300",  # a check across keys
    }
    error = refused(toml(changes, extra={"scenario.bogus": "1"}))
    got = [(e.field, e.limit, e.value) for e in error.errors]
    assert got == [
        ("scenario.bogus", "one of name, seed, description, run_timeout", 1),
        ("fleet.devices", ">= 1", -3),
        ("stream.eps", "> 0.0", -1.0),
        ("source.bounds", "finite lo < hi", [35.0, 5.0]),
        ("collector.credit_window", "<= collector.max_in_flight (256)", 300),
    ]
    assert error.errors[0] is error and error.omitted == 0
    # each line is the refusal of that mistake alone
    alone = {"scenario.bogus": refused(toml(extra={"scenario.bogus": "1"}))}
    for key, value in changes.items():
        alone[key] = refused(toml({key: value}))
    for each in error.errors:
        assert described(each) == described(alone[each.field])
        assert each.errors == (each,) or each is error


def test_first_found_comes_first_then_file_order():
    """A check across keys of [fleet] is found after a range error of [stream]: it is
    second, the error raised is the one the [stream] mistake alone raises."""
    changes = {"stream.eps": "-1.0", "collector.credit_window": "300"}
    text = toml(changes, extra={"fleet.connection": '"bulk"', "fleet.state_dir": '"here"'})
    error = refused(text)
    assert described(error) == described(refused(toml({"stream.eps": "-1.0"})))
    assert [e.field for e in error.errors] == [
        "stream.eps",
        "fleet.state_dir",
        "collector.credit_window",
    ]


def test_one_mistake_is_refused_as_before():
    error = refused(toml({"stream.eps": "-1.0"}))
    assert str(error) == "stream.eps: Expected `float` > 0.0, got -1.0"
    assert (error.field, error.limit, error.value) == ("stream.eps", "> 0.0", -1.0)
    assert error.errors == (error,) and error.omitted == 0
    made = ScenarioError("stream.eps: no")  # raised elsewhere: one error too
    assert made.errors == (made,) and made.omitted == 0


def test_the_cap():
    extra = {f"scenario.bogus{i:02d}": str(i) for i in range(ERRORS_SHOWN + 5)}
    error = refused(toml(extra=extra))
    assert len(error.errors) == ERRORS_SHOWN and error.omitted == 5
    assert [e.field for e in error.errors] == list(extra)[:ERRORS_SHOWN]


@pytest.mark.parametrize(
    ("changes", "extra", "fields"),
    [
        # a required key refused takes its section out: not "missing steps", not "a
        # stream scenario needs [stream]", no mechanism or window refusals
        ({"stream.steps": "-1", "stream.eps": "-1.0"}, {}, ["stream.steps", "stream.eps"]),
        # a key replaced by its default is not refused again ("w: required for sw")
        ({"stream.w": "0"}, {}, ["stream.w"]),
        # a misspelled required key: the unknown key, not "missing steps" too
        ({"stream.steps": None}, {"stream.stepz": "40"}, ["stream.stepz"]),
        # a misspelled optional one: not "stream.eps: required for mechanism sw"
        ({"stream.eps": None}, {"stream.epss": "2.0"}, ["stream.epss"]),
        # an empty [source]: its kind, none of the checks that read the source
        ({f"source.{k}": None for k in BASE["source"]}, {}, ["source.kind"]),
        # the scenario's name refused (a required key of the one required section): the
        # other sections are still checked
        (
            {"scenario.name": '"a b"', "collector.credit_window": "300"},
            {},
            ["scenario.name", "collector.credit_window"],
        ),
    ],
)
def test_no_cascade(changes, extra, fields):
    error = refused(toml(changes, extra))
    assert [e.field for e in error.errors] == fields


def test_a_missing_section_is_one_refusal_beside_another_mistake():
    text = toml({f"source.{k}": None for k in BASE["source"]} | {"collector.partitions": "0"})
    text = text.replace("[source]\n", "")
    error = refused(text)
    assert [e.field for e in error.errors] == ["collector.partitions", "source"]
    assert error.errors[1].limit == "required: [fleet], [stream] and [source]"


def test_a_misspelled_section_is_one_refusal():
    text = toml().replace("[stream]", "[strem]")
    error = refused(text)
    assert [e.field for e in error.errors] == ["strem"]


def test_cadr_scenario_refusals_collected():
    text = (
        '[scenario]\nname = "c"\n[graph]\nsource = "erdos_renyi:n=30,p=0.3,seed=1"\n'
        "[cadr]\neps = -1.0\nbogus = 2\n[fleet]\ndevices = 3\n"
    )
    error = refused(text)
    assert [e.field for e in error.errors] == ["cadr.eps", "cadr.bogus", "fleet"]


# independent single-key mistakes: each refused naming exactly its key, whichever others
# the file holds (range errors, an unknown key, checks across keys)
MISTAKES = {
    "scenario.seed": "-1",
    "fleet.id_prefix": '"1x"',
    "fleet.connect_concurrency": "0",
    "stream.step_seconds": "-1.0",
    "stream.retransmit_after": "0.0",
    "source.bounds": "[35.0, 5.0]",
    "source.amplitude": "0.0",
    "source.noise": "-1.0",
    "collector.credit_window": "300",
    "collector.idle_timeout": "0.0",
    "collector.partitions": "0",
    "cpr.min_cycles": "1",
    "privacy.device_noise": '"loud"',
    "broker.url": '"http://example.org"',
    "broker.announce_every": "-1.0",
}


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.sets(st.sampled_from(sorted(MISTAKES)), min_size=1))
def test_property_fields_are_the_mutated_keys(keys):
    error = refused(toml({key: MISTAKES[key] for key in keys}))
    fields = [e.field for e in error.errors]
    assert sorted(fields) == sorted(keys)
    order = [key for section, names in BASE.items() for key in (f"{section}.{n}" for n in names)]
    assert fields[1:] == sorted(fields[1:], key=order.index)  # file order after the first


def test_cli_prints_every_refusal_on_its_own_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(toml({"fleet.devices": "-3", "stream.eps": "-1.0"}, {"scenario.bogus": "1"}))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert [line.split(": ")[2] for line in lines] == [
        "scenario.bogus",
        "fleet.devices",
        "stream.eps",
    ]
    assert all(line.startswith(f"error: {path}: ") for line in lines)
    assert "Traceback" not in result.output and not out.exists()
    one = tmp_path / "one.toml"
    one.write_text(toml(extra={"scenario.bogus": "1"}))
    single = CliRunner().invoke(app, ["run", str(one), "--out", str(out)])
    assert single.exit_code == 2
    assert single.output.strip().splitlines() == [lines[0].replace(str(path), str(one))]


def test_cli_says_how_many_more(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(toml(extra={f"scenario.bogus{i:02d}": str(i) for i in range(ERRORS_SHOWN + 3)}))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == ERRORS_SHOWN + 1 and lines[-1] == "error: ... and 3 more"


@pytest.mark.parametrize("command", ["check", "fleet", "collector"])
def test_every_command_that_loads_a_scenario_prints_every_refusal(tmp_path, command):
    """``ldpfleet check`` (load only), ``fleet`` and ``collector`` print the same lines as
    ``run`` (the printing lives in cli_common.user_errors, not in one command)."""
    path = tmp_path / "bad.toml"
    path.write_text(toml({"fleet.devices": "-3", "stream.eps": "-1.0"}, {"scenario.bogus": "1"}))
    # the fleet and collector sides need a broker and a run id; the scenario is refused
    # before either is used (port 1: nothing listens, nothing is connected to)
    sides = ["--broker", "mqtt://127.0.0.1:1", "--run", "r1"] if command != "check" else []
    result = CliRunner().invoke(app, [command, str(path), *sides])
    assert result.exit_code == 2, result.output
    fields = [line.split(": ")[2] for line in result.output.strip().splitlines()]
    assert fields == ["scenario.bogus", "fleet.devices", "stream.eps"]


def test_check_says_a_good_scenario_loads_and_runs_nothing(tmp_path):
    path = tmp_path / "good.toml"
    path.write_text(toml())
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"ok: {path} loads (stream scenario 'e')"
    assert list(tmp_path.iterdir()) == [path]  # no run folder, no store
