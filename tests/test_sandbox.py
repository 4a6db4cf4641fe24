"""The sandbox against real programs in real subprocesses. Hostile programs are bounded and stay in temp dirs."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import learner
import pytest
from procs import alive_with, marker, sleeper
from programs import sample, script

from pytest_humaneval import sandbox
from pytest_humaneval.sandbox import Limits, Sandbox, SandboxError, Status

FAST = Limits(timeout_s=1.0)
# Wall-clock slack allowed past the limit: process teardown and a busy CI machine, not extra budget.
MARGIN_S = 2.0


@pytest.fixture(scope="module")
def box():
    box = Sandbox()
    yield box
    box.close()


def run(box: Sandbox, program, limits: Limits = FAST):
    """Run a sample, or a script (a string: all its work happens while the candidate loads)."""
    return box.run(script(program) if isinstance(program, str) else program, limits)


@pytest.mark.parametrize(
    ("program", "status", "detail"),
    [
        ("def check(c):\n    assert c(2) == 4\ncheck(lambda x: x * 2)", Status.PASSED, ""),
        ("def check(c):\n    assert c(2) == 5, 'got ' + str(c(2))\ncheck(lambda x: x * 2)",
         Status.ASSERTION_FAILED, "AssertionError: got 4"),
        ("x = {}\nx['missing']", Status.RUNTIME_ERROR, "KeyError: 'missing'"),
        ("def f(:\n    pass", Status.RUNTIME_ERROR, "SyntaxError"),
        ("import definitely_not_a_module_xyz", Status.RUNTIME_ERROR, "ModuleNotFoundError"),
        ("while True:\n    pass", Status.TIMEOUT, "timed out after 1 s"),
        ("import ctypes\nctypes.string_at(0)", Status.RUNTIME_ERROR, "killed by SIGSEGV"),
    ],
)
def test_each_status_is_reachable(box, program, status, detail):
    """Each status is reached by a real program."""
    result = run(box, program)
    assert result.status is status
    assert detail in result.detail
    assert result.duration_ms > 0


def test_printed_traceback_quotes_its_lines(box):
    """A traceback the program prints itself quotes its own lines."""
    program = "import traceback\ntry:\n    1 / 0  # the line to quote\nexcept ZeroDivisionError:\n    traceback.print_exc()"
    result = run(box, program)
    assert result.status is Status.PASSED
    assert "1 / 0  # the line to quote" in result.stderr


def test_failing_line_is_reported(box):
    result = run(box, sample("def f(x):\n    return x\n", "def check(c):\n    assert c(1) == 1\n    assert c(3) == 4\n"))
    assert result.status is Status.ASSERTION_FAILED
    assert result.location == "test line 3: assert c(3) == 4"
    assert result.detail == "AssertionError (at test line 3: assert c(3) == 4)"
    assert "assert c(3) == 4" in result.traceback


@pytest.mark.parametrize(
    "program",
    [
        "exit(0)",
        "quit()",
        "import sys\nsys.exit(0)",
        "raise SystemExit",
        "import os\nos._exit(0)",
        "print('passed')\nimport os\nos._exit(0)",
        "import os\nfor fd in range(64):\n    try:\n        os.write(fd, b'passed')\n    except OSError:\n        pass\n"
        "os._exit(0)",
        "import os\nfor fd in range(64):\n    try:\n        os.write(fd, b'{\"status\": \"passed\"}')\n"
        "    except OSError:\n        pass\nraise AssertionError",
        "import atexit, os\natexit.register(lambda: os.write(3, b'passed'))\nraise SystemExit(0)",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    ],
)
def test_exit_or_print_never_passes(box, program):
    """Exiting or printing never fakes a pass."""
    result = run(box, program)
    assert result.status is not Status.PASSED, result
    assert result.status is Status.RUNTIME_ERROR


def test_exit_zero_ends_before_check(box):
    """Exit 0 is reported as ending before check."""
    assert "exited before check() finished" in run(box, "exit(0)").detail
    assert "exit code 0 before check() finished" in run(box, "import os\nos._exit(0)").detail


def test_infinite_loop_times_out(box):
    """An infinite loop times out within the limit plus a margin."""
    started = time.monotonic()
    result = run(box, "while True:\n    pass")
    assert result.status is Status.TIMEOUT
    assert time.monotonic() - started < FAST.timeout_s + MARGIN_S


def test_sigterm_ignorer_is_killed(box):
    """A SIGTERM-ignoring sleeper times out and is killed."""
    started = time.monotonic()
    result = run(box, "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                      "for _ in range(100):\n    time.sleep(0.1)")
    assert result.status is Status.TIMEOUT
    assert time.monotonic() - started < FAST.timeout_s + MARGIN_S


def test_daemonised_grandchild_is_killed(box):
    """A daemonised grandchild does not survive the sample."""
    mark = marker()
    program = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        {sleeper(mark)}\n"
        "    os._exit(0)\n"
        "time.sleep(0.3)\n"
    )
    result = run(box, program)
    assert result.status is Status.PASSED
    deadline = time.monotonic() + 2
    while alive_with(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive_with(mark) == []


def test_children_killed_after_timeout(box):
    """Children left running after a timeout are killed."""
    mark = marker()
    program = (
        "import os, sys\n"
        "for _ in range(5):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        f"        {sleeper(mark)}\n"
        "while True:\n    pass\n"
    )
    assert run(box, program).status is Status.TIMEOUT
    assert alive_with(mark) == []


def test_memory_hog_fails(box):
    """A memory hog fails, and the harness stays healthy."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run(box, "chunks = []\nfor _ in range(10_000):\n    chunks.append(bytearray(50 * 1024 * 1024))",
                 Limits(timeout_s=5.0, memory_mb=512))
    assert result.status is Status.RUNTIME_ERROR
    assert "MemoryError" in result.detail
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB
    assert run(box, "assert 1 + 1 == 2").status is Status.PASSED


