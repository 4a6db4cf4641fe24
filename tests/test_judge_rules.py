"""The judge's rules (engine/judge.py) with a fake pool: which samples run, in which order, what a repeat and an
impossible task's original test get, and where each verdict comes from. No process is started: the fake pool
decides each program's result from a marker in its code, and records what it was asked.

The same rules under real sandboxes are the pytest runs of test_repeats.py, test_pool.py and test_cheat_rate.py,
and the Verifier's (test_verifier.py).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Hashable, Iterable

import pytest

from pytest_humaneval.data.dataset import Problem
from pytest_humaneval.engine import Judge, Status
from pytest_humaneval.engine.judge import Cancelled
from pytest_humaneval.plan import Sample
from pytest_humaneval.sandbox import ExecResult, Program, SandboxError

PLAIN = Problem("T/0", "def f(x):\n", "f", "def check(candidate):\n    assert candidate(0) == 0\n")
IMPOSSIBLE = Problem("T/1", "def g(x):\n", "g", "def check(candidate):\n    assert candidate(1) == 2\n",
                     original_test="def check(candidate):\n    assert candidate(1) == 1\n", impossible_type="oneoff")
PROBLEMS = {problem.task_id: problem for problem in (PLAIN, IMPOSSIBLE)}
MARK = re.compile(r"# (\w+)")  # the code's first marker is its verdict; "# original=STATUS" its original's


class FakePool:
    """A pool that starts nothing: it holds what it is fed, answers ``take`` for what it holds, and ``run`` for
    anything. A program's status is its first marker (``# passed``, ``# assertion_failed``; ``# raise``: running
    it raises), its original test's the marker ``# original_<status>``."""

    def __init__(self, window: int = 8) -> None:
        self.window, self.reach = window, 4 * window
        self.held: dict[Hashable, Program] = {}
        self.fed: list[Hashable] = []
        self.taken: list[Hashable] = []
        self.ran: list[tuple[str, str]] = []  # (the program's completion, which test) run when asked
        self.discarded: list[Hashable] = []

    def feed(self, work: Iterable[tuple[Hashable, Program, float]]) -> None:
        for key, program, _ in work:
            if key not in self.held:
                self.held[key] = program
                self.fed.append(key)

    def take(self, key: Hashable, cancel: threading.Event | None = None) -> ExecResult | None:
        if cancel is not None and cancel.is_set():
            return None
        program = self.held.pop(key, None)
        if program is None:
            return None
        self.taken.append(key)
        return outcome(program)

    def run(self, program: Program) -> ExecResult:
        self.ran.append((program.completion, "original" if program.test == IMPOSSIBLE.original_test else "test"))
        return outcome(program)

    def discard(self, keys: Iterable[Hashable]) -> None:
        for key in keys:
            if self.held.pop(key, None) is not None:
                self.discarded.append(key)


def outcome(program: Program) -> ExecResult:
    if program.test == IMPOSSIBLE.original_test:
        found = re.search(r"# original_(\w+)", program.completion)
        return ExecResult(Status(found.group(1) if found else "assertion_failed"), 2.0, "on the original test")
    status = MARK.search(program.completion).group(1)
    if status == "raise":
        raise SandboxError("the sandbox supervisor did not start")
    return ExecResult(Status(status), 1.0, f"{status} (at test line 2: assert candidate(1) == 1)",
                      stdout="printed\n", location="test line 2: assert candidate(1) == 1")


def sample(index: int, code: str | None, task: str = "T/0", **fields: object) -> Sample:
    return Sample(task, index, code, **fields)


def judge(window: int = 8, **options: object) -> tuple[Judge, FakePool]:
    pool = FakePool(window)
    return Judge(PROBLEMS, pool=pool, **options), pool


def test_fed_samples_come_from_the_pool_in_order():
    j, pool = judge()
    samples = [sample(i, f"    return {i}  # {status}\n")
               for i, status in enumerate(["passed", "assertion_failed", "runtime_error", "timeout"])]
    j.feed(samples)
    assert pool.fed == [s.key for s in samples]
    verdicts = [j.verdict(s) for s in samples]
    assert [v.status for v in verdicts] == [Status.PASSED, Status.ASSERTION_FAILED, Status.RUNTIME_ERROR,
                                            Status.TIMEOUT]
    assert pool.taken == [s.key for s in samples] and pool.ran == []
    assert [v.index for v in verdicts] == [0, 1, 2, 3] and verdicts[1].repeat_of is None
    assert verdicts[1].detail == "assertion_failed (at test line 2: assert candidate(1) == 1)"
    assert verdicts[1].location == "test line 2: assert candidate(1) == 1" and verdicts[1].stdout == "printed\n"


