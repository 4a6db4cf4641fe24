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

A per-sample mount namespace would do the emptying too, but costs more: measured on the CI machine, a fresh mount
namespace with its tmpfs ~0.6 ms and a fresh IPC namespace ~0.35 ms of CPU a sample, against ~0.05 ms for
emptying folders that are almost always empty; a tmpfs mounted in the fork server's own namespace is cheaper.
"""

import ctypes
import errno
import os
import resource
import select
import socket
import stat
import sys
import time

try:
    from . import _confine, _elf
except ImportError:  # loaded by path in the supervisor, next to its siblings, or run as a script (-I)
    if "_humaneval_load" not in sys.modules:  # the one loader of the supervisor's scripts (_load.py), by path
        import importlib.util

        _spec = importlib.util.spec_from_file_location(
            "_humaneval_load", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_load.py"))
        sys.modules["_humaneval_load"] = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
        _spec.loader.exec_module(sys.modules["_humaneval_load"])  # type: ignore[union-attr]
    _confine, _elf = sys.modules["_humaneval_load"].siblings("confine", "elf")

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (syscalls added after 5.0 are unified)
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_INVALIDATE = 0, 1, 7, 21
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5
# keyctl(2) has no libc wrapper without libkeyutils: its number, where we know it.
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "i386": 288, "i686": 288, "armv7l": 311}
SANDBOX_NPROC = 64  # processes a sample may have at once
CANDIDATE_NICE = 10  # how much lower the candidate's priority is than its supervisor's
OVERFLOW_ID = 65534  # nobody/nogroup: an id many files and processes already use
WORK = "/tmp/work"  # with namespaces: each sample's working dir (HOME, TMPDIR)
OWN = "/tmp/humaneval"  # with namespaces: the supervisor's own folder (0700), kept when /tmp is emptied
# SysV IPC: (the *_INFO command, the int in its reply that counts existing objects) per /proc/sysvipc file.
SYSV = {"shm": (14, 0), "sem": (19, 7), "msg": (12, 0)}  # SHM_INFO used_ids, SEM_INFO semusz, MSG_INFO msgpool
_LIBC = ctypes.CDLL(None, use_errno=True)


def prctl(option, value):
    return _LIBC.prctl(option, value, 0, 0, 0) == 0


def _mount(source, target, fstype, flags, data=None):
    def arg(text):
        return None if text is None else text.encode()

    if _LIBC.mount(arg(source), arg(target), arg(fstype), flags, arg(data)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {target}: {os.strerror(errno)}")


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
    if _LIBC.unshare(flags | (CLONE_NEWUSER if user_ns else 0)) != 0:
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
    prctl(PR_SET_PDEATHSIG, 9)
    os.chdir("/")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    kept, dentries = enter_new_root()
    if not user_ns:
        isolation = Isolation("namespaces", uid=uid, gid=gid, ids=ids)
    else:
        reason = "" if not root else f"root, but {ids}: candidates share the supervisor's uid"
        isolation = Isolation("namespaces-userns", reason, drop_caps=True,
                              ids="the supervisor's uid, every capability dropped")
    isolation.keep = tuple(sorted({OWN, *kept}))
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
    return Isolation("basic", reason, nproc=_processes_of(os.getuid()) + 2 * SANDBOX_NPROC,
                     ids="the harness's own uid")


def _landlocked(reason):
    """No namespaces: candidates run as this user, confined by Landlock to what the namespace root would show
    (read-only) and their own working dir; without Landlock, the basic sandbox, saying why."""
    folders, files, _, hidden = view()
    read = _confine.read_rules(sorted(folders) + sorted(files), hidden)
    isolation = Isolation("landlock", reason, nproc=_processes_of(os.getuid()) + 2 * SANDBOX_NPROC,
                          ids="the harness's own uid, confined by Landlock")
    _plan(isolation, read, _devices())
    if isolation.plan is None:
        why = "; ".join(filter(None, [reason, f"no Landlock confinement ({isolation.landlock})"]))
        isolation = _basic(why)
        isolation.landlock = why
    return isolation


def _devices():
    return [(f"/dev/{name}", _confine.FS["read_file"] | _confine.FS["write_file"] | _confine.FS["ioctl_dev"])
            for name in DEVICES if os.path.exists(f"/dev/{name}")]


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


def _read_only(path, recursive=True):
    """The mount at ``path`` (and, ``recursive``, every mount below it) read-only in this mount namespace
    (mount_setattr, Linux 5.12+: it changes that one attribute, so flags the kernel locked stay as they are)."""

    class MountAttr(ctypes.Structure):
        _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                    ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]

    attr = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    if _LIBC.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE if recursive else 0,
                     ctypes.byref(attr), ctypes.sizeof(attr)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"read-only {path}: {os.strerror(error)}")


# What a candidate's root shows, each read-only at its own path; nothing else of the host is in it: the
# interpreter's import path, its executable and the shared libraries these load (``_elf.closure``), one by one,
# not the operating system's /usr (5.3 GB, 128,610 files on a CI machine: every page a candidate can read is held
# in memory, so what it can read must be small). The top-level links of a usrmerge host, which the libraries'
# paths go through:
SYSTEM = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# the time zones (/etc/localtime points into them) and the C.UTF-8 locale, where the C library keeps them apart:
DATA = ("/usr/share/zoneinfo", "/usr/lib/locale/C.utf8", "/usr/lib/locale/C.UTF-8")
# the standard library's own test suite (123 MB), which no program a model writes imports:
STDLIB_LEFT_OUT = ("test",)
# what the dynamic loader, the C library and the time functions read in /etc:
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf")
DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
             "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"}
# and, in fresh tmpfs: /tmp and /dev/shm (writable, emptied after every sample); the namespace's own /proc,
# ptys and message queues. The interpreter's import path is added to it (``_interpreter``).
TMPFS = {"/tmp": "mode=1777,size=1g,nr_inodes=262144", "/dev/shm": "mode=1777,size=64m,nr_inodes=16384"}
PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the harness's own package: never shown
STAGE = "/tmp"  # where the new root is put together, on a tmpfs of this namespace's own over the host's /tmp
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "i386": 217, "i686": 217, "armv7l": 218}
MNT_DETACH = 2


# What marks a folder named pytest_humaneval as a copy of the package, of this layout or an earlier one.
_PACKAGE_MARKS = (("sandbox", "_contain.py"), ("_contain.py",), ("fixtures", "HumanEval.jsonl.gz"))


def _within(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _outermost(paths):
    return {path for path in paths if not any(path != other and _within(path, other) for other in paths)}


# the view the harness's page holder computed (``_pin``), handed to this supervisor: none to compute
VIEW: dict | None = None


def view():
    """The candidate's view: the one this supervisor was handed, else ``shown_and_hidden()``."""
    if VIEW is not None:
        return set(VIEW["folders"]), set(VIEW["files"]), dict(VIEW["links"]), list(VIEW["hidden"])
    return shown_and_hidden()


