"""What a sample leaves, removed: with namespaces, after each sample, /tmp, /dev/shm, POSIX message queues and SysV
IPC emptied (``empty_shared``); and a folder removed however deep a candidate nested it, never following a symlink
(``remove_tree``: working dirs, and the harness's supervisor folders).

A supervisor's script (loaded by path, like ``_contain``, which hands it on; the harness imports it too): standard
library only, no package import.
"""

import ctypes
import os
import stat
import sys

try:
    from . import _linux
except ImportError:  # loaded by path in the supervisor, by the one loader of its scripts (_load.py)
    _linux = sys.modules["_humaneval_load"].sibling("linux")

SYSV = _linux.SYSV

def empty_shared(isolation):
    """With namespaces, after a sample: /tmp (but the supervisor's folder and bound import paths), /dev/shm,
    this IPC namespace's POSIX message queues and SysV shared memory, semaphores and message queues, all
    emptied, so nothing one sample left reaches the next (nor fills the space it needs). Returns what could
    not be removed ("" when all went)."""
    left = []
    for folder, keep in (("/tmp", isolation.keep), ("/dev/shm", ()), ("/dev/mqueue", ())):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if path in keep:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                gone = remove_tree(path)
            else:
                try:
                    os.unlink(path)
                    gone = True
                except OSError:
                    gone = False
            if not gone:
                left.append(path)
    for kind, (command, field) in SYSV.items():
        counts = (ctypes.c_int * 64)()
        if kind == "shm":
            _linux.LIBC.shmctl(0, command, counts)
        elif kind == "sem":
            _linux.LIBC.semctl(0, 0, command, counts)
        else:
            _linux.LIBC.msgctl(0, command, counts)
        if counts[field] > 0:  # rare: read which ones, and remove them (IPC_RMID)
            _remove_sysv(kind)
    return ", ".join(left)


def _remove_sysv(kind):
    try:
        with open(f"/proc/sysvipc/{kind}") as handle:
            rows = [line.split() for line in handle.readlines()[1:]]
    except OSError:
        return
    for row in rows:
        if len(row) > 1 and row[1].isdigit():
            ident = int(row[1])
            if kind == "shm":
                _linux.LIBC.shmctl(ident, 0, None)
            elif kind == "sem":
                _linux.LIBC.semctl(ident, 0, 0)
            else:
                _linux.LIBC.msgctl(ident, 0, None)


def remove_tree(path: str) -> bool:
    """Remove ``path`` and everything in it, however deep (a candidate can nest folders deeper than the
    interpreter's recursion limit, and than any path may be long): with two folder descriptors at most, never
    following a symlink, what is inside a sub-folder is moved up into ``path`` until every sub-folder is empty.
    Best effort: returns whether it is gone."""
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        pass
    try:
        top = _open_folder(path)
    except OSError:
        return False
    moved = 0
    try:
        _writable(top)
        progress = True
        while progress:
            progress = False
            with os.scandir(top) as entries:
                names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
            for name, is_dir in names:
                try:
                    (os.rmdir if is_dir else os.unlink)(name, dir_fd=top)
                    progress = True
                    continue
                except OSError:
                    if not is_dir:
                        continue
                try:
                    sub = _open_folder(name, top)
                except OSError:
                    continue
                try:
                    _writable(sub)
                    with os.scandir(sub) as inner:
                        for entry in list(inner):
                            moved += 1
                            try:
                                _move_up(entry, f".gone-{moved}", sub, top)
                                progress = True
                            except OSError:
                                pass
                finally:
                    os.close(sub)
    finally:
        os.close(top)
    try:
        os.rmdir(path)
    except OSError:
        pass
    return not os.path.lexists(path)


def _open_folder(name, dir_fd=None):
    """A descriptor of the folder ``name`` (never a symlink), its mode first made 0700 when it cannot be read: a
    candidate that shares this uid can make a folder with any mode (mkdir's own), and without CAP_DAC_OVERRIDE a
    folder of mode 0300 can be written but not listed, so what it holds could not be removed (on 2b2788d it stayed
    on the host after the run)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise
        os.chmod(name, 0o700, dir_fd=dir_fd)  # its own folder (the candidate is gone: no race to a symlink)
        return os.open(name, flags, dir_fd=dir_fd)


def _move_up(entry, name, sub, top):
    """Move ``entry`` of folder ``sub`` into ``top`` as ``name``. A folder that moves needs its own write permission
    (its ``..`` changes): one made with mode 0500 or 0000 gets 0700 first."""
    try:
        os.rename(entry.name, name, src_dir_fd=sub, dst_dir_fd=top)
    except PermissionError:
        if not entry.is_dir(follow_symlinks=False):
            raise
        os.chmod(entry.name, 0o700, dir_fd=sub)
        os.rename(entry.name, name, src_dir_fd=sub, dst_dir_fd=top)


def _writable(fd):
    try:
        os.fchmod(fd, 0o700)
    except OSError:
        pass
