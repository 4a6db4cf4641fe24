"""The run's output files: checked before anything runs, so a bad path costs seconds, not a whole benchmark.

No pytest import. ``check_output`` raises OutputError (one line: the option, the path, what is wrong).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

__all__ = ["OutputError", "check_output", "open_private", "publish"]


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


def open_private(path: Path) -> TextIO:
    """``path`` opened for writing (truncated), readable and writable by this user alone until ``publish``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)  # a file that existed keeps its mode through O_CREAT
    return os.fdopen(fd, "w", encoding="utf-8")


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