def shown_and_hidden(path=None):
    """What a candidate's view is made of, with namespaces (the root's binds) or Landlock (its read rules), for
    the import path ``path`` (sys.path): (folders, files, top-level links, what to cover inside the folders)."""
    path = sys.path if path is None else path
    folders, programs = _interpreter(path)
    import_path = {os.path.realpath(p) for p in path if p and os.path.isdir(p)}
    hidden = _hidden(folders, import_path)
    folders, files, links = _system_and_interpreter(folders, programs, hidden)
    return folders, files, links, hidden


def _interpreter(path):
    """(folders, programs) of the interpreter a candidate needs: its import path (the standard library,
    lib-dynload, the site-packages it imports from), without the harness (a folder of the import path that holds
    the harness's package, an editable install's checkout, is left out: ``_hidden`` covers the rest); its
    executable, by the path it was started with and its real one, and the libpython it links against."""
    import sysconfig

    paths = sysconfig.get_paths()
    sites = {os.path.realpath(paths[name]) for name in ("purelib", "platlib") if paths.get(name)}
    folders = {os.path.realpath(p) for p in path if p and os.path.isdir(p)}
    folders = {f for f in folders if f in sites or not _within(PACKAGE, f)}
    programs = set()
    executable = os.path.abspath(sys.executable) if sys.executable else ""
    for path in (executable, os.path.realpath(executable)):
        if path and os.path.isfile(path):
            programs.add(path)
    # A venv's interpreter finds its site-packages through pyvenv.cfg (beside it or one folder up): without it a
    # child sys.executable starts as the base interpreter and cannot import what the candidate's can.
    for folder in (os.path.dirname(executable), os.path.dirname(os.path.dirname(executable))):
        config = os.path.join(folder, "pyvenv.cfg")
        if executable and os.path.isfile(config):
            programs.add(config)
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):  # what the executable links against, for a subprocess
        library = os.path.join(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("INSTSONAME") or "")
        if os.path.isfile(library):
            programs.add(os.path.realpath(library))
    return folders, programs


