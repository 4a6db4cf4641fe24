"""Run one untrusted sample and return its verdict: ``run(program, limits) -> ExecResult``.

No pytest import. Each call runs the sample in two fresh processes forked by a warm supervisor
(``_supervisor.py``, a separate ``python -I`` interpreter started once per harness process with an environment
stripped to an allow-list): the candidate executes ``prompt + completion`` and serves calls, the trusted judge
runs the dataset's test against it. See the module docstrings of ``_supervisor`` and ``_judge``.

Everything the supervisor answers is validated here (it relays what an untrusted program did): a reply that is
not for the current request, an unknown status, a duration that is not a finite number, a field of the wrong
type voids the supervisor and is a ``harness_error`` for that sample. Every string that may come from a
candidate is made safe (UTF-8, no terminal control characters) and capped before it goes anywhere.

What crosses the seam (``Program``, ``Limits``, ``ExecResult``, ``Status``, the text caps) is ``vocabulary``, and the
page holder every sandbox of the process shares is ``holder``; both names are handed on here, as before the split.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import queue
import re
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from pathlib import Path
from typing import IO, Any, cast

from . import _cgroups, _cleanup
from .holder import PIN as PIN
from .holder import PIN_BUDGET_MB as PIN_BUDGET_MB
from .holder import PIN_REFRESH_S as PIN_REFRESH_S
from .holder import _close_holders as _close_holders
from .holder import _end_child, _Holder, _holder
from .vocabulary import DETAIL_MAX as DETAIL_MAX
from .vocabulary import ENV_ALLOW as ENV_ALLOW
from .vocabulary import ENV_FIXED as ENV_FIXED
from .vocabulary import IO_COMPARE_S, OUTPUT_MAX, STARTUP_TIMEOUT_S, TRACEBACK_MAX, io_rule
from .vocabulary import LINE_MAX as LINE_MAX
from .vocabulary import ExecResult as ExecResult
from .vocabulary import Limits as Limits
from .vocabulary import Program as Program
from .vocabulary import SandboxError as SandboxError
from .vocabulary import Status as Status
from .vocabulary import Suite as Suite
from .vocabulary import build_program as build_program
from .vocabulary import clean_text as clean_text
from .vocabulary import locate as locate
from .vocabulary import sandbox_env as sandbox_env
from .vocabulary import shorten as shorten

__all__ = ["ExecResult", "Limits", "Program", "Sandbox", "SandboxError", "Status", "Suite", "build_program",
           "clean_text", "shorten"]

SUPERVISOR = Path(__file__).with_name("_supervisor.py")
# What the supervisor loads, by path, from its own folder (it imports nothing of the package).
SANDBOX_FILES = ("_supervisor.py", "_candidate.py", "_cgroups.py", "_cleanup.py", "_confine.py", "_contain.py",
                 "_drain.py", "_elf.py", "_judge.py", "_keyrings.py", "_linux.py", "_load.py", "_mounts.py", "_pin.py",
                 "_suite.py", "_view.py", "_wire.py", "_zygote.py")
CONTAIN = Path(__file__).with_name("_contain.py")
# How long past the program's own limit the harness waits for the supervisor's answer before giving up on it.
REPLY_GRACE_S = 30.0
# How long a supervisor may take no byte of a request written to it (an idle one reads at once): one that does not,
# stopped or stuck, is killed and replaced, so no write to a supervisor blocks forever.
SEND_TIMEOUT_S = 10.0
# In the basic sandbox, how often the harness looks at its supervisor while it waits (a candidate that runs as the
# harness's user can stop it: SIGSTOP), and how many rounds a kill of a supervisor's tree may take.
WATCH_S = 0.1
KILL_ROUNDS = 200
# The basic sandbox's candidates run as the harness's user and can signal its processes: a sample beside another
# could kill, stop or starve of processes (RLIMIT_NPROC is per user) the other's sandbox. A process runs one
# basic sandbox (engine.sandboxes.start_pool), so a sample's harness failure can only be its own doing; the run says so.
BASIC_ALONE = "basic: one sandbox at a time (a candidate can signal the harness's processes)"
ISOLATION_MODES = ("auto", "strict", "basic")
# What a supervisor may be asked for: those, "namespaces" and "landlock" (exactly that level, or an error),
# which the pool's other sandboxes ask for to isolate as its first did, and which a fallback from namespaces
# that could not run a sample asks for ("landlock").
SUPERVISOR_MODES = (*ISOLATION_MODES, "namespaces", "landlock")
# The isolations that keep the filesystem out of a candidate's reach (what strict accepts).
HIDDEN_TESTS = ("namespaces", "namespaces-userns", "landlock")
BASE_PREFIX = "pytest-humaneval-"  # each supervisor's folder, in the temporary folder
OWNER_LOCK = ".owner"  # in that folder: locked by the harness process that made it, for its life
STEP_PREFIX = "start-up step: "  # _supervisor.STEP_PREFIX: its log's lines that say how far its start got
SUITE_CAP_S = 62.0  # a HumanEval+ suite's longest run: min(60 s, sum of its per-input limits) + 1 s, and slack
# A HumanEval+ suite is judged at most twice: its inputs in batches, then one at a time when an answer came later
# than its limit after its batch was sent (_suite.judge_suite); each attempt has the suite's whole cap.
SUITE_ATTEMPTS = 2
# A sample is judged at most twice: once more when its first attempt timed out starved of CPU by other programs
# (_supervisor.STARVED_SHARE); each attempt has the whole timeout_s.
SAMPLE_ATTEMPTS = 2
MAX_REPLY_BYTES = 16 << 20
VERDICTS = ("passed", "assertion_failed", "runtime_error", "timeout", "harness_error")

class Sandbox:
    """One warm supervisor process; programs run one at a time, each in its own forked child."""

    _files: socket.socket | None  # set by _start: the socket that hands the supervisor open files

    def __init__(self, isolation: str = "auto") -> None:
        if isolation not in SUPERVISOR_MODES:
            raise ValueError(f"isolation must be one of {ISOLATION_MODES}, got {isolation!r}")
        self.requested = isolation
        self.isolation = "unknown"  # applied: "namespaces", "namespaces-userns", "landlock" or "basic"
        self.isolation_reason = ""
        self.confinement = ""  # what confines each candidate beyond the level: Landlock's ABI, seccomp
        self.ids = ""  # which uid candidates run as, and how it was chosen
        self.limits = ""  # how memory and processes are limited: a cgroup per sample, or rlimits per process
        self._cgroups: list[str] = []  # the supervisor's cgroup folders, removed when it has exited
        self._mode = isolation  # what the supervisor is asked for: namespaces that fail fall back to "landlock"
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = False  # the supervisor said it is ready (and which isolation it applied)
        self._base: str | None = None
        self._owner_lock: int | None = None  # (_hold_folder) while the supervisor has a folder
        self._owner = os.getpid()
        self._serial = 0  # request ids: a reply must carry the id of the request it answers
        self._candidate_ids: tuple[int, int] | None = None  # (uid, gid) of its candidates, as root with namespaces
        self._holder: _Holder | None = None  # this process's page holder, when the mode confines reads
        self._stalled = ""  # why a start was abandoned and tried again (once a sandbox's life)
        self._killed: int | None = None  # the supervisor ``kill`` ended (its sample's failure is not the sample's)

    def start(self, wait: bool = True) -> Sandbox:
        """Start the supervisor now (it starts on first use otherwise). With ``wait`` (the default), also wait
        until it is ready, so ``isolation`` is known and a failure is a SandboxError here; without, its start-up
        overlaps whatever the caller does next, and the first ``run`` waits for it instead."""
        with self._lock:
            self._supervisor(wait)
        return self

    def _start(self, wait: bool) -> subprocess.Popen[bytes]:
        _sweep_stale_folders()
        holder = _holder() if self._mode != "basic" else None  # (basic: a candidate reads anything anyway)
        self._holder = holder
        self._base = tempfile.mkdtemp(prefix=BASE_PREFIX)
        self._owner_lock = _hold_folder(self._base)
        log = open(os.path.join(self._base, "supervisor.log"), "wb")
        # Requests and replies go through the supervisor's stdin and stdout; open files (HumanEval+ suites)
        # through this socket, which can carry descriptors. Its folder and settings come in its first message:
        # its argv and environment, which every process forked from it shows, say nothing of the harness.
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            proc = _FORKER.popen(
                [sys.executable, "-I", str(SUPERVISOR)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, pass_fds=(theirs.fileno(),),
                env=sandbox_env(), cwd="/", start_new_session=True, close_fds=True,
            )
        except OSError as exc:
            ours.close()
            self._release_folder()
            raise SandboxError(f"could not start the sandbox supervisor ({sys.executable}): {exc}") from exc
        finally:
            log.close()
            files = theirs.fileno()
            theirs.close()
        self._proc, self._ready, self._files, self._killed = proc, False, ours, None
        ours.settimeout(SEND_TIMEOUT_S)  # (a supervisor that takes no suites file is replaced: Sandbox.run)
        try:
            start: dict[str, Any] = {"base": self._base, "isolation": self._mode, "files_fd": files}
            view = holder.view() if holder is not None else None
            if view is not None:
                start["view"] = view
            _send(proc, start, STARTUP_TIMEOUT_S)
        except (_SupervisorGone, _NotTaken):
            pass  # it ended at once, or never read: the handshake says why
        # what this supervisor was sent, by number: (prompt, test, (suites path, offset) or None)
        self._problems: dict[tuple[str, str, tuple[str, int] | None], int] = {}
        self._owner = os.getpid()
        if wait:
            self._handshake()  # (which may have replaced it: a fallback, or a start tried again)
        return self._proc

    def _handshake(self) -> None:
        proc = cast("subprocess.Popen[bytes]", self._proc)  # set by _start, which comes first
        try:
            ready = _receive(proc, STARTUP_TIMEOUT_S)
        except (_SupervisorGone, _NoReply) as exc:
            why = _start_failure(self._log_tail(), isinstance(exc, _NoReply))
            if isinstance(exc, _NoReply):
                why = f"{why}; {_where_stuck(proc.pid)}"
            self.close()
            if isinstance(exc, _NoReply) and not self._stalled:
                # A start that hangs (twice in CI's runs, never reproduced here) is tried once more, and said:
                # the first one's stall, with where its processes waited, stays in the run's isolation line.
                self._stalled = f"a first supervisor start was abandoned: {why}"
                self._start(wait=True)
                self.isolation_reason = "; ".join(filter(None, [self.isolation_reason, self._stalled]))
                return
            raise SandboxError(f"the sandbox supervisor did not start ({sys.executable} -I {SUPERVISOR}): "
                               + "; ".join(filter(None, [why, self._stalled]))) from exc
        self._cgroups = [path for path in ready.get("cgroups") or () if isinstance(path, str)]
        if not ready.get("ready"):
            self.close()
            reason = clean_text(str(ready.get("reason", "")), DETAIL_MAX, line=True)
            fallback = {"auto": "landlock", "strict": "landlock"}.get(self._mode)
            if self._mode == "landlock" and self.requested == "auto":
                fallback = "basic"
            if fallback:  # what it found could not run a sample: try the next confinement down
                self._mode = fallback
                self._start(wait=True)
                self.isolation_reason = "; ".join(filter(None, [
                    reason, f"fell back to {self.isolation}", self.isolation_reason]))
                return
            raise SandboxError(f"the sandbox supervisor did not start: {reason}")
        self.isolation, self.isolation_reason = ready["isolation"], ready.get("reason", "")
        self.ids, self.limits = ready.get("ids", ""), ready.get("limits", "")
        if self.isolation == "basic":
            self.limits = "; ".join(filter(None, [self.limits, BASIC_ALONE]))
        self.confinement = str(ready.get("confinement", ""))
        if self.isolation != "basic":  # before the first sample: every page a candidate can read is in memory
            held = self._holder.pinned() if self._holder is not None else "no page holder"
            moved = ""
            if self.isolation == "landlock" and self._holder is not None and self._holder.strictatime:
                moved = (f"access times not held: every read moves one on {', '.join(self._holder.strictatime)} "
                         "(strictatime)")
            self.confinement = "; ".join(filter(None, [self.confinement, held, moved]))
        uid, gid = ready.get("uid"), ready.get("gid")
        self._candidate_ids = (uid, gid) if type(uid) is int and type(gid) is int and uid > 0 and gid > 0 else None
        if ready.get("keyring"):
            self.isolation_reason = "; ".join(filter(None, [self.isolation_reason,
                                                            f"session keyring kept: {ready['keyring']}"]))
        exact = {"namespaces": ("namespaces", "namespaces-userns"), "landlock": ("landlock",)}.get(self.requested)
        if exact and self.isolation not in exact:
            self.close()
            raise SandboxError(f"isolation {self.requested} is not available here: {self.isolation_reason}")
        if self.requested == "strict" and self.isolation not in HIDDEN_TESTS:
            self.close()
            raise SandboxError(f"isolation strict needs namespaces or Landlock, neither of which is available "
                               f"here: {self.isolation_reason}")
        self._ready = True

    def _log_tail(self) -> str:
        try:
            with open(os.path.join(self._base, "supervisor.log"), "rb") as handle:  # type: ignore[arg-type]  # None once closed: TypeError, caught
                lines = handle.read()[-2000:].decode("utf-8", "replace").strip().splitlines()
        except (OSError, TypeError):
            return ""
        return lines[-1] if lines else ""

    def _supervisor(self, wait: bool = True) -> subprocess.Popen[bytes]:
        if self._proc is None or self._owner != os.getpid() or self._proc.poll() is not None:
            if self._proc is not None and self._owner == os.getpid():
                self.close()
            elif self._owner != os.getpid() and self._owner_lock is not None:
                # A forked copy: the parent's supervisor and folder stay the parent's (and so does the lock, which
                # this process would otherwise keep held for the parent's folder for its whole life).
                os.close(self._owner_lock)
                self._owner_lock = self._base = None
            self._proc = None
            return self._start(wait)
        if wait and not self._ready:
            self._handshake()
        return self._proc

    def _request(self, program: Program, limits: Limits) -> tuple[dict[str, Any], float, int | None]:
        """The supervisor's request for ``program``, how long its answer may take, and the suites file to hand
        over with it: a problem's texts (and HumanEval+ suites) go to a supervisor once, then only its number."""
        suite = program.suite
        key = (program.prompt, program.test, (suite.path, suite.offset) if suite else None)
        number = self._problems.get(key)
        request: dict[str, Any] = {
            "id": self._serial,
            "problem": number or len(self._problems) + 1,
            "completion": program.completion,
            "entry_point": program.entry_point,
            "timeout_s": limits.timeout_s,
            "limits": {"memory_mb": limits.memory_mb, "file_size_mb": limits.file_size_mb,
                       "open_files": limits.open_files},
        }
        wait_s, suite_fd = SAMPLE_ATTEMPTS * limits.timeout_s, None
        if program.whole:
            request["whole"] = True
        if program.preamble:
            request["preamble"] = program.preamble
        if program.io is not None:  # each test a candidate of its own, each up to timeout_s (judged again if starved)
            try:
                rule = io_rule(program.io)
            except ValueError as exc:
                raise ValueError(f"a standard-input program's rule: {exc}") from None
            if program.io_tests < 1:
                raise ValueError(f"a standard-input program: expected at least one test, found {program.io_tests}")
            request["io"] = rule
            # each test: its time (twice, if starved), and the judge's comparison after it
            wait_s = (SAMPLE_ATTEMPTS * limits.timeout_s + IO_COMPARE_S + 2.0) * program.io_tests
        elif program.io_tests:  # a functional problem: its tests are calls, each up to timeout_s, in one candidate
            request.update(timeout_s=limits.timeout_s * program.io_tests, call_s=limits.timeout_s)
            wait_s *= program.io_tests
        if suite is not None:
            request["suite"] = {"min_time_limit_s": suite.min_time_limit_s,
                                "time_limit_factor": suite.time_limit_factor, "oracle": suite.oracle}
            # two suites, each up to SUITE_ATTEMPTS attempts: each attempt's cap is the judge's to keep; this only
            # bounds a stall
            wait_s = 2 * SUITE_ATTEMPTS * SUITE_CAP_S
        if number is None:  # this supervisor's first sample of the problem: its texts, numbered
            request.update(prompt=program.prompt, test=program.test)
            if suite is not None:
                suite_fd = os.open(suite.path, os.O_RDONLY | os.O_CLOEXEC)
                request["suite_offset"] = suite.offset
            self._problems[key] = request["problem"]
        return request, wait_s, suite_fd

    def _send(self, proc: subprocess.Popen[bytes], request: dict[str, Any], suite_fd: int | None) -> None:
        """The request, after the descriptor of its suites file when it has one (the supervisor reads it then)."""
        if suite_fd is not None:
            try:
                socket.send_fds(cast(socket.socket, self._files), [b"F"], [suite_fd])  # set by _start
            except OSError as exc:
                raise _SupervisorGone() from exc
            finally:
                os.close(suite_fd)
        _send(proc, request)

    def run(self, program: Program, limits: Limits = Limits()) -> ExecResult:  # noqa: B008 (a frozen dataclass)
        with self._lock:
            for attempt in range(2):
                proc = self._supervisor()
                self._serial += 1
                request, wait_s, suite_fd = self._request(program, limits)
                started, sent = time.monotonic(), False
                try:
                    self._send(proc, request, suite_fd)
                    sent = True
                    timeout_s = wait_s + REPLY_GRACE_S
                    reply = _receive(proc, timeout_s) if self.isolation != "basic" else \
                        _receive(proc, timeout_s, self._watch(proc))
                except BaseException as exc:
                    # Whatever was in flight is abandoned: a fresh supervisor serves the next sample.
                    if self._killed == proc.pid:  # by ``kill``, not by anything the sample did
                        self.close()
                        raise SandboxError("the harness ended this sandbox while the sample ran (its pool was "
                                           "closed); its verdict is void") from exc
                    stuck = _where_stuck(proc.pid) if isinstance(exc, _NoReply) else ""
                    # A supervisor that died or was stopped (from outside) while idle never took the request: nothing
                    # ran, so a fresh one (which knows no problem yet) runs this sample, and none is lost.
                    untaken = isinstance(exc, _NotTaken) or (isinstance(exc, _SupervisorGone) and (
                        not sent or _unread(proc)))
                    if isinstance(exc, (_NotTaken, _Stopped, _NoReply)):
                        self._kill_tree(proc)
                    self.close()
                    if untaken and attempt == 0:
                        continue
                    if untaken:
                        raise SandboxError(f"the sandbox supervisor did not take this sample's request, twice (the "
                                           f"second time {exc or 'it ended'})") from exc
                    if isinstance(exc, _Stopped):
                        return _own_doing("stopped the sandbox supervisor that runs it", started)
                    if isinstance(exc, _SupervisorGone):
                        return self._supervisor_died(started)
                    if isinstance(exc, _NoReply):
                        raise SandboxError(f"the sandbox gave no answer within {wait_s + REPLY_GRACE_S:g} s "
                                           f"({stuck})") from exc
                    raise
                if reply.get("not_run") is True and attempt == 0:  # it ran nothing: a fresh supervisor runs it
                    self.close()
                    continue
                break
            try:
                result = _result(reply, self._serial, program)
                if reply.get("retire"):
                    self.close()
                return result
            except Exception as exc:
                self.close()  # a supervisor that answered wrongly, or failed itself, serves no other sample
                if isinstance(exc, SandboxError):
                    raise
                raise SandboxError(f"the sandbox's answer could not be read: {type(exc).__name__}: {exc}") \
                    from exc

    def _watch(self, proc: subprocess.Popen[bytes]) -> Callable[[], None]:
        """In the basic sandbox, what ``_receive`` calls while it waits: a supervisor found stopped (SIGSTOP, which a
        candidate running as this user can send) is the sample's doing (``_Stopped``) once it has taken its request,
        and was stopped from outside while idle (``_NotTaken``) while the request is still in its pipe. (In the other
        modes no candidate can reach the supervisor.)"""

        def watch() -> None:
            if _stopped(proc.pid):
                raise _NotTaken("it was stopped before it read it") if _unread(proc) else _Stopped()

        return watch

    def _supervisor_died(self, started: float) -> ExecResult:
        """The supervisor ended while a sample ran. With namespaces the program cannot have done it: the
        supervisor is PID 1 of the program's PID namespace, and the kernel drops every signal sent to it from
        inside that namespace; so something outside killed it (the OOM killer, a signal from the host), and
        the sample's verdict is unknown. In the basic sandbox the program runs as the supervisor's user and
        can kill it: its verdict is void, and it is its own failure."""
        if self.isolation.startswith("namespaces"):
            raise SandboxError("the sandbox supervisor was killed from outside while this sample ran (the OOM "
                               "killer, or a signal from the host); its verdict is unknown")
        if self.isolation == "basic":
            return _own_doing("killed the sandbox supervisor that runs it", started)
        return ExecResult(
            status=Status.RUNTIME_ERROR,
            duration_ms=(time.monotonic() - started) * 1000.0,
            detail="the program killed the sandbox supervisor (its parent process); its verdict is void",
        )

    def _kill_tree(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL the supervisor and everything under it now, stopped or not (``close`` reaps it)."""
        if self._owner == os.getpid() and proc.returncode is None:
            _kill_tree(proc.pid, descendants=not self.isolation.startswith("namespaces"))

    def kill(self) -> None:
        """End the supervisor now, from any thread, without waiting for the sample in flight (whose verdict is
        then void): SIGKILL to its process group, the supervisor and its judge; its candidates die with it
        (their PID namespace, or their parent-death signal), and without namespaces every process under it is
        killed first. ``run`` sees it gone; ``close`` still reaps it."""
        proc = self._proc
        if proc is not None:
            self._killed = proc.pid
            self._kill_tree(proc)

    def close(self) -> None:
        proc, base, files = self._proc, self._base, getattr(self, "_files", None)
        self._proc = self._base = self._files = None
        if files is not None:
            files.close()
        if proc is not None and self._owner == os.getpid():
            if proc.returncode is None and _stopped(proc.pid):  # it would never read the end of its pipe
                self._kill_tree(proc)
            _end_child(proc)
            _cgroups.remove_cgroups(self._cgroups)
            self._cgroups = []
            if proc.returncode != 0 and self._candidate_ids is not None:
                _release_keyrings(*self._candidate_ids)
        if base is not None and self._owner == os.getpid():
            _cleanup.remove_tree(base)  # without recursion: a program can nest folders deeper than the limit
        self._release_folder(remove=False)

    def _release_folder(self, remove: bool = True) -> None:
        """Let go of the folder's lock (after the folder is removed: a sweeping process never takes a folder still
        in use); ``remove``: remove the folder first (a start that failed before its supervisor had it)."""
        base, lock = self._base, self._owner_lock
        self._owner_lock = None
        if remove and base is not None:
            self._base = None
            _cleanup.remove_tree(base)
        if lock is not None:
            os.close(lock)


def _release_keyrings(uid: int, gid: int) -> None:
    """A supervisor that was killed could not release its candidates' user keyrings, which the kernel keeps until
    the machine restarts (``_keyrings.release_user_keyrings``): a short-lived root helper does it (a fork here, in
    a process with threads, is not safe; a plain exec as that uid may not reach the interpreter). Best effort."""
    try:
        subprocess.run([sys.executable, "-I", str(CONTAIN), "release-keyrings", str(uid), str(gid)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=sandbox_env(), cwd="/", timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        pass


def _hold_folder(base: str) -> int | None:
    """A lock on ``base`` that this process holds for the sandbox's life (its descriptor; the kernel lets go of it
    when the process ends, however it ends): a folder whose lock is free belongs to no live harness. The lock
    file is made under another name and renamed once locked, so no sweeper ever finds it unlocked."""
    path = os.path.join(base, OWNER_LOCK)
    fd = os.open(path + ".new", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # a temporary folder whose file system has no locks (ENOLCK): never swept, never lost
        os.close(fd)
        return None
    os.rename(path + ".new", path)
    return fd


_swept = False


class _Forker:
    """The one thread of this process that starts every supervisor. A supervisor ends with its parent
    (``PR_SET_PDEATHSIG``), and Linux sends that signal when the *thread* that forked it ends, not the process: a
    Verifier made by a short-lived thread (a trainer's worker thread calling ``rewards.verifier_for`` first) lost
    its sandboxes, and every sample in flight in other threads, when that thread ended. This thread is a daemon
    that lives as long as the process (a forked child makes its own), so the supervisors still end with the
    process and only with it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._jobs: queue.SimpleQueue[tuple[Future[subprocess.Popen[bytes]], tuple[Any, ...], dict[str, Any]]] = \
            queue.SimpleQueue()

    def reset(self) -> None:
        """In a forked child: no forker thread there, and a lock another thread may have held at the fork."""
        self._lock, self._pid = threading.Lock(), None

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        """``subprocess.Popen(*args, **kwargs)``, forked by this process's forker thread."""
        with self._lock:
            if self._pid != os.getpid():  # the first start, or a forked child (which has no thread of its parent's)
                self._jobs = queue.SimpleQueue()
                threading.Thread(target=self._serve, args=(self._jobs,), name="humaneval-forker", daemon=True).start()
                self._pid = os.getpid()
            jobs = self._jobs
        done: Future[subprocess.Popen[bytes]] = Future()
        jobs.put((done, args, kwargs))
        try:
            return done.result()
        except KeyboardInterrupt:  # (Ctrl-C while the forker starts it: the process would be nobody's)
            while True:
                try:
                    wait([done])  # moments: the fork; the caller's descriptors are closed only after it
                    break
                except KeyboardInterrupt:
                    continue
            if done.exception() is None:
                started = done.result()
                started.kill()
                started.wait()
            raise

    @staticmethod
    def _serve(jobs: queue.SimpleQueue[tuple[Future[subprocess.Popen[bytes]], tuple[Any, ...],
                                              dict[str, Any]]]) -> None:
        while True:
            done, args, kwargs = jobs.get()
            try:
                done.set_result(subprocess.Popen(*args, **kwargs))
            except BaseException as exc:  # (the caller's, raised in its thread)
                done.set_exception(exc)


_FORKER = _Forker()
os.register_at_fork(after_in_child=_FORKER.reset)


def _sweep_stale_folders() -> None:
    """Remove, once per process, the sandbox folders that harness processes killed before their clean-up left in
    the temporary folder (with a killed harness's supervisor.log, and in Landlock or basic mode what its last
    sample wrote): those of this user whose owner lock (``_hold_folder``) nobody holds. A folder without the lock
    file (still being made, or made by an older version) is left alone. Best effort."""
    global _swept
    if _swept:
        return
    _swept = True
    try:
        with os.scandir(tempfile.gettempdir()) as entries:
            folders = [entry.path for entry in entries if entry.name.startswith(BASE_PREFIX)
                       and entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid
                       == os.geteuid()]
    except OSError:
        return
    for folder in folders:
        lock = os.path.join(folder, OWNER_LOCK)
        try:  # (non-blocking: a FIFO planted under that name by a program of this user never holds the sweep)
            fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: its harness lives
            now = os.lstat(lock)  # still the file locked, in that folder
            if (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino):
                _cleanup.remove_tree(folder)
        except OSError:
            pass
        finally:
            os.close(fd)


def _start_failure(tail: str, timed_out: bool) -> str:
    """Why a supervisor did not start, from its log's last line: what it printed when it failed, or the last
    start-up step it reached (``_supervisor._step``) when it never answered or ended without a word."""
    step = tail[len(STEP_PREFIX):] if tail.startswith(STEP_PREFIX) else None
    if timed_out:
        return f"no answer within {STARTUP_TIMEOUT_S:g} s" + (f" (its last start-up step: {step})" if step
                                                               else f": {tail}" if tail else "")
    if step is not None:
        return f"it ended during its start-up step {step}, without a word"
    return tail or "it ended without a word"



STUCK_SHOWN = 6  # processes named in the error of a supervisor that never answered


def _where_stuck(session: int) -> str:
    """Where the processes of a supervisor that never answered were waiting (it started them in a session of its
    own): pid, name, state and the kernel function each sleeps in, from /proc (the top of its kernel stack where
    this user may read it, as root may), for the error that reports the stall."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat_line = handle.read().decode("utf-8", "replace")
            name = stat_line[stat_line.index("(") + 1:stat_line.rindex(")")]
            fields = stat_line[stat_line.rindex(")") + 2:].split()
            if int(fields[3]) != session:  # (state, ppid, pgrp, session, ...)
                continue
            waits = _kernel_wait(entry)
        except (OSError, ValueError, IndexError):
            continue
        found.append(f"{entry} {name} {fields[0]}" + (f" in {waits}" if waits else ""))
    if not found:
        return "none of its processes is left"
    shown = sorted(found, key=lambda line: int(line.split()[0]))
    more = f", and {len(shown) - STUCK_SHOWN} more" if len(shown) > STUCK_SHOWN else ""
    return "its processes: " + ", ".join(shown[:STUCK_SHOWN]) + more


def _kernel_wait(pid: str) -> str:
    """The kernel function ``pid`` sleeps in: its stack's first frames that are not the scheduler's, or its
    wchan; "" when neither can be read."""
    try:
        with open(f"/proc/{pid}/stack") as handle:
            frames = [line.split()[-1].split("+")[0] for line in handle if line.strip()]
        frames = [f for f in frames if not re.match(r"(__)?(schedule|do_syscall|entry_SYSCALL|x64_sys|__x64_sys)", f)]
        if frames:
            return " < ".join(frames[:3])
    except (OSError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/wchan") as handle:
            wchan = handle.read().strip()
        return "" if wchan in ("", "0") else wchan
    except OSError:
        return ""


def _result(reply: object, request_id: int, program: Program) -> ExecResult:
    """The supervisor's reply as an ExecResult, validated field by field; SandboxError if anything is off."""
    if not isinstance(reply, dict) or reply.get("id") != request_id:
        raise SandboxError("the sandbox answered a request other than this sample's; its answer is void")
    duration: Any  # whatever JSON value the supervisor sent: checked below
    status, duration = reply.get("status"), reply.get("duration_ms")
    if status not in VERDICTS:
        raise SandboxError(f"the sandbox answered with an unknown status ({clean_text(repr(status), 40)})")
    if type(duration) not in (int, float) or not math.isfinite(duration) or duration < 0:
        raise SandboxError(f"the sandbox answered with an invalid duration ({clean_text(repr(duration), 40)})")
    texts = {}
    for name, cap in (("detail", DETAIL_MAX), ("stdout", OUTPUT_MAX), ("stderr", OUTPUT_MAX),
                      ("traceback", TRACEBACK_MAX)):
        value = reply.get(name, "")
        if not isinstance(value, str):
            raise SandboxError(f"the sandbox answered with a {name} that is not text")
        texts[name] = clean_text(value, cap, line=name == "detail")
    if status == "harness_error":
        raise SandboxError(f"the sandbox failed: {texts['detail']}")
    location = locate(program, reply.get("where"))
    detail = texts.pop("detail")
    if location is not None:
        detail = clean_text(f"{detail} (at {location})", DETAIL_MAX, line=True)
    suites = _suites(reply.get("suites"), program) if program.suite is not None else None
    return ExecResult(Status(status), float(duration), detail, location=clean_text(location, DETAIL_MAX, line=True)
                      if location else None, suites=suites, **texts)


def _suites(value: object, program: Program) -> dict[str, dict[str, str]]:
    """A HumanEval+ reply's two suites, validated: each a verdict status and a detail."""
    if not isinstance(value, dict) or set(value) != {"base", "plus"}:
        raise SandboxError("the sandbox answered a HumanEval+ sample without both of its suites")
    suites: dict[str, dict[str, str]] = {}
    for name, suite in value.items():
        if not isinstance(suite, dict) or suite.get("status") not in VERDICTS or \
                not isinstance(suite.get("detail", ""), str):
            raise SandboxError(f"the sandbox answered with an invalid {name} suite")
        detail = suite.get("detail", "")
        location = locate(program, suite.get("where"))
        if location is not None:
            detail = f"{detail} (at {location})"
        suites[name] = {"status": suite["status"], "detail": clean_text(detail, DETAIL_MAX, line=True)}
    return suites


class _SupervisorGone(Exception):
    pass


class _NoReply(Exception):
    pass


class _NotTaken(Exception):
    """The supervisor did not take its request: it read nothing of it for SEND_TIMEOUT_S, or it was stopped."""


class _Stopped(Exception):
    """The basic sandbox's supervisor was stopped while it ran a sample: by the sample, which runs as its user."""


def _own_doing(what: str, started: float) -> ExecResult:
    """A sample that reached the basic sandbox's own processes: its failure, never the harness's."""
    return ExecResult(Status.RUNTIME_ERROR, (time.monotonic() - started) * 1000.0,
                      f"the program {what} (basic sandbox: it runs as your user); its verdict is void")


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any], timeout_s: float = SEND_TIMEOUT_S) -> None:
    """Write ``message`` to the supervisor, never blocking for good: a supervisor that reads none of it for
    ``timeout_s`` (a stopped one, whose pipe is full, at once) is ``_NotTaken``; one that is gone,
    ``_SupervisorGone``."""
    body = json.dumps(message).encode()
    data = memoryview(struct.pack(">I", len(body)) + body)
    stdin = cast("IO[bytes]", proc.stdin)  # a pipe (stdin=PIPE): never None
    try:
        fd = stdin.fileno()
        os.set_blocking(fd, False)
    except ValueError as exc:  # closed
        raise _SupervisorGone() from exc
    deadline = time.monotonic() + timeout_s
    while data:
        try:
            data = data[os.write(fd, data):]
            deadline = time.monotonic() + timeout_s  # it reads: the time is for the next byte
            continue
        except BlockingIOError:
            pass
        except OSError as exc:  # EPIPE: it is gone
            raise _SupervisorGone() from exc
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _NotTaken(f"it read none of it for {timeout_s:g} s")
        if _stopped(proc.pid):
            raise _NotTaken("it was stopped")
        select.select([], [fd], [], min(remaining, WATCH_S))


