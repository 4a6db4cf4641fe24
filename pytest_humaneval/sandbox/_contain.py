"""Containment: the namespaces, mounts, ids, limits and checks that keep a candidate away from everything else.

Used by the sandbox supervisor (loaded by path, like ``_judge`` and ``_wire``): standard library only, no
package import. Three moments:

- once per supervisor, :func:`isolate` (fresh namespaces, a read-only view of the filesystem with fresh tmpfs on
  every writable place, a uid of its own for candidates, a fresh session keyring) and :class:`Baseline` (what the
  supervisor's own limits, priority and folders are, so a change is noticed);
- once per sample, in the fork server, :func:`mount_work` (a fresh tmpfs for the working dir, with namespaces);
  in the candidate's forked process before the program runs, :func:`enter_candidate` (limits, the uid or the
  dropped capabilities, its Landlock domain and seccomp filter, ``_confine``); and after it, in the supervisor,
  :func:`empty_shared` (with namespaces: /tmp, /dev/shm, POSIX message queues and SysV IPC emptied, which
  Landlock and seccomp already keep a candidate from writing) and :func:`remove_tree` where a working dir has
  to go; before it, in the fork server, :func:`drain_in_flight` (with namespaces: no unix socket of the sample
  left, in flight or not).

Each part lives in a file of its own, which this one puts together and hands on under the names above: the Linux
numbers and C calls (``_linux``), the candidate's view (``_view``) and the mounts that show it (``_mounts``), one
candidate's entry (``_candidate``), keyrings (``_keyrings``), descriptors in flight (``_drain``), clean-up
(``_cleanup``) and cgroups (``_cgroups``); here: the isolation levels and the ids candidates get, and the checks.

A per-sample mount namespace would do the emptying too, but costs more: measured on the CI machine, a fresh mount
namespace with its tmpfs ~0.6 ms and a fresh IPC namespace ~0.35 ms of CPU a sample, against ~0.05 ms for
emptying folders that are almost always empty; a tmpfs mounted in the fork server's own namespace is cheaper.
"""

import ctypes
import os
import resource
import sys

try:
    from . import _candidate, _cgroups, _cleanup, _confine, _drain, _keyrings, _linux, _mounts, _view
