"""The checks a stream scenario passes on load beyond msgspec's types and ranges: limits
that involve several keys (``credit_window <= max_in_flight``, ``w <= steps``), the
``[secure_sum]`` session, ``[faults]``, bulk gateways, the source's bounds, and the
mechanism (a built-in or a plugin, checked at its per-report budget). Each raises
``ScenarioError`` naming the key, the limit and the value; ``scenarios.schema`` calls
them in order, each refusal recorded and the checks it leaves meaningful going on
(``scenarios.schema_collect``).
"""

from __future__ import annotations

import json
import math

from ldpfleet.protocol.bulk import BULK_MECHANISMS, MAX_BULK_W
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import EPS_MIN
from ldpfleet.protocol.mechanisms import (
    BUILTIN_MECHANISMS,
    check_mechanism_name,
    is_entry_point,
)
from ldpfleet.protocol.secagg import graph as graphs
from ldpfleet.protocol.secagg.messages import MAX_PARTICIPANTS
from ldpfleet.protocol.secagg.server import SecAggServer
from ldpfleet.protocol.stream import RAW
from ldpfleet.scenarios.plugin_load import mechanism_in_time
from ldpfleet.scenarios.schema_collect import differs_from, unless_refused
from ldpfleet.scenarios.schema_errors import ScenarioError, _mechanism_name_rule, _schema_rule
from ldpfleet.scenarios.schema_explain import _near_miss
from ldpfleet.scenarios.schema_loaded import LoadedScenario
from ldpfleet.scenarios.schema_sections import (
    BOUNDS_RULE,
    CollectorSection,
    CprSection,
    CsvSource,
    FaultsSection,
    Scenario,
    SecureSumSection,
    StreamSection,
    SyntheticSource,
    _Section,
)

# the session's ParameterError fields, as [secure_sum] names them
SECAGG_FIELDS = {"k": "neighbors", "degree": "neighbors"}
# the fixed point's fields that are one item of [secure_sum] clip
CLIP_FIELDS = ("clip_low", "clip_high")


def _check_secagg_session(loaded: LoadedScenario, devices: int) -> None:
    """Build the ``[secure_sum]`` session's server once, as the stage will (its graph,
    neighbours and threshold for ``devices`` devices): a bad ``neighbors`` or
    ``threshold`` is refused when the scenario loads, not as a traceback after the
    stream stage. The SecAgg+ graph's degrees, hence the threshold's limits, depend on n
    and k only, not on the random labelling."""
    section = loaded.spec.secure_sum
    assert section is not None
    # the full graph's server is O(n^2): check its two settings on a 2-node graph's terms
    if section.graph == "full":
        _check_full_graph(section.neighbors, section.threshold, devices)
        threshold = section.threshold or graphs.default_threshold(devices)
    else:
        threshold = SecAggServer(
            "check",
            "s0",
            [f"d{i}" for i in range(devices)],
            section.dim,
            loaded.fixed_point(),
            graph=section.graph,
            degree=section.neighbors,
            threshold=section.threshold,
        ).threshold
    graphs.check_dropout_survivors(section.dropout, devices, threshold)


def _check_full_graph(neighbors: int | None, threshold: int | None, devices: int) -> None:
    """``SecAggServer``'s refusals for the full graph on ``devices`` nodes (every device
    holds n shares: its n - 1 neighbours' and its own), without building the graph."""
    if neighbors is not None and neighbors != devices - 1:
        raise ParameterError(
            f"the full graph has degree n - 1 = {devices - 1}, got {neighbors}",
            field="degree",
            limit=f"n - 1 = {devices - 1} (the full graph)",
            value=neighbors,
        )
    if threshold is not None and not devices < 2 * threshold <= 2 * devices:
        raise ParameterError(
            f"must be an integer with {devices} < 2t and t <= {devices} (share holders "
            f"per device: neighbours + itself), got {threshold!r}",
            field="threshold",
            limit=f"an integer with {devices} < 2t and t <= {devices}",
            value=threshold,
        )