def test_print_flood_fails_bounded(box):
    """A print flood fails with a bounded capture, and the harness stays healthy."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run(box, "while True:\n    print('x' * 4096)", Limits(timeout_s=5.0, file_size_mb=8))
    assert result.status is Status.RUNTIME_ERROR and "File too large" in result.detail
    assert len(result.stdout) < 10_000 and "more bytes not shown" in result.stdout
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB
    assert run(box, "print('fine')").stdout == "fine\n"


def test_environment_secrets_hidden(monkeypatch):
    """Environment secrets are not visible to the candidate."""
    canary = f"canary-{uuid.uuid4()}"
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "DB_PASSWORD", "MY_SECRET", "AWS_SESSION_TOKEN", "UNRELATED"):
        monkeypatch.setenv(name, canary)
    fresh = Sandbox()  # the supervisor's environment is fixed when it starts
    try:
        result = fresh.run(script(
            "import os\n"
            f"leaks = [k for k, v in os.environ.items() if {canary!r} in v]\n"
            "assert not leaks, leaks\n"
            "try:\n    environ = open('/proc/self/environ', 'rb').read()\n"
            "except PermissionError:  # Landlock: /proc is not readable\n    environ = b''\n"
            f"assert {canary!r}.encode() not in environ\n"
            "print(sorted(os.environ))\n"),
            FAST,
        )
    finally:
        fresh.close()
    assert result.status is Status.PASSED, result.detail
    assert set(eval(result.stdout)) <= set(sandbox.ENV_ALLOW) | set(sandbox.ENV_FIXED) | {"HOME", "TMPDIR"}


def test_name_and_stdin_as_reference(box):
    """The reference's semantics: __name__ is not __main__, and stdin is empty."""
    program = (
        "import sys\n"
        "assert __name__ != '__main__'\n"
        "assert sys.stdin.read() == ''\n"
        "if __name__ == '__main__':\n"
        "    raise SystemExit('the main block must not run')\n"
    )
    assert run(box, program).status is Status.PASSED


@pytest.mark.parametrize("isolation", ["basic", "auto"])
def test_signals_have_default_dispositions(isolation):
    """Signals have their default dispositions in the candidate."""
    import signal

    # An ignored disposition in the harness survives the supervisor's exec: it must not reach the candidate.
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        box = Sandbox(isolation).start()
    finally:
        signal.signal(signal.SIGTERM, previous)
    try:
        program = ("import signal\nfor sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):\n"
                   "    assert signal.getsignal(sig) == signal.SIG_DFL, (sig, signal.getsignal(sig))")
        result = run(box, program)
        assert result.status is Status.PASSED, result.detail
    finally:
        box.close()


