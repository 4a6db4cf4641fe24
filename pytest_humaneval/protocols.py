"""Published HumanEval protocols (and LiveCodeBench's): the presets, what a run's sampling matches, and the pitfalls
that make a pass@k incomparable with a published one. Pure: no pytest, no I/O.

A HumanEval number means something only next to the protocol that produced it. Codex (Chen et al. 2021) and
StarCoder (Li et al. 2023) sample n = 200 completions per problem with nucleus sampling (top_p 0.95), pass@1 at
temperature 0.2 and pass@k for k > 1 at 0.8; the EvalPlus leaderboard decodes greedily (one sample, temperature 0).
Besides the sampling, each source sends HumanEval's prompt in its own way: a preset's ``Setup`` is what its source
sends on the completions API (its stop sequences, the prompt stripped or not), which the client sends too; a preset
used over the chat API, or with stop sequences of the config's, is measured otherwise, and ``describe`` warns.
LiveCodeBench's runner samples 10 programs per problem at temperature 0.2 and top_p 0.95 and reports pass@1 and
pass@5; its prompt is its question (``completions/lcb.py``), its own form over chat, so the ``lcb`` preset warns
only of a system prompt of the config's, or of the completions API (its base-model form, sent without its example).
docs/live-models.md, "Comparable numbers", has the sentences each preset is taken from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

__all__ = ["PRESETS", "Preset", "ProtocolSection", "Setup", "describe", "line", "matches", "pitfalls", "sent_prompt",
           "sent_stop", "setup_warnings"]


@dataclass(frozen=True)
class Setup:
    """What a preset's source sends on the completions API besides the sampling, and what it did over chat."""
    stop: tuple[str, ...]  # its stop sequences, all of them (OpenAI's own API accepts at most 4)
    prompt: str  # HumanEval's prompt as it sends it: "as is", "stripped" or "stripped + newline"
    chat: str | None  # what it sent a chat model, in words; None: it never used a chat API
    # LiveCodeBench's: its prompt is its question (completions/lcb.py), which the harness sends as it does over chat;
    # over completions its base-model form, without the solved example it puts first (``base_gap``, in words).
    question: bool = False
    base_gap: str | None = None


class ProtocolSection(TypedDict):
    """A run's protocol as its report records it (``run.protocol``): ``describe``."""

    name: str | None  # the preset, when the config names one
    source: str | None
    sampling: str  # generated, declared (a labelled samples file) or unknown
    n: int | None
    temperature: float | None
    top_p: float | None
    k: list[int]
    matches: list[str]  # the published protocols the sampling matches
    warnings: list[str]  # what makes the numbers incomparable with a published one


@dataclass(frozen=True)
class Preset:
    name: str
    n: int
    temperature: float
    top_p: float | None  # None: not sent (greedy decoding has no nucleus)
    k: tuple[int, ...]
    source: str
    setup: Setup
    paper: str  # how the warnings name the source


# Codex, section 3.2: "We sample tokens from Codex until we encounter one of the following stop sequences:
# '\nclass', '\ndef', '\n#', '\nif', or '\nprint'"; the prompt as HumanEval gives it (openai/human-eval's README
# passes problems[task_id]["prompt"] to generate_one_completion).
_CODEX_SETUP = Setup(("\nclass", "\ndef", "\n#", "\nif", "\nprint"), "as is", None)
# The BigCode Evaluation Harness, bigcode_eval/tasks/humaneval.py as of StarCoder's paper (May 2023): stop_words
# ["\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif"] and get_prompt returns doc["prompt"].strip(). "\n```"
# (August 2023) and "<file_sep>" (January 2024) were added after the paper.
_STARCODER_SETUP = Setup(("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif"), "stripped", None)
# EvalPlus (evalplus/codegen.py, provider/utility.py, provider/openai.py): the prompt task["prompt"].strip() + "\n";
# a direct completion stops at EOS + extra_eos_for_direct_completion("humaneval"); a chat model gets one user
# message, instruction_prefix + "\n```python\n" + prompt.strip() + "\n```", and no system prompt.
_EVALPLUS_SETUP = Setup(("<|endoftext|>", "<|endofmask|>", "</s>", "\nif __name__", "\ndef main(", "\nprint(",
                         "\ndef ", "\nclass ", "\nimport ", "\nfrom ", "\nassert "), "stripped + newline",
                        "its own instruction as one user message and no system prompt")

# LiveCodeBench (lcb_runner at 28fef95ea8c9f7a547c8329f2cd3d32b92c1fa24): runner/parser.py's --stop default "###",
# which its vLLM runner sends and its OpenAI runner does not ("stop is only used for base models currently");
# prompts/code_generation.py's chat and base-model forms (completions/lcb.py).
_LCB_SETUP = Setup(("###",), "as is", "its system message and its question", question=True,
                   base_gap="prompts a base model with a solved example before the question; this run sends the "
                            "question alone (the example is a contest site's problem, not bundled)")

