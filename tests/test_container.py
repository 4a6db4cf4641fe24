"""Where CI really runs: inside a default container, where namespaces are refused, and as a user without them.

``container.py`` reproduces a default ``docker run``'s confinement on this machine (Docker's seccomp rules for a
container without CAP_SYS_ADMIN, and its 14 capabilities), no Docker needed. There the sandbox cannot make
namespaces, and confines each candidate with Landlock instead. Before it (6e0b5ca), the plugin fell back to
the basic sandbox there, and a completion with no solution that found the package with ``find_spec`` and read
its bundled data passed 158 of 164 problems.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import nobody
import pytest
from container import available, in_container
from hunter import TECHNIQUES, completion
from programs import CLOSED_FOLDERS, HOLD_UNCOUNTED_MEMORY, HONEST_ITEMS, LARGE_ITEMS, sample
from sessions import NO_CACHE

from pytest_humaneval.data.dataset import bundled_path, load_problems
from pytest_humaneval.sandbox import Program, _confine

pytestmark = [pytest.mark.needs_root("to drop to a default container's capabilities"), pytest.mark.needs_landlock]
PROBLEMS = 3
MODES = {"serial": ("-p", "no:xdist"), "pool": ("-p", "no:xdist"), "xdist": ("-n", "2")}
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def landlock() -> int:
    why = available()
    if why:
        pytest.skip(f"needs_root: a default container's confinement cannot be made here: {why}")
    abi = _confine.landlock_abi()
    if abi < 1:
        pytest.skip("needs_landlock: the kernel has no Landlock (Linux 5.13+, with landlock among its LSMs)")
    return abi


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_default_container_hunters_score_0(pytester, landlock, mode):
    """In a default container, the hunters score 0 and the canonical solutions pass."""
    folder = Path(tempfile.mkdtemp(dir=HERE.parent, prefix=".humaneval-attack-"))  # outside /tmp, as a workspace
    try:
        folder.chmod(0o755)
        dataset = folder / "HumanEval.jsonl.gz"
        shutil.copy(bundled_path(), dataset)
        rows = []
        for problem in load_problems()[1][:PROBLEMS]:  # a neighbour's passing answer first, then every hunter
            rows.append({"task_id": problem.task_id, "completion": problem.canonical_solution})
            rows += [{"task_id": problem.task_id, "completion": completion(technique)} for technique in TECHNIQUES]
        samples = folder / "samples.jsonl"
        samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
        workers = "1" if mode == "serial" else "null"
        (pytester.path / "run.yaml").write_text(
            f"target: {{mode: samples, samples: {samples}, allow_subset: true}}\ndataset: {dataset}\n"
            f"params: {{allow_code_execution: true, timeout_s: 10, workers: {workers}}}\n")
        results, report = folder / "results.jsonl", folder / "report.json"
        result = in_container(pytester, "--humaneval-config", "run.yaml", "--humaneval-results", str(results),
                               "--humaneval-report", str(report), *MODES[mode], *NO_CACHE)
        assert report.exists(), result.stdout.str()[-3000:]
        assert json.loads(report.read_text())["run"]["isolation"] == "landlock"
        found: dict = {}
        for row in map(json.loads, results.read_text().splitlines()):
            technique = "canonical" if row["sample"] == 0 else TECHNIQUES[row["sample"] - 1]
            found.setdefault(technique, []).append(row["status"])
        assert found.pop("canonical") == ["passed"] * PROBLEMS
        assert {technique: statuses.count("passed") for technique, statuses in found.items()} == \
            dict.fromkeys(TECHNIQUES, 0), found
    finally:
        shutil.rmtree(folder)


@pytest.mark.slow
def test_default_container_passes_strict(pytester, landlock):
    """In a default container, the reference run passes under strict."""
    # The shipped CI starters ask for strict: in a container, Landlock meets it.
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\nparams: {execute: true, isolation: strict}\n")
    result = in_container(pytester, "--humaneval-config", "run.yaml", "--humaneval-report", "report.json",
                           "-p", "no:xdist", *NO_CACHE)
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["counts"]["passed"] == 164, result.stdout.str()[-3000:]
    assert report["run"]["isolation"] == "landlock"
    assert "landlock ABI" in report["run"]["confinement"]
    result.stdout.fnmatch_lines(["*isolation landlock*"])


@pytest.fixture
def contained_nobody(landlock):
    if nobody.unavailable():
        pytest.skip(f"needs_root and needs_system_python: {nobody.unavailable()}")
    with nobody.supervisor(contained=True) as (ready, run):
        assert ready.get("isolation") == "landlock", ready
        yield run


@pytest.mark.needs_system_python
def test_no_userns_closed_folders_are_removed(contained_nobody):
    """Without root or user namespaces, folders a candidate made unlistable are emptied after its sample."""
    reply = contained_nobody(CLOSED_FOLDERS)
    assert reply["status"] == "passed", reply["detail"]
    after = contained_nobody("import os\nassert os.listdir('.') == [], os.listdir('.')")
    assert after["status"] == "passed", after["detail"]


@pytest.mark.needs_system_python
def test_no_userns_judge_memory_is_bounded(contained_nobody):
    """Without root or user namespaces (no cgroup), what the judge pulls from a generator stays within the limit."""
    from test_plus_judge import suite

    the_suite = suite(([[[1, 2]]], [(2,)]), oracle="set_equal", min_time_limit_s=15.0)
    reply = contained_nobody(Program("def f(*args):\n", LARGE_ITEMS, "", "f", the_suite), timeout_s=40.0,
                             memory_mb=128)
    assert reply["status"] == "runtime_error", reply
    assert "took more memory in the judge than the sample's memory limit" in reply["detail"], reply["detail"]
    honest = contained_nobody(Program("def f(*args):\n", HONEST_ITEMS, "", "f", the_suite), timeout_s=40.0,
                              memory_mb=128)
    assert honest["status"] == "passed", honest


@pytest.mark.needs_system_python
def test_no_userns_secret_memfds_refused(contained_nobody):
    """Without root or user namespaces (no cgroup), no secret memfd holds memory past the limit."""
    # memfd_secret was allowed where memfd_create was refused: 512 MiB held with `memory_mb: 128` (2b2788d).
    reply = contained_nobody(HOLD_UNCOUNTED_MEMORY.format(mb=512, limit=128), timeout_s=20.0, memory_mb=128)
    assert reply["status"] == "passed", reply["detail"]


@pytest.mark.needs_system_python
def test_no_userns_hunters_score_0(contained_nobody):
    """Without root or user namespaces, the hunters score 0 and the canonical solutions pass."""
    problems = load_problems()[1][:PROBLEMS]
    passed = dict.fromkeys(TECHNIQUES, 0)
    for problem in problems:
        honest = contained_nobody(Program(problem.prompt, problem.canonical_solution, problem.test,
                                          problem.entry_point))
        assert honest["status"] == "passed", honest
        for technique in TECHNIQUES:
            reply = contained_nobody(Program(problem.prompt, completion(technique), problem.test,
                                             problem.entry_point), timeout_s=10.0)
            passed[technique] += reply["status"] == "passed"
    assert passed == dict.fromkeys(TECHNIQUES, 0)


@pytest.mark.needs_system_python
def test_no_userns_writes_own_folder_only(contained_nobody):
    """Without root or user namespaces, a candidate writes only its own folder."""
    outside = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="humaneval-test-"))
    try:
        outside.chmod(0o777)  # writable by the harness's user, as a project tree or /tmp is
        program = f"""
