"""Helper W: ``[privacy] device_noise`` — device noise from the device's own entropy.

With "seeded" (the default) every device's noise generator derives from the run's seed, so
whoever holds the seed can replay it (helper V's finding; the claims carry a trust row).
With "os" each device's noise generator is seeded from OS entropy: two runs of one seed see
the same data and graph and differ in the noise, the seed replays nothing, and the claims
drop the trust caveat. Every test here fails on the code before the setting existed (no
``[privacy]`` section, no ``device_noise`` anywhere).
"""

from __future__ import annotations

import asyncio
import dataclasses
import typing

import numpy as np
import pytest
from ldpfleet.app.cli import app
from ldpfleet.app.cli_options import DEVICE_NOISE_CHOICES
from ldpfleet.collector.analytics import privacy_entry
from ldpfleet.devices.graphs import generate
from ldpfleet.devices.noise_entropy import DEVICE_NOISE, bulk_noise_key, check_device_noise
from ldpfleet.protocol.bulk import BulkGateway, BulkPlan, seeded_noise_key
from ldpfleet.protocol.cadr_budget import CLIP_NOISE_CAVEATS, restate_device_noise
from ldpfleet.protocol.cadr_theta_noise import polya_share
from ldpfleet.protocol.dsr import dsr_release
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.stream import StreamConfig
from ldpfleet.scenarios.cadr_run import device_names, run_cadr_fleet
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import PrivacySection, ScenarioError, parse_scenario
from ldpfleet.scenarios.sides import run_terms
from typer.testing import CliRunner

import ldpfleet
from tests.tiny_scenarios import stream_text

TEXT = stream_text("w-noise", devices=4, steps=24, w=4, period=6)
BULK = stream_text("w-noise-bulk", devices=6, steps=20, w=5, fleet_extra='connection = "bulk"')


def _with(text: str, mode: str) -> str:
    return text + f'[privacy]\ndevice_noise = "{mode}"\n'


def test_the_choices_agree_everywhere():
    literal = typing.get_args(typing.get_type_hints(PrivacySection)["device_noise"])
    assert set(DEVICE_NOISE) == set(DEVICE_NOISE_CHOICES) == set(literal) == {"seeded", "os"}
    assert PrivacySection().device_noise == "seeded"  # every figure stays reproducible


def test_a_bad_value_names_the_field_the_allowed_values_and_the_value():
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_with(TEXT, "urandom"))
    text = str(caught.value)
    assert "privacy.device_noise" in text and "urandom" in text
    assert '"seeded"' in text and '"os"' in text
    with pytest.raises(ParameterError) as refused:
        check_device_noise("OS")
    assert refused.value.field == "device_noise" and refused.value.value == "OS"


