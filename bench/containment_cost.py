"""What the containment adds per sample, step by step, in CPU time (microseconds), as root.

    python bench/containment_cost.py [--rounds 2000]

Each per-sample step that containment added to the sandbox runs here alone, in a loop, in a process set up the
way the supervisor is (its own mount and IPC namespaces, a tmpfs /tmp and /dev/shm, the mqueue filesystem, the
sample cgroup where the host allows one):

- supervisor, after each sample: emptying /tmp, /dev/shm, the message queues and SysV IPC (``empty_shared``),
  comparing its own limits, priority and folder with the start (``Baseline.changed``), reading the cgroup's
  OOM-kill counter twice, the set-up pipe (created, read, closed), and making the candidate the OOM killer's
  first choice (one write to a /proc file of a child);
- candidate, before the program: the set-up byte written (with the pipe above).

The sum is compared with the 0.3 ms budget of the containment issue. Memory accounting by the cgroup (every
page a sample touches is charged) is not a step of its own: `bench/breakdown.py`'s sandbox row includes it.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pytest_humaneval.sandbox import _contain  # noqa: E402


def cpu_us(action, rounds: int) -> float:
    started = time.process_time()
    for _ in range(rounds):
        action()
    return (time.process_time() - started) / rounds * 1e6


def supervisor_like() -> _contain.Isolation:
    """This process in its own mount and IPC namespaces with the supervisor's tmpfs folders."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_contain.CLONE_NEWNS | _contain.CLONE_NEWIPC) != 0:
        sys.exit(f"unshare: {os.strerror(ctypes.get_errno())} (this benchmark needs root)")
    _contain._mount(None, "/", None, _contain.MS_REC | _contain.MS_PRIVATE)
    for folder, options in (("/tmp", "mode=1777,size=64m"), ("/dev/shm", "mode=1777,size=64m")):
        _contain._mount("tmpfs", folder, "tmpfs", _contain.MS_NOSUID | _contain.MS_NODEV, options)
    if os.path.isdir("/dev/mqueue"):
        _contain._mount("mqueue", "/dev/mqueue", "mqueue", _contain.MS_NOSUID | _contain.MS_NODEV)
    os.makedirs(_contain.OWN, mode=0o700)
    isolation = _contain.Isolation("namespaces")
    isolation.keep = (_contain.OWN,)
    return isolation


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: the supervisor's namespaces and cgroups are made as root")
    cgroups = _contain.Cgroups.create(f"containment-cost-{os.getpid()}")
    isolation = supervisor_like()
    baseline = _contain.Baseline(_contain.OWN)
    rounds = args.rounds

    def setup_pipe() -> None:
        read_end, write_end = os.pipe()
        os.write(write_end, b"1")
        os.close(write_end)
        os.set_blocking(read_end, False)
        os.read(read_end, 1)
        os.close(read_end)

    child = os.fork()
    if child == 0:
        time.sleep(60)
        os._exit(0)
    steps = [
        ("supervisor: empty /tmp, /dev/shm, queues, SysV IPC", cpu_us(lambda: _contain.empty_shared(isolation),
                                                                      rounds)),
        ("supervisor: own limits, priority, folder unchanged", cpu_us(baseline.changed, rounds)),
        ("supervisor: cgroup OOM-kill counter, twice", cpu_us(lambda: (cgroups.oom_kills(), cgroups.oom_kills()),
                                                              rounds)),
        ("supervisor and candidate: the set-up pipe", cpu_us(setup_pipe, rounds)),
        ("supervisor: the candidate first for the OOM killer", cpu_us(lambda: cgroups.prefer(child), rounds)),
    ]
    os.kill(child, 9)
    os.waitpid(child, 0)
    width = max(len(name) for name, _ in steps)
    for name, value in steps:
        print(f"{name:{width}}  {value:7.1f} us")
    total = sum(value for _, value in steps)
    print(f"{'total per sample':{width}}  {total:7.1f} us   (budget 300 us)   cgroups: {cgroups.description}")
    cgroups.close()
    _contain.remove_cgroups(cgroups.paths)
    return 0


if __name__ == "__main__":
    tempfile.tempdir = "/tmp"
    sys.exit(main())
