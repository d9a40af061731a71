"""Tests written by helper T's hand mutation hunt (review T, 2026-12-07), collector and
device side: each kills one planted bug ("mutant") that the rest of the suite let pass; its
docstring names the file, the original code and the planted change."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.service import CollectorService
from ldpfleet.protocol import topics
from ldpfleet.protocol.messages import Ack, Hello, SwReport
from ldpfleet.protocol.stream import StreamCollector, StreamConfig

RUN = "tpersist"


def _accepted_report(service: CollectorService, config: StreamConfig) -> StreamCollector:
    """The service's stream machine with device d0001's hello and batch 0 accepted (not yet
    persisted): the state ``_persist_and_ack`` finds after a delivery."""
    machine = StreamCollector(config, ["d0001"])
    service.machine = machine
    hello = Hello(
        run=RUN, sender="d0001", mechanism=config.mechanism, eps=config.eps, w=config.w,
        eps0=config.eps0, steps=config.steps, batch_steps=config.batch_steps, lo=config.lo,
        hi=config.hi,
    )  # fmt: skip
    machine.receive(topics.parse(topics.up(RUN, "d0001", "hello")), hello, 0.0)
    machine.pop_outbound()  # the hello's answer
    t0, t1 = config.batch_span(0)
    report = SwReport(
        run=RUN, sender="d0001", seq=0, t0=t0, mechanism=config.mechanism, eps0=config.eps0,
        w=config.w, values=[0.5] * (t1 - t0),
    )  # fmt: skip
    machine.receive(topics.parse(topics.up(RUN, "d0001", "sw_report")), report, 1.0)
    service._take_events()
    assert [(d, s) for d, s, *_ in service._accepted] == [("d0001", 0)]
    return machine


def test_a_commit_that_fails_acknowledges_nothing(tmp_path):
    """Kills ``collector/service.py`` _persist_and_ack with ``self.store.persist(...)`` and
    ``self.machine.confirm_persisted(...)`` swapped (acknowledge, then commit): the
    machine's acknowledgement of a batch was queued before its row was committed, so a
    commit that fails (disk full, I/O error) left an ack for a report the store does not
    hold, and the device, acknowledged, never sends it again (store.py: "committed BEFORE
    it is acknowledged"). The machine-level tests (``confirm_persisted``) cannot see the
    order in the pump."""
    config = StreamConfig(RUN, "sw", 2.0, 2, 4, 2, 0.0, 1.0)
    service = CollectorService(MemoryTransport(), config, ["d0001"], tmp_path / "c.sqlite")
    try:
        machine = _accepted_report(service, config)

        def failing_commit(*args, **kwargs):
            raise sqlite3.OperationalError("disk I/O error")

        service.store.persist = failing_commit  # type: ignore[method-assign]
        with pytest.raises(sqlite3.OperationalError):
            asyncio.run(service._persist_and_ack(None))  # type: ignore[arg-type]
        acks = [o for o in machine.pop_outbound() if isinstance(o.message, Ack)]
        assert acks == []
        assert machine.devices["d0001"].persisted_upto == -1
    finally:
        service.store.close()


def test_a_commit_that_succeeds_is_acknowledged(tmp_path):
    """The companion of the test above: with a working store the same batch is committed
    and acknowledged (so the test above fails for the order, not for its set-up)."""
    config = StreamConfig(RUN, "sw", 2.0, 2, 4, 2, 0.0, 1.0)
    service = CollectorService(MemoryTransport(), config, ["d0001"], tmp_path / "c.sqlite")
    try:
        machine = _accepted_report(service, config)
        published: list[tuple[str, bytes]] = []

        class _Conn:
            async def publish_many(self, items, qos: int = 1) -> None:
                published.extend(items)

            async def publish(self, topic, payload, **options) -> None:
                published.append((topic, payload))

        asyncio.run(service._persist_and_ack(_Conn()))  # type: ignore[arg-type]
        assert service.store.persisted_keys() == [("d0001", 0)]
        assert machine.devices["d0001"].persisted_upto == 0
        assert any(
            topic == topics.inbox(RUN, "d0001", topics.COLLECTOR_ID) for topic, _ in published
        )
    finally:
        service.store.close()


# -- devices/sources.py: the count of filled values -----------------------------------------------


def test_two_channels_missing_on_the_same_row_are_two_filled_values(tmp_path):
    """Kills ``devices/sources.py`` _filled_table ``summary["values_filled"] =
    int(gaps.sum())`` -> ``int(gaps.any(axis=1).sum())`` (rows with a gap instead of missing
    values): the existing case has its two columns' gaps on different rows, where both
    counts agree. Here both channels miss row 2: two values filled, one row."""
    import numpy as np
    from ldpfleet.devices.sources import CsvSpec, csv_stream, missing_entry, missing_summary

    path = tmp_path / "same-row.csv"
    path.write_text("t,a,b\n1,1.0,10\n2,NA,\n3,3.0,30\n4,4.0,40\n")
    spec = CsvSpec(
        str(path), 0, columns=("a", "b"), column_bounds=((0, 5), (0, 50)), missing="previous"
    )
    np.testing.assert_array_equal(csv_stream(spec, 0, 2, 4)[0], [1, 1, 3, 4])
    np.testing.assert_array_equal(csv_stream(spec, 1, 2, 4)[0], [10, 10, 30, 40])
    summary = missing_summary(spec)
    assert summary["by_column"] == {"a": 1, "b": 1}
    assert summary["values_filled"] == 2
    entry, _ = missing_entry(spec)
    assert entry["values_filled"] == 2


# -- collector/degree_postprocess.py: bucket widths -----------------------------------------------


def test_the_first_bucket_holds_degree_zero():
    """Kills ``collector/degree_postprocess.py`` _bucket_widths ``np.array([-1, *ts, d])`` ->
    ``np.array([0, *ts, d])``: the first bucket ``(t_0, t_1]`` with ``t_0 = -1`` holds the
    degrees ``0 .. t_1`` (``t_1 + 1`` of them); the mutant dropped degree 0 from it, so the
    histogram / unimodal / NB priors spread its mass over one degree too few and the widths
    no longer add up to the ``D + 1`` degrees ``0 .. D``."""
    from ldpfleet.collector.degree_postprocess import _bucket_widths

    assert _bucket_widths([0, 2, 5], 9).tolist() == [1, 2, 3, 4]
    assert _bucket_widths([3], 3).tolist() == [4, 0]  # a bucket past D is empty
    for ts, d in (([0, 1, 2], 2), ([4, 9, 19], 30), ([0], 1)):
        assert int(_bucket_widths(ts, d).sum()) == d + 1


# -- scenarios/schema_checks.py: cross-key limits at their edges ----------------------------------

_STREAM = """\
[scenario]
name = "t-edges"
[fleet]
devices = 4
[stream]
steps = {steps}
eps = 2.0
w = {w}
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
"""


def _refusal(text: str) -> str:
    from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

    with pytest.raises(ScenarioError) as info:
        parse_scenario(text)
    return str(info.value)


def test_a_window_one_step_longer_than_the_stream_is_refused_on_load():
    """Kills ``scenarios/schema_checks.py`` ``stream.w > steps`` -> ``stream.w > steps +
    1``: the existing cases are far past the edge (w = 10, steps = 5)."""
    from ldpfleet.scenarios.schema import parse_scenario

    message = _refusal(_STREAM.format(steps=60, w=61))
    assert message.startswith("stream.w: at most stream.steps (60)"), message
    parse_scenario(_STREAM.format(steps=60, w=60))


def test_a_credit_window_one_above_max_in_flight_is_refused_on_load():
    """Kills ``scenarios/schema_checks.py`` ``credit_window > max_in_flight`` -> ``>
    max_in_flight + 1``: the existing case is 4096 against 256."""
    from ldpfleet.scenarios.schema import parse_scenario

    text = _STREAM.format(steps=60, w=5) + "[collector]\nmax_in_flight = 4\n"
    message = _refusal(text + "credit_window = 5\n")
    assert message.startswith("collector.credit_window:"), message
    parse_scenario(text + "credit_window = 4\n")


def test_a_full_graph_threshold_of_half_the_devices_is_refused_on_load():
    """Kills ``scenarios/schema_checks.py`` _check_full_graph ``devices < 2 * threshold``
    -> ``devices <= 2 * threshold``: with t = n / 2 two disjoint halves of the devices
    could each reconstruct every seed (SecAggServer needs n < 2t); no test loaded a full
    graph at that edge. 4 devices: t = 2 refused, t = 3 loads."""
    from ldpfleet.scenarios.schema import parse_scenario

    text = _STREAM.format(steps=60, w=5) + (
        '[secure_sum]\ndim = 2\ngraph = "full"\nclip = [0.0, 1.0]\nthreshold = {t}\n'
    )
    message = _refusal(text.format(t=2))
    assert "secure_sum.threshold" in message and "4 < 2t" in message, message
    parse_scenario(text.format(t=3))


def test_posterior_medians_are_the_medians_of_the_posterior():
    """Kills ``collector/degree_postprocess.py`` posterior_medians ``np.sum(cdf < 0.5 -
    1e-12, axis=1)`` -> ``np.sum(cdf < 0.4, axis=1)`` (a lower quantile than the median;
    ``posterior_degree_medians``'s own copy of the rule is tested, this one was not). A
    release that carries no information (scale 1e9): the posterior is the prior, whose
    median is read off its CDF; uniform over 0..4 has CDF 0.2, 0.4, 0.6, ...: median 2."""
    import numpy as np
    from ldpfleet.collector.degree_postprocess import posterior_medians

    uniform = np.full(5, 0.2)
    assert posterior_medians([0.0, 2.0, 4.0], uniform, 1e9).tolist() == [2, 2, 2]
    skewed = np.array([0.35, 0.1, 0.1, 0.25, 0.2])  # CDF 0.35, 0.45, 0.55: median 2
    assert posterior_medians([1.0], skewed, 1e9).tolist() == [2]
