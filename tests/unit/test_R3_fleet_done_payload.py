"""Helper R's review (round 3): a fleet shard's status part (``fleet_done_statuses``) may list
``MAX_LISTED_DEVICES`` (20,000) gone AND 20,000 stopped device ids of up to 64 characters:
~2.7 MB encoded, past the codec's ``MAX_PAYLOAD`` (2 MiB). Every reader (the collector side,
a partitioned run's coordinator) refuses such a payload as oversize before it is decoded,
so the shard's status is never heard and the stream stage waits for its ``stage_timeout``;
``protocol.fleet_done``'s docstring says a part "holds the one-message status's limits, so
no payload grows past what a one-part status may already be"."""

from ldpfleet.protocol import codec
from ldpfleet.protocol.fleet_done import fleet_done_statuses
from ldpfleet.protocol.messages import MAX_LISTED_DEVICES


def test_every_part_a_shard_builds_decodes():
    n = MAX_LISTED_DEVICES  # one full part of each list: ids of the 64 characters an Ident allows
    gone = [f"g{i:063d}" for i in range(n)]
    stopped = [f"s{i:063d}" for i in range(n)]
    statuses = fleet_done_statuses("r3-fleet", (0, 1), 0, gone, stopped)
    for status in statuses:
        payload = codec.encode(status.message)
        assert len(payload) <= codec.MAX_PAYLOAD, (len(payload), codec.MAX_PAYLOAD)
        assert codec.decode(payload) == status.message
