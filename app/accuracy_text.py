"""The stream accuracy figures in words, beside what they are worth: the per-device means'
error with the constant guess, and the fleet's private average with its interval and
truth (results.json ``accuracy``). One wording for the run summary (app/cli_summary.py)
and the report's headline (app/report.py)."""

from __future__ import annotations


def private_device_accuracy(results: dict) -> dict | None:
    """results.json ``accuracy`` where the device means are private estimates, else None:
    none were made, or the readings were sent raw (GC-DP's central model: the "means" are
    exact, and neither their error 0 nor a "private" average says anything)."""
    accuracy = results.get("accuracy") or {}
    raw = (results.get("stream") or {}).get("mechanism") == "raw"
    return accuracy if accuracy.get("mean_abs_error") is not None and not raw else None


def _worse(value: float, baseline: float) -> str:
    """ "worse than " when ``value`` (an error or a distance) does not beat ``baseline``
    (a tie bought nothing), else ""."""
    return "worse than " if value >= baseline else ""


def device_means_text(accuracy: dict) -> str:
    """The per-device means' error with what it is worth beside it (results.json
    ``accuracy.baselines``): the clipped estimates where clipping helps, and the constant
    guess at mid-bounds ("4.618" alone read as a result where a constant scores 0.147),
    said "worse than" when even the clipped estimates do not beat it (the quickstart at
    eps0 = 0.4 over 200 readings: a per-device mean is noise there; issue 2 fixes its
    budget, and docs/scenarios.md says what it takes)."""
    error = accuracy["mean_abs_error"]
    cell = f"{error:.4g}"
    baselines = accuracy.get("baselines") or {}
    constant = baselines.get("constant") or {}
    clipped_error = (baselines.get("clipped_to_bounds") or {}).get("mean_abs_error")
    notes = []
    if clipped_error is not None and clipped_error < error:
        notes.append(f"clipped to the bounds {clipped_error:.4g}")
    guess = constant.get("mean_abs_error")
    if guess is not None:
        best = error if clipped_error is None else min(error, clipped_error)
        notes.append(f"{_worse(best, guess)}a constant guess {guess:.4g}")
    return f"{cell} ({'; '.join(notes)})" if notes else cell


def fleet_average_text(average: dict | None) -> str | None:
    """The fleet's private average beside its truth (results.json
    ``accuracy.fleet_average``): the figure a stream budget too small for per-device means
    still gives (the quickstart: per-device error 4.6, the fleet's average within a few
    tenths). ± is the collector's own (conservative) 95 % statement: Student's t quantile
    with devices - 1 degrees of freedom times the standard error (1.96 was 2.26 for 10
    devices, an interval covering about 92 %, and 4.30 for 3). None for a multi-channel
    source (one entry per channel: results.json) or no figure."""
    if not average or "estimate" not in average:
        return None
    cell = f"{average['estimate']:.4g}"
    if average.get("standard_error") is not None:
        devices = average.get("devices") or 10**9  # not stated: the normal quantile
        half_width = _t_quantile_975(int(devices)) * average["standard_error"]
        cell += f" ± {half_width:.2g} (95 %)"
    return f"{cell}; true {average['true']:.4g}, error {average['abs_error']:.2g}"


def _t_quantile_975(devices: int) -> float:
    """The 97.5 % quantile of Student's t with ``devices - 1`` degrees of freedom (the
    two-sided 95 % interval of a mean of ``devices`` estimates). scipy is imported here,
    not at the top: the CLI loads this module at start-up (tests/unit/test_cli_imports.py)."""
    from scipy.special import stdtrit

    return float(stdtrit(max(devices - 1, 1), 0.975))


def cosine_distance_text(reconstruction: dict) -> str:
    """The reconstructions' mean cosine distance beside a flat line's, scored the same way
    (results.json ``reconstruction.constant_cosine_distance``: the baseline a reconstruction
    must beat; "0.009" alone did not say whether that is good)."""
    text = f"mean cosine distance {reconstruction['mean_cosine_distance']:.3f}"
    flat = reconstruction.get("constant_cosine_distance")
    if flat is not None:
        text += f" ({_worse(reconstruction['mean_cosine_distance'], flat)}a flat line {flat:.3f})"
    return text


def release_mae_text(accuracy: dict) -> str:
    """A GC-DP release's window-mean MAE, clipped to [0, 1] too, beside the free baseline
    scored the same way (results.json ``gcdp.accuracy.public_baseline_mae``: each node's
    public calibration mean every window, spending nothing); "worse than" when even the
    clipped release does not beat it (Occupancy at eps_rel = 1: 0.336 against 0.10)."""

    def number(value) -> str:  # "n/a": a run that released no window has no MAE
        return "n/a" if value is None else f"{value:.3g}"

    mae, clipped = accuracy.get("mae"), accuracy.get("mae_clipped")
    text = f"MAE {number(mae)} ({number(clipped)} clipped"
    free = accuracy.get("public_baseline_mae")
    if free is not None and mae is not None:
        best = mae if clipped is None else min(mae, clipped)
        text += f"; {_worse(best, free)}the public calibration mean {number(free)}"
    return text + ")"
