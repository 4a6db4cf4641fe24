"""``dataset: livecodebench``: a release fetched once from a real HTTP server on 127.0.0.1 (LiveCodeBench's file
names, rows the project wrote: the bundled corpus split over two files), the contamination window, and a gate
that refuses a baseline of another release or window."""

from __future__ import annotations

import json
import os
import time
from datetime import date
from pathlib import Path

import pytest
from release_server import ReleaseServer

from pytest_humaneval.config import ConfigError, load_config
from pytest_humaneval.data import catalog, livecodebench, releases
from pytest_humaneval.data.dataset import DatasetError

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "pytest_humaneval" / "fixtures" / "io_corpus.jsonl"
SAMPLES = ROOT / "examples" / "io-corpus-samples.jsonl"
# The corpus's rows by contest date: test.jsonl has the four earliest (release_v1), test2.jsonl the rest.
ROWS = sorted((json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()),
              key=lambda row: row["contest_date"])


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


@pytest.fixture
def server(tmp_path, monkeypatch):
    """LiveCodeBench's first two files on a local server; the user cache in tmp_path."""
    files = {"test.jsonl": _jsonl(ROWS[:4]), "test2.jsonl": _jsonl(ROWS[4:])}
    with ReleaseServer(files) as running:
        monkeypatch.setenv(livecodebench.BASE_URL_ENV, f"http://127.0.0.1:{running.httpd.server_address[1]}/lcb/")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        yield running


def test_versions_are_lcb_loaders():
    """release_vN: the first N files; vN: the Nth; vX_vY: X to Y; release_latest: all six."""
    assert livecodebench.files("release_v1", "k") == ("test.jsonl",)
    assert livecodebench.files("release_v3", "k") == ("test.jsonl", "test2.jsonl", "test3.jsonl")
    assert livecodebench.files("v1", "k") == ("test.jsonl",)
    assert livecodebench.files("v5", "k") == ("test5.jsonl",)
    assert livecodebench.files("v2_v4", "k") == ("test2.jsonl", "test3.jsonl", "test4.jsonl")
    assert livecodebench.files("release_latest", "k") == livecodebench.FILES
    with pytest.raises(DatasetError, match=r"^k: expected a LiveCodeBench version .* found 'release_v9'$"):
        livecodebench.files("release_v9", "k")
    with pytest.raises(DatasetError, match="found 'v4_v2'"):
        livecodebench.files("v4_v2", "k")


def test_window_is_lcb_comparison():
    """start <= contest_date <= end, each bound midnight of its day (lcb_runner's datetimes)."""
    window = (date(2025, 1, 18), date(2025, 2, 8))
    assert livecodebench.in_window("2025-01-18T00:00:00", window, "w")
    assert not livecodebench.in_window("2025-01-17T23:59:59", window, "w")
    assert livecodebench.in_window("2025-02-08T00:00:00", window, "w")
    assert not livecodebench.in_window("2025-02-08T00:00:01", window, "w")  # after its midnight, as lcb_runner
    assert livecodebench.in_window(None, (None, None), "w")  # no window: every row
    with pytest.raises(DatasetError, match=r"^w: contest_date: expected an ISO date .* found 'soon'$"):
        livecodebench.in_window("soon", window, "w")


def _config(folder: Path, release: str = "release_v2", window: str = "", gate: str = "") -> Path:
    path = folder / "lcb.yaml"
    path.write_text(f"dataset: livecodebench\ntarget: {{mode: samples, samples: {SAMPLES}, allow_subset: true}}\n"
                    f"params: {{allow_code_execution: true, timeout_s: 6, release_version: {release}{window}}}\n"
                    + gate)
    return path


