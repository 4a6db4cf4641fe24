"""The basic sandbox against its own samples (issue 55): a candidate there runs as the harness's user and can kill or
stop the sandbox's processes, so what it does to them is its own failure, never a harness_error; no write to a
supervisor blocks for good, nothing stopped or alive is left behind, and a run has one basic sandbox, so a sample has
no neighbour whose verdict it could change (docs/safety.md, "In the basic sandbox").

On 57e0cd6: a sample that killed its own judge was a harness_error in 0.01 s; one that stopped it timed out; one that
stopped its supervisor was a harness_error after 39 s; a helper of a passing sample that stopped the judge after its
verdict made the next, correct, sample time out; a verify() after an idle supervisor was stopped, with a request
larger than a pipe, never returned; a Verifier in basic ran its samples side by side (two sandboxes and two
spares), a fork bomb beside correct samples among them; a judge killed by the
sample's own cgroup memory limit (a value that balloons in the judge) was a harness_error in every mode.

Every hostile sample signals only processes of its own sandbox (its parent, the fork server; its grandparent, the
supervisor; the supervisor's other child, the judge), forks at most 200 processes that end within 2 s, and writes
only in the test's own temporary folder; the test itself stops only a supervisor its own Verifier started.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval import Verifier
from pytest_humaneval.sandbox import Limits, Program, Sandbox, Status, harness

BASIC = "(basic sandbox: it runs as your user)"
PROMPT = "def f(x):\n"
TEST = "def check(candidate):\n    assert candidate(1) == 2\n"
HONEST = "    return x + 1\n"
FAST = Limits(timeout_s=1.0)
# A candidate's own sandbox, from inside it: its parent is the fork server, whose parent is the supervisor, whose
# other child is the judge. ``{pids}``: a file the sample writes those pids to (the test's temporary folder).
OWN = """    import os, select, signal, time
    def parent_of(pid):
        return int(open(f'/proc/{{pid}}/stat').read().rpartition(')')[2].split()[1])
    zygote = os.getppid()
    supervisor = parent_of(zygote)
    judge = [int(c) for c in open(f'/proc/{{supervisor}}/task/{{supervisor}}/children').read().split()
             if int(c) != zygote][0]
    open({pids!r}, 'w').write(f'{{supervisor}} {{zygote}} {{judge}} {{os.getpid()}}')
"""
# After its verdict: a helper that waits for the judge to close the call pipe (fd 3), then signals.
AFTER_VERDICT = ("    if os.fork() == 0:\n        select.select([3], [], [], 5)\n        os.kill({target}, signal.SIGSTOP)\n"
                 "        os._exit(0)\n")


def own(tmp_path: Path, action: str) -> Program:
    return Program(PROMPT, OWN.format(pids=str(tmp_path / "pids")) + action + HONEST, TEST, "f")


def honest() -> Program:
    return Program(PROMPT, HONEST, TEST, "f")


def left_of(tmp_path: Path) -> list[int]:
    """The pids the sample wrote that still name a process of the sandbox (not gone, not a zombie), stopped or not."""
    pids = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
    return [pid for pid in pids if harness._state(pid) not in (b"", b"Z", b"X")]


@pytest.fixture
def box():
    box = Sandbox("basic").start()
    assert box.isolation == "basic"
    yield box
    box.close()


# ------------------------------------------------------------------------------------ a sample's own sandbox


@pytest.mark.timeout(120)
def test_killing_its_own_judge_is_its_failure(box, tmp_path):
    """A sample that kills its own judge is its runtime_error (on 57e0cd6: a harness_error, reward None)."""
    result = box.run(own(tmp_path, "    os.kill(judge, signal.SIGKILL)\n    time.sleep(0.3)\n"), FAST)
    assert result.status is Status.RUNTIME_ERROR, result
    assert result.detail.startswith(f"the program killed its own judge (SIGKILL) {BASIC}"), result.detail
    assert box.run(honest(), FAST).status is Status.PASSED


@pytest.mark.timeout(120)
def test_stopping_its_own_judge_is_its_failure(box, tmp_path):
    """A sample that stops its own judge while it is judged is its runtime_error (on 57e0cd6: a timeout), and the
    stopped judge is gone before the next sample."""
    result = box.run(own(tmp_path, "    os.kill(judge, signal.SIGSTOP)\n    time.sleep(0.3)\n"), FAST)
    assert result.status is Status.RUNTIME_ERROR, result
    assert result.detail.startswith(f"the program stopped its own judge {BASIC}"), result.detail
    judge = int((tmp_path / "pids").read_text().split()[2])
    assert harness._state(judge) == b"", "the stopped judge is still there"
    assert box.run(honest(), FAST).status is Status.PASSED


@pytest.mark.timeout(120)
def test_a_judge_stopped_after_its_verdict_costs_its_sample_only(box, tmp_path):
    """A helper that stops the judge once the judge has given its verdict (it closes the call pipe) fails its own
    sample, never the next one's (on 57e0cd6 its sample passed and the next, correct, sample timed out)."""
    stopper = own(tmp_path, AFTER_VERDICT.format(target="judge"))
    outcomes = []
    for _ in range(10):  # until the helper wins its race with the end of its sample (1 in 3 tries or better)
        if Status.RUNTIME_ERROR in outcomes:
            break
        first = box.run(stopper, FAST)
        outcomes.append(first.status)
        assert first.status is Status.PASSED or (first.status is Status.RUNTIME_ERROR and first.detail.startswith(
            f"the program stopped its own judge {BASIC}")), first
        after = box.run(honest(), FAST)
        assert after.status is Status.PASSED, after
    assert Status.RUNTIME_ERROR in outcomes, "the helper never stopped the judge: the attack did not happen"


