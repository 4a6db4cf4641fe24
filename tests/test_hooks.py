"""The plugin as a pytest citizen: its hooks for a team's own code, one plugin object per output, and the
public pytest API only (tests/test_layout.py checks the imports)."""

from __future__ import annotations

import json
import os
import stat
import xml.etree.ElementTree as ET

import pytest
from sessions import NO_CACHE, read_report

TEAM_KEYS = frozenset({"team"})  # what the report hooks below add to the report

MOCK = "target: {mode: mock}\nparams: {limit: 3}\n"
OUTPUTS = ("--humaneval-results", "r.jsonl", "--humaneval-report", "r.json", "--humaneval-markdown", "r.md",
           "--humaneval-html", "r.html", "--junitxml", "j.xml")

RECORDER = '''
import json, pytest

def pytest_humaneval_report(report, config):
    with open("calls.jsonl", "a") as handle:
        handle.write(json.dumps({"worker": hasattr(config, "workerinput"), "pass_at_1":
                                 report["measurements"]["human-eval.pass_at_1"]["value"]}) + "\\n")
    report["team"] = {"uploaded": True}

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    names = sorted(name for name, plugin in config.pluginmanager.list_name_plugin()
                   if name.startswith("humaneval-") and plugin is not None)
    with open("plugins-left.json", "w") as handle:
        json.dump(names, handle)
'''


