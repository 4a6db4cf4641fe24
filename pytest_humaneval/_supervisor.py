"""The sandbox supervisor: a warm process that runs one untrusted program at a time in a fresh forked child.

Started by :class:`pytest_humaneval.sandbox.Sandbox` as ``python -I _supervisor.py BASE_DIR`` with a stripped
environment. It reads length-prefixed JSON requests on fd 0 and answers on fd 1. It imports nothing from
``pytest_humaneval`` (so nothing of the harness is inherited by the candidate) and only the standard library.

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
import operator
import os
import re
import resource
import select
import shutil
import signal
import struct
import sys
import time
import traceback

PROGRAM_FILENAME = "<humaneval>"
VERDICT_FD = 3
EXCERPT_BYTES = 4096
MAX_VERDICT_BYTES = 1 << 20
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
WORK_DIR = "work"  # each sample's working dir, under the supervisor's base dir
_CHECK_CALL = re.compile(r"check\(([A-Za-z_][A-Za-z0-9_]*)\)")
_LIBC = ctypes.CDLL(None, use_errno=True)
_REAL_ASSERTION_ERROR = AssertionError  # what `assert` raises, whatever the program rebinds


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
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
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


# ---------------------------------------------------------------------------------------------- the child


def _describe(exc: BaseException) -> dict:
    """The decisive line of a failure: exception type and message, and where in the program it was raised."""
    try:
        text = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    except BaseException:  # a hostile __str__
        message = type(exc).__name__
    lineno = None
    if isinstance(exc, SyntaxError) and exc.filename == PROGRAM_FILENAME:
        lineno = exc.lineno
    else:
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == PROGRAM_FILENAME:
                lineno = frame.lineno
    try:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        # Drop the supervisor's own frame: the trace starts in the program.
        text = "".join(line for line in lines if __file__ not in line)
    except BaseException:
        text = message
    return {"message": message[:2000], "lineno": lineno, "traceback": text[-4000:]}


def _child(request: dict, nonce: bytes, work: str, out_fd: int, err_fd: int, verdict_fd: int,
           isolation: Isolation) -> None:
    """Runs in the forked child; never returns.

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
    os.dup2(verdict_fd, VERDICT_FD)
    os.closerange(VERDICT_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])

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

    program = request["program"]
    # Tracebacks (ours and any the program prints itself) quote the program's own lines.
    linecache.cache[PROGRAM_FILENAME] = (len(program), None, program.splitlines(True), PROGRAM_FILENAME)
    # The reference harness executes with empty globals: `__name__` then resolves to "builtins", so an
    # `if __name__ == "__main__":` block in a completion does not run.
    exec_globals: dict = {}
    try:
        _execute(program, exec_globals)
    except _REAL_ASSERTION_ERROR as exc:
        verdict = {"status": "assertion_failed", **_describe(exc)}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: check() did not finish
        verdict = {"status": "runtime_error", **_describe(exc)}
        if isinstance(exc, SystemExit):
            verdict["message"] = f"SystemExit({exc.code!r}): the program exited before check() finished"
    else:
        verdict = {"status": "passed"}
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    try:
        _write_all(VERDICT_FD, nonce + b" " + json.dumps(verdict).encode())
    finally:
        os._exit(0)


def _execute(program: str, exec_globals: dict) -> None:
    """Run the program as the reference does, but hand check() a guarded candidate.

    The final `check(NAME)` line is replaced by the same call with NAME wrapped: what the candidate returns is
    turned into plain builtin values before the test compares it (so a rigged __eq__ cannot pass a test),
    and builtins are restored after each call (so the test's own asserts and helpers stay honest).
    """
    body, _, last = program.rpartition("\n")
    call = _CHECK_CALL.fullmatch(last.strip())
    if call is None:
        exec(compile(program, PROGRAM_FILENAME, "exec"), exec_globals)
        return
    exec(compile(body, PROGRAM_FILENAME, "exec"), exec_globals)
    if "check" not in exec_globals or call.group(1) not in exec_globals:
        exec(compile(program, PROGRAM_FILENAME, "exec"), {})  # reproduces the reference's NameError
        return
    exec_globals["check"](_guard(exec_globals[call.group(1)]))


class NotPlainValue(Exception):
    pass