@pytest.mark.parametrize("isolation", ["basic", "auto"])
def test_empty_working_dir_per_sample(isolation):
    """Each sample starts in an empty working directory that is removed afterwards."""
    box = Sandbox(isolation)
    try:
        # (a folder it cannot write into: where the candidate shares the harness's uid, chmod is refused)
        litter = ("import os\nopen('scratch.txt', 'w').write('x')\nos.makedirs('deep/er')\n"
                  "open('deep/er/f', 'w').write('y')\ntry:\n    os.chmod('deep', 0o500)\n"
                  "except PermissionError:\n    pass\nprint(os.getcwd())")
        first = run(box, litter)
        assert first.status is Status.PASSED, first.detail
        second = run(box, "import os\nassert os.listdir('.') == [], os.listdir('.')\n"
                          "assert os.environ['HOME'] == os.environ['TMPDIR'] == os.getcwd()\nprint(os.getcwd())")
        assert second.status is Status.PASSED, second.detail
        workdir = Path(first.stdout.strip())
        assert workdir != Path.cwd()
        if box.isolation == "basic":  # a namespaced sandbox's /tmp is its own: nothing to look at from here
            assert not workdir.exists()
    finally:
        box.close()


def test_leftover_working_dir_is_cleared():
    """A working directory left behind is cleared before the next sample."""
    box = Sandbox("basic").start()  # basic: the supervisor's folder is visible from here
    try:
        leftover = Path(box._base) / "work"
        (leftover / "stale").mkdir(parents=True)
        result = run(box, "import os\nassert os.listdir('.') == [], os.listdir('.')")
        assert result.status is Status.PASSED, result.detail
    finally:
        box.close()


def test_stuck_working_dir_is_moved_aside(tmp_path, monkeypatch):
    """A working directory that cannot be removed is moved aside."""
    from pytest_humaneval.sandbox import _supervisor

    work = tmp_path / "work"
    (work / "stuck").mkdir(parents=True)
    monkeypatch.setattr(_supervisor._contain, "remove_tree", lambda path: False)  # as if it failed
    _supervisor._clear(str(work), 7)
    assert not work.exists()
    assert (tmp_path / "work.left-7" / "stuck").is_dir()


# In the basic sandbox the candidate's parent is the fork server, whose parent is the supervisor.
PARENT = "os.getppid()"
GRANDPARENT = "int(open(f'/proc/{os.getppid()}/stat').read().rpartition(')')[2].split()[1])"


@pytest.mark.parametrize("victim, detail", [(PARENT, "killed the sandbox's fork server"),
                                            (GRANDPARENT, "killed the sandbox supervisor")])
def test_basic_sandbox_killer_is_recorded(victim, detail):
    """In the basic mode, a program that kills the sandbox is recorded, and the next one runs."""
    basic = Sandbox("basic")
    try:
        result = run(basic, f"import os, signal\nos.kill({victim}, signal.SIGKILL)\nimport time\ntime.sleep(5)")
        assert basic.isolation == "basic"
        assert result.status is Status.RUNTIME_ERROR
        assert detail in result.detail
        assert run(basic, "assert True").status is Status.PASSED
    finally:
        basic.close()


def test_supervisor_start_failure(monkeypatch):
    """A supervisor that cannot start is a sandbox error."""
    monkeypatch.setattr(sandbox.harness, "SUPERVISOR", Path("/nonexistent/_supervisor.py"))
    broken = Sandbox()
    with pytest.raises(SandboxError, match="did not start"):
        broken.run(script("pass"), FAST)
    broken.close()


def test_supervisor_start_failure_names_its_last_step(monkeypatch):
    """A supervisor that never answers its start is reported with the last start-up step its log shows (what a
    hang on a busy CI machine needs to be told apart), and the steps are really written where the harness reads."""
    from pytest_humaneval.sandbox import _supervisor

    assert _supervisor.STEP_PREFIX == sandbox.harness.STEP_PREFIX
    box = Sandbox().start()
    try:
        assert box._log_tail() == sandbox.harness.STEP_PREFIX + "first sample (probe)"
    finally:
        box.close()
    start_failure = sandbox.harness._start_failure
    step = sandbox.harness.STEP_PREFIX + "namespaces"
    assert start_failure(step, timed_out=True) == "no answer within 60 s (its last start-up step: namespaces)"
    assert start_failure("", timed_out=True) == "no answer within 60 s"
    assert start_failure("OSError: boom", timed_out=True) == "no answer within 60 s: OSError: boom"
    assert start_failure(step, timed_out=False) == "it ended during its start-up step namespaces, without a word"
    assert start_failure("ImportError: x", timed_out=False) == "ImportError: x"
    monkeypatch.setattr(sandbox.harness, "STARTUP_TIMEOUT_S", 0.05)  # answered in ~0.2 s at best
    slow = Sandbox()
    with pytest.raises(SandboxError, match=r"did not start .*: no answer within 0\.05 s") as caught:
        slow.start()
    slow.close()
    # ... and where its processes were waiting: the supervisor (python) named by its pid, its state and, where
    # /proc shows it, the kernel function it slept in
    assert re.search(r"; its processes: \d+ python\S* [A-Z]", str(caught.value)), caught.value


