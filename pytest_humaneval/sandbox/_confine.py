"""Confinement that needs no namespace: a seccomp filter and a Landlock domain, applied in each candidate.

Used by ``_contain`` (loaded by path in the supervisor, like its siblings): standard library only, no package
import. Both are allow-lists of what persists or reaches outside the sample, applied to the candidate's own
process just before its program runs, and inherited by everything it starts:

- :class:`Seccomp`: system calls a candidate has no business making fail as on a kernel without them.
  The kernel objects that outlive a process and are not files (keyrings of every kind, the uid's persistent
  keyring included; SysV and POSIX IPC), io_uring (which can open sockets and files behind seccomp's back),
  calls that reach other processes (ptrace, process_vm_*, kcmp, pidfd_getfd; prlimit, setpriority and the
  sched_set* calls on anything but the caller; sched_setaffinity on the caller too where no cpu quota holds the
  sample and its candidate is pinned to one CPU instead), and, where the sample has no network namespace of its own,
  ``socket`` (``socketpair`` stays: pipes between a program's own processes are not a network). Docker's
  default profile refuses the keyring calls the same way. And (:func:`channel_rows`) what would let a later
  sample read state an earlier one left on a file it may only read: inode flags, and the page cache's residency
  told without timing; and, where its fork server cannot see its unix sockets end (no namespaces), socket names
  and descriptors in flight.
- :func:`landlock`: the files a candidate may read (the operating system, the interpreter's import path, never
  the harness's package or anything of the user's) and the one folder it may write (its own per-sample
  working dir, plus the namespace's own /tmp and /dev where it has them), no TCP bind or connect (ABI >= 4),
  and no signal or abstract unix socket outside its own domain (ABI >= 6). Needs no privilege: it works in a
  default container and for a user without user namespaces, where namespaces cannot be made.
"""

import ctypes
import errno
import os

_LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
X32_SYSCALL_BIT = 0x40000000

# System call numbers per machine: x86_64's own table, and the generic table aarch64 and riscv64 share.
_X86_64 = {
    "add_key": 248, "request_key": 249, "keyctl": 250,
    "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65, "semctl": 66,
    "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71,
    "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244,
    "mq_getsetattr": 245, "memfd_create": 319, "socket": 41, "ptrace": 101, "process_vm_readv": 310,
    "process_vm_writev": 311, "kcmp": 312, "prlimit64": 302, "setpriority": 141, "sched_setaffinity": 203,
    "sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314, "ioprio_set": 251,
    "fadvise64": 221, "mincore": 27, "madvise": 28, "bpf": 321,
    "inotify_init": 253, "inotify_add_watch": 254, "inotify_init1": 294, "fanotify_init": 300,
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260,
    "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280, "setxattr": 188, "lsetxattr": 189,
    "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
}
_GENERIC = {
    "add_key": 217, "request_key": 218, "keyctl": 219,
    "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197, "semget": 190, "semctl": 191, "semtimedop": 192,
    "semop": 193, "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189,
    "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
    "mq_getsetattr": 185, "memfd_create": 279, "socket": 198, "ptrace": 117, "process_vm_readv": 270,
    "process_vm_writev": 271, "kcmp": 272, "prlimit64": 261, "setpriority": 140, "sched_setaffinity": 122,
    "sched_setscheduler": 119, "sched_setparam": 118, "sched_setattr": 274, "ioprio_set": 30,
    "fadvise64": 223, "mincore": 232, "madvise": 233, "bpf": 280,
    "inotify_init1": 26, "inotify_add_watch": 27, "fanotify_init": 262,
    "fchmod": 52, "fchmodat": 53, "fchown": 55, "fchownat": 54, "utimensat": 88, "setxattr": 5, "lsetxattr": 6,
    "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16,
}
_UNIFIED = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "pidfd_getfd": 438,
            "process_madvise": 440, "memfd_secret": 447, "cachestat": 451, "fchmodat2": 452, "setxattrat": 463,
            "removexattrat": 466}
