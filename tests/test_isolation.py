"""The threats the sandbox must defeat, each attempted for real and bounded (loops, forks, time, temp dirs).

Programs that would be dangerous outside namespaces (signalling every visible pid) run only when the
sandbox reports namespace isolation, and check for themselves that they are in their own PID namespace.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import nobody
import pytest
from hunter import TECHNIQUES, completion
from procs import alive_with, marker, sleeper
from programs import CLOSED_FOLDERS, HOLD_UNCOUNTED_MEMORY, HONEST_ITEMS, LARGE_ITEMS, sample, script

from pytest_humaneval import sandbox
from pytest_humaneval.data.dataset import bundled_path, load_problems
from pytest_humaneval.sandbox import Limits, Program, Sandbox, SandboxError, Status

FAST = Limits(timeout_s=2.0)
CANARY = f"canary-{uuid.uuid4()}"


@pytest.fixture(scope="module")
def box():
    # The canary is in the harness's environment when the supervisor starts.
    os.environ["HUMANEVAL_TEST_CANARY_API_KEY"] = CANARY
    try:
        box = Sandbox("auto").start()
    finally:
        del os.environ["HUMANEVAL_TEST_CANARY_API_KEY"]
    yield box
    box.close()


@pytest.fixture
def isolated(box):
    if not box.isolation.startswith("namespaces"):
        pytest.skip(f"needs_namespaces: the sandbox started without namespace isolation: {box.isolation_reason}")
    return box


@pytest.mark.needs_root
@pytest.mark.needs_namespaces
def test_root_gets_namespaces(box):
    """A harness running as root gets namespace isolation."""
    if os.geteuid() != 0:
        pytest.skip("needs_root: the namespace path needs root here")
    assert box.isolation == "namespaces", box.isolation_reason


# -- 1. reading secrets --------------------------------------------------------------------------------------

@pytest.mark.needs_namespaces
def test_harness_secret_is_unreachable(isolated):
    """A candidate cannot find the harness's secret anywhere it can look."""
    harness = os.getpid()
    program = f"""
import ctypes, os
canary = {CANARY!r}.encode()
found, looked = [], 0
try:
    entries = os.listdir('/proc')
except PermissionError:  # Landlock: the candidate may not read /proc at all
    entries = None
for entry in entries or ():
    if not entry.isdigit():
        continue
    for name in ('environ', 'cmdline'):
        try:
            looked += 1
            if canary in open(f'/proc/{{entry}}/{{name}}', 'rb').read():
                found.append((entry, name))
        except OSError:
            pass
for pid in (1, os.getppid(), {harness}):
    try:
        with open(f'/proc/{{pid}}/mem', 'rb') as mem:
            mem.read(1)
        found.append((pid, 'mem opened'))
    except OSError:
        pass
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH = 16
for pid in (1, {harness}):
    if libc.ptrace(PTRACE_ATTACH, pid, 0, 0) == 0:
        found.append((pid, 'ptrace attached'))
if entries is not None:
    assert canary not in open('/proc/self/environ', 'rb').read()
    assert looked > 0
assert not any(canary.decode() in v for v in os.environ.values())
assert not found, found
print(None if entries is None else sorted(int(e) for e in entries if e.isdigit()))
"""
    result = isolated.run(script(program), FAST)
    assert result.status is Status.PASSED, result.detail
    visible = eval(result.stdout)
    if visible is None:
        assert isolated.confinement.startswith("landlock"), "only Landlock keeps /proc unread"
    else:  # its own /proc, in which processes it may not trace (the fork server) are hidden
        assert len(visible) <= 2 and 1 not in visible, visible
        assert harness not in visible or harness <= 3


# -- 2. network ----------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.needs_namespaces
def test_no_connection_even_to_loopback(isolated):
    """A candidate cannot connect, even to loopback."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted = []

    def accept() -> None:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        result = isolated.run(
            script(f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"), FAST)
    finally:
        thread.join()
        server.close()
    assert result.status is Status.RUNTIME_ERROR
    # PermissionError: Landlock refuses the connect; without it, the empty network namespace has no route.
    assert any(word in result.detail for word in ("OSError", "PermissionError", "unreachable")), result.detail
    assert accepted == []


# -- 3. escaping the kill ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_every_escaped_process_is_gone(box):
    """A double-forked setsid grandchild, fifty sleepers and a SIGTERM ignorer are all gone."""
    mark = marker()
    program = f"""
