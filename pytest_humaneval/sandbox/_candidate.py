"""One candidate's entry, in its forked process before the program runs (``enter_candidate``): its limits, then its
uid or dropped capabilities, its Landlock domain, its CPU and its seccomp filter (``_confine``, built once in the
fork server: ``prepare_candidates``).

A supervisor's script (loaded by path, like ``_contain``, which hands it on): standard library only, no package
import.
"""

import ctypes
import os
import resource
import sys

try:
    from . import _confine, _keyrings, _linux
except ImportError:  # loaded by path in the supervisor, by the one loader of its scripts (_load.py)
    _confine, _keyrings, _linux = sys.modules["_humaneval_load"].siblings("confine", "keyrings", "linux")

KEYCTL_CLEAR, KEY_SPEC_USER_KEYRING = _linux.KEYCTL_CLEAR, _linux.KEY_SPEC_USER_KEYRING
KEY_SPEC_USER_SESSION_KEYRING = _linux.KEY_SPEC_USER_SESSION_KEYRING
LINUX_CAPABILITY_VERSION_3, PR_CAPBSET_DROP = _linux.LINUX_CAPABILITY_VERSION_3, _linux.PR_CAPBSET_DROP
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, SYS_KEYCTL = _linux.PR_SET_DUMPABLE, _linux.PR_SET_NO_NEW_PRIVS, _linux.SYS_KEYCTL

SANDBOX_NPROC = 64  # processes a sample may have at once
CANDIDATE_NICE = 10  # how much lower the candidate's priority is than its supervisor's


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
        if not _linux.prctl(PR_SET_NO_NEW_PRIVS, 1):
            raise OSError("_linux.prctl(NO_NEW_PRIVS) refused")
        _keyrings.fresh_session_keyring()
        number = SYS_KEYCTL.get(os.uname().machine)
        if isolation.namespaced and number is not None:
            for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
                _linux.LIBC.syscall(number, KEYCTL_CLEAR, keyring)
    # The supervisor is non-dumpable, and so was this fork of it, which hides even its own /proc/self from it;
    # it holds nothing secret, and only its own descendants share its uid here (or, in basic mode, the user).
    _linux.prctl(PR_SET_DUMPABLE, 1)


def pin_to_own_cpu():
    """Without a cpu quota: this candidate, and everything it starts, on one CPU, the one the kernel placed it on
    when it was forked (its fork balancing picks the idlest: the sandboxes beside it spread over the CPUs, and a
    program busy on many threads or processes keeps to its own). Its seccomp filter then refuses changing it."""
    cpu = _linux.LIBC.sched_getcpu()
    if cpu < 0:
        raise OSError(ctypes.get_errno(), "sched_getcpu")
    os.sched_setaffinity(0, {cpu})


def prepare_candidates(isolation):
    """In the fork server, once: what every candidate installs, built ahead (its seccomp filter)."""
    isolation.seccomp = _confine.Seccomp(memfds=not isolation.per_process, sockets=isolation.namespaced,
                                         metadata=not isolation.shares_uid, affinity=not isolation.pinned,
                                         drained=isolation.drained)


def _drop_capabilities():
    """No capability left, in any set, for this process and everything it starts."""
    for cap in range(64):
        _linux.prctl(PR_CAPBSET_DROP, cap)  # EINVAL past the last capability the kernel knows: fine
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if _linux.LIBC.capset(header, data) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"capset: {os.strerror(errno)}")