@pytest.mark.slow
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_report_hook_amends_every_output(pytester, workers):
    """The report hook is called once, and its amendment is in every output."""
    pytester.makeconftest(RECORDER)
    (pytester.path / "mock.yaml").write_text(MOCK)
    result = pytester.runpytest("--humaneval-config", "mock.yaml", *OUTPUTS, *workers, *NO_CACHE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the replay has failing samples
    calls = [json.loads(line) for line in (pytester.path / "calls.jsonl").read_text().splitlines()]
    report = read_report(pytester.path / "r.json", TEAM_KEYS)
    assert calls == [{"worker": False, "pass_at_1": report["measurements"]["human-eval.pass_at_1"]["value"]}]
    assert report["team"] == {"uploaded": True}
    assert json.loads((pytester.path / "plugins-left.json").read_text()) == [], "every plugin object is unregistered"


RAISES = '''
def pytest_humaneval_report(report, config):
    report["team"] = {"half": "written"}   # undone: the outputs have the report as it was
    raise ConnectionError("results store unreachable")
'''

AMENDS = '''
def pytest_humaneval_report(report, config):
    report["team"] = {"uploaded": True}
    report["run"]["model"] = "team/model-7"
'''


def junit_properties(path):
    return {p.get("name"): p.get("value") for p in ET.parse(path).getroot().iter("property")}


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_raising_report_hook_loses_nothing(pytester, workers):
    """A report hook that raises (an upload to a store that cannot be reached) is named in the terminal section
    and a warning, every output is written from the report as it was, the results file gets its usual mode
    back, and the session exits 3: no traceback, no lost run."""
    pytester.makeconftest(RAISES)
    (pytester.path / "mock.yaml").write_text(MOCK)
    result = pytester.runpytest("--humaneval-config", "mock.yaml", *OUTPUTS, *workers, *NO_CACHE)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR, out
    assert "Traceback" not in out + result.stderr.str() and "INTERNALERROR" not in out
    result.stdout.fnmatch_lines([
        "*PytestWarning: pytest_humaneval_report failed in conftest.py: ConnectionError: results store unreachable*",
        "REPORT HOOK FAILED in conftest.py: ConnectionError: results store unreachable (every output is written "
        "without its changes; the session fails)",
        "HumanEval pass@1 0.667  coverage 3/3  *",
    ])
    report = read_report(pytester.path / "r.json", TEAM_KEYS)
    assert "team" not in report and report["measurements"]["human-eval.pass_at_1"]["value"] == pytest.approx(2 / 3)
    assert "0.667" in (pytester.path / "r.md").read_text()
    assert "0.667" in (pytester.path / "r.html").read_text()
    assert junit_properties(pytester.path / "j.xml")["human-eval.pass_at_1"] == str(2 / 3)
    rows = (pytester.path / "r.jsonl").read_text().splitlines()
    assert len(rows) == 3
    mode = stat.S_IMODE(os.stat(pytester.path / "r.jsonl").st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask, oct(mode)  # not left readable by its owner alone


def test_raising_report_hook_quiet_and_others_still_called(pytester):
    """Each plugin's implementation is called on its own: one that raises neither stops the others nor undoes
    what they did; under -q the failure is still one line of the section."""
    pytester.makepyfile(teamplugin=AMENDS)
    pytester.syspathinsert()
    pytester.makeconftest(RAISES)
    (pytester.path / "mock.yaml").write_text(MOCK)
    result = pytester.runpytest("--humaneval-config", "mock.yaml", "-p", "teamplugin", "-q", "-p", "no:xdist",
                                *OUTPUTS, *NO_CACHE)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["REPORT HOOK FAILED in conftest.py: ConnectionError: results store unreachable*"])
    assert "REPORT HOOK FAILED in teamplugin" not in result.stdout.str()
    report = read_report(pytester.path / "r.json", TEAM_KEYS)
    assert report["team"] == {"uploaded": True} and report["run"]["model"] == "team/model-7"
    assert junit_properties(pytester.path / "j.xml")["human-eval.model"] == "team/model-7"


def test_raising_report_hook_under_warnings_as_errors(pytester):
    """With warnings made errors, the hook's warning does not end the session either: the section says it."""
    pytester.makeconftest(RAISES)
    (pytester.path / "mock.yaml").write_text(MOCK)
    result = pytester.runpytest("--humaneval-config", "mock.yaml", "--humaneval-report", "r.json", "-p",
                                "no:xdist", "-W", "error::pytest.PytestWarning", *NO_CACHE)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR, "a warning made an error does not end the session"
    result.stdout.fnmatch_lines(["REPORT HOOK FAILED in conftest.py*"])
    assert (pytester.path / "r.json").is_file()


def test_report_amendment_reaches_every_file(pytester):
    """What a hook changes in the report is in every file written from it (report, Markdown, HTML, JUnit); the
    terminal section keeps the run's own figures."""
    pytester.makeconftest(AMENDS + '''
    report["measurements"]["human-eval.pass_at_1"]["value"] = 0.125
''')
    (pytester.path / "mock.yaml").write_text(MOCK)
    result = pytester.runpytest("--humaneval-config", "mock.yaml", "-p", "no:xdist", *OUTPUTS, *NO_CACHE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = read_report(pytester.path / "r.json", TEAM_KEYS)
    assert report["run"]["model"] == "team/model-7" and report["team"] == {"uploaded": True}
    markdown = (pytester.path / "r.md").read_text()
    assert "## HumanEval: team/model-7" in markdown and "| pass@1 | 0.125 |" in markdown
    html = (pytester.path / "r.html").read_text()
    assert '<span id="model">team/model-7</span>' in html and "0.125" in html
    properties = junit_properties(pytester.path / "j.xml")
    assert properties["human-eval.model"] == "team/model-7" and properties["human-eval.pass_at_1"] == "0.125"
    result.stdout.fnmatch_lines(["HumanEval pass@1 0.667  coverage 3/3  *"])  # the measured score


def test_output_plugins_only_when_asked(pytester):
    """Each output has its own plugin, and only when asked."""
    pytester.makeconftest('''
import json, pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    names = sorted(name for name, _ in session.config.pluginmanager.list_name_plugin()
                   if name.startswith("humaneval-"))
    with open("plugins.json", "w") as handle:
        json.dump(names, handle)
''')
    (pytester.path / "mock.yaml").write_text(MOCK)
    pytester.runpytest("--humaneval-config", "mock.yaml", "-p", "no:xdist", *NO_CACHE)
    bare = json.loads((pytester.path / "plugins.json").read_text())
    assert bare == ["humaneval-collector", "humaneval-quiet", "humaneval-quiet-lines", "humaneval-section"]
    pytester.runpytest("--humaneval-config", "mock.yaml", "-p", "no:xdist", *OUTPUTS, *NO_CACHE)
    every = json.loads((pytester.path / "plugins.json").read_text())
    assert sorted(set(every) - set(bare)) == ["humaneval-html", "humaneval-junit", "humaneval-markdown",
                                              "humaneval-report", "humaneval-results"]
    pytester.runpytest("--humaneval-config", "mock.yaml", "-p", "no:xdist", "--collect-only", *OUTPUTS, *NO_CACHE)
    assert json.loads((pytester.path / "plugins.json").read_text()) == [], "--collect-only writes nothing"


def test_report_hook_wrong_argument_refused(pytester):
    """A report hook with a wrong argument is refused by pytest."""
    pytester.makeconftest("def pytest_humaneval_report(report, session):\n    pass\n")
    (pytester.path / "mock.yaml").write_text(MOCK)
    result = pytester.runpytest("--humaneval-config", "mock.yaml", *NO_CACHE)
    assert result.ret != 0
    assert "Argument(s) {'session'} are declared in the hookimpl but can not be found in the hookspec" in \
        result.stdout.str() + result.stderr.str()


# -- work at the right hook: configure validates, session start works ---------------------------------------

CHILDREN = '''
import json, os, pytest

def children():
    """Processes whose parent is this one (the sandbox's supervisor, its fork server)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                found.append(int(entry))
    return found

@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    with open("children.json", "w") as handle:
        json.dump(children(), handle)
'''


@pytest.mark.slow
@pytest.mark.parametrize("listing", [None, "--collect-only", "--fixtures"], ids=["run", "collect-only", "fixtures"])
def test_collect_only_starts_nothing(pytester, monkeypatch, listing):
    """--collect-only (and --fixtures, which collects too) starts no sandbox and computes no expected outputs."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.path / "xdg"))  # an empty cache: nothing computed yet
    pytester.makeconftest(CHILDREN)
    (pytester.path / "plus.yaml").write_text(
        "target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, limit: 2}\n")
    args = (listing,) if listing else ()
    result = pytester.runpytest_subprocess("--humaneval-config", "plus.yaml", "-p", "no:xdist", *args, *NO_CACHE)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    started = json.loads((pytester.path / "children.json").read_text())
    expected = list((pytester.path / "xdg").rglob("*.blob*")) + list((pytester.path / "xdg").glob("*/expected/*/*"))
    if listing:
        if listing == "--collect-only":
            result.stdout.fnmatch_lines(["*<HumanEvalItem HumanEval/1?0?>*"])
        assert started == [] and expected == []
        assert "expected outputs" not in result.stdout.str() + result.stderr.str()
    else:  # the control: a run starts its sandbox by the time it collects, and computes the expected outputs
        assert len(started) >= 1 and expected != []
        result.stdout.fnmatch_lines(["humaneval: expected outputs of 2 task(s) computed in * s, cached in *"])