except ImportError:  # loaded by path in the supervisor, next to its siblings, or run as a script (-I)
    if "_humaneval_load" not in sys.modules:  # the one loader of the supervisor's scripts (_load.py), by path
        import importlib.util

        _spec = importlib.util.spec_from_file_location(
            "_humaneval_load", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_load.py"))
        sys.modules["_humaneval_load"] = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
        _spec.loader.exec_module(sys.modules["_humaneval_load"])  # type: ignore[union-attr]
    _candidate, _cgroups, _cleanup, _confine, _drain, _keyrings, _linux, _mounts, _view = \
        sys.modules["_humaneval_load"].siblings("candidate", "cgroups", "cleanup", "confine", "drain", "keyrings",
                                                "linux", "mounts", "view")

# What the supervisor and its fork server (and the harness's helpers, benchmarks and tests) ask of the containment,
# here as before it was split into the files it uses: the Linux numbers and calls (``_linux``), the view (``_view``)
# and the mounts that show it (``_mounts``), one candidate's entry (``_candidate``), keyrings (``_keyrings``),
# descriptors in flight (``_drain``), clean-up (``_cleanup``) and cgroups (``_cgroups``).
PR_SET_PDEATHSIG, SYS_KEYCTL = _linux.PR_SET_PDEATHSIG, _linux.SYS_KEYCTL
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWUTS = _linux.CLONE_NEWUSER, _linux.CLONE_NEWNS, _linux.CLONE_NEWUTS
CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = _linux.CLONE_NEWIPC, _linux.CLONE_NEWPID, _linux.CLONE_NEWNET
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = _linux.MS_RDONLY, _linux.MS_NOSUID, _linux.MS_NODEV, _linux.MS_NOEXEC
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = _linux.MS_REMOUNT, _linux.MS_BIND, _linux.MS_REC, _linux.MS_PRIVATE
prctl, _mount, unmount = _linux.prctl, _linux.mount, _linux.unmount
view, shown_and_hidden, _hidden = _view.view, _view.shown_and_hidden, _view._hidden
WORK, OWN, TMPFS, SKELETON_MAX_FILES = _mounts.WORK, _mounts.OWN, _view.TMPFS, _mounts.SKELETON_MAX_FILES
enter_new_root, _skeleton_plan, _skeleton = _mounts.enter_new_root, _mounts._skeleton_plan, _mounts._skeleton
cover_own, mount_work, mount_sample_proc = _mounts.cover_own, _mounts.mount_work, _mounts.mount_sample_proc
mount_proc, size_tmpfs = _mounts.mount_proc, _mounts.size_tmpfs
SANDBOX_NPROC, CANDIDATE_NICE = _candidate.SANDBOX_NPROC, _candidate.CANDIDATE_NICE
enter_candidate, prepare_candidates, pin_to_own_cpu = (_candidate.enter_candidate, _candidate.prepare_candidates,
                                                       _candidate.pin_to_own_cpu)
fresh_session_keyring, release_user_keyrings = _keyrings.fresh_session_keyring, _keyrings.release_user_keyrings
IN_FLIGHT_WAIT_S, unix_table, drain_in_flight = _drain.IN_FLIGHT_WAIT_S, _drain.unix_table, _drain.drain_in_flight
empty_shared, remove_tree = _cleanup.empty_shared, _cleanup.remove_tree
Cgroups, remove_cgroups, STALE_CGROUP_S = _cgroups.Cgroups, _cgroups.remove_cgroups, _cgroups.STALE_CGROUP_S
_make_cgroup = _cgroups._make_cgroup

OVERFLOW_ID = 65534  # nobody/nogroup: an id many files and processes already use


class Isolation:
    """What this supervisor applied, and why.

    - 'namespaces' (root, with a uid to spare): own PID/net/mount/IPC/UTS namespaces; the filesystem read-only
      but for fresh tmpfs; candidates run as a uid of their own that no account, file range or other supervisor
      uses, without capabilities, with no_new_privs.
    - 'namespaces-userns' (not root, or root whose uid map has no second uid, as in a rootless container): the
      same namespaces inside a new user namespace; there is no other uid to switch to, so candidates run with
      every capability dropped, no_new_privs, with the user's home folder hidden as well.
    - 'landlock' (no namespace could be made: a default container, a user without user namespaces): candidates
      run as the harness's user, confined by Landlock to a read-only allow-list of files and their own
      working dir, without TCP, signals or abstract sockets outside their domain (``_confine``).
    - 'basic': a subprocess sandbox; candidates run as the harness's user.

    Every level adds the candidate's seccomp filter (``_confine.Seccomp``) and, where the kernel has
    Landlock, a Landlock domain (``plan``).
    """

    def __init__(self, level, reason="", uid=None, gid=None, drop_caps=False, ids="", nproc=None):
        self.level, self.reason, self.uid, self.gid, self.drop_caps = level, reason, uid, gid, drop_caps
        self.ids = ids  # which uid candidates get, and how it was chosen
        self.nproc = nproc  # RLIMIT_NPROC for candidates
        self.keyring = ""  # why the session keyring could not be replaced ("" when it was)
        self.keep = ()  # what emptying /tmp must leave: the supervisor's folder, import paths bound under /tmp
        self.per_process = True  # no cgroup limits the sample's tree: memory is limited per process only
        self.pinned = True  # no cpu quota holds the sample's tree to one CPU: each candidate is pinned to one
        self.plan = None  # the candidate's Landlock domain (``_confine.Plan``), where the kernel has Landlock
        self.seccomp = None  # the candidate's seccomp filter (``_confine.Seccomp``), built by prepare_candidates
        self.drained = False  # with namespaces: the fork server watches its candidates' unix sockets (drain_in_flight)
        self.landlock = ""  # what that domain confines, or why there is none
        self.dentries = ""  # with namespaces: why the view's folders are the host's own (``enter_new_root``)

    @property
    def namespaced(self):
        return self.level.startswith("namespaces")

    @property
    def confinement(self):
        """What confines each candidate beyond its level, for the summary header and ``run.confinement``."""
        parts = [self.landlock] if self.plan is not None else []
        if os.uname().machine in _confine.ARCHES:
            parts.append("seccomp (no keyrings, IPC, io_uring, bpf, page-cache eviction or reach into other processes"
                         + (", no sockets but unix ones" if self.namespaced else ", no sockets")
                         + (", no metadata changes" if self.shares_uid else "")
                         + (", no CPU affinity changes" if self.pinned else "")
                         + ", no inode flags or page-cache residency queries, no new namespaces or pidfds"
                         + (": socket names and descriptors in flight end with their sample)" if self.namespaced
                            else ", socket names or descriptors in flight)"))
        if self.dentries:
            parts.append(self.dentries)
        return "; ".join(parts)

    @property
    def shares_uid(self):
        """Whether candidates run as the supervisor's own uid (and so can reach its state, or the judge's)."""
        return self.level != "namespaces"


def isolate(requested):
    """Enter fresh namespaces and become PID 1 there, in a root of our own making (``enter_new_root``); on an
    obstacle before the namespaces are entered, confine candidates with Landlock instead, or, without it,
    stay basic; and say why. ``requested``: auto or strict (namespaces first), landlock (no namespaces), basic
    (neither)."""
    if requested == "basic":
        return _basic("params.isolation is basic")
    if requested == "landlock":
        return _landlocked("")
    # auto, strict, namespaces: namespaces first
    root = os.geteuid() == 0
    uid = gid = None
    ids = ""
    if root:
        uid, ids = free_id("uid")
        gid, _ = free_id("gid")
    user_ns = uid is None or gid is None
    host_uid, host_gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
    if _linux.LIBC.unshare(flags | (CLONE_NEWUSER if user_ns else 0)) != 0:
        errno = ctypes.get_errno()
        what = "unprivileged user namespaces are not available" if user_ns else "unshare() refused"
        return _landlocked(f"{what}: {os.strerror(errno)}")
    if user_ns:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {host_uid} 1"), ("gid_map", f"0 {host_gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    child = os.fork()  # the child is PID 1 of the new PID namespace: when it exits, the kernel kills the rest
    if child:
        os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])  # the harness's channel is the child's
        status = os.waitpid(child, 0)[1]
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    _linux.prctl(PR_SET_PDEATHSIG, 9)
    os.chdir("/")
    _linux.mount(None, "/", None, MS_REC | MS_PRIVATE)
    kept, dentries = _mounts.enter_new_root()
    if not user_ns:
        isolation = Isolation("namespaces", uid=uid, gid=gid, ids=ids)
    else:
        reason = "" if not root else f"root, but {ids}: candidates share the supervisor's uid"
        isolation = Isolation("namespaces-userns", reason, drop_caps=True,
                              ids="the supervisor's uid, every capability dropped")
    isolation.keep = tuple(sorted({_mounts.OWN, *kept}))
    isolation.dentries = dentries
    # Defence in depth: the root is already an allow-list; Landlock also keeps writes to the sample's own
    # working dir (and five devices), so nothing it changes outlives it, not even a folder's times; keeps /proc
    # unread (the fork server's counters, the session ids a sample used up); and scopes signals and abstract
    # sockets to the sample.
    top = [(f"/{name}", _confine.READ) for name in sorted(os.listdir("/")) if name != "proc"]
    _plan(isolation, top, _devices())
    return isolation