import errno, os, socket
problems = []
for place in ({str(outside / 'planted')!r}, '/tmp/humaneval-planted', '/dev/shm/humaneval-planted'):
    try:
        open(place, 'w').close()
        problems.append('wrote ' + place)
    except OSError:
        pass
try:
    socket.create_connection(('127.0.0.1', 9), timeout=1)
    problems.append('connected')
except OSError:
    pass
try:
    os.listdir('/proc')
    problems.append('listed /proc')
except OSError:
    pass
open('mine.txt', 'w').write('its own working dir is writable')
assert not problems, problems
"""
        reply = contained_nobody(sample(program + "\ndef f():\n    return 1\n",
                                        "def check(candidate):\n    assert candidate() == 1\n"))
        assert reply["status"] == "passed", reply
        assert list(outside.iterdir()) == []
    finally:
        shutil.rmtree(outside)


# -- what a second reading of the confinement found (a red-team pass on c2afd1b): each of these carried a value
#    from one sample to the next, or broke the next one, before the seccomp rules that refuse them

CHANNELS = {
    # the fork server's I/O priority, which every later candidate inherits
    "ioprio of the parent": "assert libc.syscall(NR['ioprio_set'], 1, os.getppid(), (2 << 13) | 5) == -1",
    # times, mode and extended attributes of a folder the harness's user owns (the supervisor's, /tmp, ...)
    "utime of ..": "os.utime('..', ns=(123456789 * 10**9, os.stat('..').st_mtime_ns))",
    "xattr of ..": "os.setxattr('..', 'user.left', b'by an earlier sample')",
    "chmod of ..": "os.chmod('..', os.stat('..').st_mode & 0o7777)",
    "xattr of /tmp": "os.setxattr('/tmp', 'user.left', b'by an earlier sample')",
    "chmod of /tmp": "os.chmod('/tmp', 0)",
}
PROLOGUE = ("import ctypes, errno, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "NR = {'ioprio_set': 251 if os.uname().machine == 'x86_64' else 30}\n")


def _refused(attempt: str) -> str:
    """A sample that passes only if ``attempt`` is refused (EPERM, or an assertion of its own)."""
    return (PROLOGUE + "try:\n" + "".join(f"    {line}\n" for line in attempt.splitlines())
            + "except PermissionError:\n    pass\nelse:\n    if not " + repr(attempt.startswith("assert"))
            + ":\n        raise AssertionError('not refused')\n")


@pytest.mark.needs_system_python
@pytest.mark.parametrize("attack", sorted(name for name in CHANNELS if "/tmp" not in name))  # (/tmp is root's here)
def test_no_userns_changes_end_with_sample(contained_nobody, attack):
    """Without root or user namespaces, no metadata or priority change outlives the sample."""
    reply = contained_nobody(sample(_refused(CHANNELS[attack]) + "\ndef f():\n    return 1\n",
                                    "def check(candidate):\n    assert candidate() == 1\n"))
    assert reply["status"] == "passed", reply
    honest = contained_nobody(sample("import tempfile\ntempfile.TemporaryFile().write(b'x')\ndef f():\n    return 1\n",
                                     "def check(candidate):\n    assert candidate() == 1\n"))
    assert honest["status"] == "passed", honest


@pytest.mark.slow
@pytest.mark.needs_root("to start the supervisor as nobody")
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
@pytest.mark.parametrize("attack", ["xattr of /tmp", "chmod of /tmp", "utime of .."])
def test_userns_own_folders_keep_nothing(attack):
    """Under a user namespace, the namespace's own folders keep nothing."""
    # /tmp, /dev/shm and the working dir's parent are owned by the candidate's uid there: their mode, times and
    # attributes survived the emptying after a sample, and chmod 0 of /tmp failed every later sample.
    if nobody.unavailable():
        pytest.skip(f"needs_root and needs_system_python: {nobody.unavailable()}")
    with nobody.supervisor() as (ready, run):
        if ready.get("isolation") != "namespaces-userns":
            pytest.skip(f"needs_userns: {ready.get('reason')}")
        reply = run(sample(_refused(CHANNELS[attack]) + "\ndef f():\n    return 1\n",
                           "def check(candidate):\n    assert candidate() == 1\n"))
        assert reply["status"] == "passed", reply
        honest = run(sample("import tempfile\ntempfile.TemporaryFile().write(b'x')\ndef f():\n    return 1\n",
                            "def check(candidate):\n    assert candidate() == 1\n"))
        assert honest["status"] == "passed", honest


