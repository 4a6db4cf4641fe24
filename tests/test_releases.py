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


def test_the_pins_are_the_bundled_release_files():
    for name, release in releases.RELEASES.items():
        data = release_file(name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == release.sha256 and len(data) == release.size
        assert load_dataset(release_file(name)).sha256 == release.content_sha256
        assert releases.bundled_copy(release) == release_file(name)
    for name in ("humanevalplus", "mbppplus"):
        folder = release_file(name).parent
        assert "Apache License" in (folder / "LICENSE").read_text() and (folder / "PROVENANCE.md").is_file()
    assert "CC BY 4.0" in (release_file("mbppplus").parent / "PROVENANCE.md").read_text()


def test_a_named_release_is_the_bundled_copy_with_no_request_and_nothing_cached(cache, monkeypatch):
    monkeypatch.setenv(releases.BASE_URL_ENV, "http://127.0.0.1:1/")  # nothing listens: no network
    for name in releases.RELEASES:
        progress = Lines()
        assert releases.resolve(name, WHERE, progress) == release_file(name)
        assert progress.lines == []
    assert not cache.exists()


def test_a_bundled_copy_that_does_not_match_its_pin_is_not_used(tmp_path, monkeypatch):
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


def test_a_session_with_a_named_release_runs_offline_with_no_download(pytester, cache, monkeypatch):
    monkeypatch.setenv(releases.BASE_URL_ENV, "http://127.0.0.1:1/")
    config = pytester.path / "plus.yaml"
    config.write_text("target: {mode: mock}\ndataset: humanevalplus-mini\nparams: {execute: true, limit: 2}\n")
    result = pytester.runpytest("--humaneval-config", str(config), "--humaneval-report", "report.json", *NO_CACHE)
    result.assert_outcomes(passed=2)
    assert "download" not in result.stderr.str()
    assert read_report(pytester.path / "report.json")["dataset"]["label"] == (
        "humanevalplus-mini v0.1.10 sample (2/164 problems)")
    assert not (cache / "evalplus").exists(), "nothing was fetched into the user cache"


def test_the_default_url_is_evalplus_release_and_an_environment_variable_overrides_it(monkeypatch):
    monkeypatch.delenv(releases.BASE_URL_ENV, raising=False)
    assert releases.release_url(releases.RELEASES["humanevalplus"]) == (
        "https://github.com/evalplus/humanevalplus_release/releases/download/v0.1.10/HumanEvalPlus.jsonl.gz")
    monkeypatch.setenv(releases.BASE_URL_ENV, "http://127.0.0.1:9/mirror")
    assert releases.release_url(releases.RELEASES["humanevalplus-mini"]) == (
        "http://127.0.0.1:9/mirror/HumanEvalPlus-Mini.jsonl.gz")


def test_the_user_cache_is_xdg_cache_home_else_home_dot_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert releases.cache_dir() == tmp_path / "xdg" / "pytest-humaneval"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/by/mistake")  # invalid by the XDG spec: ignored
    assert releases.cache_dir() == tmp_path / "home" / ".cache" / "pytest-humaneval"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert releases.cache_dir() == tmp_path / "home" / ".cache" / "pytest-humaneval"


def test_a_release_is_downloaded_once_verified_and_then_read_from_the_cache(cache, server):
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


def test_a_download_with_another_sha256_is_one_error_naming_both_hashes_and_nothing_is_cached(cache, server):
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


def test_a_cached_release_that_no_longer_matches_its_pin_is_fetched_again(cache, server):
    path = releases.resolve("humanevalplus-mini", WHERE)
    path.write_bytes(path.read_bytes()[:-10])  # a torn or edited copy
    assert releases.resolve("humanevalplus-mini", WHERE) == path
    assert path.read_bytes() == release_file("humanevalplus-mini").read_bytes()
    assert len(server.requests) == 2


def test_without_network_one_error_names_the_url_and_how_to_use_a_downloaded_file(cache, monkeypatch, unbundled):
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


def test_an_http_error_status_is_named(cache, server):
    server.status["HumanEvalPlus-NoExtreme.jsonl.gz"] = 404
    with pytest.raises(DatasetError, match=r"humanevalplus-noextreme: cannot download http://127\.0\.0\.1:\d+/"
                                           r"releases/download/v0\.1\.10/HumanEvalPlus-NoExtreme\.jsonl\.gz: HTTP 404\. "
                                           r"Without network access"):
        releases.resolve("humanevalplus-noextreme", WHERE)


def test_a_release_given_by_path_is_recognised_by_its_sha256_gzipped_or_not(tmp_path):
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


def test_a_session_with_dataset_humanevalplus_downloads_it_with_a_progress_line_and_labels_the_release(
        pytester, cache, server):
    config = pytester.path / "plus.yaml"
    config.write_text("target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, limit: 2}\n")
    result = pytester.runpytest("--humaneval-config", str(config), "--humaneval-report", "report.json", *NO_CACHE)
    result.assert_outcomes(passed=2)
    result.stderr.fnmatch_lines([
        f"humaneval: downloading HumanEvalPlus.jsonl.gz from {server.url}HumanEvalPlus.jsonl.gz: *%",
        f"humaneval: downloaded HumanEvalPlus.jsonl.gz (904 KiB, sha256 verified) into {cache}/evalplus/v0.1.10",
        "humaneval: computing expected outputs (canonical solutions): */2 tasks, * s",
        "humaneval: expected outputs of 2 task(s) computed in * s, cached in *"])
    dataset = read_report(pytester.path / "report.json")["dataset"]
    assert dataset["name"] == "humanevalplus" and dataset["problems"] == 2
    assert dataset["label"] == "humanevalplus v0.1.10 sample (2/164 problems)"

    again = pytester.runpytest("--humaneval-config", str(config), *NO_CACHE)
    again.assert_outcomes(passed=2)
    assert "humaneval: download" not in again.stderr.str() and "expected outputs" not in again.stderr.str()
    assert len(server.requests) == 1, "the second session reads the release and its outputs from the user cache"


def test_a_session_without_network_is_one_usage_error(pytester, cache, monkeypatch, unbundled):
    monkeypatch.setenv(releases.BASE_URL_ENV, "http://127.0.0.1:1/")
    config = pytester.path / "plus.yaml"
    config.write_text("target: {mode: mock}\ndataset: humanevalplus-mini\nparams: {execute: true}\n")
    result = pytester.runpytest("--humaneval-config", str(config), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {config}: dataset: humanevalplus-mini: cannot download "
                                 "http://127.0.0.1:1/HumanEvalPlus-Mini.jsonl.gz (ConnectError*). Without network "
                                 "access, download * elsewhere and set `dataset:` to the file's path *"])
    assert json.dumps(result.stderr.str()).count("ERROR:") == 1


def test_the_status_line_updates_in_place_on_a_terminal_and_keeps_a_log_short():
    import io

    from pytest_humaneval.plugin import StatusLine

    log = io.StringIO()
    line = StatusLine(log)
    for text, final in (("a 1%", False), ("a 50%", False), ("a done", True), ("b 1/3", False), ("b 3/3", False),
                        ("b done", True)):
        line(text, final=final)
    assert log.getvalue() == "a 1%\na done\nb 1/3\nb done\n", "each phase's first and last states"

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    line = StatusLine(screen)
    line("a 1%")
    line("a done", final=True)
    assert screen.getvalue() == "\ra 1%\x1b[K\ra done\x1b[K\n"


def test_xdist_workers_take_the_release_from_the_controller_and_never_download(pytester, cache, server):
    from pytest_humaneval.config import load_config
    from pytest_humaneval.handoff import config_from_json, config_to_json

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