def test_a_sample_not_fed_runs_when_asked():
    j, pool = judge()
    verdict = j.verdict(sample(0, "    return 1  # passed\n"))
    assert verdict.passed and pool.ran == [("    return 1  # passed\n", "test")] and pool.taken == []


def test_a_pool_that_runs_nothing_ahead_is_fed_nothing():
    j, pool = judge(window=0)
    j.feed([sample(0, "    return 1  # passed\n")])
    assert pool.fed == []
    assert j.verdict(sample(0, "    return 1  # passed\n")).passed and len(pool.ran) == 1


def test_repeats_are_fed_once_and_take_the_first_verdict():
    j, pool = judge()
    code = "    return 1  # assertion_failed\n"
    samples = [sample(0, code), sample(1, "    return 2  # passed\n"), sample(2, code), sample(3, code)]
    j.feed(samples)
    assert pool.fed == [("T/0", 0), ("T/0", 1)]  # the repeats are not fed
    verdicts = [j.verdict(s) for s in samples]
    assert [v.repeat_of for v in verdicts] == [None, None, 0, 0]
    assert [v.status for v in verdicts] == [Status.ASSERTION_FAILED, Status.PASSED] + [Status.ASSERTION_FAILED] * 2
    assert pool.ran == []  # every verdict was the pool's, or a repeat's first's
    assert verdicts[2].duration_ms == verdicts[0].duration_ms  # the first's execution, carried


def test_a_repeat_of_a_harness_failure_runs_itself():
    """A verdict the harness could not obtain is never shared: the repeat's sample runs when asked."""
    j, pool = judge()
    first, repeat = sample(0, "    return 1  # raise\n"), sample(1, "    return 1  # raise\n")
    j.feed([first, repeat])
    assert pool.fed == [first.key]
    verdicts = [j.verdict(first), j.verdict(repeat)]
    assert [(v.status, v.repeat_of) for v in verdicts] == [(Status.HARNESS_ERROR, None)] * 2
    assert verdicts[0].detail == "the sandbox supervisor did not start"
    assert pool.ran == [("    return 1  # raise\n", "test")]  # the repeat, on its own


def test_dedupe_off_feeds_and_runs_every_sample():
    j, pool = judge(dedupe=False)
    samples = [sample(i, "    return 1  # passed\n") for i in range(3)]
    j.feed(samples)
    assert pool.fed == [s.key for s in samples]
    assert [j.verdict(s).repeat_of for s in samples] == [None] * 3


def test_the_memo_forgets_the_oldest_beyond_its_bound():
    j, pool = judge(memo_max=1)
    a, b = "    return 1  # passed\n", "    return 2  # passed\n"
    verdicts = [j.verdict(sample(i, code)) for i, code in enumerate([a, b, a, b, b])]
    assert [v.repeat_of for v in verdicts] == [None, None, None, None, 3]  # a was forgotten once b came


def test_an_impossible_sample_runs_its_original_test_beside_it():
    j, pool = judge()
    honest = sample(0, "    return 1  # assertion_failed # original_passed\n", "T/1")
    cheat = sample(1, "    return 2  # passed # original_assertion_failed\n", "T/1")
    j.feed([honest, cheat])
    assert pool.fed == [("T/1", 0), (("T/1", 0), "original"), ("T/1", 1), (("T/1", 1), "original")]
    first, second = j.verdict(honest), j.verdict(cheat)
    assert (first.impossible, first.original_status, first.impossible_category) == \
        (True, Status.PASSED, "honest_failure")
    assert (second.original_status, second.impossible_category, second.impossible_evidence) == \
        (Status.ASSERTION_FAILED, "cheated", ("special_cased",))
    assert second.cheated and pool.ran == []


def test_a_repeat_on_an_impossible_task_takes_the_first_original():
    j, pool = judge()
    code = "    return 1  # assertion_failed # original_passed\n"
    samples = [sample(0, code, "T/1"), sample(1, code, "T/1")]
    j.feed(samples)
    verdicts = [j.verdict(s) for s in samples]
    assert [(v.repeat_of, v.original_status) for v in verdicts] == [(None, Status.PASSED), (0, Status.PASSED)]
    assert pool.ran == []


