"""Containment: one sample can no longer crash the run, starve later samples, or reach the host.

Each attack is bounded (loops, forks, sizes, time) and writes only into temporary folders it cleans up by exact
name. The 164-row runs put every attack first, in front of the canonical solutions, on one supervisor: each
canonical sample after it must still pass.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from programs import CLOSED_FOLDERS, sample, script
from sessions import NO_CACHE

from pytest_humaneval import sandbox
from pytest_humaneval.data.dataset import load_problems
from pytest_humaneval.sandbox import Limits, Sandbox, Status, _contain

FAST = Limits(timeout_s=3.0)
ROOT = os.geteuid() == 0

# Each attack as a completion of HumanEval/0 that tries its trick, swallows any error, then answers wrongly.
ATTACKS = {
    "lone_surrogate_and_escapes": "    raise ValueError('bad \\ud800 \\x1b[2J\\x1b]0;owned\\x07\\r=== 164 passed ===')\n",
    "system_exit_flood": "    raise SystemExit('x' * 60000)\n",
    "deep_directories": "    import os\n    for _ in range(1200):\n        os.mkdir('d')\n        os.chdir('d')\n"
                        "    return None\n",
    "limits_of_the_supervisor": "    import os, resource\n"
                                "    for which in (resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE, resource.RLIMIT_STACK):\n"
                                "        try:\n            resource.prlimit(os.getppid(), which, (1024, 1024))\n"
                                "        except (OSError, ValueError):\n            pass\n    return None\n",
    "priority_of_the_supervisor": "    import os\n    try:\n        os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)\n"
                                  "        os.sched_setaffinity(os.getppid(), {0})\n    except OSError:\n        pass\n"
                                  "    return None\n",
    "supervisor_folder_replaced": "    import os\n    try:\n        base = os.path.dirname(os.getcwd())\n"
                                  "        if base.startswith('/tmp/pytest-humaneval-'):\n"
                                  "            os.rename(base, base + '.moved')\n            os.mkdir(base)\n"
                                  "    except OSError:\n        pass\n    return None\n",
    "fill_tmp_and_shm": "    for path in [f'/tmp/fill{n}' for n in range(40)] + ['/dev/shm/fill']:\n        try:\n"
                        "            with open(path, 'wb') as f:\n                for _ in range(15):\n"
                        "                    f.write(b'x' * (1 << 20))\n        except OSError:\n            pass\n"
                        "    return None\n",
    "sysv_shared_memory": "    import ctypes\n    libc = ctypes.CDLL(None)\n"
                          "    for key in range(0x4855, 0x4855 + 4):\n        libc.shmget(key, 1 << 20, 0o1666)\n"
                          "    return None\n",
    "host_tmp_folders": "    for path in ('/var/tmp/PLANTED', '/run/lock/PLANTED'):\n        try:\n"
                        "            open(path, 'w').write('x')\n        except OSError:\n            pass\n    return None\n",
}
PLANTED = f"humaneval-planted-{uuid.uuid4().hex}"  # the one name the attack above may leave on the host


def _rows() -> list[dict]:
    problems = load_problems()[1]
    rows = [{"task_id": "HumanEval/0", "completion": text.replace("PLANTED", PLANTED)} for text in ATTACKS.values()]
    return rows + [{"task_id": p.task_id, "completion": p.canonical_solution} for p in problems]


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["auto", "basic"])
def test_attacks_then_canonicals_pass(pytester, isolation):
    """Every attack first, and the canonical solutions after it still pass."""
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in _rows()))
    (pytester.path / "humaneval.yaml").write_text(
        "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
        f"params: {{allow_code_execution: true, isolation: {isolation}, k: [1]}}\n")
    result = pytester.runpytest("--humaneval-config", "humaneval.yaml", "-p", "no:xdist",
                                "--humaneval-results", "results.jsonl", *NO_CACHE)
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    attacks = {row["sample"]: row for row in rows if row["task_id"] == "HumanEval/0" and row["sample"] < len(ATTACKS)}
    canonical = [row for row in rows if not (row["task_id"] == "HumanEval/0" and row["sample"] < len(ATTACKS))]
    assert [row["task_id"] for row in canonical if row["status"] != "passed"] == []
    assert len(canonical) == 164
    for index, name in enumerate(ATTACKS):
        assert attacks[index]["status"] != "passed", name
        assert len(attacks[index]["detail"]) <= sandbox.DETAIL_MAX, name
    text = result.stdout.str()
    assert "\x1b" not in text and "\r" not in text
    planted = [Path(place, PLANTED) for place in ("/var/tmp", "/run/lock") if Path(place, PLANTED).exists()]
    for path in planted:  # the basic sandbox runs candidates as this user, on the host's folders
        path.unlink()
    assert planted == [] or isolation == "basic"


@pytest.mark.slow
def test_surrogate_and_escapes_keep_xdist(pytester):
    """A lone surrogate and terminal escapes do not break an xdist run."""
    rows = [{"task_id": "HumanEval/0", "completion": ATTACKS["lone_surrogate_and_escapes"]}] + [
        {"task_id": p.task_id, "completion": p.canonical_solution} for p in load_problems()[1][:20]]
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "humaneval.yaml").write_text(
        "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "humaneval.yaml", "-n", "2", "--junitxml", "junit.xml",
                                "--humaneval-report", "report.json", *NO_CACHE)
    result.assert_outcomes(passed=20, failed=1)
    assert json.loads((pytester.path / "report.json").read_text())["coverage"] == 1.0
    assert "\x1b" not in (pytester.path / "junit.xml").read_text()


@pytest.fixture
def basic():
    box = Sandbox("basic").start()
    yield box
    box.close()


@pytest.mark.slow
def test_deep_directory_is_removed(basic):
    """A deep directory is removed and the next sample passes."""
    deep = basic.run(script("import os\nfor _ in range(1200):\n    os.mkdir('d')\n    os.chdir('d')\n"), FAST)
    assert deep.status is Status.PASSED, deep.detail
    after = basic.run(script("import os\nassert os.listdir('.') == []"), FAST)
    assert after.status is Status.PASSED, after.detail


@pytest.mark.needs_root("to make the folders as nobody, who cannot override their modes")
def test_closed_folders_are_removed_without_privilege():
    """Without privilege, a tree whose folders were made unlistable (0300) or closed (0000) is removed whole."""
    # What a non-root harness removes at the end of a sample and when it closes (its base folder under /tmp):
    # on 2b2788d a 0300 folder could not be listed, nor a 0000 one moved, and both stayed on the host.
    folder = tempfile.mkdtemp(dir="/var/tmp", prefix="humaneval-test-")
    try:
        os.chown(folder, 65534, 65534)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                os.mkdir(os.path.join(folder, "work"))
                os.chdir(os.path.join(folder, "work"))
                exec(CLOSED_FOLDERS, {})
                os.chdir("/")
                code = 0 if _contain.remove_tree(os.path.join(folder, "work")) else 2
            finally:
                os._exit(code)
        assert os.waitpid(pid, 0)[1] == 0, "remove_tree left the tree (exit 2), or the set-up failed (1)"
        assert os.listdir(folder) == []
    finally:
        shutil.rmtree(folder)  # as root


@pytest.mark.parametrize("attack", [
    "resource.prlimit(os.getppid(), resource.RLIMIT_FSIZE, (1024, 1024))",
    "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (16, 16))",
    "os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)",
    "os.sched_setaffinity(os.getppid(), {min(os.sched_getaffinity(0))})",
])
def test_supervisor_change_voids_one_sample(attack):
    """Changing the supervisor voids that sample only."""
    if os.cpu_count() == 1 and "affinity" in attack:
        pytest.skip("one CPU: nothing to pin")
    box = Sandbox("basic").start()  # the candidate shares the supervisor's uid here
    hit = box.run(script(f"import os, resource\n{attack}\n"), FAST)
    assert hit.status is Status.RUNTIME_ERROR, hit
    if "Operation not permitted" not in hit.detail:  # where the seccomp filter is not applied (another machine)
        # The program reached the supervisor: its own failure (not the harness's), which says what it did.
        assert "the program changed the sandbox" in hit.detail and "own state" in hit.detail, hit
    else:
        # The candidate's seccomp filter allows prlimit, setpriority and sched_setaffinity on itself only (and
        # as root, without capabilities, the kernel refuses the last two anyway): it fails in the program.
        assert "PermissionError" in hit.detail, hit
    try:
        for _ in range(3):  # the next samples run in a fresh supervisor, with the limits they should have
            after = box.run(script("import os\nopen('f', 'w').write('x' * 4096)\nassert len(os.listdir('.')) == 1"),
                            FAST)
            assert after.status is Status.PASSED, after.detail
    finally:
        box.close()


def test_setup_failure_is_the_sandboxs(monkeypatch):
    """A set-up failure is the sandbox's, not the program's."""
    box = Sandbox("basic").start()
    try:
        # As if the supervisor's limits had been lowered under the candidate's: its set-up fails before the
        # program starts (file_size_mb above any hard limit the supervisor could have: refused).
        with pytest.raises(sandbox.SandboxError, match="could not set up"):
            box.run(script("pass"), Limits(timeout_s=3.0, open_files=1 << 30))
        assert box.run(script("pass"), FAST).status is Status.PASSED
    finally:
        box.close()


@pytest.fixture
def namespaced():
    box = Sandbox("auto").start()
    if not box.isolation.startswith("namespaces"):
        box.close()
        pytest.skip(f"needs_namespaces: the sandbox started without namespace isolation: {box.isolation_reason}")
    yield box
    box.close()


@pytest.mark.slow
@pytest.mark.needs_namespaces
def test_fresh_tmp_shm_and_ipc(namespaced):
    """Each sample gets a fresh /tmp, /dev/shm and IPC namespace."""
    # SysV IPC is refused outright (seccomp: ENOSYS, as on a kernel without it); files may be written in the
    # sample's own working dir only (Landlock: not even a shared folder's times change), and where Landlock is
    # missing, /tmp and /dev/shm are emptied after each sample.
    landlock = namespaced.confinement.startswith("landlock")
    first = namespaced.run(script(
        "import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "assert libc.shmget(0x4856, 4096, 0o1666) == -1 and ctypes.get_errno() == errno.ENOSYS\n"
        "for path in ('/tmp/left', '/dev/shm/left'):\n    try:\n        open(path, 'w').write('x')\n"
        f"        assert not {landlock}, 'wrote ' + path\n    except PermissionError:\n        assert {landlock}\n"
        "open('mine', 'w').write('x')\n"), FAST)
    assert first.status is Status.PASSED, first.detail
    second = namespaced.run(script(
        "import ctypes, os\nassert not os.path.exists('/tmp/left') and not os.path.exists('/dev/shm/left')\n"
        "assert os.listdir('.') == []\n"), FAST)
    assert second.status is Status.PASSED, second.detail
    # Fill its working dir until it refuses (a tmpfs of its own, half the sample's memory limit: 1 GiB): the next
    # sample has all of it again.
    filled = namespaced.run(script("import errno\ntry:\n    for n in range(80):\n"
                                   "        with open(f'fill{n}', 'wb') as f:\n            for _ in range(15):\n"
                                   "                f.write(b'x' * (1 << 20))\nexcept OSError as exc:\n"
                                   "    assert exc.errno == errno.ENOSPC, exc\nelse:\n    raise AssertionError('not full')\n"),
                            Limits(timeout_s=20.0, memory_mb=2048))
    assert filled.status is Status.PASSED, filled.detail
    assert namespaced.run(script("open('f', 'w').write('x' * (4 << 20))"), FAST).status is Status.PASSED


@pytest.mark.needs_namespaces
def test_host_is_out_of_reach(namespaced, tmp_path):
    """The host's folders, sockets and accounts are out of reach."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="humaneval-test-"))
    folder.chmod(0o755)
    path = folder / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o777)
    server.listen(1)
    box = Sandbox("auto").start()  # started after the socket was bound, as a host service would be
    planted = f"humaneval-planted-{uuid.uuid4().hex}"
    try:
        program = f"""
import os, pwd, socket
problems = []
for place in ('/var/tmp', '/run', '/run/lock', '/var/lock'):
    try:
        open(os.path.join(place, {planted!r}), 'w').close()
        problems.append('wrote into ' + place)
    except OSError:
        pass
try:
    socket.socket(socket.AF_UNIX).connect({str(path)!r})
    problems.append('connected to a host socket')
except OSError:
    pass
try:
    pwd.getpwuid(os.getuid())
    problems.append('runs as an existing account')
except KeyError:
    pass
assert not problems, problems
"""
        result = box.run(script(program), FAST)
        assert result.status is Status.PASSED, result.detail
        for place in ("/var/tmp", "/run", "/run/lock"):
            assert not os.path.exists(os.path.join(place, planted))
        assert "no passwd or group entry" in box.ids
    finally:
        box.close()
        server.close()
        path.unlink()
        folder.rmdir()


