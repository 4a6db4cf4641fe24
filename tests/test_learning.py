"""Nothing of one sample reaches the next: a completion with no solution that LEARNS across samples scores 0.

The learner (``learner.py``) is one body for every problem whose test asserts only True or False. It keeps, from
one sample to the next, the calls it answered and how, and reads the verdict from where the test stopped (a
HumanEval test stops at its first failing assert: every call but the last was answered right, the last one of a
failed sample wrong). Without memory it answers True to every call, so on the chosen problems (each has a False
assert among 6 to 8) it fails every sample, deterministically: every test here asserts 0 passed samples (a coin
would pass one of these samples with probability at most 2**-6). The control shows that with memory (a naive
harness's shared temp dir) it passes every problem within a few samples: 3 failures at most, then every other
sample passes (12 samples a problem: 5 pass).

Each memory is tried alone (``channel``), so a failure names the channel that carried it, and all together
(``all``). Runs go through the real entry point (serially, through the pool and with ``-n 2``) as root with
namespaces, and in the basic sandbox; the unprivileged path (``namespaces-userns``) runs a supervisor as
``nobody``, samples one after another, as tests/test_isolation.py does.

Two more of the same kind: a saboteur that fills a folder emptying /tmp keeps (with namespaces, every later
sample shares that tmpfs's inodes) must cost the honest samples after it nothing; and whatever a sample leaves
(keys in the persistent and user keyrings, SysV objects, files in /tmp and /dev/shm, a detached sleeper) must be
gone from the host when its session ends.

Everything a test's samples write carries a tag unique to the test, and ``learner.cleanup`` removes it afterwards
(keys of every uid, files, SysV objects), so the machine stays clean whether the test passes or fails.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import learner
import pytest
from container import in_container
from procs import SLEEPS, alive_with
from sessions import NO_CACHE

from pytest_humaneval import sandbox

# The learner reaches keys through keyctl's and add_key's x86_64 numbers.
pytestmark = [pytest.mark.skipif(platform.machine() != "x86_64", reason="the learner's keyctl numbers are x86_64's"),
              pytest.mark.slow]  # learners: the slow tier
SAMPLES = 12  # per problem: each costs the learner at most 3 failed samples, then every other one passes
MODES = {"serial": ("-p", "no:xdist"), "pool": ("-p", "no:xdist"), "xdist": ("-n", "2")}
SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)


@pytest.fixture(scope="module")
def problems():
    chosen = learner.boolean_problems()
    assert len(chosen) == 6
    return chosen


@pytest.fixture
def tag():
    """A tag unique to this test: in every key, file and segment its learner makes; all removed afterwards."""
    value = uuid.uuid4().hex[:12]
    yield value
    learner.cleanup(value)


def interleaved(problems, body: str, samples: int = SAMPLES) -> list[dict]:
    """Sample 0 of every problem, then sample 1 of each, ...: the samples of one problem come one after another."""
    return [{"task_id": problem.task_id, "completion": body} for _ in range(samples) for problem in problems]


def run_session(pytester, rows: list[dict], mode: str, isolation: str) -> dict[str, int]:
    """The rows through the real entry point; {task_id: passed samples}."""
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    workers = "1" if mode == "serial" else "null"
    (pytester.path / "run.yaml").write_text(
        f"target: {{mode: samples, samples: {samples}, allow_subset: true}}\n"
        f"params: {{allow_code_execution: true, dedupe: false, isolation: {config_isolation(isolation)}, "
        f"workers: {workers}}}\n")
    results = pytester.path / "results.jsonl"
    result = session(pytester, isolation, "--humaneval-config", "run.yaml", "--humaneval-results", str(results),
                     *MODES[mode], *NO_CACHE)
    assert results.exists(), result.stdout.str()[-3000:]
    done = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(done) == len(rows), result.stdout.str()[-3000:]
    passed = {row["task_id"]: 0 for row in rows}
    for row in done:
        passed[row["task_id"]] += row["status"] == "passed"
    return passed


def session(pytester, isolation: str, *args: str) -> pytest.RunResult:
    """A real session: in this process, or (``landlock``: isolation auto where no namespace can be made) in a
    default container's confinement (``container.py``)."""
    if isolation == "landlock":
        return in_container(pytester, *args)
    return pytester.runpytest(*args)


