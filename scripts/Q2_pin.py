"""Pin what the scenario loader reports across helper Q2's change (the composite checks
``_check_cadr``/``_check_bulk``/``_check_faults``/``_check_finite`` removed; a refusal
no longer hiding a CADR file's sections check): for every scenario file of the
repository, every built-in, every recorded text and seeded mutations of them, the loaded
spec's data (``K3_pin.outcome``) or the first refusal, plus every refusal in ``errors``
(type, message, field, limit, value) and ``omitted``.

    python scripts/Q2_pin.py dump OUT.json CORPUS.jsonl [CORPUS.jsonl ...] [--fuzz N]
    python scripts/Q2_pin.py compare BEFORE.json AFTER.json

A corpus is JSON lines ``{"text": ..., "path": ...}`` (``scripts/K3_record_plugin.py``
records one from a test run; ``scripts/K3_pin_corpus.jsonl`` is one). ``--fuzz N`` adds N
mutated variants (seed 0) of the corpus texts and the shipped scenario files: values
replaced by bad ones, lines dropped, keys misspelled, sections added (a stray ``[fleet]``,
a ``[cpr]`` with a refused key, ``[graph]``/``[cadr]``, ...).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import K3_pin

BAD_VALUES = ["-1", "0", '"x"', "inf", "nan", "[1.0, 0.0]", "true", '"bulk"', "3", "1e9", "2.5"]
SECTIONS = [
    "[fleet]\ndevices = 3",
    '[cpr]\nmin_cycles = "x"',
    "[cpr]\nmin_cycles = 1",
    "[cpr]\nmin_period = 4",
    '[graph]\nsource = "erdos_renyi:n=20,p=0.3,seed=1"',
    "[graph]\nsourze = 1",
    "[cadr]\neps = 2.0",
    "[cadr]\neps = -2.0",
    "[faults]\ncrash_fraction = 2.0",
    "[faults]\nnever_return = 5",
    '[secure_sum]\ndim = "x"',
    "[secure_sum]\ndim = 4",
    "[gcdp]\nwindow = 0",
    "[stream]\nsteps = 10",
    "[strem]\nsteps = 10",
    "[source]\nkind = 3",
]


def _mutate(text: str, rng: random.Random) -> str:
    """One mutation of ``text``: a value, a line, a key or a section."""
    lines = text.splitlines()
    keyed = [i for i, line in enumerate(lines) if "=" in line and not line.lstrip().startswith("#")]
    choice = rng.randrange(4)
    if choice == 0 and keyed:
        i = rng.choice(keyed)
        lines[i] = f"{lines[i].split('=', 1)[0].rstrip()} = {rng.choice(BAD_VALUES)}"
    elif choice == 1 and lines:
        del lines[rng.randrange(len(lines))]
    elif choice == 2 and keyed:
        i = rng.choice(keyed)
        key, value = lines[i].split("=", 1)
        lines[i] = f"{key.rstrip()}z ={value}"
    else:
        lines.append(rng.choice(SECTIONS))
    return "\n".join(lines) + "\n"


def fuzzed(items: list[dict], count: int, seed: int = 0) -> list[dict]:
    """``count`` variants of the corpus ``items``, each 1 to 3 mutations of one of them."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        item = rng.choice(items)
        text = item["text"]
        for _ in range(rng.randint(1, 3)):
            text = _mutate(text, rng)
        out.append({"text": text, "path": item["path"]})
    return out


def full_outcome(call) -> dict:
    """``K3_pin.outcome`` with, for a refusal, every error it carries and ``omitted``."""
    from ldpfleet.scenarios.schema import ScenarioError

    result = K3_pin.outcome(call)
    if "refused" in result:
        try:
            call()
        except ScenarioError as error:
            result["errors"] = [
                [type(e).__name__, str(e), e.field, e.limit, repr(e.value)] for e in error.errors
            ]
            result["omitted"] = error.omitted
    return result


def corpus_items(paths: list[Path]) -> list[dict]:
    """The corpus lines of ``paths`` (each text and path once, in order) and the shipped
    scenario files' texts (for the fuzzing)."""
    seen, items = set(), []
    for path in paths:
        for line in path.read_text().splitlines():
            item = json.loads(line)
            key = (item["text"], item["path"])
            if key not in seen:
                seen.add(key)
                items.append({"text": item["text"], "path": item["path"]})
    for path in K3_pin.scenario_files():
        items.append({"text": path.read_text(encoding="utf-8"), "path": str(path)})
    return items


def dump(out: Path, corpora: list[Path], fuzz: int) -> None:
    """Write the pin of the files, built-ins, corpus texts and ``fuzz`` variants."""
    from ldpfleet.scenarios.builtin import builtin_scenarios
    from ldpfleet.scenarios.schema import load_scenario, parse_scenario

    pin: dict[str, dict] = {}
    for path in K3_pin.scenario_files():
        pin[f"file {path.relative_to(K3_pin.ROOT)}"] = full_outcome(lambda p=path: load_scenario(p))
    for builtin in builtin_scenarios():
        pin[f"builtin {builtin.name}"] = full_outcome(lambda n=builtin.name: load_scenario(n))
    items = corpus_items(corpora)
    for kind, group in (("corpus", items), ("fuzz", fuzzed(items, fuzz))):
        for number, item in enumerate(group):
            path = Path(item["path"]) if item["path"] else None
            pin[f"{kind} {number}"] = full_outcome(
                lambda i=item, p=path: parse_scenario(i["text"], p)
            )
            pin[f"{kind} {number}"]["text"] = item["text"]
    out.write_text(json.dumps(pin, indent=1, sort_keys=True, default=repr))
    refused = sum("refused" in v for v in pin.values())
    several = sum(len(v.get("errors", ())) > 1 for v in pin.values())
    print(f"{len(pin)} pinned ({refused} refusals, {several} with several errors) -> {out}")


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "dump":
        fuzz = int(args[args.index("--fuzz") + 1]) if "--fuzz" in args else 0
        names = [a for i, a in enumerate(args[1:], 1) if a != "--fuzz" and args[i - 1] != "--fuzz"]
        dump(Path(args[0]), [Path(name) for name in names], fuzz)
    elif command == "compare":
        sys.exit(K3_pin.compare(Path(args[0]), Path(args[1])))
    else:
        sys.exit(f"unknown command {command!r}: dump or compare")