def _check_collector(collector: CollectorSection, where: str) -> None:
    """``credit_window <= max_in_flight``: the stream collector refused it when the run
    started, with a traceback (found by the boundary sweep: credit_window = 4096, the
    reference's limit, against the default max_in_flight = 256)."""
    if collector.credit_window > collector.max_in_flight:
        raise ScenarioError(
            f"{where}collector.credit_window: must be <= collector.max_in_flight "
            f"({collector.max_in_flight}: a device's credits are reports in flight at the "
            f"collector), got {collector.credit_window}",
            limit=f"<= collector.max_in_flight ({collector.max_in_flight})",
        )


def _check_never_return(spec: Scenario, where: str) -> None:
    faults = spec.faults
    crashing = round(faults.crash_fraction * spec.fleet.devices)
    if faults.never_return > crashing:
        raise ScenarioError(
            f"{where}faults.never_return: {faults.never_return} exceeds the {crashing} "
            "crashing devices (crash_fraction x fleet.devices)",
            limit=f"<= {crashing} (crash_fraction x fleet.devices)",
        )


def _check_crash_between(spec: Scenario, where: str) -> None:
    low, high = spec.faults.crash_between
    if not 0 <= low <= high <= 1:
        raise ScenarioError(
            f"{where}faults.crash_between: need 0 <= low <= high <= 1 (fractions of the "
            f"stream), got [{low:g}, {high:g}]",
            limit="0 <= low <= high <= 1",
        )


def _check_crash_pacing(spec: Scenario, where: str) -> None:
    faults = spec.faults
    crashing = round(faults.crash_fraction * spec.fleet.devices)
    if crashing and spec.stream.step_seconds <= 0:
        raise ScenarioError(
            f"{where}faults.crash_fraction: crashes need a paced stream (stream.step_seconds "
            "> 0): an unpaced device reports its whole stream at once; got crash_fraction = "
            f"{faults.crash_fraction:g} ({crashing} of {spec.fleet.devices} devices) with "
            f"stream.step_seconds = {spec.stream.step_seconds:g}",
            limit="round(crash_fraction x fleet.devices) = 0 unless stream.step_seconds > 0",
        )


# ``[faults]``'s checks, in order (``scenarios.schema`` runs each on its own,
# ``_check_faults_part``)
FAULTS_CHECKS = (_check_never_return, _check_crash_between, _check_crash_pacing)


def _check_finite_value(section: str, name: str, number: object, where: str) -> None:
    """The value ``number`` of key ``section.name`` is finite when it is a float: TOML's
    ``inf`` passed the one-sided limits (``run_timeout > 0``) and results.json, which
    records the scenario, then held ``Infinity``, which is not JSON. Lists (bounds, clip)
    have their own checks. ``scenarios.schema`` runs it on every key of every section
    (``_check_finite_key``)."""
    if isinstance(number, float) and not math.isfinite(number):
        raise ScenarioError(
            f"{where}{section}.{name}: must be a finite number (TOML's inf and nan "
            f"are refused; a long deadline is a large number such as 1e6), got {number}",
            limit="a finite number",
        )


def _check_stream_lengths(stream: StreamSection, where: str) -> None:
    """``batch_steps`` and ``w`` at most ``steps`` (any run kind). A batch longer than the
    stream cannot be filled (the one batch would hold fewer steps than it says); a w-event
    window longer than the stream is legal DP but gives each report only eps / w where
    w = steps gives eps / steps with the same guarantee (every window of a stream of
    ``steps`` readings is the whole stream): a typo, refused with the value to use."""
    _check_batch_length(stream, where)
    _check_window_length(stream, where)


def _check_batch_length(stream: StreamSection, where: str) -> None:
    """``_check_stream_lengths``'s rule for ``batch_steps``."""
    steps = stream.steps
    if stream.batch_steps is not None and stream.batch_steps > steps:
        raise ScenarioError(
            f"{where}stream.batch_steps: at most stream.steps ({steps}): a report carries "
            f"at most the whole stream, got {stream.batch_steps}",
            limit=f"<= stream.steps ({steps})",
        )


def _check_window_length(stream: StreamSection, where: str) -> None:
    """``_check_stream_lengths``'s rule for ``w``."""
    steps = stream.steps
    if stream.w is not None and stream.w > steps:
        eps = stream.eps
        spent = (
            f" (each report would get eps / w = {eps:g} / {stream.w} = {eps / stream.w:g} "
            f"instead of eps / steps = {eps / steps:g})"
            if eps is not None
            else ""
        )
        raise ScenarioError(
            f"{where}stream.w: at most stream.steps ({steps}): a window longer than the "
            f"stream protects no more than w = {steps}, the whole stream{spent}; set "
            f"w = {steps} for one budget over the whole stream, got {stream.w}",
            limit=f"<= stream.steps ({steps})",
        )