@pytest.mark.timeout(120)
def test_stopping_its_own_supervisor_is_its_failure(box, tmp_path):
    """A sample that stops (SIGSTOP) its own supervisor is its runtime_error within a moment, and nothing of that
    sandbox is left, stopped or not (on 57e0cd6: a harness_error after 39 s)."""
    started = time.monotonic()
    result = box.run(own(tmp_path, "    os.kill(supervisor, signal.SIGSTOP)\n    time.sleep(0.5)\n"), FAST)
    took = time.monotonic() - started
    assert result.status is Status.RUNTIME_ERROR, result
    assert result.detail.startswith(f"the program stopped the sandbox supervisor that runs it {BASIC}"), result.detail
    assert took < 10, f"{took:.1f} s"
    assert left_of(tmp_path) == []
    assert box.run(honest(), FAST).status is Status.PASSED


@pytest.mark.timeout(120)
def test_stopping_its_own_fork_server_is_its_failure(box, tmp_path):
    """A sample that stops its fork server (its parent) is its runtime_error, said so, and a fresh supervisor takes
    over (on 57e0cd6: "killed", after 10 s)."""
    started = time.monotonic()
    result = box.run(own(tmp_path, "    os.kill(zygote, signal.SIGSTOP)\n    time.sleep(0.3)\n"), FAST)
    assert result.status is Status.RUNTIME_ERROR, result
    assert result.detail.startswith(f"the program stopped the sandbox's fork server (its parent process) {BASIC}")
    assert time.monotonic() - started < 8
    assert left_of(tmp_path) == []
    assert box.run(honest(), FAST).status is Status.PASSED


# -------------------------------------------------------------------------------- through the Verifier

def _dataset(folder: Path) -> Path:
    path = folder / "tasks.jsonl"
    path.write_text(json.dumps({"task_id": "T/0", "prompt": PROMPT, "entry_point": "f", "test": TEST}) + "\n")
    return path


# A Verifier in a process of its own: a sample stops its own supervisor; then something outside any sample (this
# script, which started it) stops the idle supervisor, and a later verify() writes a request far larger than a pipe
# (a 1 MiB completion) to it. It must finish, and no supervisor may be left, stopped or not, once the script ends
# (with close, or without: at exit).
STOPPED_IDLE = """
import json, os, signal, sys, time, warnings
warnings.simplefilter("ignore")
from pytest_humaneval import Verifier
dataset, stopper, honest, close = sys.argv[1:5]
big = "    # " + "x" * (1 << 20) + chr(10) + honest
seen = set()
def supervisors():
    found = [int(child) for task in os.listdir("/proc/self/task")
             for child in open(f"/proc/self/task/{task}/children").read().split()]
    found = [pid for pid in found if b"_supervisor.py" in open(f"/proc/{pid}/cmdline", "rb").read()]
    seen.update(found)
    return found
verifier = Verifier(dataset, isolation="basic", workers=2, dedupe=False, timeout_s=2.0)
out = {"first": [[v.status.value, v.detail] for v in verifier.verify([("T/0", stopper), ("T/0", honest)])]}
for pid in supervisors():
    os.kill(pid, signal.SIGSTOP)
started = time.monotonic()
out["later"] = [[v.status.value, v.detail] for v in verifier.verify([("T/0", big), ("T/0", honest)])]
out["seconds"] = time.monotonic() - started
supervisors()
out["supervisors"] = sorted(seen)
print(json.dumps(out), flush=True)
if close == "close":
    verifier.close()
"""


