"""The environment markers (tests/environment.py): a missing need skips its tests with a reason that names it, and
a need the session is required to meet (--require-env, HUMANEVAL_TEST_REQUIRE) fails the session that skipped them.

Each session below has this suite's environment.py as its conftest, with its probes replaced by fixed answers:
root is missing, the browser too, the rest is there."""

from __future__ import annotations

from pathlib import Path

import environment
import pytest

FAKE = '''

PROBES.update({need: (lambda kernel, need=need: (True, "pretend: " + need)) for need in PROBES})
PROBES["root"] = lambda kernel: (False, "pretend: euid 1000, not root")
PROBES["browser"] = lambda kernel: (False, "pretend: chromium not installed")
_kernel = lambda: {"self": "", "landlock": "pretend: ENOSYS"}
'''

TESTS = '''
import pytest

def test_plain():
    pass

@pytest.mark.needs_root
def test_marked_root():
    raise AssertionError("ran without root")

@pytest.mark.needs_root("to prove a reason of its own")
@pytest.mark.needs_namespaces
def test_marked_root_with_why():
    raise AssertionError("ran without root")

def test_skips_itself_for_root():
    pytest.skip("needs_root and needs_cgroup: found out at run time")

@pytest.mark.needs_browser
def test_marked_browser():
    raise AssertionError("ran without a browser")

@pytest.mark.needs_namespaces
def test_marked_namespaces_which_are_there():
    pass

def test_skipped_for_no_need():
    pytest.skip("one CPU: nothing to pin")
'''


@pytest.fixture
def session(pytester: pytest.Pytester, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(environment.ENV_VAR, raising=False)  # CI sets it for the suite, not for these sessions
    pytester.makeconftest(Path(environment.__file__).read_text() + FAKE)
    markers = [line for line in request.config.getini("markers") if line.startswith(environment.PREFIX)]
    pytester.makeini("[pytest]\nmarkers =\n" + "".join(f"    {line}\n" for line in markers))
    pytester.makepyfile(test_needs=TESTS)
    return pytester


def test_missing_need_skips_with_reason(session):
    """A missing need skips its tests with the marker's name and the probe's finding."""
    result = session.runpytest("-rs", "-p", "no:xdist")
    result.assert_outcomes(passed=2, skipped=5)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "environment (tests/environment.py*",
        "  needs_root * no   pretend: euid 1000, not root",
        "  needs_namespaces * yes  pretend: namespaces",
        "*SKIPPED [[]1[]] test_needs.py:*: needs_root: pretend: euid 1000, not root",
        "*SKIPPED [[]1[]] test_needs.py:*: needs_root: pretend: euid 1000, not root (wanted: to prove a reason of its own)",
        "*SKIPPED [[]1[]] test_needs.py:*: needs_root and needs_cgroup: found out at run time",
        "*SKIPPED [[]1[]] test_needs.py:*: needs_browser: pretend: chromium not installed",
    ])
    assert "skipped, but this machine is required" not in result.stdout.str()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["option", "variable", "variable, xdist"])
def test_required_need_skip_fails_session(session, monkeypatch, how):
    """A skip for a required need fails the session and names the test."""
    args = ["-p", "no:xdist"] if "xdist" not in how else ["-n", "2"]
    if how == "option":
        args.append("--require-env=root,namespaces")
    else:
        monkeypatch.setenv(environment.ENV_VAR, "needs_root, namespaces")
    result = session.runpytest(*args)
    result.assert_outcomes(passed=2, skipped=5)  # the tests' own outcomes are untouched: the session fails
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["  needs_root * no   pretend: euid 1000, not root [[]required[]]",
                                 "  required but not met: root *"])
    text = result.stdout.str()
    found = sorted(line for line in text.splitlines() if line.startswith("SKIPPED-BUT-REQUIRED"))
    assert found == [
        "SKIPPED-BUT-REQUIRED test_needs.py::test_marked_root - needs_root: pretend: euid 1000, not root",
        "SKIPPED-BUT-REQUIRED test_needs.py::test_marked_root_with_why - needs_root: pretend: euid 1000, not root "
        "(wanted: to prove a reason of its own)",
        "SKIPPED-BUT-REQUIRED test_needs.py::test_skips_itself_for_root - needs_root and needs_cgroup: found out at "
        "run time",
    ], text  # not the browser's (not required), nor a skip that names no need
    assert "3 test(s) skipped for a need that --require-env / HUMANEVAL_TEST_REQUIRE says this machine meets" in text


def test_met_requirement_passes(session):
    """A requirement met by every test passes."""
    result = session.runpytest("-p", "no:xdist", "--require-env=namespaces,cgroup", "-k", "not skips_itself")
    result.assert_outcomes(passed=2, skipped=4)  # root and browser are missing, but not required
    assert result.ret == pytest.ExitCode.OK


def test_unknown_need_is_usage_error(session):
    result = session.runpytest("-p", "no:xdist", "--require-env=root,gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown need(s) gpu; the needs are root, namespaces, *"])


def test_unknown_marker_is_usage_error(session):
    """An unknown needs_* marker is a usage error."""
    session.makepyfile(test_typo="import pytest\n\n@pytest.mark.needs_rooot\ndef test_typo():\n    pass\n")
    result = session.runpytest("-p", "no:xdist", "test_typo.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_typo.py::test_typo: unknown marker needs_rooot*"])


@pytest.mark.parametrize(("reason", "needs"), [
    ("Skipped: needs_root: euid 1000, not root", ["root"]),
    ("needs_root and needs_system_python: to start the supervisor as nobody", ["root", "system_python"]),
    ("needs_root: euid 1000; needs_cgroup: none", ["root", "cgroup"]),
    ("needs_root, needs_userns: both", ["root", "userns"]),
    ("one CPU: nothing to pin", []),
    ("the kernel needs_root: not at the start", []),
])
def test_needs_read_from_skip_reason(reason, needs):
    """A skip's needs are the names its reason starts with."""
    assert environment.needs_of(reason) == needs


def test_needs_markers_and_probes_match(pytestconfig):
    """Every need has a registered marker, and every needs_* marker a probe."""
    registered = {line.split(":", 1)[0] for line in pytestconfig.getini("markers")}
    assert {name for name in registered if name.startswith(environment.PREFIX)} == {
        environment.PREFIX + need for need in environment.PROBES}


def test_benchmark_run_prints_no_environment(session):
    """A benchmark run inside the clone loads this conftest (testpaths) but prints none of the suite's block, and
    runs none of its probes; the suite's own session still prints it."""
    suite_conftest = (session.path / "conftest.py").read_text()
    session.makeconftest(suite_conftest + "\n\ndef _kernel():\n    raise AssertionError('probed')\n")
    (session.path / "run.yaml").write_text("target: {mode: mock}\nparams: {limit: 2}\n")
    for args in ((), ("-n", "2")):
        bench = session.runpytest("--humaneval-config", "run.yaml", "-p", "no:cacheprovider", *args)
        assert bench.ret == 0, bench.stdout.str()
        bench.stdout.no_fnmatch_line("environment (tests/environment.py*")
        bench.stdout.no_fnmatch_line("*needs_root*")
    session.makeconftest(suite_conftest)
    suite = session.runpytest("test_needs.py", "-p", "no:cacheprovider")
    suite.stdout.fnmatch_lines(["environment (tests/environment.py: *", "  needs_root *"])