BULK_WHY = 'with fleet.connection = "bulk"'
# a key refused already, as ``_check_bulk_sections`` reads it (no value compares to it)
_REFUSED = object()


def _check_bulk_stream(loaded: LoadedScenario, where: str) -> None:
    """Bulk ``[stream]``: a vectorised mechanism, a ledger of at most ``MAX_BULK_W``
    floats, and whole batches (``steps`` a multiple of ``batch_steps``)."""
    stream = loaded.spec.stream
    if stream.mechanism not in BULK_MECHANISMS:
        raise ScenarioError(
            f"{where}stream.mechanism: bulk gateways privatise with "
            f"{' or '.join(BULK_MECHANISMS)} (vectorised), got {stream.mechanism!r}",
            limit=f"one of {', '.join(json.dumps(m) for m in BULK_MECHANISMS)}",
        )
    if stream.w > MAX_BULK_W:
        raise ScenarioError(
            f"{where}stream.w: at most {MAX_BULK_W} {BULK_WHY} (the gateway's ledger keeps w "
            f"floats per device), got {stream.w}",
            limit=f"<= {MAX_BULK_W}",
        )
    _check_stream_lengths(stream, where)  # before "a multiple of batch_steps"
    batch = loaded.stream_config("check").batch_steps
    if stream.steps % batch:
        raise ScenarioError(
            f"{where}stream.batch_steps: {BULK_WHY} stream.steps ({stream.steps}) must be a "
            f"multiple of batch_steps, got {batch}",
            limit=f"a divisor of stream.steps ({stream.steps})",
        )


def _check_bulk_sections(spec: Scenario, where: str) -> None:
    """Bulk runs are a stream stage only: no ``[secure_sum]``/``[gcdp]``, ``[faults]`` at
    its defaults, and no device state directory. A section or key refused already is
    passed over (its own refusal says it), not the end of the check
    (``schema_collect.unless_refused``)."""
    for section in ("secure_sum", "gcdp"):
        if unless_refused(lambda s=section: getattr(spec, s)) is not None:
            raise ScenarioError(
                f"{where}{section}: a bulk run is a stream stage only; remove [{section}] "
                f"{BULK_WHY}",
                limit='absent with fleet.connection = "bulk"',
            )
    faults = unless_refused(lambda: spec.faults)
    if faults is not None:
        _check_bulk_faults(faults, where)
    if spec.fleet.state_dir != "auto":
        raise ScenarioError(
            f'{where}fleet.state_dir: bulk gateways keep no device state files; leave it "auto" '
            f"{BULK_WHY}, got {spec.fleet.state_dir!r}",
            limit='"auto"',
        )


def _check_bulk_faults(faults: FaultsSection, where: str) -> None:
    """Bulk ``[faults]``: every key at its default (a refused one passed over)."""
    defaults = FaultsSection()
    for name in FaultsSection.__struct_fields__:
        value = unless_refused(lambda n=name: getattr(faults, n), otherwise=_REFUSED)
        if value is not _REFUSED and value != getattr(defaults, name):
            raise ScenarioError(
                f"{where}faults.{name}: bulk gateways inject no faults (crashes, hostile "
                f"clients, a slow collector); leave it at {getattr(defaults, name)!r} "
                f"{BULK_WHY}, got {value!r}",
                limit=f"== {json.dumps(getattr(defaults, name))}",
            )


def _check_bulk_source(source: _Section, where: str) -> None:
    """Bulk ``[source]``: the gateways generate sines with a random phase per device
    (``kind = "synthetic"``, ``shape = "sine"``, no jitter)."""
    if not isinstance(source, SyntheticSource):
        kind = "csv" if isinstance(source, CsvSource) else "periodic"
        raise ScenarioError(
            f'{where}source.kind: bulk gateways generate their readings (kind = "synthetic", '
            f'shape = "sine"), got {kind!r}',
            limit='"synthetic"',
        )
    synthetic = (("shape", "sine"), ("jitter", 0.0), ("phase", "random"))
    for name, allowed in synthetic:
        value = getattr(source, name)
        if value != allowed:
            raise ScenarioError(
                f"{where}source.{name}: bulk gateways' readings are sines with a random phase "
                f"per device: only {allowed!r} {BULK_WHY}, got {value!r}",
                limit=f"== {json.dumps(allowed)}",
            )