import os, signal, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        {sleeper(mark)}
    os._exit(0)
for _ in range(50):
    if os.fork() == 0:
        {sleeper(mark)}
signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    pass
"""
    result = box.run(script(program), FAST)
    assert result.status is Status.TIMEOUT
    assert alive_with(mark) == []


# -- 4. attacking the harness --------------------------------------------------------------------------------

@pytest.mark.needs_namespaces
def test_signals_leave_the_harness_working(isolated):
    """Signalling the supervisor, its group and every visible pid leaves the harness working."""
    program = """
import os, signal
if os.getppid() != 1:
    raise SystemExit('refusing: not inside a private PID namespace')
for target in (os.getppid(), 1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
try:
    entries = os.listdir('/proc')
except PermissionError:  # Landlock: /proc unread; every pid of the namespace is tried instead
    entries = [str(pid) for pid in range(1, 64)]
for entry in entries:
    if entry.isdigit() and int(entry) != os.getpid():
        try:
            os.kill(int(entry), signal.SIGKILL)
        except OSError:
            pass
os.killpg(0, signal.SIGKILL)
"""
    result = isolated.run(script(program), FAST)
    assert result.status is Status.RUNTIME_ERROR
    assert "SIGKILL" in result.detail
    for _ in range(3):
        assert isolated.run(script("assert sum(range(10)) == 45"), FAST).status is Status.PASSED


# -- 5. faking the verdict -----------------------------------------------------------------------------------

RIGGED = {
    "eq_always_true": "class R:\n    def __eq__(self, other):\n        return True\n",
    "ne_always_false": "class R:\n    def __eq__(self, other):\n        return True\n"
                       "    def __ne__(self, other):\n        return False\n",
    "int_subclass": "class R(int):\n    def __eq__(self, other):\n        return True\n"
                    "    def __new__(cls, *a):\n        return int.__new__(cls, 7)\n",
    "list_subclass": "class R(list):\n    def __eq__(self, other):\n        return True\n",
    "str_subclass": "class R(str):\n    def __eq__(self, other):\n        return True\n",
    "fake_class": "class R:\n    __class__ = property(lambda self: int)\n"
                  "    def __eq__(self, other):\n        return True\n",
}


@pytest.mark.parametrize("rig", sorted(RIGGED))
def test_rigged_comparison_never_passes(box, rig):
    """A returned object with a rigged comparison never passes."""
    completion = "def f(x):\n" + "".join("    " + line + "\n" for line in RIGGED[rig].splitlines()) + \
        "    return R()\n"
    test = ("def check(candidate):\n    assert candidate(1) == 42\n    assert not (candidate(1) != 42)\n"
            "    assert candidate(2) == [1, 2, 3]\n")
    result = box.run(sample(completion, test), FAST)
    assert result.status is not Status.PASSED
    assert result.status in (Status.RUNTIME_ERROR, Status.ASSERTION_FAILED)


def test_rigged_value_says_why(box):
    """A rigged value is a runtime error that says why."""
    result = box.run(sample("def f(x):\n    class R:\n        def __eq__(self, o):\n            return True\n"
                            "    return R()\n", "def check(candidate):\n    assert candidate(1) == 2\n"), FAST)
    assert result.status is Status.RUNTIME_ERROR
    assert "plain values only" in result.detail and "R" in result.detail


def test_rigged_generator_items_never_pass(box):
    """Rigged items inside a returned generator never pass."""
    completion = ("class R:\n    def __eq__(self, o):\n        return True\n"
                  "def f(x):\n    return (R() for _ in range(3))\n")
    result = box.run(sample(completion, "def check(candidate):\n    assert tuple(candidate(1)) == (1, 2, 3)\n"), FAST)
    assert result.status is Status.RUNTIME_ERROR


@pytest.mark.parametrize("attack", [
    "import builtins\nbuiltins.AssertionError = type('Fake', (Exception,), {})\n",
    "import builtins\nbuiltins.abs = lambda x: 0\n",
    # Same values in the same order, two names swapped: `abs` becomes `callable` (callable(-3) < 1e-6 holds).
    "import builtins\nd, Z, L = builtins.__dict__, zip, list\nitems = L(d.items())\n"
    "tail = items[[k for k, _ in items].index('abs'):]\nnames = [k for k, _ in tail]\n"
    "a, c = names.index('abs'), names.index('callable')\nnames[a], names[c] = names[c], names[a]\n"
    "for k, _ in tail:\n    del d[k]\nfor k, (_, v) in Z(names, tail):\n    d[k] = v\n",
])
def test_patching_builtins_does_not_help(box, attack):
    """Patching builtins during the call does not help."""
    body = "".join("    " + line + "\n" for line in attack.splitlines())
    # the call comes first: `abs` is looked up after the candidate had its chance to rebind it
    result = box.run(sample(f"def f(x):\n{body}    return x + 1\n",
                            "def check(candidate):\n    got = candidate(1)\n    assert abs(got - 5) < 1e-6\n"), FAST)
    assert result.status is Status.ASSERTION_FAILED


# -- 6. exhausting the host ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("program", "detail"), [
    ("import os, time\npids = []\nfor _ in range(200):\n    pid = os.fork()\n    if pid == 0:\n"
     "        time.sleep(5)\n        os._exit(0)\n    pids.append(pid)\n", "BlockingIOError"),
    ("fds = [open('/dev/null') for _ in range(100_000)]", "Too many open files"),
    ("with open('bomb.bin', 'wb') as f:\n    for _ in range(1000):\n        f.write(b'x' * 1024 * 1024)",
     "File too large"),
    # A C stack overflow: a segfault up to Python 3.11; from 3.12 the interpreter guards its C stack itself.
    ("import sys\nsys.setrecursionlimit(10**8)\nx = []\nfor _ in range(10**6):\n    x = [x]\nrepr(x)",
     "SIGSEGV" if sys.version_info < (3, 12) else "RecursionError"),
    ("x = ' ' * (8 * 1024**3)", "MemoryError"),
])
@pytest.mark.slow
def test_resource_exhaustion_is_a_failure(box, program, detail):
    """Resource exhaustion ends as a failure with a clear detail."""
    if "fork" in program and not box.isolation.startswith("namespaces"):
        pytest.skip("needs_namespaces: the process-count limit needs a uid of the sandbox's own")
    result = box.run(script(program), Limits(timeout_s=10.0))
    assert result.status is Status.RUNTIME_ERROR, result
    assert detail in result.detail
    assert box.run(script("assert 2 + 2 == 4"), FAST).status is Status.PASSED


# -- 7. writing outside its working dir ----------------------------------------------------------------------

@pytest.mark.needs_namespaces
def test_candidate_writes_nothing_outside(isolated):
    """A candidate cannot write the harness's files, project trees or other folders."""
    outside = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="humaneval-test-"))
    try:
        outside.chmod(0o755)
        harness_file = outside / "harness.txt"
        harness_file.write_text("original")
        program = f"""
attempts = {{
    'new file in a root-owned folder': lambda: open({str(outside / 'planted.txt')!r}, 'w'),
    'append to a harness file': lambda: open({str(harness_file)!r}, 'a'),
    'open the bundled dataset for append': lambda: open({str(bundled_path())!r}, 'ab'),
    "list the supervisor's folder of samples": lambda: __import__('os').listdir('/tmp/humaneval'),
}}
opened = []
for name, attempt in attempts.items():
    try:
        handle = attempt()
    except OSError:
        continue
    opened.append(name)
    if hasattr(handle, 'close'):
        handle.close()
assert not opened, opened
open('mine.txt', 'w').write('own working dir is writable')
"""
        result = isolated.run(script(program), FAST)
        assert result.status is Status.PASSED, result.detail
        assert harness_file.read_text() == "original"
        assert sorted(p.name for p in outside.iterdir()) == ["harness.txt"]
    finally:
        for path in outside.iterdir():
            path.unlink()
        outside.rmdir()