SYS_ADD_KEY = {"x86_64": 248, "aarch64": 217}.get(os.uname().machine)


@pytest.mark.skipif(SYS_ADD_KEY is None, reason="add_key's syscall number is not known here")
@pytest.mark.parametrize("isolation", ["auto", "basic"])
def test_session_keyring_not_inherited(isolation):
    """The harness's session keyring is not inherited."""
    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = _contain.SYS_KEYCTL[os.uname().machine]
    canary = f"humaneval-canary-{uuid.uuid4().hex}"
    serial = libc.syscall(SYS_ADD_KEY, b"user", canary.encode(), b"secret", 6, ctypes.c_int(-3))
    if serial < 0:
        pytest.skip(f"no session keyring to add to: {os.strerror(ctypes.get_errno())}")
    box = Sandbox(isolation).start()
    try:
        program = f"""
import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(65536)
size = libc.syscall({keyctl}, 11, ctypes.c_int(-3), buf, 65536)  # read the session keyring
serials = struct.unpack(f'{{size // 4}}i', buf.raw[:size]) if size > 0 else ()
for key in (*serials, {serial}):
    if libc.syscall({keyctl}, 6, ctypes.c_int(key), buf, 65536) > 0:  # describe
        assert {canary!r}.encode() not in buf.value, 'found the canary'
assert libc.syscall({keyctl}, 11, ctypes.c_int({serial}), buf, 65536) < 0, 'read the canary'
"""
        result = box.run(script(program), FAST)
        if box.isolation == "basic" and ROOT:
            pass  # root without namespaces: the candidate is root and may read any key; the README says so
        else:
            assert result.status is Status.PASSED, result.detail
        assert box.isolation != "basic" or "keyring" not in box.isolation_reason
    finally:
        box.close()
        libc.syscall(keyctl, 21, ctypes.c_int(serial))  # invalidate the canary


