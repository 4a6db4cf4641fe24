"""EvalPlus releases by name (HumanEval+ and MBPP+): where each comes from, its pinned sha256, where it is read from.

``dataset: humanevalplus`` (or ``-mini``, ``-noextreme``) resolves to the copy bundled in the package
(``fixtures/humanevalplus/``, the v0.1.10 release files byte for byte, Apache-2.0): no download at all; so does
``dataset: mbppplus`` (or ``-noextreme``: ``fixtures/mbppplus/``, the v0.2.0 files, Apache-2.0, from MBPP under
CC BY 4.0). A release
the package does not carry (a distribution that leaves the data out, or a release added to ``RELEASES`` without
its files) resolves to a file in the user cache; when that is absent it is downloaded once from EvalPlus's
release (or ``PYTEST_HUMANEVAL_EVALPLUS_URL``, a mirror) with httpx, checked against the pinned sha256 before
anything uses it, and renamed into place atomically: a failed, cut or tampered download caches nothing. Every
file is checked against its pin before it is used, the bundled one too. A dataset given by path is recognised as
one of these releases by its sha256 (of the .gz or of its decompressed content).

No pytest import: errors are :class:`DatasetError` (one line), which the plugin turns into a usage error.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import BinaryIO

from . import impossible
from .dataset import DatasetError

__all__ = ["BASE_URL_ENV", "HUMANEVAL", "MBPP_RELEASE_VERSION", "NAMES", "RELEASES", "RELEASE_VERSION", "NotDownloaded",
           "Release", "bundled_copy", "cache_dir", "cached_path", "recognise", "release_url", "resolve"]

RELEASE_VERSION = "v0.1.10"  # HumanEval+'s, which EvalPlus 0.3.x pins
MBPP_RELEASE_VERSION = "v0.2.0"  # MBPP+'s, which EvalPlus 0.3.1 pins
DOWNLOAD_URL = "https://github.com/evalplus/{repository}/releases/download/{version}/"
BASE_URL_ENV = "PYTEST_HUMANEVAL_EVALPLUS_URL"  # another place serving the same asset names (a mirror, a test)
HUMANEVAL = "humaneval"  # the bundled dataset's name in `dataset:`
MAX_DOWNLOAD = 64 << 20  # the largest release is 0.9 MB; a server that sends more is not serving it
CHUNK = 1 << 16
MIN_RATE = 16 << 10  # bytes a second, on average, that a download must keep up once it has run MIN_RATE_AFTER_S
MIN_RATE_AFTER_S = 60.0  # (a server that trickles a byte a minute would otherwise hold a run for ever)
STALE_PART_S = 3600  # a part file untouched this long is a download whose process was killed (a live one writes)
Progress = Callable[..., None]  # progress(text, final=False): one line that updates in place


@dataclass(frozen=True)
class Release:
    name: str  # as written in `dataset:`
    asset: str  # the file's name among the release's assets
    sha256: str  # of the .gz, as published
    content_sha256: str  # of the decompressed JSONL
    size: int  # bytes of the .gz
    version: str = RELEASE_VERSION
    folder: str = "humanevalplus"  # inside pytest_humaneval/fixtures/; also its repository, + "_release"


# The hashes are those of fixtures/humanevalplus/PROVENANCE.md (the release files, byte for byte).
RELEASES = {release.name: release for release in (
    Release("humanevalplus", "HumanEvalPlus.jsonl.gz",
            "272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101",
            "42526ec0e7d5f3ee0b06d6ced98f8c8bae3d76519151bfb3d36f79010645bd7f", 925_932),
    Release("humanevalplus-mini", "HumanEvalPlus-Mini.jsonl.gz",
            "91486741f1627101021fbe50523df08eebb5b0bf5e804b633dcd5ca3c14dbd2f",
            "78fbba8865b20c5a979cda6e02fd72538e1762e65980af7d1a6e93c3e87e93af", 57_064),
    Release("humanevalplus-noextreme", "HumanEvalPlus-NoExtreme.jsonl.gz",
            "298f79977b2663b8b8ab6b5fa50b17d6f23a92603d24f39e26203fe58c37eeda",
            "3c5aa88735e442f327030f7097f9443ee173419e0db2a75b1c12730415398e88", 925_392),
    # fixtures/mbppplus/PROVENANCE.md: the files of the release's tag (its assets could not be compared byte for byte)
    Release("mbppplus", "MbppPlus.jsonl.gz",
            "af43697e8791c4c149bdfd6b489d8b5412507551ac20e28a439f650b8225db63",
            "b54e762755248ca411b523c917fa9f93c07b5ff2966bf60b3917b853926a3dad", 336_032,
            MBPP_RELEASE_VERSION, "mbppplus"),
    Release("mbppplus-noextreme", "MbppPlus-NoExtreme.jsonl.gz",
            "72d32acaea73d5606cb97041b30d45bbda9435a675369d3e31965513ee94e564",
            "2682a29850fb17185106b2f40e72d1ebe7091b7393c576cff71b60e83c42ed33", 335_525,
            MBPP_RELEASE_VERSION, "mbppplus"),
)}
NAMES = (HUMANEVAL, *RELEASES, *impossible.NAMES)  # every name `dataset:` takes (impossible's: bundled, built here)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/pytest-humaneval``, else ``~/.cache/pytest-humaneval`` (a relative XDG_CACHE_HOME is
    invalid by the XDG spec and ignored)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "pytest-humaneval"


def release_url(release: Release) -> str:
    base = os.environ.get(BASE_URL_ENV) or DOWNLOAD_URL.format(repository=f"{release.folder}_release",
                                                               version=release.version)
    return base.rstrip("/") + "/" + release.asset


def cached_path(release: Release) -> Path:
    """Where a download of ``release`` is kept in the user cache."""
    return cache_dir() / "evalplus" / release.version / release.asset


def recognise(file_sha256: str, content_sha256: str) -> Release | None:
    """The release a dataset file is, by its hashes, or None."""
    return next((release for release in RELEASES.values()
                 if file_sha256 == release.sha256 or content_sha256 == release.content_sha256), None)


def bundled_copy(release: Release) -> Path | None:
    """The package's own copy of ``release``, when the package carries one that matches its pin."""
    path = Path(str(resources.files("pytest_humaneval.fixtures").joinpath(release.folder).joinpath(release.asset)))
    if path.is_file() and path.stat().st_size == release.size and _sha256(path) == release.sha256:
        return path
    return None


