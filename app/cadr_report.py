"""The CADR-LDP part of the run report that compares the release with knowing nothing.

``release_vs_baselines(results)`` renders, from a CADR-LDP ``results.json``, one HTML table:
the released per-node sequence of the run's pipeline, the raw DSR release, its
post-processing (``collector.degree_postprocess``) and the two trivial releases scored the
same way — the constant TRUE median (a non-private oracle) and all zeros — with per-node
MAE / MSE and the degree histogram's L1 and EMD, then one sentence placing the released
sequence's MAE against the two (above the median by how much, or worse than all zeros);
and, when the results name it, the budget
split (every part each device's ledger was charged) and the privacy claim part by part
(``protocol.cadr_budget.privacy_claim``: what is covered by ε, what carries a caveat, what
is not covered). ``app.report`` calls it; it returns "" for results without these
figures (older runs).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

__all__ = ["DegreeFigure", "degree_figure_inputs", "release_vs_baselines"]

METRICS = ("mae", "mse", "histogram_l1", "histogram_emd")
HEADER = ("release", "per-node MAE", "per-node MSE", "histogram L1", "histogram EMD")


def _cell(value: object) -> str:
    if isinstance(value, float):
        text = f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
        return f'<td class="num">{text}</td>'
    return f"<td>{html.escape(str(value))}</td>"


@dataclass(frozen=True)
class DegreeFigure:
    """What the report's CADR figures draw: the true degrees, the pipeline's released
    per-node sequence (``label`` names it), the DSR budget the θ error model uses and the
    MAE of the raw DSR release, which is what that model describes."""

    degrees: np.ndarray
    released: np.ndarray
    label: str
    eps_dsr: float | None
    model_mae: float | None


def degree_figure_inputs(results: dict) -> DegreeFigure | None:
    """``DegreeFigure`` of a CADR-LDP ``results.json`` (None without per-device degrees).
    Under pipeline "dp" the release is the post-processed ``estimate`` and DSR's ε is the
    ``budget``'s ``dsr`` part (the θ search takes its share from DSR); results without a
    ``budget`` (older runs) use the paper's (1 - α) ε."""
    dp = results.get("pipeline") == "dp"
    key = "estimate" if dp else "released"
    per_device = results.get("per_device") or {}
    pairs = [
        (d["degree"], d[key])
        for d in per_device.values()
        if isinstance(d, dict) and "degree" in d and key in d
    ]
    if not pairs:
        return None
    degrees, released = np.array(pairs, dtype=float).T
    budget = results.get("budget") if isinstance(results.get("budget"), dict) else {}
    eps, alpha = results.get("eps"), results.get("alpha")
    eps_dsr = budget.get("dsr")
    if eps_dsr is None and isinstance(eps, int | float) and isinstance(alpha, int | float):
        eps_dsr = (1 - alpha) * eps
    raw = results.get("raw") if isinstance(results.get("raw"), dict) else {}
    return DegreeFigure(
        degrees=degrees,
        released=released,
        label="released degree (post-processed)" if dp else "released degree",
        eps_dsr=eps_dsr,
        model_mae=raw.get("mae", results.get("mae")),
    )


def release_vs_baselines(results: dict) -> str:
    """The table (module docstring), or "" when the results do not hold the figures."""
    raw, post = results.get("raw"), results.get("postprocessed")
    baselines = results.get("baselines")
    if not isinstance(raw, dict) or not isinstance(post, dict) or not isinstance(baselines, dict):
        return ""
    pipeline = results.get("pipeline", "paper")
    rows = [
        (f"raw DSR (Laplace){' — released' if pipeline == 'paper' else ''}", raw),
        (f"post-processed{' — released' if pipeline == 'dp' else ''}", post),
    ]
    median = baselines.get("constant_median_oracle") or {}
    zero = baselines.get("all_zero") or {}
    rows.append((f"constant true median {median.get('value')} (non-private oracle)", median))
    rows.append(("all zero", zero))
    body = "".join(
        "<tr>"
        + _cell(name)
        + "".join(_cell(float(row[m])) if m in row else _cell("") for m in METRICS)
        + "</tr>"
        for name, row in rows
    )
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in HEADER)
    released = post if pipeline == "dp" else raw
    out = (
        f"<h3>Release against knowing nothing (pipeline {html.escape(str(pipeline))})</h3>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        + _verdict(released.get("mae"), median.get("mae"), zero.get("mae"), pipeline)
        + _dropped(results)
        + _warnings(results.get("warnings"))
    )
    budget = results.get("budget")
    if isinstance(budget, dict) and budget:
        parts = ", ".join(f"{html.escape(str(k))} {v:g}" for k, v in budget.items())
        out += f"<p>Budget per device (ε, every part charged in its ledger): {parts}.</p>"
    return out + _claim_table(results.get("privacy_claim"))


