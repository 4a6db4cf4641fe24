"""--humaneval-set KEY=VALUE: the keys people change per run, from the command line, recorded in the report."""

from __future__ import annotations

import json

import pytest
from fake_openai import MODEL, FakeOpenAI, chat, models
from sessions import NO_CACHE, read_report

from pytest_humaneval.data.dataset import bundled_path, load_problems

PROBLEMS = load_problems()[1][:3]


def samples(pytester, name: str, solved: bool) -> None:
    rows = [{"task_id": p.task_id, "completion": p.canonical_solution if solved else "    return None\n"}
            for p in PROBLEMS]
    (pytester.path / name).write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_samples_and_limit_from_command_line(pytester, dist):
    """A samples file and a limit from the command line replace the file's, and are recorded."""
    samples(pytester, "wrong.jsonl", solved=False)
    samples(pytester, "right.jsonl", solved=True)
    (pytester.path / "conf").mkdir()
    (pytester.path / "conf" / "run.yaml").write_text(
        "target: {mode: samples, samples: ../wrong.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "conf/run.yaml", "--humaneval-set", "target.samples=right.jsonl",
                                "--humaneval-set", "params.limit=2", "--humaneval-report", "r.json", *dist,
                                *NO_CACHE)
    result.assert_outcomes(passed=2)  # the command line's file (relative to where pytest started), 2 problems
    report = read_report(pytester.path / "r.json")
    assert report["run"]["overrides"] == {"target.samples": "right.jsonl", "params.limit": "2"}
    assert report["planned"] == 2 and report["measurements"]["human-eval.pass_at_1"]["value"] == 1.0


def test_dataset_from_command_line(pytester):
    dataset = pytester.path / "mine.jsonl"
    dataset.write_text("".join(json.dumps({"task_id": p.task_id, "prompt": p.prompt, "entry_point": p.entry_point,
                                           "canonical_solution": p.canonical_solution, "test": p.test}) + "\n"
                               for p in PROBLEMS))
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\nparams: {execute: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", "dataset=mine.jsonl",
                                "--humaneval-report", "r.json", "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=3)
    assert read_report(pytester.path / "r.json")["dataset"]["problems"] == 3
    assert bundled_path().name != dataset.name


def test_model_from_command_line(pytester, monkeypatch):
    """The model from the command line is the one asked and reported."""
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-overrides")
    problems = {p.prompt.strip(): p for p in PROBLEMS}

    def script(request, index):
        if request.method == "GET":
            return models(MODEL, "other-model")
        problem = next(p for text, p in problems.items() if text in request.prompt_text)
        return chat(f"```python\n{problem.prompt}{problem.canonical_solution}```")

    with FakeOpenAI(script) as server:
        (pytester.path / "run.yaml").write_text(
            f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}, credentials_ref: env:TEST_LLM_KEY}}\n"
            "params: {allow_code_execution: true, limit: 3}\n")
        result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", "target.model=other-model",
                                    "--humaneval-set", "params.n=2", "--humaneval-report", "r.json",
                                    "-p", "no:xdist", *NO_CACHE)
        asked = {post.body["model"] for post in server.posts()}
    result.assert_outcomes(passed=6)
    assert asked == {"other-model"}
    run = read_report(pytester.path / "r.json")["run"]
    assert run["model"] == "other-model" and run["n"] == 2
    assert run["overrides"] == {"target.model": "other-model", "params.n": "2"}


@pytest.mark.parametrize(("setting", "expected"), [
    ("target.allow_subset=maybe", "*run.yaml: target.allow_subset: expected true or false, found 'maybe' (set by "
                                  "--humaneval-set target.allow_subset=...)"),
    ("params.isolation=basic", "--humaneval-set: expected KEY=VALUE with KEY one of target.model, target.endpoint, "
                               "target.samples, target.allow_subset, target.extract, dataset, params.limit, params.n, "
                               "params.protocol, params.temperature, params.top_p, params.k, params.max_tokens, "
                               "params.timeout_s, params.concurrency, params.workers, params.impossible_instruction, found 'params.isolation=basic'"),
    ("params.timeout_s=-1", "*run.yaml: params.timeout_s: expected a number > 0 and <= 3600, found -1 (set by "
                            "--humaneval-set params.timeout_s=...)"),
    ("params.k=1,x", "*run.yaml: params.k: expected a non-empty list of integers >= 1, found*"),
    ("params.n", "--humaneval-set: expected KEY=VALUE*found 'params.n'"),
    ("params.limit=zero", "*run.yaml: params.limit: expected *, found 'zero'* (set by --humaneval-set params.limit=...)"),
])
def test_bad_setting_is_named(pytester, setting, expected):
    """A bad setting is one usage error, naming it."""
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", setting, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {expected}"])