def config_isolation(isolation: str) -> str:
    return {"namespaces": "strict", "landlock": "auto"}.get(isolation, isolation)


def learned(passed: dict[str, int]) -> str:
    return (f"learned {sum(1 for count in passed.values() if count)}/{len(passed)} problems, "
            f"{sum(passed.values())}/{SAMPLES * len(passed)} samples passed: "
            + ", ".join(f"{task}: {count}" for task, count in passed.items()))


# -- the control: a naive harness lets it learn ------------------------------------------------------------------


def test_control_shared_tmp_learner_passes(problems, tag):
    """The control: with a shared temporary folder, the learner passes every problem within a few samples."""
    folder = tempfile.mkdtemp(prefix=f"learn-control-{tag}-")
    try:
        body = learner.completion(tag, "dir", folder)
        alone = learner.completion(tag, ())  # no memory at all: True to every call
        passed = {}
        for problem in problems:
            assert not learner.naive_run(problem, alone), problem.task_id
            runs = [learner.naive_run(problem, body) for _ in range(6)]
            passed[problem.task_id] = sum(runs)
        # at most 3 False asserts each: 3 failures, then every other sample passes
        assert all(count >= 1 for count in passed.values()), passed
    finally:
        shutil.rmtree(folder)


# -- root, namespaces: through the real entry point ---------------------------------------------------------------


# Every channel at once in each way of running (a failure's detail says which problems learned; the channel is
# found by running the learner with one at a time: learner.CHANNELS), the one that carried it on 6e0b5ca alone.
NAMESPACES = [("serial", "persistent"), *((mode, "all") for mode in MODES)]


@pytest.mark.needs_root
@pytest.mark.needs_namespaces
@pytest.mark.parametrize(("mode", "channel"), NAMESPACES, ids=[f"{m}-{c}" for m, c in NAMESPACES])
def test_namespaces_learner_keeps_nothing(pytester, root_namespaces, problems, tag, mode, channel):
    """With namespaces, a learner keeps nothing from one sample to the next."""
    channels = learner.CHANNELS if channel == "all" else channel
    passed = run_session(pytester, interleaved(problems, learner.completion(tag, channels)), mode, "namespaces")
    assert sum(passed.values()) == 0, learned(passed)


# -- a default container (Landlock), and the basic sandbox ------------------------------------------------------

LANDLOCK = [(mode, "all") for mode in MODES]


@pytest.mark.needs_root("to drop to a default container's capabilities")
@pytest.mark.needs_landlock
@pytest.mark.parametrize(("mode", "channel"), LANDLOCK, ids=[f"{m}-{c}" for m, c in LANDLOCK])
def test_container_learner_keeps_nothing(pytester, problems, tag, mode, channel):
    """In a default container, a learner keeps nothing from one sample to the next."""
    channels = learner.CHANNELS if channel == "all" else channel
    passed = run_session(pytester, interleaved(problems, learner.completion(tag, channels)), mode, "landlock")
    assert sum(passed.values()) == 0, learned(passed)


@pytest.mark.parametrize("channel", ["persistent,user,sysv"])
def test_basic_keyring_and_ipc_carry_nothing(pytester, problems, tag, channel):
    """In the basic sandbox, no keyring or IPC object carries anything."""
    # The files the harness's user may write stay writable in the basic sandbox (docs/safety.md): that is what
    # isolation auto's Landlock is for. Keys and IPC objects are refused there too (seccomp).
    passed = run_session(pytester, interleaved(problems, learner.completion(tag, tuple(channel.split(",")))),
                         "serial", "basic")
    assert sum(passed.values()) == 0, learned(passed)