@pytest.mark.slow
def test_release_and_window_run_and_gate(pytester, server):
    """A run fetches release_v2's two files once; the window keeps the problems of its contest dates (label and
    report say so); a later run reads the cache; a gate refuses a baseline of another window, naming it."""
    window = ", start_date: 2025-01-15, end_date: 2025-02-20"
    config = _config(pytester.path, window=window)
    first = pytester.runpytest_subprocess("--humaneval-config", str(config), "--humaneval-report", "base.json",
                                          "-p", "no:cacheprovider", timeout=600)
    kept = [row["question_id"] for row in ROWS if "2025-01-15" <= row["contest_date"][:10] <= "2025-02-20"]
    assert 0 < len(kept) < len(ROWS)
    first.stdout.fnmatch_lines([f"*livecodebench release_v2 full ({len(kept)}/{len(kept)} problems, contest dates "
                                "2025-01-15 to 2025-02-20)*"])
    report = json.loads((pytester.path / "base.json").read_text())
    assert sorted(report["problems"]) == sorted(kept), report["problems"].keys()
    assert report["dataset"]["settings"]["window"] == {"start_date": "2025-01-15", "end_date": "2025-02-20"}
    assert report["dataset"]["settings"]["release_version"] == "release_v2"
    assert sorted(server.requests) == ["/lcb/test.jsonl", "/lcb/test2.jsonl"]
    # The reference programs pass and the wrong ones fail: half of each problem's samples.
    assert all(task["c"] * 2 == task["n"] == 2 for task in report["problems"].values()), report["problems"]

    server.status["test.jsonl"] = server.status["test2.jsonl"] = 500  # a second run never asks
    same = pytester.runpytest_subprocess("--humaneval-config", str(config), "--humaneval-baseline", "base.json",
                                         "-p", "no:cacheprovider", timeout=600)
    assert same.ret == 0, same.stdout.str()[-2000:]
    assert len(server.requests) == 2

    other = _config(pytester.path, window=", start_date: 2025-01-15, end_date: 2025-02-28")
    refused = pytester.runpytest_subprocess("--humaneval-config", str(other), "--humaneval-baseline", "base.json",
                                            "-p", "no:cacheprovider", timeout=600)
    assert refused.ret != 0
    refused.stderr.fnmatch_lines(["*refusing to compare runs that measured different things*params.end_date "
                                  "(baseline '2025-02-20', this run '2025-02-28')*"])
    older = _config(pytester.path, release="v1_v2", window=window)  # the same files, another name
    refused = pytester.runpytest_subprocess("--humaneval-config", str(older), "--humaneval-baseline", "base.json",
                                            "-p", "no:cacheprovider", timeout=600)
    assert refused.ret != 0
    refused.stderr.fnmatch_lines(["*refusing to compare*params.release_version (baseline 'release_v2', this run "
                                  "'v1_v2')*"])


def test_a_download_that_trickles_is_given_up_and_caches_nothing(server, monkeypatch):
    """A server that keeps sending, too slowly to finish (each read within its timeout), does not hold the run: once
    the download has run its while, an average below the floor is one error naming the URL and the rate."""
    monkeypatch.setattr(releases, "MIN_RATE_AFTER_S", 0.5)
    monkeypatch.setattr(releases, "MIN_RATE", 1 << 20)
    server.trickle.add("test.jsonl")
    with pytest.raises(DatasetError, match=r"^where: livecodebench: http://127\.0\.0\.1:\d+/lcb/test\.jsonl: it sent "
                                           r"[\d,]+ bytes in \d+ s \([\d.]+ KiB/s\), expected at least 1024 KiB/s; "
                                           r"nothing was cached\. Without network access"):
        livecodebench.load("release_v1", (None, None), "where")
    folder = livecodebench.cached_file("test.jsonl").parent
    assert list(folder.iterdir()) == []
    server.trickle.clear()
    assert len(livecodebench.load("release_v1", (None, None), "where").problems) == 4


def test_a_killed_downloads_part_file_is_swept_and_a_live_ones_kept(server):
    """A part file a killed process left (untouched for over an hour) goes with the next download of that file; one
    written a moment ago (another process downloading) stays."""
    folder = livecodebench.cached_file("test.jsonl").parent
    folder.mkdir(parents=True, exist_ok=True)
    stale, live = folder / ".test.jsonl.killed.part", folder / ".test.jsonl.writing.part"
    stale.write_bytes(b"half")
    live.write_bytes(b"half")
    hours_ago = time.time() - 2 * 3600
    os.utime(stale, (hours_ago, hours_ago))
    livecodebench.load("release_v1", (None, None), "where")
    assert sorted(path.name for path in folder.iterdir()) == [live.name, "test.jsonl"]


def test_each_file_fetched_once_and_a_cut_one_cached_never(server, tmp_path):
    """A file cut short by the server caches nothing and names its URL; the next attempt fetches it whole."""
    server.cut.add("test2.jsonl")
    with pytest.raises(DatasetError, match=r"^where: livecodebench: cannot download http://127\.0\.0\.1:\d+/lcb/"
                                           r"test2\.jsonl \(.*\)\. Without network access"):
        livecodebench.load("release_v2", (None, None), "where")
    folder = livecodebench.cached_file("test.jsonl").parent
    assert sorted(path.name for path in folder.iterdir()) == ["test.jsonl"]  # no part file left
    server.cut.clear()
    loaded = livecodebench.load("release_v2", (None, None), "where")
    assert len(loaded.problems) == len(ROWS)
    assert server.requests.count("/lcb/test.jsonl") == 1 and server.requests.count("/lcb/test2.jsonl") == 2
    again = livecodebench.load("v2", (None, None), "where")  # from the cache: the same rows, the same sha256
    assert len(again.problems) == len(ROWS) - 4 and len(server.requests) == 3
    assert livecodebench.load("release_v2", (None, None), "where").sha256 == loaded.sha256