# machine -> (AUDIT_ARCH_*, its numbers)
ARCHES = {"x86_64": (0xC000003E, {**_X86_64, **_UNIFIED}), "aarch64": (0xC00000B7, {**_GENERIC, **_UNIFIED}),
          "riscv64": (0xC00000F3, {**_GENERIC, **_UNIFIED})}

# What fails, and how: ENOSYS, as on a kernel built without it, so a program takes its fallback.
KEYRINGS = ("add_key", "request_key", "keyctl")
IPC = ("shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop", "msgget", "msgsnd",
       "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr")
# bpf: its maps hold memory that only a cgroup counts (Linux 5.11+), and outlive the process when pinned; refused
# whatever the host's kernel.unprivileged_bpf_disabled says, as Docker's default profile refuses it.
OTHERS = ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
          "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf")
# Memory in a file of no filesystem, which no rlimit counts (only a cgroup does): refused where there is none.
# memfd_secret's pages are not even in the process's address space once unmapped: 952 MiB held with a 128 MiB
# limit on 2b2788d, where memfd_create was already refused.
MEMFDS = ("memfd_create", "memfd_secret")
# What tells or changes which pages of a shared file are in the page cache (its residency is state every sample
# can see): eviction on demand and residency queries. Reading a page still caches it: see docs/safety.md.
PAGE_CACHE = ("fadvise64", "mincore", "cachestat", "process_madvise")
# Watches on files (inotify, fanotify): no sample needs one, and inotify's watches and instances are counted per
# user, so a candidate that shares the harness's uid could use up what the page holder needs to watch the view
# (a file that arrives in it mid-run would then be held only at the next hourly look).
WATCHES = ("inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init")
MADV_COLD, MADV_PAGEOUT = 20, 21
# A file's metadata, which Landlock does not guard: where a candidate shares the harness's uid (user namespaces,
# Landlock, basic), its mode, owner, times and extended attributes of any file it owns (the supervisor's folder,
# the namespace's /tmp, your home) would outlast the sample. EPERM, as for a file of another user.
METADATA = ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime", "utimes",
            "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
            "fremovexattr", "setxattrat", "removexattrat")
# ------------------------------------------------------------------- channels between samples (issue 42)
# What a later sample could read back from an earlier one through a file every sample can read, beyond its
# contents: inode flags and the like (rewritable bits on a file the candidate's uid owns), and the page cache
# (which pages of a shared file are resident). Refused in every mode: no honest program needs them.
# System call numbers: x86_64's own table, and the generic one aarch64 and riscv64 share ("open" is x86_64's only).
CHANNEL_NUMBERS = {
    "x86_64": {"ioctl": 16, "madvise": 28, "fcntl": 72, "open": 2, "openat": 257, "readahead": 187, "preadv2": 327,
               "pwritev2": 328, "io_setup": 206, "openat2": 437, "file_setattr": 469, "unshare": 272, "setns": 308,
               "clone": 56, "clone3": 435, "bind": 49, "getsockopt": 55, "setsockopt": 54, "pidfd_open": 434,
               "sendmsg": 46, "sendmmsg": 307},
    "aarch64": {"ioctl": 29, "madvise": 233, "fcntl": 25, "openat": 56, "readahead": 213, "preadv2": 286,
                "pwritev2": 287, "io_setup": 0, "openat2": 437, "file_setattr": 469, "unshare": 97, "setns": 268,
                "clone": 220, "clone3": 435, "bind": 200, "getsockopt": 209, "setsockopt": 208, "pidfd_open": 434,
                "sendmsg": 211, "sendmmsg": 269},
}
CHANNEL_NUMBERS["riscv64"] = CHANNEL_NUMBERS["aarch64"]
O_DIRECT = {"x86_64": 0o40000, "aarch64": 0o200000, "riscv64": 0o40000}
# ioctl commands that write a file's flags or attributes (chattr's nodump/noatime/..., the fsxattr's flags and
# project id, the inode generation, fs-verity), which need only ownership: EPERM, as on a file of another user.
# The 32-bit forms too (the command is an unsigned int: its low word is all the kernel reads).
FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR = 0x40086602, 0x40046602, 0x401C5820
FS_IOC_SETVERSION, FS_IOC32_SETVERSION, FS_IOC_ENABLE_VERITY = 0x40087602, 0x40047602, 0x40806685
INODE_IOCTLS = (FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR, FS_IOC_SETVERSION, FS_IOC32_SETVERSION,
                FS_IOC_ENABLE_VERITY)
