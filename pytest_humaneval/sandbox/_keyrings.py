"""Kernel keyrings: the supervisor's session keyring replaced by a fresh one, which every candidate inherits
(``fresh_session_keyring``), and with namespaces as root the user keyrings of the candidates' uid let go of at the
end (``release_user_keyrings``), which the kernel would otherwise keep until the machine restarts.

A supervisor's script (loaded by path, like ``_contain``, which hands it on): standard library only, no package
import.
"""

import ctypes
import os
import resource
import sys

try:
    from . import _linux
except ImportError:  # loaded by path in the supervisor, by the one loader of its scripts (_load.py)
    _linux = sys.modules["_humaneval_load"].sibling("linux")

KEYCTL_GET_KEYRING_ID, KEYCTL_INVALIDATE = _linux.KEYCTL_GET_KEYRING_ID, _linux.KEYCTL_INVALIDATE
KEYCTL_JOIN_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = _linux.KEYCTL_JOIN_SESSION_KEYRING, _linux.KEY_SPEC_USER_KEYRING
KEY_SPEC_USER_SESSION_KEYRING, SYS_KEYCTL = _linux.KEY_SPEC_USER_SESSION_KEYRING, _linux.SYS_KEYCTL

def fresh_session_keyring():
    """Leave the harness's session keyring (kernel keys: aws-vault's keyctl backend, Kerberos KEYRING: caches)
    for a new, empty one, which every candidate inherits instead. "" when done, else why not."""
    number = SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        return f"keyctl's syscall number is not known for {os.uname().machine}"
    if _linux.LIBC.syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
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
            rings = [_linux.LIBC.syscall(number, KEYCTL_GET_KEYRING_ID, keyring, 0)
                     for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING)]
            for ring in rings:
                if ring > 0:
                    _linux.LIBC.syscall(number, KEYCTL_INVALIDATE, ring)
        finally:
            os._exit(0)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