def _check_source_bounds(spec: Scenario, where: str) -> None:
    """``source.bounds`` for one column; ``columns`` + ``column_bounds`` for several."""
    src = spec.source
    if isinstance(src, CsvSource) and src.columns is not None:
        if src.bounds is not None:
            raise ScenarioError(
                f"{where}source.bounds: with source.columns each channel has its own "
                "bounds; give source.column_bounds instead",
                limit="absent with source.columns",
            )
        if src.column is not None:
            raise ScenarioError(
                f"{where}source.column: give either source.column or source.columns, not both",
                limit="absent with source.columns",
            )
        channels = len(src.columns)
        if spec.fleet.devices % channels:
            raise ScenarioError(
                f"{where}fleet.devices: {spec.fleet.devices} is not a whole number of rooms "
                f"of {channels} channels (device i = channel i % {channels} of room "
                f"i // {channels})",
                limit=f"a multiple of {channels} (len(source.columns))",
            )
        return
    if isinstance(src, CsvSource) and src.column_bounds is not None:
        raise ScenarioError(
            f"{where}source.column_bounds: only with source.columns", limit="with source.columns"
        )
    if src.bounds is None:
        raise ScenarioError(
            f"{where}source.bounds: required (fixed public [lo, hi])", limit="required: [lo, hi]"
        )
    lo, hi = src.bounds
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ScenarioError(
            f"{where}source.bounds: need finite [lo, hi] with lo < hi, got [{lo}, {hi}]",
            limit="finite lo < hi",
        )
    if not math.isfinite(hi - lo):
        raise ScenarioError(
            f"{where}source.bounds: hi - lo overflows to infinity (the width must be "
            f"finite), got [{lo}, {hi}]",
            limit="hi - lo finite",
        )


def _check_mechanism(spec: Scenario, where: str, *, resolve: bool = True) -> None:
    """``raw`` (central model) needs ``[gcdp]`` and takes no LDP options; the LDP
    mechanisms need ``eps`` and ``w``. ``resolve=False`` (the scenario is refused
    already): a plugin is checked by its name and budget only, its module not imported
    (``_check_plugin``)."""
    stream = spec.stream
    if stream.mechanism != RAW:
        for name in ("eps", "w"):
            if getattr(stream, name) is None:
                raise ScenarioError(
                    f"{where}stream.{name}: required for mechanism {stream.mechanism!r}",
                    limit=f"required for mechanism {json.dumps(stream.mechanism)}",
                )
        _check_plugin(stream.mechanism, stream.eps, stream.w, where, resolve=resolve)
        if spec.gcdp is not None:
            raise ScenarioError(
                f"{where}stream.mechanism: [gcdp] is a central release from readings sent in "
                f'the clear; set mechanism = "raw" (got {stream.mechanism!r})',
                limit='"raw" with [gcdp]',
            )
        return
    if spec.gcdp is None:
        raise ScenarioError(
            f'{where}stream.mechanism: "raw" sends readings unprivatised to the collector; '
            "it is only allowed with a [gcdp] section, whose central release is accounted",
            limit='not "raw" without [gcdp]',
        )
    for name in ("eps", "w"):
        if getattr(stream, name) is not None:
            raise ScenarioError(
                f'{where}stream.{name}: mechanism "raw" spends no local budget and has no '
                "w-event window; remove it (the budget is gcdp.eps_rel)",
                limit='absent with mechanism "raw"',
            )
    if stream.reconstruct != "none":
        raise ScenarioError(
            f"{where}stream.reconstruct: {stream.reconstruct!r} reconstructs LDP reports; "
            'mechanism "raw" reports are not privatised (use reconstruct = "none")',
            limit='"none" with mechanism "raw"',
        )


