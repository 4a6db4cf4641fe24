"""The candidates' fork server: a pristine process that forks each candidate, and nothing else.

A candidate is a fork, so it starts with a copy of its parent's memory, freed pages included. Forked from the
supervisor, it would hold every problem and test the supervisor has registered and every request it has
parsed, and a completion could read its own test there (``gc.get_objects()``, or ctypes over its pages). So
candidates come from this process instead: forked from the supervisor once, after its warm-up and before any
request reaches it, it never holds a test, an expected output or another sample's text, result or verdict.
Per sample it receives descriptors only (``spawn``), forks, and the child reads its own request (its prompt,
completion, entry point and limits, from a memfd) before it closes every other descriptor; at the end of the
sample (``finish``) it waits for the candidate a moment, kills what is left of its process tree, and says how
the candidate ended.

With namespaces it is PID 1 of a PID and mount namespace of its own, nested in the supervisor's, with its own
``/proc`` and network namespace (whose unix sockets it sees freed after each sample, ``_drain.drain_in_flight``):
a candidate sees this process and its own descendants, never the supervisor or the judge; it
cannot signal this process (the kernel drops signals to a namespace's init from inside), and every process it
starts is in that namespace, so "kill the tree" is "kill every process of the namespace but this one". In the
basic sandbox it is a child subreaper of the supervisor's and a candidate running as the same user can kill it:
the supervisor then sees it gone and retires.

Standard library only, no package import: the sandbox supervisor loads this file by path.
"""

import ctypes
import fcntl
import json
import os
import resource
import select
import signal
import socket
import sys
import time

try:
    from . import _contain, _judge
except ImportError:  # loaded by path in the supervisor, next to its siblings
    _contain, _judge = sys.modules["_humaneval_load"].siblings("contain", "judge")  # by the one loader (_load.py)

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
CALLS_FD = 3  # in each candidate: the call pipes (3 in, 4 out), its set-up pipe (5), its request (6) and the
REQUEST_FD = CALLS_FD + 3  # shared layer of its Landlock domain (7)
LANDLOCK_FD = REQUEST_FD + 1
SETUP_FAILED = 70  # the candidate's exit code when its set-up failed before the program started
SPAWN, KILL, ENDED = b"F", b"K", b"S"
DESCRIPTORS = 6  # what ``spawn`` hands over: request, stdout, stderr, the two call pipes, the set-up pipe
_LIBC = ctypes.CDLL(None, use_errno=True)
_exit = os._exit  # bound here: a program that replaces os._exit in its own process changes nothing of this


class ZygoteGone(Exception):
    """The fork server ended or stopped answering: its supervisor can no longer run a sample."""


class LeftInFlight(Exception):
    """The sample left unix sockets in flight that the kernel had not freed when the fork server's wait ran out
    (``_drain.drain_in_flight``): the program's own doing (only hundreds of sockets sent in cycles take that
    long), so its failure; the server cannot vouch for the next sample, and its supervisor retires."""