_PLAIN_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a type defined in Python, whose methods can be anything
# Subclasses of scalar builtins become the exact builtin through the base type's own slot, never the
# subclass's (possibly rigged) methods.
_SCALAR_BASES = (
    (int, int.__int__),
    (float, float.__float__),
    (complex, lambda v: complex(complex.real.__get__(v), complex.imag.__get__(v))),
    (str, str.__str__),
    (bytes, lambda v: bytes.__getitem__(v, slice(None))),
)


def _plain(value, depth: int = 0):
    """An equal value made only of exact builtin types, or NotPlainValue.

    Types are read with type(), never isinstance(), which a fake `__class__` could fool.
    """
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return value
    if depth > 100:
        raise NotPlainValue("a value nested more than 100 levels deep")
    if issubclass(kind, (list, tuple)):
        items = [_plain(item, depth + 1) for item in (list.__iter__ if issubclass(kind, list)
                                                        else tuple.__iter__)(value)]
        return items if issubclass(kind, list) else tuple(items)
    if issubclass(kind, dict):
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in dict.items(value)}
    if issubclass(kind, (set, frozenset)):
        items = {_plain(item, depth + 1) for item in (set.__iter__ if issubclass(kind, set)
                                                       else frozenset.__iter__)(value)}
        return items if issubclass(kind, set) else frozenset(items)
    for base, convert in _SCALAR_BASES:
        if issubclass(kind, base):
            return convert(value)
    if kind.__module__.split(".")[0] == "numpy" and getattr(value, "ndim", None) == 0:
        return _plain(value.item(), depth + 1)  # a numpy scalar: its builtin equivalent
    if not kind.__flags__ & _HEAPTYPE and hasattr(kind, "__next__"):
        # A builtin lazy iterator (generator, map, filter, zip...): the reference lets a test consume it,
        # so hand over one that yields plain values.
        return (_plain(item, depth + 1) for item in value)
    raise NotPlainValue(f"a value of type {kind.__module__}.{kind.__qualname__}")


def _restore_builtins(names: list, values: list) -> None:
    """Put back any builtin the call replaced, added or removed; in place and only when something changed,
    so a thread of the candidate's never sees builtins half gone. Unchanged means the same name objects
    bound to the same value objects in the same order, compared by identity (no key's or value's own
    __eq__ is consulted) and in C (the check runs after every call of the candidate)."""
    current = builtins.__dict__
    if (len(current) == len(names) and all(map(operator.is_, current, names))
            and all(map(operator.is_, current.values(), values))):
        return
    saved = dict(zip(names, values))
    for name in [name for name in current if name not in saved]:
        del current[name]
    current.update(saved)


def _guard(function):
    if not callable(function):
        return function
    names, values = list(builtins.__dict__), list(builtins.__dict__.values())

    def candidate(*args, **kwargs):
        try:
            result = function(*args, **kwargs)
        finally:
            _restore_builtins(names, values)
        try:
            return _plain(result)
        except NotPlainValue as exc:
            raise TypeError(f"the candidate returned {exc}; the test compares plain values only (exact "
                            "builtin types), so the verdict would not be trustworthy") from None

    return candidate


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


def kill_descendants(max_rounds: int = 1000) -> None:
    """SIGKILL every descendant of this process; orphans come back to us (subreaper), so loop until none."""
    for _ in range(max_rounds):
        if not _has_children():
            break
        children = _children()
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


def _drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks, total = [], 0
    while total < MAX_VERDICT_BYTES:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


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


def run_sample(request: dict, base: str, serial: int, isolation: Isolation) -> dict:
    """Run one program in a fresh child, in a fresh, empty working dir (always at ``BASE/work``, so HOME and
    TMPDIR are set once, in the supervisor), its output captured in files no path leads to."""
    work = os.path.join(base, WORK_DIR)
    try:
        os.mkdir(work, 0o700)
    except FileExistsError:  # only a removal that failed after the previous sample leaves it behind
        _clear(work, serial)
        os.mkdir(work, 0o700)
    if isolation.uid is not None:
        os.chown(work, isolation.uid, isolation.uid)
    out_fd, err_fd = _capture(base, "stdout"), _capture(base, "stderr")
    verdict_r, verdict_w = os.pipe()
    nonce = os.urandom(16).hex().encode()
    timeout_s = float(request["timeout_s"])

    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            _child(request, nonce, work, out_fd, err_fd, verdict_w, isolation)
        finally:
            os._exit(70)
    os.close(verdict_w)
    status, timed_out = _wait(pid, started + timeout_s)
    duration_ms = (time.monotonic() - started) * 1000.0
    if timed_out:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    kill_descendants()
    if status is None:
        try:
            status = os.waitpid(pid, 0)[1]
        except ChildProcessError:
            status = 0
    data = _drain(verdict_r)
    reply = {"duration_ms": round(duration_ms, 3), "stdout": _excerpt(out_fd), "stderr": _excerpt(err_fd)}
    for fd in (verdict_r, out_fd, err_fd):
        os.close(fd)
    _clear(work, serial)
    reply.update(_verdict(data, nonce, status, timed_out, request))
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


