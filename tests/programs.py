"""Samples for the sandbox tests: a whole script (run while the candidate loads), or a completion and a test."""

from __future__ import annotations

from pytest_humaneval.sandbox import Program

# After a script: an entry point and a test that pass, so a script that runs to its end is `passed`.
_ENTRY = "\n\n\ndef entry():\n    return None\n"
_TEST = "def check(candidate):\n    assert candidate() is None\n"


def script(code: str) -> Program:
    """``code`` as a completion that does all its work at module level, in the candidate's process: its own
    asserts and exits decide how loading ends; a script that runs to its end passes."""
    return Program(prompt="", completion=code + _ENTRY, test=_TEST, entry_point="entry")


def sample(completion: str, test: str, entry_point: str = "f", prompt: str = "") -> Program:
    """A completion judged by a test, as the plugin runs every sample: ``check`` runs in the judge."""
    return Program(prompt=prompt, completion=completion, test=test, entry_point=entry_point)


# Memory that no rlimit counts, held past the sample's limit where there is no cgroup: a BPF map (which the host's
# kernel.unprivileged_bpf_disabled may allow; here the filter must refuse it, ENOSYS), and pages of a secret memfd
# (memfd_secret, Linux 5.14+) mapped 4 MiB at a time (under RLIMIT_AS and RLIMIT_MEMLOCK), written and
# unmapped, which the descriptor keeps. ``{mb}``: what it tries to hold; it passes only if it held no more than
# ``{limit}`` MiB. On 2b2788d it held 512 MiB with `memory_mb: 128` in a user namespace and in Landlock as non-root
# (and bpf failed with the kernel's EPERM, the host's setting, not the filter's ENOSYS).
HOLD_UNCOUNTED_MEMORY = """
import ctypes, errno, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
chunk, held, fds = 4 << 20, 0, []
# a BPF array map, charged to a cgroup only: refused by the filter (ENOSYS), whatever the host allows
attr = (ctypes.c_uint32 * 8)(2, 4, 4096, {mb} << 8)  # BPF_MAP_TYPE_ARRAY of {mb} MiB: 4 KiB values
fd = libc.syscall({{'x86_64': 321}}.get(os.uname().machine, 280), 0, attr, ctypes.sizeof(attr))
assert fd < 0 and ctypes.get_errno() == errno.ENOSYS, ('bpf', fd, os.strerror(ctypes.get_errno()))
while held < {mb} << 20:
    fd = libc.syscall(447, 0)  # memfd_secret(flags)
    if fd < 0:
        assert ctypes.get_errno() in (errno.ENOSYS, errno.EPERM), os.strerror(ctypes.get_errno())
        break
    fds.append(fd)
    os.ftruncate(fd, chunk)
    with mmap.mmap(fd, chunk) as view:
        for at in range(0, chunk, 4096):
            view[at] = 1
    held += chunk
assert held <= {limit} << 20, f'held {{held >> 20}} MiB in secret memfds'
"""


# A generator of distinct 4 MiB items, 768 MiB in all, returned on a set_equal task (MBPP+'s `similar_elements`):
# the candidate holds one item at a time, the judge's `set(out)` all of them. With ``GENERATOR_SUITE``'s suite
# (15 s limit) and `memory_mb: 128`, on 2b2788d the judge of a harness without a cgroup held all 768 MiB and
# called the sample a plain assertion failure.
LARGE_ITEMS = "    return (n.to_bytes(2, 'big') * (2 << 20) for n in range(192))\n"
HONEST_ITEMS = "    return (x for x in args[0] if x == 2)\n"


# Folders a candidate that shares the harness's uid makes with a mode that keeps their owner from listing them
# (chmod is refused, mkdir's own mode is not): 0300 can be written and entered but not listed; files in them, and
# an empty 0000 one. On 2b2788d a non-root harness could not empty them: the sample failed ("left files the sandbox
# could not remove") and they stayed on the host.
CLOSED_FOLDERS = """
import os
os.mkdir('closed', 0o300)
os.mkdir('closed/inner', 0o300)
for folder in ('closed', 'closed/inner'):
    fd = os.open(os.path.join(folder, 'kept'), os.O_CREAT | os.O_WRONLY, 0)
    os.write(fd, b'x')
    os.close(fd)
os.mkdir('closed/inner/none', 0)
"""