def runtime_config(pytester, url: str, params: str) -> None:
    (pytester.path / "run.yaml").write_text(
        f"target: {{mode: runtime, endpoint: '{url}', model: {MODEL}, credentials_ref: env:TEST_LLM_KEY}}\n"
        f"params: {{allow_code_execution: true, limit: 2{params}}}\n")


@pytest.mark.parametrize(("file_params", "settings", "sent", "reported"), [
    ("", ("params.temperature=0.8", "params.top_p=0.95", "params.n=3", "params.k=1,2", "params.max_tokens=64"),
     {"temperature": 0.8, "top_p": 0.95, "max_tokens": 64}, {"n": 3, "k": [1, 2], "temperature": 0.8}),
    (", n: 2, temperature: 0.8, k: [1, 2]", ("params.protocol=greedy",),  # a protocol replaces the file's sampling
     {"temperature": 0.0}, {"n": 1, "k": [1], "temperature": 0.0}),
])
def test_sampling_from_command_line(pytester, monkeypatch, file_params, settings, sent, reported):
    """temperature, top_p, n, k, max_tokens and the protocol are set per run from the command line: sent to the
    server, reported, and recorded as overrides."""
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-overrides")
    problems = {p.prompt.strip(): p for p in PROBLEMS}

    def script(request, index):
        if request.method == "GET":
            return models(MODEL)
        problem = next(p for text, p in problems.items() if text in request.prompt_text)
        return chat(f"```python\n{problem.prompt}{problem.canonical_solution}```")

    with FakeOpenAI(script) as server:
        runtime_config(pytester, server.url, file_params)
        args = [word for setting in settings for word in ("--humaneval-set", setting)]
        result = pytester.runpytest("--humaneval-config", "run.yaml", *args, "--humaneval-report", "r.json",
                                    "-p", "no:xdist", *NO_CACHE)
        bodies = [post.body for post in server.posts()]
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:] + result.stderr.str()[-2000:]
    for name, value in sent.items():
        assert {body.get(name) for body in bodies} == {value}, name
    run = read_report(pytester.path / "r.json")["run"]
    assert {name: run[name] for name in reported} == reported
    assert run["overrides"] == {setting.partition("=")[0]: setting.partition("=")[2] for setting in settings}


def test_sampling_set_against_the_files_protocol_is_named(pytester):
    """A temperature set on the command line against the file's protocol is the protocol's error, naming the set."""
    samples(pytester, "s.jsonl", solved=True)
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: s.jsonl}\n"
                                            "params: {allow_code_execution: true, protocol: greedy}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", "params.temperature=0.8",
                                *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *run.yaml: params.temperature: expected 0.0, as params.protocol greedy sets "
                                 "it (remove params.temperature or choose another protocol), found 0.8 (set by "
                                 "--humaneval-set params.temperature=...)"])


def test_timeout_and_workers_from_command_line(pytester):
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\nparams: {execute: true, limit: 2}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", "params.timeout_s=7.5",
                                "--humaneval-set", "params.workers=1", "--humaneval-report", "r.json",
                                "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=2)
    assert read_report(pytester.path / "r.json")["run"]["timeout_s"] == 7.5


WITHOUT_A_FILE = ("--humaneval-set", "target.mode=samples", "--humaneval-set", "target.samples=s.jsonl",
                  "--humaneval-set", "params.allow_code_execution=true")
SUBSET = ("--humaneval-set", "target.allow_subset=true")  # s.jsonl covers the first 3 problems


