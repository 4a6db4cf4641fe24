"""Cgroups: the one the supervisor lives in with its judge and every candidate (``Cgroups``: memory and process
count for the sample's whole tree, and its CPU time held to one CPU where the host lets us), and their removal once
a supervisor has exited, with the stale ones killed harnesses left (``remove_cgroups``, ``_sweep_cgroups``).

A supervisor's script (loaded by path, like ``_contain``, which hands it on; the harness imports it too): standard
library only, no package import.
"""

import errno
import os
import time


class Cgroups:
    """The cgroup(s) the supervisor lives in, with its judge and every candidate it forks: memory and process
    count limited for the sample's whole process tree (memfds, tmpfs files and children included), where the
    host lets us create one (cgroup v2 with the memory and pids controllers delegated, or the v1 memory and pids
    hierarchies, as root); and its CPU time held to one CPU where the host lets us set a cpu quota too (``cpu``;
    else candidates are pinned to one CPU, ``pin_to_own_cpu``). The supervisor moves in before it leaves the
    host's mount namespace, so every fork is born inside (moving each candidate in would cost ~0.1 ms a sample);
    the limits leave room for the supervisor and the judge, which the OOM killer is told to spare where the kernel
    lets us. Otherwise ``kind`` is "" and ``reason`` says why: the limits are then per process (rlimits)."""

    MARGIN_MB = 32  # above what the supervisor and the judge use when the first sample starts
    # The sample's CPU: one CPU's worth of time, per scheduler period, for its whole tree (the judge's with it). A
    # program that burns more (threads, forks, sessions of its own) waits for its own next period; it cannot take
    # the CPU the samples beside it were given (docs/safety.md, "Samples beside each other").
    CPU_PERIOD_US = CPU_QUOTA_US = 100_000

    def __init__(self):
        self.kind, self.reason, self.paths = "", "", []
        self._memory, self._pids, self._events, self._usage = [], None, None, None
        self._memory_mb, self._overhead = None, None
        self.cpu = False  # whether the tree's CPU time is held to one CPU (a cpu quota); else candidates are pinned
        self.cpu_reason = ""  # why not

    @property
    def description(self):
        cpu = ("one CPU of time for the whole tree (cpu quota)" if self.cpu else
               f"each candidate's tree pinned to one CPU (no cpu quota: {self.cpu_reason})")
        if not self.kind:
            return f"rlimits per process (no cgroup: {self.reason}); each candidate's tree pinned to one CPU"
        if self.cpu:
            return f"cgroup {self.kind} per supervisor, one sample at a time: memory, process count and {cpu}"
        return (f"cgroup {self.kind} per supervisor, one sample at a time: memory and process count of the whole "
                f"tree; {cpu}")

    @classmethod
    def create(cls, name):
        cgroups = cls()
        try:
            mounts = _cgroup_mounts()
            if "cgroup2" in mounts and cgroups._v2(mounts["cgroup2"], name):
                return cgroups
            if "memory" in mounts and "pids" in mounts:
                cgroups._v1(mounts, name)
                return cgroups
            cgroups.reason = cgroups.reason or "no cgroup v2 with the memory and pids controllers, no v1 hierarchies"
        except OSError as exc:
            cgroups.close()
            remove_cgroups(cgroups.paths)
            cgroups.kind, cgroups.paths, cgroups.cpu = "", [], False
            cgroups.reason = f"{exc.filename or 'cgroup'}: {exc.strerror or exc}"
        return cgroups

    def _v2(self, mount, name):
        parent = mount + _own_cgroup("")
        with open(os.path.join(parent, "cgroup.subtree_control")) as handle:
            enabled = handle.read().split()
        if not {"memory", "pids"} <= set(enabled):
            self.reason = "cgroup v2 without the memory and pids controllers delegated to this cgroup"
            return False
        cpu = "cpu" in enabled or self._enable_cpu_v2(parent)
        path = _make_cgroup(os.path.join(parent, name))
        self.paths.append(path)
        if cpu:
            self._quota(path, [("cpu.max", f"{self.CPU_QUOTA_US} {self.CPU_PERIOD_US}")])
        self._memory = [os.open(os.path.join(path, "memory.max"), os.O_WRONLY)]
        try:
            _write_file(os.path.join(path, "memory.swap.max"), "0")
        except OSError:
            pass  # no swap accounting: nothing to limit
        self._pids = os.open(os.path.join(path, "pids.max"), os.O_WRONLY)
        self._events = (os.open(os.path.join(path, "memory.events"), os.O_RDONLY), "oom_kill")
        self._usage = os.open(os.path.join(path, "memory.current"), os.O_RDONLY)
        _write_file(os.path.join(path, "cgroup.procs"), "0")
        self.kind = "v2"
        return True

    def _enable_cpu_v2(self, parent):
        """Whether the cpu controller is enabled for this cgroup's children already. It is never turned on here:
        as root the parent is often the host's root cgroup, and +cpu there would change how the whole machine
        shares its CPUs, and outlive the run."""
        try:
            with open(os.path.join(parent, "cgroup.subtree_control")) as handle:
                if "cpu" in handle.read().split():
                    return True
        except OSError as exc:
            self.cpu_reason = f"the cpu controller's state not readable for this cgroup: {exc.strerror or exc}"
            return False
        self.cpu_reason = "cgroup v2 without the cpu controller enabled for this cgroup's children"
        return False

    def _quota(self, path, settings):
        """Hold the tree to one CPU (``settings``: the quota's files and values); on a refusal (a parent with a
        smaller quota, a kernel without CFS bandwidth control) the candidates are pinned instead."""
        try:
            for file, value in settings:
                _write_file(os.path.join(path, file), value)
        except OSError as exc:
            self.cpu_reason = f"{file}: {exc.strerror or exc}"
            return False
        self.cpu = True
        return True

    def _v1(self, mounts, name):
        for controller in ("memory", "pids"):
            path = _make_cgroup(os.path.join(mounts[controller] + _own_cgroup(controller), name))
            self.paths.append(path)
            if controller == "pids":
                self._pids = os.open(os.path.join(path, "pids.max"), os.O_WRONLY)
            else:
                files = ["memory.limit_in_bytes"]
                if os.path.exists(os.path.join(path, "memory.memsw.limit_in_bytes")):
                    files.append("memory.memsw.limit_in_bytes")  # memory and swap: at most the same value
                self._memory = [os.open(os.path.join(path, file), os.O_WRONLY) for file in files]
                self._events = (os.open(os.path.join(path, "memory.oom_control"), os.O_RDONLY), "oom_kill")
                self._usage = os.open(os.path.join(path, "memory.usage_in_bytes"), os.O_RDONLY)
            _write_file(os.path.join(path, "cgroup.procs"), "0")
        self.kind = "v1"
        if "cpu" in mounts:  # last: a failure here leaves memory and processes limited
            self._v1_cpu(mounts["cpu"] + _own_cgroup("cpu"), name)
        else:
            self.cpu_reason = "no cgroup v1 cpu hierarchy"

    def _v1_cpu(self, parent, name):
        """A cgroup of the v1 cpu hierarchy with a quota of one CPU, joined; best effort (memory and processes are
        limited without it)."""
        try:
            path = _make_cgroup(os.path.join(parent, name))
        except OSError as exc:
            self.cpu_reason = f"{exc.filename or 'cgroup'}: {exc.strerror or exc}"
            return
        if self._quota(path, [("cpu.cfs_period_us", str(self.CPU_PERIOD_US)),
                              ("cpu.cfs_quota_us", str(self.CPU_QUOTA_US)), ("cgroup.procs", "0")]):
            self.paths.append(path)
            return
        remove_cgroups([path])

    @staticmethod
    def prefer(pid):
        """Make ``pid`` (a candidate) the OOM killer's first choice when the tree is over its limit: its tmpfs
        files and memfds are not in its resident size, by which the killer would otherwise pick the supervisor.
        Written by its parent, after the fork (in the child it costs ~0.1 ms of copied pages)."""
        try:
            fd = os.open(f"/proc/{pid}/oom_score_adj", os.O_WRONLY)
            try:
                os.write(fd, b"1000")
            finally:
                os.close(fd)
        except OSError:
            pass

    @staticmethod
    def protect_self():
        """Tell the OOM killer to spare this process (the judge, which no candidate descends from): when the
        tree is over its limit, the candidate goes, or failing that the supervisor (a harness_error, replaced);
        never the judge in the middle of a verdict. Best effort: lowering it needs CAP_SYS_RESOURCE."""
        try:
            _write_file("/proc/self/oom_score_adj", "-1000")
        except OSError:
            pass

    def limit(self, memory_mb, processes):
        """Set the limits for the next sample (written only when they change): ``memory_mb`` for the candidate's
        tree on top of what the supervisor and the judge used before the first sample; ``processes`` plus them."""
        if not self.kind or self._memory_mb == memory_mb:
            return
        if self._overhead is None:
            # _usage and _pids are open whenever kind is set (by _v1 or _v2)
            self._overhead = int(os.pread(self._usage, 64, 0)) + self.MARGIN_MB * 1024 * 1024  # type: ignore[arg-type]
        value = str(memory_mb * 1024 * 1024 + self._overhead).encode()
        # v1 refuses a memory limit above the memory+swap one: when raising, memory+swap goes first.
        raising = self._memory_mb is not None and memory_mb > self._memory_mb
        for fd in (self._memory[::-1] if raising else self._memory):
            os.pwrite(fd, value, 0)
        # with the supervisor, its parent, the judge and the fork server (and, with namespaces, its parent)
        os.pwrite(self._pids, str(processes + 5).encode(), 0)  # type: ignore[arg-type]
        self._memory_mb = memory_mb

    def oom_kills(self):
        """How many processes the memory limit has killed so far (a counter: compare before and after)."""
        if self._events is None:
            return 0
        fd, key = self._events
        for line in os.pread(fd, 4096, 0).decode().splitlines():
            if line.startswith(key + " "):
                return int(line.split()[1])
        return 0

    def close(self):
        for fd in [*self._memory, *(fd for fd in (self._pids, self._usage) if fd is not None),
                   *((self._events[0],) if self._events else ())]:
            try:
                os.close(fd)
            except OSError:
                pass
        self._memory, self._pids, self._events, self._usage = [], None, None, None