def _dropped(results: dict) -> str:
    """A run with ``[cadr] dropout``: how many devices dropped out, at which stage, and
    that the table covers the released devices ("" otherwise)."""
    dropped = results.get("dropped")
    if not isinstance(dropped, dict):
        return ""
    return (
        f"<p>Dropped out: {html.escape(str(dropped.get('count')))} devices at "
        f"{html.escape(str(dropped.get('stage')))}: "
        f"{html.escape(str(results.get('scored_over', '')))}.</p>"
    )


def _warnings(sentences: object) -> str:
    """results.json ``warnings`` of a CADR run (``protocol.cadr_budget.release_warnings``:
    a release that cannot place the fleet), one paragraph each, marked bad."""
    if not isinstance(sentences, list):
        return ""
    return "".join(f'<p class="bad">warning: {html.escape(str(text))}</p>' for text in sentences)


def _verdict(released: object, median: object, zero: object, pipeline: object = None) -> str:
    """``verdict``'s sentence as an HTML paragraph ("" without the three figures)."""
    text = verdict(released, median, zero, pipeline)
    return f"<p>{html.escape(text)}</p>" if text else ""


def released_verdict(results: dict) -> str:
    """``verdict`` of a CADR-LDP results.json: the released sequence (post-processed under
    pipeline "dp", the raw DSR values under "paper") against its baselines ("" when the
    results do not hold them). ``ldpfleet run`` prints it under its summary."""
    baselines = results.get("baselines")
    if not isinstance(baselines, dict):
        return ""
    key = "postprocessed" if results.get("pipeline", "paper") == "dp" else "raw"
    released = results.get(key) if isinstance(results.get(key), dict) else {}
    median = baselines.get("constant_median_oracle") or {}
    zero = baselines.get("all_zero") or {}
    return verdict(released.get("mae"), median.get("mae"), zero.get("mae"), results.get("pipeline"))


def verdict(released: object, median: object, zero: object, pipeline: object = None) -> str:
    """One sentence: where the released sequence's per-node MAE stands against the constant
    true median and all zeros ("" without the three figures). Worse than all zeros is
    named as such: on graphs of fewer than about 100 nodes the θ search's noise swamps
    the counts (docs/cadr.md, "How small a graph?"); under ``pipeline`` "paper" the
    release is the raw Laplace values, which the default "dp" post-processes (a paper
    run on K(3, 300), 303 devices at ε = 1, released MAE 5.99 against all zeros' 5.94 and
    was sent to "How small a graph?"; dp released the median's 2.94; helper F's trial)."""
    if not all(isinstance(x, int | float) for x in (released, median, zero)):
        return ""
    a, m, z = float(released), float(median), float(zero)
    gap = a - m
    level = 1e-9 * max(1.0, abs(z))  # float noise: an MAE equal to all zeros' is not below it
    if a > z + level:
        why = (
            'the paper pipeline releases the raw Laplace values; the default pipeline "dp" '
            'post-processes them: docs/cadr.md, "Pipelines"'
            if pipeline == "paper"
            else 'docs/cadr.md, "How small a graph?"'
        )
        text = (
            f"The released sequence (MAE {a:,.3f}) is worse than releasing 0 for every node "
            f"(MAE {z:,.3f}) and than the constant true median ({m:,.3f}): on this graph "
            f"and budget it carries no usable information about the degrees ({why})."
        )
    elif gap > 1e-9 * max(1.0, abs(m)):
        share = f" ({100 * gap / m:+.1f} %)" if m > 0 else ""
        zeros = (
            f"below all zeros ({z:,.3f})"
            if a < z - level
            else f"no better than releasing 0 for every node (MAE {z:,.3f})"
        )
        text = (
            f"The released sequence (MAE {a:,.3f}) is above the constant true median "
            f"(a non-private oracle, MAE {m:,.3f}) by {gap:+,.3f}{share}; {zeros}."
        )
    else:
        text = (
            f"The released sequence (MAE {a:,.3f}) is at or below the constant true median "
            f"(a non-private oracle, MAE {m:,.3f}; difference {gap:+,.3f})."
        )
    return text


def _claim_table(claim: object) -> str:
    """The privacy claim, one row per part ("" without one)."""
    if not isinstance(claim, dict) or not isinstance(claim.get("parts"), list):
        return ""
    head = "".join(
        f'<th scope="col">{h}</th>'
        for h in ("what is seen", "by", "mechanism", "ε", "charged", "covered", "note")
    )
    rows = "".join(
        "<tr>"
        + "".join(
            _cell(part.get(key) if part.get(key) is not None else "—")
            for key in ("part", "seen_by", "mechanism", "eps", "charged", "covered", "note")
        )
        + "</tr>"
        for part in claim["parts"]
        if isinstance(part, dict)
    )
    statement = html.escape(str(claim.get("statement", "")))
    return (
        f"<h3>Privacy claim, part by part</h3><p>{statement}.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )
