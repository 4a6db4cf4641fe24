"""Every page a candidate may read, held in memory for the harness's life: one process per harness process
(``harness._holder``), started as ``python -I _pin.py``, as the supervisor is.

Why: a read brings a page into the page cache, and a later sample can tell a cached page from one on disk
without any call the sandbox refuses (by timing its own read of a one-page mapping, or by the major faults
``getrusage`` counts for it). Each readable page is then a bit one sample writes and the next reads: on 59cf42b a
learner passed 3 of 3 problems that way in every mode. Once every page a candidate can read is in memory before
the first candidate runs, and stays there, no read changes anything a later sample can measure.

How: the candidate's view (``_contain.shown_and_hidden``, an allow-list narrowed to what the interpreter needs)
is computed once here and handed to each supervisor of this harness (the root's binds and Landlock's rules are
made of it); every regular file in it is mapped and the mappings locked (``mlockall``: root, or a
RLIMIT_MEMLOCK large enough), so neither a candidate nor memory pressure can evict a page while the run lasts.
Where locking is refused, every page is read instead: resident, not locked, which holds until the kernel
reclaims memory. Mapping each file also moves its access time past its change time, so under ``relatime`` no
candidate's read moves one for a day.

Under ``relatime`` a read moves an access time again once it is a day old: every ``refresh_s`` (6 h) the holder
reads a byte of every file, so none is ever a day old and no candidate's read moves one however long the run. On
a ``strictatime`` mount every read moves it: the holder names such mounts (``strictatime``), and the harness says
so in Landlock mode, where candidates read the host's files (namespaces bind them read-only).

Protocol: one JSON line in (``{"budget_mb": N, "refresh_s": S}``); two out: ``{"view": ...}`` once the view is
known, then ``{"pinned": "locked" | "resident" | "", "files": N, "mib": M, "reason": why not, "strictatime":
[mount points]}``; then it refreshes the access times until its stdin closes (the harness's end) and exits.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import select
import stat
import sys

if __name__ == "__main__":  # by path, as the supervisor loads its siblings: nothing of the package comes in
    import importlib.util

    for _name in ("confine", "elf", "contain"):
        _spec = importlib.util.spec_from_file_location(
            f"_humaneval_{_name}", os.path.join(os.path.dirname(os.path.abspath(__file__)), f"_{_name}.py"))
        sys.modules[f"_humaneval_{_name}"] = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
        _spec.loader.exec_module(sys.modules[f"_humaneval_{_name}"])  # type: ignore[union-attr]
    import _humaneval_contain as _contain  # type: ignore[import-not-found]
else:
    from . import _contain

MCL_CURRENT = 1
PAGE = mmap.PAGESIZE
MAX_MAPPINGS = 50_000  # below the kernel's default vm.max_map_count (65,530), which every mapping counts against


def readable_files(folders, files, hidden):
    """(fd, size, path) of the regular files of the view, each once (by device and inode), symlinks not followed:
    a symlink's target is in the view on its own, or a candidate cannot read it either."""
    seen = set()
    paths = [*sorted(files), *(os.path.join(where, name) for where, name in _contain._walk(folders, hidden))]
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0 or (info.st_dev, info.st_ino) in seen:
            os.close(fd)
            continue
        seen.add((info.st_dev, info.st_ino))
        yield fd, info.st_size, path


def pin(folders, files, hidden, budget_mb, paths):
    """Map every readable file and lock the mappings, or read every page where locking is refused:
    (how: "locked", "resident" or "", files, MiB, why not locked or not at all, the mappings to keep). ``paths``
    gets each mapped file's path."""
    maps: list[mmap.mmap] = []
    total, reason = 0, ""
    for fd, size, path in readable_files(folders, files, hidden):
        try:
            if total + size > budget_mb << 20 or len(maps) >= MAX_MAPPINGS:
                reason = (f"what a candidate can read is over {budget_mb} MiB or {MAX_MAPPINGS} files (at "
                          f"{total >> 20} MiB, {len(maps)} files): keep the harness in a venv of its own")
                return "", len(maps), total >> 20, reason, []
            maps.append(mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ))
            paths.append(path)
            total += size
        except OSError as exc:
            return "", len(maps), total >> 20, f"a file could not be mapped: {exc.strerror or exc}", []
        finally:
            os.close(fd)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mlockall(MCL_CURRENT) == 0:
        return "locked", len(maps), total >> 20, "", maps
    why = os.strerror(ctypes.get_errno())
    for mapping in maps:  # one byte of every page: each is read from the disk now, if it was not in memory
        _ = mapping[::PAGE]
    return "resident", len(maps), total >> 20, f"mlockall: {why} (RLIMIT_MEMLOCK)", maps


def refresh(paths):
    """Read a byte of every file: under relatime its access time moves now if it is a day old, and stays put
    for a candidate's read for the day after."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            os.pread(fd, 1, 0)
        except OSError:
            pass
        finally:
            os.close(fd)


def strictatime(paths):
    """The mount points, among those that hold ``paths``, where every read moves an access time (neither
    relatime nor noatime, nor read-only)."""
    devices = set()
    for path in paths:
        try:
            devices.add(os.stat(path).st_dev)
        except OSError:
            pass
    found: list[str] = []
    try:
        with open("/proc/self/mountinfo") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or ":" not in fields[2]:
            continue
        major, minor = (int(part) for part in fields[2].split(":"))
        options = set(fields[5].split(","))
        if os.makedev(major, minor) in devices and not options & {"relatime", "noatime", "ro"}:
            found.append(fields[4])
    return sorted(set(found))


def main() -> int:
    line = sys.stdin.readline()
    if not line:
        return 1
    request = json.loads(line)
    budget_mb, refresh_s = int(request.get("budget_mb", 0)), float(request.get("refresh_s", 6 * 3600))
    folders, files, links, hidden = _contain.shown_and_hidden()
    view = {"folders": sorted(folders), "files": sorted(files), "links": links, "hidden": list(hidden)}
    sys.stdout.write(json.dumps({"view": view}) + "\n")
    sys.stdout.flush()
    paths: list[str] = []
    how, count, mib, reason, maps = pin(folders, files, hidden, budget_mb, paths)
    sys.stdout.write(json.dumps({"pinned": how, "files": count, "mib": mib, "reason": reason,
                                 "strictatime": strictatime(paths)}) + "\n")
    sys.stdout.flush()
    while True:  # until the harness ends: its end of the pipe closes then, however it ends
        if select.select([0], [], [], refresh_s)[0]:
            if not os.read(0, 1 << 16):
                break
        elif how:
            refresh(paths)
    del maps
    return 0


if __name__ == "__main__":
    sys.exit(main())