def _hidden(shown, import_path):
    """What to cover inside the shown folders: every copy of the harness's package, and every site-packages or
    dist-packages folder that is not on the import path (a venv's base interpreter keeps its own; /usr has the
    system's), so the modules a candidate can see are the ones it can import."""
    import glob

    found = {PACKAGE}
    # Every import path folder is a place a copy can be imported from, nested ones included (only the outermost
    # folders are shown, so a site-packages inside another shown folder would be missed otherwise).
    places = {*shown, *(p for p in import_path if any(_within(p, f) for f in shown))}
    for folder in sorted(places):
        for pattern in ("", "*", "lib/python3*", "local/lib/python3*"):
            for place in glob.glob(os.path.join(folder, pattern)):
                for name in ("site-packages", "dist-packages"):
                    site = os.path.realpath(os.path.join(place, name))
                    if os.path.isdir(site) and site not in import_path:
                        found.add(site)
                copy = os.path.realpath(os.path.join(place, "pytest_humaneval"))
                # a copy of the package of any version: this layout's, the flat one before it, or its data
                if any(os.path.isfile(os.path.join(copy, *rel)) for rel in _PACKAGE_MARKS):
                    found.add(copy)
    found = {path for path in found if os.path.isdir(path) and any(_within(path, f) for f in shown)}
    return sorted(_outermost(found))


def _system_and_interpreter(folders, programs, hidden):
    """(folders, files, links) a candidate may read: the interpreter's folders and programs (``_interpreter``),
    the shared libraries these load, ``DATA``, a few files of ``ETC``, the outermost of each; ``links``: the
    top-level symlinks among ``SYSTEM`` (usrmerge) and ``ETC``."""
    folders = set(folders)
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    hidden.extend(os.path.join(stdlib, name) for name in STDLIB_LEFT_OUT
                  if os.path.isdir(os.path.join(stdlib, name)) and stdlib in folders)
    modules = [os.path.join(where, name) for where, name in _walk(folders, hidden)
               if ".so" in name and os.path.isfile(os.path.join(where, name))]
    files = {os.path.join(os.path.realpath(os.path.dirname(f)), os.path.basename(f))
             for f in _elf.closure(sorted(programs) + modules)} | set(programs)
    links = {}
    for path in SYSTEM + tuple(f"/etc/{name}" for name in ETC):
        if os.path.islink(path):
            links[path] = os.readlink(path)
        elif path in SYSTEM:  # a host without merged /usr: its /bin or /lib is a folder, shown file by file
            continue
        elif os.path.isdir(path):
            folders.add(path)
        elif os.path.isfile(path):
            files.add(path)
    folders.update(path for path in DATA if os.path.isdir(path) and not os.path.islink(path))
    folders = _outermost(folders)
    files = {f for f in files if not any(_within(f, folder) for folder in folders)}
    return folders, files, links


def _walk(folders, hidden, with_folders=False):
    """(folder, name) of every file in ``folders``, outside ``hidden``, symlinks to folders not followed; with
    ``with_folders``, (folder, name, is_folder) of the folders below them too."""
    for top in sorted(folders):
        for where, subfolders, names in os.walk(top):
            subfolders[:] = [name for name in subfolders if not any(_within(os.path.join(where, name), h)
                                                                    for h in hidden)]
            if with_folders:
                yield from ((where, name, True) for name in subfolders)
                yield from ((where, name, False) for name in names)
            else:
                yield from ((where, name) for name in names)


