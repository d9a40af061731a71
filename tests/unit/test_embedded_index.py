"""The embedded broker's indexed subscription lookup (``broker.embedded``)."""

from __future__ import annotations

from ldpfleet.broker.embedded import _IndexedSubscriptions


def test_a_dispatch_sees_only_the_exact_filter_and_the_wildcards():
    subs = _IndexedSubscriptions()
    for key in ("a/b", "a/c", "a/+", "#", "x/y"):
        subs[key] = [key]
    subs.topic_hint = "a/b"
    assert sorted(k for k, _ in subs.items()) == ["#", "a/+", "a/b"]
    # the hint is used once: the next caller sees everything
    assert sorted(k for k, _ in subs.items()) == ["#", "a/+", "a/b", "a/c", "x/y"]
    subs.topic_hint = "q/r"  # no exact filter: only the wildcards
    assert sorted(k for k, _ in subs.items()) == ["#", "a/+"]
    del subs["a/+"]
    subs.clear()
    subs["z"] = []
    subs.topic_hint = "z"
    assert [k for k, _ in subs.items()] == ["z"] and subs.wildcards == set()