def _cgroup_mounts():
    """{"cgroup2": mount point} and {controller: mount point} for the v1 hierarchies, from mountinfo."""
    found: dict = {}
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) < 5 or len(tail) < 3:
                continue
            if tail[0] == "cgroup2":
                found.setdefault("cgroup2", fields[4])
            elif tail[0] == "cgroup":
                for option in tail[2].split(","):
                    if option in ("memory", "pids", "cpu"):
                        found.setdefault(option, fields[4])
    return found


def _own_cgroup(controller):
    """This process's cgroup path in a v1 hierarchy (by controller name), or in v2 (controller "")."""
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            _, names, path = line.rstrip("\n").split(":", 2)
            if (controller and controller in names.split(",")) or (not controller and names == ""):
                return path.rstrip("/")
    raise OSError(0, f"not in a {controller or 'v2'} cgroup", "/proc/self/cgroup")


def _write_file(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def remove_cgroups(paths: list[str], wait_s: float = 1.0) -> None:
    """Remove a supervisor's cgroups once it has exited (a cgroup with no process left is an empty folder).
    A supervisor killed from outside takes its PID namespace with it, and for a moment the kernel may still be
    tearing down that namespace's last processes: a busy cgroup is retried for up to ``wait_s`` (it was left
    behind about one kill in ten, and hundreds piled up on a CI machine)."""
    deadline = time.monotonic() + wait_s
    for path in paths:
        while True:
            try:
                os.rmdir(path)
            except OSError as exc:
                if exc.errno == errno.EBUSY and time.monotonic() < deadline:
                    time.sleep(0.005)
                    continue
            break


STALE_CGROUP_S = 60.0  # a supervisor joins its cgroup within milliseconds of making it


def _sweep_cgroups(parent):
    """Remove the empty cgroups that supervisors whose harness was killed (no ``close``) left in ``parent``:
    rmdir fails on a cgroup that holds a process, and one made in the last minute is left alone (a supervisor
    may be about to join it)."""
    try:
        entries = [entry for entry in os.scandir(parent) if entry.name.startswith("pytest-humaneval-")]
    except OSError:
        return
    now = time.time()
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False) and now - entry.stat().st_mtime > STALE_CGROUP_S:
                os.rmdir(entry.path)
        except OSError:
            pass


def _make_cgroup(path):
    """mkdir ``path``, a cgroup named after this supervisor's pid, after sweeping the stale ones beside it. One
    of that name may be left from an earlier supervisor with the same pid that could not remove it: empty, it
    goes; in use (another PID namespace's supervisor), this one takes a name of its own."""
    _sweep_cgroups(os.path.dirname(path))
    try:
        os.mkdir(path)
        return path
    except FileExistsError:
        pass
    try:
        os.rmdir(path)
        os.mkdir(path)
        return path
    except OSError:
        path = f"{path}-{os.urandom(4).hex()}"
        os.mkdir(path)
        return path