def enter_new_root():
    """Make a root of our own and move this mount namespace into it, as bubblewrap and nsjail do: an empty
    tmpfs, then read-only bind mounts of exactly what a candidate needs (``SYSTEM``, a few files of ``ETC``, a
    few ``DEVICES``, the interpreter's import path) and fresh tmpfs where it may write; ``pivot_root`` into
    it, and the host's tree is detached. An allow-list: whatever the harness or the user keeps anywhere else
    (the package's data, datasets, caches, configs, samples, results, home folders, sockets) is not hidden, it
    is simply not there, and so is anything added later. Returns the top folders under /tmp that hold a bound
    import path (a CI venv made with mktemp), which emptying /tmp after a sample must leave."""
    folders, files, links, hidden = view()
    # Descriptors first: the host's /tmp (where a CI venv may live) is covered next.
    sources = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in (*sorted(folders), *sorted(files))}
    sources.update((f"/dev/{name}", os.open(f"/dev/{name}", os.O_PATH | os.O_CLOEXEC)) for name in DEVICES
                   if os.path.exists(f"/dev/{name}"))
    _mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=64k")
    root = STAGE + "/root"
    os.mkdir(root, 0o755)
    # (inodes: as many as the skeletons of the folders need, and room for their long symlinks, a page each: caps,
    # not reservations; read-only before any candidate runs)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m,nr_inodes=0")
    for place in ("proc", "dev/pts", "dev/mqueue", *(path.strip("/") for path in TMPFS)):
        os.makedirs(os.path.join(root, place), 0o755, exist_ok=True)
    for path, options in TMPFS.items():
        _mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV, options)
    for path, target in links.items():
        os.makedirs(os.path.dirname(root + path), 0o755, exist_ok=True)
        os.symlink(target, root + path)
    for name, target in DEV_LINKS.items():
        os.symlink(target, f"{root}/dev/{name}")
    # An import path under /tmp (a CI venv made with mktemp) is bound into a skeleton of folders of its own, a
    # tmpfs made read-only once it is bound: kept when /tmp is emptied, so no candidate may write there.
    kept = sorted({"/tmp/" + path[len("/tmp/"):].split("/")[0] for path in sources if path.startswith("/tmp/")})
    for top in kept:
        os.makedirs(root + top, 0o755, exist_ok=True)
        _mount("tmpfs", root + top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m,nr_inodes=0")
    staged = {}
    for index, (path, fd) in enumerate(sources.items()):
        if path in folders:  # staged outside the root, read-only, and shown below
            where = staged[path] = f"{STAGE}/{index}"
            os.mkdir(where, 0o700)
        else:
            where = root + path
            os.makedirs(os.path.dirname(where), 0o755, exist_ok=True)
            os.close(os.open(where, os.O_WRONLY | os.O_CREAT, 0o644))
        _mount(f"/proc/self/fd/{fd}", where, None, MS_BIND | MS_REC)
        # Devices too: a read-only bind of /dev/null still takes writes, but not utimensat (another uid may set
        # the host's device times to "now", a channel from one sample, session and supervisor to the next).
        _read_only(where)
        os.close(fd)
    skeletons = {path: _skeleton_plan(where, root + path, [where + h[len(path):] for h in hidden if _within(h, path)])
                 for path, where in staged.items()}
    files = sum(len(plan[2]) for plan in skeletons.values())
    if files <= SKELETON_MAX_FILES:
        for plan in skeletons.values():
            _skeleton(*plan)
        dentries = ""
    else:  # the folders themselves, read-only as staged: one mount each
        for path, where in staged.items():
            os.makedirs(root + path, 0o755, exist_ok=True)
            _mount(where, root + path, None, MS_BIND | MS_REC)
            for covered in (h for h in hidden if _within(h, path)):
                _mount("tmpfs", root + covered, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                       "mode=0755,size=4k")
        dentries = (f"dentry cache not held: the view has {files:,} files, more than the {SKELETON_MAX_FILES:,} "
                    "bound one by one (keep the harness in a venv of its own)")
    for top in kept:
        _read_only(root + top, recursive=False)
    # Before the host's tree goes: in a user namespace the kernel lets a /proc be mounted only where one is
    # already in full view.
    mount_proc(root + "/proc")
    _read_only(root, recursive=False)
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(errno.ENOSYS, f"pivot_root's syscall number is not known for {os.uname().machine}")
    os.chdir(root)
    if _LIBC.syscall(number, b".", b".") != 0 or _LIBC.umount2(b".", MNT_DETACH) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"pivot_root: {os.strerror(error)}")
    os.chdir("/")
    if os.path.isdir("/dev/mqueue"):  # this IPC namespace's own queues, so they can be listed and emptied
        _mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    try:  # its own ptys: /dev/ptmx in a loop cannot use up the host's (where the kernel allows an instance)
        _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,max=16")
    except OSError:
        pass
    return set(kept), dentries


# With namespaces each file of the view is a mount of its own (``_skeleton``); past this many, the folders are
# bound instead (and the dentry cache stays open, which the run says): the kernel allows 100,000 mounts in a
# namespace by default (fs.mount-max), the fork server's copies them, and each costs ~20 us and ~1.5 KiB.
SKELETON_MAX_FILES = 50_000


def _skeleton_plan(source, target, hidden):
    """What showing the folder ``source`` (a read-only bind) at ``target`` as a skeleton takes: (target, [(folder
    to make, mode)], [(file to bind, where)], [(symlink to make, its target)]), parents first; ``hidden``
    folders shown empty; sockets, fifos and devices left out."""
    folders, files, links = [], [], []
    stack = [(source, target)]
    while stack:
        folder, into = stack.pop()
        try:
            with os.scandir(folder) as found:
                for entry in found:
                    made = f"{into}/{entry.name}"
                    try:
                        if entry.is_symlink():
                            links.append((made, os.readlink(entry.path)))
                        elif entry.is_dir(follow_symlinks=False):
                            folders.append((made, stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) & 0o777))
                            if not any(_within(entry.path, h) for h in hidden):
                                stack.append((entry.path, made))
                        elif entry.is_file(follow_symlinks=False):
                            files.append((os.fsencode(entry.path), made))
                    except OSError:
                        continue  # gone since the folder was listed (the host's files change), or unreadable
        except OSError:
            # removed since its parent was listed, or one the supervisor may not list (a user namespace's
            # supervisor is your user; a folder of root's with mode 0700 in the view): shown empty
            continue
    return target, folders, files, links