def _check_well_formed(name: str, where: str) -> None:
    """A mechanism name's form (``protocol.mechanisms.check_mechanism_name``), refused as
    ``stream.mechanism``."""
    try:
        check_mechanism_name(name)
    except ParameterError as error:
        raise ScenarioError(
            f"{where}stream.mechanism: {error.reason}", limit=_mechanism_name_rule()
        ) from None


def _check_mechanism_name(name: str, where: str) -> None:
    """The mechanism's name alone, for a scenario whose ``stream.eps`` or ``stream.w`` was
    refused (``_check_mechanism`` cannot check it at its budget): well formed, and a bare
    name a built-in or an installed entry point (what ``_check_plugin`` refuses of a name,
    worded the same; nothing is imported)."""
    from ldpfleet.protocol.mechanisms import mechanism_factory

    if name == RAW:
        return
    _check_well_formed(name, where)
    if name in BUILTIN_MECHANISMS or ":" in name or is_entry_point(name):
        return
    try:
        mechanism_factory(name)
    except ParameterError as error:
        raise ScenarioError(
            f"{where}stream.mechanism: {error.reason}{_near_miss(name)}",
            limit=_mechanism_name_rule(),
        ) from None


def _check_plugin(name: str, eps: float, w: int, where: str, *, resolve: bool = True) -> None:
    """The mechanism resolves, takes the per-report budget eps0 = eps / w and passes the
    contract's sample check (``protocol.mechanism_contract``). A constructor refusing eps0
    is told where that number comes from (the user wrote eps, not eps0), and so is a
    mechanism failing its sample check there (``eps = 1e-20``: the estimate overflowed).
    ``resolve=False``: a plugin (an import path or an installed entry point) stops after
    its name and budget (a scenario refused already imports no plugin: no user code runs
    for it, as when the first refusal stopped the load); an unknown bare name, which
    imports nothing, is still refused."""
    import warnings

    from ldpfleet.protocol.mechanisms import UnresolvedMechanism

    eps0 = eps / w
    _check_well_formed(name, where)
    if eps0 < EPS_MIN:  # every mechanism refuses it: name the key the user wrote
        raise ScenarioError(
            f"{where}stream.eps: each report spends stream.eps / stream.w = {eps:g} / {w} = "
            f"{eps0:g}, below {EPS_MIN:g}, the smallest budget per report the mechanisms "
            f"compute without degenerating (p == q or an overflowing estimate); need "
            f"stream.eps >= {EPS_MIN * w:g} at w = {w}, got {eps!r}",
            limit=f">= {EPS_MIN * w:g} (stream.eps / stream.w >= {EPS_MIN:g})",
        )
    if not resolve and name not in BUILTIN_MECHANISMS and (":" in name or is_entry_point(name)):
        return
    try:
        with warnings.catch_warnings():  # the check's verdict says it: no numpy warnings
            warnings.simplefilter("ignore", RuntimeWarning)
            mechanism_in_time(name, eps0)  # a plugin that blocks: refused past a limit
    except ParameterError as error:
        reason = error.reason
        names = _mechanism_name_rule()
        if "is not a built-in" in reason:  # a name, not a budget problem: a near miss?
            message = f"{where}stream.mechanism: {reason}{_near_miss(name)}"
            raise ScenarioError(message, limit=names) from None
        if isinstance(error, UnresolvedMechanism):  # no class yet: no budget involved
            raise ScenarioError(f"{where}stream.mechanism: {reason}", limit=names) from None
        if f"refused eps = {eps0:g}" in reason:
            reason += f" (the budget of one report, stream.eps / stream.w = {eps:g} / {w})"
        else:
            reason += (
                f" (checked at the budget of one report, stream.eps / stream.w = {eps:g} / {w}"
                f" = {eps0:g})"
            )
        limit = f"a mechanism that accepts eps0 = stream.eps / stream.w = {eps0:g}"
        raise ScenarioError(f"{where}stream.mechanism: {reason}", limit=limit) from None