# -- modes -------------------------------------------------------------------------------------------------

def test_basic_and_strict_modes_as_root():
    """The basic mode skips namespaces, and strict gets them as root."""
    basic = Sandbox("basic").start()
    try:
        assert basic.isolation == "basic" and "basic" in basic.isolation_reason
    finally:
        basic.close()
    if os.geteuid() == 0:
        strict = Sandbox("strict").start()
        assert strict.isolation == "namespaces"
        strict.close()
    with pytest.raises(ValueError, match="isolation must be one of"):
        Sandbox("paranoid")


def test_strict_refuses_basic_isolation(monkeypatch):
    """The strict mode refuses a supervisor that could only isolate basically."""
    # The supervisor's own fallback is exercised by basic mode above; here the client's rule: strict accepts
    # nothing but namespaces or Landlock (the isolations that hide the tests), whatever the supervisor could do.
    real_receive = sandbox.harness._receive

    def supervisor_reports_basic(proc, timeout_s):
        reply = real_receive(proc, timeout_s)
        if reply.get("ready"):
            reply.update(isolation="basic", reason="unshare() refused: Operation not permitted")
        return reply

    monkeypatch.setattr(sandbox.harness, "_receive", supervisor_reports_basic)
    with pytest.raises(SandboxError, match="isolation strict needs namespaces or Landlock.*unshare"):
        Sandbox("strict").start()


