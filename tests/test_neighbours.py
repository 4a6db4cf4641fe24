"""Samples beside each other: a sample's verdict depends on its own program only.

A sample that burns CPU on many processes or threads (within its limits) used to take the CPU of the samples judged
beside it in the pool, and correct ones timed out: reward noise chosen by another sample. Now each sample's tree is
held to one CPU (a cpu quota on its cgroup; where there is none, its candidate is pinned to one CPU and may not
widen that), and a timeout whose processes waited on a run queue for others is judged once more
(docs/safety.md, "Samples beside each other").

The hog runs first, beside 16 correct samples that each need about 0.7 s of CPU alone (a loop summing to
N, N calibrated once per module), and a sleeper; through the ``Verifier`` with 2 workers (so 2 spares beside
them: up to 4 samples at once on this machine's CPUs), its calls made from two threads at once, in every mode the
machine has (namespaces as root; the basic sandbox; Landlock in a default container, ``container.py``), and, for
the paths with no cgroup, four supervisors started as ``nobody`` side by side (``nobody.py``: a user namespace, and
Landlock in a default container). Every hog is bounded: its loops end after 6 s, and its sample is killed at 3 s.

Each hog test takes the machine's hog lock (``one_hog_at_a_time``): its premise is that the hog it starts is the
only one on the machine. Two at once (the suite's xdist workers each running one: its CI run failed so, three
victims starved through both attempts, 0.4 s of CPU in 3 s) put 8 samples and two hogs on 2 CPUs, a load from
outside either run that no guarantee about a run's own samples covers.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import nobody
import pytest
from container import available
from modes import last_json

from pytest_humaneval.sandbox import Limits, Program, Sandbox, Status, _confine
from pytest_humaneval.sandbox._supervisor import STARVED_SHARE, _judged_again, _starved

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 3.0
VICTIM_CPU_S = 0.7  # what each correct sample needs alone: a quarter of its limit
VICTIMS = 16
PROMPT = "def f(n):\n"
VICTIM = "    total = 0\n    for i in range(n):\n        total += i\n    return total\n"
SLEEPER = "    import time\n    time.sleep(30)\n    return 0\n"
# Many busy loops, each in a session of its own (sessions are what the kernel's autogroups share CPU by, where no
# cgroup does), or busy threads that release the GIL (hashing a MiB at a time): both end by themselves after 6 s.
HOGS = {
    "processes": ("    import os, time\n    end = time.monotonic() + 6\n    for _ in range(48):\n"
                  "        if os.fork() == 0:\n            os.setsid()\n            while time.monotonic() < end:\n"
                  "                pass\n            os._exit(0)\n    while time.monotonic() < end:\n        pass\n"
                  "    return 0\n"),
    "threads": ("    import hashlib, threading, time\n    end = time.monotonic() + 6\n    data = b'x' * (1 << 20)\n"
                "    def burn():\n        while time.monotonic() < end:\n            hashlib.sha256(data).digest()\n"
                "    threads = [threading.Thread(target=burn) for _ in range(8)]\n    for thread in threads:\n"
                "        thread.start()\n    for thread in threads:\n        thread.join()\n    return 0\n"),
}
# Through the Verifier, in a process of its own (the container's confinement applies to a whole process): two
# threads at once, the hog and the sleeper first in the first one's batch.
SCRIPT = """
import json, sys, threading, warnings
warnings.simplefilter("ignore")
from pytest_humaneval import Verifier
dataset, isolation, batches = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
found = [None] * len(batches)
with Verifier(dataset, workers=2, isolation=isolation, allow_basic=True, dedupe=False, timeout_s=float(sys.argv[4])) as verifier:
    def judge(index):
        found[index] = [[v.status.value, v.detail, v.duration_ms] for v in verifier.verify(batches[index])]
    threads = [threading.Thread(target=judge, args=(index,)) for index in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps([verifier.isolation, found]))