def unclaimable_period_warnings(spec: Scenario) -> list[str]:
    """The sentence for results.json ``warnings`` when a synthetic source's ``period`` (or
    every period of its ``[min, max]`` range) is one CPR can never claim: below 3
    (``detect_period``'s smallest) or above steps / ``cpr.min_cycles``. Every device then
    scores as wrong (helper P's user trial, 2026-12-06: ``period = 2``, or 101 in 300
    steps, ran and reported ``period_accuracy`` 0 without a word). A warning, not a
    refusal as for a CSV source's ``true_period``: ``bench fleet --steps 10 --reconstruct
    cpr`` builds such a run on purpose. Empty otherwise."""
    if spec.stream.reconstruct != "cpr" or not isinstance(spec.source, SyntheticSource):
        return []
    longest = spec.stream.steps // spec.cpr.min_cycles
    period = spec.source.period
    low, high = (period, period) if isinstance(period, int) else tuple(period)
    if high >= 3 and low <= longest:
        return []
    return [
        f"source.period = {period}: CPR claims periods in [3, {longest}] here (3 is "
        f"detect_period's smallest; at most stream.steps / cpr.min_cycles = {longest}), so "
        "every device scores as wrong (period_correct); choose a period in that range, run "
        "more steps or lower cpr.min_cycles"
    ]


def secure_sum_risk_warnings(spec: Scenario) -> list[str]:
    """The sentence for results.json ``warnings`` when the ``[secure_sum]`` stage's SecAgg+
    session may abort before unmasking in more than ``graphs.ABORT_RISK_LIMIT`` (1e-3) of
    runs: its ``round(dropout x devices)`` leaving devices sit at random positions of the
    graph, and a device left with fewer than t live share holders, or (leaving before
    their masked input) a survivors' graph in parts, stops the session
    (``graphs.session_abort_bound``). It names the keys and what to change: the smallest
    ``neighbors`` that keeps it below (``graphs.safer_degree``), the largest ``dropout``
    that does (``graphs.safer_dropping``), or ``graph = "full"`` when that graph takes the
    dropout. A warning, not a refusal: an abort reveals nothing, and a run may want one.
    (Helper A, 2026-12-06: ``neighbors = 3`` on 100 devices with 10 % leaving, a bound of
    44 %, loaded and ran without a word.) Empty otherwise."""
    section = spec.secure_sum
    if section is None or section.graph == "full":
        return []  # the full graph aborts only below t survivors, refused on load
    devices = spec.fleet.devices
    degree = graphs.default_degree(devices) if section.neighbors is None else section.neighbors
    threshold = section.threshold or graphs.default_threshold(degree + 1)
    dropping = round(section.dropout * devices)
    before = graphs.leaves_before_masked(section.dropout_stage)
    limit = graphs.ABORT_RISK_LIMIT
    bound = graphs.session_abort_bound(devices, degree, threshold, dropping, before_masked=before)
    if bound <= limit:
        return []
    changes = []
    larger = graphs.safer_degree(devices, degree, dropping, limit, before_masked=before)
    if larger is not None:
        t = graphs.default_threshold(larger + 1)
        keep = "" if section.threshold is None else f" with threshold = {t}"
        changes.append(f"raise secure_sum.neighbors to {larger}{keep}")
    fewer = graphs.safer_dropping(devices, degree, threshold, dropping, limit, before_masked=before)
    changes.append(
        f"lower secure_sum.dropout to {fewer / devices:.4g} ({fewer} leaving)"
        if fewer
        else "set secure_sum.dropout = 0"
    )
    if devices - dropping >= graphs.default_threshold(devices):
        plain = "" if section.threshold is None else " without a threshold"
        changes.append(f'use graph = "full"{plain} (every pair: O(n^2) work)')
    split = before and graphs.split_probability_bound(devices, degree, dropping) > 0.0
    why = "a device left with fewer than t live share holders" + (
        ", or the survivors' graph split in parts" if split else ""
    )
    share = (
        "such sessions may all abort before unmasking"
        if bound >= 1.0
        else f"up to {bound:.2%} of such sessions abort before unmasking (over {limit:.1%})"
    )
    default = " (the default)" if section.neighbors is None else ""
    return [
        f"secure_sum: {dropping} of {devices} devices leaving {section.dropout_stage} "
        f"(dropout = {section.dropout:g}) with neighbors = {degree}{default} and t = "
        f"{threshold}: {share}: {why}, which reveals no sum but gives none; "
        f"{', or '.join(changes)}"
    ]


