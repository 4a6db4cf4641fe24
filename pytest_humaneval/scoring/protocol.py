"""Published HumanEval protocols: the presets, what a run's sampling matches, and the pitfalls that make a pass@k
incomparable with a published one. Pure: no pytest, no I/O.

A HumanEval number means something only next to the protocol that produced it. Codex (Chen et al. 2021) and
StarCoder (Li et al. 2023) sample n = 200 completions per problem with nucleus sampling (top_p 0.95), pass@1 at
temperature 0.2 and pass@k for k > 1 at 0.8; the EvalPlus leaderboard decodes greedily (one sample, temperature 0).
docs/live-models.md, "Comparable numbers", has the sentences each preset is taken from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PRESETS", "Preset", "describe", "line", "matches", "pitfalls"]


@dataclass(frozen=True)
class Preset:
    name: str
    n: int
    temperature: float
    top_p: float | None  # None: not sent (greedy decoding has no nucleus)
    k: tuple[int, ...]
    source: str


_CODEX = "Codex, Chen et al. 2021, arXiv 2107.03374"
_STARCODER = "StarCoder, Li et al. 2023, arXiv 2305.06161"
PRESETS: dict[str, Preset] = {preset.name: preset for preset in (
    Preset("greedy", 1, 0.0, None, (1,), "EvalPlus leaderboard (greedy decoding)"),
    Preset("codex-pass1", 200, 0.2, 0.95, (1,), _CODEX),
    Preset("codex-passk", 200, 0.8, 0.95, (10, 100), _CODEX),
    Preset("starcoder-pass1", 200, 0.2, 0.95, (1,), _STARCODER),
    Preset("starcoder-passk", 200, 0.8, 0.95, (10, 100), _STARCODER),
)}

# The pitfalls: pass@1 is never sampled this hot, pass@k > 1 never this cold, and pass@1 at a temperature above 0
# is averaged over far more samples than this, by any of the sources.
PASS1_TOO_HOT = 0.5
PASSK_TOO_COLD = 0.2
PASS1_MIN_SAMPLES = 10


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, abs_tol=1e-9)


def matches(n: int | None, temperature: float | None, top_p: float | None, k: Iterable[int]) -> list[str]:
    """The presets whose n, temperature, top_p and k are exactly these."""
    k = tuple(sorted(set(k)))
    return [p.name for p in PRESETS.values()
            if n == p.n and _same(temperature, p.temperature) and _same(top_p, p.top_p) and k == p.k]


def pitfalls(n: int | None, temperature: float | None, k: Iterable[int]) -> list[str]:
    """One line per pass@k that no source computes under these settings, naming the preset that would make it
    comparable. ``n``: the fewest samples of a problem; a temperature of None (not known) has no pitfall."""
    if temperature is None:
        return []
    k = sorted(set(k))
    out = []
    if 1 in k and temperature >= PASS1_TOO_HOT:
        out.append(f"pass@1 at temperature {temperature:g} is not comparable with a published pass@1 (Codex and "
                   "StarCoder sample it at 0.2, the EvalPlus leaderboard decodes greedily): params.protocol "
                   "codex-pass1 (or greedy) makes it comparable")
    high = [f"pass@{value}" for value in k if value > 1]
    if high and temperature <= PASSK_TOO_COLD:
        out.append(f"{', '.join(high)} at temperature {temperature:g} {'is' if len(high) == 1 else 'are'} not "
                   "comparable with a published pass@k for k > 1 (Codex and StarCoder sample it at 0.8): "
                   "params.protocol codex-passk makes it comparable")
    if 1 in k and temperature > 0 and n is not None and n < PASS1_MIN_SAMPLES:
        out.append(f"pass@1 from {n} sample{'s' if n != 1 else ''} per problem at temperature {temperature:g} is "
                   "not comparable with a published pass@1 (Codex and StarCoder average 200 samples at 0.2): "
                   "params.protocol codex-pass1 (or greedy: one sample at temperature 0) makes it comparable")
    return out


def describe(mode: str, name: str | None, temperature: float | None, top_p: float | None, k: Iterable[int],
             samples_per_problem: Iterable[int]) -> dict[str, Any] | None:
    """The run's protocol as the report records it (``run.protocol``), or None for a mock run (no model).

    ``temperature`` None: not known (a samples file that was not labelled). ``k``: the configured k; only those
    every problem has samples for are reported, and so described."""
    if mode == "mock":
        return None
    sizes = sorted(set(samples_per_problem))
    fewest = sizes[0] if sizes else None
    reported = [value for value in sorted(set(k)) if fewest is None or value <= fewest]
    n = sizes[0] if len(sizes) == 1 else None
    known = temperature is not None
    return {
        "name": name,
        "source": PRESETS[name].source if name else None,
        "sampling": "generated" if mode == "runtime" else "declared" if known else "unknown",
        "n": n,
        "temperature": temperature,
        "top_p": top_p if known else None,
        "k": reported,
        "matches": matches(n, temperature, top_p, reported) if known else [],
        "warnings": pitfalls(fewest, temperature, reported),
    }


def line(protocol: Mapping[str, Any]) -> str:
    """The protocol in one line, as the terminal, Markdown, HTML and JUnit show it."""
    n = "n varies" if protocol.get("n") is None else f"n {protocol['n']}"
    k = f"k {list(protocol.get('k') or [])}"
    if protocol.get("temperature") is None:
        return (f"{n}, temperature unknown, {k}: a samples file says nothing of how it was sampled (label it "
                "with params.protocol or params.temperature)")
    top_p = "unset" if protocol.get("top_p") is None else f"{protocol['top_p']:g}"
    settings = f"{n}, temperature {protocol['temperature']:g}, top_p {top_p}, {k}"
    declared = protocol.get("sampling") == "declared"
    if protocol.get("name"):
        note = "; declared for the samples file" if declared else ""
        return f"{protocol['name']} ({protocol.get('source')}{note}): {settings}"
    found = protocol.get("matches") or []
    verdict = f"matches {', '.join(found)}" if found else "matches no published protocol"
    return f"{settings}{' (declared for the samples file)' if declared else ''}: {verdict}"