def test_a_start_that_hangs_is_tried_once_more(monkeypatch):
    """A supervisor that never answers its start is abandoned and a fresh one started: the sandbox works, and its
    isolation reason says what happened to the first (which step, where its processes waited)."""
    real, calls = sandbox.harness._receive, []

    def first_hangs(proc, timeout_s):
        calls.append(timeout_s)
        if len(calls) == 1:
            time.sleep(0.3)  # (its log has a step or two by then)
            raise sandbox.harness._NoReply()
        return real(proc, timeout_s)

    monkeypatch.setattr(sandbox.harness, "_receive", first_hangs)
    box = Sandbox()
    try:  # (started by its first run, as a pool's sandbox restarts mid-run: the run goes to the second supervisor)
        assert run(box, "print('ok')\n").status is Status.PASSED
        second = box._proc
        assert run(box, "print('ok')\n").status is Status.PASSED and box._proc is second
        assert re.search(r"a first supervisor start was abandoned: no answer within 60 s \(its last start-up step: "
                         r"[a-z ()-]+\); its processes: \d+ python", box.isolation_reason), box.isolation_reason
    finally:
        box.close()


def test_a_page_holder_that_ended_is_replaced_and_said():
    """The page holder (every page a candidate can read, locked in memory) killed from outside: the next sandbox
    start finds it gone, starts another and says so in its confinement."""
    sandbox.harness._close_holders()
    first = Sandbox().start()
    try:
        if first.isolation == "basic":
            pytest.skip("the basic sandbox holds no pages")
        holder = sandbox.harness._holder()
        assert "page cache" in first.confinement and holder.ended() == ""
        os.kill(holder._proc.pid, signal.SIGKILL)
        holder._proc.wait()
        second = Sandbox().start()
        try:
            assert second.confinement.endswith(", by a page holder that replaced one that was killed by signal 9"), \
                second.confinement
            assert sandbox.harness._holder() is not holder and sandbox.harness._holder().ended() == ""
            assert run(second, "print('ok')\n").status is Status.PASSED
        finally:
            second.close()
    finally:
        first.close()
        sandbox.harness._close_holders()