def _check_cpr(spec: Scenario, where: str) -> None:
    """``[cpr]`` only with ``reconstruct = "cpr"`` (beside a refused key too), a period
    range the stream holds at least ``min_cycles`` cycles of, and a ``source.true_period``
    CPR can claim."""
    cpr = spec.cpr
    # set keys are what a user wrote (``differs_from``: not refused ones)
    if differs_from(cpr, CprSection()) and spec.stream.reconstruct != "cpr":
        raise ScenarioError(
            f'{where}cpr: [cpr] configures reconstruct = "cpr" only; stream.reconstruct is '
            f"{spec.stream.reconstruct!r}, so it would be ignored (remove [cpr] or set "
            'reconstruct = "cpr")',
            limit='stream.reconstruct = "cpr"',
        )
    longest = spec.stream.steps // cpr.min_cycles
    if cpr.min_period > max(2, longest):  # 2: the default, always allowed
        raise ScenarioError(
            f"{where}cpr.min_period: need min_period <= steps / min_cycles = {longest} "
            f"(CPR claims a period only with at least {cpr.min_cycles} cycles), "
            f"got {cpr.min_period}",
            limit=f"<= steps / min_cycles = {longest}",
        )
    if cpr.max_period is not None and not cpr.min_period <= cpr.max_period <= longest:
        raise ScenarioError(
            f"{where}cpr.max_period: need min_period <= max_period <= steps / min_cycles = "
            f"{longest} (at least {cpr.min_cycles} cycles), got {cpr.max_period}",
            limit=f"min_period <= max_period <= steps / min_cycles = {longest}",
        )
    true_period = getattr(spec.source, "true_period", None)
    if spec.stream.reconstruct == "cpr" and true_period is not None and true_period > longest:
        raise ScenarioError(
            f"{where}source.true_period: CPR claims periods of at most steps / "
            f"cpr.min_cycles = {longest} ({cpr.min_cycles} whole cycles in "
            f"{spec.stream.steps} steps), so every device would score as wrong; run more "
            f"steps or lower cpr.min_cycles (>= 2), got {true_period}",
            limit=f"<= steps / cpr.min_cycles = {longest}",
        )


def _check_secure_sum(loaded: LoadedScenario, where: str) -> None:
    """``[secure_sum]``: a fleet the session takes, a vector within the stream, a clip and
    scale the fixed point holds, and a graph, threshold and dropout the session can run."""
    spec = loaded.spec
    if not 2 <= spec.fleet.devices <= MAX_PARTICIPANTS:
        raise ScenarioError(
            f"{where}fleet.devices: [secure_sum] needs 2..{MAX_PARTICIPANTS} devices, "
            f"got {spec.fleet.devices}",
            limit=f"2 .. {MAX_PARTICIPANTS}",
        )
    if spec.secure_sum.dim > spec.stream.steps:
        raise ScenarioError(
            f"{where}secure_sum.dim: {spec.secure_sum.dim} exceeds stream.steps "
            f"({spec.stream.steps}); the vector is the first dim readings",
            limit=f"<= stream.steps ({spec.stream.steps})",
        )
    clip = spec.secure_sum.clip
    # [-1e308, 1e308]: finite bounds, an infinite width (it read "secure_sum.scale: ... got inf")
    if (
        clip is not None
        and all(math.isfinite(v) for v in clip)
        and clip[0] < clip[1]
        and not math.isfinite(clip[1] - clip[0])
    ):
        raise ScenarioError(
            f"{where}secure_sum.clip: clip_high - clip_low must be finite, got "
            f"[{clip[0]!r}, {clip[1]!r}] (width {clip[1] - clip[0]!r})",
            limit=BOUNDS_RULE,
        )
    try:
        loaded.fixed_point().check_capacity(spec.fleet.devices)
        _check_secagg_session(loaded, spec.fleet.devices)
    except ParameterError as error:
        if error.field in CLIP_FIELDS:  # "secure_sum.clip: clip_high must exceed ..."
            raise ScenarioError(
                f"{where}secure_sum.clip: {error.field} {error.reason}", limit=BOUNDS_RULE
            ) from None
        field = SECAGG_FIELDS.get(error.field, error.field)
        limit = _schema_rule(SecureSumSection, field) or "a session the stage can run"
        raise ScenarioError(f"{where}secure_sum.{field}: {error.reason}", limit=limit) from None