def _verdict(data: bytes, nonce: bytes, status: int, timed_out: bool, request: dict) -> dict:
    if data:
        head, _, body = data.partition(b" ")
        try:
            record = json.loads(body) if head == nonce else None
        except ValueError:
            record = None
        if not isinstance(record, dict) or record.get("status") not in (
            "passed", "assertion_failed", "runtime_error",
        ):
            return {
                "status": "runtime_error",
                "detail": "the program wrote to the harness's verdict channel; its verdict is void",
            }
        detail = record.get("message", "")
        return {"status": record["status"], "detail": detail, "lineno": record.get("lineno"),
                "traceback": record.get("traceback", "")}
    if timed_out:
        return {"status": "timeout", "detail": f"timed out after {float(request['timeout_s']):g} s"}
    if os.WIFSIGNALED(status):
        return {"status": "runtime_error", "detail": _signal_detail(os.WTERMSIG(status), request)}
    code = os.WEXITSTATUS(status)
    return {
        "status": "runtime_error",
        "detail": f"the program ended with exit code {code} before check() finished",
    }


_WARM_UP_PROGRAM = """
from typing import List


def first(values: List[int]) -> int:
    return values[0]


def check(candidate):
    assert candidate([1, 2]) == 1
    assert candidate([2]) == 1, "a failing assertion, on purpose"


check(first)"""


def _warm_up() -> None:
    """Do once, here, what every sample would otherwise do first in its own fork: import the usual modules,
    and take one trusted program through compile, the guarded check() call, the failure description and the
    verdict encoding. Their lazily built state (the compiler's ~120 AST node types above all) then exists
    before the fork instead of being rebuilt, page by copied page, in every child: about 1.4 ms a sample.
    """
    for name in PRELOAD:
        __import__(name)
    linecache.cache[PROGRAM_FILENAME] = (0, None, _WARM_UP_PROGRAM.splitlines(True), PROGRAM_FILENAME)
    try:
        _execute(_WARM_UP_PROGRAM, {})
    except _REAL_ASSERTION_ERROR as exc:
        json.dumps({"status": "assertion_failed", **_describe(exc)})
    linecache.cache.pop(PROGRAM_FILENAME, None)
    builtins.__dict__.pop("_", None)


def main() -> int:
    base, requested = sys.argv[1], sys.argv[2]
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # Default dispositions, inherited as they are by every sample: the harness started this process in a
    # session of its own, so a Ctrl-C at the terminal never reaches it (the harness decides when it stops);
    # Python's KeyboardInterrupt handler goes, and an ignored disposition inherited from the harness (they
    # survive exec) is undone.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    try:
        isolation = isolate(requested)
    except OSError as exc:  # namespaces entered but not set up: this process is unusable, say why
        write_message(1, {"ready": False, "reason": f"namespace set-up failed: {exc}"})
        return 1
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if isolation.level.startswith("namespaces"):
        base = "/tmp/humaneval"  # on this namespace's own tmpfs; the harness's folder is out of view
        os.makedirs(base, mode=0o711, exist_ok=True)
        os.chmod(base, 0o711)
    os.environ["HOME"] = os.environ["TMPDIR"] = os.path.join(base, WORK_DIR)  # the same for every sample
    _warm_up()
    write_message(1, {"ready": True, "isolation": isolation.level, "reason": isolation.reason})
    serial = 0
    while True:
        request = read_message(0)
        if request is None:  # the harness closed the pipe: done, without the interpreter's slow clean-up
            os._exit(0)
        serial += 1
        try:
            reply = run_sample(request, base, serial, isolation)
        except Exception as exc:  # the harness's own failure: say so, keep serving
            reply = {"status": "harness_error", "detail": f"{type(exc).__name__}: {exc}", "duration_ms": 0.0}
        write_message(1, reply)


if __name__ == "__main__":
    sys.exit(main())