# Residency told without timing: a read with RWF_NOWAIT fails with EAGAIN on a page not cached (preadv2, and
# kernel AIO's aio_rw_flags: io_setup is ENOSYS, as on a kernel without AIO; POSIX aio in glibc uses threads);
# O_DIRECT reads and writes go around the cache (EINVAL, as on a filesystem without it; also set through
# fcntl(F_SETFL)); openat2's flags sit in a struct seccomp cannot read (ENOSYS: Python and glibc's open use
# openat); readahead and madvise's WILLNEED and POPULATE_* load pages on demand (ENOSYS, EPERM).
RWF_NOWAIT, F_SETFL = 0x8, 4
# New namespaces (Docker's default profile refuses them too): no program a model writes needs one, and a candidate
# that unshares a mount namespace copies every mount of its root (with namespaces, one per file of the view), each
# copy moving the machine-wide mount id counter by thousands, which a later sample reads (``statx``'s
# STATX_MNT_ID_UNIQUE), and holding ~2 MiB of the kernel's memory. unshare and clone with a CLONE_NEW* flag and
# setns: EPERM; clone3, whose flags sit in a struct seccomp cannot read: ENOSYS (glibc then uses clone).
CLONE_NEW_FLAGS = 0x7E020000  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
CLONE_NEWTIME = 0x80  # unshare's only: clone's low byte is the exit signal
# A pidfd's inode number (pidfs, Linux 6.9+) is a counter of every process and thread the machine has made, which a
# sample moves (by making threads) and a later one reads (fstat of a pidfd: 10 of 12 bytes told exactly, by a
# second red-team reader): pidfd_open ENOSYS (asyncio then watches children another way), clone's CLONE_PIDFD
# EPERM, SO_PEERPIDFD and SO_PASSPIDFD ENOPROTOOPT, as on a kernel without them.
CLONE_PIDFD, SO_PASSPIDFD, SO_PEERPIDFD = 0x1000, 76, 77
# Socket names and descriptors in flight. A socket whose only reference is in flight (sent over itself with
# SCM_RIGHTS, which only sendmsg and sendmmsg can send, in a message seccomp cannot read) outlives every process of
# its sample until the kernel's collector frees it, and so does what it holds: its name in the abstract namespace
# (a later sample's bind of it failed: 64 of 64 bits told, in every mode; a name the kernel picked for a socket
# that sent with SO_PASSCRED, found by connecting: every run told), and whatever descriptor it carries (a flock
# held on a file of the view). ``drained``: with namespaces each fork server has a network namespace of its own,
# whose unix sockets are its candidates' alone, and lets no candidate start before the kernel has freed every one
# the one before it left (_drain.drain_in_flight): there bind, sendmsg and sendmmsg stay, as
# multiprocessing.Manager, asyncio's unix servers and, from Python 3.12, its streams need them. Elsewhere (Landlock,
# basic) a candidate's sockets share the host's namespace with every other process's, and nothing tells its own
# apart: bind, sendmsg and sendmmsg EPERM, so every socket of a sample dies with its processes (send, sendto and
# recvmsg stay; no name outlives its socket).
JSET_K, JA = 0x45, 0x05  # BPF_JMP | BPF_JSET | BPF_K (A & k), BPF_JMP | BPF_JA (always, k rows on)
MADV_WILLNEED, MADV_POPULATE_READ, MADV_POPULATE_WRITE = 3, 22, 23
ABI_ROWS = 6  # the first rows of _program's filter, the ABI checks: the channel rows go right after them


