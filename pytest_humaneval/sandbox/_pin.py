"""Every page a candidate may read, held in memory for the harness's life: one process per harness process
(``harness._holder``), started as ``python -I _pin.py``, as the supervisor is.

Why: a read brings a page into the page cache, and a later sample can tell a cached page from one on disk
without any call the sandbox refuses (by timing its own read of a one-page mapping, or by the major faults
``getrusage`` counts for it). Each readable page is then a bit one sample writes and the next reads: on 59cf42b a
learner passed 3 of 3 problems that way in every mode. Once every page a candidate can read is in memory before
the first candidate runs, and stays there, no read changes anything a later sample can measure.

How: the candidate's view (``_view.shown_and_hidden``, an allow-list narrowed to what the interpreter needs)
is computed once here and handed to each supervisor of this harness (the root's binds and Landlock's rules are
made of it); every regular file in it is mapped and the mappings locked (``mlockall``: root, or a
CAP_IPC_LOCK), so neither a candidate nor memory pressure can evict a page while the run lasts. Every folder of
the view is watched (inotify): a file that arrives later (a package installed mid-run) is held as it arrives, and
each hourly look holds whatever the watch missed. Where locking is
refused (no root; a default container, which has no CAP_IPC_LOCK), every page is read instead: resident, not
locked, which holds until the kernel reclaims memory.

Under ``relatime`` a read moves an access time when it is not later than the change time, or is a day old: the
holder's first pass reads every file, symlink and folder of the view (mapping a file reads it), and from then on
reads each one at the second its access time turns a day old, and looks at all of them again every ``refresh_s``
(1 h); so no candidate's read finds an access time it can move, however long the run. On a ``strictatime`` mount
every read moves it: the holder names such mounts (``strictatime``), and the harness says so in Landlock mode,
where candidates read the host's files (namespaces bind them read-only).

Protocol: one JSON line in (``{"budget_mb": N, "refresh_s": S}``); two out: ``{"view": ...}`` once the view is
known, then ``{"pinned": "locked" | "resident" | "", "files": N, "mib": M, "reason": why not, "strictatime":
[mount points], "watch": why the view is not watched, or ""}``; then it keeps the access times and holds what
arrives until its stdin closes (the harness's end) and exits.
"""

from __future__ import annotations

import ctypes
import heapq
import json
import mmap
import os
import select
import stat
import struct
import sys
import time

if __name__ == "__main__":  # by path, as the supervisor loads its siblings: nothing of the package comes in
    import importlib.util  # the one loader of the supervisor's scripts (_load.py), by path, and its siblings by it

    _spec = importlib.util.spec_from_file_location(
        "_humaneval_load", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_load.py"))
    sys.modules["_humaneval_load"] = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
    _spec.loader.exec_module(sys.modules["_humaneval_load"])  # type: ignore[union-attr]
    _view = sys.modules["_humaneval_load"].sibling("view")
else:
    from . import _view

MCL_CURRENT = 1
PROT_READ, MAP_SHARED = 1, 1
IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x8, 0x40, 0x80, 0x100, 0x200
IN_IGNORED, IN_Q_OVERFLOW, IN_ISDIR = 0x8000, 0x4000, 0x40000000
IN_ONLYDIR, IN_DONT_FOLLOW = 0x01000000, 0x02000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name, len bytes)
PAGE = mmap.PAGESIZE
MAX_MAPPINGS = 50_000  # below the kernel's default vm.max_map_count (65,530), which every mapping counts against
DAY_S = 86_400.0  # relatime moves an access time again once it is this old
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_LIBC.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_LIBC.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]