PAGE_CACHE = """
import ctypes, errno, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
path = os.__file__  # a file every sample can read: its pages' residency is shared state
fd = os.open(path, os.O_RDONLY)
try:
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    raise AssertionError('fadvise evicted a shared file')
except OSError as exc:
    assert exc.errno == errno.ENOSYS, exc
view = mmap.mmap(fd, 4096, prot=mmap.PROT_READ)
try:
    view.madvise(21)  # MADV_PAGEOUT: reclaim the mapped pages of the shared file
    raise AssertionError('madvise(PAGEOUT) evicted a shared file')
except OSError as exc:
    assert exc.errno == errno.EPERM, exc
view.madvise(mmap.MADV_DONTNEED)  # the allocator's own advice stays allowed
pages = (ctypes.c_ubyte * 1)()
mincore, cachestat = (27, 451) if os.uname().machine == 'x86_64' else (232, 451)
assert libc.syscall(mincore, None, 4096, pages) == -1 and ctypes.get_errno() == errno.ENOSYS, 'mincore'
assert libc.syscall(cachestat, fd, None, None, 0) == -1 and ctypes.get_errno() == errno.ENOSYS, 'cachestat'
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "landlock", "basic"])
def test_page_cache_not_queried_or_evicted(mode):
    """The page cache can be neither queried nor evicted."""
    # Which pages of a shared file are cached is state every sample can see: the red team carried 16 bits from
    # one sample to the next (and across sessions) by evicting pages with fadvise and timing reads. Eviction
    # and residency queries are refused; what remains (a read caches a page, timing tells) is in docs/safety.md.
    from pytest_humaneval.sandbox import Limits, Sandbox, Status

    if mode == "landlock" and _confine.landlock_abi() < 1:
        pytest.skip("needs_landlock: the kernel has no Landlock")
    box = Sandbox(mode).start()
    try:
        result = box.run(sample(PAGE_CACHE + "\ndef f():\n    return 1\n",
                                "def check(candidate):\n    assert candidate() == 1\n"), Limits(timeout_s=5.0))
        assert result.status is Status.PASSED, result.detail
    finally:
        box.close()


# Each attempt must fail with its errno: inode-flag and attribute writes (which need only ownership), and every way
# to tell or change a page's residency without timing it (issue 42). A program run with a file of the interpreter's
# own (os.py, which every mode shows and the harness's user owns in a venv) and one in its working dir.
CHANNEL_CALLS = """
import ctypes, errno, fcntl, mmap, os, array
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
machine = os.uname().machine
NR = {'x86_64': {'readahead': 187, 'io_setup': 206, 'openat2': 437, 'file_setattr': 469},
      'aarch64': {'readahead': 213, 'io_setup': 0, 'openat2': 437, 'file_setattr': 469}}[machine]