# -- semantics stay the reference's --------------------------------------------------------------------------

def test_isolated_samples_import_packages(box):
    """Isolated samples still import the standard library and site-packages."""
    program = ("import math, re, hashlib, itertools, collections, json, yaml\n"
               "assert math.gcd(12, 18) == 6 and re.findall(r'\\d', 'a1b2') == ['1', '2']\n"
               "assert hashlib.md5(b'x').hexdigest().startswith('9dd4')\n"
               "assert list(itertools.islice(itertools.count(), 3)) == [0, 1, 2]\n")
    result = box.run(script(program), FAST)
    assert result.status is Status.PASSED, result.detail


# -- the unprivileged path: a harness that is not root, with user namespaces ---------------------------------

@pytest.fixture
def unprivileged():
    """A supervisor started as `nobody`, with unprivileged user namespaces (``nobody.py``)."""
    if nobody.unavailable():
        pytest.skip(f"needs_root and needs_system_python: {nobody.unavailable()}")
    with nobody.supervisor() as (ready, run):
        if ready.get("isolation") != "namespaces-userns":
            pytest.skip(f"needs_userns: unprivileged user namespaces are not available here: {ready.get('reason')}")
        yield run


@pytest.mark.needs_root
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
def test_without_root_isolation(unprivileged):
    """Without root, candidates get no capabilities, a read-only view and no network."""
    outside = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="humaneval-test-"))
    try:
        os.chown(outside, 65534, 65534)  # writable by the harness's user, as a project tree would be
        program = f"""
import ctypes, os, signal, socket
libc = ctypes.CDLL(None, use_errno=True)
problems = []
try:
    open({str(outside / 'planted.txt')!r}, 'w')
    problems.append('wrote into a folder the harness user owns')
except OSError:
    pass
try:
    socket.create_connection(('127.0.0.1', 9), timeout=1)
    problems.append('connected')
except OSError:
    pass
header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # capget(2): /proc may not be readable (Landlock)
caps = (ctypes.c_uint32 * 6)()
assert libc.capget(header, caps) == 0
if caps[0] or caps[3]:  # effective, low and high words
    problems.append('capabilities left')
if libc.umount2(b'/tmp', 2) == 0:
    problems.append('unmounted its /tmp')
if libc.ptrace(16, 1, 0, 0) == 0:
    problems.append('ptrace-attached the supervisor')
try:
    os.kill(1, signal.SIGKILL)
except OSError:
    pass
open('mine.txt', 'w').write('its own working dir is writable')
assert not problems, problems
"""
        result = unprivileged(program)
        assert result["status"] == "passed", result
        assert list(outside.iterdir()) == []
        assert unprivileged("import math\nassert math.gcd(4, 6) == 2")["status"] == "passed"
        storm = unprivileged("import os, time\nfor _ in range(200):\n    if os.fork() == 0:\n"
                             "        time.sleep(3)\n        os._exit(0)\n")
        assert storm["status"] == "runtime_error" and "BlockingIOError" in storm["detail"]
    finally:
        for path in outside.iterdir():
            path.unlink()
        outside.rmdir()


@pytest.mark.needs_root
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
def test_without_root_fork_server_is_safe(unprivileged):
    """Without root, a candidate cannot change its fork server."""
    # The candidate shares the supervisor's uid here, so the kernel alone would let it lower the limits of the
    # fork server that made it (PID 1 of its namespace, the only process of the sandbox it can see). Its seccomp filter allows prlimit on itself only: the attempt fails in the program, and the supervisor
    # goes on. (Where the filter is not applied, the fork server's own check would fail the sample and retire.)
    reply = unprivileged("import resource\nresource.prlimit(1, resource.RLIMIT_FSIZE, (1024, 1024))\n")
    assert reply["status"] == "runtime_error" and "PermissionError" in reply["detail"], reply
    assert unprivileged("open('f', 'w').write('x' * 4096)")["status"] == "passed"