def _skeleton(target, folders, files, links):
    """Show a folder of the view as a skeleton (``_skeleton_plan``): its folders made anew on the root's tmpfs,
    with the host's modes, its symlinks copied, each of its regular files bound on its own (read-only, as the
    staged folder it comes from is).

    Why not the folder itself: a name looked up and not found in a folder of the host's filesystem leaves a
    negative dentry in the kernel's dentry cache, which answers the next lookup of that name about twice as fast
    (~2 against ~4 us), so one sample could set bits (names it looked up) that a later one reads by timing lookups
    (docs/safety.md). A tmpfs keeps no negative dentries (a name not found is forgotten at once), and a lookup here
    never reaches the host's folders: each file is a mount of its own, whose dentry and inode the mount holds.
    Cost: once per supervisor, ~0.2 s and ~23 MiB for 12,000 files (docs/performance.md)."""
    os.makedirs(target, 0o755, exist_ok=True)
    for made, _ in folders:
        os.mkdir(made, 0o700)
    for made, pointed in links:
        os.symlink(pointed, made)
    mount, regular = _LIBC.mount, 0o644 | stat.S_IFREG
    for source, made in files:
        os.mknod(made, regular)
        if mount(source, os.fsencode(made), None, MS_BIND, None) != 0:
            error = ctypes.get_errno()
            if error in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):  # removed, or made a folder, since it was
                os.unlink(made)  # listed; or in a folder the supervisor may not search
                continue
            raise OSError(error, f"mount {os.fsdecode(source)}: {os.strerror(error)}")
    for made, mode in reversed(folders):  # as the host has them (after what goes in them)
        os.chmod(made, mode)


def cover_own():
    """In the fork server's mount namespace: the supervisor's own folder, covered by an empty read-only tmpfs,
    so a candidate sharing the supervisor's uid (user namespaces) can neither read nor write it; the
    supervisor keeps its own view."""
    _mount("tmpfs", OWN, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "mode=0000,size=4k,nr_inodes=16")


def mount_work(isolation, size_mb):
    """In the fork server's mount namespace, before a candidate: a fresh tmpfs on the working dir, owned by the
    candidate's uid, so nothing of the last sample's files, not even how many inode numbers it used, is left.
    Returns WORK, or "!why" when it could not be made."""
    uid, gid = (isolation.uid, isolation.gid) if isolation.uid is not None else (0, 0)
    size = f"{size_mb}m" if size_mb > 0 else TMPFS["/tmp"].split("size=")[1].split(",")[0]
    try:
        _mount("tmpfs", WORK, "tmpfs", MS_NOSUID | MS_NODEV,
               f"mode=0700,size={size},nr_inodes=262144,uid={uid},gid={gid}")
    except OSError as exc:
        return f"!the sample's working dir could not be made: {exc}"
    return WORK


def mount_sample_proc():
    """In the fork server's mount namespace, before a candidate: a fresh /proc over the fork server's (a procfs
    mount is a filesystem of its own), detached after the sample. The kernel keeps a dentry for every /proc entry
    a lookup found (``/proc/sys/...``, ``/proc/meminfo``, the fork server's ``/proc/1/...``), and the next lookup
    of it is faster: in one /proc shared by every sample of a fork server, one sample could set bits (entries it
    looked up, with a ``stat``, which Landlock does not stop) that a later one reads by timing lookups (184 of 200
    told right). Returns "" or "!why"."""
    try:
        mount_proc(hidden=True)
    except OSError as exc:
        return f"!the sample's /proc could not be made: {exc}"
    return ""


def unmount(path):
    _LIBC.umount2(path.encode(), MNT_DETACH)