open('mine', 'wb').write(b'x' * 8192)
refused = []
for path in (os.__file__, 'mine'):
    fd = os.open(path, os.O_RDONLY)
    for command in (0x40086602, 0x40046602, 0x401C5820, 0x40087602, 0x40047602, 0x40806685):
        try:
            fcntl.ioctl(fd, command, bytearray(128))
        except OSError as exc:
            refused.append(exc.errno == errno.EPERM or ('ioctl', hex(command), exc.errno))
        else:
            refused.append(('ioctl', hex(command), 'allowed'))
    flags = array.array('l', [0])
    fcntl.ioctl(fd, 0x80086601, flags, True)  # reading the flags stays allowed
    for flag in (os.RWF_NOWAIT, os.RWF_NOWAIT | os.RWF_HIPRI):
        try:
            os.preadv(fd, [bytearray(1)], 0, flag)
        except OSError as exc:
            refused.append(exc.errno == errno.EOPNOTSUPP or ('preadv2', exc.errno))
        else:
            refused.append(('preadv2 RWF_NOWAIT', 'allowed'))
    assert os.preadv(fd, [bytearray(1)], 0, 0) == 1  # a plain preadv2 stays allowed
    for attempt in (lambda: os.open(path, os.O_RDONLY | os.O_DIRECT),
                    lambda: fcntl.fcntl(fd, fcntl.F_SETFL, os.O_DIRECT)):
        try:
            attempt()
        except OSError as exc:
            refused.append(exc.errno == errno.EINVAL or ('O_DIRECT', exc.errno))
        else:
            refused.append(('O_DIRECT', 'allowed'))
    fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK)  # other status flags stay allowed
    view = mmap.mmap(fd, 4096, prot=mmap.PROT_READ)
    for advice in (3, 22, 23):  # WILLNEED, POPULATE_READ, POPULATE_WRITE
        try:
            view.madvise(advice)
        except OSError as exc:
            refused.append(exc.errno in (errno.EPERM,) or ('madvise', advice, exc.errno))
        else:
            refused.append(('madvise', advice, 'allowed'))
    view.madvise(mmap.MADV_RANDOM)
    for name, args, expected in (('readahead', (fd, 0, 4096), errno.ENOSYS), ('io_setup', (1, None), errno.ENOSYS),
                                 ('openat2', (-100, path.encode(), None, 0), errno.ENOSYS),
                                 ('file_setattr', (fd, b'', None, 0, 0), errno.EPERM)):
        result = libc.syscall(NR[name], *args)
        refused.append((result == -1 and ctypes.get_errno() == expected) or (name, result, ctypes.get_errno()))
    os.close(fd)
# Watches on files (inotify, fanotify): ENOSYS, so none can use up the watches the page holder needs
for name, args in (('inotify_init1', (0,)), ('fanotify_init', (0, 0))):
    number = {'x86_64': {'inotify_init1': 294, 'fanotify_init': 300},
              'aarch64': {'inotify_init1': 26, 'fanotify_init': 262}}[machine][name]
    result = libc.syscall(number, *args)
    refused.append((result == -1 and ctypes.get_errno() == errno.ENOSYS) or (name, result, ctypes.get_errno()))