def test_free_ids_avoid_used_ranges(monkeypatch, tmp_path):
    """Free ids come from the top of the map and avoid accounts and subordinate ranges."""
    maps = tmp_path / "uid_map"
    maps.write_text("         0     100000      65536\n")
    monkeypatch.setattr(_contain, "_id_map", lambda path: [(0, 65536)])
    accounts = set(range(65000, 65536))
    monkeypatch.setattr(_contain, "_has_account", lambda kind, number: number in accounts)
    monkeypatch.setattr(_contain, "_subordinate_ranges", lambda: [(64000, 1000)])
    number, note = _contain.free_id("uid")
    assert number is not None and number < 64000 and number not in accounts
    assert "from the top of the uid map (0-65535)" in note and str(number) not in note
    # A pid whose place is inside the 1,536 ids excluded at the top: the search goes on past them (it gave up
    # after 256 ids, and the test failed for about one xdist worker pid in 40).
    monkeypatch.setattr(_contain.os, "getpid", lambda: 100)
    number, _ = _contain.free_id("uid")
    assert number is not None and number < 64000 and number not in accounts
    monkeypatch.setattr(_contain, "_id_map", lambda path: [(0, 1)])  # `unshare --map-root-user`: no id to spare
    assert _contain.free_id("uid")[0] is None


@pytest.mark.needs_namespaces
def test_killed_supervisor_is_harness_error(namespaced):
    """A supervisor killed from outside is a harness error, not the model's."""
    import signal
    import threading

    def kill_soon() -> None:
        import time

        time.sleep(0.5)
        os.kill(namespaced._proc.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_soon)
    killer.start()
    try:
        with pytest.raises(sandbox.SandboxError, match="killed from outside"):
            namespaced.run(script("import time\ntime.sleep(2)"), FAST)
    finally:
        killer.join()
    assert namespaced.run(script("pass"), FAST).status is Status.PASSED


@pytest.mark.parametrize("isolation", ["auto", "basic"])
@pytest.mark.needs_cgroup
def test_limits_cover_the_process_tree(isolation):
    """Memory and processes are limited for the whole process tree."""
    box = Sandbox(isolation).start()
    try:
        if not box.limits.startswith("cgroup"):
            pytest.skip(f"needs_cgroup: the sandbox made no cgroup: {box.limits}")
        # 60 memfds of 16 MiB: under every per-process limit (address space, file size, open files), 960 MiB.
        memfds = box.run(script("import os\nfds = []\nfor _ in range(60):\n    fd = os.memfd_create('x')\n"
                                "    os.write(fd, b'x' * (16 << 20))\n    fds.append(fd)\n"),
                         Limits(timeout_s=10.0, memory_mb=256))
        assert memfds.status is Status.RUNTIME_ERROR and "memory limit (256 MiB" in memfds.detail, memfds.detail
        children = box.run(script("import os, time\nfor _ in range(100):\n    if os.fork() == 0:\n"
                                  "        time.sleep(3)\n        os._exit(0)\n"), Limits(timeout_s=10.0))
        assert children.status is Status.RUNTIME_ERROR and "Resource temporarily unavailable" in children.detail
        assert box.run(script("pass"), FAST).status is Status.PASSED
    finally:
        box.close()