@pytest.mark.timeout(180)
@pytest.mark.parametrize("close", ["close", "exit"])
def test_a_later_verify_finishes_after_its_idle_supervisor_was_stopped(tmp_path, close):
    """No write to a supervisor blocks for good: one stopped while idle is killed and replaced, the samples sent to it
    judged by a fresh one; and no supervisor is left, stopped or not, after the Verifier closes or its process
    exits (on 57e0cd6 the later verify() never returned)."""
    stopper = OWN.format(pids=str(tmp_path / "pids")) + "    os.kill(supervisor, signal.SIGSTOP)\n" + HONEST
    run = subprocess.run([sys.executable, "-c", STOPPED_IDLE, str(_dataset(tmp_path)), stopper, HONEST, close],
                         capture_output=True, text=True, timeout=150)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["first"][0][0] == "runtime_error" and BASIC in out["first"][0][1], out["first"]
    assert out["first"][1][0] == "passed", out["first"]
    assert [status for status, _ in out["later"]] == ["passed", "passed"], out["later"]
    assert out["seconds"] < 60, out["seconds"]
    left = [pid for pid in out["supervisors"] + [int(p) for p in (tmp_path / "pids").read_text().split()]
            if harness._state(pid) in (b"T", b"t")
            or b"_supervisor.py" in _cmdline(pid)]
    assert left == [], left


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


# Each sample writes when it started and ended (CLOCK_MONOTONIC, the same in every process) to a file of its own.
SPAN = """    import os, time
    began = time.monotonic()
{work}    open({path!r}, 'w').write(f'{{began}} {{time.monotonic()}}')
    return {value}
"""
# Forks until its process limit refuses (EAGAIN) or 200 processes, each of which ends within 1.5 s.
BOMB = """    end = time.monotonic() + 1.5
    for _ in range(200):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(max(0.0, end - time.monotonic()))
            os._exit(0)
    time.sleep(max(0.0, end - time.monotonic()))
"""
FORKER = """    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(0.2)
"""


def spans(folder: Path) -> dict[str, tuple[float, float]]:
    found = {}
    for path in folder.iterdir():
        began, ended = path.read_text().split()
        found[path.name] = (float(began), float(ended))
    return found


def overlapping(found: dict[str, tuple[float, float]]) -> list[str]:
    """The samples that started before every sample that started before them had ended."""
    late, ended = [], float("-inf")
    for name, (began, end) in sorted(found.items(), key=lambda item: item[1][0]):
        if began < ended:
            late.append(name)
        ended = max(ended, end)
    return late


def spanned(folder: Path, name: str, work: str = "    time.sleep(0.2)\n", value: str = "x + 1") -> str:
    return SPAN.format(work=work, path=str(folder / name), value=value)