# -- unprivileged: a supervisor as nobody, under a user namespace -------------------------------------------------


class Nobody:
    """A supervisor started as `nobody` (the harness's protocol, as tests/test_isolation.py's ``unprivileged``),
    with the system interpreter or a venv of it made under /tmp (an import path bound under /tmp, as a CI venv
    made with mktemp). ``run(problem, completion)`` judges one sample."""

    def __init__(self, venv_in_tmp: bool, tag: str):
        if os.geteuid() != 0 or SYSTEM_PYTHON is None:
            pytest.skip("needs_root and needs_system_python: to start the supervisor as nobody")
        self.home = Path(tempfile.mkdtemp(dir="/var/tmp", prefix=f"humaneval-learn-{tag}-"))
        self.venv = None
        python = SYSTEM_PYTHON
        if venv_in_tmp:
            self.venv = Path(tempfile.mkdtemp(dir="/tmp", prefix=f"learn-venv-{tag}-"))
            subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(self.venv)], check=True)
            for where, _dirs, _ in os.walk(self.venv):
                os.chmod(where, 0o755)
            python = str(self.venv / "bin" / "python")
        for part in sandbox.SANDBOX_FILES:
            shutil.copy(sandbox.SUPERVISOR.with_name(part), self.home / part)
            (self.home / part).chmod(0o644)
        os.chown(self.home, 65534, 65534)

        def demote() -> None:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)

        files, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._files, number = files, theirs.fileno()
        self.proc = subprocess.Popen([python, "-I", str(self.home / "_supervisor.py")], pass_fds=(number,),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=demote,
                                     env={"PATH": "/usr/bin:/bin"}, cwd=self.home)
        sandbox.harness._send(self.proc, {"base": str(self.home), "isolation": "auto", "files_fd": number})
        theirs.close()
        self.numbers: dict = {}
        ready = sandbox.harness._receive(self.proc, 30)
        self.ready = ready

    def run(self, problem, completion: str, timeout_s: float = 3.0, memory_mb: int = 2048) -> dict:
        number = self.numbers.setdefault(problem.task_id, len(self.numbers) + 1)
        sandbox.harness._send(self.proc, {"id": 1, "problem": number, "prompt": problem.prompt,
                                          "completion": completion, "test": problem.test,
                                          "entry_point": problem.entry_point, "timeout_s": timeout_s,
                                          "limits": {"memory_mb": memory_mb, "file_size_mb": 16, "open_files": 256}})
        return sandbox.harness._receive(self.proc, 30 + timeout_s)

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        finally:
            self._files.close()
            shutil.rmtree(self.home, ignore_errors=True)
            if self.venv is not None:
                shutil.rmtree(self.venv, ignore_errors=True)


@pytest.fixture
def nobody(tag):
    supervisors = []

    def start(venv_in_tmp: bool = False) -> Nobody:
        box = Nobody(venv_in_tmp, tag)
        supervisors.append(box)
        if box.ready.get("isolation") != "namespaces-userns":
            pytest.skip(f"needs_userns: unprivileged user namespaces are not available here: {box.ready.get('reason')}")
        return box

    yield start
    for box in supervisors:
        box.close()


@pytest.mark.needs_root("to start the supervisor as nobody")
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
@pytest.mark.parametrize("channel", ["all"])
def test_without_root_learner_keeps_nothing(nobody, problems, tag, channel):
    """Without root, a learner keeps nothing from one sample to the next."""
    box = nobody(venv_in_tmp=True)
    body = learner.completion(tag, learner.CHANNELS if channel == "all" else channel)
    passed = {problem.task_id: 0 for problem in problems}
    for row in interleaved(problems, body):
        problem = next(p for p in problems if p.task_id == row["task_id"])
        reply = box.run(problem, row["completion"])
        passed[problem.task_id] += reply["status"] == "passed"
    assert sum(passed.values()) == 0, learned(passed)


# -- a saboteur: what one sample fills, the next one needs -------------------------------------------------------

