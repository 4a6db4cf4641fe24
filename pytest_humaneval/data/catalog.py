"""`python -m pytest_humaneval datasets`: the datasets a config can name, and what each costs. No pytest import.

For each name of ``dataset:``: what it is, its problems and how much it tests (HumanEval's ``assert`` lines,
HumanEval+'s and MBPP+'s base and plus inputs), its file's size and where it lives (bundled in the package, or
the user cache a download goes to), and for EvalPlus's datasets the expected outputs this machine has computed
(a one-time cost that the first run pays, kept in the user cache: 271 MB and 13 s on 2 cores for the full
HumanEval+ release, 1.4 GB and about 4 minutes for MBPP+), with what computing them costs.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

from . import impossible, livecodebench, plus, releases
from .dataset import bundled_path, load_dataset

__all__ = ["Entry", "entries", "render"]

DESCRIPTIONS = {
    releases.HUMANEVAL: "OpenAI's HumanEval (the default)",
    "humanevalplus": f"EvalPlus's HumanEval+ {releases.RELEASE_VERSION}",
    "humanevalplus-mini": f"EvalPlus's HumanEval+ {releases.RELEASE_VERSION}, Mini (fewer plus inputs)",
    "humanevalplus-noextreme": f"EvalPlus's HumanEval+ {releases.RELEASE_VERSION}, NoExtreme (large inputs of 7 "
                               "tasks dropped)",
    "mbppplus": f"EvalPlus's MBPP+ {releases.MBPP_RELEASE_VERSION} (the model writes the whole function)",
    "mbppplus-noextreme": f"EvalPlus's MBPP+ {releases.MBPP_RELEASE_VERSION}, NoExtreme (large inputs dropped)",
}
_ASSERT = re.compile(r"^\s*assert\b", re.MULTILINE)
# What computing a release's expected outputs took, as measured (docs/performance.md, docs/datasets.md): the first
# run on a machine pays it, later runs read the user cache.
MEASURED = {
    "humanevalplus": "271 MB in the cache, 13 s on 2 cores",
    "mbppplus": "1.4 GB in the cache, about 4 minutes on 2 cores",
}


@dataclass(frozen=True)
class Entry:
    name: str
    description: str
    problems: int | None  # None: the file is not on this machine
    tests: str  # how much each run tests, in words
    file_bytes: int | None
    where: str  # "bundled: PATH", "downloaded: PATH", or where a first run downloads it from
    expected: str | None  # HumanEval+: the expected outputs on this machine


def entries() -> list[Entry]:
    found = [_humaneval()]
    for release in releases.RELEASES.values():
        found.append(_release(release))
    found.extend(_impossible(name) for name in impossible.NAMES)
    found.append(_livecodebench())
    return found


def _livecodebench() -> Entry:
    """LiveCodeBench's files: which are in the user cache (their size), which a first run downloads. Its problems
    are not counted here (the files are large and unpinned): LiveCodeBench's own counts are said."""
    published = ", ".join(f"{count:,} in release_v{n}" for n, count in enumerate(livecodebench.PUBLISHED, 1))
    names = livecodebench.FILES
    cached = [livecodebench.cached_file(name) for name in names if livecodebench.cached_file(name).is_file()]
    folder = livecodebench.cached_file(names[0]).parent
    size = sum(path.stat().st_size for path in cached)
    missing = [name for name in names if not livecodebench.cached_file(name).is_file()]
    where = f"downloaded: {len(cached)} of its {len(names)} files in {folder}" if cached else "not on this machine"
    if missing:
        where += (f"; a run downloads the files of its release that are missing ({', '.join(missing)}) once, from "
                  f"{livecodebench.file_url('')} into {folder} (their sizes are LiveCodeBench's, not known here "
                  "before a download; unpinned: LiveCodeBench publishes no hashes)")
    return Entry(livecodebench.NAME, "LiveCodeBench's code generation problems (standard input and LeetCode-style "
                 "functional), by release (params.release_version) and contest dates (params.start_date, end_date)",
                 None, f"problems as published: {published}", size if cached else None, where, None)


def _humaneval() -> Entry:
    path = bundled_path()
    loaded = load_dataset()
    asserts = sum(len(_ASSERT.findall(problem.test)) for problem in loaded.problems)
    return Entry(releases.HUMANEVAL, DESCRIPTIONS[releases.HUMANEVAL], len(loaded.problems),
                 f"{asserts:,} asserts in the problems' check() tests", path.stat().st_size, f"bundled: {path}", None)


def _impossible(name: str) -> Entry:
    path = impossible.bundled(name, "datasets")
    loaded = load_dataset(path)
    asserts = sum(len(_ASSERT.findall(problem.test)) for problem in loaded.problems)
    return Entry(name, impossible.DESCRIPTIONS[name], len(loaded.problems),
                 f"{asserts:,} asserts in the mutated check() tests", path.stat().st_size, f"bundled: {path}", None)


def _release(release: releases.Release) -> Entry:
    path, where = releases.bundled_copy(release), "bundled"
    if path is None:
        cached = releases.cached_path(release)
        path, where = (cached, "downloaded") if cached.is_file() else (None, "")
    if path is None:
        return Entry(release.name, DESCRIPTIONS.get(release.name, release.name), None, "",
                     release.size, f"not on this machine: the first run downloads {releases.release_url(release)} "
                                   f"into {releases.cache_dir()}", None)
    loaded = load_dataset(path)
    base = sum(len(problem.base_input or ()) for problem in loaded.problems)
    extra = sum(len(problem.plus_input or ()) for problem in loaded.problems)
    return Entry(release.name, DESCRIPTIONS.get(release.name, release.name), len(loaded.problems),
                 f"{base:,} base + {extra:,} plus inputs", path.stat().st_size, f"{where}: {path}",
                 _expected(loaded.sha256, len(loaded.problems), base + extra, MEASURED.get(release.name)))


def _expected(dataset_sha256: str, problems: int, inputs: int, measured: str | None) -> str:
    """The expected outputs on this machine, and what the first run that needs them pays for them."""
    folder = plus.table_folder(dataset_sha256)
    files = [path for path in folder.iterdir() if not path.name.startswith(".")] if folder.is_dir() else []
    cost = f"the canonical solution on each of its {inputs:,} inputs" + (f"; measured: {measured}" if measured else "")
    if not files:
        return (f"not computed on this machine yet: the first run computes them once, before its first sample "
                f"({cost}), and keeps them in {folder}")
    size = sum(path.stat().st_size for path in files)
    rest = "" if len(files) >= problems else f"; the next run computes the other {problems - len(files)} first ({cost})"
    return f"{len(files)}/{problems} tasks computed, {_size(size)}, in {folder}{rest}"


def _size(count: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count} bytes"


def render(found: list[Entry], as_json: bool = False) -> str:
    if as_json:
        return json.dumps([asdict(entry) for entry in found], indent=2) + "\n"
    lines = []
    for entry in found:
        problems = f"{entry.problems} problems, {entry.tests}" if entry.problems is not None else \
            entry.tests or "problems unknown"
        lines.append(f"{entry.name}: {entry.description}: {problems}")
        size = f"{_size(entry.file_bytes)}, " if entry.file_bytes is not None else ""
        lines.append(f"  file      {size}{entry.where}")
        if entry.expected is not None:
            lines.append(f"  expected  {entry.expected}")
    lines.append("Use one as `dataset: NAME` in a config, or give the path of a JSONL(.gz) file in HumanEval's or "
                 "EvalPlus's format.")
    return "\n".join(lines) + "\n"