# New namespaces: unshare and clone with a CLONE_NEW* flag and setns EPERM, clone3 ENOSYS (glibc falls back to
# clone); unshare without one, threads, fork and a child interpreter still work
numbers = {'x86_64': {'unshare': 272, 'setns': 308, 'clone': 56, 'clone3': 435},
           'aarch64': {'unshare': 97, 'setns': 268, 'clone': 220, 'clone3': 435}}[machine]
for name, args, expected in (('unshare', (0x10000000 | 0x20000,), errno.EPERM), ('unshare', (0x80,), errno.EPERM),
                             ('unshare', (0x40000000,), errno.EPERM), ('setns', (0, 0), errno.EPERM),
                             ('clone', (0x10000000 | 17, 0, 0, 0, 0), errno.EPERM), ('clone3', (None, 0), errno.ENOSYS)):
    result = libc.syscall(numbers[name], *args)
    refused.append((result == -1 and ctypes.get_errno() == expected) or (name, hex(args[0] or 0), result,
                                                                           ctypes.get_errno()))
refused.append(libc.syscall(numbers['unshare'], 0x200) == 0 or ('unshare(CLONE_FS)', ctypes.get_errno()))
# No pidfd (its inode number counts the machine's processes). No name in the abstract unix socket namespace and no
# descriptor in flight (a socket held by its own queue outlives its sample) where a candidate may not make a socket
# (Landlock, basic); with namespaces, where it may, its fork server sees every one freed before the next sample
import socket
one, other = socket.socketpair()
try:
    socket.socket(socket.AF_UNIX).close()
    drained = True
except OSError:
    drained = False
spare, spare_peer = socket.socketpair()  # where bind and sendmsg are allowed, they work on this one
in_flight = None if drained else errno.EPERM
for name, attempt, expected in (
        ('pidfd_open', lambda: os.pidfd_open(os.getpid()), errno.ENOSYS),
        ('SO_PEERPIDFD', lambda: one.getsockopt(socket.SOL_SOCKET, 77), errno.ENOPROTOOPT),
        ('SO_PASSPIDFD', lambda: one.setsockopt(socket.SOL_SOCKET, 76, 1), errno.ENOPROTOOPT),
        ('bind', lambda: spare.bind(b'\\0pytest-humaneval-probe'), in_flight),
        ('sendmsg', lambda: spare.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [1]))]),
         in_flight),
        ('sendmsg without descriptors', lambda: spare.sendmsg([b'x']), in_flight)):
    try:
        attempt()
    except OSError as exc:
        refused.append(exc.errno == expected or (name, exc.errno))
    else:
        refused.append(expected is None or (name, 'allowed'))
if drained:
    refused.append(len(spare_peer.recvmsg(1, 64)[1]) == 1 or 'the descriptor sent')
result = libc.syscall(numbers['clone'], 0x1000 | 17, 0, 0, 0, 0)  # CLONE_PIDFD
refused.append((result == -1 and ctypes.get_errno() == errno.EPERM) or ('clone(CLONE_PIDFD)', result))
one.send(b'x')
refused.append(other.recv(1) == b'x' or 'socketpair')
one.send(b'y')
refused.append(other.recvmsg(1)[0] == b'y' or 'recvmsg')  # receiving stays allowed
result = libc.syscall({'x86_64': 307, 'aarch64': 269}[machine], one.fileno(), None, 0, 0)  # sendmmsg
refused.append((result == (0 if drained else -1) and (drained or ctypes.get_errno() == errno.EPERM))
               or ('sendmmsg', result, ctypes.get_errno()))
import threading
done = []
thread = threading.Thread(target=done.append, args=(1,))
thread.start()
thread.join()
refused.append(done == [1] or 'thread')
pid = os.fork()
if pid == 0:
    os._exit(3)