class Zygote:
    """The supervisor's side of the fork server."""

    def __init__(self) -> None:
        self.pid: int | None = None  # the supervisor's child: the server itself, or (namespaces) its parent
        self._sock: socket.socket | None = None

    def start(self, isolation, prefer_oom: bool) -> None:
        """Fork the server now. The supervisor calls this once, before any request has reached it."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                _main(theirs, isolation, prefer_oom)
            finally:
                _exit(70)
        theirs.close()
        self.pid, self._sock = pid, ours

    def spawn(self, fds, work_mb: int = 0) -> None:
        """Fork a candidate that gets ``fds``: (request memfd, stdout, stderr, calls in, calls out, set-up);
        with namespaces, in a working dir that is a fresh tmpfs of ``work_mb`` MiB."""
        try:
            socket.send_fds(self._sock, [SPAWN + str(work_mb).encode()], list(fds))  # type: ignore[arg-type]
        except OSError as exc:
            raise ZygoteGone(f"the candidates' fork server is gone ({exc.strerror or exc})") from None

    def finish(self, grace_s: float) -> tuple[int | None, str, list | None]:
        """End the sample: the candidate's wait status if it ended on its own within ``grace_s`` (else None:
        it was killed), once every process of its tree is gone; what changed in the server's own state since it
        started ("" when nothing did); and, when it was killed, what its tree ran and waited for
        (``[ms on a CPU, ms waiting for one, ms since its fork]``, None where the kernel does not say). The server
        says when the candidate ends without being asked (it does when the judge closes its pipe): only one that
        outlives ``grace_s`` costs a request."""
        try:
            data = self._ended(grace_s)
            if data is None:
                self._sock.send(KILL)  # type: ignore[union-attr]  # set by start()
                data = self._ended(10.0)
                if data is None:
                    raise ZygoteGone("the candidates' fork server did not answer")
        except OSError as exc:
            raise ZygoteGone(f"the candidates' fork server is gone ({exc.strerror or exc})") from None
        if not data.startswith(ENDED):
            raise ZygoteGone("the candidates' fork server is gone")
        reply = json.loads(data[1:])
        if reply.get("error"):
            raise ZygoteGone(f"the candidates' fork server failed: {reply['error']}")
        if reply.get("left"):
            raise LeftInFlight(str(reply["left"]))
        usage = reply.get("usage")
        if not (isinstance(usage, list) and len(usage) == 3 and all(type(value) is float for value in usage)):
            usage = None
        return reply.get("status"), reply.get("changed", ""), usage

    def _ended(self, wait_s: float) -> bytes | None:
        if not select.select([self._sock], [], [], max(0.0, wait_s))[0]:  # type: ignore[type-var]  # set by start()
            return None
        return self._sock.recv(1 << 16)  # type: ignore[union-attr]

    def stop(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self._sock.close()  # type: ignore[union-attr]  # set by start(), with pid
        self.pid, self._sock = None, None


# ------------------------------------------------------------------------------------------- the server


def _main(sock: socket.socket, isolation, prefer_oom: bool) -> None:
    fd = sock.fileno()
    os.closerange(3, fd)  # nothing of the supervisor's channels
    os.closerange(fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    if isolation.namespaced:
        # A PID namespace of its own, whose PID 1 is the server (this process only waits for it), a mount
        # namespace for that namespace's /proc, and a network namespace whose unix sockets are the candidates'
        # alone: after each sample the server sees every one of them gone before the next sample starts
        # (_drain.drain_in_flight), so a candidate may bind and send descriptors (_confine.channel_rows).
        if _LIBC.unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET)")
        server = os.fork()
        if server:
            sock.close()
            _, status = os.waitpid(server, 0)
            _exit(os.waitstatus_to_exitcode(status) & 0xFF)
        _contain.mount_proc(hidden=True)
        _contain.cover_own()
        last_pid = _last_pid_file()
        try:
            unix_table = _contain.unix_table()
            isolation.drained = True
        except OSError:  # nothing to watch them by: bind and sendmsg stay refused
            unix_table = None
    else:
        last_pid = unix_table = None
        _LIBC.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # ends with its parent (the supervisor, or the
    #                                                           process that waits for it)
    # The shared layer of every candidate's Landlock domain, made once (_confine.Plan).
    shared = isolation.plan.shared() if isolation.plan is not None else None
    _contain.prepare_candidates(isolation)
    baseline = _contain.Baseline(watch=isolation.shares_uid)
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 64, DESCRIPTORS)
        if message[:1] != SPAWN:  # the supervisor is gone (or a KILL for a candidate that had already ended)
            if not message:
                _exit(0)
            continue
        mounted = ""
        if isolation.namespaced:
            # Pids in this namespace are handed out one after another, and so are a tmpfs's inode numbers: how
            # many processes or files a candidate made would set the next candidate's pid and its working
            # dir's inodes (channels between samples). Every candidate is PID 2, in a tmpfs of its own.
            if last_pid is not None:
                os.pwrite(last_pid, b"1", 0)
            mounted = _contain.mount_work(isolation, int(message[1:] or 0))
            if mounted == _contain.WORK:
                proc = _contain.mount_sample_proc()
                if proc:
                    _contain.unmount(mounted)
                    mounted = proc
        forked = time.monotonic()
        candidate = _spawn(fds, isolation, prefer_oom, shared) if not mounted.startswith("!") else mounted[1:]
        reply: dict = {"status": None}
        if isinstance(candidate, str):  # the fork (or its working dir) failed
            reply["error"] = candidate
            for handle in fds:
                try:
                    os.close(handle)
                except OSError:
                    pass
        else:
            reply["status"], usage = _watch(candidate, sock, isolation.namespaced)
            if usage is not None:
                reply["usage"] = usage + [round((time.monotonic() - forked) * 1000.0, 3)]
        if mounted == _contain.WORK:
            _contain.unmount("/proc")
            _contain.unmount(mounted)
        if unix_table is not None and "error" not in reply:
            left = _contain.drain_in_flight(unix_table)
            if left:  # the next sample could find what this one left: this server can vouch for none
                reply["left"] = left
        reply["changed"] = baseline.changed()
        sock.send(ENDED + json.dumps(reply).encode())


def _last_pid_file():
    """This PID namespace's ns_last_pid, open for writing (its init may set it); None where the kernel refuses."""
    try:
        fd = os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY | os.O_CLOEXEC)
        os.pwrite(fd, b"1", 0)
    except OSError:
        return None
    return fd