@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_samples_file_scored_without_a_config(pytester, dist):
    """--humaneval-set with no config file makes a samples run's config from the defaults and the sets (it was
    ignored: exit 5, no tests ran): the file is collected, scored and reported, the sets recorded."""
    samples(pytester, "s.jsonl", solved=True)
    result = pytester.runpytest(*WITHOUT_A_FILE, *SUBSET, "--humaneval-set", "params.k=1", "--humaneval-report",
                                "r.json", "--junitxml", "j.xml", *dist, *NO_CACHE)
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["HumanEval pass@1 1.000  coverage 3/3  *"])
    report = read_report(pytester.path / "r.json")
    assert report["planned"] == 3 and report["run"]["mode"] == "samples"
    assert report["run"]["overrides"] == {"target.mode": "samples", "target.samples": "s.jsonl",
                                          "params.allow_code_execution": "true", "target.allow_subset": "true",
                                          "params.k": "1"}
    one = pytester.runpytest(*WITHOUT_A_FILE, *SUBSET, f"s.jsonl::{PROBLEMS[1].task_id}[0]", "-p", "no:xdist",
                             *NO_CACHE)
    one.assert_outcomes(passed=1)  # node ids are the samples file's
    one.stdout.fnmatch_lines(["*1/3 planned samples selected by node ids*"])


@pytest.mark.parametrize(("settings", "expected"), [
    (("target.mode=samples", "target.samples=s.jsonl"),
     "--humaneval-set (no config file): params.allow_code_execution: expected true for mode samples *found nothing*"),
    (("target.model=qwen-plus",),
     "--humaneval-set: without a config file, expected a samples run (target.mode=samples, target.samples=FILE, "
     "params.allow_code_execution=true), found target.model=qwen-plus; other runs need a config file "
     "(--humaneval-config)"),
    (("target.mode=runtime", "target.samples=s.jsonl", "params.allow_code_execution=true"),
     "--humaneval-set: without a config file, expected a samples run *found target.mode=runtime*"),
    (("target.mode=samples", "target.samples=gone.jsonl", "params.allow_code_execution=true"),
     "--humaneval-set (no config file): target.samples: expected an existing file, found '*gone.jsonl'*"),
])
def test_without_a_config_what_is_missing_is_named(pytester, settings, expected):
    samples(pytester, "s.jsonl", solved=True)
    result = pytester.runpytest(*[word for setting in settings for word in ("--humaneval-set", setting)], *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {expected}"])


def test_mode_and_opt_in_stay_the_files_when_there_is_one(pytester):
    """With a config file, its mode and its allow_code_execution opt-in are not the command line's to change."""
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-set", "target.mode=samples", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --humaneval-set: expected KEY=VALUE with KEY one of target.model, *, "
                                 "params.workers, params.impossible_instruction, found 'target.mode=samples'"])


def test_set_with_the_ini_config_left_out_is_a_usage_error(pytester):
    """The ini key's config left out (pytest given paths of its own): --humaneval-set would do nothing, so it is one
    usage error saying how to bring the benchmark in."""
    pytester.makepyfile(test_own="def test_own():\n    pass\n")
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\n")
    pytester.makeini("[pytest]\nhumaneval_config = run.yaml\n")
    result = pytester.runpytest("test_own.py", "--humaneval-set", "params.limit=2", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --humaneval-set: expected the benchmark in this session, found it left "
                                 "out: only the humaneval_config ini key names *run.yaml, and pytest was given "
                                 "paths of its own; add the config among them, or pass --humaneval-config"])


@pytest.mark.parametrize("name", ["s.jsonl", "samples.txt"])
def test_samples_file_as_config_says_how_to_score_it(pytester, name):
    """A samples file given as the config (by its name, or by its JSON lines) says how to score it."""
    samples(pytester, name, solved=True)
    result = pytester.runpytest("--humaneval-config", name, *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: *{name}: expected a YAML run config (--humaneval-config), found a samples "
                                 f"file: score it without a config, pytest --humaneval-set target.mode=samples "
                                 f"--humaneval-set target.samples={name} --humaneval-set "
                                 "params.allow_code_execution=true (the completions are code run on this machine), "
                                 f"or name it in a config of two lines, `target: {{mode: samples, samples: {name}}}` "
                                 "and `params: {allow_code_execution: true}`"])
    # and the two lines do it (with allow_subset: the file covers 3 problems of 164)
    (pytester.path / "run.yaml").write_text(f"target: {{mode: samples, samples: {name}, allow_subset: true}}\n"
                                            "params: {allow_code_execution: true}\n")
    pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", *NO_CACHE).assert_outcomes(passed=3)