_CODEX = "Codex, Chen et al. 2021, arXiv 2107.03374"
# pass@100 at 0.8 is Codex's; pass@10 at 0.8 is StarCoder's choice (Codex gives no temperature for pass@10).
_CODEX_K = "Codex, Chen et al. 2021, arXiv 2107.03374; pass@10 at 0.8 as StarCoder, arXiv 2305.06161"
_STARCODER = "StarCoder, Li et al. 2023, arXiv 2305.06161"
# README.md: "We use `n=10` and `temperature=0.2` for generation."; "We compute `pass@1` and `pass@5` metrics for
# model evaluations."; runner/parser.py: --top_p default 0.95.
_LCB = "LiveCodeBench's runner, lcb_runner 28fef95: README, runner/parser.py"
PRESETS: dict[str, Preset] = {preset.name: preset for preset in (
    Preset("greedy", 1, 0.0, None, (1,), "EvalPlus leaderboard (greedy decoding)", _EVALPLUS_SETUP,
           "the EvalPlus leaderboard"),
    Preset("codex-pass1", 200, 0.2, 0.95, (1,), _CODEX, _CODEX_SETUP, "Codex"),
    Preset("codex-passk", 200, 0.8, 0.95, (10, 100), _CODEX_K, _CODEX_SETUP, "Codex"),
    Preset("starcoder-pass1", 200, 0.2, 0.95, (1,), _STARCODER, _STARCODER_SETUP, "StarCoder"),
    Preset("starcoder-passk", 200, 0.8, 0.95, (10, 100), _STARCODER, _STARCODER_SETUP, "StarCoder"),
    Preset("lcb", 10, 0.2, 0.95, (1, 5), _LCB, _LCB_SETUP, "LiveCodeBench"),
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
    comparable. ``n``: the fewest samples of a problem; a temperature of None (not known) has no pitfall, and
    neither has a preset's own n, temperature and k (LiveCodeBench's pass@5 at 0.2 is its own protocol)."""
    if temperature is None:
        return []
    k = sorted(set(k))
    if any(n == p.n and _same(temperature, p.temperature) and tuple(k) == p.k for p in PRESETS.values()):
        return []
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


def sent_prompt(name: str | None, api: str, prompt: str) -> str:
    """HumanEval's prompt as a preset's source sends it on the completions API (as is without a preset)."""
    if name is None or api != "completions":
        return prompt
    form = PRESETS[name].setup.prompt
    return prompt if form == "as is" else prompt.strip() + ("\n" if form == "stripped + newline" else "")


def sent_stop(name: str | None, api: str, stop: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The stop sequences a run sends: the config's; else, on the completions API, its preset's source's."""
    if stop is not None or name is None or api != "completions":
        return stop
    return PRESETS[name].setup.stop


def setup_warnings(name: str | None, api: str, system_prompt: str | None, stop: tuple[str, ...] | None) -> list[str]:
    """One line per way a generated run with a preset is measured otherwise than the preset's source measured: a
    chat API (with the harness's, the config's or no system prompt), stop sequences of the config's. A question
    preset (``lcb``) is its source's own form over chat, where only a system prompt of the config's differs; over
    completions its base-model form lacks the source's example."""
    if name is None:
        return []
    preset = PRESETS[name]
    numbers = ", ".join(f"pass@{value}" for value in preset.k) + (" is" if len(preset.k) == 1 else " are")
    out = []
    if preset.setup.question and api == "chat":  # its own form: only a system prompt of the config's differs
        if system_prompt is not None:
            sent = "no system prompt" if system_prompt == "" else "params.system_prompt"
            out.append(f"params.protocol {name} with params.system_prompt: {preset.paper} sends a chat model its own "
                       f"system message; this run sends {sent}, so its {numbers} not measured as {preset.paper}'s "
                       "(remove params.system_prompt)")
        return out
    if preset.setup.question and preset.setup.base_gap:
        out.append(f"params.protocol {name} over target.api {api}: {preset.paper} {preset.setup.base_gap}, so its "
                   f"{numbers} not measured as {preset.paper}'s (target.api chat sends its chat prompt as "
                   f"{preset.paper} does)")
    if api == "chat":
        system = ("the harness's system prompt" if system_prompt is None else
                  "no system prompt" if system_prompt == "" else "params.system_prompt")
        did = (f"sent a chat model {preset.setup.chat}" if preset.setup.chat else
               "sampled HumanEval's prompt as a plain completion, with no chat template and no system prompt")
        fix = ("its direct completions of base models are what target.api completions sends" if preset.setup.chat
               else "target.api completions sends its prompt and stop sequences")
        out.append(f"params.protocol {name} over target.api chat: {preset.paper} {did}; this run sends the "
                   f"harness's chat message with {system}, so its {numbers} not measured as {preset.paper}'s "
                   f"({fix})")
    elif stop is not None and tuple(stop) != preset.setup.stop:
        out.append(f"params.protocol {name} with params.stop: {preset.paper} stops at "
                   f"{', '.join(repr(s) for s in preset.setup.stop)}; this run stops at "
                   f"{', '.join(repr(s) for s in stop)}, so its {numbers} not measured as {preset.paper}'s "
                   "(remove params.stop to send them all; OpenAI's own API accepts at most 4)")
    return out


def describe(mode: str, name: str | None, temperature: float | None, top_p: float | None, k: Iterable[int],
             samples_per_problem: Iterable[int], *, api: str = "chat", system_prompt: str | None = None,
             stop: tuple[str, ...] | None = None) -> ProtocolSection | None:
    """The run's protocol as the report records it (``run.protocol``), or None for a mock run (no model).

    ``temperature`` None: not known (a samples file that was not labelled). ``k``: the configured k; only those
    every problem has samples for are reported, and so described. ``api``, ``system_prompt``, ``stop``: the
    config's, which a generated run with a preset is warned about (``setup_warnings``)."""
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
        "warnings": pitfalls(fewest, temperature, reported) + (
            setup_warnings(name, api, system_prompt, stop) if mode == "runtime" else []),
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
