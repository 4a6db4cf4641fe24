"""The seccomp rows of ``_confine.channel_rows``, run by a small BPF interpreter for every machine the filter knows.

The filter only runs for real on this machine's architecture (tests/test_container.py's
``test_inode_flags_and_residency_refused``); this runs the same rows, with each machine's numbers, on the
arguments each check looks at, so that a jump offset that is wrong on one path (a fall-through to the madvise
check after it, say) shows on every architecture, here.
"""

from __future__ import annotations

import errno

import pytest

from pytest_humaneval.sandbox import _confine as c


def run(rows: list, arch: int, nr: int, args: tuple = ()) -> int:
    """The filter's verdict for one call: a BPF interpreter for the instructions the filter uses."""
    data = {c.ARCH_AT: arch, c.NR_AT: nr}
    for i, value in enumerate((*args, 0, 0, 0, 0, 0, 0)[:6]):
        data[c.ARG_AT + 8 * i] = value & 0xFFFFFFFF
    accumulator, pc = 0, 0
    for _ in range(10_000):
        code, jt, jf, k = rows[pc]
        pc += 1
        if code == c.LD_W_ABS:
            accumulator = data[k]
        elif code == c.RET_K:
            return k
        elif code == c.JA:
            pc += k
        elif code in (c.JEQ_K, c.JGE_K, c.JSET_K):
            taken = {c.JEQ_K: accumulator == k, c.JGE_K: accumulator >= k, c.JSET_K: bool(accumulator & k)}[code]
            pc += jt if taken else jf
        else:
            raise AssertionError(f"an instruction the interpreter does not know: {code:#x}")
    raise AssertionError("the filter did not return")


def verdict(error: int) -> int:
    return c.SECCOMP_RET_ERRNO | error


@pytest.mark.parametrize("machine", sorted(c.ARCHES))
def test_channel_rows_on_every_machine(machine):
    """On every machine, the channel rows refuse what they name and let the rest through."""
    arch, numbers = c.ARCHES[machine]
    rows = c._program(arch, numbers, list(c.KEYRINGS), [])
    assert rows[c.ABI_ROWS - 2:c.ABI_ROWS] == [(c.JGE_K, 0, 1, c.X32_SYSCALL_BIT), (c.RET_K, 0, 0, verdict(errno.ENOSYS))]
    rows[c.ABI_ROWS:c.ABI_ROWS] = c.channel_rows(machine)  # as Seccomp does
    own = c.CHANNEL_NUMBERS[machine]
    direct, allow = c.O_DIRECT[machine], c.SECCOMP_RET_ALLOW
    cases = [
        *((("ioctl", (3, command)), verdict(errno.EPERM)) for command in c.INODE_IOCTLS),
        (("ioctl", (3, 0x80086601)), allow),  # FS_IOC_GETFLAGS: reading stays allowed
        (("ioctl", (3, 0x5401)), allow),  # TCGETS (isatty)
        (("ioctl", (3, 0x1_40086602)), verdict(errno.EPERM)),  # the command's high word is not read by the kernel
        (("madvise", (0, 4096, c.MADV_WILLNEED)), verdict(errno.EPERM)),
        (("madvise", (0, 4096, c.MADV_POPULATE_READ)), verdict(errno.EPERM)),
        (("madvise", (0, 4096, c.MADV_POPULATE_WRITE)), verdict(errno.EPERM)),
        (("madvise", (0, 4096, c.MADV_PAGEOUT)), verdict(errno.EPERM)),  # the check after the channel rows
        (("madvise", (0, 4096, c.MADV_COLD)), verdict(errno.EPERM)),
        (("madvise", (0, 4096, 4)), allow),  # MADV_DONTNEED: the allocator's own
        (("preadv2", (3, 0, 1, 0, 0, c.RWF_NOWAIT)), verdict(errno.EOPNOTSUPP)),
        (("preadv2", (3, 0, 1, 0, 0, c.RWF_NOWAIT | 0x1)), verdict(errno.EOPNOTSUPP)),
        (("preadv2", (3, 0, 1, 0, 0, 0x1)), allow),  # RWF_HIPRI alone
        (("pwritev2", (3, 0, 1, 0, 0, c.RWF_NOWAIT)), verdict(errno.EOPNOTSUPP)),
        (("openat", (-100, 0, direct)), verdict(errno.EINVAL)),
        (("openat", (-100, 0, 0o2000000)), allow),  # O_CLOEXEC
        (("fcntl", (3, c.F_SETFL, direct)), verdict(errno.EINVAL)),
        (("fcntl", (3, c.F_SETFL, 0o4000)), allow),  # O_NONBLOCK
        (("fcntl", (3, 3, direct)), allow),  # F_GETFL: its third argument means nothing
        (("readahead", (3, 0, 4096)), verdict(errno.ENOSYS)),
        (("io_setup", (1, 0)), verdict(errno.ENOSYS)),
        (("openat2", (-100, 0, 0, 24)), verdict(errno.ENOSYS)),
        (("file_setattr", (3, 0, 0, 24, 0)), verdict(errno.EPERM)),
        (("keyctl", ()), verdict(errno.ENOSYS)),  # the filter's own rows still run after these
        (("ioctl", (3, c.FS_IOC_SETFLAGS)), verdict(errno.EPERM)),
    ]
    assert run(rows, arch, c.X32_SYSCALL_BIT | 16) == verdict(errno.ENOSYS)  # the ABI checks still come first
    if "open" in own:
        cases += [(("open", (0, direct)), verdict(errno.EINVAL)), (("open", (0, 0)), allow)]
    wrong = []
    for (name, args), expected in cases:
        number = own.get(name, numbers.get(name))
        got = run(rows, arch, number, args)
        if got != expected:
            wrong.append((name, args, hex(got), hex(expected)))
    assert not wrong, wrong


@pytest.mark.parametrize("machine", sorted(c.ARCHES))
@pytest.mark.parametrize("drained", [False, True])
def test_in_flight_rows_on_every_machine(machine, drained):
    """bind, sendmsg and sendmmsg: EPERM where no fork server drains what a sample leaves in flight (Landlock,
    basic), allowed where one does (namespaces); the rows after them still run either way."""
    arch, numbers = c.ARCHES[machine]
    rows = c._program(arch, numbers, list(c.KEYRINGS), [])
    rows[c.ABI_ROWS:c.ABI_ROWS] = c.channel_rows(machine, drained=drained)
    own = c.CHANNEL_NUMBERS[machine]
    expected = c.SECCOMP_RET_ALLOW if drained else verdict(errno.EPERM)
    got = {name: run(rows, arch, own[name], (3, 0, 0)) for name in c.IN_FLIGHT}
    assert got == dict.fromkeys(c.IN_FLIGHT, expected)
    assert run(rows, arch, own["setns"], (3, 0)) == verdict(errno.EPERM)  # the other EPERM rows stay
    assert run(rows, arch, numbers["keyctl"]) == verdict(errno.ENOSYS)
