"""HumanEval+ releases by name: the bundled copies, and for a release the package does not carry, the download from
a real loopback server, sha256 pin, user cache, errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from plus_data import release_file
from release_server import ReleaseServer
from sessions import NO_CACHE, read_report

from pytest_humaneval.data import releases
from pytest_humaneval.data.dataset import DatasetError, load_dataset

WHERE = "/cfg/run.yaml: dataset"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty user cache: XDG_CACHE_HOME in a temporary folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "pytest-humaneval"


@pytest.fixture
def unbundled(monkeypatch) -> None:
    """A package without its bundled copies (a distribution that leaves the data out): releases are downloaded."""
    monkeypatch.setattr(releases, "bundled_copy", lambda release: None)


@pytest.fixture
def server(monkeypatch, unbundled):
    with ReleaseServer() as running:
        monkeypatch.setenv(releases.BASE_URL_ENV, running.url)
        yield running


class Lines:
    def __init__(self) -> None:
        self.lines: list[tuple[str, bool]] = []

    def __call__(self, text: str, final: bool = False) -> None:
        self.lines.append((text, final))


@pytest.mark.slow
def test_pins_are_the_bundled_files():
    """The pins are the bundled release files' sizes and hashes."""
    for name, release in releases.RELEASES.items():
        data = release_file(name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == release.sha256 and len(data) == release.size
        assert load_dataset(release_file(name)).sha256 == release.content_sha256
        assert releases.bundled_copy(release) == release_file(name)
    for name in ("humanevalplus", "mbppplus"):
        folder = release_file(name).parent
        assert "Apache License" in (folder / "LICENSE").read_text() and (folder / "PROVENANCE.md").is_file()
    assert "CC BY 4.0" in (release_file("mbppplus").parent / "PROVENANCE.md").read_text()


def test_named_release_is_bundled_copy(cache, monkeypatch):
    """A named release is the bundled copy, with no request and nothing cached."""
    monkeypatch.setenv(releases.BASE_URL_ENV, "http://127.0.0.1:1/")  # nothing listens: no network
    for name in releases.RELEASES:
        progress = Lines()
        assert releases.resolve(name, WHERE, progress) == release_file(name)
        assert progress.lines == []
    assert not cache.exists()


def test_mismatched_bundled_copy_unused(tmp_path, monkeypatch):
    """A bundled copy that does not match its pin is not used."""
    import importlib.resources

    fixtures = tmp_path / "fixtures"
    (fixtures / "humanevalplus").mkdir(parents=True)
    torn = fixtures / "humanevalplus" / "HumanEvalPlus-Mini.jsonl.gz"
    edited = bytearray(release_file("humanevalplus-mini").read_bytes())
    edited[1000] ^= 1  # same size, another sha256
    torn.write_bytes(bytes(edited))
    monkeypatch.setattr(importlib.resources, "files", lambda package: fixtures)
    assert releases.bundled_copy(releases.RELEASES["humanevalplus-mini"]) is None
    assert releases.bundled_copy(releases.RELEASES["humanevalplus"]) is None  # absent


@pytest.mark.slow
def test_named_release_runs_offline(pytester, cache, monkeypatch):
    """A session with a named release runs offline, with no download."""
    monkeypatch.setenv(releases.BASE_URL_ENV, "http://127.0.0.1:1/")
    config = pytester.path / "plus.yaml"
    config.write_text("target: {mode: mock}\ndataset: humanevalplus-mini\nparams: {execute: true, limit: 2}\n")
    result = pytester.runpytest("--humaneval-config", str(config), "--humaneval-report", "report.json", *NO_CACHE)
    result.assert_outcomes(passed=2)
    assert "download" not in result.stderr.str()
    assert read_report(pytester.path / "report.json")["dataset"]["label"] == (
        "humanevalplus-mini v0.1.10 sample (2/164 problems)")
    assert not (cache / "evalplus").exists(), "nothing was fetched into the user cache"


def test_default_url_and_override(monkeypatch):
    """The default URL is EvalPlus's release, and an environment variable overrides it."""
    monkeypatch.delenv(releases.BASE_URL_ENV, raising=False)
    assert releases.release_url(releases.RELEASES["humanevalplus"]) == (
        "https://github.com/evalplus/humanevalplus_release/releases/download/v0.1.10/HumanEvalPlus.jsonl.gz")
    monkeypatch.setenv(releases.BASE_URL_ENV, "http://127.0.0.1:9/mirror")
    assert releases.release_url(releases.RELEASES["humanevalplus-mini"]) == (
        "http://127.0.0.1:9/mirror/HumanEvalPlus-Mini.jsonl.gz")


def test_user_cache_location(monkeypatch, tmp_path):
    """The user cache is $XDG_CACHE_HOME, else ~/.cache."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert releases.cache_dir() == tmp_path / "xdg" / "pytest-humaneval"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/by/mistake")  # invalid by the XDG spec: ignored
    assert releases.cache_dir() == tmp_path / "home" / ".cache" / "pytest-humaneval"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert releases.cache_dir() == tmp_path / "home" / ".cache" / "pytest-humaneval"


def test_download_once_then_cache(cache, server):
    """A release is downloaded once, verified, and then read from the cache."""
    progress = Lines()
    path = releases.resolve("humanevalplus-mini", WHERE, progress)
    assert path == cache / "evalplus" / "v0.1.10" / "HumanEvalPlus-Mini.jsonl.gz"
    assert path.read_bytes() == release_file("humanevalplus-mini").read_bytes()
    assert server.requests == ["/releases/download/v0.1.10/HumanEvalPlus-Mini.jsonl.gz"]
    assert list(path.parent.iterdir()) == [path], "no temporary file is left behind"
    assert progress.lines[0][0].startswith(f"humaneval: downloading HumanEvalPlus-Mini.jsonl.gz from {server.url}")
    assert progress.lines[-1] == (f"humaneval: downloaded HumanEvalPlus-Mini.jsonl.gz (56 KiB, sha256 verified) "
                                  f"into {path.parent}", True)
    assert "100%" in progress.lines[-2][0]

    again = Lines()
    assert releases.resolve("humanevalplus-mini", WHERE, again) == path
    assert len(server.requests) == 1 and again.lines == [], "a cached release is not fetched again"


def test_wrong_sha256_names_both_hashes(cache, server):
    """A download with another SHA-256 is one error naming both hashes, and nothing is cached."""
    tampered = bytearray(release_file("humanevalplus-mini").read_bytes())
    tampered[100] ^= 1
    server.replace["HumanEvalPlus-Mini.jsonl.gz"] = bytes(tampered)
    with pytest.raises(DatasetError) as info:
        releases.resolve("humanevalplus-mini", WHERE)
    message = str(info.value)
    pinned = releases.RELEASES["humanevalplus-mini"].sha256
    assert message == (f"{WHERE}: humanevalplus-mini: the file downloaded from {server.url}HumanEvalPlus-Mini.jsonl.gz "
                       f"has sha256 {hashlib.sha256(tampered).hexdigest()}, expected {pinned} (the pinned v0.1.10 "
                       "release); nothing was cached")
    folder = cache / "evalplus" / "v0.1.10"
    assert list(folder.iterdir()) == [], "neither the file nor a partial download is kept"


def test_stale_cache_is_fetched_again(cache, server):
    """A cached release that no longer matches its pin is fetched again."""
    path = releases.resolve("humanevalplus-mini", WHERE)
    path.write_bytes(path.read_bytes()[:-10])  # a torn or edited copy
    assert releases.resolve("humanevalplus-mini", WHERE) == path
    assert path.read_bytes() == release_file("humanevalplus-mini").read_bytes()
    assert len(server.requests) == 2


def test_offline_error_names_url(cache, monkeypatch, unbundled):
    """Without network, one error names the URL and how to use a downloaded file."""
    monkeypatch.setenv(releases.BASE_URL_ENV, "http://127.0.0.1:1/releases/download/v0.1.10")  # nothing listens
    with pytest.raises(DatasetError) as info:
        releases.resolve("humanevalplus", WHERE)
    message = str(info.value)
    url = "http://127.0.0.1:1/releases/download/v0.1.10/HumanEvalPlus.jsonl.gz"
    assert message.startswith(f"{WHERE}: humanevalplus: cannot download {url} (ConnectError")
    assert message.endswith(f"Without network access, download {url} elsewhere and set `dataset:` to the file's "
                            "path (e.g. dataset: ./HumanEvalPlus.jsonl.gz); the release is recognised by its sha256")
    assert "\n" not in message
    assert not (cache / "evalplus" / "v0.1.10" / "HumanEvalPlus.jsonl.gz").exists()


def test_http_error_status_is_named(cache, server):
    server.status["HumanEvalPlus-NoExtreme.jsonl.gz"] = 404
    with pytest.raises(DatasetError, match=r"humanevalplus-noextreme: cannot download http://127\.0\.0\.1:\d+/"
                                           r"releases/download/v0\.1\.10/HumanEvalPlus-NoExtreme\.jsonl\.gz: HTTP 404\. "
                                           r"Without network access"):
        releases.resolve("humanevalplus-noextreme", WHERE)


@pytest.mark.slow
def test_release_by_path_recognised(tmp_path):
    """A release given by path is recognised by its SHA-256, gzipped or not."""
    import gzip

    loaded = load_dataset(release_file("humanevalplus-noextreme"))
    assert releases.recognise(loaded.file_sha256, loaded.sha256).name == "humanevalplus-noextreme"
    plain = tmp_path / "whatever-name.jsonl"
    plain.write_bytes(gzip.decompress(release_file("humanevalplus").read_bytes()))
    loaded = load_dataset(plain)
    assert loaded.evalplus and releases.recognise(loaded.file_sha256, loaded.sha256).name == "humanevalplus"
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(plain.read_bytes().replace(b"HumanEval/0", b"HumanEval/0x", 1))
    loaded = load_dataset(edited)
    assert releases.recognise(loaded.file_sha256, loaded.sha256) is None


@pytest.mark.slow
def test_session_downloads_humanevalplus(pytester, cache, server):
    """A session with dataset humanevalplus downloads it with a progress line, and labels the release."""
    config = pytester.path / "plus.yaml"
    config.write_text("target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, limit: 2}\n")
    result = pytester.runpytest("--humaneval-config", str(config), "--humaneval-report", "report.json", *NO_CACHE)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([  # through pytest's terminal reporter, at session start
        f"humaneval: downloading HumanEvalPlus.jsonl.gz from {server.url}HumanEvalPlus.jsonl.gz: *%",
        f"humaneval: downloaded HumanEvalPlus.jsonl.gz (904 KiB, sha256 verified) into {cache}/evalplus/v0.1.10",
        "humaneval: computing expected outputs (canonical solutions): */2 tasks, * s",
        "humaneval: expected outputs of 2 task(s) computed in * s, cached in *"])
    dataset = read_report(pytester.path / "report.json")["dataset"]
    assert dataset["name"] == "humanevalplus" and dataset["problems"] == 2
    assert dataset["label"] == "humanevalplus v0.1.10 sample (2/164 problems)"

    again = pytester.runpytest("--humaneval-config", str(config), *NO_CACHE)
    again.assert_outcomes(passed=2)
    assert "humaneval: download" not in again.stdout.str() and "expected outputs" not in again.stdout.str()
    assert len(server.requests) == 1, "the second session reads the release and its outputs from the user cache"


def test_offline_session_is_usage_error(pytester, cache, monkeypatch, unbundled):
    """A session without network is one usage error."""
    monkeypatch.setenv(releases.BASE_URL_ENV, "http://127.0.0.1:1/")
    config = pytester.path / "plus.yaml"
    config.write_text("target: {mode: mock}\ndataset: humanevalplus-mini\nparams: {execute: true}\n")
    result = pytester.runpytest("--humaneval-config", str(config), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {config}: dataset: humanevalplus-mini: cannot download "
                                 "http://127.0.0.1:1/HumanEvalPlus-Mini.jsonl.gz (ConnectError*). Without network "
                                 "access, download * elsewhere and set `dataset:` to the file's path *"])
    assert json.dumps(result.stderr.str()).count("ERROR:") == 1


def test_status_line_in_place():
    """The status line updates in place on a terminal, and keeps a log short."""
    import io

    from pytest_humaneval.session.terminal import Progress

    log = io.StringIO()
    line = Progress(stream=log)  # no terminal reporter (-p no:terminal): stderr, the same way
    for text, final in (("a 1%", False), ("a 50%", False), ("a done", True), ("b 1/3", False), ("b 3/3", False),
                        ("b done", True)):
        line(text, final=final)
    assert log.getvalue() == "a 1%\na done\nb 1/3\nb done\n", "each phase's first and last states"

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    line = Progress(stream=screen)
    line("a 1%")
    line("a done", final=True)
    assert screen.getvalue() == "\ra 1%\x1b[K\ra done\x1b[K\n"


@pytest.mark.slow
def test_workers_never_download(pytester, cache, server):
    """xdist workers take the release from the controller, and never download."""
    from pytest_humaneval.config import load_config
    from pytest_humaneval.session.handoff import config_from_json, config_to_json

    config = pytester.path / "plus.yaml"
    config.write_text("target: {mode: mock}\ndataset: humanevalplus-noextreme\n"
                      "params: {execute: true, limit: 3, plus: {min_time_limit_s: 2.5}}\n")
    loaded = load_config(config)
    assert config_from_json(config_to_json(loaded)) == loaded, "the release name and params.plus reach workers"
    result = pytester.runpytest("--humaneval-config", str(config), "-n", "2", "--humaneval-report", "report.json",
                                *NO_CACHE)
    result.assert_outcomes(passed=3)
    assert len(server.requests) == 1, "one download, by the controller"
    assert read_report(pytester.path / "report.json")["dataset"]["label"] == (
        "humanevalplus-noextreme v0.1.10 sample (3/164 problems, time limits max(2.5 s, 4 x canonical))")


@pytest.mark.slow
def test_collect_only_downloads_nothing(pytester, cache, server):
    """--collect-only with a release neither bundled nor cached: nothing is fetched, the benchmark's samples are
    not listed and a line says why; the next real run downloads it once."""
    config = pytester.path / "plus.yaml"
    config.write_text("target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, limit: 2}\n")
    listed = pytester.runpytest("--humaneval-config", str(config), "--collect-only", *NO_CACHE)
    assert server.requests == [] and not (cache / "evalplus").exists()
    listed.stdout.fnmatch_lines([f"humaneval: --collect-only: {config}: dataset: humanevalplus is not downloaded "
                                 "yet (a run fetches it once, into *): its samples are not listed"])
    assert listed.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    pytester.runpytest("--humaneval-config", str(config), *NO_CACHE).assert_outcomes(passed=2)
    assert len(server.requests) == 1
