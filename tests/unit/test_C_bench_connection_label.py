"""``bench fleet``'s JSON says the connection model the run used (helper C): ``--connection
device`` (the default) leaves ``[fleet] connection`` out of the bench's scenario, which is
then "auto" — gateways past 10,000 devices — while the JSON said "device"."""

from __future__ import annotations

from ldpfleet.app.bench import _fleet_figures


def results(connection: str | None) -> dict:
    fleet = {"connect_seconds": 1.0, "ack_latency": {}, "retransmissions": 0}
    if connection is not None:
        fleet["connection"] = connection
    return {
        "reports_received": 10,
        "stages": {"stream": {"seconds": 1.0}, "fleet_build": {"shards": 1}},
        "stream": {"batch_steps": 5},
        "broker": {"kind": "memory", "url": "memory"},
        "event_loop": "asyncio",
        "fleet": fleet,
        "reports_lost": 0,
        "reports_rejected": 0,
        "reports_duplicate": 0,
        "trace": {"messages": 20},
    }


def test_the_json_names_the_connection_the_run_used():
    figures = _fleet_figures(results("gateway"), None, "device", "all", 256, 2, 5.0, 0.0)
    assert figures["connection"] == "gateway"
    # a results document without the entry (older pieces): the option as given
    figures = _fleet_figures(results(None), None, "device", "all", 256, 2, 5.0, 0.0)
    assert figures["connection"] == "device"