def entries(folders, files, hidden):
    """(path, kind) of everything in the view whose access time a read moves: "file" (each regular file once, by
    device and inode, empty ones too), "link" and "folder"; symlinks not followed (a target in the view is there
    on its own, or a candidate cannot read it either)."""
    seen = set()
    found = [*sorted(files), *sorted(folders)]
    found += [os.path.join(where, name) for where, name, _ in _view.walk(folders, hidden, with_folders=True)]
    for path in found:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        kind = _kind_of(info.st_mode)
        if kind is not None and (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            yield path, kind


def _kind_of(mode):
    """What the view calls an entry of this mode: "link", "folder", "file" (regular), or None (anything else)."""
    return "link" if stat.S_ISLNK(mode) else "folder" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else None


class Held:
    """The files held: each mapped with the C library's mmap, its descriptor closed at once (Python's mmap keeps one
    open per mapping: a limit of 1,024 open files would hold nothing), then locked, or read in where locking is
    refused. One mapping per file (device and inode), with the paths that name it: a file rewritten or grown is
    mapped again, and a file no path of the view names any more (replaced, removed) is let go, but a shared object
    (an ELF file), which a running interpreter may still have mapped, is kept."""

    def __init__(self, budget_mb):
        self.budget = budget_mb << 20
        self.total = 0
        self.how = ""  # "locked" or "resident" once ``pin`` has held the view
        self.maps = {}  # (device, inode) -> (address, size, (size, mtime, ctime) when mapped, an ELF file)
        self.refs = {}  # (device, inode) -> the paths of the view that name it
        self.paths = {}  # path -> (device, inode)

    @property
    def count(self):
        return len(self.maps)

    def map(self, path):
        """Map ``path`` (a regular file of the view): its (address, size); None when there is nothing (new) to map
        or it cannot be opened (gone, not readable); raises ``Over`` past the budget, ``Unmappable``."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            self.forget(path)
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None
            key, size = (info.st_dev, info.st_ino), info.st_size
            signature = (size, info.st_mtime_ns, info.st_ctime_ns)
            self._point(path, key)
            before = self.maps.get(key)
            if size == 0 or (before is not None and before[2] == signature):
                return None
            kept = before[1] if before is not None else 0
            if self.total - kept + size > self.budget or (before is None and self.count >= MAX_MAPPINGS):
                raise Over(f"what a candidate can read is over {self.budget >> 20} MiB or {MAX_MAPPINGS} files (at "
                           f"{self.total >> 20} MiB, {self.count} files): keep the harness in a venv of its own")
            address = _LIBC.mmap(None, size, PROT_READ, MAP_SHARED, fd, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                raise Unmappable(f"{path} could not be mapped: {os.strerror(ctypes.get_errno())}")
            if before is not None:  # (rewritten or grown: its new pages are not held by the old mapping)
                _LIBC.munmap(before[0], before[1])
                self.total -= before[1]
            self.maps[key] = (address, size, signature, os.pread(fd, 4, 0) == b"\x7fELF")
            self.total += size
            return address, size
        finally:
            os.close(fd)

    def _point(self, path, key):
        if self.paths.get(path) != key:
            self.forget(path)
            self.paths[path] = key
            self.refs.setdefault(key, set()).add(path)

    def forget(self, path):
        """``path`` no longer names what it named: a file no path names any more is let go (but an ELF file)."""
        key = self.paths.pop(path, None)
        if key is None:
            return
        names = self.refs.get(key, set())
        names.discard(path)
        if not names:
            self.refs.pop(key, None)
            found = self.maps.get(key)
            if found is not None and not found[3]:
                del self.maps[key]
                _LIBC.munmap(found[0], found[1])
                self.total -= found[1]

    def add(self, path):
        """Hold ``path`` (again), as the view's files are held; past the budget, or unmappable, it is not held."""
        try:
            mapped = self.map(path)
        except (Over, Unmappable, OSError):
            return
        if mapped is not None and (self.how != "locked" or _LIBC.mlock(mapped[0], mapped[1]) != 0):
            read_in(path)


class Over(Exception):
    """The view is larger than the holder's budget."""


class Unmappable(Exception):
    """A file of the view that mmap refuses."""


def read_in(path):
    """Read ``path`` through, so every page of it is in the page cache now (through a read, not the mapping: a file
    that shrank meanwhile ends the read early instead of raising SIGBUS)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        while os.read(fd, 1 << 20):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def pin(paths, held):
    """Map every regular file of ``paths`` and lock the mappings, or read every page where locking is refused:
    (how: "locked", "resident" or "", files, MiB, why not locked or not at all)."""
    for path in paths:
        try:
            held.map(path)
        except (Over, Unmappable) as exc:
            return "", held.count, held.total >> 20, str(exc)
        except OSError:  # (fstat or pread of an open file: not expected)
            continue
    if _LIBC.mlockall(MCL_CURRENT) == 0:
        held.how = "locked"
        return "locked", held.count, held.total >> 20, ""
    why = os.strerror(ctypes.get_errno())
    for path in held.paths:
        read_in(path)
    held.how = "resident"
    return "resident", held.count, held.total >> 20, f"mlockall: {why} (no CAP_IPC_LOCK, and RLIMIT_MEMLOCK is smaller)"


class Watch:
    """inotify on every folder of the view: a file written, created or moved into one (a package installed or
    upgraded mid-run) is held as soon as it is there; a folder made in one is watched and its files held; a file
    removed or moved out is let go; and the folder's own access time, which its changed entries make movable
    again, is kept."""

    MASK = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR | IN_DONT_FOLLOW

    def __init__(self, hidden):
        self.hidden = hidden
        self.folders = {}  # watch descriptor -> folder
        self.watched = set()  # the folders
        self.fd = _LIBC.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        self.reason = "" if self.fd >= 0 else f"inotify_init1: {os.strerror(ctypes.get_errno())}"

    def add(self, folder):
        """Watch ``folder``; False when it is not watched. Once the kernel refuses a watch for want of room, no other
        is asked for (``reason`` says so); the folders watched until then stay watched."""
        if self.reason or folder in self.watched:
            return False
        wd = _LIBC.inotify_add_watch(self.fd, os.fsencode(folder), self.MASK)
        if wd < 0:
            errno = ctypes.get_errno()
            if errno == 28:  # ENOSPC: fs.inotify.max_user_watches
                self.reason = (f"inotify_add_watch: {os.strerror(errno)} (fs.inotify.max_user_watches is below the "
                               f"view's {len(self.folders) + 1}+ folders)")
            return False
        old = self.folders.get(wd)  # (a folder renamed within the view keeps its watch)
        if old is not None:
            self.watched.discard(old)
        self.folders[wd] = folder
        self.watched.add(folder)
        return True

    def changed(self):
        """(folder, path, is a folder, arrived) of each entry written, created, moved in, removed or moved out of a
        watched folder since the last call; None when events were lost (the queue overflowed: look again)."""
        if self.fd < 0:
            return []
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return []
        found, offset, lost = [], 0, False
        while offset + EVENT.size <= len(data):
            wd, mask, _, length = EVENT.unpack_from(data, offset)
            name = data[offset + EVENT.size:offset + EVENT.size + length].split(b"\0", 1)[0]
            offset += EVENT.size + length
            lost |= bool(mask & IN_Q_OVERFLOW)
            folder = self.folders.get(wd)
            if mask & IN_IGNORED:  # the folder itself went (removed, or its filesystem unmounted)
                if folder is not None:
                    del self.folders[wd]
                    self.watched.discard(folder)
                continue
            if folder is not None and name:
                path = os.path.join(folder, os.fsdecode(name))
                if not any(_view.within(path, hidden) for hidden in self.hidden):
                    found.append((folder, path, bool(mask & IN_ISDIR), not mask & (IN_DELETE | IN_MOVED_FROM)))
        return None if lost else found


def touch(path, kind):
    """Read ``path`` as a candidate would (a byte, its target, its entries): under relatime its access time moves
    if it is not later than its change time, or is a day old."""
    try:
        if kind == "link":
            os.readlink(path)
        elif kind == "folder":
            with os.scandir(path) as listing:
                next(listing, None)
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                os.read(fd, 1)
            finally:
                os.close(fd)
    except OSError:
        pass


def due(path, now):
    """When ``path``'s access time turns a day old (a read would move it then), or now when a read moves it now."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if info.st_atime <= max(info.st_ctime, info.st_mtime):
        return now
    return info.st_atime + DAY_S


def strictatime(paths):
    """The mount points, among those that hold ``paths``, where every read moves an access time (neither
    relatime nor noatime, nor read-only)."""
    devices = set()
    for path in paths:
        try:
            devices.add(os.lstat(path).st_dev)
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


def schedule(view, now, refresh_s):
    """Read now every entry of the view a read would move the access time of, and return when each of them turns
    a day old (a heap)."""
    heap: list[tuple[float, str, str]] = []
    for path, kind in view:
        when = due(path, now)
        if when is not None and when <= now:
            when = read_now(path, kind, now, refresh_s)
        if when is not None:
            heap.append((when, path, kind))
    heapq.heapify(heap)
    return heap


def read_now(path, kind, now, refresh_s):
    """Read ``path`` now; when to read it again (its access time a day old), ``refresh_s`` on when the read moved
    nothing (noatime: looked at again later), or None when it is gone."""
    touch(path, kind)
    when = due(path, now)
    return None if when is None else when if when > now else now + refresh_s


def keep_access_times(view, heap, refresh_s, held, watch, base):
    """Until stdin closes: read each entry of the view when its access time turns a day old (``heap``), and look
    at all of them again every ``refresh_s`` (an access time changed from outside: a read of the host's own, a
    ``touch``). So no candidate's read finds one it can move, short of racing the holder's own read at the second
    it falls due. What ``watch`` reports is held in ``held`` (or let go) at once, its folder's access time kept
    too; every look walks the view's folders again (``base``: the view's own files and top
    folders), holds what the watch missed and lets go of what is gone."""
    next_look = time.time() + refresh_s
    while True:
        now = time.time()
        if now >= next_look:
            view[:] = _looked_again(base, held, watch)
            heap, next_look = schedule(view, now, refresh_s), now + refresh_s
        while heap and heap[0][0] <= now:
            _, path, kind = heapq.heappop(heap)
            when = read_now(path, kind, now, refresh_s)
            if when is not None:
                heapq.heappush(heap, (when, path, kind))
        wait = min(next_look, heap[0][0] if heap else next_look) - time.time()
        watched = [0] if watch.fd < 0 else [0, watch.fd]
        ready = select.select(watched, [], [], max(0.0, wait))[0]
        if 0 in ready and not os.read(0, 1 << 16):
            return  # the harness ended: its end of the pipe closed, however it ended
        if len(watched) > 1 and watched[1] in ready:
            changed = watch.changed()
            if changed is None:  # events were lost: look at everything now
                next_look = 0.0
                continue
            arrived = []
            for folder, path, is_folder, came in changed:
                arrived.append((folder, "folder"))  # its entries changed: a listing would move its access time
                if came:
                    arrived.extend(_arrived(path, is_folder, watch))
                else:
                    held.forget(path)
            now = time.time()
            for path, kind in dict.fromkeys(arrived):
                if kind == "file":
                    held.add(path)
                view.append((path, kind))
                when = read_now(path, kind, now, refresh_s)
                if when is not None:
                    heapq.heappush(heap, (when, path, kind))


def _kind(path):
    """What ``entries`` calls ``path`` (``_kind_of``), or None when it is gone."""
    try:
        return _kind_of(os.lstat(path).st_mode)
    except OSError:
        return None


def _arrived(path, is_folder, watch):
    """(path, kind) of an entry that arrived in a watched folder; a folder with everything in it (watched)."""
    kind = _kind(path)
    if kind is None:
        return
    yield path, kind
    if kind == "folder" and is_folder:
        watch.add(path)
        for where, name, folder in _view.walk([path], watch.hidden, with_folders=True):
            found = os.path.join(where, name)
            if folder:
                watch.add(found)
            kind = _kind(found)
            if kind is not None:
                yield found, kind


def _looked_again(base, held, watch):
    """The view's entries as they are now (its folders walked again): new folders watched, every file held, and
    what no path of the view names any more let go."""
    folders = [path for path, kind in base if kind == "folder"]
    files = [path for path, kind in base if kind == "file"]
    view = list(entries(folders, files, watch.hidden))
    present = set()
    for path, kind in view:
        if kind == "folder":
            watch.add(path)
        elif kind == "file":
            present.add(path)
            held.add(path)
    for path in [path for path in held.paths if path not in present]:
        held.forget(path)
    return view


def main() -> int:
    line = sys.stdin.readline()
    if not line:
        return 1
    request = json.loads(line)
    budget_mb, refresh_s = int(request.get("budget_mb", 0)), float(request.get("refresh_s", 3600))
    try:  # the OOM killer's last choice, as root: its pages are every sample's
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("-1000")
    except OSError:
        pass
    folders, files, links, hidden = _view.shown_and_hidden()
    view = {"folders": sorted(folders), "files": sorted(files), "links": links, "hidden": list(hidden)}
    sys.stdout.write(json.dumps({"view": view}) + "\n")
    sys.stdout.flush()
    found = list(entries(folders, files, hidden))
    base = [(path, "file") for path in sorted(files)] + [(top, "folder") for top in sorted(folders)]
    watch = Watch(hidden)
    for path, kind in found:  # before the pages are held: a file written meanwhile is an event, not missed
        if kind == "folder" and not watch.add(path) and watch.reason:
            break
    held = Held(budget_mb)
    how, count, mib, reason = pin([path for path, kind in found if kind == "file"], held)
    heap = schedule(found, time.time(), refresh_s) if how else []  # before the first candidate, as the pages
    sys.stdout.write(json.dumps({"pinned": how, "files": count, "mib": mib, "reason": reason,
                                 "strictatime": strictatime([path for path, _ in found]),
                                 "watch": watch.reason}) + "\n")
    sys.stdout.flush()
    if how:
        keep_access_times(found, heap, refresh_s, held, watch, base)
    else:
        while os.read(0, 1 << 16):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