def test_page_holder_holds_more_files_than_it_may_open():
    """The holder maps each file and closes it at once: under a limit of 256 open files (1,024 is common) it still
    holds the view's thousands of files (Python's mmap would keep a descriptor per mapping, and stop at 256)."""
    import json as json_module

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    proc = subprocess.Popen([sys.executable, "-I", str(sandbox.harness.PIN)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, preexec_fn=limit)
    try:
        proc.stdin.write(b'{"budget_mb": 4096, "refresh_s": 3600}\n')
        proc.stdin.flush()
        view = json_module.loads(proc.stdout.readline())["view"]
        held = json_module.loads(proc.stdout.readline())
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert view["folders"] and held["pinned"] in ("locked", "resident"), held
    assert held["files"] > 1000, held


def pages_of(path: str) -> int:
    return (os.path.getsize(path) + resource.getpagesize() - 1) // resource.getpagesize()


def evicted(path: str) -> bool:
    """Drop ``path``'s pages from the page cache (they come back on the next read); whether none is left."""
    try:
        learner.evict(path, tries=1)
    except RuntimeError:
        return False
    return True


@pytest.mark.needs_root("to start the page holder as nobody")
@pytest.mark.skipif(not os.access("/usr/bin/python3", os.X_OK),
                    reason="needs_system_python: the holder runs /usr/bin/python3 as nobody")
def test_page_holder_without_a_lock_reads_every_page_in(tmp_path, request):
    """Where locking is refused (no CAP_IPC_LOCK, a small RLIMIT_MEMLOCK: a user's harness, a default container),
    the holder reads every page of the view into memory before it answers, says so, and reads nothing else; the
    harness's confinement line says what that holds and what it does not."""
    import json as json_module
    import shutil
    import tempfile

    python = "/usr/bin/python3"
    home = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="humaneval-holder-"))  # (pytest's tmp_path is root's only)
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    for part in sandbox.SANDBOX_FILES:
        shutil.copy(sandbox.SUPERVISOR.with_name(part), home / part)
        (home / part).chmod(0o644)
    home.chmod(0o755)
    inside = subprocess.run([python, "-I", "-c", "import textwrap; print(textwrap.__file__)"], capture_output=True,
                            text=True, check=True).stdout.strip()  # a file of the view: the interpreter's stdlib
    outside = tmp_path / "outside.bin"  # a file of no view
    outside.write_bytes(os.urandom(1 << 16))
    os.sync()
    if not (evicted(inside) and evicted(str(outside))):
        pytest.skip("the kernel kept these pages in memory (fadvise DONTNEED dropped nothing)")

    def nobody() -> None:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (64 << 10, 64 << 10))
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)

    proc = subprocess.Popen([python, "-I", str(home / "_pin.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            preexec_fn=nobody, cwd="/", env={"PATH": "/usr/bin:/bin"})
    try:
        proc.stdin.write(b'{"budget_mb": 4096, "refresh_s": 3600}\n')
        proc.stdin.flush()
        view = json_module.loads(proc.stdout.readline())["view"]
        held = json_module.loads(proc.stdout.readline())
        assert held["pinned"] == "resident" and held["files"] > 1000, held
        assert held["reason"].startswith("mlockall: "), held
        assert any(inside.startswith(folder.rstrip("/") + "/") for folder in view["folders"]) or inside in view["files"]
        assert learner.resident(inside) == pages_of(inside) > 0  # read in by the holder, every page
        assert learner.resident(str(outside)) == 0  # and nothing outside the view
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)

    # What the harness says of it (its words for each answer of the holder; here a holder that could not lock, and
    # one that could not watch the view for files added later either).
    def said(answer: dict) -> str:
        fake = tmp_path / "fake_pin.py"
        fake.write_text("import json, sys\nsys.stdin.readline()\n"
                        "print(json.dumps({'view': {'folders': [], 'files': [], 'links': {}, 'hidden': []}}))\n"
                        f"print(json.dumps({json_module.dumps(answer)}))\nsys.stdout.flush()\nsys.stdin.read()\n")
        original = sandbox.holder.PIN
        sandbox.holder.PIN = fake
        try:
            holder = sandbox.holder._Holder()
            words = holder.pinned()
            holder.close()
        finally:
            sandbox.holder.PIN = original
        return words

    resident = (r"page cache resident, not locked \(every readable page read into memory once: \d+ files, \d+ MiB; "
                r"mlockall: .+ \(no CAP_IPC_LOCK, and RLIMIT_MEMLOCK is smaller\): memory pressure can evict a page\)")
    assert re.fullmatch(resident, said(held)), said(held)
    unwatched = said({**held, "watch": "inotify_add_watch: No space left on device (fs.inotify.max_user_watches)"})
    assert re.fullmatch(resident + r", files added to it later held within the hour only \(inotify_add_watch: No "
                        r"space left on device \(fs.inotify.max_user_watches\)\)", unwatched), unwatched


@pytest.mark.slow
def test_page_holder_holds_a_file_added_to_the_view_later(tmp_path):
    """A file that appears in the view after the holder started (a package installed mid-run: a new folder in
    site-packages, a file written or moved into one) is held as soon as it is there: its pages cannot be dropped.
    The control, a file of no view, can. (In a venv of its own under /tmp, whose site-packages no other holder of
    this machine holds.)"""
    import json as json_module
    import shutil
    import tempfile

    venv = Path(tempfile.mkdtemp(dir="/tmp", prefix="humaneval-watch-"))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = Path(subprocess.run([str(venv / "bin" / "python"), "-I", "-c",
                                    "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
        proc = subprocess.Popen([str(venv / "bin" / "python"), "-I", str(sandbox.harness.PIN)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        try:
            proc.stdin.write(b'{"budget_mb": 4096, "refresh_s": 3600}\n')
            proc.stdin.flush()
            view = json_module.loads(proc.stdout.readline())["view"]
            held = json_module.loads(proc.stdout.readline())
            assert str(site) in view["folders"] and held["pinned"] in ("locked", "resident"), (view["folders"], held)
            assert held["watch"] == "", held
            made = {"a new package's file": site / "newpkg" / "sub" / "module.py",
                    "a file written into a folder of the view": site / "added.py",
                    "a file moved into one": site / "moved.py",
                    "the control: a file of no view": tmp_path / "outside.py"}
            for path in made.values():
                path.parent.mkdir(parents=True, exist_ok=True)
                staging = path.with_suffix(".tmp") if path.name == "moved.py" else path
                staging.write_bytes(os.urandom(1 << 16))
                if staging != path:
                    os.replace(staging, path)
            os.sync()
            deadline = time.monotonic() + 20
            while True:
                kept = {what: not evicted(str(path)) for what, path in made.items()}
                if all(kept[what] for what in list(made)[:3]) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert kept == {**dict.fromkeys(list(made)[:3], True), "the control: a file of no view": False}, kept
            # Replaced as pip and py_compile replace files (a temporary file renamed over it), three times, then
            # rewritten in place at the same size: each time every page of what is there now is held, and no
            # replaced file stays mapped (locked, and counted against the budget).
            added = made["a file written into a folder of the view"]

            def held_whole(path: Path) -> bool:
                return not evicted(str(path)) and learner.resident(str(path)) == pages_of(str(path))

            for round_ in range(4):
                if round_ < 3:
                    (site / "added.tmp").write_bytes(os.urandom(1 << 16))
                    os.replace(site / "added.tmp", added)
                else:
                    with open(added, "r+b") as handle:
                        handle.truncate(0)
                        handle.write(os.urandom(1 << 16))
                os.sync()
                deadline = time.monotonic() + 20
                while not held_whole(added) and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert held_whole(added), round_
                maps = Path(f"/proc/{proc.pid}/maps").read_text()
                assert "(deleted)" not in maps, [line for line in maps.splitlines() if "(deleted)" in line]
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def test_where_stuck_names_each_process_of_the_session(tmp_path):
    """The stall report lists the processes of the supervisor's session with where each waits, and only them."""
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & exec cat"], stdin=subprocess.PIPE, start_new_session=True)
    try:
        # (until both have started and sleep: on a busy machine sh may not have become cat yet, or one still runs)
        expected = rf"its processes: {proc.pid} cat S( in \S.*)?, \d+ sleep S( in \S.*)?"
        deadline = time.monotonic() + 30
        while not re.fullmatch(expected, where := sandbox.harness._where_stuck(proc.pid)) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        assert re.fullmatch(expected, where), where
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 30  # (the killed sleep is reaped by whoever adopted it)
    while (where := sandbox.harness._where_stuck(proc.pid)) != "none of its processes is left" and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert where == "none of its processes is left"


HARNESS = """
import os, signal, sys
from pytest_humaneval.sandbox import Sandbox
box = Sandbox().start()
print(box._base, flush=True)
if sys.argv[1] == "killed":  # as the OOM killer or a CI timeout ends a run: no clean-up at all
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.read()  # alive until the test closes this
box.close()
"""


def test_folders_of_killed_harnesses_are_swept(tmp_path):
    """A harness killed before its clean-up leaves its sandbox folder (its supervisor's log; in Landlock or basic
    mode what the last sample wrote in its work folder) in the temporary folder; the next sandbox this user starts
    removes it, and never the folder of a harness that is still alive, nor a folder without an owner lock."""
    env = dict(os.environ, TMPDIR=str(tmp_path))

    def harness(how):
        return subprocess.Popen([sys.executable, "-c", HARNESS, how], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                env=env, text=True)

    killed = harness("killed")
    stale = Path(killed.stdout.readline().strip())
    assert killed.wait(30) == -9 and stale.parent == tmp_path and stale.is_dir()
    (stale / "left-by-a-sample").write_text("what the killed run's last sample wrote")
    unlocked = tmp_path / "pytest-humaneval-unknown"  # made by an older version, or being made right now
    unlocked.mkdir()
    planted = tmp_path / "pytest-humaneval-planted"  # a FIFO as its lock file: opening it must not block the sweep
    planted.mkdir()
    os.mkfifo(planted / ".owner")
    live = harness("live")
    try:
        folder = Path(live.stdout.readline().strip())
        assert folder.is_dir() and not stale.exists() and unlocked.is_dir() and planted.is_dir()
        again = harness("killed")  # starts, sweeps (the live folder is locked), is killed
        assert again.wait(30) == -9 and folder.is_dir()
    finally:
        live.communicate("", timeout=30)
    assert live.returncode == 0 and not folder.exists()


def test_first_run_waits_for_supervisor(monkeypatch):
    """A supervisor started without waiting is waited for by the first run."""
    box = Sandbox().start(wait=False)
    try:
        assert box.isolation == "unknown"  # not ready yet: nothing was read from it
        assert run(box, "assert True").status is Status.PASSED
        assert box.isolation != "unknown"
    finally:
        box.close()
    monkeypatch.setattr(sandbox.harness, "SUPERVISOR", Path("/nonexistent/_supervisor.py"))
    broken = Sandbox().start(wait=False)  # launching works; the failure shows when a sample needs it
    with pytest.raises(SandboxError, match="did not start"):
        broken.run(script("pass"), FAST)
    broken.close()


def test_build_program_as_reference():
    """``build_program`` matches the reference harness."""
    assert sandbox.build_program("P", "C", "T", "f") == "PC\nT\ncheck(f)"


def test_locate_names_the_part():
    """``locate`` names the part of the program."""
    program = sample("    return x\n", "def check(c):\n    assert c(1) == 2\n", prompt="def f(x):\n")
    assert sandbox.locate(program, ("completion", 1)) == "completion line 1: return x"
    assert sandbox.locate(program, ("prompt", 1)) == "prompt line 1: def f(x):"
    assert sandbox.locate(program, ("test", 2)) == "test line 2: assert c(1) == 2"
    for nowhere in (None, ("test", 4), ("test", "2"), ("elsewhere", 1), ("test",), "test line 2"):
        assert sandbox.locate(program, nowhere) is None
    separators = sample("    s = 'a\u2028b'\n    return x\n", "def check(c):\n    pass\n", prompt="def f(x):\n")
    assert sandbox.locate(separators, ("completion", 2)) == "completion line 2: return x"


def test_descendants_without_proc_children(tmp_path):
    """Descendants are found and killed without /proc/*/children files."""
    # Kernels built without CONFIG_PROC_CHILDREN have no /proc/PID/task/TID/children: the supervisor then
    # scans every process's parent. Run in a subprocess: it makes itself a child subreaper.
    mark = marker()
    script = tmp_path / "scan.py"
    script.write_text(f"""
import builtins, os, sys, time
sys.path.insert(0, {str(sandbox.SUPERVISOR.parents[2])!r})
from pytest_humaneval.sandbox import _zygote as S
real_open = builtins.open
def no_children_files(path, *args, **kwargs):
    if isinstance(path, str) and path.endswith('/children'):
        raise FileNotFoundError(path)
    return real_open(path, *args, **kwargs)
S.open = no_children_files
S._LIBC.prctl(S.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
pid = os.fork()
if pid == 0:
    if os.fork() == 0:
        os.setsid()
        os.execv('/bin/sleep', ['sleep', '{mark}'])
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.2)
print(len(S.children()))
S.kill_descendants()
print(len(S.children()))
""")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["1", "0"], done.stderr
    assert alive_with(mark) == []


def test_sockets_left_in_flight_are_the_samples_failure():
    """A fork server that could not see a sample's sockets in flight freed in time says so apart from its own
    failures: the sample's runtime_error (and a fresh supervisor), not a harness fault (reward None) that a hostile
    program could choose. On 3dc2c0a it was the server's "error", a ZygoteGone, and the sample a harness_error."""
    import json
    import socket

    from pytest_humaneval.sandbox import _zygote as S

    zygote, server = S.Zygote(), None
    zygote._sock, server = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        left = "the program left unix sockets in flight that the kernel had not freed after 8 s"
        server.send(S.ENDED + json.dumps({"status": 0, "changed": "", "left": left}).encode())
        with pytest.raises(S.LeftInFlight, match="left unix sockets in flight"):
            zygote.finish(1.0)
        assert not issubclass(S.LeftInFlight, S.ZygoteGone)
        server.send(S.ENDED + json.dumps({"status": None, "error": "fork: EAGAIN"}).encode())
        with pytest.raises(S.ZygoteGone, match="EAGAIN"):
            zygote.finish(1.0)
    finally:
        zygote._sock.close()
        server.close()