IN_FLIGHT = ("bind", "sendmsg", "sendmmsg")  # refused where no fork server drains what a sample leaves in flight


def channel_rows(machine: str, drained: bool = False) -> list:
    """The filter's rows for the channels above (run before the other per-argument checks, so madvise's
    advice is looked at here first): each a check of one call's number, then of one argument. ``drained``: the
    fork server sees every unix socket of a sample freed before the next starts (namespaces): IN_FLIGHT stay."""
    numbers = CHANNEL_NUMBERS[machine]
    eperm, enosys = SECCOMP_RET_ERRNO | errno.EPERM, SECCOMP_RET_ERRNO | errno.ENOSYS
    einval, eopnotsupp = SECCOMP_RET_ERRNO | errno.EINVAL, SECCOMP_RET_ERRNO | errno.EOPNOTSUPP
    rows = []
    for verdict, names in ((eperm, ("file_setattr", "setns", *(() if drained else IN_FLIGHT))),
                           (enosys, ("readahead", "io_setup", "openat2", "clone3", "pidfd_open"))):
        for name in names:
            rows += [(JEQ_K, 0, 1, numbers[name]), (RET_K, 0, 0, verdict)]

    # Each check falls through to the rest of the filter (the accumulator reloaded with the call's number) when
    # its argument does not match, so the other checks on the same call still apply.
    tail = [(LD_W_ABS, 0, 0, NR_AT), (JA, 0, 0, 1)]

    def one_of(name: str, arg: int, values: tuple, verdict: int) -> list:
        """name's argument ``arg`` equal to one of ``values``: ``verdict``."""
        checks = [(JEQ_K, len(values) + 1 - i, 0, value) for i, value in enumerate(values)]
        return [(JEQ_K, 0, len(checks) + 4, numbers[name]), (LD_W_ABS, 0, 0, ARG_AT + 8 * arg), *checks, *tail,
                (RET_K, 0, 0, verdict)]

    def has_bit(name: str, arg: int, bit: int, verdict: int) -> list:
        """name's argument ``arg`` with ``bit`` set: ``verdict``."""
        return [(JEQ_K, 0, 5, numbers[name]), (LD_W_ABS, 0, 0, ARG_AT + 8 * arg), (JSET_K, 2, 0, bit), *tail,
                (RET_K, 0, 0, verdict)]

    rows += has_bit("unshare", 0, CLONE_NEW_FLAGS | CLONE_NEWTIME, eperm)
    rows += has_bit("clone", 0, CLONE_NEW_FLAGS | CLONE_PIDFD, eperm)
    enoprotoopt = SECCOMP_RET_ERRNO | errno.ENOPROTOOPT
    rows += one_of("getsockopt", 2, (SO_PASSPIDFD, SO_PEERPIDFD), enoprotoopt)
    rows += one_of("setsockopt", 2, (SO_PASSPIDFD, SO_PEERPIDFD), enoprotoopt)
    rows += one_of("ioctl", 1, INODE_IOCTLS, eperm)
    rows += one_of("madvise", 2, (MADV_WILLNEED, MADV_POPULATE_READ, MADV_POPULATE_WRITE), eperm)
    rows += has_bit("preadv2", 5, RWF_NOWAIT, eopnotsupp) + has_bit("pwritev2", 5, RWF_NOWAIT, eopnotsupp)
    direct = O_DIRECT[machine]
    rows += has_bit("openat", 2, direct, einval) + (has_bit("open", 1, direct, einval) if "open" in numbers else [])
    # fcntl(fd, F_SETFL, flags) with O_DIRECT among the flags
    rows += [(JEQ_K, 0, 7, numbers["fcntl"]), (LD_W_ABS, 0, 0, ARG_AT + 8), (JEQ_K, 0, 2, F_SETFL),
             (LD_W_ABS, 0, 0, ARG_AT + 16), (JSET_K, 2, 0, direct), *tail, (RET_K, 0, 0, einval)]
    return rows


