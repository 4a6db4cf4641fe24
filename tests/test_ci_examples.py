"""The ready-made CI jobs of examples/ci/: the config they run ships with them, is valid, gates against the
production model's baseline with the same settings, and the jobs use what the README recommends."""

from __future__ import annotations

import dataclasses
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from fake_openai import FakeOpenAI, chat, models
from sessions import NO_CACHE, read_report

from pytest_humaneval.config import load_config
from pytest_humaneval.data.dataset import load_problems

CI = Path(__file__).resolve().parent.parent / "examples" / "ci"
JOBS = sorted(CI.glob("*.yml"))


def commands(job: Path) -> list[str]:
    """Every shell command of a job file (GitHub steps' `run`, GitLab `script` lines)."""
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("run", "script") and isinstance(value, str):
                    found.extend(line for line in value.splitlines() if line.strip())
                elif key == "script" and isinstance(value, list):
                    found.extend(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(job.read_text()))
    return [" ".join(command.split()) for command in found]


@pytest.fixture
def repository(tmp_path) -> Path:
    """A user's repository as the jobs' comments set it up: humaneval/ copied in, the baseline committed."""
    shutil.copytree(CI / "humaneval", tmp_path / "humaneval")
    (tmp_path / "baseline").mkdir()
    (tmp_path / "baseline" / "prod.json").write_text("{}")
    return tmp_path


@pytest.mark.parametrize("job", JOBS, ids=lambda path: path.name)
def test_each_job_runs_a_shipped_config(job, repository):
    """Each job runs a shipped config without xdist and installs the plugin from a source."""
    runs = [shlex.split(command) for command in commands(job) if command.startswith("pytest ")]
    assert len(runs) == 1, commands(job)
    args = runs[0]
    assert "-n" not in args and "--numprocesses" not in args, "one machine: no -n (the pool is faster)"
    config = load_config(repository / args[args.index("--humaneval-config") + 1])
    assert config.target.mode == "runtime" and config.params.isolation == "strict"
    assert config.gate is not None and config.gate.baseline.resolve() == repository / "baseline" / "prod.json"
    installs = [command for command in commands(job) if command.startswith("pip install")]
    assert installs == ['pip install "$PYTEST_HUMANEVAL_SOURCE"'], "not on a package index: a git URL or a path"
    assert f"env:{config.target.credentials_ref[4:]}" == config.target.credentials_ref
    assert config.target.credentials_ref[4:] in job.read_text(), "the job sets the key's variable"


def test_prod_differs_only_in_model(repository):
    """The production config measures what the candidate does: the same settings (the same dataset digest), another
    model and no gate."""
    candidate, prod = (load_config(repository / "humaneval" / name) for name in ("candidate.yaml", "prod.yaml"))
    assert candidate.target.model != prod.target.model and prod.gate is None
    assert dataclasses.replace(candidate.target, model=prod.target.model) == prod.target
    assert (candidate.params, candidate.dataset, candidate.dataset_release) == (
        prod.params, prod.dataset, prod.dataset_release), "same settings: the same dataset digest"


@pytest.mark.slow
def test_starter_configs_baseline_and_gate(pytester, monkeypatch):
    """The workflow of the jobs' comments, against a loopback server instead of DashScope: prod.yaml makes the
    baseline, candidate.yaml is gated on it."""
    problems = load_problems()[1]

    missed = {problems[0].task_id, problems[7].task_id}  # the production model misses two problems

    def script(request, index):
        if request.method == "GET":
            return models("qwen-plus", "qwen-max")
        problem = next(p for p in problems if p.prompt.strip() in request.prompt_text)
        if request.body.get("model") == "qwen-max" and problem.task_id in missed:
            return chat(f"```python\n{problem.prompt}    return None\n```")
        return chat(f"```python\n{problem.prompt}{problem.canonical_solution}```")

    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-test-starter")
    shutil.copytree(CI / "humaneval", pytester.path / "humaneval")
    with FakeOpenAI(script) as server:
        for name in ("candidate.yaml", "prod.yaml"):
            path = pytester.path / "humaneval" / name
            text = path.read_text().replace("https://dashscope.aliyuncs.com/compatible-mode/v1", server.url)
            path.write_text(text if _hides_tests() else text.replace("isolation: strict", "isolation: auto"))
        prod = pytester.runpytest(*shlex.split(baseline_command())[1:], "-q", *NO_CACHE)  # as the recipe says
        prod.assert_outcomes(passed=162, failed=2)
        assert prod.ret == pytest.ExitCode.OK, "the production model's misses are its score, not a failed job"
        gated = pytester.runpytest("--humaneval-config", "humaneval/candidate.yaml", "--humaneval-report", "new.json",
                                   "-q", *NO_CACHE)
    assert gated.ret == pytest.ExitCode.OK, gated.stdout.str()
    gate = read_report(pytester.path / "new.json")["gate"]
    assert gate["passed"] is True and gate["baseline"]["model"] == "qwen-max"


def baseline_command() -> str:
    """The baseline job's command, as prod.yaml's comment gives it; the jobs' comments and the docs give the same."""
    found = [line.lstrip("# ").strip() for line in (CI / "humaneval" / "prod.yaml").read_text().splitlines()
             if line.lstrip("# ").startswith("pytest ")]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("where", [*JOBS, CI.parent.parent / "docs" / "ci-and-reports.md"],
                         ids=lambda path: path.name)
def test_baseline_command_is_the_same_everywhere(where):
    assert baseline_command() in " ".join(where.read_text().replace("#", " ").split())


def _hides_tests() -> bool:
    """Whether this machine gives the sandbox namespaces or Landlock (the configs ask for them: isolation strict);
    any Linux 5.13+ does, in a container too, so the configs run as shipped wherever the suite runs."""
    from pytest_humaneval import sandbox

    box = sandbox.Sandbox("auto")
    try:
        return box.start().isolation in sandbox.harness.HIDDEN_TESTS
    except sandbox.SandboxError:
        return False
    finally:
        box.close()