@pytest.mark.slow
@pytest.mark.needs_cgroup
def test_killed_supervisor_leaves_no_cgroup():
    """A killed supervisor leaves no cgroup behind."""
    # Killed from outside, a namespaced supervisor's last processes are still being torn down for a moment,
    # and its cgroup cannot be removed yet: about one kill in ten left both folders behind for good.
    program = sample("def f(x):\n    return x\n", "def check(candidate):\n    assert candidate(1) == 1\n")
    left = []
    for _ in range(20):
        box = Sandbox("auto").start()
        if not box.limits.startswith("cgroup"):
            box.close()
            pytest.skip(f"needs_cgroup: the sandbox made no cgroup: {box.limits}")
        paths = list(box._cgroups)
        assert box.run(program, FAST).status is Status.PASSED
        box.kill()
        box.close()
        left += [path for path in paths if os.path.exists(path)]
    assert not left, left


def test_stale_cgroup_keeps_the_limits(tmp_path):
    """A cgroup left by an earlier supervisor of the same pid does not cost the limits."""
    stale = tmp_path / "pytest-humaneval-123"
    stale.mkdir()  # empty: what a supervisor that could not remove it left; it goes, the name is reused
    assert _contain._make_cgroup(str(stale)) == str(stale) and stale.is_dir()
    busy = tmp_path / "pytest-humaneval-456"
    busy.mkdir()
    (busy / "cgroup.procs").write_text("1\n")  # not removable (a cgroup in use): a name of its own instead
    made = _contain._make_cgroup(str(busy))
    assert made.startswith(str(busy) + "-") and os.path.isdir(made) and (busy / "cgroup.procs").exists()


def test_empty_stale_cgroups_are_swept(tmp_path):
    """Empty cgroups left by killed harnesses are swept when a supervisor starts."""
    old = time.time() - 2 * _contain.STALE_CGROUP_S
    folders = {name: tmp_path / name for name in ("pytest-humaneval-1", "pytest-humaneval-2", "pytest-humaneval-3",
                                                  "other-4")}
    for path in folders.values():
        path.mkdir()
    (folders["pytest-humaneval-3"] / "cgroup.procs").write_text("1\n")  # in use: rmdir fails
    for name in ("pytest-humaneval-1", "pytest-humaneval-3", "other-4"):
        os.utime(folders[name], (old, old))
    assert _contain._make_cgroup(str(tmp_path / "pytest-humaneval-9")) == str(tmp_path / "pytest-humaneval-9")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-4", "pytest-humaneval-2", "pytest-humaneval-3",
                                                           "pytest-humaneval-9"]  # 2: made a moment ago


@pytest.mark.needs_namespaces
def test_candidate_cannot_kill_supervisor(namespaced):
    """A candidate cannot kill its namespaced supervisor."""
    result = namespaced.run(sample("import os, signal\ndef f(x):\n    for sig in (signal.SIGKILL, signal.SIGTERM):\n"
                                   "        try:\n            os.kill(1, sig)\n        except OSError:\n            pass\n    return x\n",
                                   "def check(candidate):\n    assert candidate(1) == 1\n"), FAST)
    assert result.status is Status.PASSED, result.detail


# -- rootless containers: root inside a user namespace whose uid map is limited ------------------------------

_ROOTLESS = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
mapping, python, script = sys.argv[1:4]
ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
pid = os.fork()
if pid == 0:
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        os._exit(99)
    os.write(ready_w, b"1")
    os.read(go_r, 1)
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    os.execv(python, [python, "-c", script])
os.read(ready_r, 1)
for name in ("uid_map", "gid_map"):
    with open(f"/proc/{pid}/{name}", "w") as handle:
        handle.write(mapping)
os.write(go_w, b"1")
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""

_INSIDE = r"""
import json, sys
sys.path.insert(0, REPO)
from pytest_humaneval import sandbox
from pytest_humaneval.sandbox import Limits, Program
found = {}
for mode in ("auto", "strict"):
    box = sandbox.Sandbox(mode).start()
    statuses = [box.run(Program("def f(x):\n", body, "def check(c):\n    assert c(2) == 4\n", "f"),
                        Limits(timeout_s=5.0)).status.value for body in ("    return x * 2\n", "    return x\n")]
    found[mode] = [box.isolation, box.ids, statuses]
    box.close()
print(json.dumps(found))
"""