def _spawn(fds, isolation, prefer_oom: bool, shared=None):
    """Fork the candidate; its pid, or why the fork failed. ``shared``: its Landlock domain's shared layer."""
    try:
        pid = os.fork()
    except OSError as exc:
        for handle in fds:
            os.close(handle)
        return f"fork: {exc.strerror or exc}"
    if pid == 0:
        try:
            _candidate(fds, isolation, shared)
        finally:
            _exit(SETUP_FAILED)
    for handle in fds:
        os.close(handle)
    if prefer_oom:
        _contain.Cgroups.prefer(pid)
    return pid


def _watch(candidate: int, sock: socket.socket, namespaced: bool) -> tuple[int | None, list | None]:
    """Until the candidate ends (its wait status) or the supervisor says KILL (None, once it is killed); either
    way every process of its tree is gone when this returns (with namespaces: every process of this namespace
    but this one). Nothing but this one wait happens here while the candidate lives: every page this process
    writes meanwhile is copied. Second: when it was killed, what its tree had run and waited for (``usage``)."""
    try:
        pidfd = os.pidfd_open(candidate)
    except (AttributeError, OSError):
        pidfd = None
    # Without a pidfd (an old kernel), the candidate's end is polled every 2 ms.
    watched, wait = ([sock], 0.002) if pidfd is None else ([sock, pidfd], None)
    try:
        status = None
        while status is None:
            ready = select.select(watched, [], [], wait)[0]  # type: ignore[type-var]  # a socket, an int: selectable
            done, found = os.waitpid(candidate, os.WNOHANG)
            if done:
                status = found
            elif sock in ready:
                if sock.recv(64) == b"":
                    _exit(0)
                break  # KILL
    finally:
        if pidfd is not None:
            os.close(pidfd)
    usage = None
    if status is None:
        usage = tree_usage(candidate, namespaced)
        try:
            os.killpg(candidate, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(candidate, 0)
        except ChildProcessError:
            pass
    if own_children(()):  # something the candidate started outlived it: every one of them goes
        kill_descendants()
    return status, usage


def tree_usage(candidate: int, namespaced: bool) -> list | None:
    """[ms on a CPU, ms waiting for one] of the sample's live threads, summed (``/proc/PID/task/TID/schedstat``:
    the time each ran, and the time it was runnable and waited on a run queue); None where the kernel does not
    keep them (no CONFIG_SCHED_INFO). The sample's processes: with namespaces, every one in this PID namespace
    but this one; else this process's descendants (orphans come back to it, a subreaper). Read once, when the
    candidate is killed: a timeout."""
    if namespaced:
        try:
            pids = [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and entry != "1"]
        except OSError:
            return None
    else:
        pids = [pid for child in children() for pid in _subtree(child)]
        if candidate not in pids:
            pids.append(candidate)
    ran = waited = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # ended since
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as handle:
                    fields = handle.read().split()
                ran, waited = ran + int(fields[0]), waited + int(fields[1])
            except (OSError, ValueError, IndexError):
                continue
    if not ran:
        return None
    return [round(ran / 1e6, 3), round(waited / 1e6, 3)]


# ------------------------------------------------------------------------------------------ the candidate


def _candidate(fds, isolation, shared=None) -> None:
    """Runs in the candidate's forked process: take its descriptors, read its own request, contain it
    (``_candidate.enter_candidate``), say so on the set-up pipe, then serve calls (``_judge.serve``). A failure
    before the program starts ends the process with SETUP_FAILED and nothing on the set-up pipe: the sandbox's
    fault, never the program's."""
    request_fd, out_fd, err_fd, requests, replies, setup = fds
    os.setsid()
    if not isolation.namespaced:
        # With namespaces the server is PID 1 of the sample's PID namespace: when it dies, the kernel kills
        # every process in it, this one included.
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    # Above every target first, so no descriptor is overwritten before it is moved.
    sources = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in (devnull, out_fd, err_fd, requests, replies, setup,
                                                             request_fd, devnull if shared is None else shared)]
    for target, source in enumerate(sources):
        os.dup2(source, target)
    os.closerange(LANDLOCK_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    try:
        request = json.loads(_read_all(REQUEST_FD))
        os.close(REQUEST_FD)
        _contain.enter_candidate(isolation, request["limits"], request["timeout_s"], request["work"], LANDLOCK_FD)
        if isolation.plan is None:
            os.close(LANDLOCK_FD)
        os.chdir(request["work"])
        if not isolation.drained:  # sendmsg is refused (_confine.IN_FLIGHT)
            sys.meta_path.insert(0, _SendWithoutSendmsg())
        # The candidate's __main__ is a program without a file, as under ``python -c``, not the supervisor's script:
        # multiprocessing's spawn and forkserver start methods re-run a file-backed __main__ in their child, and
        # the supervisor's is hidden from the candidate (every such child exited 1).
        sys.modules["__main__"] = type(sys)("__main__")
        os.write(CALLS_FD + 2, b"1")
        os.close(CALLS_FD + 2)
    except BaseException as exc:
        os.write(2, f"sandbox set-up failed: {type(exc).__name__}: {exc}\n".encode(errors="replace"))
        _exit(SETUP_FAILED)
    if request.get("stdin"):  # a program that reads standard input: the judge's pipes are its stdin and stdout
        os.dup2(CALLS_FD, 0)
        os.dup2(CALLS_FD + 1, 1)
        os.close(CALLS_FD)
        os.close(CALLS_FD + 1)
        _exit(_judge.run_main(request["completion"], request.get("preamble", "")))
    _judge.serve(request["prompt"], request["completion"], request["entry_point"], CALLS_FD, CALLS_FD + 1,
                 request.get("preamble", ""))
    _exit(0)


class _SendWithoutSendmsg:
    """Where no fork server drains what a sample leaves in flight, sendmsg is refused (``_confine.IN_FLIGHT``), and
    from Python 3.12 asyncio's streams write with it (``writelines``, and a ``write`` larger than the socket takes
    at once): an honest program failed with ``ConnectionResetError``. In the candidate, when it imports asyncio, its
    transports write with send instead, as CPython's own fallback does where sendmsg is missing. Nothing is
    let in flight by it: a program that undoes it only gets the refusal back."""

    MODULE = "asyncio.selector_events"

    def find_spec(self, name, path=None, target=None):
        if name != self.MODULE:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find is not None else None
            if spec is not None and spec.loader is not None:
                spec.loader = _WithoutSendmsg(spec.loader)
                return spec
        return None


class _WithoutSendmsg:
    def __init__(self, loader) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        module._HAS_SENDMSG = False  # read when each transport is made (3.12+; unused before)

    def __getattr__(self, name):
        if name == "loader" or name.startswith("__"):  # (a copy or an unpickled one, made without __init__)
            raise AttributeError(name)
        return getattr(self.loader, name)


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks, position = [], 0
    while position < size:
        chunk = os.pread(fd, size - position, position)
        if not chunk:
            break
        chunks.append(chunk)
        position += len(chunk)
    return b"".join(chunks)


def request_file(request: dict) -> int:
    """A memfd holding ``request`` (what the candidate reads first), for ``Zygote.spawn``."""
    fd = os.memfd_create("humaneval-request", os.MFD_CLOEXEC)
    data = json.dumps(request).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    return fd


# ----------------------------------------------------------------------------------- the process tree


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``: /proc/PID/task/*/children where the kernel has it (CONFIG_PROC_CHILDREN),
    else a scan of every process's parent."""
    try:
        found: list[int] = []
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


def children() -> list[int]:
    return children_of(os.getpid())


def own_children(spare) -> bool:
    """Whether this (single-threaded) process has a child not in ``spare``: one read of its own children file
    where the kernel has it (every orphan comes back to this process, a subreaper or a namespace's init, so that
    covers every descendant)."""
    try:
        fd = os.open(f"/proc/self/task/{os.getpid()}/children", os.O_RDONLY)
    except OSError:
        return True  # no children file: let the full walk decide
    try:
        return any(int(pid) not in spare for pid in os.read(fd, 65536).split())
    finally:
        os.close(fd)


def _subtree(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children_of(current))
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


def kill_descendants(spare=(), max_rounds: int = 1000) -> None:
    """SIGKILL every descendant of this process but those in ``spare`` (the supervisor's judge and fork
    server); orphans come back to us (subreaper), so loop until none."""
    for _ in range(max_rounds):
        if not spare and not _has_children():
            break
        found = [child for child in children() if child not in spare]
        if not found:
            break
        for child in found:
            for pid in _subtree(child):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for child in found:
            try:
                os.waitpid(child, 0)
            except ChildProcessError:
                pass
