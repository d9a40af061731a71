"""Helper N: the bulk gateways' privacy noise comes from an AES-256 keyed PRF
(protocol/bulk.py, "Randomness"): the documented construction (a known answer computed
here with ``cryptography`` directly), the words' uniformity and independence, the SW
reports' law through the gateway, reproducibility and independence of the gateway
layout in the seeded mode, and the rare extra draws taken from the PRF, exactly uniform.

Every statistical threshold is set for a false-failure probability of about 1e-6 with a
fixed key, the derivation beside it."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from ldpfleet.protocol import sw as sw_module
from ldpfleet.protocol.bulk import (
    BulkGateway,
    BulkPlan,
    NoisePrf,
    _PrfIntegers,
    _Words,
    noise_words,
    seeded_noise_key,
)
from ldpfleet.protocol.sw import GRID, SquareWave, normalise
from scipy import stats

WORD = 2**62


def _aes_block(key: bytes, low: int, high: int) -> tuple[int, int]:
    """AES-256_key of the block ``low | high << 64``, as its two little-endian halves."""
    out = (
        Cipher(algorithms.AES(key), modes.ECB())
        .encryptor()
        .update(low.to_bytes(8, "little") + high.to_bytes(8, "little"))
    )
    return int.from_bytes(out[:8], "little"), int.from_bytes(out[8:], "little")


def test_the_words_are_the_documented_aes_blocks_of_the_seeded_key():
    key = hashlib.sha256(b"ldpfleet/bulk/sw-noise-key/v1\x00" + b"42").digest()
    assert seeded_noise_key(42) == key
    words = noise_words(NoisePrf(key), np.array([0, 7, 99_999_999]), np.array([0, 3, 9_999_999]))
    for i, d in enumerate((0, 7, 99_999_999)):
        for j, t in enumerate((0, 3, 9_999_999)):
            first, second = _aes_block(key, t, d)
            assert words[i, j].tolist() == [first >> 2, second >> 2], (d, t)


def _grid_words(devices: int = 50_000, steps: int = 4) -> np.ndarray:
    return noise_words(NoisePrf(seeded_noise_key(7)), np.arange(devices), np.arange(steps))


def test_the_words_are_distinct_62_bit_integers():
    # 400,000 words: if uniform on 2**62 values, some two are equal with probability at
    # most N**2 / 2 / 2**62 = 1.7e-8. A key or block ignoring the device or the step (the
    # same counter twice) repeats words and fails here.
    words = _grid_words()
    assert words.dtype == np.int64 and words.min() >= 0 and words.max() < WORD
    assert np.unique(words).size == words.size


def test_every_bit_of_the_words_is_balanced():
    # N = 400,000 words, 62 bits each: ones ~ Binomial(N, 1/2) per bit. Hoeffding:
    # P(|ones - N/2| >= t) <= 2 exp(-2 t**2 / N); over 62 bits, 62 * 2 exp(-2 t**2 / N) =
    # 1e-6 at t = sqrt(N / 2 * ln(124e6)) = 1,931.
    words = _grid_words().ravel()
    n = words.size
    limit = math.sqrt(n / 2 * math.log(124e6))
    ones = ((words[:, None] >> np.arange(62)) & 1).sum(axis=0)
    assert np.all(np.abs(ones - n / 2) < limit), np.abs(ones - n / 2).max()


def test_the_words_top_byte_is_uniform():
    # 256 bins of N = 400,000: Pearson's statistic ~ chi2(255) (expected 1,562.5 per bin:
    # the asymptotic law holds closely); the 1e-6 upper quantile is scipy's isf (~ 377).
    words = _grid_words().ravel()
    counts = np.bincount((words >> 54).astype(np.int64), minlength=256)
    expected = words.size / 256
    statistic = float(((counts - expected) ** 2 / expected).sum())
    assert statistic < stats.chi2.isf(1e-6, 255), statistic


def test_words_of_neighbouring_devices_steps_and_halves_are_uncorrelated():
    # Pearson's r of n = 150,000-200,000 independent uniform pairs: sqrt(n) r ~ N(0, 1)
    # (CLT, the uniform's moments all finite); three pairs, each beyond 5.0 sigma with
    # probability 5.7e-7, together below 2e-6 (1e-6 in order of magnitude). A planted
    # counter repeating a step or ignoring the device gives r = 1.
    u = _grid_words().astype(np.float64) / WORD  # (devices, steps, 2)
    pairs = {
        "halves": (u[..., 0], u[..., 1]),
        "steps": (u[:, :-1, 0], u[:, 1:, 0]),
        "devices": (u[:-1, :, 0], u[1:, :, 0]),
    }
    for name, (a, b) in pairs.items():
        r = np.corrcoef(a.ravel(), b.ravel())[0, 1]
        assert abs(r) * math.sqrt(a.size) < 5.0, (name, r)


def _constant_plan(**kw) -> BulkPlan:
    """Every reading 0.3 (no sine, no data noise): v = 0.6 after [-1.5, 1.5]."""
    base = dict(run="n", devices=40_000, steps=10, batch_steps=5, eps=2.0, w=5, seed=5,
                gateway_devices=10_000, max_entries=2_000, amplitude=0.0, noise=0.0,
                offset=0.3)  # fmt: skip
    base.update(kw)
    return BulkPlan(**base)


def _built(plan: BulkPlan, noise_key=None) -> dict[tuple[int, int], np.ndarray]:
    """Every row every gateway of ``plan`` builds: (device, seq) -> values."""
    out = {}
    for g in range(plan.gateways):
        gateway = BulkGateway(plan, g, noise_key=noise_key)
        for p in gateway.rows:
            while (entries := gateway._build(p, 0.0)) is not None:
                for row in entries:
                    out[int(row["device"]), int(row["seq"])] = row["values"].copy()
    return out


def test_the_sw_reports_built_by_gateways_follow_the_square_wave_law():
    # 400,000 reports of v = 0.6 at eps0 = 0.4. (1) In the window [v_lo, v_lo + 2b] with
    # probability P = p 2b: the count is Binomial(N, P); Hoeffding at 1e-6 / 3: |count /
    # N - P| < sqrt(ln(6e6) / (2N)) = 0.0044. (2) Outside it, uniform over the rest: 16
    # near-equal bins of the far cells' positions, Pearson ~ chi2(15), 1e-6 / 3 quantile.
    # (3) The mean estimate: |mean - v| < 5.1 sigma (two-sided normal, 3.4e-7).
    plan = _constant_plan()
    y = np.concatenate(list(_built(plan).values()))
    n = y.size
    assert n == plan.devices * plan.steps
    mechanism = SquareWave(plan.eps0, plan.mechanism)
    v = float(normalise(np.array([0.3]), plan.lo, plan.hi)[0])
    low, high = mechanism.window(v)
    inside = (y >= low) & (y <= high)
    p_in = mechanism.p * 2 * mechanism.b
    assert abs(inside.mean() - p_in) < math.sqrt(math.log(6e6) / (2 * n)), inside.mean()
    far = y[~inside]
    # the far outputs' cells, numbered 0 .. far_cells - 1 over the range minus the window
    cells = np.rint((far - mechanism.output_low) / GRID - 0.5).astype(np.int64)
    start = round((low - mechanism.output_low) / GRID)  # the window's first cell
    width = round(2 * mechanism.b / GRID)
    rank = np.where(cells >= start, cells - width, cells)
    far_cells = round((mechanism.output_high - mechanism.output_low) / GRID) - width
    assert rank.min() >= 0 and rank.max() < far_cells
    counts = np.bincount(rank * 16 // far_cells, minlength=16)
    sizes = np.bincount(np.arange(far_cells) * 16 // far_cells, minlength=16)
    expected = far.size * sizes / far_cells
    statistic = float(((counts - expected) ** 2 / expected).sum())
    assert statistic < stats.chi2.isf(1e-6 / 3, 15), statistic
    sigma = math.sqrt(float(mechanism.variance(v)) / n)
    assert abs(mechanism.estimate_mean(y) - v) < 5.1 * sigma


def test_seeded_noise_is_reproducible_and_independent_of_the_gateway_layout():
    plan = _constant_plan(devices=600, steps=10, seed=11, gateway_devices=100, max_entries=40)
    first = _built(plan)
    again = _built(plan)
    layouts = [
        _built(_constant_plan(devices=600, steps=10, seed=11, gateway_devices=37,
                              max_entries=13, partitions=3)),
        _built(_constant_plan(devices=600, steps=10, seed=11, gateway_devices=600,
                              max_entries=600)),
    ]  # fmt: skip
    assert len(first) == 600 * 2
    for other in (again, *layouts):
        assert other.keys() == first.keys()
        assert all(np.array_equal(other[k], first[k]) for k in first)
    other_seed = _built(_constant_plan(devices=600, steps=10, seed=12, gateway_devices=100,
                                       max_entries=40))  # fmt: skip
    assert sum(np.array_equal(other_seed[k], first[k]) for k in first) < 5
    # the seeded key injected is the seeded mode; another key is another noise
    assert all(np.array_equal(v, first[k]) for k, v in _built(plan, seeded_noise_key(11)).items())
    os_keyed = _built(plan, bytes(range(32)))
    assert sum(np.array_equal(os_keyed[k], first[k]) for k in first) < 5


def test_bounded_integers_from_the_prf_are_exactly_uniform():
    # span = 3 * 2**61: 2**64 holds 2 whole spans and a quarter is rejected; without the
    # rejection values below 2**62 (2/3 of the span) would come with probability 3/4.
    # N = 40,000 draws: Hoeffding at 1e-6, |share - 2/3| < sqrt(ln(2e6) / (2N)) = 0.0135.
    draws = _PrfIntegers(NoisePrf(seeded_noise_key(1)), 5, 10)
    span = 3 * 2**61
    x = np.concatenate([draws.integers(0, span, size=20_000) for _ in range(2)])
    assert x.min() >= 0 and x.max() < span
    share = float((x < 2**62).mean())
    assert abs(share - 2 / 3) < math.sqrt(math.log(2e6) / (2 * x.size)), share
    # the call shapes SquareWave.perturb's helpers use: an array of bounds, a scalar bound
    spans = np.array([1, 2, 3, 7, 2**62])
    y = draws.integers(0, spans)
    assert y.shape == (5,) and np.all((y >= 0) & (y < spans)) and y[0] == 0
    assert np.all(draws.integers(3, 5, size=50) >= 3)
    # a message's stream is fixed by (key, first device, t0), and differs for another one
    fresh = _PrfIntegers(NoisePrf(seeded_noise_key(1)), 5, 10)
    assert np.array_equal(fresh.integers(0, span, size=20_000), x[:20_000])
    # apart from every device's words (the tag bit): device 5's blocks at steps 0..3 are
    # not the extra stream of a message starting with device 5 at step 0
    prf = NoisePrf(seeded_noise_key(1))
    extra = _PrfIntegers(prf, 5, 0)._draw(8)
    assert not np.isin(extra, prf.blocks(np.arange(4), 5).ravel()).any()
    for device, t0 in ((6, 10), (5, 15)):
        other = _PrfIntegers(NoisePrf(seeded_noise_key(1)), device, t0)
        assert not np.array_equal(other.integers(0, span, size=20_000), x[:20_000])


def test_the_samplers_rare_extra_draws_come_from_the_prf(monkeypatch):
    # Force both rare paths of SquareWave.perturb: a tie of the far coin's word with the
    # probability's first 62 bits, and a cell word in the rejected top range.
    mechanism = SquareWave(0.4)
    near = 2 * round(mechanism.b / GRID)
    far_cells = round((mechanism.output_high - mechanism.output_low) / GRID) - near
    chunk, _ = sw_module._far_expansion(near, far_cells, mechanism.ratio)
    # (1 device, 2 steps): a tie, then a near cell (word >= chunk) in the rejected range
    words = np.array([[[chunk, 5], [WORD - 1, WORD - 1]]], dtype=np.int64)
    calls = []

    class Recording(_PrfIntegers):
        def integers(self, low, high=None, size=None):
            calls.append((low, high, size))
            return super().integers(low, high, size)

    def refuse(*args, **kwargs):
        raise AssertionError("a numpy generator drew privacy noise")

    monkeypatch.setattr(np.random, "default_rng", refuse)
    prf = NoisePrf(seeded_noise_key(3))
    v = np.array([[0.5, 0.5]])
    first = mechanism.perturb(v, _Words(words, Recording(prf, 9, 0)))
    again = mechanism.perturb(v, _Words(words, Recording(prf, 9, 0)))
    assert len(calls) == 4 and calls[1][1].tolist() == [near]  # tie coin, redrawn cell
    assert np.array_equal(first, again)
    assert np.all(mechanism.in_domain(first))


def test_a_gateway_draws_no_noise_from_numpy_generators(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a numpy generator drew privacy noise")

    monkeypatch.setattr(np.random, "default_rng", refuse)
    plan = _constant_plan(devices=300, steps=10, gateway_devices=300, max_entries=300)
    assert len(_built(plan)) == 600


@pytest.mark.parametrize("key", [b"", b"\0" * 31, bytearray(32)])
def test_a_noise_key_must_be_32_bytes(key):
    from ldpfleet.protocol.errors import ParameterError

    with pytest.raises(ParameterError) as error:
        NoisePrf(key)
    assert error.value.field == "noise_key"
