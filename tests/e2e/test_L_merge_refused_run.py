"""``ldpfleet merge`` of a split run that never ran because a fleet shard refused its terms.

The collector side of such a run writes a results.json holding only ``aborted`` (reason
``terms_differ``) and the refusing shard writes nothing. The merge used to answer with a
sentence about something else: "... is a whole run's results, not a collector side's" for
CADR-LDP, "no outcomes.json in F: is it a fleet shard's --out?" for streams. Now both say
the run never ran and repeat the refusal's sentence (``TraceError``; the CLI exits 2).

Fails without the change: the two messages above.
"""

from __future__ import annotations

import pytest
from ldpfleet.broker.trace import TraceError
from ldpfleet.scenarios.merge import merge_run
from typer.testing import CliRunner

from tests.e2e import test_B5_cadr_terms_refused as cadr_refused
from tests.e2e import test_C4_terms_refused as stream_refused
from tests.e2e.test_partitions import STREAM


def _assert_refused_merge(tmp_path, run: str, sentence: str) -> None:
    with pytest.raises(TraceError) as error:
        merge_run(tmp_path / "c", [tmp_path / "f"], tmp_path / "merged")
    assert str(error.value).startswith(f"run {run} never ran, nothing to merge: {sentence} (")
    assert not (tmp_path / "merged").exists()


def test_merging_a_cadr_run_a_shard_refused_names_the_refusal(tmp_path):
    cadr_refused.test_a_shard_that_refuses_the_terms_stops_the_cadr_collector_side_at_once(tmp_path)
    sentence = (
        f"fleet shard 0 of 1 refused run {cadr_refused.RUN}: the collector runs seed 7, the fleet "
        "seed 8; start both sides with the same scenario and seed"
    )
    _assert_refused_merge(tmp_path, cadr_refused.RUN, sentence)


def test_merging_a_stream_run_a_shard_refused_names_the_refusal_and_exits_2(tmp_path):
    from ldpfleet.app.cli import app

    results, _ended, _refusal, _denied = stream_refused._sides(tmp_path, STREAM, STREAM, 2)
    sentence = results["aborted"]["detail"]
    _assert_refused_merge(tmp_path, stream_refused.RUN, sentence)
    args = ["merge", str(tmp_path / "c"), str(tmp_path / "f"), "-o", str(tmp_path / "m2")]
    outcome = CliRunner().invoke(app, args)
    assert outcome.exit_code == 2, outcome.output
    assert "never ran, nothing to merge" in outcome.output