def mount_proc(where="/proc", hidden=False):
    """This PID namespace's own /proc (in this mount namespace). ``hidden``: the candidates' view, in which a
    process it may not trace (the fork server: another uid, or not dumpable) is not there at all."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if hidden:
        for option in ("hidepid=invisible", "hidepid=2"):  # the name since 5.8; the number before
            try:
                _mount("proc", where, "proc", flags, option)
                return
            except OSError:
                pass
    _mount("proc", where, "proc", flags)


# ------------------------------------------------------------------------------- descriptors in flight

IN_FLIGHT_WAIT_S = 8.0  # below the 10 s the supervisor waits for the fork server once it asked for a kill
UNIX_TABLE = "/proc/self/net/unix"  # the unix sockets of the reader's network namespace, bound or not


def unix_table():
    """With namespaces, in the fork server, once: its network namespace's table of unix sockets, open for
    :func:`drain_in_flight`. That namespace is the fork server's own (``_zygote``), so its candidates' sockets are
    the only ones in it."""
    return os.open(UNIX_TABLE, os.O_RDONLY | os.O_CLOEXEC)


def _unix_sockets(table):
    return os.pread(table, 1 << 16, 0).count(b"\n") - 1  # its header line, then a line a socket (a seq file)


def drain_in_flight(table, wait_s=IN_FLIGHT_WAIT_S):
    """With namespaces, in the fork server, after a sample, once every process of it is gone: "" when none of its
    unix sockets is left, else why. A socket outlives its processes only in flight (sent with SCM_RIGHTS): held by
    the queue of another socket that is itself in flight, or by its own, and only the kernel's collector frees
    such a cycle, with what it carries (a name, a flock on a file of the view): seen by nothing else, a later
    sample could read it. So no later sample starts before every one is freed: one read for nearly every sample
    (no socket left); else the collector is woken until none is, and each descriptor the last ones carried (their
    release in a kernel thread puts it off to another, a jiffy later) is freed behind two canaries. A chain of N
    sockets takes N of those jiffies (8 ms each here); a sample can put at most its open-file limit and 253 more in
    flight, so ~4 s with the default limit of 256. Past ``wait_s`` the supervisor cannot vouch for the next sample
    (it retires)."""
    if _unix_sockets(table) <= 0:
        return ""
    deadline = time.monotonic() + wait_s
    while _unix_sockets(table) > 0:
        if time.monotonic() > deadline:
            return f"the program left unix sockets in flight that the kernel had not freed after {wait_s:g} s"
        _wake_collector()
        time.sleep(0.002)
    for _ in range(2):  # a canary freed the same way is freed after what the last sockets carried, or with it
        if not _canary(deadline):
            return f"the kernel had not freed the unix sockets the program left in flight after {wait_s:g} s"
    while _unix_sockets(table) > 0:  # the canaries' own sockets, which the next sample must not find either
        if time.monotonic() > deadline:
            return f"the kernel had not freed the unix sockets the program left in flight after {wait_s:g} s"
        _wake_collector()
        time.sleep(0.001)
    return ""


def _wake_collector():
    """A unix socket's release runs the kernel's collector of sockets in flight (a work item) when any may be
    garbage."""
    for end in socket.socketpair():
        end.close()


def _canary(deadline):
    """A socket held only by its own queue, with a pipe's write end beside it: True once the collector freed both
    (the read end sees the pipe's end), False at ``deadline``."""
    read, write = os.pipe()
    try:
        one, other = socket.socketpair()
        with one:
            with other:
                socket.send_fds(one, [b"c"], [other.fileno(), write])
            os.close(write)
            write = -1
        # ``one``'s release woke the collector
        while time.monotonic() < deadline:
            if select.select([read], [], [], 0.004)[0] and os.read(read, 1) == b"":
                return True
            _wake_collector()  # in case it ran before the cycle was garbage
        return False
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)


def fresh_session_keyring():
    """Leave the harness's session keyring (kernel keys: aws-vault's keyctl backend, Kerberos KEYRING: caches)
    for a new, empty one, which every candidate inherits instead. "" when done, else why not."""
    number = SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        return f"keyctl's syscall number is not known for {os.uname().machine}"
    if _LIBC.syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        return f"keyctl(JOIN_SESSION_KEYRING): {os.strerror(ctypes.get_errno())}"
    return ""


def release_user_keyrings(isolation, only_if_held=False):
    """With namespaces as root: let the kernel free the user keyrings of the candidates' uid.

    In the initial user namespace the kernel keeps a uid's two user keyrings, once anything asked for them,
    until the machine restarts; every candidate empties them (``enter_candidate``), which makes them. Left
    alone, each supervisor's uid kept two keys for good, and the kernel's key collector, which walks every key
    on each pass, grew slower for the whole machine. A child with that uid invalidates both (their ids first:
    once one is invalid the other can no longer be looked up), so the collector frees them. At the end of the
    supervisor's life, and at its start when an earlier supervisor with the same uid was killed before its end
    (``only_if_held``: only if /proc/key-users lists the uid, since looking the keyrings up makes them)."""
    number = SYS_KEYCTL.get(os.uname().machine)
    if not isolation.namespaced or isolation.uid is None or number is None:
        return
    if only_if_held:
        try:
            with open("/proc/key-users") as handle:
                if not any(line.split(":", 1)[0].strip() == str(isolation.uid) for line in handle):
                    return
        except OSError:
            return
    pid = os.fork()
    if pid == 0:
        try:
            os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])  # none of the harness's channels
            os.setgroups([])
            os.setresgid(isolation.gid, isolation.gid, isolation.gid)
            os.setresuid(isolation.uid, isolation.uid, isolation.uid)
            rings = [_LIBC.syscall(number, KEYCTL_GET_KEYRING_ID, keyring, 0)
                     for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING)]
            for ring in rings:
                if ring > 0:
                    _LIBC.syscall(number, KEYCTL_INVALIDATE, ring)
        finally:
            os._exit(0)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


# ------------------------------------------------------------------------------------------ one sample