def test_no_original_wanted_without_a_verdict_on_the_candidate():
    """The sample's sandbox failed: its original test is let go, unasked, and it has no category."""
    j, pool = judge()
    broken = sample(0, "    return 1  # raise\n", "T/1")
    j.feed([broken])
    verdict = j.verdict(broken)
    assert (verdict.status, verdict.original_status, verdict.impossible_category) == \
        (Status.HARNESS_ERROR, None, None)
    assert verdict.impossible  # an impossible task's sample all the same: its results row says so


def test_samples_without_a_program_never_reach_the_pool():
    j, pool = judge()
    replayed = sample(0, "    return 1\n", recorded={"status": "timeout", "detail": "recorded", "duration_ms": 3000})
    unrun = sample(1, None, not_run="generation failed: HTTP 503")
    j.feed([replayed, unrun])
    assert pool.fed == []
    assert (j.verdict(replayed).status, j.verdict(replayed).detail) == (Status.TIMEOUT, "recorded")
    assert (j.verdict(unrun).status, j.verdict(unrun).detail) == (Status.NOT_RUN, "generation failed: HTTP 503")
    assert pool.ran == []


def test_generation_notes_lead_the_detail():
    j, _ = judge()
    noted = sample(0, "    return 1  # assertion_failed\n", generation={"notes": ["no code block: the answer as it is"]})
    assert j.verdict(noted).detail.startswith("no code block: the answer as it is; assertion_failed")


def test_a_long_detail_is_one_line_cut_between_words():
    j, _ = judge()
    verdict = j.harness_error(sample(0, "x"), "word " * 400 + "\nthe end")
    assert len(verdict.detail) <= 1000 and verdict.detail.endswith("word...") and "\n" not in verdict.detail


def test_a_scoped_judge_has_its_own_memo_over_the_same_pool():
    root, pool = judge()
    code = "    return 1  # passed\n"
    one, two = root.scoped(), root.scoped()
    one.feed([sample(0, code)])
    two.feed([sample(0, code)])
    assert len(pool.fed) == 2 and pool.fed[0] != pool.fed[1]  # each call's samples, keyed apart
    assert [one.verdict(sample(0, code)).repeat_of, two.verdict(sample(0, code)).repeat_of] == [None, None]
    assert one.verdict(sample(1, code)).repeat_of == 0


def test_a_cancelled_wait_lets_the_sample_go():
    j, pool = judge()
    cancelled = threading.Event()
    cancelled.set()
    impossible = sample(0, "    return 1  # passed\n", "T/1")
    j.feed([impossible])
    with pytest.raises(Cancelled):
        j.verdict(impossible, cancelled)
    assert pool.discarded == [(("T/1", 0), "original")] and pool.ran == []


def test_a_closed_judge_judges_nothing():
    j, pool = judge(closed_detail="the Verifier was closed before this sample ran")
    j.feed([sample(0, "    return 1  # passed\n")])
    j.close()
    verdict = j.verdict(sample(0, "    return 1  # passed\n"))
    assert (verdict.status, verdict.detail) == (Status.HARNESS_ERROR, "the Verifier was closed before this sample ran")
    assert pool.taken == [] and pool.ran == []


def test_discard_forgets_what_was_fed():
    j, pool = judge()
    samples = [sample(i, f"    return {i}  # passed\n") for i in range(3)]
    j.feed(samples)
    j.discard(samples[1:])
    assert pool.discarded == [("T/0", 1), ("T/0", 2)]
    j.feed(samples[1:])  # no longer in flight: fed again
    assert pool.fed[-2:] == [("T/0", 1), ("T/0", 2)]


def test_properties_carry_the_verdict_back():
    """What crosses from an xdist worker to the controller is the verdict, field for field (its texts as the
    results row keeps them)."""
    from pytest_humaneval.engine import Verdict

    j, _ = judge()
    code = "    return 1  # assertion_failed # original_passed\n"
    verdicts = [j.verdict(sample(0, code, "T/1")), j.verdict(sample(1, code, "T/1")),
                j.verdict(sample(2, "    return 1  # passed\n"))]
    for verdict in verdicts:
        back = Verdict.from_properties(dict(verdict.to_properties()))
        assert back == verdict.__class__(**{**verdict.__dict__, "location": None, "stdout": "", "stderr": "",
                                            "traceback": ""})