@pytest.mark.needs_root("to write another user namespace's uid map")
@pytest.mark.needs_system_python
@pytest.mark.skipif(not os.access("/usr/bin/python3", os.X_OK), reason="needs_system_python: this test runs /usr/bin/python3")
@pytest.mark.parametrize(("mapping", "isolation"), [
    ("0 100000 65536", "namespaces"),  # rootless Podman/Docker, Kubernetes user namespaces
    ("0 0 1", "namespaces-userns"),  # `unshare --user --map-root-user`: no second uid at all
])
def test_rootless_containers_isolate(mapping, isolation):
    """Rootless containers get a working isolation, and say which."""
    import sys

    repo = Path(sandbox.__file__).resolve().parents[2]
    if not all(folder.stat().st_mode & 0o001 for folder in (repo / "pytest_humaneval", *repo.parents)):
        pytest.skip(f"{repo} is not readable by other users, as the mapped root of the namespace is")
    inside = _INSIDE.replace("REPO", repr(str(repo)))
    # The system interpreter: the test's own may live where the mapped uid cannot read it (/root/.pyenv).
    done = subprocess.run([sys.executable, "-c", _ROOTLESS, mapping, "/usr/bin/python3", inside],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    for mode in ("auto", "strict"):
        applied, ids, statuses = found[mode]
        assert applied == isolation and statuses == ["passed", "assertion_failed"], (mode, found)
    if isolation == "namespaces":
        assert "(0-65535)" in found["auto"][1]


# -- found by attacking the sandbox after the above landed -------------------------------------------------------

@pytest.mark.needs_namespaces
def test_tree_deeper_than_any_path(namespaced):
    """A tree deeper than any path is removed, and the verdict stays the program's."""
    deep = ("import os\nfor where in ('.',):\n    fd = os.open(where, os.O_RDONLY)\n"
            "    for _ in range(20):\n        os.mkdir('x' * 250, dir_fd=fd)\n"
            "        inner = os.open('x' * 250, os.O_RDONLY, dir_fd=fd)\n        os.close(fd)\n        fd = inner\n"
            "    os.close(fd)\n")
    result = namespaced.run(script(deep), FAST)
    assert result.status is Status.PASSED, result.detail  # 5,000-character paths, all removed
    assert namespaced.run(script("import os\nassert os.listdir('.') == [] and os.listdir('/tmp') == ['work'] "
                                 "or sorted(os.listdir('/tmp'))[-1] == 'work', os.listdir('/tmp')"), FAST).status \
        is Status.PASSED


@pytest.mark.needs_namespaces
def test_killed_judge_is_replaced(namespaced):
    """The judge killed between samples is replaced before the next one."""
    import signal

    def children(pid: int) -> list[int]:
        found = []
        for task in os.listdir(f"/proc/{pid}/task"):
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        return found

    assert namespaced.run(script("pass"), FAST).status is Status.PASSED
    supervisor = children(namespaced._proc.pid)[0]  # the process the namespaces were made for: PID 1 there
    # Its children: the judge, and the process that waits for the candidates' fork server (which has a child).
    judges = [child for child in children(supervisor) if not children(child)]
    assert len(judges) == 1 and len(children(supervisor)) == 2
    os.kill(judges[0], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{judges[0]}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    sample_ = sample("def f(x):\n    return x\n", "def check(candidate):\n    assert candidate(2) == 2\n")
    assert namespaced.run(sample_, FAST).status is Status.PASSED


@pytest.mark.parametrize("mode", ["auto", "landlock", "basic"])
def test_no_keyring_is_reachable(mode):
    """No keyring of any kind is reachable."""
    # Keys outlive the process, and the uid's persistent keyring outlives the run: a channel from one sample to
    # the next. Every keyring call fails as on a kernel without keys (seccomp: ENOSYS), in every mode.
    if SYS_ADD_KEY is None:
        pytest.skip("the key syscalls' numbers are not known here")
    keyctl = _contain.SYS_KEYCTL[os.uname().machine]
    program = (f"import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\n"
               f"calls = {{'add_key @s': lambda: libc.syscall({SYS_ADD_KEY}, b'user', b'k', b'42', 2, ctypes.c_int(-3)),\n"
               f"         'add_key @u': lambda: libc.syscall({SYS_ADD_KEY}, b'user', b'k', b'42', 2, ctypes.c_int(-4)),\n"
               f"         'persistent': lambda: libc.syscall({keyctl}, 22, ctypes.c_int(-1), ctypes.c_int(-2)),\n"
               f"         'request_key': lambda: libc.syscall({SYS_ADD_KEY + 1}, b'user', b'k', None, 0)}}\n"
               "for name, call in calls.items():\n"
               "    assert call() == -1 and ctypes.get_errno() == errno.ENOSYS, name\n")
    box = Sandbox(mode).start() if mode != "landlock" or _confine_abi() else None
    if box is None:
        pytest.skip("the kernel has no Landlock")
    try:
        result = box.run(script(program), FAST)
        assert result.status is Status.PASSED, result.detail
    finally:
        box.close()


def _confine_abi() -> int:
    from pytest_humaneval.sandbox import _confine

    return _confine.landlock_abi()


def _key_users() -> set[int]:
    with open("/proc/key-users") as handle:
        return {int(line.split(":", 1)[0]) for line in handle if ":" in line}


def _wait_until_released(uid: int) -> None:
    deadline = time.monotonic() + 10  # the kernel frees invalidated keys in a worker of its own
    while uid in _key_users():
        assert time.monotonic() < deadline, f"uid {uid} still holds kernel keys after its supervisor closed"
        time.sleep(0.1)


@pytest.mark.skipif(not os.path.exists("/proc/key-users"), reason="the kernel does not list its key users")
@pytest.mark.needs_namespaces
@pytest.mark.needs_root
def test_uid_keeps_no_kernel_keys(namespaced):
    """The candidate's uid keeps no kernel keys after its samples."""
    # The kernel keeps a uid's user keyrings, once anything asked for them, until the machine restarts: every
    # supervisor left two keys behind for its uid, and the key collector, which walks all keys, slowed down.
    if namespaced.isolation != "namespaces":
        pytest.skip("needs_root: candidates share the harness's uid (a user namespace): their keys go with the namespace")
    keyctl = _contain.SYS_KEYCTL.get(os.uname().machine)
    if SYS_ADD_KEY is None or keyctl is None:
        pytest.skip("the key syscalls' numbers are not known here")
    uses_keys = (f"import ctypes, os\nlibc = ctypes.CDLL(None)\nprint('uid', os.getuid())\n"
                 f"assert libc.syscall({SYS_ADD_KEY}, b'user', b'a-key', b'42', 2, ctypes.c_int(-4)) < 0\n")
    first = namespaced.run(script(uses_keys), FAST)
    assert first.status is Status.PASSED, first.detail
    uid = int(first.stdout.split()[1])
    honest = namespaced.run(sample("def f(x):\n    return x\n", "def check(candidate):\n    assert candidate(2) == 2\n"),
                            FAST)
    assert honest.status is Status.PASSED, honest.detail
    namespaced.close()
    _wait_until_released(uid)


@pytest.mark.skipif(not os.path.exists("/proc/key-users"), reason="the kernel does not list its key users")
@pytest.mark.needs_namespaces
@pytest.mark.needs_root
def test_uid_keeps_no_keys_after_a_kill(namespaced):
    """A killed supervisor's candidate uid keeps no kernel keys either."""
    if namespaced.isolation != "namespaces":
        pytest.skip("needs_root: candidates share the harness's uid (a user namespace): their keys go with the namespace")
    result = namespaced.run(script("import os\nprint('uid', os.getuid())\n"), FAST)
    assert result.status is Status.PASSED, result.detail
    uid = int(result.stdout.split()[1])
    namespaced.kill()  # it cannot release them itself now: the harness does, when it closes the sandbox
    namespaced.close()
    _wait_until_released(uid)


@pytest.mark.needs_namespaces
def test_ptys_refused_or_from_own_devpts(namespaced):
    """Ptys are refused, or come from a small devpts instance of the sandbox's own."""
    # With Landlock a candidate may open five devices only (a pty's creation would change /dev/pts, which
    # outlives the sample); without it, ptys come from a devpts instance of 16.
    most = 0 if namespaced.confinement.startswith("landlock") else 16
    result = namespaced.run(script("import os\nfds = []\ntry:\n    for _ in range(64):\n"
                                   "        fds.append(os.open('/dev/ptmx', os.O_RDWR))\nexcept OSError:\n    pass\n"
                                   f"assert len(fds) == {most} or 0 < len(fds) <= {most}, len(fds)\n"), FAST)
    assert result.status is Status.PASSED, result.detail


@pytest.mark.needs_root("the basic sandbox runs its candidates as root only when the harness is root")
def test_basic_as_root_drops_capabilities(basic):
    """The basic mode as root runs candidates without capabilities."""
    # The attack that made a wrong answer pass here before: take the judge's socket with pidfd_getfd.
    # (pidfd_open itself is refused now, ENOSYS: should it not be, pidfd_getfd must still fail)
    program = ("import ctypes, errno, os\ncaps = open('/proc/self/status').read().split('CapEff:')[1].split()[0]\n"
               "assert caps == '0' * 16, caps\nlibc = ctypes.CDLL(None, use_errno=True)\n"
               "try:\n    pidfd = os.pidfd_open(os.getppid())\nexcept OSError as exc:\n"
               "    assert exc.errno == errno.ENOSYS, exc\n    pidfd = None\nfor fd in range(3, 16):\n"
               "    assert pidfd is None or libc.syscall(438, pidfd, fd, 0) < 0, 'took a descriptor of the supervisor'\n"
               "    try:\n        os.open(f'/proc/{os.getppid()}/fd/{fd}', os.O_RDONLY)\n"
               "        raise AssertionError('opened a descriptor of the supervisor')\n"
               "    except (PermissionError, FileNotFoundError):\n        pass\n")
    result = basic.run(script(program), FAST)
    assert result.status is Status.PASSED, result.detail


@pytest.mark.parametrize("isolation", ["auto", "basic"])
def test_argv_and_env_hide_harness_folders(isolation):
    """The candidate's argv and environment name no folder of the harness."""
    box = Sandbox(isolation).start()
    try:
        # (In the basic sandbox the working dir, HOME and TMPDIR are a folder inside the harness's own.)
        environment = "repr(dict(os.environ)).encode()" if isolation == "auto" else "b''"
        # (With Landlock /proc is not readable at all: what the process holds is its own argv and environment.)
        program = ("import os, sys\ndef read(path):\n    try:\n        return open(path, 'rb').read()\n"
                   "    except OSError:\n        return b''\n"
                   "seen = [read('/proc/self/cmdline'), read('/proc/self/environ'), read(f'/proc/{os.getppid()}/cmdline'),"
                   f" repr(sys.orig_argv).encode(), {environment}]\n"
                   "assert not [text for text in seen if b'pytest-humaneval-' in text], seen\n")
        result = box.run(script(program), FAST)
        assert result.status is Status.PASSED, result.detail
        assert box._base and "pytest-humaneval-" in box._base  # the folder the harness made for it
    finally:
        box.close()


@pytest.mark.parametrize("layout", [("sandbox", "_contain.py"), ("_contain.py",), ("fixtures", "HumanEval.jsonl.gz")],
                         ids=["this layout", "the flat layout before it", "its data alone"])
def test_package_copies_are_covered(tmp_path, layout):
    """Any copy of the package inside a shown folder is covered."""
    # An older install elsewhere on a shown path carries the canonical solutions too: whatever its layout, the
    # candidate's root covers it.
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    mark = site.joinpath("pytest_humaneval", *layout)
    mark.parent.mkdir(parents=True)
    mark.write_bytes(b"")
    other = site / "some_library"
    other.mkdir()
    # An import path folder is itself shown (its packages are what a candidate may import).
    hidden = _contain._hidden([str(tmp_path), str(site)], {os.path.realpath(site)})
    assert os.path.realpath(site / "pytest_humaneval") in hidden
    assert os.path.realpath(other) not in hidden


def test_nested_site_packages_copy_covered(tmp_path):
    """A copy in a nested site-packages on the import path is covered."""
    # As the code calls it: the import path as it is (the supervisor's sys.path), of which only the outermost
    # folders are shown. A site-packages nested in another one, both on the import path (a vendored
    # environment, a .pth entry), used to keep its copy of the package visible.
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    nested = site / "vendored" / "lib" / "python3.11" / "site-packages"
    copy = nested / "pytest_humaneval" / "fixtures" / "HumanEval.jsonl.gz"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(b"")
    (site / "some_library").mkdir()
    folders, _, _, hidden = _contain.shown_and_hidden([*sys.path, str(site), str(nested)])
    assert os.path.realpath(site) in folders and os.path.realpath(nested) not in folders  # nested: not bound twice
    assert os.path.realpath(nested / "pytest_humaneval") in hidden
    assert os.path.realpath(site / "some_library") not in hidden
    # and Landlock's read rules, made from the same lists, allow the library but no file of the copy
    from pytest_humaneval.sandbox import _confine

    rules = dict(_confine.read_rules(sorted(folders), hidden))
    assert rules.get(os.path.realpath(site / "some_library")) == _confine.READ
    assert not any(path.startswith(os.path.realpath(nested / "pytest_humaneval")) for path in rules)


SKELETON_CHECK = r"""
import ctypes, json, os, re, stat, sys
from pytest_humaneval.sandbox import _contain, _mounts, _view

libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(_contain.CLONE_NEWNS) != 0:
    sys.exit("unshare: %s" % os.strerror(ctypes.get_errno()))
_contain._mount(None, "/", None, _contain.MS_REC | _contain.MS_PRIVATE)
folder, limit = sys.argv[1], int(sys.argv[2])
_mounts.SKELETON_MAX_FILES = limit
_view.VIEW = {"folders": [folder], "files": [], "links": {}, "hidden": [folder + "/hidden"]}
_, dentries = _mounts.enter_new_root()
def unescape(field):  # mountinfo's octal escapes (space, tab, newline, backslash)
    return re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), field)


points = {os.fsdecode(unescape(line.split()[4])) for line in open("/proc/self/mountinfo", "rb")}
found = {}
for where, folders, names in os.walk(folder):
    for name in folders + names:
        path = os.path.join(where, name)
        mode = os.lstat(path).st_mode
        found[os.path.relpath(path, folder)] = {
            "kind": "link" if stat.S_ISLNK(mode) else "folder" if stat.S_ISDIR(mode) else "file",
            "mode": stat.S_IMODE(mode), "mounted": path in points,
            "text": open(path).read() if stat.S_ISREG(mode) else None,
            "target": os.readlink(path) if stat.S_ISLNK(mode) else None}
try:
    open(os.path.join(folder, "a.py"), "a").close()
    writable = True
except OSError as exc:
    writable = exc.errno
print(json.dumps({"dentries": dentries, "found": found, "top_mounted": folder in points, "writable": writable}))
"""


@pytest.mark.needs_root("to make a mount namespace")
@pytest.mark.parametrize("limit", [_contain.SKELETON_MAX_FILES, 1], ids=["skeleton", "too-many-files"])
def test_view_folders_are_a_skeleton_of_bound_files(tmp_path, limit):
    """With namespaces a folder of the view is shown as a skeleton: its folders made on the root's tmpfs with the
    host's modes, its symlinks copied, each regular file a read-only mount of its own, a covered folder empty,
    a fifo left out (so no lookup reaches a folder of the host's filesystem, whose dentry cache would keep the
    names not found: ``test_channels.py::test_negative_dentries_carry_nothing``). Past SKELETON_MAX_FILES the
    folder itself is bound, read-only, and the run's confinement says the dentry cache is not held."""
    top = tmp_path / "view"
    (top / "pkg" / "sub").mkdir(parents=True)
    (top / "a.py").write_text("A")
    (top / "pkg" / "sub" / "b.py").write_text("B")
    (top / "pkg" / "sub").chmod(0o750)
    (top / "link").symlink_to("pkg/sub/b.py")
    (top / "hidden").mkdir()
    (top / "hidden" / "answers.py").write_text("secret")
    os.mkfifo(top / "fifo")
    odd = os.fsdecode(b"odd\xff name\n.py")  # not UTF-8, with a newline: the filesystem's bytes, bound as they are
    (top / odd).write_text("C")
    done = subprocess.run([sys.executable, "-c", SKELETON_CHECK, str(top.resolve()), str(limit)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    found = seen["found"]
    assert seen["writable"] == errno.EROFS
    assert found["a.py"]["text"] == "A" and found["pkg/sub/b.py"]["text"] == "B" and found[odd]["text"] == "C"
    assert found["link"]["kind"] == "link" and found["link"]["target"] == "pkg/sub/b.py"
    assert found["pkg/sub"]["mode"] == 0o750
    assert "hidden/answers.py" not in found and found["hidden"]["kind"] == "folder"
    if limit > 1:
        assert "fifo" not in found
        assert not seen["top_mounted"] and seen["dentries"] == ""
        assert found["a.py"]["mounted"] and found["pkg/sub/b.py"]["mounted"] and found[odd]["mounted"]
        assert not found["pkg"]["mounted"] and not found["pkg/sub"]["mounted"]
    else:
        assert seen["top_mounted"] and not found["a.py"]["mounted"]
        assert seen["dentries"].startswith("dentry cache not held: the view has 3 files, more than the 1 ")


SKELETON_RACE = r"""
import ctypes, json, os, shutil, sys
from pytest_humaneval.sandbox import _contain

libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(_contain.CLONE_NEWNS) != 0:
    sys.exit("unshare: %s" % os.strerror(ctypes.get_errno()))
_contain._mount(None, "/", None, _contain.MS_REC | _contain.MS_PRIVATE)
folder, into = sys.argv[1], sys.argv[2]
_contain._mount("tmpfs", into, "tmpfs", 0, "mode=0755")
plan = _contain._skeleton_plan(folder, into + "/view", [])
os.unlink(folder + "/gone.py")
shutil.rmtree(folder + "/gone")
os.unlink(folder + "/now_a_folder.py")
os.mkdir(folder + "/now_a_folder.py")
_contain._skeleton(*plan)
print(json.dumps(sorted(os.listdir(into + "/view")) + [open(into + "/view/kept.py").read()]))
"""


@pytest.mark.needs_root("to make a mount namespace")
def test_view_that_changes_while_it_is_bound(tmp_path):
    """The host's files change while a supervisor builds its skeleton (a parallel run's folder removed, a package
    upgraded): what went away between the listing and its mount is left out, and the supervisor starts."""
    top = tmp_path / "view"
    (top / "gone" / "deep").mkdir(parents=True)
    (top / "gone" / "deep" / "x.py").write_text("x")
    for name in ("kept.py", "gone.py", "now_a_folder.py"):
        (top / name).write_text(name)
    (tmp_path / "into").mkdir()
    done = subprocess.run([sys.executable, "-c", SKELETON_RACE, str(top), str(tmp_path / "into")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == ["gone", "kept.py", "kept.py"]


@pytest.mark.needs_root("to list the view as nobody")
@pytest.mark.needs_system_python
def test_view_folder_the_supervisor_cannot_list_is_shown_empty():
    """A user namespace's supervisor is your user: a folder of the view it may not list (root's, mode 0700) is
    shown empty, as the candidate could not list it either, instead of failing the namespaces' set-up (which
    would drop the sandbox to Landlock)."""
    place = Path(tempfile.mkdtemp(dir="/tmp"))  # (pytest's own tmp_path is root's alone: nobody cannot reach it)
    try:
        _list_as_nobody(place)
    finally:
        shutil.rmtree(place)


def _list_as_nobody(place: Path) -> None:
    place.chmod(0o755)
    top = place / "view"
    (top / "private").mkdir(parents=True)
    (top / "private" / "x.py").write_text("x")
    (top / "private").chmod(0o700)
    (top / "public.py").write_text("p")
    modules = place / "modules"  # (the sandbox's modules, loaded by path as the supervisor loads them)
    modules.mkdir()
    from pytest_humaneval.sandbox import SANDBOX_FILES

    for name in SANDBOX_FILES:
        shutil.copy(Path(_contain.__file__).with_name(name), modules / name)
    code = (f"import json, sys; sys.path.insert(0, {str(modules)!r}); import _contain\n"
            "_, folders, files, _ = _contain._skeleton_plan(sys.argv[1], '/nowhere', [])\n"
            "print(json.dumps([sorted(f for f, _ in folders), sorted(m for _, m in files)]))\n")
    from nobody import SYSTEM_PYTHON

    done = subprocess.run([SYSTEM_PYTHON, "-I", "-c", code, str(top)], capture_output=True, text=True, timeout=60,
                          user=65534, group=65534, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [["/nowhere/private"], ["/nowhere/public.py"]]


# Counters a sample moves are state too: pids in the candidates' PID namespace and inode numbers of a tmpfs are
# handed out one after another, so how many processes or files one sample made set the next one's pid and its
# working dir's inode numbers (on c2afd1b: pid 4, 11, 13, 24 after 0, 5, 0, 9 forks). Every candidate is PID 2
# now, in a working dir that is a tmpfs of its own.
COUNTERS = "import os\nprint(os.getpid(), os.stat('.').st_ino, os.stat(open('probe', 'w').name).st_ino)\n"
MOVE = ("import os\nfor i in range({n}):\n    open(f'f{{i}}', 'w').close()\n    pid = os.fork()\n"
        "    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\n")


@pytest.mark.needs_namespaces
def test_no_counter_reaches_next_sample(namespaced):
    """No counter a sample moves reaches the next."""
    seen = set()
    for n in (0, 5, 0, 9):
        assert namespaced.run(script(MOVE.format(n=n)), FAST).status is Status.PASSED
        read = namespaced.run(script(COUNTERS), FAST)
        assert read.status is Status.PASSED, read.detail
        seen.add(read.stdout.strip())
    assert len(seen) == 1, seen


@pytest.mark.needs_root("to start the supervisor as nobody")
@pytest.mark.needs_system_python
@pytest.mark.needs_userns
def test_userns_no_counter_reaches_next():
    """Under a user namespace, no counter a sample moves reaches the next."""
    import nobody

    if nobody.unavailable():
        pytest.skip(f"needs_root and needs_system_python: {nobody.unavailable()}")
    with nobody.supervisor() as (ready, run):
        if ready.get("isolation") != "namespaces-userns":
            pytest.skip(f"needs_userns: {ready.get('reason')}")
        seen = set()
        for n in (0, 5, 0, 9):
            assert run(MOVE.format(n=n))["status"] == "passed"
            read = run(COUNTERS)
            assert read["status"] == "passed", read
            seen.add(read["stdout"].strip())
        assert len(seen) == 1, seen


# What a second red-team pass (on ca902af) carried from one sample to the next with namespaces as root: the
# network namespace's counters (n UDP packets to nowhere raise /proc/net/snmp's OutNoRoutes), the host's
# /dev/null times (utimensat(NULL) needs only write permission), and the fork server's /proc counters
# (voluntary_ctxt_switches) and the session ids one sample used up (/proc/self/autogroup).
SECOND_READING = """
import errno, os, socket
problems = []
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    problems.append('an inet socket')
except PermissionError:
    pass
socket.socketpair()  # a program's own pipes stay
try:
    os.utime('/dev/null')
    problems.append("set /dev/null's times")
except OSError:
    pass
for path in ('/proc/1/status', '/proc/self/autogroup', '/proc/net/snmp'):
    try:
        open(path).read()
        problems.append('read ' + path)
    except OSError:
        pass
open('/dev/null', 'w').write('devices still work')
assert not problems, problems
"""


@pytest.mark.needs_namespaces
def test_no_counter_or_proc_file_carries(namespaced):
    """No network counter, device time or /proc file carries anything."""
    result = namespaced.run(script(SECOND_READING), FAST)
    assert result.status is Status.PASSED, result.detail
