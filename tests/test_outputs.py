"""Bad output paths and undecodable configs are usage errors before anything runs; --collect-only writes nothing."""

from __future__ import annotations

import pytest
from sessions import NO_CACHE

REFERENCE = "target: {mode: mock}\nparams: {execute: true, limit: 2}\n"


def write_config(pytester: pytest.Pytester, text: str | bytes, name: str = "humaneval.yaml"):
    path = pytester.path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def assert_one_usage_error(result: pytest.RunResult, *patterns: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:] + result.stderr.str()[-2000:]
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.lines
    result.stderr.fnmatch_lines(list(patterns))
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.no_fnmatch_line("*passed*")  # nothing ran


def test_non_utf8_config_names_the_line(pytester):
    """A config that is not UTF-8 is one usage error naming the file and line."""
    cfg = write_config(pytester, b"target: {mode: mock}\n# caf\xe9\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), *NO_CACHE)
    assert_one_usage_error(result, f"ERROR: {cfg}: expected UTF-8 text, found byte 0xe9 at line 2*")


def test_control_character_in_config(pytester):
    """A config with a control character is one usage error."""
    cfg = write_config(pytester, "target: {mode: mock}\nparams: {limit: 2\x07}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), *NO_CACHE)
    assert_one_usage_error(result, f"ERROR: {cfg}: not valid YAML at line 2: *#x0007*")


@pytest.mark.parametrize("option", ["--humaneval-report", "--humaneval-results", "--humaneval-markdown",
                                    "--humaneval-html"])
def test_output_path_directory_refused(pytester, option):
    """An output path that is a directory is a usage error before anything runs."""
    cfg = write_config(pytester, REFERENCE)
    (pytester.path / "out").mkdir()
    result = pytester.runpytest("--humaneval-config", str(cfg), option, "out", *NO_CACHE)
    assert_one_usage_error(result, f"ERROR: {option}: expected a file to write, found a directory: *out")


@pytest.mark.parametrize("option", ["--humaneval-report", "--humaneval-results", "--humaneval-markdown",
                                    "--humaneval-html"])
def test_unwritable_output_path_refused(pytester, option):
    """An output path that cannot be written is a usage error before anything runs."""
    cfg = write_config(pytester, REFERENCE)
    (pytester.path / "a-file").write_text("not a folder\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), option, "a-file/out.json", *NO_CACHE)
    assert_one_usage_error(result, f"ERROR: {option}: cannot write *a-file/out.json: *")
    # Read-only even for root: a pseudo filesystem.
    result = pytester.runpytest("--humaneval-config", str(cfg), option, "/proc/humaneval-out.json", *NO_CACHE)
    assert_one_usage_error(result, f"ERROR: {option}: cannot write /proc/humaneval-out.json: *")


def test_path_check_leaves_files_alone(pytester):
    """Checking an output path keeps an existing file and leaves no file behind."""
    cfg = write_config(pytester, "target: {mode: mock}\nparams: {timeout_s: -1}\n")  # fails after the check
    (pytester.path / "old.json").write_text("the previous report\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "--humaneval-report", "old.json",
                                "--humaneval-results", "new/results.jsonl", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (pytester.path / "old.json").read_text() == "the previous report\n"
    assert not (pytester.path / "new" / "results.jsonl").exists()


def test_collect_only_writes_nothing(pytester):
    """--collect-only writes nothing and scores nothing."""
    cfg = write_config(pytester, REFERENCE + "gate: {min_pass_at_1: 0.9}\n")
    for name in ("report.json", "results.jsonl", "summary.md", "page.html"):
        (pytester.path / name).write_text("kept\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "--collect-only", "-q", "--humaneval-report",
                                "report.json", "--humaneval-results", "results.jsonl", "--humaneval-markdown",
                                "summary.md", "--humaneval-html", "page.html", *NO_CACHE)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*HumanEval/0[[]0[]]", "*HumanEval/1[[]0[]]"])
    result.stdout.no_fnmatch_line("*pass@1*")
    result.stdout.no_fnmatch_line("*gate*")
    for name in ("report.json", "results.jsonl", "summary.md", "page.html"):
        assert (pytester.path / name).read_text() == "kept\n", name
