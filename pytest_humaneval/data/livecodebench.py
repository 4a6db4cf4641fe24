"""``dataset: livecodebench``: LiveCodeBench's code-generation releases, fetched once into the user cache, and the
contamination window on ``contest_date`` that any rows file with contest dates takes.

LiveCodeBench publishes its problems (``code_generation_lite``) as JSONL files, one per update: ``test.jsonl``
(release_v1), ``test2.jsonl`` ... ``test6.jsonl``. A release is the files up to its own (``release_v3``: the first
three), a fine-grained version one file (``v2``) or a span (``v2_v4``), as LiveCodeBench's loader names them. Each
file is downloaded at first use from the dataset's hub page (or ``PYTEST_HUMANEVAL_LIVECODEBENCH_URL``, a mirror
serving the same file names), streamed into the user cache and renamed into place only when complete: a failed or
cut download caches nothing. LiveCodeBench pins no hashes, so neither can this harness: what a run measured is
identified by the rows it selected (the dataset's sha256, in the run's digest), and the release and window are in
its label and digest, so a gate refuses a baseline of another release or window.

The window is LiveCodeBench's own (``lcb_runner``'s ``load_code_generation_dataset``): ``start_date <=
contest_date <= end_date``, each date midnight of that day, ``contest_date`` read with ``datetime.fromisoformat``.
Rows outside it are skipped before their tests are decoded.

No pytest import: errors are :class:`DatasetError` (one line).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any, BinaryIO

from .dataset import DatasetError, LoadedDataset, natural_key, read_jsonl
from .io_problems import _problems, as_problem
from .releases import NotDownloaded, cache_dir, into_cache, too_slow

__all__ = ["BASE_URL_ENV", "NAME", "PUBLISHED", "VERSIONS", "Window", "cached_file", "file_url", "files",
           "in_window", "load", "parse_date", "resolve", "windowed"]

NAME = "livecodebench"
BASE_URL_ENV = "PYTEST_HUMANEVAL_LIVECODEBENCH_URL"
DOWNLOAD_URL = "https://huggingface.co/datasets/livecodebench/code_generation_lite/resolve/main/"
FILES = ("test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl")
# Problems in each release, as LiveCodeBench's README gives them (release_v1 ... release_v6).
PUBLISHED = (400, 511, 612, 713, 880, 1055)
MAX_DOWNLOAD = 16 << 30  # a file of the release is a few GB at most; a server sending more is not serving it
Progress = Callable[..., None]
Window = tuple[date | None, date | None]


def _versions() -> dict[str, tuple[str, ...]]:
    """Every version LiveCodeBench's loader takes: release_vN (files 1..N), release_latest, vN, vX_vY."""
    found = {f"release_v{n}": FILES[:n] for n in range(1, len(FILES) + 1)}
    found["release_latest"] = FILES
    for first in range(1, len(FILES) + 1):
        found[f"v{first}"] = (FILES[first - 1],)
        for last in range(first + 1, len(FILES) + 1):
            found[f"v{first}_v{last}"] = FILES[first - 1:last]
    return found


VERSIONS = _versions()


def files(version: str, where: str) -> tuple[str, ...]:
    """The files of ``version``; an unknown one is a DatasetError naming ``where`` and the versions there are."""
    if version not in VERSIONS:
        shown = ", ".join(f"release_v{n}" for n in range(1, len(FILES) + 1))
        raise DatasetError(f"{where}: expected a LiveCodeBench version ({shown}, release_latest, v1 ... v{len(FILES)} "
                           f"or a span such as v2_v4), found {version!r}")
    return VERSIONS[version]


def parse_date(value: Any, where: str) -> date:
    """A window's date: YAML's date, or a string YYYY-MM-DD."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return datetime.strptime(value.strip(), "%Y-%m-%d").date()
        except ValueError:
            pass
    raise DatasetError(f"{where}: expected a date YYYY-MM-DD, found {value!r}"[:300])


def in_window(contest_date: Any, window: Window, where: str) -> bool:
    """Whether a row's ``contest_date`` is in ``window`` (LiveCodeBench's comparison of datetimes, each bound
    midnight of its day). A row without a readable date, under a window, is a DatasetError naming it."""
    start, end = window
    if start is None and end is None:
        return True
    try:
        when = datetime.fromisoformat(str(contest_date)) if contest_date is not None else None
    except ValueError:
        when = None
    if when is None:
        raise DatasetError(f"{where}: contest_date: expected an ISO date (params.start_date and end_date select by "
                           f"it), found {contest_date!r}"[:300])
    when = when.replace(tzinfo=None)
    if start is not None and when < datetime(start.year, start.month, start.day):
        return False
    return end is None or when <= datetime(end.year, end.month, end.day)


def file_url(name: str) -> str:
    base = os.environ.get(BASE_URL_ENV) or DOWNLOAD_URL
    return base.rstrip("/") + "/" + name


def cached_file(name: str) -> Path:
    return cache_dir() / NAME / name


def resolve(version: str, where: str, progress: Progress | None = None, fetch: bool = True) -> list[Path]:
    """The cached files of ``version``, each downloaded first when it is not in the cache (``fetch=False``:
    ``releases.NotDownloaded`` instead)."""
    paths = []
    for name in files(version, where):
        target = cached_file(name)
        if not target.is_file():
            if not fetch:
                raise NotDownloaded(f"{where}: {NAME} {version}: {name} is not downloaded yet (a run fetches it "
                                    f"once, into {target.parent})")
            _download(name, target, where, progress or (lambda *args, **kwargs: None))
        paths.append(target)
    return paths


def load(version: str, window: Window, where: str, progress: Progress | None = None,
         fetch: bool = True) -> LoadedDataset:
    """The problems of ``version`` whose contest date is in ``window``, named ``livecodebench``; its sha256 is of
    the selected rows' bytes (the same problems, the same sha256, whatever else a file holds)."""
    paths = resolve(version, where, progress, fetch)
    digest, outside = hashlib.sha256(), set[str]()
    rows = _rows(paths, window, digest, outside)
    problems = [as_problem(problem) for problem in _problems(rows, f"{where}: {NAME} {version}, the window "
                                                                     f"{_shown(window)}")]
    sha256 = digest.hexdigest()
    return LoadedDataset(NAME, sorted(problems, key=lambda p: natural_key(p.task_id)), sha256, sha256, False,
                         frozenset(outside))