class NotDownloaded(DatasetError):
    """A release that is neither bundled nor in the user cache, asked for without fetching it."""


def resolve(name: str, where: str, progress: Progress | None = None, fetch: bool = True) -> Path:
    """The file of release ``name``: the bundled copy, else the user cache's, downloaded (and verified) first when
    it is not there (with ``fetch=False``: :class:`NotDownloaded` instead). ``where`` prefixes errors (the config
    file and key)."""
    if name in impossible.NAMES:
        return impossible.bundled(name, where)
    release = RELEASES[name]
    bundled = bundled_copy(release)
    if bundled is not None:
        return bundled
    target = cached_path(release)
    if target.is_file() and _sha256(target) == release.sha256:
        return target
    if not fetch:
        raise NotDownloaded(f"{where}: {name} is not downloaded yet (a run fetches it once, into {target.parent})")
    # Absent, or a cached copy that no longer matches (a disk error, an edit): fetch it again.
    _download(release, target, where, progress or (lambda *args, **kwargs: None))
    return target


def into_cache(target: Path, where: str, fetch: Callable[[BinaryIO], object]) -> None:
    """``fetch`` writes a download into a part file beside ``target``, renamed into place only when it returned:
    a failed, cut or refused download caches nothing (its part file is removed). A cache that cannot be written is
    one DatasetError naming it, after ``where``."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _sweep_parts(target)
        fd, part = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise DatasetError(f"{where}: cannot write the user cache {target.parent}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            fetch(handle)
        os.replace(part, target)
    except OSError as exc:
        raise DatasetError(f"{where}: cannot write the user cache {target.parent}: {exc.strerror or exc}") from exc
    finally:
        if os.path.exists(part):
            os.unlink(part)


def too_slow(started: float, received: int) -> str | None:
    """None, or why a download begun at ``started`` (``time.monotonic()``) is given up after ``received`` bytes: it
    has run MIN_RATE_AFTER_S and averaged less than MIN_RATE (each read has its own timeout; this bounds the whole)."""
    elapsed = time.monotonic() - started
    if elapsed <= MIN_RATE_AFTER_S or received >= MIN_RATE * elapsed:
        return None
    return (f"it sent {received:,} bytes in {elapsed:.0f} s ({received / elapsed / 1024:.1f} KiB/s), expected at "
            f"least {MIN_RATE >> 10} KiB/s; nothing was cached")


def _sweep_parts(target: Path) -> None:
    """Remove ``target``'s part files that no download has written to for STALE_PART_S (their process was killed
    before it could remove them); another process's download in progress keeps its own."""
    now = time.time()
    for part in target.parent.glob(f".{target.name}.*.part"):
        try:
            if now - part.stat().st_mtime > STALE_PART_S:
                part.unlink()
        except OSError:  # gone meanwhile, or not ours to remove: a later download tries again
            continue


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download(release: Release, target: Path, where: str, progress: Progress) -> None:
    url = release_url(release)
    advice = (f"Without network access, download {url} elsewhere and set `dataset:` to the file's path "
              f"(e.g. dataset: ./{release.asset}); the release is recognised by its sha256")

    def fetch(handle: BinaryIO) -> None:
        found = _fetch(url, handle, release, where, advice, progress)
        if found != release.sha256:
            raise DatasetError(f"{where}: {release.name}: the file downloaded from {url} has sha256 {found}, "
                               f"expected {release.sha256} (the pinned {release.version} release); nothing was "
                               "cached")

    into_cache(target, f"{where}: {release.name}", fetch)
    progress(f"humaneval: downloaded {release.asset} ({release.size / 1024:.0f} KiB, sha256 verified) "
             f"into {target.parent}", final=True)


