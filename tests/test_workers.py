"""xdist workers: everything from workerinput, a worker that cannot start stops the session once, crashes and
--dist modes. Real xdist runs, real worker processes."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval.config import load_config
from pytest_humaneval.session.handoff import config_from_json, config_to_json

SOLVED = {
    "HumanEval/0": "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n",
    "HumanEval/2": "    return number % 1.0\n",
    "HumanEval/4": ("    mean = sum(numbers) / len(numbers)\n"
                    "    return sum(abs(x - mean) for x in numbers) / len(numbers)\n"),
    "HumanEval/7": "    return [s for s in strings if substring in s]\n",
}
WRONG_0 = {"task_id": "HumanEval/0", "completion": "    return False\n"}
SLOW_2 = {"task_id": "HumanEval/2", "completion": "    import time\n    time.sleep(2.5)\n    return number % 1.0\n"}


def rows(*tasks: str, extra: tuple[dict, ...] = ()) -> list[dict]:
    return [{"task_id": task, "completion": SOLVED[task]} for task in tasks] + list(extra)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_samples(path: Path, samples: list[dict]) -> Path:
    return write(path, "".join(json.dumps(row) + "\n" for row in samples))


def test_config_crosses_whole(tmp_path):
    """The config crosses to the workers whole."""
    write_samples(tmp_path / "samples.jsonl", rows("HumanEval/0"))
    write(tmp_path / "base.json", "{}")
    full = write(tmp_path / "full.yaml", (
        "target: {mode: runtime, endpoint: 'http://127.0.0.1:1/v1', model: m, credentials_ref: env:KEY, "
        "api: completions, retries: {max_attempts: 3}}\n"
        "params: {allow_code_execution: true, n: 3, k: [1, 3], stop: [x], retry: {max_attempts: 2}, top_p: 0.5}\n"
        "pricing: {input_usd_per_mtok: 1, output_usd_per_mtok: 2}\n"
        "gate: {min_pass_at_1: 0.5, min_pass_at: {3: 0.7}, baseline: base.json, max_drop: 0.1, confidence: 0.9, "
        "allow_partial: true}\n"))
    examples = sorted(Path(__file__).resolve().parent.parent.glob("examples/*.yaml"))
    for path in [full, write(tmp_path / "samples.yaml", "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                                                       "params: {allow_code_execution: true}\n"), *examples]:
        config = load_config(path)
        assert config_from_json(config_to_json(config)) == config, path


@pytest.mark.slow
def test_workers_elsewhere_need_no_files(pytester):
    """Workers in another directory need none of the files the config names."""
    # The config file is synced to the workers' directory (--rsyncdir), the samples file and the baseline
    # live outside it: only the controller can read them, and workers must not need to.
    data = pytester.path / "data"
    write_samples(data / "samples.jsonl", rows("HumanEval/0", "HumanEval/2", extra=(WRONG_0,)))
    write(data / "base.yaml", "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    pytester.runpytest("--humaneval-config", str(data / "base.yaml"), "-p", "no:xdist", "--humaneval-report",
                       str(data / "base.json"), *NO_CACHE)
    project = pytester.path / "project"
    cfg = write(project / "humaneval.yaml", "target: {mode: samples, samples: ../data/samples.jsonl, allow_subset: true}\n"
                "params: {allow_code_execution: true}\ngate: {baseline: ../data/base.json, min_pass_at_1: 0.5}\n")
    elsewhere = pytester.path / "elsewhere"
    elsewhere.mkdir()
    result = pytester.runpytest("--humaneval-config", str(cfg), "--dist", "load", "--tx",
                                f"2*popen//chdir={elsewhere}", "--rsyncdir", str(project), "--max-worker-restart",
                                "1", "--humaneval-report", str(pytester.path / "r.json"), *NO_CACHE)
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=2, failed=1, warnings=result.parseoutcomes().get("warnings", 0))
    assert (elsewhere / "project" / "humaneval.yaml").exists() and not (elsewhere / "data").exists()
    report = read_report(pytester.path / "r.json")
    assert report["planned"] == 3 and report["gate"]["passed"] is True


@pytest.mark.slow
def test_worker_start_failure_stops_once(pytester):
    """A worker that cannot start stops the session once, with the reason."""
    write_samples(pytester.path / "samples.jsonl", rows("HumanEval/0", "HumanEval/2", "HumanEval/4"))
    cfg = write(pytester.path / "humaneval.yaml",
                "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    # Gone once the controller has read it, before the workers start: they cannot collect it.
    pytester.makeconftest(
        "import os\n"
        "def pytest_sessionstart(session):\n"
        "    if not hasattr(session.config, 'workerinput'):\n"
        f"        os.rename({str(cfg)!r}, {str(cfg) + '.gone'!r})\n")
    # --tx without -n: xdist's restart limit is unbounded, so without the fix this respawns until the timeout.
    result = pytester.runpytest_subprocess("--humaneval-config", str(cfg), "--dist", "load", "--tx", "2*popen",
                                           "--humaneval-report", "r.json", "--humaneval-results", "results.jsonl",
                                           *NO_CACHE, timeout=90)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()[-3000:]
    output = result.stdout.str()
    # the reason, then the summary's INTERRUPTED line and its closing score line
    assert len(re.findall(r"could not start", output)) <= 3, output[-3000:]
    result.stdout.fnmatch_lines(["*Exit: xdist worker gw* could not start: *humaneval.yaml is not on this xdist "
                                 "worker*"])
    assert output.count("replacing crashed worker") <= 4, output[-3000:]
    report = read_report(pytester.path / "r.json")
    assert report["planned"] == 3 and report["counts"]["not_run"] == 3 and report["coverage"] == 0.0
    lines = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 3 and all("could not start" in line["detail"] for line in lines)


@pytest.mark.slow
def test_crashed_worker_is_harness_error(pytester):
    """A sample whose worker crashed is a harness error that says so."""
    # pytest-timeout's thread method ends the whole worker process (os._exit) while the sample runs.
    write_samples(pytester.path / "samples.jsonl", rows("HumanEval/0", extra=(SLOW_2,)))
    cfg = write(pytester.path / "humaneval.yaml",
                "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-n", "2", "--timeout", "1", "--timeout-method",
                                "thread", "--humaneval-results", "results.jsonl", "--humaneval-report", "r.json",
                                *NO_CACHE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    crashed = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()
               if json.loads(line)["task_id"] == "HumanEval/2"]
    assert len(crashed) == 1 and crashed[0]["status"] == "harness_error"
    assert crashed[0]["detail"].startswith("the xdist worker running this sample crashed, so it has no verdict")
    assert read_report(pytester.path / "r.json")["counts"]["harness_error"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("dist", ["loadscope", "loadfile"])
def test_loadscope_and_loadfile_by_problem(pytester, dist):
    """--dist loadscope and loadfile spread the samples by problem."""
    samples = rows(*SOLVED) * 3  # 4 problems x 3 samples
    write_samples(pytester.path / "samples.jsonl", samples)
    cfg = write(pytester.path / "humaneval.yaml",
                "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", str(cfg), "-n", "2", "--dist", dist, "-v", *NO_CACHE)
    result.assert_outcomes(passed=12)
    workers_of = defaultdict(set)
    for worker, task in re.findall(r"\[(gw\d)\] \[\s*\d+%\] PASSED \S+::(HumanEval/\d+)\[\d+\]", result.stdout.str()):
        workers_of[task].add(worker)
    assert sorted(workers_of) == sorted(SOLVED), result.stdout.str()
    assert all(len(workers) == 1 for workers in workers_of.values()), workers_of  # a problem stays together
    assert set().union(*workers_of.values()) == {"gw0", "gw1"}, workers_of  # and both workers get problems
