"""The run's output files: checked before anything runs, so a bad path costs seconds, not a whole benchmark.

No pytest import. ``check_output`` raises OutputError (one line: the option, the path, what is wrong).
"""

from __future__ import annotations

import fcntl
import os
import stat
import struct
from pathlib import Path
from typing import TextIO

__all__ = ["OutputError", "busy_error", "check_output", "is_job_summary", "open_private", "publish", "same_file",
           "writer_of"]


class OutputError(ValueError):
    pass


def check_output(option: str, value: str) -> Path:
    """The path ``option`` names, once it is known to be writable.

    The check opens the file for appending, so an existing file (the last run's report, say) is never truncated
    by it, and removes again whatever it created (the file, and parent folders it had to make)."""
    path = Path(os.path.expanduser(value))
    if path.is_dir():
        raise OutputError(f"{option}: expected a file to write, found a directory: {path}")
    ancestor = path.parent
    missing: list[Path] = []
    while not ancestor.exists() and ancestor != ancestor.parent:
        missing.append(ancestor)
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(f"{option}: cannot write {path}: {ancestor} is not a folder")
    existed = path.exists()
    try:
        for folder in reversed(missing):
            folder.mkdir()
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise OutputError(f"{option}: cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if not existed:
            _remove(path, missing)
    return path


def _remove(path: Path, created: list[Path]) -> None:
    try:
        path.unlink()
    except OSError:
        pass
    for folder in created:  # innermost first
        try:
            folder.rmdir()
        except OSError:
            return


def open_private(path: Path, option: str = "--humaneval-results") -> TextIO:
    """``path`` opened for writing (truncated), readable and writable by this user alone until ``publish``, and
    locked while it is open: a second session that names the same file is refused (OutputError naming the
    other session's pid) before it truncates a line of it, so no session loses another's rows."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(fd)
        os.close(fd)
        raise OutputError(_busy(option, path, holder)) from None
    if stat.S_ISREG(os.fstat(fd).st_mode):  # (/dev/stdout, a pipe: nothing to truncate, no mode to change)
        os.ftruncate(fd, 0)
        os.fchmod(fd, 0o600)  # a file that existed keeps its mode through O_CREAT
    return os.fdopen(fd, "w", encoding="utf-8")


def writer_of(path: Path) -> int | None:
    """The pid of the live session that holds ``path`` open for writing (``open_private``), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _holder(fd)
    finally:
        os.close(fd)


def busy_error(option: str, path: Path) -> str | None:
    """The refusal for ``path`` if another live session is writing it, else None."""
    holder = writer_of(path)
    return None if holder is None else _busy(option, path, holder)


def _busy(option: str, path: Path, holder: int | None) -> str:
    who = f"pid {holder}" if holder else "another process"
    return (f"{option}: {path} is being written by another pytest-humaneval session ({who}), as its results file; "
            "writing it here would lose that session's rows: give this run a file of its own, or wait for that "
            "session to end")


def same_file(first: Path, second: Path) -> bool:
    """Whether two output paths name one file (through links too, once both exist)."""
    try:
        return os.path.samefile(first, second)
    except OSError:
        return os.path.realpath(first) == os.path.realpath(second)


_FLOCK = "hhqqi"  # struct flock: l_type, l_whence, l_start, l_len, l_pid (native alignment)


def _holder(fd: int) -> int | None:
    """The pid holding a write lock on ``fd``'s file (F_GETLK), or None when none does."""
    query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    try:
        kind, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))
    except OSError:
        return None
    return pid if kind != fcntl.F_UNLCK else None


def is_job_summary(path: Path) -> bool:
    """Whether ``path`` is GitHub Actions' job summary ($GITHUB_STEP_SUMMARY), which every step appends to."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return False
    try:
        return os.path.samefile(path, summary)
    except OSError:
        return os.path.abspath(path) == os.path.abspath(summary)


def publish(path: Path) -> None:
    """Give a file written by ``open_private`` the mode a new file of this user gets (the umask's)."""
    try:
        os.chmod(path, 0o666 & ~_umask())
    except OSError:
        pass


def _umask() -> int:
    """This process's umask, read without setting it (os.umask sets it, for every thread, for a moment)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022