"""


def _sum_to(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


@pytest.fixture(scope="module")
def n() -> int:
    """N for a victim of about VICTIM_CPU_S of CPU alone, from the time (CPU time: the machine's load aside) this
    interpreter takes; the sandbox's interpreter is the same one."""
    probe = 2_000_000
    started = time.process_time()
    _sum_to(probe)
    return max(probe, int(probe * VICTIM_CPU_S / max(time.process_time() - started, 1e-3)))


def _test(n: int) -> str:
    return f"def check(candidate):\n    assert candidate({n}) == {n * (n - 1) // 2}\n"


def _batches(hog: str) -> list[list[tuple[str, str]]]:
    """Two calls' samples: the hog first in one, the sleeper last in the other."""
    victims = [("T/0", VICTIM + f"    # victim {i}\n") for i in range(VICTIMS)]
    return [[("T/0", HOGS[hog]), *victims[:VICTIMS // 2]], [*victims[VICTIMS // 2:], ("T/0", SLEEPER)]]


def _check(hog, sleeper, victims) -> None:
    """The hog and the sleeper time out, the sleeper once; every victim passes."""
    assert hog[0] == "timeout", hog
    assert sleeper[0] == "timeout" and "judged twice" not in sleeper[1], sleeper
    assert sleeper[2] < 1.5 * TIMEOUT_S * 1000, sleeper  # not judged again: it wanted no CPU
    failed = [victim for victim in victims if victim[0] != "passed"]
    twice = sum("judged twice" in victim[1] for victim in victims)
    assert not failed, f"{len(failed)} of {len(victims)} correct samples failed beside the hog " \
                       f"({twice} judged twice): {failed[:3]}"


# --------------------------------------------------------------------------------------- the rule itself


def test_starved_is_a_timeout_that_waited_for_others():
    """Starved: it ran under three quarters of its time and waited a quarter or more for a CPU."""
    assert STARVED_SHARE == 0.25
    assert _starved(400.0, 2500.0, 3000.0) == \
        "in 3.00 s its processes ran 0.40 s and waited 2.50 s for a CPU other programs held"
    assert _starved(2.0, 3.0, 3000.0) == ""  # a sleeper: it wanted no CPU
    assert _starved(2900.0, 90000.0, 3000.0) == ""  # a hog: its own processes queued on its one CPU
    assert _starved(2000.0, 700.0, 3000.0) == ""  # waited under a quarter of its time
    assert _starved(2250.0, 750.0, 3000.0) != ""  # at both edges: starved


def test_judged_again_keeps_the_second_verdict_and_says_why():
    first = {"status": "timeout", "detail": "timed out after 3 s", "duration_ms": 3001.0, "starved": "why"}
    passed = _judged_again(first, {"status": "passed", "detail": "", "duration_ms": 500.5, "starved": ""})
    assert passed == {"status": "passed", "duration_ms": 3501.5,
                      "detail": "judged twice: its first attempt timed out starved of CPU (why)"}
    again = _judged_again(first, {"status": "timeout", "detail": "timed out after 3 s", "duration_ms": 3000.0,
                                  "starved": "why, again"})
    assert again == {"status": "timeout", "duration_ms": 6001.0,
                     "detail": "timed out after 3 s; judged twice: its first attempt timed out starved of CPU (why)"}


# ------------------------------------------------------------------------------------- each candidate's CPU


def _nice() -> int:
    """A candidate's nice value: CANDIDATE_NICE below its supervisor's (this process's)."""
    return min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)


def test_candidate_has_its_share_of_cpu():
    """As root: a cpu quota holds the sample's tree to one CPU (the run says so), and its candidate is not pinned."""
    box = Sandbox("auto").start()
    try:
        if not box.limits.startswith("cgroup") or "cpu quota" not in box.limits or "pinned" in box.limits:
            pytest.skip(f"needs_cgroup: no cgroup with a cpu quota here: {box.limits}")
        assert "one CPU of time for the whole tree (cpu quota)" in box.limits
        cpus = len(os.sched_getaffinity(0))
        result = box.run(Program(PROMPT, "    import os\n    os.sched_setaffinity(0, os.sched_getaffinity(0))\n"
                                         "    return len(os.sched_getaffinity(0)), os.nice(0)\n",
                                 f"def check(candidate):\n    assert candidate(0) == ({cpus}, {_nice()})\n", "f"),
                         Limits(timeout_s=TIMEOUT_S))
        assert result.status is Status.PASSED, result.detail
    finally:
        box.close()


@pytest.mark.needs_system_python
def test_candidate_without_cgroup_keeps_to_one_cpu():
    """As nobody (no cgroup): the candidate is pinned to one CPU and may not widen it; the run says so."""
    if nobody.unavailable():
        pytest.skip(f"needs_root and needs_system_python: {nobody.unavailable()}")
    program = Program(PROMPT, "    import os\n    cpus = os.sched_getaffinity(0)\n    try:\n"
                              "        os.sched_setaffinity(0, set(range(os.cpu_count())))\n"
                              "        widened = 'widened'\n    except PermissionError:\n        widened = 'refused'\n"
                              "    return len(cpus), widened, len(os.sched_getaffinity(0)), os.nice(0)\n",
                      f"def check(candidate):\n    assert candidate(0) == (1, 'refused', 1, "
                      f"{os.getpriority(os.PRIO_PROCESS, 0)})\n", "f")  # not reniced: no quota holds it
    with nobody.supervisor() as (ready, run):
        assert ready.get("ready"), ready
        assert ready["limits"].startswith("rlimits per process") and \
            ready["limits"].endswith("; each candidate's tree pinned to one CPU"), ready["limits"]
        assert "no CPU affinity changes" in ready["confinement"], ready["confinement"]
        reply = run(program)
        assert reply["status"] == "passed", reply


# ---------------------------------------------------------------------------------------- beside a hog


@pytest.fixture
def one_hog_at_a_time():
    """Held for a hog test's whole run: another process's hog test (an xdist worker beside, another pytest run)
    waits for it. A lock file in the system's temp folder, shared by every run on the machine."""
    with open(os.path.join(tempfile.gettempdir(), "pytest-humaneval-hog.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _dataset(folder: Path, n: int) -> Path:
    folder.chmod(0o755)  # read by the container's root without DAC_READ_SEARCH, as by any user
    path = folder / "tasks.jsonl"
    path.write_text(json.dumps({"task_id": "T/0", "prompt": PROMPT, "entry_point": "f", "test": _test(n)}) + "\n")
    path.chmod(0o644)
    return path


def _through_verifier(mode: str, hog: str, dataset: Path) -> tuple[str, list]:
    isolation, found = last_json(mode, SCRIPT, str(dataset), "basic" if mode == "basic" else "auto",
                                 json.dumps(_batches(hog)), str(TIMEOUT_S))
    return isolation, found


@pytest.mark.slow
@pytest.mark.parametrize("hog", sorted(HOGS))
@pytest.mark.parametrize("mode", ["auto", "basic", "landlock"])
def test_hog_takes_no_verdict_from_its_neighbours(mode, hog, n, tmp_path, one_hog_at_a_time):
    """Beside a hog, through the Verifier (2 workers, called from two threads): every correct sample passes, the
    hog and a sleeper time out, the sleeper once."""
    isolation, (first, second) = _through_verifier(mode, hog, _dataset(tmp_path, n))
    expected = {"auto": ("namespaces", "namespaces-userns"), "basic": ("basic",), "landlock": ("landlock",)}[mode]
    if mode == "auto" and isolation not in expected:
        pytest.skip(f"needs_namespaces: auto found {isolation} here")
    assert isolation in expected
    _check(first[0], second[-1], first[1:] + second[:-1])


def _side_by_side(contained: bool, hog: str, n: int) -> list[list]:
    """Four supervisors started as nobody (no cgroup), each in a thread of its own and all at once: the hog, the
    sleeper and 2 victims in the first; the other 14 victims spread over the other three."""
    test = _test(n)
    victims = [VICTIM + f"    # victim {i}\n" for i in range(VICTIMS)]
    plans = [[HOGS[hog], SLEEPER, *victims[:2]], victims[2:7], victims[7:12], victims[12:]]
    found: list[list] = [[] for _ in plans]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(plans), timeout=120)

    def serve(index: int) -> None:
        try:
            with nobody.supervisor(contained) as (ready, run):
                assert ready.get("ready"), ready
                assert "pinned to one CPU" in ready["limits"], ready["limits"]
                barrier.wait()
                for completion in plans[index]:
                    reply = run(Program(PROMPT, completion, test, "f"), timeout_s=TIMEOUT_S)
                    found[index].append([reply["status"], reply.get("detail", ""), reply["duration_ms"]])
        except BaseException as exc:  # reported by the test's thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=serve, args=(index,)) for index in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return found


@pytest.mark.slow
@pytest.mark.needs_system_python
@pytest.mark.parametrize("hog", sorted(HOGS))
@pytest.mark.parametrize("contained", [False, True], ids=["userns", "landlock"])
def test_hog_without_cgroup_takes_no_verdict(contained, hog, n, one_hog_at_a_time):
    """As nobody, with no cgroup (a user namespace; Landlock in a default container): every candidate is pinned to
    one CPU, so the hog keeps to its own; every correct sample beside it passes."""
    if nobody.unavailable():
        pytest.skip(f"needs_root and needs_system_python: {nobody.unavailable()}")
    if contained and (available() or _confine.landlock_abi() < 1):
        pytest.skip(f"needs_landlock: a default container's Landlock cannot be made here: {available()}")
    first, *others = _side_by_side(contained, hog, n)
    _check(first[0], first[1], first[2:] + [reply for replies in others for reply in replies])


@pytest.mark.slow
def test_hog_takes_no_verdict_under_xdist(pytester, n, tmp_path, one_hog_at_a_time):
    """The same beside a processes hog in a pytest run over two xdist workers (-n 2, a pool of two sandboxes
    each): every correct sample's item passes, the hog's and the sleeper's fail as timeouts."""
    dataset = _dataset(tmp_path, n)
    first, second = _batches("processes")
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": task, "completion": code}) + "\n"
                               for task, code in first + second))
    (pytester.path / "run.yaml").write_text(
        f"target: {{mode: samples, samples: samples.jsonl}}\ndataset: {dataset}\n"
        f"params: {{allow_code_execution: true, timeout_s: {TIMEOUT_S}, workers: 2, dedupe: false}}\n")
    result = pytester.runpytest_subprocess("--humaneval-config", "run.yaml", "-n", "2", "--humaneval-results",
                                           "results.jsonl", "-p", "no:cacheprovider", timeout=600)
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    by_sample = {row["sample"]: [row["status"], row["detail"], row["duration_ms"]] for row in rows}
    assert len(by_sample) == VICTIMS + 2, result.stdout.str()[-2000:]
    _check(by_sample[0], by_sample[VICTIMS + 1], [by_sample[i] for i in range(1, VICTIMS + 1)])
