"""The run's output files: checked before anything runs, so a bad path costs seconds, not a whole benchmark.

No pytest import. ``check_output`` raises OutputError (one line: the option, the path, what is wrong).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["OutputError", "check_output"]


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
