"""The plugin as a pytest citizen: its hooks for a team's own code, one plugin object per output, and the
public pytest API only (tests/test_layout.py checks the imports)."""

from __future__ import annotations

import json

import pytest
from sessions import NO_CACHE, read_report

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
    report = read_report(pytester.path / "r.json")
    assert calls == [{"worker": False, "pass_at_1": report["measurements"]["human-eval.pass_at_1"]["value"]}]
    assert report["team"] == {"uploaded": True}
    assert json.loads((pytester.path / "plugins-left.json").read_text()) == [], "every plugin object is unregistered"


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
