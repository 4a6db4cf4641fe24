"""The sandbox supervisor: a warm process that runs one sample at a time in two fresh forked children.

Started by :class:`pytest_humaneval.sandbox.Sandbox` as ``python -I _supervisor.py BASE_DIR ISOLATION`` with a
stripped environment. It reads length-prefixed JSON requests on fd 0 and answers on fd 1. It imports nothing
from ``pytest_humaneval`` (so nothing of the harness is inherited by the candidate) and only the standard
library, plus its two siblings ``_wire.py`` and ``_judge.py``, loaded by path.

Each sample is two processes: the *candidate* (isolated, limited, unprivileged) executes ``prompt +
completion`` and serves calls to the entry point; the *judge* (trusted) executes the dataset's prompt and test
and calls ``check`` with a stand-in that forwards each call. Only plain values cross between them
(``_wire``), and the verdict is the judge's: nothing the completion does to its own interpreter can change the
judge's code or its verdict.

Why a warm supervisor rather than a fresh interpreter per sample: interpreter start-up and imports are paid once,
each sample still gets a brand-new process (a fork), and the wall-clock budget starts at the fork, so a busy
machine's start-up latency never eats into the candidate's time.

Why the supervisor is a child subreaper: every orphan of a sample (a double-forked, setsid'ed daemon) is
re-parented to the supervisor rather than to init, so "kill every descendant" is a walk of the supervisor's own
children and nothing can escape it by changing session or process group.
"""

from __future__ import annotations

import builtins
import ctypes
import json
import linecache
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time

CALLS_FD = 3  # in each child: the two pipes between candidate and judge (and the judge's verdict pipe)
EXCERPT_BYTES = 4096
# Modules that HumanEval programs import all the time: imported once here, inherited by every fork.
# `random` re-seeds itself in each forked child (os.register_at_fork), so samples do not share a stream.
PRELOAD = (
    "math", "re", "string", "collections", "itertools", "functools", "heapq", "bisect", "hashlib",
    "typing", "random", "copy", "fractions", "statistics", "operator", "json", "decimal",
)

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (syscalls added after 5.0 are unified)
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
# Unprivileged uids for candidates start here: no passwd entry, no files, no capabilities. Each supervisor
# takes its own (from its host pid, unique while it lives), so concurrent samples cannot touch each other.
SANDBOX_UID_BASE = 200_000
SANDBOX_NPROC = 64
JUDGE_GRACE_S = 1.0  # how long past the deadline the supervisor waits for the judge's timeout verdict
WORK_DIR = "work"  # each sample's working dir, under the supervisor's base dir
_LIBC = ctypes.CDLL(None, use_errno=True)


