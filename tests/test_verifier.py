"""The library's judge, ``Verifier``: the plugin's verdicts without pytest, for scripts and RL trainers.

Real sandboxes throughout (one Verifier per module: a trainer keeps one per process too)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from plus_data import evalplus_row, write_jsonl

from pytest_humaneval import Status, Verdict, Verifier, VerifierError
from pytest_humaneval.data.dataset import load_problems

PROBLEMS = {problem.task_id: problem for problem in load_problems()[1]}
TASK = "HumanEval/0"  # has_close_elements: its test asserts both True and False answers
WRONG = "    return True\n"

# Programs with no solution that try to end the process "successfully" before the asserts: an exit-code verifier
# (SandboxFusion, verl's sandbox_fusion, ImpossibleBench's scorer...) rewards each of them.
EXIT_ATTACKS = {
    "sys.exit(0)": "    import sys\n    sys.exit(0)\n",
    "os._exit(0)": "    import os\n    os._exit(0)\n",
    "raise SystemExit": "    raise SystemExit\n",
    "exit at import": "    return True\nimport os\nos._exit(0)\n",
    "excepthook": ("    return True\nimport sys, os\n"
                   "sys.excepthook = lambda *a: os._exit(0)\n"),
    "atexit": "    return True\nimport atexit, os\natexit.register(lambda: os._exit(0))\n",
    "signal to itself": "    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    "sigterm ignored, then exit": ("    import os, signal\n    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))\n"
                                   "    os.kill(os.getpid(), signal.SIGTERM)\n    return True\n"),
    "thread outlives the call": ("    import threading, os, time\n"
                                 "    threading.Thread(target=lambda: (time.sleep(0.05), os._exit(0)), daemon=True)"
                                 ".start()\n    return True\n"),
    "killed parent": "    import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n    return True\n",
}


@pytest.fixture(scope="module")
def verifier():
    with Verifier("humaneval", timeout_s=3.0) as judge:
        yield judge


def test_import_without_pytest():
    """``import pytest_humaneval`` and its Verifier bring in no pytest module."""
    code = ("import sys, pytest_humaneval\n"
            "pytest_humaneval.Verifier, pytest_humaneval.Verdict, pytest_humaneval.VerifierError\n"
            "import pytest_humaneval.rewards\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'xdist', 'pluggy')))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found.strip() == "[]"


@pytest.mark.slow
def test_canonical_solutions_pass(verifier):
    verdicts = verifier.verify([(task, problem.canonical_solution) for task, problem in PROBLEMS.items()])
    assert [v.task_id for v in verdicts] == list(PROBLEMS)
    assert [v.index for v in verdicts] == list(range(len(PROBLEMS)))
    assert {v.status for v in verdicts} == {Status.PASSED}
    assert all(v.reward == 1.0 and v.passed for v in verdicts)


@pytest.mark.slow
def test_statuses_and_rewards(verifier):
    samples = [
        (TASK, PROBLEMS[TASK].canonical_solution),
        (TASK, WRONG),
        {"task_id": TASK, "completion": "    return 1 / 0\n"},
        {"task_id": TASK, "completion": "    while True:\n        pass\n"},
        {"task_id": TASK, "completion": None},
        {"task_id": TASK, "solution": PROBLEMS[TASK].prompt + PROBLEMS[TASK].canonical_solution},
        {"task_id": TASK, "solution": "def has_close_elements(numbers, threshold):\n    return False\n"},
    ]
    verdicts = verifier.verify(samples)
    assert [(v.status.value, v.reward) for v in verdicts] == [
        ("passed", 1.0), ("assertion_failed", 0.0), ("runtime_error", 0.0), ("timeout", 0.0), ("not_run", None),
        ("passed", 1.0), ("assertion_failed", 0.0)]
    assert "ZeroDivisionError" in verdicts[2].detail
    assert verdicts[0].to_dict()["status"] == "passed" and json.dumps(verdicts[1].to_dict())


@pytest.mark.parametrize("attack", sorted(EXIT_ATTACKS))
def test_exit_attacks_score_nothing(verifier, attack):
    """An early exit, however it is made, is never a pass: the judge's verdict is not the program's exit code."""
    (verdict,) = verifier.verify([(TASK, EXIT_ATTACKS[attack])])
    assert not verdict.passed and verdict.reward != 1.0, verdict
    # the sandbox is intact for the sample after it
    assert verifier.verify([(TASK, PROBLEMS[TASK].canonical_solution)])[0].passed


def test_identical_samples_judged_once(verifier):
    code = PROBLEMS[TASK].canonical_solution
    verdicts = verifier.verify([(TASK, code), (TASK, WRONG), (TASK, code), (TASK, WRONG)])
    assert [v.repeat_of for v in verdicts] == [None, None, 0, 1]
    assert [v.status for v in verdicts] == [Status.PASSED, Status.ASSERTION_FAILED] * 2
    assert verdicts[2].duration_ms == verdicts[0].duration_ms


def test_dedupe_off_runs_each():
    with Verifier("humaneval", dedupe=False, workers=1) as judge:
        verdicts = judge.verify([(TASK, WRONG)] * 3)
    assert [v.repeat_of for v in verdicts] == [None] * 3
    assert len({v.duration_ms for v in verdicts}) >= 2  # three executions (equal times to the microsecond: unlikely)


@pytest.mark.slow
def test_stream_reads_lazily_and_keeps_order(verifier):
    consumed = []

    def samples():
        for index in range(600):
            consumed.append(index)
            yield (TASK, WRONG if index % 3 else PROBLEMS[TASK].canonical_solution)

    stream = verifier.stream(samples())
    first = next(stream)
    assert first.index == 0 and first.passed
    assert len(consumed) <= verifier._pool.reach + 1  # read ahead only as far as the pool may run
    rest = list(stream)
    assert [v.index for v in rest] == list(range(1, 600))
    assert [v.passed for v in rest] == [index % 3 == 0 for index in range(1, 600)]


def test_async_forms(verifier):
    code = PROBLEMS[TASK].canonical_solution

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        tick = asyncio.create_task(ticker())
        verdicts = await verifier.averify([(TASK, code), (TASK, "    import time\n    time.sleep(0.5)\n")])
        streamed = [verdict async for verdict in verifier.astream([(TASK, WRONG), (TASK, code)])]
        tick.cancel()
        return verdicts, streamed, ticks

    verdicts, streamed, ticks = asyncio.run(main())
    assert [v.status for v in verdicts] == [Status.PASSED, Status.ASSERTION_FAILED]
    assert [v.passed for v in streamed] == [False, True]
    assert ticks >= 5  # the event loop ran while the samples were judged


def test_threads_share_one_verifier(verifier):
    code = PROBLEMS[TASK].canonical_solution
    results: dict[int, list[Verdict]] = {}

    def call(thread: int) -> None:
        batch = [(TASK, code if (i + thread) % 2 else WRONG + f"    # {thread}-{i}\n") for i in range(30)]
        results[thread] = verifier.verify(batch)

    threads = [threading.Thread(target=call, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(results) == [0, 1, 2, 3]
    for thread, verdicts in results.items():
        assert [v.index for v in verdicts] == list(range(30))
        assert [v.passed for v in verdicts] == [bool((i + thread) % 2) for i in range(30)]


def test_harness_failure_is_never_a_zero():
    """Sandboxes that die under a sample (the harness's failure, not the candidate's) give reward None."""
    judge = Verifier("humaneval", workers=1)
    try:
        assert judge.verify([(TASK, WRONG)])[0].reward == 0.0  # started, warm
        sleepy = [(TASK, f"    import time\n    time.sleep(5)  # {i}\n") for i in range(3)]
        threading.Timer(0.5, judge.close).start()
        started = time.monotonic()
        verdicts = judge.verify(sleepy)
        assert time.monotonic() - started < 30
        assert [v.status for v in verdicts] == [Status.HARNESS_ERROR] * 3, verdicts
        assert [v.reward for v in verdicts] == [None] * 3
        assert all(v.detail for v in verdicts)
    finally:
        judge.close()
    with pytest.raises(VerifierError, match="closed"):
        judge.verify([(TASK, WRONG)])


def test_bad_samples_are_named_before_anything_runs(verifier):
    with pytest.raises(VerifierError, match=r"sample 1: task_id: expected a task of openai_humaneval, found 'Nope/1'"):
        verifier.verify([(TASK, WRONG), ("Nope/1", WRONG)])
    with pytest.raises(VerifierError, match=r"sample 0: expected \(task_id, completion\) or a mapping"):
        verifier.verify(["just code"])
    with pytest.raises(VerifierError, match=r"sample 0: completion: expected a string"):
        verifier.verify([{"task_id": TASK, "completion": 3}])
    with pytest.raises(VerifierError, match=r"sample 0: completion: expected a string .* found neither"):
        verifier.verify([{"task_id": TASK, "code": WRONG}])


def test_bad_arguments_name_the_argument(tmp_path):
    with pytest.raises(VerifierError, match=r"^Verifier: params.timeout_s: expected a number > 0"):
        Verifier("humaneval", timeout_s=0)
    with pytest.raises(VerifierError, match=r"^Verifier: dataset: expected one of humaneval, humanevalplus"):
        Verifier(str(tmp_path / "missing.jsonl"))
    with pytest.raises(VerifierError, match=r"^Verifier: params.isolation: expected auto \| strict \| basic"):
        Verifier("humaneval", isolation="none")


def test_evalplus_dataset_reports_both_suites(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    dataset = write_jsonl(tmp_path / "plus.jsonl", [evalplus_row("T/0"), evalplus_row("T/1")])
    with Verifier(dataset, workers=1) as judge:
        verdicts = judge.verify([
            ("T/0", "    return x * 2\n"),
            ("T/0", "    return x * 2 if x < 3 else 0\n"),  # the base inputs pass, the plus inputs do not
            ("T/1", "    return 0\n"),
        ])
    assert [(v.status, v.base_status, v.plus_status) for v in verdicts] == [
        (Status.PASSED, Status.PASSED, Status.PASSED),
        (Status.ASSERTION_FAILED, Status.PASSED, Status.ASSERTION_FAILED),
        (Status.ASSERTION_FAILED, Status.ASSERTION_FAILED, Status.ASSERTION_FAILED)]
    assert judge.dataset == "plus"


def test_exit_attacks_fail_in_a_pytest_run(pytester):
    """The same early exits through the plugin: every one a failed sample, none passed, the run intact."""
    rows = [{"task_id": TASK, "completion": code} for _, code in sorted(EXIT_ATTACKS.items())]
    rows.append({"task_id": TASK, "completion": PROBLEMS[TASK].canonical_solution})
    write_jsonl(pytester.path / "samples.jsonl", rows)
    pytester.makefile(".yaml", run="target: {mode: samples, samples: samples.jsonl}\n"
                                   "params: {allow_code_execution: true, limit: 1}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-results", "results.jsonl",
                                "-p", "no:xdist")
    statuses = [json.loads(line)["status"] for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    assert statuses[-1] == "passed" and len(statuses) == len(EXIT_ATTACKS) + 1
    assert "passed" not in statuses[:-1], statuses
    result.assert_outcomes(passed=1, failed=len(EXIT_ATTACKS))


def test_a_dropped_stream_leaves_nothing_behind(verifier):
    """A reader that stops reading a stream: the samples fed ahead are let go (not started, or not kept), and
    nothing of them stays in the pool or the Verifier."""
    stream = verifier.stream((TASK, f"    import time\n    time.sleep(0.05)\n    return True  # {i}\n")
                             for i in range(300))
    assert not next(stream).passed
    stream.close()
    pool, deadline = verifier._pool, time.monotonic() + 60
    while time.monotonic() < deadline and (pool._done or pool._dropped or pool._position or pool._cancelled):
        time.sleep(0.05)
    programs = verifier._judge.sandboxes.programs  # what the pool reads of the samples fed to it
    assert (pool._done, pool._dropped, pool._position, pool._cancelled, programs) == ({}, set(), {}, set(), {})
    assert verifier.verify([(TASK, PROBLEMS[TASK].canonical_solution)])[0].passed


def slow_samples(count: int, seconds: float) -> list[tuple[str, str]]:
    """Distinct samples (none is another's repeat) that each hold a sandbox for ``seconds``."""
    return [(TASK, f"    import time\n    time.sleep({seconds})  # {i}\n    return True\n") for i in range(count)]


def supervisors_of(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid and b"_supervisor.py" in cmdline:
            found.append(int(entry))
    return found


def gone(pids: list[int], within_s: float = 30.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            return True
        time.sleep(0.1)
    return False


def test_a_cancelled_averify_stops_its_batch():
    """A cancelled ``averify`` (asyncio.wait_for) stops feeding its batch: the sandboxes are free for the next
    call at once, not after the abandoned batch (it was 32 s)."""
    with Verifier("humaneval", workers=2) as judge:
        async def cancelled() -> None:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(judge.averify(slow_samples(200, 0.2)), 1.0)

        asyncio.run(cancelled())
        time.sleep(1.0)  # what was running when it was cancelled ends (0.2 s each)
        before = judge._pool.stats.executed
        time.sleep(1.0)
        assert judge._pool.stats.executed == before < 100  # nothing of the abandoned batch runs any more
        assert judge.verify([(TASK, WRONG)])[0].status is Status.ASSERTION_FAILED


@pytest.mark.parametrize("call", ["averify", "astream"])
def test_ctrl_c_stops_an_event_loop_call(call):
    """Ctrl-C under ``asyncio.run`` ends the call and the process, and leaves no sandbox (averify went on for
    the whole batch, and a second Ctrl-C printed a traceback)."""
    consume = ("await verifier.averify(samples)" if call == "averify" else
               "[v async for v in verifier.astream(samples)]")
    code = textwrap.dedent(f"""
        import asyncio, os, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_verifier import slow_samples
        from pytest_humaneval import Verifier
        verifier = Verifier("humaneval", workers=2)
        verifier.verify(slow_samples(2, 0.0))
        samples = slow_samples(1000, 0.2)
        async def main():
            print("started", flush=True)
            {consume}
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    # (SIGINT's default back in the child: a shell starts its background jobs with SIGINT ignored, .ci/run & say,
    # and Python keeps an ignored SIGINT, so the child would never see this Ctrl-C: tests/sessions.py)
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "started"
        time.sleep(1.0)
        sandboxes = supervisors_of(process.pid)
        assert sandboxes
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)  # the batch alone would take 100 s
    finally:
        process.kill()
        process.wait()
    assert out.strip() == "interrupted", err
    assert gone(sandboxes)


def test_an_unclosed_verifier_is_closed_and_warned_about():
    """A Verifier collected (or left at exit) without close() closes its sandboxes, with a ResourceWarning; one
    closed says nothing (throwaway Verifiers left 40 sandbox processes)."""
    code = textwrap.dedent(f"""
        import gc, json, os, sys, warnings
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_verifier import supervisors_of
        from pytest_humaneval import Verifier
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as caught:
            with Verifier("humaneval", workers=2) as closed:
                closed.verify([("HumanEval/0", "    return True\\n")])
            del closed
            gc.collect()
            quiet = len(caught)
            throwaway = Verifier("humaneval", workers=2)
            throwaway.verify([("HumanEval/0", "    return True\\n")])
            sandboxes = supervisors_of(os.getpid())
            del throwaway
            gc.collect()
        print(json.dumps([quiet, [str(w.message) for w in caught if w.category is ResourceWarning], sandboxes,
                          supervisors_of(os.getpid())]))
        left = Verifier("humaneval", workers=1)
        left.verify([("HumanEval/0", "    return True\\n")])
    """)
    found = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", code], capture_output=True,
                           text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    quiet, warned, sandboxes, after = json.loads(found.stdout.strip().splitlines()[-1])
    assert quiet == 0
    assert len(warned) == 1 and warned[0].startswith("unclosed Verifier('openai_humaneval'")
    assert sandboxes and after == []
    assert "ResourceWarning: unclosed Verifier" in found.stderr  # the one left at exit


def test_status_prints_as_its_value(verifier):
    verdict = verifier.verify([(TASK, WRONG)])[0]
    assert str(verdict.status) == f"{verdict.status}" == "assertion_failed"
    assert f"{Status.PASSED:>8}" == "  passed"


def test_a_bytes_completion_is_named():
    with Verifier("humaneval", workers=1) as judge:
        with pytest.raises(VerifierError, match=r"sample 1: completion: expected a string .* found bytes"):
            judge.verify([(TASK, WRONG), (TASK, b"    return True\n")])


def test_the_verifier_logs_its_isolation(caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="pytest_humaneval"), Verifier("humaneval", workers=1) as verifier:
        pass
    assert f"Verifier('openai_humaneval'): isolation {verifier.isolation}" in caplog.text