@pytest.mark.needs_root
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
def test_without_root_hunters_score_0(unprivileged):
    """Without root, completions that hunt for their answer key score 0."""
    # The candidate shares the harness's uid here, so file permissions protect nothing: only what its root shows
    # does. A copy of the dataset sits beside this checkout, readable by everyone, as a CI workspace's would.
    workspace = Path(tempfile.mkdtemp(dir=Path(__file__).resolve().parents[1], prefix=".humaneval-attack-"))
    try:
        workspace.chmod(0o755)
        copy = workspace / "HumanEval.jsonl.gz"
        copy.write_bytes(bundled_path().read_bytes())
        copy.chmod(0o644)
        passed = {}
        for problem in load_problems()[1][:3]:
            for technique in TECHNIQUES:
                reply = unprivileged(Program(problem.prompt, completion(technique), problem.test,
                                             problem.entry_point), timeout_s=10.0)
                passed[technique] = passed.get(technique, 0) + (reply["status"] == "passed")
        assert passed == dict.fromkeys(TECHNIQUES, 0)
    finally:
        shutil.rmtree(workspace)


@pytest.mark.needs_root
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
def test_no_cgroup_memory_limit_holds(unprivileged):
    """Without a cgroup, memfds and /tmp files stay within the memory limit."""
    # No cgroup counts the sample's memory here (nobody cannot make one): its limit is RLIMIT_AS per process,
    # which counts neither memfds nor tmpfs files (its working dir is on /tmp's tmpfs). 40 memfds of 16 MiB used to pass a 256 MiB limit.
    program = """
import errno, os
try:
    os.memfd_create('m')
    raise AssertionError('memfd_create worked')
except OSError as exc:
    assert exc.errno == errno.ENOSYS, exc
written = 0
try:
    for n in range(40):
        with open(f'fill{n}', 'wb') as f:
            for _ in range(15):
                f.write(b'x' * (1 << 20))
                written += 1
except OSError as exc:
    assert exc.errno == errno.ENOSPC, exc
assert written <= 256, written
"""
    reply = unprivileged(program, timeout_s=20.0, memory_mb=256)
    assert reply["status"] == "passed", reply["detail"]
    assert unprivileged("open('f', 'w').write('x' * (4 << 20))")["status"] == "passed"


@pytest.mark.needs_root
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
def test_without_root_closed_folders_are_removed(unprivileged):
    """Without root, folders a candidate made unlistable are emptied after its sample."""
    reply = unprivileged(CLOSED_FOLDERS)
    assert reply["status"] == "passed", reply["detail"]
    after = unprivileged("import os\nassert os.listdir('.') == [], os.listdir('.')")
    assert after["status"] == "passed", after["detail"]


@pytest.mark.needs_root
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
def test_no_cgroup_judge_memory_is_bounded(unprivileged):
    """Without a cgroup, what the judge pulls from a candidate's generator stays within the sample's limit."""
    from test_plus_judge import suite

    the_suite = suite(([[[1, 2]]], [(2,)]), oracle="set_equal", min_time_limit_s=15.0)
    reply = unprivileged(Program("def f(*args):\n", LARGE_ITEMS, "", "f", the_suite), timeout_s=40.0, memory_mb=128)
    assert reply["status"] == "runtime_error", reply
    assert "took more memory in the judge than the sample's memory limit" in reply["detail"], reply["detail"]
    honest = unprivileged(Program("def f(*args):\n", HONEST_ITEMS, "", "f", the_suite), timeout_s=40.0,
                          memory_mb=128)
    assert honest["status"] == "passed", honest


@pytest.mark.needs_root
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
def test_no_cgroup_secret_memfds_refused(unprivileged):
    """Without a cgroup, no secret memfd holds memory past the limit."""
    # memfd_secret was allowed where memfd_create was refused: 512 MiB held with `memory_mb: 128` (2b2788d).
    reply = unprivileged(HOLD_UNCOUNTED_MEMORY.format(mb=512, limit=128), timeout_s=20.0, memory_mb=128)
    assert reply["status"] == "passed", reply["detail"]
