"""cpr_many / em_owners / the pool's chunk function give exactly the per-stream results."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.analytics import _Job, _reconstruct_chunk, _reconstruct_one
from ldpfleet.collector.cpr import cpr, cpr_many
from ldpfleet.collector.sw_em import em, em_owners, rows_matmul, transition_matrix
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanisms import stream_mechanism
from ldpfleet.protocol.sw import SquareWave


def _streams(seed: int, sizes: list[int], mechanism) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for k, n in enumerate(sizes):
        t = np.arange(n)
        period = int(rng.integers(3, max(4, n // 4)))
        if k % 3 == 0:
            clean = 0.5 + 0.3 * np.sin(2 * np.pi * t / period)
        elif k % 3 == 1:
            clean = np.where(t % period < period / 2, 0.85, 0.15)
        else:
            clean = np.clip(0.5 + 0.2 * rng.standard_normal(n), 0.0, 1.0)
        out.append(np.asarray(mechanism.perturb(clean, rng), dtype=float))
    return out


def _same(a, b) -> bool:
    return (
        a.period == b.period
        and a.confidence == b.confidence
        and np.array_equal(a.template, b.template)
        and np.array_equal(a.reconstruction, b.reconstruction)
    )


@pytest.mark.parametrize("variant", ["sw", "sw01"])
def test_em_owners_matches_em_per_owner_bit_for_bit(variant):
    rng = np.random.default_rng(5)
    mechanism = SquareWave(1.0, variant)
    for buckets in (16, 32):
        matrix = transition_matrix(mechanism, buckets, buckets)
        sizes = [1, 3, 1, 24, 2, 1, 7]  # odd sizes: a BLAS remainder kernel rounds odd rows apart
        counts = rng.poisson(rng.uniform(0.2, 6.0), size=(sum(sizes), buckets)).astype(float)
        counts[4] = 0.0  # an empty row
        owners = np.repeat(np.arange(len(sizes)), sizes)
        both = em_owners(counts, matrix, owners, smoothing=True, tol=1e-3, max_iter=300)
        for owner in range(len(sizes)):
            rows = owners == owner
            alone = em(counts[rows], matrix, smoothing=True, tol=1e-3, max_iter=300)
            assert np.array_equal(both.theta[rows], alone.theta)
            assert np.array_equal(both.iterations[rows], alone.iterations)
            assert np.array_equal(both.log_likelihood[rows], alone.log_likelihood)
            assert np.array_equal(both.converged[rows], alone.converged)


def test_em_owners_rejects_unsorted_owners():
    matrix = transition_matrix(SquareWave(1.0), 16, 16)
    with pytest.raises(ParameterError):
        em_owners(np.ones((3, 16)), matrix, np.array([1, 0, 1]))


@pytest.mark.parametrize("eps0", [0.5, 2.0])
def test_cpr_many_matches_cpr_bit_for_bit(eps0):
    mechanism = SquareWave(eps0)
    sizes = [100] * 12 + [1000] * 6 + [30, 250, 600, 3000]
    streams = _streams(11, sizes, mechanism)
    many = cpr_many(streams, mechanism)
    one = [cpr(y, mechanism) for y in streams]
    assert all(_same(a, b) for a, b in zip(one, many, strict=True))
    assert any(r.period is not None for r in one) and any(r.period is None for r in one)


def test_reconstruct_chunk_matches_one_by_one():
    job = _Job("cpr", "sw", 1.0)
    streams = _streams(12, [100] * 10 + [400] * 4, stream_mechanism("sw", 1.0))
    chunk = _reconstruct_chunk(job, streams)
    for reports, got in zip(streams, chunk, strict=True):
        want = _reconstruct_one(job, reports)
        assert want.period == got.period and want.confidence == got.confidence
        assert np.array_equal(want.values, got.values)
        assert np.array_equal(want.template, got.template)


def test_serial_reconstruct_streams_goes_in_chunks_and_matches_one_by_one():
    """workers = 1 (and the inline leftovers of IncrementalReconstructor) reconstruct in
    chunks of INCREMENTAL_CHUNK through the chunk path: 70 streams cross a chunk boundary."""
    from ldpfleet.collector.analytics import reconstruct_streams
    from ldpfleet.protocol.stream import StreamConfig

    config = StreamConfig(
        run="r1", mechanism="sw", eps=5.0, w=5, steps=120, batch_steps=5, lo=0.0, hi=1.0
    )
    mechanism = stream_mechanism(config.mechanism, config.eps0)
    streams = dict(enumerate(_streams(13, [120] * 70, mechanism)))
    streams = {f"d{i:03d}": values for i, values in streams.items()}
    got = reconstruct_streams(config, streams, "cpr", workers=1)
    job = _Job("cpr", config.mechanism, config.eps0)
    assert list(got) == list(streams)
    for device, reports in streams.items():
        want = _reconstruct_one(job, reports)
        assert want.period == got[device].period
        assert np.array_equal(want.values, got[device].values), device


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 7, 8, 9, 17])
def test_rows_matmul_gives_each_row_the_bits_it_has_among_any_other_rows(rows):
    # BLAS computes the rows left over by its kernel's unroll (one row, the last of an odd
    # count) with other rounding; rows_matmul must not: a row alone, in a small product and
    # in a large one give the same bits
    rng = np.random.default_rng(rows)
    b = np.ascontiguousarray(rng.random((32, 32)))
    a = rng.random((64, 32))
    full = rows_matmul(a, b)
    assert np.array_equal(rows_matmul(a[:rows], b), full[:rows])
    assert np.array_equal(rows_matmul(a[rows - 1 : rows], b), full[rows - 1 : rows])
    assert np.allclose(full, a @ b, rtol=1e-13, atol=0.0)
