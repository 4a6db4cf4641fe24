"""The test tiers (tests/tiers.py): a slow test is skipped, saying so and how to run it, unless the slow tier is
asked for (--run-slow, HUMANEVAL_TEST_SLOW=1, a -m expression naming it); -m selections of other markers leave
the tiers as they are; and CI asks for the slow tier in every run it makes.

Each session below has this suite's tiers.py as its conftest."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import tiers

ROOT = Path(__file__).resolve().parents[1]

TESTS = '''
import pytest

def test_fast():
    pass

@pytest.mark.slow
def test_slow():
    pass

@pytest.mark.slow
@pytest.mark.needs_root
def test_slow_as_root():
    pass

@pytest.mark.needs_root
def test_fast_as_root():
    pass
'''


@pytest.fixture
def session(pytester: pytest.Pytester, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(tiers.SLOW_VAR, raising=False)  # CI sets it for the suite, not for these sessions
    pytester.makeconftest(Path(tiers.__file__).read_text())
    markers = [line for line in request.config.getini("markers") if line.startswith(("slow:", "needs_root:"))]
    assert len(markers) == 2, request.config.getini("markers")  # both registered in pyproject.toml
    pytester.makeini("[pytest]\nmarkers =\n" + "".join(f"    {line}\n" for line in markers))
    pytester.makepyfile(test_tiered=TESTS)
    return pytester


def run(session: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, str]]:
    result = session.runpytest("-v", "-rs", "-p", "no:cacheprovider", *args)
    found = {m.group(1): m.group(2) for m in re.finditer(r"::(\w+) (PASSED|SKIPPED|FAILED)", result.stdout.str())}
    return result, found


def test_slow_tests_are_skipped_by_default_saying_how_to_run_them(session):
    result, found = run(session)
    assert found == {"test_fast": "PASSED", "test_slow": "SKIPPED", "test_slow_as_root": "SKIPPED",
                     "test_fast_as_root": "PASSED"}, result.stdout.str()
    result.stdout.fnmatch_lines([
        "tiers: default only (tests marked slow are skipped: --run-slow or HUMANEVAL_TEST_SLOW=1 runs them)",
        "2 slow test(s) not run: the slow tier runs with --run-slow (or HUMANEVAL_TEST_SLOW=1), as CI does",
        "SKIPPED * slow: the slow tier runs with --run-slow (or HUMANEVAL_TEST_SLOW=1)",
    ])
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.parametrize("how", [("--run-slow",), ("-m", "slow or not slow")], ids=["option", "markexpr"])
def test_the_slow_tier_runs_when_asked_for(session, how):
    result, found = run(session, *how)
    assert set(found.values()) == {"PASSED"} and len(found) == 4, result.stdout.str()
    result.stdout.fnmatch_lines(["tiers: default and slow (all tests)"])
    result.stdout.no_fnmatch_line("*slow test(s) not run*")


@pytest.mark.parametrize(("value", "runs"), [("1", True), ("0", False), ("", False)])
def test_the_environment_variable_asks_for_it(session, monkeypatch, value, runs):
    monkeypatch.setenv(tiers.SLOW_VAR, value)
    result, found = run(session)
    assert found["test_slow"] == ("PASSED" if runs else "SKIPPED"), result.stdout.str()


def test_m_slow_runs_the_slow_tier_alone_and_not_slow_deselects_it(session):
    result, found = run(session, "-m", "slow")
    assert found == {"test_slow": "PASSED", "test_slow_as_root": "PASSED"}, result.stdout.str()
    result, found = run(session, "-m", "not slow")
    assert found == {"test_fast": "PASSED", "test_fast_as_root": "PASSED"}, result.stdout.str()
    result.stdout.fnmatch_lines(["*2 deselected*"])


def test_other_marker_selections_leave_the_tiers_as_they_are(session):
    """CI's floors run selects with -m "not needs_ssh_hosts"; -m needs_root picks the tests of one need."""
    result, found = run(session, "-m", "needs_root")
    assert found == {"test_slow_as_root": "SKIPPED", "test_fast_as_root": "PASSED"}, result.stdout.str()
    result, found = run(session, "-m", "not needs_root", "--run-slow")
    assert found == {"test_fast": "PASSED", "test_slow": "PASSED"}, result.stdout.str()


def test_ci_runs_every_tier():
    """.ci/run asks for the slow tier before its first pytest run and never takes it back: each of its runs of the
    suite (the README's command, the floors with -m "not needs_ssh_hosts", the newest Python's) has both tiers."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    asked = [i for i, line in enumerate(lines) if line.strip() == f"export {tiers.SLOW_VAR}=1"]
    runs = [i for i, line in enumerate(lines)
            if re.search(r"\bpytest\b.* tests(/|\b)", line) and not line.lstrip().startswith(("#", "echo"))]
    assert asked and runs, (asked, runs)
    assert asked[0] < runs[0], f".ci/run runs the suite (line {runs[0] + 1}) before it asks for the slow tier"
    later = [line for line in lines[asked[0] + 1:] if not line.lstrip().startswith(("#", "echo"))
             and (tiers.SLOW_VAR in line or "not slow" in line)]  # unset, set to 0, or deselected
    assert not later, later


def test_a_benchmark_run_in_the_checkout_prints_no_tiers_line(monkeypatch):
    """``pytest --humaneval-config examples/reference.yaml`` in the checkout loads this suite's conftest (from
    ``testpaths``) but runs none of its tests: its header has no tiers line. A run of the tests keeps it."""
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist"]
    benchmark = subprocess.run([*base, "--humaneval-config", "examples/reference.yaml", "--humaneval-set",
                                "params.limit=1"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert benchmark.returncode == 0, benchmark.stdout[-2000:] + benchmark.stderr[-2000:]
    assert "1 passed" in benchmark.stdout and "tiers:" not in benchmark.stdout, benchmark.stdout[:2000]
    tests = subprocess.run([*base, "tests/test_tiers.py", "--collect-only"], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert re.search(r"^tiers: default", tests.stdout, re.M), tests.stdout[:2000]


def test_a_benchmark_run_beside_a_suite_prints_no_tiers_line(pytester):
    """The checkout's layout in small: the suite in tests/ (this conftest, ``testpaths``), a config elsewhere."""
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "conftest.py").write_text(Path(tiers.__file__).read_text())
    (pytester.path / "tests" / "test_one.py").write_text("def test_one():\n    pass\n")
    (pytester.path / "examples").mkdir()
    (pytester.path / "examples" / "ref.yaml").write_text("target: {mode: mock}\nparams: {limit: 1}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--humaneval-config", "examples/ref.yaml")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("tiers:*")
    for args in ((), ("tests/test_one.py",), (".",), ("--humaneval-config", "examples/ref.yaml", "tests"),
                 ("--humaneval-config", "examples/ref.yaml", "tests/test_one.py::test_one")):
        result = pytester.runpytest("-p", "no:cacheprovider", *args)
        result.stdout.fnmatch_lines(["tiers: *"])  # (default only, or both where HUMANEVAL_TEST_SLOW is set: CI)