def enter_candidate(isolation, limits, timeout_s, work, landlock_fd=None):
    """In the candidate's forked process, before the program runs: the rlimits, then the uid or dropped
    capabilities, then its Landlock domain (``work`` its one writable folder) and its seccomp filter. Raises on
    any failure (the supervisor reports it as its own, never as the program's)."""
    mib = 1024 * 1024
    for which, value in (
        (resource.RLIMIT_CPU, int(timeout_s) + 2),
        (resource.RLIMIT_AS, limits["memory_mb"] * mib),
        (resource.RLIMIT_FSIZE, limits["file_size_mb"] * mib),
        (resource.RLIMIT_NOFILE, limits["open_files"]),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(which, (value, value))
    # Counted per uid and user namespace: with namespaces the count is the sample's own; in basic mode the
    # user's other processes count too (and root is not held by it at all).
    nproc = SANDBOX_NPROC if isolation.namespaced else isolation.nproc
    if nproc is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    # Basic mode as root: still root, but without the capabilities that reach other processes (ptrace,
    # pidfd_getfd, signals to other users) or bypass file permissions.
    if isolation.drop_caps or (not isolation.namespaced and os.geteuid() == 0):
        _drop_capabilities()
    if isolation.uid is not None:
        os.setgroups([])
        os.setresgid(isolation.gid, isolation.gid, isolation.gid)
        os.setresuid(isolation.uid, isolation.uid, isolation.uid)
    if isolation.plan is not None:
        isolation.plan.apply(landlock_fd, work)
        os.close(landlock_fd)
    if isolation.pinned:
        pin_to_own_cpu()
    else:
        # Below its own judge, supervisor and fork server, within the sample's CPU quota: a program busy on many
        # threads or processes does not hold up the verdict, nor the kill at its deadline. Only there: without a
        # quota a nice candidate would rank below every process of the host, and an honest one could starve.
        os.nice(CANDIDATE_NICE)
    # Without a cgroup, the memory limit is RLIMIT_AS, which memfds do not count: 40 of 16 MiB each passed a
    # 256 MiB limit, and secret memfds 952 MiB a 128 MiB one. A program gets ENOSYS for memfd_create and
    # memfd_secret, as on a kernel without them (Python falls back).
    # Without a network namespace, no socket but socketpair. Keys and IPC objects are refused in every mode:
    # they are not files, outlive the process and (the persistent keyring) the run, and would carry what one
    # sample learnt to the next.
    if isolation.seccomp is None:  # built once, in the fork server (see prepare_candidates)
        prepare_candidates(isolation)
    if not isolation.seccomp.install():
        # A machine whose numbers we do not know: at least a fresh session keyring and emptied user keyrings.
        if not prctl(PR_SET_NO_NEW_PRIVS, 1):
            raise OSError("prctl(NO_NEW_PRIVS) refused")
        fresh_session_keyring()
        number = SYS_KEYCTL.get(os.uname().machine)
        if isolation.namespaced and number is not None:
            for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
                _LIBC.syscall(number, KEYCTL_CLEAR, keyring)
    # The supervisor is non-dumpable, and so was this fork of it, which hides even its own /proc/self from it;
    # it holds nothing secret, and only its own descendants share its uid here (or, in basic mode, the user).
    prctl(PR_SET_DUMPABLE, 1)


def pin_to_own_cpu():
    """Without a cpu quota: this candidate, and everything it starts, on one CPU, the one the kernel placed it on
    when it was forked (its fork balancing picks the idlest: the sandboxes beside it spread over the CPUs, and a
    program busy on many threads or processes keeps to its own). Its seccomp filter then refuses changing it."""
    cpu = _LIBC.sched_getcpu()
    if cpu < 0:
        raise OSError(ctypes.get_errno(), "sched_getcpu")
    os.sched_setaffinity(0, {cpu})


def size_tmpfs(memory_mb):
    """Without a cgroup (which counts tmpfs files as the sample's memory), /tmp and /dev/shm hold at most the
    sample's memory limit: files there are memory that no rlimit counts. With namespaces, where they are ours."""
    for path, options in TMPFS.items():
        default = dict(option.split("=") for option in options.split(","))["size"]
        size = f"{memory_mb}m" if _megabytes(default) > memory_mb else default
        _mount(None, path, None, MS_REMOUNT | MS_NOSUID | MS_NODEV, f"size={size}")


def _megabytes(size):
    return int(size[:-1]) * {"k": 1 / 1024, "m": 1, "g": 1024}[size[-1]]


def empty_shared(isolation):
    """With namespaces, after a sample: /tmp (but the supervisor's folder and bound import paths), /dev/shm,
    this IPC namespace's POSIX message queues and SysV shared memory, semaphores and message queues, all
    emptied, so nothing one sample left reaches the next (nor fills the space it needs). Returns what could
    not be removed ("" when all went)."""
    left = []
    for folder, keep in (("/tmp", isolation.keep), ("/dev/shm", ()), ("/dev/mqueue", ())):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if path in keep:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                gone = remove_tree(path)
            else:
                try:
                    os.unlink(path)
                    gone = True
                except OSError:
                    gone = False
            if not gone:
                left.append(path)
    for kind, (command, field) in SYSV.items():
        counts = (ctypes.c_int * 64)()
        if kind == "shm":
            _LIBC.shmctl(0, command, counts)
        elif kind == "sem":
            _LIBC.semctl(0, 0, command, counts)
        else:
            _LIBC.msgctl(0, command, counts)
        if counts[field] > 0:  # rare: read which ones, and remove them (IPC_RMID)
            _remove_sysv(kind)
    return ", ".join(left)


def _remove_sysv(kind):
    try:
        with open(f"/proc/sysvipc/{kind}") as handle:
            rows = [line.split() for line in handle.readlines()[1:]]
    except OSError:
        return
    for row in rows:
        if len(row) > 1 and row[1].isdigit():
            ident = int(row[1])
            if kind == "shm":
                _LIBC.shmctl(ident, 0, None)
            elif kind == "sem":
                _LIBC.semctl(ident, 0, 0)
            else:
                _LIBC.msgctl(ident, 0, None)


def prepare_candidates(isolation):
    """In the fork server, once: what every candidate installs, built ahead (its seccomp filter)."""
    isolation.seccomp = _confine.Seccomp(memfds=not isolation.per_process, sockets=isolation.namespaced,
                                         metadata=not isolation.shares_uid, affinity=not isolation.pinned,
                                         drained=isolation.drained)


def _drop_capabilities():
    """No capability left, in any set, for this process and everything it starts."""
    for cap in range(64):
        prctl(PR_CAPBSET_DROP, cap)  # EINVAL past the last capability the kernel knows: fine
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if _LIBC.capset(header, data) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"capset: {os.strerror(errno)}")


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