FILL = '''    return None


import os as _os, time as _time
_folder = {folder!r}
_os.makedirs(_folder, exist_ok=True)
_deadline, _made = _time.monotonic() + {seconds}, 0
try:
    while _made < {limit} and _time.monotonic() < _deadline:
        for _ in range(1000):
            _os.mknod(f"{{_folder}}/{{_made}}")  # an empty file: one inode, one system call
            _made += 1
except OSError as _error:
    _made = f"{{_made}} ({{_error.strerror}})"
raise RuntimeError(f"made {{_made}} files in {{{seconds} - (_deadline - _time.monotonic()):.1f}} s")
'''
TEMPFILE = "\n\nimport tempfile as _tempfile\nwith _tempfile.TemporaryFile() as _file:\n    _file.write(b'x')\n"


def honest(count: int = 8) -> list:
    """The first problems with their canonical solutions, each once as it is and once opening a temporary file."""
    from pytest_humaneval.data.dataset import load_problems

    chosen = load_problems()[1][:count]
    return [(problem, problem.canonical_solution) for problem in chosen] + \
        [(problem, problem.canonical_solution + TEMPFILE) for problem in chosen]


@pytest.mark.needs_root("to start the supervisor as nobody")
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
@pytest.mark.parametrize("place", ["own", "syspath"])
def test_without_root_full_folder_costs_nothing(nobody, tag, place):
    """Without root, a sample that fills a kept folder costs the next samples nothing."""
    box = nobody(venv_in_tmp=True)
    folder = f"/tmp/humaneval/.fill-{tag}" if place == "own" else f"{box.venv}/.fill-{tag}"
    first = [box.run(problem, text, timeout_s=5.0)["status"] for problem, text in honest()]
    assert first == ["passed"] * len(first), first
    problem = honest()[0][0]
    fill = box.run(problem, FILL.format(folder=folder, limit=300_000, seconds=15), timeout_s=20.0)
    after = [box.run(problem, text, timeout_s=5.0) for problem, text in honest()]
    broken = [(reply["status"], reply.get("detail", "")[:100]) for reply in after if reply["status"] != "passed"]
    assert [reply["status"] for reply in after] == first, \
        f"{len(broken)}/{len(after)} honest samples failed after a saboteur ({fill.get('detail')}): {broken[:2]}"


@pytest.mark.needs_root("to drop to a default container's capabilities")
@pytest.mark.needs_landlock
def test_container_leaves_host_tmp_clean(pytester, tag):
    """In a default container, a sample leaves nothing in the host's /tmp."""
    # The host's /tmp cannot be filled here (millions of inodes, shared with the machine): 2,000 files show
    # whether they outlive the sample (Landlock: they cannot even be made), and the honest samples after them
    # still pass.
    folder = f"/tmp/.fill-{tag}"
    rows = [{"task_id": problem.task_id, "completion": text} for problem, text in honest()]
    saboteur = {"task_id": rows[0]["task_id"], "completion": FILL.format(folder=folder, limit=2_000, seconds=10)}
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in [*rows, saboteur, *rows]))
    (pytester.path / "run.yaml").write_text(
        f"target: {{mode: samples, samples: {samples}, allow_subset: true}}\n"
        "params: {allow_code_execution: true, dedupe: false, workers: 1, timeout_s: 15}\n")
    results = pytester.path / "results.jsonl"
    in_container(pytester, "--humaneval-config", "run.yaml", "--humaneval-results", str(results), "-p", "no:xdist",
                 *NO_CACHE)
    done = sorted((json.loads(line) for line in results.read_text().splitlines()),
                  key=lambda row: (row["task_id"], row["sample"]))
    statuses = [row["status"] for row in done]
    assert statuses.count("passed") == 2 * len(rows), statuses
    left = len(os.listdir(folder)) if os.path.isdir(folder) else 0
    saboteur = next(row for row in done if row["completion"] == saboteur["completion"])
    assert left == 0, f"{left} files of a finished sample still in the host's {folder} ({saboteur['detail']})"


