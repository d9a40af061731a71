"""NpzWriter / merge_npz (collector.npz_files) and the chunk-by-chunk finish of
IncrementalReconstructor that lets a collector write reconstructions as they are done."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.analytics import (
    IncrementalReconstructor,
    reconstruct_streams,
    save_reconstructions,
    write_reconstructions,
)
from ldpfleet.collector.npz_files import NpzWriter, merge_npz
from ldpfleet.protocol.mechanisms import stream_mechanism
from ldpfleet.protocol.stream import StreamConfig

ARRAYS = {
    "d0001": np.linspace(0.0, 1.0, 100),
    "d0001.template": np.arange(12, dtype=np.float64),
    "ints": np.arange(6, dtype=np.int32).reshape(2, 3),
    "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "scalar": np.array(3.5),
    "empty": np.zeros((0, 4)),
    "bools": np.array([True, False, True]),
}


def test_writer_round_trips_through_numpy_load(tmp_path):
    with NpzWriter(tmp_path / "a.npz") as writer:
        for name, array in ARRAYS.items():
            writer.add(name, array)
    assert writer.count == len(ARRAYS)
    with np.load(tmp_path / "a.npz") as data:
        assert data.files == list(ARRAYS)
        for name, array in ARRAYS.items():
            assert data[name].dtype == array.dtype and data[name].shape == array.shape
            assert np.array_equal(data[name], array), name


def test_writer_refuses_object_arrays_naming_the_entry(tmp_path):
    with NpzWriter(tmp_path / "a.npz") as writer, pytest.raises(TypeError, match="odd"):
        writer.add("odd", np.array([object()]))


def test_merge_keeps_every_entry_the_last_source_wins_and_sorts_on_request(tmp_path):
    np.savez_compressed(tmp_path / "p0.npz", d2=np.ones(3), d0=np.zeros(2))
    np.savez_compressed(tmp_path / "p1.npz", d1=np.full(4, 7.0), d2=np.full(3, 9.0))
    count = merge_npz([tmp_path / "p0.npz", tmp_path / "p1.npz"], tmp_path / "m.npz", sort=True)
    assert count == 3
    with np.load(tmp_path / "m.npz") as data:
        assert data.files == ["d0", "d1", "d2"]
        assert np.array_equal(data["d2"], np.full(3, 9.0))
        assert np.array_equal(data["d1"], np.full(4, 7.0))
    merge_npz([tmp_path / "p1.npz", tmp_path / "p0.npz"], tmp_path / "u.npz")
    with np.load(tmp_path / "u.npz") as data:
        assert data.files == ["d1", "d2", "d0"]  # first seen order, unsorted
        assert np.array_equal(data["d2"], np.ones(3))


def _fleet(count: int, steps: int = 60):
    config = StreamConfig(
        run="r1", mechanism="sw", eps=5.0, w=5, steps=steps, batch_steps=5, lo=-2.0, hi=3.0
    )
    mechanism = stream_mechanism(config.mechanism, config.eps0)
    rng = np.random.default_rng(7)
    t = np.arange(steps)
    streams = {}
    for i in range(count):
        clean = 0.5 + 0.4 * np.sin(2 * np.pi * (t / (6 + i % 5) + rng.random()))
        streams[f"d{i:03d}"] = np.asarray(mechanism.perturb(clean, rng))
    return config, streams


@pytest.mark.parametrize("workers", [1, 2])
def test_finish_chunks_gives_finish_chunk_by_chunk_and_the_file_equals_save(tmp_path, workers):
    """The chunks cover every stream once with the results of ``reconstruct_streams``;
    written as they come, the file holds what ``save_reconstructions`` writes."""
    config, streams = _fleet(150)
    want = reconstruct_streams(config, streams, "cpr", workers=1)
    early = IncrementalReconstructor(config, "cpr", workers=workers, chunk=64)
    early.add(dict(list(streams.items())[:70]))  # one chunk queued, six buffered
    seen: list[str] = []
    with NpzWriter(tmp_path / "chunks.npz") as writer:
        for devices, results in early.finish_chunks(streams):
            assert len(devices) == len(results)
            seen += devices
            write_reconstructions(writer, config, zip(devices, results, strict=True))
    assert sorted(seen) == sorted(streams)
    save_reconstructions(tmp_path / "whole.npz", config, want)
    with np.load(tmp_path / "chunks.npz") as got, np.load(tmp_path / "whole.npz") as ref:
        assert sorted(got.files) == sorted(ref.files)
        for key in ref.files:
            assert np.array_equal(got[key], ref[key]), key


def test_closing_finish_chunks_early_stops_the_pool():
    config, streams = _fleet(200)
    early = IncrementalReconstructor(config, "cpr", workers=2, chunk=64)
    chunks = early.finish_chunks(streams)
    next(chunks)
    chunks.close()
    assert early._pool is None
