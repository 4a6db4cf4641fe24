"""Descriptors in flight, with namespaces: after each sample, in the fork server, no later sample starts before
every unix socket the sample left (in flight, sent with SCM_RIGHTS, with what it carries) is freed
(``drain_in_flight``).

A supervisor's script (loaded by path, like ``_contain``, which hands it on): standard library only, no package
import.
"""

import os
import select
import socket
import time

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