def _receive(proc: subprocess.Popen[bytes], timeout_s: float, watch: Callable[[], None] | None = None) -> Any:
    """The supervisor's next message: a JSON value, not validated yet (``_result`` does). ``watch``, when given, is
    called every WATCH_S while nothing comes, and may raise."""
    fd = cast("IO[bytes]", proc.stdout).fileno()  # a pipe (stdout=PIPE): never None
    deadline = time.monotonic() + timeout_s

    def read_exact(size: int) -> bytes:
        chunks = []
        while size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _NoReply()
            if not select.select([fd], [], [], remaining if watch is None else min(remaining, WATCH_S))[0]:
                if watch is not None:
                    watch()
                continue
            chunk = os.read(fd, size)
            if not chunk:
                raise _SupervisorGone()
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    size = struct.unpack(">I", read_exact(4))[0]
    if size > MAX_REPLY_BYTES:  # what a sample's reply can hold is capped far below this: not an answer
        raise SandboxError(f"the sandbox sent a reply of {size} bytes; its answer is void")
    return json.loads(read_exact(size))


def _unread(proc: subprocess.Popen[bytes]) -> int:
    """Bytes written to the supervisor's pipe that it has not read (0 when that cannot be told)."""
    try:
        found = fcntl.ioctl(cast("IO[bytes]", proc.stdin).fileno(), termios.FIONREAD, b"\0\0\0\0")
    except (OSError, ValueError):
        return 0
    return int(struct.unpack("i", found)[0])


def _state(pid: int) -> bytes:
    """Process ``pid``'s state letter (``R``, ``S``, ``T`` stopped, ``Z`` a zombie...), b"" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return b""


def _stopped(pid: int) -> bool:
    return _state(pid) in (b"T", b"t")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found.extend(int(child) for child in handle.read().split())
    except (OSError, ValueError):
        pass
    return found


def _kill_tree(pid: int, descendants: bool = True) -> None:
    """SIGKILL a supervisor (``pid``, our child) with its process group, the judge and the fork server in it, stopped
    or not. With ``descendants`` (no PID namespace holds them), every process under it first, while it lives: it is
    stopped for that, and a subreaper, so every orphan comes back under it and none escapes to init; rounds until
    none is left but zombies (a program forking as fast as it can is bounded by its process limit)."""
    try:
        if descendants:
            os.kill(pid, signal.SIGSTOP)
            for _ in range(KILL_ROUNDS):
                found: list[int] = []
                stack = _children(pid)
                while stack:
                    child = stack.pop()
                    found.append(child)
                    stack.extend(_children(child))
                found = [child for child in found if _state(child) not in (b"", b"Z", b"X")]
                if not found:
                    break
                for child in found:
                    try:
                        os.kill(child, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