def test_window_changes_the_sha256_and_may_select_nothing(server):
    everything = livecodebench.load("release_v2", (None, None), "where")
    some = livecodebench.load("release_v2", (date(2025, 2, 1), None), "where")
    assert 0 < len(some.problems) < len(everything.problems) and some.sha256 != everything.sha256
    with pytest.raises(DatasetError, match=r"^where: livecodebench release_v2, the window 2030-01-01 to \.\.\.: "
                                           r"expected at least one problem, found none$"):
        livecodebench.load("release_v2", (date(2030, 1, 1), None), "where")


def test_http_error_names_the_url(server):
    server.status["test.jsonl"] = 404
    with pytest.raises(DatasetError, match=r"cannot download http://127\.0\.0\.1:\d+/lcb/test\.jsonl: HTTP 404"):
        livecodebench.load("v1", (None, None), "where")


def test_datasets_says_what_is_cached(server):
    (entry,) = [entry for entry in catalog.entries() if entry.name == "livecodebench"]
    assert entry.where.startswith("not on this machine; a run downloads") and "1,055 in release_v6" in entry.tests
    livecodebench.load("v1", (None, None), "where")
    (entry,) = [entry for entry in catalog.entries() if entry.name == "livecodebench"]
    assert entry.where.startswith("downloaded: 1 of its 6 files") and entry.file_bytes == len(_jsonl(ROWS[:4]))


@pytest.mark.parametrize(("text", "message"), [
    ("dataset: livecodebench\n", r"params\.release_version: expected a LiveCodeBench release with dataset "
                                 r"livecodebench .*found nothing$"),
    ("dataset: livecodebench\nparams: {release_version: release_v7}\n",
     r"params\.release_version: expected a LiveCodeBench version .*found 'release_v7'$"),
    ("params: {release_version: release_v2}\n",
     r"params\.release_version: expected only with dataset livecodebench, found 'release_v2' with humaneval$"),
    ("dataset: livecodebench\nparams: {release_version: v1, start_date: 2025-13-01}\n",
     r"params\.start_date: expected a date YYYY-MM-DD, found '2025-13-01'$"),
    ("dataset: livecodebench\nparams: {release_version: v1, start_date: 2025-02-01, end_date: 2025-01-01}\n",
     r"params\.end_date: expected a day on or after params\.start_date \(2025-02-01\), found 2025-01-01$"),
])
def test_config_errors(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text("target: {mode: samples, samples: s.jsonl}\n" + text.replace("params: {", "params: {"
                                                                                 "allow_code_execution: true, "))
    (tmp_path / "s.jsonl").write_text('{"task_id": "HumanEval/0", "completion": "pass"}\n')
    if "params:" not in text:
        path.write_text(path.read_text() + "params: {allow_code_execution: true}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_window_needs_contest_dates(tmp_path):
    """A window over HumanEval (no contest dates) is one error; over a rows file it keeps the rows of its dates."""
    from pytest_humaneval.engine.planning import open_dataset

    path = tmp_path / "c.yaml"
    (tmp_path / "s.jsonl").write_text('{"task_id": "HumanEval/0", "completion": "pass"}\n')
    path.write_text("target: {mode: samples, samples: s.jsonl}\n"
                    "params: {allow_code_execution: true, start_date: 2025-01-01}\n")
    with pytest.raises(ConfigError, match=r"params\.start_date, end_date: expected a dataset whose problems have "
                                          r"contest dates .*found openai_humaneval, whose problems have none$"):
        open_dataset(load_config(path), None)
    path.write_text(f"dataset: {CORPUS}\ntarget: {{mode: samples, samples: s.jsonl}}\n"
                    "params: {allow_code_execution: true, end_date: 2025-01-18}\n")
    loaded, _, _ = open_dataset(load_config(path), None)
    assert sorted(p.task_id for p in loaded.problems) == ["io/alternating-sum", "io/longest-run", "io/pair-sums"]