@pytest.mark.timeout(180)
def test_basic_verifier_is_one_sandbox(tmp_path):
    """In basic, a Verifier asked for 2 workers runs one sandbox (no spares), and says so: its samples never run at
    the same time, and two threads calling it still get every verdict right, those of samples that kill or stop
    their own sandbox's processes included (on 57e0cd6: four sandboxes, harness_error for the two attackers)."""
    marks = tmp_path / "spans"
    marks.mkdir()
    first = [("T/0", spanned(marks, f"a{i}")) for i in range(4)] + [("T/0", "    return x\n")]
    first.append(("T/0", OWN.format(pids=str(tmp_path / "killer")) + "    os.kill(judge, signal.SIGKILL)\n" + HONEST))
    second = [("T/0", spanned(marks, f"b{i}")) for i in range(4)]
    second.append(("T/0", OWN.format(pids=str(tmp_path / "stopper")) + "    os.kill(supervisor, signal.SIGSTOP)\n"
                   + HONEST))
    found: list = [None, None]
    with pytest.warns(RuntimeWarning, match="one sandbox at a time"):
        verifier = Verifier(_dataset(tmp_path), isolation="basic", workers=2, dedupe=False, timeout_s=3.0)
    with verifier:
        assert "workers=1" in repr(verifier)

        def judge(index: int, batch: list) -> None:
            found[index] = [(v.status, v.detail) for v in verifier.verify(batch)]

        threads = [threading.Thread(target=judge, args=(i, batch)) for i, batch in enumerate([first, second])]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(150)
    assert [status for status, _ in found[0][:5]] == [Status.PASSED] * 4 + [Status.ASSERTION_FAILED], found[0]
    assert found[0][5][0] is Status.RUNTIME_ERROR and "killed its own judge" in found[0][5][1], found[0][5]
    assert [status for status, _ in found[1][:4]] == [Status.PASSED] * 4, found[1]
    assert found[1][4][0] is Status.RUNTIME_ERROR and "stopped the sandbox supervisor" in found[1][4][1], found[1][4]
    assert len(spans(marks)) == 8
    assert overlapping(spans(marks)) == []


@pytest.mark.timeout(180)
def test_fork_bomb_beside_correct_samples_changes_nothing(tmp_path):
    """A sample that forks until its process limit refuses, beside correct samples that fork, runs one at a time
    with them in basic (RLIMIT_NPROC counts the user's processes, all sandboxes' together): they pass (on 57e0cd6
    the bomb ran beside them)."""
    marks = tmp_path / "spans"
    marks.mkdir()
    batch = [("T/0", spanned(marks, "bomb", BOMB, "x"))]
    batch += [("T/0", spanned(marks, f"forker{i}", FORKER)) for i in range(3)]
    with pytest.warns(RuntimeWarning), \
            Verifier(_dataset(tmp_path), isolation="basic", workers=2, dedupe=False, timeout_s=5.0) as verifier:
        verdicts = verifier.verify(batch)
    assert [v.status for v in verdicts] == [Status.ASSERTION_FAILED] + [Status.PASSED] * 3, verdicts
    assert overlapping(spans(marks)) == []


@pytest.mark.timeout(300)
def test_basic_session_is_one_sandbox(pytester, tmp_path):
    """The pytest side too: `isolation: basic, workers: 2` runs one sandbox, and the report's run.limits says so."""
    marks = tmp_path / "spans"
    marks.mkdir()
    rows = [{"task_id": "T/0", "completion": spanned(marks, f"s{i}")} for i in range(6)]
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "run.yaml").write_text(
        f"target: {{mode: samples, samples: samples.jsonl}}\ndataset: {_dataset(tmp_path)}\n"
        "params: {allow_code_execution: true, isolation: basic, workers: 2, dedupe: false}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", "--humaneval-report",
                                "report.json", *NO_CACHE)
    result.assert_outcomes(passed=6)
    assert len(spans(marks)) == 6
    assert overlapping(spans(marks)) == []
    limits = read_report(pytester.path / "report.json")["run"]["limits"]
    assert limits.endswith("; basic: one sandbox at a time (a candidate can signal the harness's processes)"), limits


# ------------------------------------------------------------------ a judge out of the sample's own memory


def _judge_can_be_spared() -> bool:
    """Whether the judge's OOM protection holds here (oom_score_adj -1000 needs CAP_SYS_RESOURCE): then the memory
    limit kills another process of the sandbox, not the judge."""
    probe = subprocess.run([sys.executable, "-c", "open('/proc/self/oom_score_adj', 'w').write('-1000')\n"
                            "print(open('/proc/self/oom_score_adj').read())"], capture_output=True, text=True)
    return probe.stdout.strip() == "-1000"