def _sibling(name: str):
    """Load ``_NAME.py`` from this folder by path: started as ``python -I``, the folder is not on sys.path, and
    nothing of the package (nor pytest) may come in with it."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"_{name}.py")
    spec = importlib.util.spec_from_file_location(f"_humaneval_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_wire = _sibling("wire")
_judge = _sibling("judge")
_judge._OWN_FILES = (os.path.abspath(__file__), _wire.__file__, _judge.__file__)


def _prctl(option: int, value: int) -> bool:
    return _LIBC.prctl(option, value, 0, 0, 0) == 0


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def arg(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    if _LIBC.mount(arg(source), arg(target), arg(fstype), flags, arg(data)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {target}: {os.strerror(errno)}")


class Isolation:
    """What this supervisor applied, and why.

    - 'namespaces' (the harness is root): own PID/net/mount/IPC/UTS namespaces, own /proc and /tmp; candidates
      run as an unprivileged uid of their own, with no_new_privs.
    - 'namespaces-userns' (not root, unprivileged user namespaces allowed): the same namespaces inside a new
      user namespace; there is no other uid to switch to, so candidates run with every capability dropped,
      no_new_privs, on a read-only view of the filesystem (only their own /tmp is writable), with the user's
      home folder hidden.
    - 'basic': a subprocess sandbox.
    """

    def __init__(self, level: str, reason: str = "", uid: int | None = None, drop_caps: bool = False) -> None:
        self.level, self.reason, self.uid, self.drop_caps = level, reason, uid, drop_caps


def isolate(requested: str) -> Isolation:
    """Enter fresh namespaces and become PID 1 there; on any obstacle stay basic and say why."""
    if requested == "basic":
        return Isolation("basic", "params.isolation is basic")
    user_ns = os.geteuid() != 0
    host_pid, outer_uid, outer_gid = os.getpid(), os.geteuid(), os.getegid()
    flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
    if _LIBC.unshare(flags | (CLONE_NEWUSER if user_ns else 0)) != 0:
        errno = ctypes.get_errno()
        what = "unprivileged user namespaces are not available" if user_ns else "unshare() refused"
        return Isolation("basic", f"{what}: {os.strerror(errno)}")
    if user_ns:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {outer_uid} 1"), ("gid_map", f"0 {outer_gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    child = os.fork()  # the child is PID 1 of the new PID namespace: when it exits, the kernel kills the rest
    if child:
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])  # the harness's channel is the child's
        status = os.waitpid(child, 0)[1]
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.chdir("/")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if not user_ns:
        _mask_and_expose(hidden=())
        return Isolation("namespaces", uid=SANDBOX_UID_BASE + host_pid % 1_000_000)
    _read_only("/")  # candidates share this uid with the user: nothing of theirs may be writable
    _mask_and_expose(hidden=(_home(outer_uid),))
    _prctl(PR_SET_DUMPABLE, 0)  # same uid as the candidates: keep them out of this process
    return Isolation("namespaces-userns", drop_caps=True)


def _home(uid: int) -> str:
    try:
        import pwd

        return os.path.realpath(pwd.getpwuid(uid).pw_dir)
    except (ImportError, KeyError):
        return ""


def _read_only(path: str) -> None:
    """Every mount at and below ``path`` read-only in this mount namespace (mount_setattr, Linux 5.12+)."""

    class MountAttr(ctypes.Structure):
        _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                    ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]

    attr = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    if _LIBC.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE, ctypes.byref(attr),
                     ctypes.sizeof(attr)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"read-only {path}: {os.strerror(errno)}")


def _drop_capabilities() -> None:
    """No capability left, in any set, for this process and everything it starts."""
    for cap in range(64):
        _prctl(PR_CAPBSET_DROP, cap)  # EINVAL past the last capability the kernel knows: fine
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if _LIBC.capset(header, data) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"capset: {os.strerror(errno)}")


def _traversable(path: str) -> bool:
    return bool(os.stat(path).st_mode & 0o001)


def _mask_and_expose(hidden: tuple[str, ...]) -> None:
    """Give the candidate fresh, empty /tmp and /dev/shm, and hide every folder an unprivileged uid could not
    pass through anyway (such as /root), and the ``hidden`` ones, except the interpreter and site-packages it
    needs to import from.

    The interpreter often lives in a folder closed to other users (pyenv under /root) or under /tmp (a CI
    venv), so those folders are covered by an empty tmpfs and the import paths are bind-mounted back,
    read-only, at their own paths. The candidate then sees exactly the code it may import, nothing else there.
    """
    needed = sorted({os.path.realpath(p) for p in (*sys.path, sys.prefix, sys.base_prefix, sys.exec_prefix)
                     if p and os.path.isdir(p)})
    needed = [p for i, p in enumerate(needed) if not any(p.startswith(q + "/") for q in needed[:i])]
    masks = {"/tmp": "mode=1777,size=1g", "/dev/shm": "mode=1777,size=64m"}  # path -> tmpfs options
    masks.update((path, "mode=0755,size=1m") for path in hidden if path and path != "/")
    for path in needed:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            ancestor = "/" + "/".join(parts[:depth])
            if not _traversable(ancestor):
                masks.setdefault(ancestor, "mode=0755,size=1m")
                break
    masks = {m: options for m, options in masks.items() if os.path.isdir(m)
             and not any(m.startswith(other + "/") for other in masks)}
    keep = {path: os.open(path, os.O_PATH) for path in needed
            if any(path == m or path.startswith(m + "/") for m in masks)}
    for mask, options in masks.items():
        _mount("tmpfs", mask, "tmpfs", MS_NOSUID | MS_NODEV, options)
    for path, fd in keep.items():
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_message(fd: int) -> dict | None:
    header = _read_exact(fd, 4)
    if header is None:
        return None
    body = _read_exact(fd, struct.unpack(">I", header)[0])
    return None if body is None else json.loads(body)


def write_message(fd: int, message: dict) -> None:
    body = json.dumps(message).encode()
    _write_all(fd, struct.pack(">I", len(body)) + body)


# --------------------------------------------------------------------------------------- the two children


def _candidate(request: dict, test_code, work: str, out_fd: int, err_fd: int, requests: int, replies: int,
               isolation: Isolation) -> None:
    """Runs in the candidate's forked process: isolate and limit it, then serve calls (``_judge.serve``).

    Everything that is the same for every sample (HOME and TMPDIR, signal dispositions, the warmed-up
    interpreter) is set once in the supervisor: each line here is paid again by every sample, in copied pages
    as much as in time.
    """
    os.setsid()
    if not isolation.level.startswith("namespaces"):
        # With namespaces the supervisor is PID 1 of the sample's PID namespace: when it dies, the kernel
        # kills every process in it, this one included.
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.dup2(requests, CALLS_FD)
    os.dup2(replies, CALLS_FD + 1)
    os.closerange(CALLS_FD + 2, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    _limit(request)
    os.chdir(work)
    uid = isolation.uid
    if isolation.drop_caps:  # in its own user namespace the process count is its own, so NPROC bounds it
        resource.setrlimit(resource.RLIMIT_NPROC, (SANDBOX_NPROC, SANDBOX_NPROC))
        _drop_capabilities()
        if not _prctl(PR_SET_NO_NEW_PRIVS, 1):
            os._exit(71)
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (SANDBOX_NPROC, SANDBOX_NPROC))
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        # Changing uid made the process non-dumpable, which hides even its own /proc/self from it; it holds
        # nothing secret, and only processes of its own uid (its own descendants) could look.
        if not (_prctl(PR_SET_NO_NEW_PRIVS, 1) and _prctl(PR_SET_DUMPABLE, 1)):
            os._exit(71)
    _judge.serve(request["prompt"], request["completion"], request["entry_point"], test_code, CALLS_FD,
                 CALLS_FD + 1)
    os._exit(0)


def _limit(request: dict) -> None:
    limits = request["limits"]
    mib = 1024 * 1024
    cpu = int(request["timeout_s"]) + 2
    for which, value in (
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, limits["memory_mb"] * mib),
        (resource.RLIMIT_FSIZE, limits["file_size_mb"] * mib),
        (resource.RLIMIT_NOFILE, limits["open_files"]),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(which, (value, value))


def _judge_code(prompt: str, test: str) -> tuple:
    """The dataset's prompt and test, compiled once per problem in the supervisor and inherited by every fork.
    Trusted text (the dataset's, never a completion), compiled without this module's compiler flags."""
    key = (prompt, test)
    code = _JUDGE_CODE.get(key)
    if code is None:
        if len(_JUDGE_CODE) >= 1024:
            _JUDGE_CODE.clear()
        try:
            prompt_code = compile(prompt, _judge.PROMPT_FILE, "exec", dont_inherit=True)
        except SyntaxError:  # a prompt that is not a module on its own: the judge goes without its helpers
            prompt_code = compile("", _judge.PROMPT_FILE, "exec", dont_inherit=True)
        code = _JUDGE_CODE[key] = (prompt_code, compile(test, _judge.TEST_FILE, "exec", dont_inherit=True))
    return code


_JUDGE_CODE: dict = {}


# ----------------------------------------------------------------------------------------- the supervisor


def _children_of(pid: int) -> list[int]:
    """Direct children of ``pid``: /proc/PID/task/*/children where the kernel has it (CONFIG_PROC_CHILDREN),
    else a scan of every process's parent."""
    try:
        found = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.extend(int(child) for child in handle.read().split())
        return found
    except FileNotFoundError:
        if not os.path.exists(f"/proc/{pid}"):
            return []
    except OSError:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    # the parent pid is the second field after the ")" that closes the command name
                    if int(handle.read().rpartition(")")[2].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return found


def _children() -> list[int]:
    return _children_of(os.getpid())


def _subtree(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(_children_of(current))
    return found


def _has_children() -> bool:
    """Whether any process, running or a zombie, still has this one as its parent. Without one there is no
    descendant either: orphans are re-parented to this process (a subreaper), so every descendant's line of
    parents ends in a child of ours. One syscall, against a walk of /proc."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def kill_descendants(spare: int | None = None, max_rounds: int = 1000) -> None:
    """SIGKILL every descendant of this process but ``spare`` (the judge); orphans come back to us
    (subreaper), so loop until none."""
    for _ in range(max_rounds):
        if spare is None and not _has_children():
            break
        children = [child for child in _children() if child != spare]
        if not children:
            break
        for child in children:
            for pid in _subtree(child):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for child in children:
            try:
                os.waitpid(child, 0)
            except ChildProcessError:
                pass


def _wait(pid: int, deadline: float) -> tuple[int | None, bool]:
    """Wait for the child until the deadline; (wait status or None, timed_out)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status, False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, True
            if pidfd is not None:
                select.select([pidfd], [], [], remaining)
            else:
                time.sleep(min(remaining, 0.002))
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _excerpt(fd: int) -> str:
    """The start of a captured stream, read through the supervisor's own descriptor of the file."""
    size = os.fstat(fd).st_size
    if not size:
        return ""
    text = os.pread(fd, EXCERPT_BYTES, 0).decode("utf-8", "replace")
    if size > EXCERPT_BYTES:
        text += f"\n... [{size - EXCERPT_BYTES} more bytes not shown]"
    return text


def _signal_detail(signum: int, request: dict) -> str:
    limits = request["limits"]
    reasons = {
        signal.SIGXCPU: "CPU time limit exceeded",
        signal.SIGXFSZ: f"file size limit exceeded ({limits['file_size_mb']} MiB; output flood?)",
        signal.SIGSEGV: "segmentation fault (C stack overflow or a crash in native code)",
        signal.SIGKILL: "killed (SIGKILL)",
    }
    name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)
    return f"killed by {name}: {reasons.get(signum, 'terminated by a signal')}"


def run_sample(request: dict, base: str, serial: int, isolation: Isolation, judge: "JudgeProcess") -> dict:
    """Run one sample: the candidate in a fresh, isolated child (in a fresh, empty working dir, always at
    ``BASE/work`` so HOME and TMPDIR are set once, in the supervisor, its output captured in files no path
    leads to), judged by the judge process over two pipes. The wall-clock budget starts at the fork and covers
    both; the verdict is the judge's."""
    work = os.path.join(base, WORK_DIR)
    try:
        os.mkdir(work, 0o700)
    except FileExistsError:  # only a removal that failed after the previous sample leaves it behind
        _clear(work, serial)
        os.mkdir(work, 0o700)
    if isolation.uid is not None:
        os.chown(work, isolation.uid, isolation.uid)
    test_code = _judge_code(request["prompt"], request["test"])[1]
    out_fd, err_fd = _capture(base, "stdout"), _capture(base, "stderr")
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    timeout_s = float(request["timeout_s"])

    started = time.monotonic()
    candidate = os.fork()
    if candidate == 0:
        try:
            _candidate(request, test_code, work, out_fd, err_fd, requests_r, replies_w, isolation)
        finally:
            os._exit(70)
    os.close(requests_r)
    os.close(replies_w)
    try:
        record = judge.judge(request, requests_w, replies_r, started + timeout_s)
    finally:
        os.close(requests_w)
        os.close(replies_r)
    duration_ms = (time.monotonic() - started) * 1000.0
    candidate_status = None
    if record.get("candidate_gone"):
        # The judge saw the candidate's pipe close: wait for the process itself, whose end says why.
        candidate_status, _ = _wait(candidate, time.monotonic() + 1.0)
    else:
        done, status = os.waitpid(candidate, os.WNOHANG)
        candidate_status = status if done else None
    if candidate_status is None:
        try:
            os.killpg(candidate, signal.SIGKILL)
        except OSError:
            pass
    kill_descendants(spare=judge.pid)
    reply = {"duration_ms": round(duration_ms, 3), "stdout": _excerpt(out_fd), "stderr": _excerpt(err_fd)}
    for fd in (out_fd, err_fd):
        os.close(fd)
    _clear(work, serial)
    reply.update(_verdict(record, candidate_status, request))
    return reply


def _capture(base: str, name: str) -> int:
    """A file for one captured stream, reachable by no path (RLIMIT_FSIZE bounds it like any file)."""
    try:
        return os.memfd_create(f"humaneval-{name}")
    except (AttributeError, OSError):  # no memfd (old kernel or libc): a file, unlinked at once
        path = os.path.join(base, f"{name}.{os.getpid()}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        os.unlink(path)
        return fd


def _clear(work: str, serial: int) -> None:
    """The working dir, gone: the common case (the program left it empty) in one syscall, anything else
    through rmtree; what even that cannot remove is moved aside, so the next sample still starts empty."""
    try:
        os.rmdir(work)
        return
    except FileNotFoundError:
        return
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
    if os.path.lexists(work):
        os.rename(work, f"{work}.left-{serial}")


class JudgeProcess:
    """The trusted judge: one process, forked from this warm supervisor once, that judges sample after sample.

    Not the supervisor itself: while a candidate forked from the supervisor lives, every page the supervisor
    writes is copied (copy-on-write), and judging writes many (measured: ~250 page faults, about 0.7 ms a
    sample). Not a fork per sample either, which costs the same again. Each sample gets fresh globals, and
    ``_judge.judge`` puts back what a test could change in the process; a judge that overran its deadline or
    failed is replaced by a fresh fork, so nothing of one sample's judge reaches the next.

    The candidate cannot reach this process: it never holds its socket, and it either runs as another uid or
    this process is non-dumpable (as the supervisor is), so it can neither write here nor read or trace it.
    """

    def __init__(self) -> None:
        self.pid: int | None = None
        self._sock = None

    def start(self) -> None:
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                _judge_main(theirs)
            finally:
                os._exit(70)
        theirs.close()
        self.pid, self._sock = pid, ours

    def judge(self, request: dict, requests: int, replies: int, deadline: float) -> dict:
        """The judge's record for the candidate behind ``requests``/``replies``; a timeout when the deadline
        passed first, a harness_error when the judge process failed (it is replaced for the next sample)."""
        import socket

        if self.pid is None:
            self.start()
        body = json.dumps({"prompt": request["prompt"], "test": request["test"],
                           "entry_point": request["entry_point"],
                           "seconds": deadline - time.monotonic()}).encode()
        data = struct.pack(">I", len(body)) + body
        try:
            sent = socket.send_fds(self._sock, [data], [requests, replies])
            if sent < len(data):
                self._sock.sendall(data[sent:])
            record = _read_message_until(self._sock.fileno(), deadline + JUDGE_GRACE_S)
        except (OSError, ValueError) as exc:
            self.stop()
            return {"status": "harness_error", "message": f"the judge process failed: {exc}"}
        if record is None:
            self.stop()
            if time.monotonic() >= deadline:
                return {"status": "timeout"}
            return {"status": "harness_error", "message": "the judge process ended without a verdict"}
        if record.get("status") in ("timeout", "harness_error"):
            self.stop()  # a test that overran or failed may have left anything behind: a fresh judge next
        return record

    def finish(self) -> None:
        """End the judge process the ordinary way (it exits when its socket closes), and reap it."""
        if self.pid is not None:
            self._sock.close()
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        self.pid, self._sock = None, None

    def stop(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self._sock.close()
        self.pid, self._sock = None, None


def _judge_main(sock) -> None:
    """The judge process's loop: a request and the judge's ends of the candidate's two pipes in, a record out."""
    import socket

    fd = sock.fileno()
    os.closerange(3, fd)  # nothing of the harness's channel, nor of the sample being forked
    os.closerange(fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    while True:
        data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 2)
        if not data:
            os._exit(0)
        try:
            size = struct.unpack(">I", data[:4])[0]
            body = data[4:]
            while len(body) < size:
                chunk = sock.recv(size - len(body))
                if not chunk:
                    os._exit(0)
                body += chunk
            request = json.loads(body)
            prompt_code, test_code = _judge_code(request["prompt"], request["test"])
            for name, text in ((_judge.PROMPT_FILE, request["prompt"]), (_judge.TEST_FILE, request["test"])):
                linecache.cache[name] = (len(text), None, text.splitlines(True), name)  # tracebacks quote them
            requests, replies = fds
            record = _judge.judge(prompt_code, test_code, request["entry_point"], requests, replies,
                                  request["seconds"])
        except Exception as exc:
            record = {"status": "harness_error", "message": f"the judge failed: {type(exc).__name__}: {exc}"}
        finally:
            for handle in fds:
                os.close(handle)
        write_message(fd, record)


def _read_message_until(fd: int, deadline: float) -> dict | None:
    """A length-prefixed JSON message, or None at end of file or when the deadline passes first."""
    chunks, needed, header = [], 4, None
    while needed:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, needed)
        if not chunk:
            return None
        chunks.append(chunk)
        needed -= len(chunk)
        if not needed and header is None:
            header = b"".join(chunks)
            chunks, needed = [], struct.unpack(">I", header)[0]
    record = json.loads(b"".join(chunks))
    return record if isinstance(record, dict) else None


def _verdict(record: dict, candidate_status: int | None, request: dict) -> dict:
    if record["status"] == "timeout":
        return {"status": "timeout", "detail": f"timed out after {float(request['timeout_s']):g} s"}
    reply = {"status": record["status"], "detail": record.get("message", ""), "where": record.get("where"),
             "traceback": record.get("traceback", "")}
    if record.get("candidate_gone"):
        if candidate_status is None:
            reply["detail"] = "the program closed its channel to the test before check() finished"
        elif os.WIFSIGNALED(candidate_status):
            reply["detail"] = _signal_detail(os.WTERMSIG(candidate_status), request)
        else:
            reply["detail"] = f"the program ended with exit code {os.WEXITSTATUS(candidate_status)} before " \
                              "check() finished"
    return reply


_WARM_UP = {
    "prompt": 'from typing import List\n\n\ndef first(values: List[int]) -> int:\n    """The first value."""\n',
    "completion": "    if not values:\n        raise ValueError('empty')\n    return values[0]\n",
    "test": "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate([1, 2]) == 1\n    try:\n"
            "        candidate([])\n    except ValueError:\n        pass\n"
            "    assert candidate([2, -0.5, 'x', (1,), {1: {2}}, 1 << 70]) == 1, 'failing on purpose'\n",
    "entry_point": "first",
}


def _warm_up() -> None:
    """Do once, here, what every sample would otherwise do first in its own fork: import the usual modules,
    and take one trusted sample through both halves (compile, serving calls, encoding and decoding values, a
    raised exception, a failing assertion and its description). Their lazily built state (the compiler's ~120
    AST node types above all) then exists before the fork instead of being rebuilt, page by copied page, in
    every child: about 1.4 ms a sample. The candidate half runs in a thread here, on a pair of pipes.
    """
    import threading

    for name in PRELOAD:
        __import__(name)
    sample = _WARM_UP
    prompt_code, test_code = _judge_code(sample["prompt"], sample["test"])
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    server = threading.Thread(target=_judge.serve, args=(sample["prompt"], sample["completion"],
                                                         sample["entry_point"], test_code, requests_r, replies_w))
    server.start()
    json.dumps(_judge.judge(prompt_code, test_code, sample["entry_point"], requests_w, replies_r))
    os.close(requests_w)
    server.join()
    for fd in (requests_r, replies_r, replies_w):
        os.close(fd)
    _JUDGE_CODE.clear()
    linecache.cache.pop(_judge.CANDIDATE_FILE, None)
    builtins.__dict__.pop("_", None)


def main() -> int:
    base, requested = sys.argv[1], sys.argv[2]
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # The harness's channel moves off fds 0 and 1, which point at /dev/null from here on: whatever a test
    # reads or prints while it is judged in this process can never reach the channel.
    channel_in, channel_out = os.dup(0), os.dup(1)  # fds 3 and 4: every per-sample fd comes after them
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    # Default dispositions, inherited as they are by every sample: the harness started this process in a
    # session of its own, so a Ctrl-C at the terminal never reaches it (the harness decides when it stops);
    # Python's KeyboardInterrupt handler goes, and an ignored disposition inherited from the harness (they
    # survive exec) is undone.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    try:
        isolation = isolate(requested)
    except OSError as exc:  # namespaces entered but not set up: this process is unusable, say why
        write_message(channel_out, {"ready": False, "reason": f"namespace set-up failed: {exc}"})
        return 1
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if isolation.level.startswith("namespaces"):
        base = "/tmp/humaneval"  # on this namespace's own tmpfs; the harness's folder is out of view
        os.makedirs(base, mode=0o711, exist_ok=True)
        os.chmod(base, 0o711)
    os.environ["HOME"] = os.environ["TMPDIR"] = os.path.join(base, WORK_DIR)  # the same for every sample
    _warm_up()
    _prctl(PR_SET_DUMPABLE, 0)  # no candidate may trace, or read the memory of, the judge that runs here
    write_message(channel_out, {"ready": True, "isolation": isolation.level, "reason": isolation.reason})
    judge = JudgeProcess()
    judge.start()
    serial = 0
    while True:
        request = read_message(channel_in)
        if request is None:  # the harness closed the pipe: done, without the interpreter's slow clean-up
            judge.finish()
            os._exit(0)
        serial += 1
        try:
            reply = run_sample(request, base, serial, isolation, judge)
        except Exception as exc:  # the harness's own failure: say so, keep serving
            reply = {"status": "harness_error", "detail": f"{type(exc).__name__}: {exc}", "duration_ms": 0.0}
        reply["id"] = request.get("id")
        write_message(channel_out, reply)


if __name__ == "__main__":
    sys.exit(main())
