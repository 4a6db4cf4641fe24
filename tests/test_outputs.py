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


# -- a live session's results file is nobody else's output ----------------------------------------------------

HOLDER = '''
import sys
from pathlib import Path
from pytest_humaneval.outputs.paths import open_private

handle = open_private(Path(sys.argv[1]))   # as a live session's --humaneval-results holds its file
handle.write("a row of the live session\\n")
handle.flush()
print("holding", flush=True)
sys.stdin.read()                          # until the test closes stdin
'''


@pytest.fixture
def live_results(pytester):
    """A file held as a live session's results file (the lock --humaneval-results takes), and its holder's pid."""
    import subprocess
    import sys

    path = pytester.path / "live.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        yield path, holder.pid
    finally:
        holder.communicate(timeout=30)


@pytest.mark.parametrize("option", ["--humaneval-results", "--humaneval-report", "--humaneval-markdown",
                                    "--humaneval-html", "--junitxml"])
def test_live_results_file_refused_under_every_option(pytester, live_results, option):
    """Whichever option names a live session's results file, this session is refused before anything runs, naming
    the option and the other session, and the file keeps every row (issue 42: --humaneval-report overwrote it)."""
    path, pid = live_results
    cfg = write_config(pytester, REFERENCE)
    result = pytester.runpytest("--humaneval-config", str(cfg), option, str(path), *NO_CACHE)
    assert_one_usage_error(result, f"ERROR: {option}: {path} is being written by another pytest-humaneval session "
                                   f"(pid {pid}), as its results file;*")
    assert path.read_text() == "a row of the live session\n"


def test_live_results_file_taken_after_configure_is_not_written(pytester):
    """A session that took a file as its results file after this one's check (it started in between) keeps it:
    the report, Markdown and HTML page are not written over it, the section says so, and the session exits 3."""
    outputs = {"--humaneval-report": "r.json", "--humaneval-markdown": "r.md", "--humaneval-html": "r.html"}
    pytester.makeconftest(f'''
import subprocess, sys
import pytest

HOLDERS = []

@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):   # after the plugin's check at configure: the files are taken meanwhile
    for name in {sorted(outputs.values())!r}:
        holder = subprocess.Popen([sys.executable, "-c", {HOLDER!r}, name], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline() == "holding\\n"
        HOLDERS.append(holder)

def pytest_unconfigure(config):
    for holder in HOLDERS:
        holder.communicate(timeout=30)
''')
    cfg = write_config(pytester, REFERENCE)
    result = pytester.runpytest_subprocess("--humaneval-config", str(cfg), "-p", "no:xdist",
                                           *[word for pair in outputs.items() for word in pair], *NO_CACHE)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR, result.stdout.str()[-3000:] + result.stderr.str()[-2000:]
    for option, name in outputs.items():
        assert (pytester.path / name).read_text() == "a row of the live session\n"
        result.stdout.fnmatch_lines([f"NOT WRITTEN {option}: {name} is being written by another "
                                     "pytest-humaneval session (pid *), as its results file;*"])
    result.stdout.fnmatch_lines(["HumanEval pass@1 1.000  coverage 2/2  *"])


def test_two_outputs_on_one_file_refused(pytester):
    """Two options of one session naming one file (one would overwrite the other) is a usage error naming both."""
    cfg = write_config(pytester, REFERENCE)
    result = pytester.runpytest("--humaneval-config", str(cfg), "--humaneval-report", "out.txt", "--junitxml",
                                str(pytester.path / "out.txt"), *NO_CACHE)
    assert_one_usage_error(result, f"ERROR: --junitxml: {pytester.path / 'out.txt'} is also the file of "
                                   "--humaneval-report: each output needs a file of its own*")