def _basic(reason):
    """The basic sandbox: candidates run as this user, so their process count is counted with the user's."""
    return Isolation("basic", reason, nproc=_processes_of(os.getuid()) + 2 * _candidate.SANDBOX_NPROC,
                     ids="the harness's own uid")


def _landlocked(reason):
    """No namespaces: candidates run as this user, confined by Landlock to what the namespace root would show
    (read-only) and their own working dir; without Landlock, the basic sandbox, saying why."""
    folders, files, _, hidden = _view.view()
    read = _confine.read_rules(sorted(folders) + sorted(files), hidden)
    isolation = Isolation("landlock", reason, nproc=_processes_of(os.getuid()) + 2 * _candidate.SANDBOX_NPROC,
                          ids="the harness's own uid, confined by Landlock")
    _plan(isolation, read, _devices())
    if isolation.plan is None:
        why = "; ".join(filter(None, [reason, f"no Landlock confinement ({isolation.landlock})"]))
        isolation = _basic(why)
        isolation.landlock = why
    return isolation


def _devices():
    return [(f"/dev/{name}", _confine.FS["read_file"] | _confine.FS["write_file"] | _confine.FS["ioctl_dev"])
            for name in _view.DEVICES if os.path.exists(f"/dev/{name}")]


def _plan(isolation, read, write):
    """Give ``isolation`` a Landlock plan, once a throwaway child has shown that the kernel applies it."""
    abi = _confine.landlock_abi()
    if abi < 1:
        isolation.landlock = "the kernel has no Landlock (Linux 5.13+ with landlock among its LSMs)"
        return
    plan = _confine.Plan(abi, read, write)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            plan.apply(plan.shared(), "/tmp")
            code = 0
        finally:
            os._exit(code)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        isolation.landlock = f"Landlock ABI {abi} refused its rules"
        return
    isolation.plan, isolation.landlock = plan, _confine.describe(abi)


