"""The Linux the sandbox talks to below the standard library: the numbers of the calls, flags and commands it
uses (prctl, unshare's namespaces, mount, keyctl, SysV IPC, pivot_root) and the few C library calls it wraps
(``prctl``, ``mount``, ``read_only``: mount_setattr, ``unmount``).

A supervisor's script (loaded by path, like ``_contain``, which uses it): standard library only, no package import.
"""

import ctypes
import os

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
# SysV IPC: (the *_INFO command, the int in its reply that counts existing objects) per /proc/sysvipc file.
SYSV = {"shm": (14, 0), "sem": (19, 7), "msg": (12, 0)}  # SHM_INFO used_ids, SEM_INFO semusz, MSG_INFO msgpool
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "i386": 217, "i686": 217, "armv7l": 218}
MNT_DETACH = 2
LIBC = ctypes.CDLL(None, use_errno=True)


def prctl(option, value):
    return LIBC.prctl(option, value, 0, 0, 0) == 0


def mount(source, target, fstype, flags, data=None):
    def arg(text):
        return None if text is None else text.encode()

    if LIBC.mount(arg(source), arg(target), arg(fstype), flags, arg(data)) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {target}: {os.strerror(errno)}")


def read_only(path, recursive=True):
    """The mount at ``path`` (and, ``recursive``, every mount below it) read-only in this mount namespace
    (mount_setattr, Linux 5.12+: it changes that one attribute, so flags the kernel locked stay as they are)."""

    class MountAttr(ctypes.Structure):
        _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                    ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]

    attr = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    if LIBC.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE if recursive else 0,
                     ctypes.byref(attr), ctypes.sizeof(attr)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"read-only {path}: {os.strerror(error)}")


def unmount(path):
    LIBC.umount2(path.encode(), MNT_DETACH)