# Allowed on the caller only (its first argument 0); EPERM on any other process.
SELF_ONLY = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr")


class _Row(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Row))]


class Seccomp:
    """The candidate's filter, built once per fork server (building it took 1.3 ms of a candidate's time) and
    installed by each candidate (:meth:`install`). ``memfds``/``sockets``/``metadata``: whether MEMFDS
    (memfd_create, memfd_secret), sockets (AF_UNIX ones only) and the METADATA calls stay allowed; ``socketpair``
    stays either way. ``drained``: the fork server sees every unix socket of a sample freed before the next starts
    (namespaces): bind, sendmsg and sendmmsg stay too (:func:`channel_rows`). ``affinity``: whether
    ``sched_setaffinity`` stays allowed on the caller (where no cpu quota holds the sample to one CPU, the
    candidate is pinned to one, and widening that is EPERM)."""

    def __init__(self, memfds: bool, sockets: bool, metadata: bool, affinity: bool = True,
                 drained: bool = False) -> None:
        machine = ARCHES.get(os.uname().machine)
        self.known = machine is not None  # a machine whose numbers are not known here: nothing to install
        if machine is None:
            return
        arch, numbers = machine
        denied = [*KEYRINGS, *IPC, *OTHERS, *PAGE_CACHE, *(name for name in WATCHES if name in numbers),
                  *(() if memfds else MEMFDS), *(() if sockets else ("socket",))]
        refused = ([] if metadata else [name for name in METADATA if name in numbers]) + \
            ([] if affinity else ["sched_setaffinity"])  # before SELF_ONLY's rows: refused on itself too
        program = _program(arch, numbers, denied, refused, unix_only=sockets)
        program[ABI_ROWS:ABI_ROWS] = channel_rows(os.uname().machine, drained=drained)  # after the ABI checks
        self._rows = (_Row * len(program))(*(_Row(*row) for row in program))
        self._program = _Program(len(program), self._rows)

    def install(self) -> bool:
        """In the candidate (no_new_privs first, as the kernel requires of an unprivileged caller); False where
        nothing is known to install."""
        if not self.known:
            return False
        if _LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) refused")
        if _LIBC.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._program), 0, 0) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"seccomp: {os.strerror(error)}")
        return True


LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
ARCH_AT, NR_AT, ARG_AT = 4, 0, 16  # offsets in struct seccomp_data; an argument's low word at 16 + 8 * i