def test_the_cli_refuses_a_bad_value_in_the_file_or_the_option_with_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(_with(TEXT, "urandom"))
    runner = CliRunner()
    result = runner.invoke(app, ["run", str(bad), "--broker", "memory", "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "privacy.device_noise" in result.output and "urandom" in result.output
    good = tmp_path / "good.toml"
    good.write_text(TEXT)
    for command in (["run", str(good)], ["fleet", str(good), "-b", "mqtt://h:1", "--run", "r"]):
        result = runner.invoke(app, [*command, "--device-noise", "entropy"])
        assert result.exit_code == 2, result.output
        assert "--device-noise" in result.output and "entropy" in result.output


def test_the_fleet_command_hands_its_choice_to_the_fleet_side(tmp_path, monkeypatch):
    from ldpfleet.app import cli_sides

    seen = {}

    def fake_side(name, loaded, *args, **kwargs):
        seen[name] = loaded.spec.privacy.device_noise
        raise SystemExit(0)

    monkeypatch.setattr(cli_sides, "_run_side", fake_side)
    path = tmp_path / "s.toml"
    path.write_text(TEXT)
    command = ["fleet", str(path), "-b", "mqtt://127.0.0.1:1", "--run", "r", "--out", str(tmp_path)]
    CliRunner().invoke(app, [*command, "--device-noise", "os"])
    assert seen == {"fleet_side": "os"}
    CliRunner().invoke(app, command)
    assert seen == {"fleet_side": "seeded"}


def test_the_device_noise_is_not_a_run_term():
    seeded, own = parse_scenario(TEXT), parse_scenario(_with(TEXT, "os"))
    assert run_terms(seeded, "r") == run_terms(own, "r")
    assert run_terms(seeded, "r") != run_terms(
        parse_scenario(TEXT.replace("seed = 3", "seed = 4")), "r"
    )
    assert seeded.with_device_noise("os").spec == own.spec
    with pytest.raises(ScenarioError, match=r"privacy\.device_noise"):
        seeded.with_device_noise("entropy")


def _stream_run(tmp_path, text: str, name: str) -> tuple[dict, dict]:
    out = tmp_path / name
    asyncio.run(run_scenario(parse_scenario(text), broker="memory", out_dir=out, run_id=name))
    return ldpfleet.read_results(out), ldpfleet.read_reports(out)


@pytest.mark.parametrize("text", [TEXT, BULK], ids=["per-device", "bulk"])
def test_os_noise_differs_across_runs_of_one_seed_and_the_data_do_not(tmp_path, text):
    seeded = [_stream_run(tmp_path, text, f"s{k}") for k in range(2)]
    own = [_stream_run(tmp_path, _with(text, "os"), f"o{k}") for k in range(2)]
    devices = sorted(seeded[0][1])
    same = [np.array_equal(seeded[0][1][d], seeded[1][1][d]) for d in devices]
    assert all(same)  # seeded: the same reports (the parity/digest tests pin it further)
    # os: every device's reports differ. SW reports are continuous, so two independent
    # runs agree on a whole stream of >= 20 reports with probability 0.
    assert not any(np.array_equal(own[0][1][d], own[1][1][d]) for d in devices)
    assert not any(np.array_equal(seeded[0][1][d], own[0][1][d]) for d in devices)
    for results, _ in seeded + own:  # the same truth: the data stay seeded
        truth = seeded[0][0]
        if "per_device" in truth:
            assert [results["per_device"][d]["true_mean"] for d in devices] == [
                truth["per_device"][d]["true_mean"] for d in devices
            ]
        else:
            assert results["accuracy"]["fleet_average"]["true"] == pytest.approx(
                truth["accuracy"]["fleet_average"]["true"], abs=0, rel=0
            )
    for (results, _), mode in ((seeded[0], "seeded"), (own[0], "os")):
        assert results["device_noise"] == mode
        assert results["privacy"]["device_noise"] == mode
        assert ("without the run's seed" in results["privacy"]["claim"]) == (mode == "seeded")


def test_the_stream_claim_in_each_mode():
    config = StreamConfig(run="r", eps=2.0, w=4, steps=8, mechanism="sw", batch_steps=4,
                          lo=0.0, hi=1.0)  # fmt: skip
    claims = {m: privacy_entry({}, config, m) for m in ("seeded", "os", None)}
    assert "without the run's seed" in claims["seeded"]["claim"]
    assert "replay" in claims["seeded"]["claim"]
    assert "seed" not in claims["os"]["claim"]
    assert "cannot tell" in claims[None]["claim"]
    assert [claims[m]["device_noise"] for m in claims] == ["seeded", "os", None]
    raw = dataclasses.replace(config, mechanism="raw")
    assert "seed" not in privacy_entry({}, raw, "seeded")["claim"]  # no noise to replay


def test_a_bulk_gateway_takes_its_noise_key_from_the_device_side():
    plan = BulkPlan(run="r", devices=5, steps=8, batch_steps=4, eps=2.0, w=4, seed=9)

    def entries(key):
        gateway = BulkGateway(plan, 0, noise_key=key)
        gateway.start(0.0)
        rows = gateway._build(0, 0.0)
        return rows["values"].copy(), gateway.truth_sum.copy()

    seeded, truth = entries(None)
    assert bulk_noise_key("seeded") is None
    again, _ = entries(seeded_noise_key(9))  # the seeded key, injected: the same
    assert np.array_equal(seeded, again)
    first, truth_first = entries(bulk_noise_key("os"))
    second, truth_second = entries(bulk_noise_key("os"))
    assert not np.array_equal(first, second) and not np.array_equal(first, seeded)
    assert np.array_equal(truth, truth_first) and np.array_equal(truth, truth_second)
    assert len(bulk_noise_key("os")) == 32  # 256 bits of the OS's entropy per gateway
    for bad in (b"\0" * 16, "k" * 32, np.zeros(4, dtype=np.uint64)):
        with pytest.raises(ParameterError, match="noise_key"):
            BulkGateway(plan, 0, noise_key=bad)


def _replayed(result: dict, names: list[str], graph) -> tuple[int, list[int]]:
    """What results.json's seed recovers (helper V's replay): how many clipped degrees,
    and the θ search's bucket counts."""
    seed, theta = result["seed"], result["theta"]
    query = result["theta_queries"][0]
    size = len(query["thresholds"]) + 1
    parties = -(-9 * len(names) // 10)
    eps_theta, eps_dsr = result["budget"]["theta"], result["budget"]["dsr"]
    shares = np.zeros(size)
    stripped = 0
    degrees = graph.degrees()
    for i, name in enumerate(names):
        rng = np.random.default_rng([seed, i])
        shares += polya_share(rng, parties, eps_theta, size)
        noise = float(dsr_release(0, theta, eps_dsr, rng))
        stripped += abs(result["released"][name] - noise - min(int(degrees[i]), theta)) < 1e-9
    return stripped, np.rint(np.asarray(query["bucket_sums"]) - shares).astype(int).tolist()


def test_cadr_os_noise_is_replayed_by_no_seed_and_the_claim_drops_the_trust_row():
    graph = generate("erdos_renyi", 60, seed=4, p=0.1)
    names = device_names(graph)
    seeded = asyncio.run(run_cadr_fleet(graph, method="clip", seed=11, eps=3.0))
    own = [
        asyncio.run(run_cadr_fleet(graph, method="clip", seed=11, eps=3.0, device_noise="os"))
        for _ in range(2)
    ]
    assert _replayed(seeded, names, graph)[0] == len(names)  # V's finding, still in "seeded"
    # os: a Laplace draw on a 2^-20 grid matches a replayed one with probability ~2^-20 per
    # device: with 60 devices, any match at all has probability < 1e-4; allow up to 2
    assert _replayed(own[0], names, graph)[0] <= 2
    assert own[0]["released"] != own[1]["released"]  # the same graph, other noise
    row = seeded["privacy_claim"]["parts"][-1]
    assert row["covered"] == "trust" and "run's seed" in row["part"]
    assert seeded["device_noise"] == "seeded"
    assert CLIP_NOISE_CAVEATS["seeded"] in seeded["privacy_claim"]["statement"]
    claim = own[0]["privacy_claim"]
    assert own[0]["device_noise"] == "os" and claim["device_noise"] == "os"
    assert claim["parts"][-1]["covered"] == "yes" and "own OS entropy" in claim["parts"][-1]["part"]
    assert not [p for p in claim["parts"] if p["covered"] == "trust"]
    assert "without the run's seed" not in claim["statement"]
    assert "IS ε-node-LDP" in claim["statement"]


def test_a_split_runs_merge_restates_the_collectors_unknown_noise_row():
    graph = generate("erdos_renyi", 30, seed=2, p=0.15)
    seeded = asyncio.run(run_cadr_fleet(graph, method="clip", seed=5, eps=3.0))
    claim = seeded["privacy_claim"]
    unknown = restate_device_noise(claim, None)
    assert unknown["parts"][-1]["covered"] == "trust" and "unknown" in unknown["parts"][-1]["part"]
    assert CLIP_NOISE_CAVEATS[None] in unknown["statement"]
    own = restate_device_noise(unknown, "os")
    assert own["parts"][-1]["covered"] == "yes" and CLIP_NOISE_CAVEATS["os"] in own["statement"]
    back = restate_device_noise(own, "seeded")
    assert back["parts"] == claim["parts"] and back["statement"] == claim["statement"]
    assert len(back["parts"]) == len(claim["parts"])


def test_every_child_process_is_told_the_choice(tmp_path, monkeypatch):
    """The device processes re-read the scenario file: the command lines carry the choice
    (the e2e test runs the split run's and the bulk run's; these are the sharded fleet's
    and the CADR-LDP runner's children)."""
    from ldpfleet.scenarios import cadr_shard, fleet_shard
    from ldpfleet.scenarios.shards import ShardedFleet

    own = parse_scenario(TEXT).with_device_noise("os")
    sharded = ShardedFleet(own, "mqtt://127.0.0.1:1", "r", seed=3, shards=2, out_dir=tmp_path)
    command = sharded._command(1, tmp_path / "s.toml")
    assert command[command.index("--device-noise") + 1] == "os"
    path = tmp_path / "s.toml"
    path.write_text(TEXT)
    seen = {}

    def fake_shard(scenario, *args, **kwargs):
        seen["fleet_shard"] = scenario.spec.privacy.device_noise
        raise ValueError("stop here")

    monkeypatch.setattr(fleet_shard, "run_fleet_shard", fake_shard)
    fleet_shard.main([str(path), "--broker", "mqtt://h:1", "--run", "r", "--device-noise", "os"])
    assert seen == {"fleet_shard": "os"}

    async def fake_devices(*args, **kwargs):
        seen["cadr_shard"] = kwargs["device_noise"]
        kwargs["subscribed"].set()  # what the devices do once they listen
        return {}

    monkeypatch.setattr(cadr_shard, "run_device_shard", fake_devices)
    monkeypatch.setattr(cadr_shard, "load_graph", lambda spec: None)
    asyncio.run(cadr_shard._main(["g", "mqtt://h:1", "r", "3", "0/2", "4", "os"]))
    assert seen["cadr_shard"] == "os"
