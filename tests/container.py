"""Run a command in the confinement of a default container, without Docker: ``python container.py [--user UID]
-- COMMAND...``.

What a default ``docker run`` (no ``--privileged``, no added capabilities) does to the processes in it, as far
as this harness can tell the difference (moby/profiles ``seccomp/default.json`` and the default capability
set of moby's ``oci/caps/defaults.go``):

- seccomp: ``unshare``, ``setns``, ``mount``, ``umount2`` and ``pivot_root`` refused (EPERM), and so is
  ``clone`` with any namespace flag (the profile allows them only to a container with CAP_SYS_ADMIN);
  ``clone3`` is ENOSYS (so glibc falls back to ``clone``, whose flags a filter can read); the keyring calls
  (``add_key``, ``request_key``, ``keyctl``) refused (EPERM). Landlock's and seccomp's own calls stay allowed,
  as they are in that profile since 2022;
- capabilities: Docker's 14 (CHOWN, DAC_OVERRIDE, FSETID, FOWNER, MKNOD, NET_RAW, SETGID, SETUID, SETFCAP,
  SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, KILL, AUDIT_WRITE); every other one leaves the bounding set too.

``--no-landlock`` also refuses Landlock's calls (ENOSYS), as a kernel before 5.13 or one built without it does:
with namespaces refused as well, nothing but the basic sandbox is left.

``--user UID`` then runs the command as that uid (and its gid), without capabilities: a user that is not root
and has no user namespaces. The filter is installed while this process still holds CAP_SYS_ADMIN, so, like
Docker's, it needs no ``no_new_privs``. Standard library only; run as root. Nothing here is a test: the tests
that use it are in ``test_container.py``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

LIBC = ctypes.CDLL(None, use_errno=True)
# machine -> (AUDIT_ARCH_*, {name: number})
NUMBERS = {
    "x86_64": (0xC000003E, {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
                            "clone": 56, "clone3": 435, "add_key": 248, "request_key": 249, "keyctl": 250,
                            "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446}),
    "aarch64": (0xC00000B7, {"unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
                             "clone": 220, "clone3": 435, "add_key": 217, "request_key": 218, "keyctl": 219,
                             "landlock_create_ruleset": 444, "landlock_add_rule": 445,
                             "landlock_restrict_self": 446}),
}
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
DOCKER_CAPS = {0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 27, 29, 31}  # the 14 above, by number
LD, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
ALLOW, ERRNO = 0x7FFF0000, 0x00050000


def available() -> str:
    """"" where this machine can make the confinement, else why not."""
    if os.uname().machine not in NUMBERS:
        return f"the system call numbers of {os.uname().machine} are not known here"
    if os.geteuid() != 0:
        return "needs root (to drop to Docker's capabilities)"
    return ""


def _filter(no_landlock: bool = False) -> list:
    arch, nr = NUMBERS[os.uname().machine]
    eperm, enosys = ERRNO | errno.EPERM, ERRNO | errno.ENOSYS
    rows = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, ALLOW), (LD, 0, 0, 0)]
    for name in ("unshare", "setns", "mount", "umount2", "pivot_root", "add_key", "request_key", "keyctl"):
        rows += [(JEQ, 0, 1, nr[name]), (RET, 0, 0, eperm)]
    rows += [(JEQ, 0, 1, nr["clone3"]), (RET, 0, 0, enosys)]
    for name in ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self") if no_landlock else ():
        rows += [(JEQ, 0, 1, nr[name]), (RET, 0, 0, enosys)]
    # clone: its flags are the first argument on both machines; any namespace flag -> EPERM
    rows += [(JEQ, 0, 3, nr["clone"]), (LD, 0, 0, 16), (JSET, 0, 1, CLONE_NAMESPACES), (RET, 0, 0, eperm)]
    rows.append((RET, 0, 0, ALLOW))
    return rows


def _install(rows: list) -> None:
    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    table = (Filter * len(rows))(*(Filter(*row) for row in rows))
    if LIBC.prctl(22, 2, ctypes.byref(Program(len(rows), table)), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "seccomp")


def _keep_capabilities(keep: set) -> None:
    for cap in range(64):
        if cap not in keep:
            LIBC.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; EINVAL past the last one the kernel knows
    low = sum(1 << cap for cap in keep if cap < 32)
    high = sum(1 << (cap - 32) for cap in keep if cap >= 32)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)(low, low, 0, high, high, 0)  # effective, permitted, inheritable; twice
    if LIBC.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def in_container(pytester, *args: str):
    """``python -m pytest *args`` in pytester's folder, in a default container's confinement (a RunResult)."""
    return pytester.run(sys.executable, __file__, "--", sys.executable, "-m", "pytest", *args, timeout=600)


def main(argv: list) -> None:
    user, no_landlock = None, False
    if argv[:1] == ["--no-landlock"]:
        no_landlock, argv = True, argv[1:]
    if argv[:1] == ["--user"]:
        user, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    why = available()
    if why:
        sys.exit(f"container.py: {why}")
    _install(_filter(no_landlock))
    if user is not None:
        os.setgroups([])
        os.setresgid(user, user, user)
        os.setresuid(user, user, user)  # every capability goes with root's uid
    else:
        _keep_capabilities(DOCKER_CAPS)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
