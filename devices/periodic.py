"""Periodic streams built from real data sets (seed 003's evaluation), and synthetic ones.

Seed 003 "extracted continuous numerical features ... and concatenated repeated segments
with minor synthetic jitter". It does not say exactly how; ldpfleet fixes the
construction as follows, so every figure can be reproduced.

A *template* is one cycle r_0 .. r_{T-1}, min-max normalised to [0, 1] (a constant
template is rejected). A *stream* of n samples repeats it with amplitude jitter:

    x_t = clip(r[t mod T] + jitter * N(0, 1), 0, 1),   jitter = 0.02 by default,

so the true period is T exactly, and the jitter stands for the small cycle-to-cycle
variation of real sensing data. Templates per data set (``data/*/SOURCE.txt``):

- ``darwin`` (UCI DARWIN handwriting, 174 participants): one participant's
  ``pressure_mean1 .. pressure_mean25``, the mean pen pressure over the 25 handwriting tasks
  in task order — T = 25 (a pressure trajectory). Record i = participant row i.
- ``music`` (UCI Turkish Music Emotion, 400 clips): one clip's ``_MFCC_Mean_1 .. 13``, its
  mean mel-frequency cepstrum (a spectral envelope) — T = 13. Record i = clip i.
- ``raisin`` (UCI Raisin, 900 grains): ``Area`` of 30 consecutive grains (rows i .. i+29)
  — T = 30, a heterogeneous pattern with weak structure. Record i = block start i.
- ``synthetic``: a composite waveform (sine + 0.5 sine at twice the frequency + 0.25
  square) with a period drawn uniformly from 12 .. 48 and a random phase — record i only
  seeds the draw.

A trial draws a record uniformly (``rng``), builds the template and a stream of ``n``
samples (default 3,000: seed 003 does not state its length; with 3,000 our detection
accuracy at w = 5, ε = 5 is 99% on Darwin and 100% on Music, the seed's 98% and 100%).
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATASETS = ("synthetic", "darwin", "music", "raisin")
DEFAULT_LENGTH = 3000
DEFAULT_JITTER = 0.02
RAISIN_BLOCK = 30
DATA_ROOT = Path(__file__).resolve().parent.parent / "data"


class DatasetError(ValueError):
    """An unknown data set name or an unreadable data file."""


@dataclass(frozen=True)
class PeriodicSpec:
    """A fleet source (``[source] kind = "periodic"``): device ``i`` repeats data-set record
    ``i``'s cycle with ``jitter``, scaled from [0, 1] to ``bounds``."""

    dataset: str
    bounds: tuple[float, float] = (0.0, 1.0)
    jitter: float = DEFAULT_JITTER


@dataclass(frozen=True)
class PeriodicTrial:
    """One periodic stream with its truth."""

    dataset: str
    record: int
    template: np.ndarray  # one cycle in [0, 1]
    stream: np.ndarray  # n samples in [0, 1]

    @property
    def period(self) -> int:
        """The true period (the template length)."""
        return len(self.template)


def _normalise(values: np.ndarray) -> np.ndarray:
    low, high = float(np.min(values)), float(np.max(values))
    if not high > low:
        raise DatasetError("a template must not be constant")
    return (values - low) / (high - low)


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    if not path.exists():
        raise DatasetError(f"data file {path} is missing (see data/README.md)")
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


@functools.cache
def dataset_records(dataset: str) -> np.ndarray:
    """Every raw template of a data set, one row per record (before normalisation)."""
    if dataset == "darwin":
        header, rows = _read_csv(DATA_ROOT / "uci-darwin" / "data.csv")
        columns = [header.index(f"pressure_mean{task}") for task in range(1, 26)]
        table = np.array([[float(row[c]) for c in columns] for row in rows])
    elif dataset == "music":
        header, rows = _read_csv(DATA_ROOT / "uci-turkish-music-emotion" / "Acoustic_Features.csv")
        columns = [header.index(f"_MFCC_Mean_{k}") for k in range(1, 14)]
        table = np.array([[float(row[c]) for c in columns] for row in rows])
    elif dataset == "raisin":
        header, rows = _read_csv(DATA_ROOT / "uci-raisin" / "Raisin_Dataset.csv")
        area = np.array([float(row[header.index("Area")]) for row in rows])
        starts = range(len(area) - RAISIN_BLOCK + 1)
        table = np.array([area[s : s + RAISIN_BLOCK] for s in starts])
    else:
        raise DatasetError(f"dataset {dataset!r} has no records; choose one of {DATASETS}")
    table.setflags(write=False)
    return table


def synthetic_template(rng: np.random.Generator) -> np.ndarray:
    """A composite waveform cycle with a random period in 12..48 and a random phase."""
    period = int(rng.integers(12, 49))
    phase = rng.random()
    u = np.arange(period) / period + phase
    wave = (
        np.sin(2 * np.pi * u)
        + 0.5 * np.sin(4 * np.pi * u)
        + 0.25 * np.where((u % 1.0) < 0.5, 1.0, -1.0)
    )
    return _normalise(wave)


def template(dataset: str, record: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """The normalised template of ``record`` (for ``synthetic``, drawn with ``rng``)."""
    if dataset == "synthetic":
        return synthetic_template(rng if rng is not None else np.random.default_rng(record))
    records = dataset_records(dataset)
    return _normalise(records[record % len(records)])


def periodic_stream(
    cycle: np.ndarray, n: int, rng: np.random.Generator, *, jitter: float = DEFAULT_JITTER
) -> np.ndarray:
    """Repeat ``cycle`` to ``n`` samples with amplitude jitter, clipped to [0, 1]."""
    if n < 1 or jitter < 0:
        raise DatasetError("need n >= 1 and jitter >= 0")
    base = np.resize(np.asarray(cycle, dtype=float), n)
    return np.clip(base + jitter * rng.standard_normal(n), 0.0, 1.0)


def make_trial(
    dataset: str,
    rng: np.random.Generator,
    *,
    n: int = DEFAULT_LENGTH,
    jitter: float = DEFAULT_JITTER,
) -> PeriodicTrial:
    """Draw a record uniformly and build its periodic stream."""
    if dataset not in DATASETS:
        raise DatasetError(f"dataset {dataset!r} is not one of {', '.join(DATASETS)}")
    if dataset == "synthetic":
        record = int(rng.integers(2**31))
    else:
        record = int(rng.integers(len(dataset_records(dataset))))
    cycle = template(dataset, record, rng)
    return PeriodicTrial(dataset, record, cycle, periodic_stream(cycle, n, rng, jitter=jitter))