def _processes_of(uid):
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == uid
            except OSError:
                pass
    return count


def free_id(kind):
    """(an id for candidates, how it was chosen), or (None, why there is none): from the top of this
    namespace's id map, never 0, the supervisor's own or nobody's, with no passwd/group entry and outside every
    subordinate range of /etc/subuid and /etc/subgid. Each supervisor takes its own (from its pid)."""
    ranges = _id_map(f"/proc/self/{kind}_map")
    subordinate = _subordinate_ranges()
    own = os.getuid() if kind == "uid" else os.getgid()
    for start, count in sorted(ranges, key=lambda r: -r[1]):
        top = min(start + count - 1, 0xFFFFFFFE)  # (uid_t)-1 is not an id
        span = min(top - start, 1 << 16)
        for step in range(span):  # from the pid's place on: past a band of accounts or subordinate ids too
            candidate = top - (os.getpid() + step) % span
            if candidate in (0, own, OVERFLOW_ID) or _has_account(kind, candidate):
                continue
            if any(low <= candidate < low + size for low, size in subordinate):
                continue
            return candidate, (f"a {kind} of its own per supervisor, from the top of the {kind} map "
                               f"({start}-{start + count - 1}): no passwd or group entry, outside /etc/subuid "
                               "and /etc/subgid")
    return None, f"the {kind} map has no id to spare ({', '.join(f'{s}+{c}' for s, c in ranges) or 'empty'})"


def _id_map(path):
    try:
        with open(path) as handle:
            return [(int(inside), int(count)) for inside, _, count in
                    (line.split() for line in handle if len(line.split()) == 3)]
    except (OSError, ValueError):
        return []


def _subordinate_ranges():
    ranges = []
    for path in ("/etc/subuid", "/etc/subgid"):
        try:
            with open(path) as handle:
                for line in handle:
                    parts = line.strip().split(":")
                    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                        ranges.append((int(parts[1]), int(parts[2])))
        except OSError:
            pass
    return ranges


def _has_account(kind, number):
    try:
        if kind == "uid":
            import pwd

            pwd.getpwuid(number)
        else:
            import grp

            grp.getgrgid(number)
        return True
    except (KeyError, ImportError):
        return False


# ------------------------------------------------------------------------------------------ checks


RLIMITS = tuple(sorted(getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")))


class Baseline:
    """This process's own limits, scheduling and working folder as they were at start. A candidate that shares
    its uid (basic mode, user namespaces) can lower its limits, renice it, pin it to one CPU or replace its
    folder; every later sample would then fail or time out for nothing. :meth:`changed` says what differs."""

    def __init__(self, folder=None, watch=True):
        self.folder = folder
        # Only a candidate that shares this uid can change it (the basic sandbox, user namespaces); as root with
        # namespaces nothing of a sample can, and the ~20 syscalls of a look are not paid on every sample.
        self.watch = watch
        self.state = self._read() if watch else None

    def _read(self):
        state: dict = {f"rlimit {which}": resource.getrlimit(which) for which in RLIMITS}
        state["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
        state["scheduler"] = os.sched_getscheduler(0)
        state["cpus"] = os.sched_getaffinity(0)
        if self.folder is not None:
            try:
                info = os.lstat(self.folder)
                state["folder"] = (info.st_ino, info.st_dev, info.st_uid, info.st_mode)
            except OSError as exc:
                state["folder"] = str(exc)
        return state

    def changed(self):
        """A description of what changed since start, or ""."""
        if not self.watch:
            return ""
        now = self._read()
        if now == self.state:
            return ""
        # self.state is never None here: watch is set, so __init__ read it
        return "; ".join(_difference(key, self.state[key], now[key]) for key in self.state  # type: ignore[index, union-attr]
                         if now[key] != self.state[key])  # type: ignore[index]


def _difference(key, before, after):
    if key == "cpus":
        before, after = sorted(before), sorted(after)
    return f"{key} {before} -> {after}"


if __name__ == "__main__":
    # python -I _contain.py release-keyrings UID GID: run (as root) by the harness after a namespaced supervisor
    # was killed, since it could not release its candidates' user keyrings itself.
    if len(sys.argv) == 4 and sys.argv[1] == "release-keyrings":
        _keyrings.release_user_keyrings(Isolation("namespaces", uid=int(sys.argv[2]), gid=int(sys.argv[3])))
