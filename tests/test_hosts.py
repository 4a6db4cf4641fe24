"""xdist hosts: the plugin's options in either form with existing files (--tx popen//chdir=, which xdist treats
as it treats ssh), hosts that cannot start or are lost for good, pytest-rerunfailures and --tx without -d.
Real xdist runs; the same over real ssh is tests/test_ssh.py."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval.session.hosts import config_path_for, worker_args

MOCK = "target: {mode: mock}\nparams: {execute: true, limit: 4}\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_worker_args_join_path_options():
    """The worker arguments join the plugin's path options, and leave the rest."""
    args = ["--humaneval-config", "cfg.yaml", "--humaneval-results", "r.jsonl", "--humaneval-report=rep.json",
            "--junitxml", "j.xml", "-k", "HumanEval/1[", "--humaneval-baseline", "b.json", "--", "--humaneval-html"]
    assert worker_args(args, "/abs/cfg.yaml", remote=False) == [
        "--humaneval-config=/abs/cfg.yaml", "--humaneval-results=r.jsonl", "--humaneval-report=rep.json",
        "--junitxml", "j.xml", "-k", "HumanEval/1[", "--humaneval-baseline=b.json", "--", "--humaneval-html"]
    assert worker_args(["--humaneval-config=c.yaml"], None, remote=True) == [
        "-p", "no:rerunfailures", "--humaneval-config=c.yaml"]


def test_worker_args_join_existing_files_of_other_options(tmp_path, monkeypatch):
    """For a worker xdist maps the arguments of (a synced one), an option's value that names an existing file
    outside the synced folders (an earlier run's JUnit file), which xdist would refuse, is joined to its option;
    positional paths, values that name no file and files under a synced folder are left to xdist."""
    monkeypatch.chdir(tmp_path)
    synced = tmp_path / "synced"
    synced.mkdir()
    for name in ("j.xml", "log.txt", "synced/in.ini"):
        (tmp_path / name).touch()
    args = ["--junitxml", "j.xml", "tests", "-p", "no:cacheprovider", "-k", "HumanEval", "--log-file",
            str(tmp_path / "log.txt"), "-c", "synced/in.ini", "--rootdir", str(synced), "-v", "log.txt", "--",
            "j.xml"]
    assert worker_args(args, None, remote=False, roots=[synced], positional=["tests", "log.txt", "j.xml"]) == [
        "--junitxml=j.xml", "tests", "-p", "no:cacheprovider", "-k", "HumanEval", f"--log-file={tmp_path}/log.txt",
        "-csynced/in.ini", "--rootdir", str(synced), "-v", "log.txt", "--", "j.xml"]
    assert worker_args(["--junitxml", "j.xml"], None, remote=False) == ["--junitxml", "j.xml"]  # not mapped


@pytest.mark.slow
def test_a_second_run_with_a_chdir_worker_and_junit(pytester):
    """--junitxml J with a --tx popen//chdir= worker, run twice in one folder: the second run found the first's
    J among the arguments, which xdist refused for the worker (not relative to an rsync root), and ran nothing."""
    write(pytester.path / "cfg.yaml", MOCK)
    args = ("--humaneval-config", "cfg.yaml", "--junitxml", "j.xml", "-d", "--tx", "popen//chdir=wd",
            "-W", "ignore::DeprecationWarning", *NO_CACHE)
    for run in ("first", "second"):
        result = pytester.runpytest_subprocess(*args, timeout=120)
        output = result.stdout.str() + result.stderr.str()
        assert result.ret == 0, f"{run} run: {output[-3000:]}"
        assert "rsync root" not in output and "could not start" not in output, output[-3000:]
        result.assert_outcomes(passed=4)
    assert (pytester.path / "j.xml").read_text().count("<testcase ") == 4


def test_worker_config_path_finds_file(tmp_path):
    """The config path a worker gets is where it finds the file."""
    root = tmp_path / "humaneval"
    assert config_path_for(root / "sub" / "big.yaml", [Path("/usr/lib/pytest"), root], synced=True) == \
        "humaneval/sub/big.yaml"
    assert config_path_for(tmp_path / "big.yaml", [root], synced=True) == str(tmp_path / "big.yaml")
    assert config_path_for(root / "big.yaml", [root], synced=False) == str(root / "big.yaml")


