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

Protocol: one JSON line in (``{"budget_mb": N}``); two out: ``{"view": ...}`` once the view is known, then
``{"pinned": "locked" | "resident" | "", "files": N, "mib": M, "reason": why not}``; then it waits for its
stdin to close (the harness's end) and exits.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
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
    """The regular files of the view, each once (by device and inode), symlinks not followed: a symlink's target
    is in the view on its own, or a candidate cannot read it either."""
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
        yield fd, info.st_size


def pin(folders, files, hidden, budget_mb):
    """Map every readable file and lock the mappings, or read every page where locking is refused:
    (how: "locked", "resident" or "", files, MiB, why not locked or not at all, the mappings to keep)."""
    maps: list[mmap.mmap] = []
    total, reason = 0, ""
    for fd, size in readable_files(folders, files, hidden):
        try:
            if total + size > budget_mb << 20 or len(maps) >= MAX_MAPPINGS:
                reason = (f"what a candidate can read is over {budget_mb} MiB or {MAX_MAPPINGS} files (at "
                          f"{total >> 20} MiB, {len(maps)} files): keep the harness in a venv of its own")
                return "", len(maps), total >> 20, reason, []
            maps.append(mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ))
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


def main() -> int:
    line = sys.stdin.readline()
    if not line:
        return 1
    budget_mb = int(json.loads(line).get("budget_mb", 0))
    folders, files, links, hidden = _contain.shown_and_hidden()
    view = {"folders": sorted(folders), "files": sorted(files), "links": links, "hidden": list(hidden)}
    sys.stdout.write(json.dumps({"view": view}) + "\n")
    sys.stdout.flush()
    how, count, mib, reason, maps = pin(folders, files, hidden, budget_mb)
    sys.stdout.write(json.dumps({"pinned": how, "files": count, "mib": mib, "reason": reason}) + "\n")
    sys.stdout.flush()
    sys.stdin.read()  # until the harness ends: its end of the pipe closes then, however it ends
    del maps
    return 0


if __name__ == "__main__":
    sys.exit(main())