def _fetch(url: str, handle: BinaryIO, release: Release, where: str, advice: str, progress: Progress) -> str:
    """Stream ``url`` into ``handle``; the sha256 of what arrived."""
    import httpx  # only a session that downloads pays for the import

    digest, received, started, last = hashlib.sha256(), 0, time.monotonic(), -1
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=httpx.Timeout(30.0, connect=10.0)) as reply:
            if reply.status_code != 200:
                raise DatasetError(f"{where}: {release.name}: cannot download {url}: HTTP {reply.status_code}. "
                                   f"{advice}")
            total = int(reply.headers.get("content-length") or 0) or release.size
            for chunk in reply.iter_bytes():
                received += len(chunk)
                if received > MAX_DOWNLOAD:
                    raise DatasetError(f"{where}: {release.name}: {url} sent more than {MAX_DOWNLOAD >> 20} MiB, "
                                       f"expected the {release.size:,}-byte release. {advice}")
                slow = too_slow(started, received)
                if slow is not None:
                    raise DatasetError(f"{where}: {release.name}: {url}: {slow}. {advice}")
                handle.write(chunk)
                digest.update(chunk)
                shown = min(100, 100 * received // total)
                if shown != last:  # (a line a step, not one a network read)
                    progress(f"humaneval: downloading {release.asset} from {url}: {shown}%")
                    last = shown
    except httpx.HTTPError as exc:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise DatasetError(f"{where}: {release.name}: cannot download {url} ({reason}). {advice}") from exc
    return digest.hexdigest()