@pytest.mark.slow
@pytest.mark.parametrize("joined", [False, True], ids=["option-and-value", "option=value"])
@pytest.mark.parametrize("synced", [False, True], ids=["config-at-its-path", "config-under-rsyncdir"])
def test_options_in_either_form_elsewhere(pytester, joined, synced):
    """The plugin's options work in either form, with existing files, on workers elsewhere."""
    # Every output exists already (an earlier run's), the baseline and the config exist: xdist's argument check
    # (make_reltoroot) refused each of them as "not relative to an rsync root", an INTERNALERROR.
    cfg = write(pytester.path / "humaneval" / "cfg.yaml", MOCK)
    pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report", "base.json",
                       *NO_CACHE)
    outputs = {"--humaneval-results": "r.jsonl", "--humaneval-report": "rep.json", "--humaneval-markdown": "s.md",
               "--humaneval-html": "page.html", "--humaneval-baseline": "base.json",
               "--humaneval-config": "humaneval/cfg.yaml"}
    for name in ("r.jsonl", "rep.json", "s.md", "page.html"):
        write(pytester.path / name, "left by an earlier run\n")
    args = [part for option, value in outputs.items()
            for part in ([f"{option}={value}"] if joined else [option, value])]
    elsewhere = pytester.path / "elsewhere"
    elsewhere.mkdir()
    sync = ["--rsyncdir", str(pytester.path / "humaneval"), "-W", "ignore::DeprecationWarning"] if synced else []
    result = pytester.runpytest(*args, "-d", "--tx", f"popen//chdir={elsewhere}", *sync, *NO_CACHE)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 0, output[-3000:]
    assert "INTERNALERROR" not in output and "rsync root" not in output
    assert [row["status"] for row in results(pytester.path / "r.jsonl")] == ["passed"] * 4
    report = read_report(pytester.path / "rep.json")
    assert report["coverage"] == 1.0 and report["gate"]["passed"] is True
    assert "pass@1" in (pytester.path / "s.md").read_text()
    assert (elsewhere / "humaneval" / "cfg.yaml").exists() == synced