@pytest.mark.needs_cgroup
@pytest.mark.timeout(180)
@pytest.mark.parametrize("isolation", ["auto", "basic"])
def test_judge_killed_by_the_samples_memory_limit_is_its_failure(isolation):
    """A returned value that balloons in the judge (a million references to one empty set: 8 MB in the candidate,
    a million sets in the judge) past the sample's cgroup memory limit: the judge is killed, and the sample's OOM
    counter says it was the limit: a MemoryError of the sample, in every mode (on 57e0cd6: harness_error, "the judge
    process ended without a verdict")."""
    box = Sandbox(isolation).start()
    try:
        if not box.limits.startswith("cgroup"):
            pytest.skip(f"needs_cgroup: no cgroup per sample here ({box.limits})")
        if _judge_can_be_spared():
            pytest.skip("the OOM killer spares the judge here (oom_score_adj -1000): another process goes instead")
        limits = Limits(timeout_s=20.0, memory_mb=128)
        result = box.run(Program(PROMPT, "    s = set()\n    return [s] * 1000000\n", TEST, "f"), limits)
        assert result.status is Status.RUNTIME_ERROR, result
        assert result.detail.startswith(
            "MemoryError: the judge ran out of the sample's memory on what the candidate returned"), result.detail
        assert box.run(Program(PROMPT, "    return [set()] * 1000 and x + 1\n", TEST, "f"), limits).status \
            is Status.PASSED
    finally:
        box.close()


@pytest.mark.timeout(120)
def test_a_fork_server_stopped_between_samples_costs_no_sample(box, tmp_path):
    """An idle sandbox whose fork server was stopped from outside (here by the test, in its own sandbox) runs its
    next sample on a fresh supervisor: nothing of that sample had run, so it gets its verdict, not a harness_error
    (on 3dc2c0a: harness_error, "stopped between samples"), and the stopped processes are gone."""
    import os
    import signal

    assert box.run(own(tmp_path, ""), FAST).status is Status.PASSED
    supervisor, zygote = (int(pid) for pid in (tmp_path / "pids").read_text().split()[:2])
    assert harness._state(zygote) not in (b"", b"Z", b"X")
    os.kill(zygote, signal.SIGSTOP)
    try:
        result = box.run(honest(), FAST)
        assert result.status is Status.PASSED, result
        assert box.run(Program(PROMPT, "    return x\n", TEST, "f"), FAST).status is Status.ASSERTION_FAILED
    finally:
        if harness._state(zygote) not in (b"", b"Z", b"X"):
            os.kill(zygote, signal.SIGCONT)
    time.sleep(0.5)
    assert [pid for pid in (supervisor, zygote) if harness._state(pid) not in (b"", b"Z", b"X")] == []


@pytest.mark.timeout(120)
def test_a_request_no_supervisor_takes_twice_is_a_harness_error(box, monkeypatch):
    """A request that neither the supervisor nor a fresh one takes (each stopped before it read it, a fault of the
    harness's machine, not of the sample: nothing ran) is a harness_error that says so, and the sandbox serves the
    next sample."""
    tries = []

    def never_taken(self, proc, request, suite_fd):
        tries.append(proc.pid)
        raise harness._NotTaken("it was stopped")

    monkeypatch.setattr(Sandbox, "_send", never_taken)
    with pytest.raises(harness.SandboxError, match=r"did not take this sample's request, twice \(the second time it "
                                                   r"was stopped\)"):
        box.run(honest(), FAST)
    assert len(tries) == 2 and tries[0] != tries[1], tries
    monkeypatch.undo()
    assert box.run(honest(), FAST).status is Status.PASSED


@pytest.mark.timeout(120)
def test_a_humaneval_plus_sample_that_stops_its_fork_server_is_its_failure(box, tmp_path):
    """The same as a HumanEval+ sample (two suites): its runtime_error, both suites said so, not a harness_error
    (on 3dc2c0a the supervisor's reply had no suites, which the harness took for its own fault: reward None)."""
    from test_plus_judge import suite

    the_suite = suite(([[1]], [2]), ([[2]], [3]))
    body = OWN.format(pids=str(tmp_path / "pids")) + "    os.kill(zygote, signal.SIGSTOP)\n    time.sleep(0.3)\n" + \
        "    return x + 1\n"
    result = box.run(Program(PROMPT, body, "", "f", the_suite), FAST)
    assert result.status is Status.RUNTIME_ERROR, result
    assert result.detail.startswith(f"base: the program stopped the sandbox's fork server (its parent process) {BASIC}")
    assert result.suites is not None and {suite["status"] for suite in result.suites.values()} == {"runtime_error"}
    assert left_of(tmp_path) == []
    assert box.run(Program(PROMPT, HONEST, "", "f", the_suite), FAST).status is Status.PASSED