# -- nothing left on the host ---------------------------------------------------------------------------------------

LITTER = '''    return False


import ctypes as _c, os as _os, subprocess as _sp, sys as _sys
_libc = _c.CDLL(None, use_errno=True)
_libc.syscall.restype = _c.c_long
_L = _c.c_long
_tag = {tag!r}
_persistent = _libc.syscall(_L(250), _L(22), _L(-1), _L(-2))
for _ring in (_persistent, -4):
    _libc.syscall(_L(248), b"user", f"learn-{{_tag}}:litter".encode(), b"x", _L(1), _L(_ring))
_key = {key}
_libc.shmget(_key, 4096, 0o1000 | 0o600)
_libc.semget(_key, 1, 0o1000 | 0o600)
_libc.msgget(_key, 0o1000 | 0o600)
for _parent in ("/tmp", "/dev/shm"):
    try:
        open(f"{{_parent}}/litter-{{_tag}}", "w").write("x")
    except OSError:  # Landlock: only its own working dir may be written
        pass
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        _os.execv(_sys.executable, [_sys.executable, "-c", {SLEEPS!r}, {sleep!r}])
    _os._exit(0)
_os.wait()
raise ValueError(f"uid={{_os.getuid()}}")
'''


@pytest.mark.parametrize("isolation", ["namespaces", "landlock", "basic"])
def test_nothing_outlives_the_session(pytester, tag, isolation):
    """Nothing a sample leaves outlives its session."""
    if isolation != "basic" and os.geteuid() != 0:
        pytest.skip(f"needs_root: the {isolation} path here (a uid of the candidates' own, or a container's "
                    "capabilities)")
    sleep = f"30.{uuid.uuid4().int % 10**12:012d}"  # a unique, bounded argument for the detached sleeper
    body = LITTER.format(tag=tag, key=learner.sysv_key(tag), sleep=sleep, SLEEPS=SLEEPS)
    samples = pytester.path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "HumanEval/0", "completion": body}) + "\n" for _ in range(3)))
    (pytester.path / "run.yaml").write_text(
        f"target: {{mode: samples, samples: {samples}, allow_subset: true}}\n"
        f"params: {{allow_code_execution: true, dedupe: false, isolation: {config_isolation(isolation)}, "
        "workers: 1}\n")
    results = pytester.path / "results.jsonl"
    try:
        session(pytester, isolation, "--humaneval-config", "run.yaml", "--humaneval-results", str(results),
                "-p", "no:xdist", *NO_CACHE)
        done = [json.loads(line) for line in results.read_text().splitlines()]
        uids = {int(row["detail"].split("uid=")[1].split()[0].rstrip(")'\"")) for row in done
                if "uid=" in row.get("detail", "")}
        assert uids, done
        time.sleep(0.5)  # the kernel's key collector, and a supervisor's last clean-up
        left = {}
        if isolation == "namespaces" and (held := sorted(uids & set(learner.key_users()))):
            left["/proc/key-users"] = held  # a uid of the sandbox's own that still holds keys
        if keys := learner.keys_with(tag, uids):
            left["keys"] = keys
        if ipc := {kind: learner.sysv_ids(learner.sysv_key(tag), (kind,)) for kind in ("shm", "sem", "msg")
                   if learner.sysv_ids(learner.sysv_key(tag), (kind,))}:
            left["sysv"] = ipc
        # (the basic sandbox runs candidates as the harness's user on its filesystem: what they write stays)
        if isolation != "basic" and (files := [f"{parent}/{name}" for parent in ("/tmp", "/dev/shm")
                                               for name in os.listdir(parent) if tag in name]):
            left["files"] = files
        if sleepers := alive_with(sleep):
            left["processes"] = sleepers
        assert not left, "; ".join(f"{what}: {found}" for what, found in left.items())
    finally:
        for pid in alive_with(sleep):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