def windowed(dataset: LoadedDataset, window: Window, where: str) -> LoadedDataset:
    """A rows file's problems in ``window`` (its problems carry their contest dates)."""
    kept = [problem for problem in dataset.problems
            if in_window(problem.contest_date, window, f"{where}: {problem.task_id}")]
    if not kept:
        raise DatasetError(f"{where}: expected problems whose contest_date is in the window {_shown(window)}, "
                           f"found none of its {len(dataset.problems)}")
    outside = frozenset(problem.task_id for problem in dataset.problems) - {problem.task_id for problem in kept}
    return LoadedDataset(dataset.name, kept, dataset.sha256, dataset.file_sha256, dataset.evalplus, outside)


def _shown(window: Window) -> str:
    start, end = window
    return f"{start or '...'} to {end or '...'}"


def _rows(paths: list[Path], window: Window, digest: Any, outside: set[str]) -> Iterator[tuple[str, Any]]:
    """(where, row) for each row in the window, in the files' order; what is kept feeds ``digest``, the task ids
    of the others go to ``outside``."""
    import json

    for path in paths:
        for number, row in read_jsonl(path):
            where = f"{path}:{number}"
            if isinstance(row, dict) and not in_window(row.get("contest_date"), window, where):
                outside.add(str(row.get("question_id")))
                continue  # (a row that is not an object goes on, to the error that names it)
            digest.update(json.dumps(row, sort_keys=True).encode())
            yield where, row


def _download(name: str, target: Path, where: str, progress: Progress) -> None:
    url = file_url(name)
    advice = (f"Without network access, download {url} elsewhere and put it at {target} (or give a rows file as "
              f"dataset:)")
    received: list[int] = []
    into_cache(target, f"{where}: {NAME}", lambda handle: received.append(_fetch(url, handle, where, advice,
                                                                                 progress)))
    progress(f"humaneval: downloaded {name} ({received[0] / (1 << 20):,.1f} MiB) into {target.parent}", final=True)


def _fetch(url: str, handle: BinaryIO, where: str, advice: str, progress: Progress) -> int:
    """Stream ``url`` into ``handle``; the bytes received."""
    import httpx  # only a session that downloads pays for the import

    received, started, last = 0, time.monotonic(), ""
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=httpx.Timeout(60.0, connect=10.0)) as reply:
            if reply.status_code != 200:
                raise DatasetError(f"{where}: {NAME}: cannot download {url}: HTTP {reply.status_code}. {advice}")
            total = int(reply.headers.get("content-length") or 0)
            if not total and "chunked" not in reply.headers.get("transfer-encoding", "").lower():
                # (a body that ends when the connection does: a cut one cannot be told from a whole one)
                raise DatasetError(f"{where}: {NAME}: {url} sent no Content-Length and no chunked framing, so a "
                                   f"cut download could not be told from a whole one; nothing was cached. {advice}")
            for chunk in reply.iter_bytes():
                received += len(chunk)
                if received > MAX_DOWNLOAD:
                    raise DatasetError(f"{where}: {NAME}: {url} sent more than {MAX_DOWNLOAD >> 30} GiB. {advice}")
                slow = too_slow(started, received)
                if slow is not None:
                    raise DatasetError(f"{where}: {NAME}: {url}: {slow}. {advice}")
                handle.write(chunk)
                raw = reply.num_bytes_downloaded  # (as sent: a compressed reply is decoded into more)
                shown = f"{min(100, 100 * raw // total)}%" if total else f"{received >> 20} MiB"
                if shown != last:  # (a line a step, not one a network read)
                    progress(f"humaneval: downloading {url}: {shown}")
                    last = shown
            raw = reply.num_bytes_downloaded
    except httpx.HTTPError as exc:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise DatasetError(f"{where}: {NAME}: cannot download {url} ({reason}). {advice}") from exc
    if total and raw != total:
        raise DatasetError(f"{where}: {NAME}: {url} sent {raw:,} of its {total:,} bytes. {advice}")
    return received
