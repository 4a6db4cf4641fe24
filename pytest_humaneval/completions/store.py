"""The generation store: every answer that arrives is appended at once, and a rerun reuses it.

No pytest, no httpx. Paid completions are an asset: after Ctrl-C, a crash, or for ``--lf``, a rerun sends only
the requests whose answers are missing. One JSONL file per generation setting (the normalised endpoint and the
request body without the prompt: model, api, sampling settings, system prompt, extra_body) holds one line per
answer, keyed by what determines it: that setting, the problem's exact request and the sample index.

What is stored is what the server said (the raw answer, the reasoning, the finish reason, the usage), never a
header: the API key travels only in the Authorization header, so no stored byte can hold it. The solution is
extracted again on every read, so the current extraction rule applies to stored answers too.

Reading ignores a line that does not parse (a torn last line after a crash mid-write) and keeps the last line of
each key (a regenerated sample replaces the stored one). Failed generations are never stored.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["STORED_FIELDS", "GenerationStore", "normalise_endpoint", "request_key"]

FORMAT = 1
STORED_FIELDS = ("raw", "reasoning", "finish_reason", "prompt_tokens", "completion_tokens", "reasoning_tokens",
                 "generation_ms", "attempts")
DEFAULT_PORTS = {"http": 80, "https": 443}


def normalise_endpoint(url: str) -> str:
    """Scheme and host in lower case, no default port, no trailing slash: one server, one spelling."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port if parts.port not in (None, DEFAULT_PORTS.get(scheme)) else None
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def request_key(setting: dict[str, Any], request: dict[str, Any], task_id: str, sample: int) -> str:
    """The key of one sample's answer: the generation setting, the problem's exact request body (without the
    number of choices asked at once, which does not change what a sample is) and the sample index."""
    return _digest({"format": FORMAT, "setting": setting, "request": request, "task_id": task_id,
                    "sample": sample})


class GenerationStore:
    """One setting's answers in ``folder``; ``append`` is safe to call from the generation loop's callbacks."""

    def __init__(self, folder: Path, setting: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.setting = setting
        self.path = self.folder / f"{_digest({'format': FORMAT, 'setting': setting})[:24]}.jsonl"
        self._fd: int | None = None
        self.ignored_lines = 0
        self.error: str | None = None  # why the store could not be read or written (the run goes on without)

    def load(self) -> dict[str, dict[str, Any]]:
        """key -> stored answer (STORED_FIELDS plus task_id and sample); the last line of a key wins."""
        self.ignored_lines = 0
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self.error = f"cannot read {self.path}: {exc.strerror or exc}"
            return {}
        stored: dict[str, dict[str, Any]] = {}
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                self.ignored_lines += 1  # torn by a crash mid-write: that sample is generated again
                continue
            if isinstance(row, dict) and isinstance(row.get("key"), str) and isinstance(row.get("raw"), str):
                stored[row["key"]] = row
        return stored

    def append(self, key: str, task_id: str, sample: int, record: dict[str, Any]) -> None:
        """One line, one write(2) on an O_APPEND descriptor: a crash leaves at most a torn last line. A store
        that cannot be written costs the reuse, never the run: the error is kept and writing stops."""
        if self.error is not None:
            return
        row = {"key": key, "task_id": task_id, "sample": sample, **{f: record.get(f) for f in STORED_FIELDS}}
        try:
            if self._fd is None:
                self._open()
            self._write(json.dumps(row) + "\n")
        except OSError as exc:
            self.error = f"cannot write {self.path}: {exc.strerror or exc}"

    def _open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        size = os.fstat(self._fd).st_size
        if size == 0:  # a header for people who open the file; reading skips it (it has no key)
            self._write(json.dumps({"humaneval_generations": FORMAT, "setting": self.setting}) + "\n")
        elif os.pread(self._fd, 1, size - 1) != b"\n":
            self._write("\n")  # end a torn last line, so that the next answer starts a line of its own

    def _write(self, text: str) -> None:
        assert self._fd is not None
        data = memoryview(text.encode())
        while data:
            data = data[os.write(self._fd, data):]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