def _program(arch: int, numbers: dict, denied: list, refused: list, unix_only: bool = False) -> list:
    """The filter as (code, jt, jf, k) rows: another ABI than the machine's own (i386 or x32 on x86_64, with
    other numbers) is ENOSYS; each denied call is ENOSYS, each refused one EPERM; each SELF_ONLY call, and
    setpriority and ioprio_set, is allowed only on the caller (pid 0; setpriority: PRIO_PROCESS and 0;
    ioprio_set: IOPRIO_WHO_PROCESS and 0), else EPERM; madvise's COLD and PAGEOUT (which evict a shared
    file's pages) are EPERM; ``unix_only``: a socket of any family but AF_UNIX is EACCES (a network namespace's
    counters, /proc/net/snmp, would carry what one sample sent to the next; and the table the kernel picks a
    connecting TCP socket's port from is one for the whole machine, every network namespace's: a sample that
    connects to 127.0.0.1:P again and again moves the port the next sample's first connection to it gets, in a
    network namespace of its own too); everything else is allowed."""
    enosys, eperm = SECCOMP_RET_ERRNO | errno.ENOSYS, SECCOMP_RET_ERRNO | errno.EPERM
    rows = [(LD_W_ABS, 0, 0, ARCH_AT), (JEQ_K, 1, 0, arch), (RET_K, 0, 0, enosys), (LD_W_ABS, 0, 0, NR_AT),
            (JGE_K, 0, 1, X32_SYSCALL_BIT), (RET_K, 0, 0, enosys)]
    for name in denied:
        rows += [(JEQ_K, 0, 1, numbers[name]), (RET_K, 0, 0, enosys)]
    for name in refused:
        rows += [(JEQ_K, 0, 1, numbers[name]), (RET_K, 0, 0, eperm)]
    if unix_only:  # socket(domain, ...): AF_UNIX (1) only
        rows += [(JEQ_K, 0, 4, numbers["socket"]), (LD_W_ABS, 0, 0, ARG_AT), (JEQ_K, 1, 0, 1),
                 (RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EACCES), (RET_K, 0, 0, SECCOMP_RET_ALLOW)]
    # madvise(addr, len, advice): advice is the third argument
    rows += [(JEQ_K, 0, 5, numbers["madvise"]), (LD_W_ABS, 0, 0, ARG_AT + 16), (JEQ_K, 2, 0, MADV_COLD),
             (JEQ_K, 1, 0, MADV_PAGEOUT), (RET_K, 0, 0, SECCOMP_RET_ALLOW), (RET_K, 0, 0, eperm)]
    # ioprio_set(which, who, prio): IOPRIO_WHO_PROCESS (1) of itself (0) only
    rows += [(JEQ_K, 0, 6, numbers["ioprio_set"]), (LD_W_ABS, 0, 0, ARG_AT), (JEQ_K, 0, 3, 1),
             (LD_W_ABS, 0, 0, ARG_AT + 8), (JEQ_K, 0, 1, 0), (RET_K, 0, 0, SECCOMP_RET_ALLOW),
             (RET_K, 0, 0, eperm)]
    for name in SELF_ONLY:  # nr? -> load arg 0; == 0 -> allow; else EPERM
        rows += [(JEQ_K, 0, 4, numbers[name]), (LD_W_ABS, 0, 0, ARG_AT), (JEQ_K, 0, 1, 0),
                 (RET_K, 0, 0, SECCOMP_RET_ALLOW), (RET_K, 0, 0, eperm)]
    rows += [(JEQ_K, 0, 6, numbers["setpriority"]), (LD_W_ABS, 0, 0, ARG_AT), (JEQ_K, 0, 3, 0),
             (LD_W_ABS, 0, 0, ARG_AT + 8), (JEQ_K, 0, 1, 0), (RET_K, 0, 0, SECCOMP_RET_ALLOW),
             (RET_K, 0, 0, eperm)]
    rows.append((RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return rows


# ------------------------------------------------------------------------------------------------ Landlock

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
FS = {"execute": 1 << 0, "write_file": 1 << 1, "read_file": 1 << 2, "read_dir": 1 << 3, "remove_dir": 1 << 4,
      "remove_file": 1 << 5, "make_char": 1 << 6, "make_dir": 1 << 7, "make_reg": 1 << 8, "make_sock": 1 << 9,
      "make_fifo": 1 << 10, "make_block": 1 << 11, "make_sym": 1 << 12, "refer": 1 << 13, "truncate": 1 << 14,
      "ioctl_dev": 1 << 15}
FS_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_ONLY = FS["execute"] | FS["write_file"] | FS["read_file"] | FS["truncate"] | FS["ioctl_dev"]
READ = FS["execute"] | FS["read_file"] | FS["read_dir"]
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where it has none (too old, or not enabled among its LSMs)."""
    version = _LIBC.syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    return max(version, 0)


def describe(abi: int) -> str:
    """What a Landlock domain of this ABI confines, for the summary header and the report."""
    parts = ["files"]
    if abi >= 4:
        parts.append("tcp")
    if abi >= 6:
        parts.append("signals and abstract sockets scoped")
    return f"landlock ABI {abi} ({', '.join(parts)})"


class Plan:
    """What a candidate's Landlock domain allows, worked out once per supervisor, as two layers (a candidate's
    access must pass both):

    - the *shared* layer handles reading (execute, read files, list folders), TCP and scoping: the ``read``
      rules and the folder that holds the per-sample working dir (``work_parent``). It is built once, in the
      fork server (:meth:`shared`), and every candidate restricts itself with the same ruleset;
    - the *own* layer handles every kind of writing: the sample's working dir (new every sample, so its rule is
      made by each candidate, :meth:`apply`) and the ``write`` rules (devices).

    One layer of every rule per candidate cost 3.9 ms of CPU (300 rules: the standard library's folder is allowed
    entry by entry where it holds a hidden site-packages); the shared layer makes that once per supervisor."""

    def __init__(self, abi: int, read: list, write: list) -> None:
        self.abi = abi
        self.fs = FS_ABI[min(abi, 5)]
        self.read = [(path, access & READ) for path, access in read + write]
        self.write = [(path, access & self.fs & ~READ) for path, access in write]
        self.work_parent: str | None = None  # set by the supervisor once it knows its folder

    def _ruleset(self, handled_fs: int, outward: bool) -> int:
        abi = self.abi
        attr = (ctypes.c_uint64 * 3)(handled_fs, NET_BIND_TCP | NET_CONNECT_TCP if outward and abi >= 4 else 0,
                                     SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if outward and abi >= 6 else 0)
        size = 24 if abi >= 6 else 16 if abi >= 4 else 8
        ruleset = _LIBC.syscall(SYS_CREATE_RULESET, attr, size, 0)
        if ruleset < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
        return ruleset

    def shared(self) -> int:
        """The shared layer's ruleset (a descriptor); made once, in the fork server."""
        ruleset = self._ruleset(READ & self.fs, outward=True)
        try:
            for path, access in (*self.read, *(((self.work_parent, READ),) if self.work_parent else ())):
                _add(ruleset, path, access)
        except BaseException:
            os.close(ruleset)
            raise
        return ruleset

    def apply(self, shared: int, work: str) -> None:
        """In the candidate, just before its program runs: both layers (no_new_privs first)."""
        if _LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) refused")
        if _LIBC.syscall(SYS_RESTRICT_SELF, shared, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self (shared layer)")
        own = self._ruleset(self.fs & ~READ, outward=False)
        try:
            for path, access in (*self.write, (work, self.fs & ~READ)):
                _add(own, path, access)
            if _LIBC.syscall(SYS_RESTRICT_SELF, own, 0) != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self (own layer)")
        finally:
            os.close(own)


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _add(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone since the plan was made: nothing to allow
    try:
        if not os.path.isdir(path):
            access &= FILE_ONLY
        rule = _PathBeneath(access, fd)
        if _LIBC.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"landlock_add_rule {path}: {os.strerror(error)}")
    finally:
        os.close(fd)


def read_rules(shown: list, hidden: list) -> list:
    """(path, access) rules that let a candidate read everything under ``shown`` except what lies under
    ``hidden``. Landlock only adds rights down a tree, so a shown folder that holds a hidden one is not
    allowed whole: it may be listed (READ_DIR), and each of its entries is allowed on its own, recursively,
    the hidden one left out."""
    rules: list = []

    def within(path: str, folder: str) -> bool:
        return path == folder or path.startswith(folder.rstrip("/") + "/")

    def allow(path: str) -> None:
        inside = [h for h in hidden if within(h, path)]
        if not inside:
            rules.append((path, READ))
            return
        if path in inside or not os.path.isdir(path):
            return  # the hidden folder itself
        rules.append((path, FS["read_dir"]))
        try:
            names = sorted(os.listdir(path))
        except OSError:
            return
        for name in names:
            entry = os.path.join(path, name)
            if not os.path.islink(entry):  # a link is reached through its target, whose own rules decide
                allow(entry)

    for path in shown:
        allow(os.path.realpath(path))
    return rules