refused.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 3 or 'fork')
wrong = [entry for entry in refused if entry is not True]
assert not wrong, wrong
"""


@pytest.mark.parametrize("mode", ["auto", "landlock", "basic"])
def test_inode_flags_and_residency_refused(mode):
    """Inode flags cannot be written, residency cannot be told without timing, no file can be watched, no
    namespace made or joined and no pidfd made, in every mode; no socket name bound and no descriptor sent where a
    candidate may not make a socket (Landlock, basic; with namespaces both work)."""
    from pytest_humaneval.sandbox import Limits, Sandbox, Status

    if mode == "landlock" and _confine.landlock_abi() < 1:
        pytest.skip("needs_landlock: the kernel has no Landlock")
    box = Sandbox(mode).start()
    try:
        result = box.run(sample(CHANNEL_CALLS + "\ndef f():\n    return 1\n",
                                "def check(candidate):\n    assert candidate() == 1\n"), Limits(timeout_s=5.0))
        assert result.status is Status.PASSED, result.detail
    finally:
        box.close()


def test_auto_never_ends_in_basic_unasked(landlock, tmp_path):
    """Where neither namespaces nor Landlock exist (a default container on a kernel without Landlock), ``auto``
    used to end in the basic sandbox without a word, where a completion that read the package's dataset earned
    1.0 through compute_score_batch. Now the Verifier and the adapters refuse it, naming the way to ask for it;
    asked for (isolation="basic" or allow_basic=True) it runs, with a warning, and says so in ``isolation``."""
    import subprocess
    import sys

    code = """
import json, warnings
from pytest_humaneval import Verifier, VerifierError, rewards
found = {}
for name, call in (("verifier", lambda: Verifier("humaneval", workers=1)),
                   ("batch", lambda: rewards.compute_score_batch(["humaneval"], ["x"], ["HumanEval/0"]))):
    try:
        call()
        found[name] = "ran"
    except VerifierError as exc:
        found[name] = str(exc)
for name, options in (("allow_basic", {"allow_basic": True}), ("basic", {"isolation": "basic"})):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Verifier("humaneval", workers=1, **options) as verifier:
            found[name] = [verifier.isolation, [str(w.category.__name__) for w in caught]]
print(json.dumps(found))
"""
    run = subprocess.run([sys.executable, str(HERE / "container.py"), "--no-landlock", "--", sys.executable, "-c",
                          code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    for name in ("verifier", "batch"):
        assert found[name].startswith("Verifier: isolation: auto found neither namespaces nor Landlock here")
        assert found[name].endswith('so it runs only when asked: isolation="basic" or allow_basic=True')
    assert found["allow_basic"] == ["basic", ["RuntimeWarning"]]
    assert found["basic"] == ["basic", ["RuntimeWarning"]]



@pytest.mark.parametrize("allow", [False, True])
def test_a_pytest_run_never_ends_in_basic_unasked(pytester, landlock, allow):
    """The pytest front as the library: ``isolation: auto`` with neither namespaces nor Landlock is a usage error
    naming both ways to ask (it ran in the basic sandbox with a warning only); ``allow_basic: true`` runs there,
    warned and said in the report."""
    import sys

    (pytester.path / "run.yaml").write_text(
        f"target: {{mode: mock}}\nparams: {{execute: true, limit: 2, allow_basic: {str(allow).lower()}}}\n")
    result = pytester.run(sys.executable, str(HERE / "container.py"), "--no-landlock", "--", sys.executable, "-m",
                          "pytest", "--humaneval-config", "run.yaml", "--humaneval-report", "report.json",
                          "-p", "no:xdist", *NO_CACHE, timeout=300)
    if not allow:
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*run.yaml: params.isolation: auto found neither namespaces nor Landlock here*"
                                     "so it runs only when asked: set params.isolation: basic, or "
                                     "params.allow_basic: true"])
        assert not (pytester.path / "report.json").exists()
    else:
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
        result.stdout.fnmatch_lines(["*running candidates in the basic subprocess sandbox*"])
        assert json.loads((pytester.path / "report.json").read_text())["run"]["isolation"] == "basic"


def test_evaluate_names_its_own_flags_for_basic(landlock, tmp_path):
    """evaluate's refusal of an unasked basic sandbox names its flags (--isolation basic, --allow-basic), which
    then run it."""
    import subprocess
    import sys

    problem = load_problems()[1][0]
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": problem.task_id, "completion": problem.canonical_solution}) + "\n")
    command = [sys.executable, str(HERE / "container.py"), "--no-landlock", "--", sys.executable, "-m",
               "pytest_humaneval", "evaluate", "--samples", str(samples), "--allow-subset", "-q"]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert "so it runs only when asked: pass --isolation basic, or --allow-basic" in refused.stdout + refused.stderr
    allowed = subprocess.run([*command, "--allow-basic"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stdout[-2000:] + allowed.stderr[-2000:]