def remove_tree(path: str) -> bool:
    """Remove ``path`` and everything in it, however deep (a candidate can nest folders deeper than the
    interpreter's recursion limit, and than any path may be long): with two folder descriptors at most, never
    following a symlink, what is inside a sub-folder is moved up into ``path`` until every sub-folder is empty.
    Best effort: returns whether it is gone."""
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        pass
    try:
        top = _open_folder(path)
    except OSError:
        return False
    moved = 0
    try:
        _writable(top)
        progress = True
        while progress:
            progress = False
            with os.scandir(top) as entries:
                names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
            for name, is_dir in names:
                try:
                    (os.rmdir if is_dir else os.unlink)(name, dir_fd=top)
                    progress = True
                    continue
                except OSError:
                    if not is_dir:
                        continue
                try:
                    sub = _open_folder(name, top)
                except OSError:
                    continue
                try:
                    _writable(sub)
                    with os.scandir(sub) as inner:
                        for entry in list(inner):
                            moved += 1
                            try:
                                _move_up(entry, f".gone-{moved}", sub, top)
                                progress = True
                            except OSError:
                                pass
                finally:
                    os.close(sub)
    finally:
        os.close(top)
    try:
        os.rmdir(path)
    except OSError:
        pass
    return not os.path.lexists(path)


def _open_folder(name, dir_fd=None):
    """A descriptor of the folder ``name`` (never a symlink), its mode first made 0700 when it cannot be read: a
    candidate that shares this uid can make a folder with any mode (mkdir's own), and without CAP_DAC_OVERRIDE a
    folder of mode 0300 can be written but not listed, so what it holds could not be removed (on 2b2788d it stayed
    on the host after the run)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise
        os.chmod(name, 0o700, dir_fd=dir_fd)  # its own folder (the candidate is gone: no race to a symlink)
        return os.open(name, flags, dir_fd=dir_fd)


def _move_up(entry, name, sub, top):
    """Move ``entry`` of folder ``sub`` into ``top`` as ``name``. A folder that moves needs its own write permission
    (its ``..`` changes): one made with mode 0500 or 0000 gets 0700 first."""
    try:
        os.rename(entry.name, name, src_dir_fd=sub, dst_dir_fd=top)
    except PermissionError:
        if not entry.is_dir(follow_symlinks=False):
            raise
        os.chmod(entry.name, 0o700, dir_fd=sub)
        os.rename(entry.name, name, src_dir_fd=sub, dst_dir_fd=top)


def _writable(fd):
    try:
        os.fchmod(fd, 0o700)
    except OSError:
        pass


# ------------------------------------------------------------------------------------------ cgroups


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


if __name__ == "__main__":
    # python -I _contain.py release-keyrings UID GID: run (as root) by the harness after a namespaced supervisor
    # was killed, since it could not release its candidates' user keyrings itself.
    if len(sys.argv) == 4 and sys.argv[1] == "release-keyrings":
        release_user_keyrings(Isolation("namespaces", uid=int(sys.argv[2]), gid=int(sys.argv[3])))