def python_that_starts_once(folder: Path) -> Path:
    """An interpreter for ``--tx popen//python=`` that starts one worker, then never again: a host lost for good
    once its first worker is gone. Its worker ends itself at its first sample (conftest.py below)."""
    flag = folder / "started-once"
    script = folder / "python-once"
    script.write_text(f"#!/bin/sh\n[ -e {flag} ] && exit 1\n: > {flag}\n"
                      f"HUMANEVAL_TEST_DIE_AT_FIRST_SAMPLE=1 exec {sys.executable} \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


# The host started once dies at its first sample; the surviving host takes no sample before that (at most 60 s),
# so it is still taking samples when the other is lost, however the two workers' start-ups are timed.
DIE_AT_FIRST_SAMPLE = (
    "import os, pathlib, time\n"
    "DIED = pathlib.Path(__file__).with_name('died')\n"
    "def pytest_runtest_setup(item):\n"
    "    if os.environ.get('HUMANEVAL_TEST_DIE_AT_FIRST_SAMPLE'):\n"
    "        DIED.touch()\n"
    "        os._exit(1)\n"
    "    deadline = time.monotonic() + 60\n"
    "    while not DIED.exists() and time.monotonic() < deadline:\n"
    "        time.sleep(0.05)\n")


@pytest.mark.slow
def test_lost_host_is_dropped(pytester):
    """A host lost for good mid-run is dropped, and the others run its samples."""
    # Before: xdist replaced the crashed worker, making its gateway raised, and the session ended (exit 3,
    # INTERNALERROR) with the surviving host's work.
    # The survivor waits for the other host's death before its first sample (DIE_AT_FIRST_SAMPLE), so it is still
    # taking samples when that host is lost (with every sample handed out, xdist has told every worker to finish:
    # see below). CI's floors run lost this race once the workers waited for their sandboxes before the loop.
    write(pytester.path / "cfg.yaml",
          MOCK.replace("limit: 4", "limit: 16") + "gate: {min_pass_at_1: 0.5, min_coverage: 0.9}\n")
    pytester.makeconftest(DIE_AT_FIRST_SAMPLE)
    once = python_that_starts_once(pytester.path)
    result = pytester.runpytest_subprocess(
        "--humaneval-config", "cfg.yaml", "--humaneval-results", "r.jsonl", "--humaneval-report", "rep.json", "-d",
        "--tx", f"popen//python={once}", "--tx", "popen", *NO_CACHE, timeout=120)
    output = result.stdout.str()
    assert result.ret == 0, output[-3000:]
    assert "INTERNALERROR" not in output
    result.stdout.fnmatch_lines(["*humaneval: xdist host popen//python=*python-once could not start (*): dropped*"])
    statuses = sorted(row["status"] for row in results(pytester.path / "r.jsonl"))
    assert statuses == ["harness_error"] + ["passed"] * 15
    report = read_report(pytester.path / "rep.json")
    assert report["planned"] == 16 and report["interrupted"] is None and report["gate"]["passed"] is True


@pytest.mark.slow
def test_wrong_python_drops_the_host(pytester):
    """A wrong python path drops that host, and the run goes on."""
    write(pytester.path / "cfg.yaml", MOCK)
    result = pytester.runpytest_subprocess(
        "--humaneval-config", "cfg.yaml", "--humaneval-results", "r.jsonl", "-d",
        "--tx", "popen//python=/nonexistent/bin/python", "--tx", "popen", *NO_CACHE, timeout=120)
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*xdist host popen//python=/nonexistent/bin/python could not start (*): dropped*"])
    assert [row["status"] for row in results(pytester.path / "r.jsonl")] == ["passed"] * 4


@pytest.mark.slow
def test_no_host_starts_ends_session(pytester):
    """No host that can start ends the session the plugin's way."""
    # Before: an INTERNALERROR, no report, an empty results file left behind.
    write(pytester.path / "cfg.yaml", MOCK + "gate: {min_pass_at_1: 0.5}\n")
    result = pytester.runpytest_subprocess(
        "--humaneval-config", "cfg.yaml", "--humaneval-results", "r.jsonl", "--humaneval-report", "rep.json",
        "--junitxml", "j.xml", "-d", "--tx", "popen//python=/nonexistent/bin/python", *NO_CACHE, timeout=120)
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output[-3000:]  # the gate's
    assert "INTERNALERROR" not in output
    rows = results(pytester.path / "r.jsonl")
    assert [row["status"] for row in rows] == ["not_run"] * 4
    assert all("could not start" in row["detail"] and "no other xdist worker" in row["detail"] for row in rows)
    report = read_report(pytester.path / "rep.json")
    assert report["counts"]["not_run"] == 4 and report["gate"]["passed"] is False
    assert "could not start" in report["interrupted"]
    assert "human-eval.interrupted" in (pytester.path / "j.xml").read_text()


@pytest.mark.slow
def test_reruns_on_remote_workers_refused(pytester, monkeypatch):
    """Reruns with remote workers are refused before anything runs."""
    pytest.importorskip("pytest_rerunfailures")
    monkeypatch.delenv("PYTEST_ADDOPTS")  # the suite's pytester leaves pytest-rerunfailures out (conftest.py)
    write(pytester.path / "cfg.yaml", MOCK)
    result = pytester.runpytest_subprocess("--humaneval-config", "cfg.yaml", "--humaneval-report", "rep.json",
                                           "-d", "--tx", "ssh=nowhere.invalid", "--reruns", "1", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tx ssh=nowhere.invalid: pytest-rerunfailures cannot rerun on a remote xdist "
                                 "worker*drop --reruns*"])
    assert not (pytester.path / "rep.json").exists()


def test_tx_without_dist_runs_here(pytester):
    """--tx without --dist says the samples run here."""
    write(pytester.path / "cfg.yaml", MOCK)
    result = pytester.runpytest("--humaneval-config", "cfg.yaml", "--tx", "popen", *NO_CACHE)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*--tx popen without --dist (-d) or -n: xdist starts no worker*add -d*"])


def test_controller_keeps_its_arguments(pytester):
    # The workers' copy is made while xdist reads it; the controller's invocation args are as given after.
    write(pytester.path / "cfg.yaml", MOCK)
    pytester.makeconftest(
        "def pytest_sessionfinish(session):\n"
        "    if not hasattr(session.config, 'workerinput'):\n"
        "        print('ARGS', list(session.config.invocation_params.args))\n")
    result = pytester.runpytest("--humaneval-config", "cfg.yaml", "-n", "1", "-s", *NO_CACHE)
    assert result.ret == 0
    assert "ARGS ['--humaneval-config', 'cfg.yaml', '-n', '1', '-s'" in result.stdout.str()
