"""What the controller keeps of a sample once its reports are logged: a session of n = 1,000 holds 164,000 items,
so nothing of a sample that only its reports needed stays (bench/peak_rss.py measures the memory)."""

from __future__ import annotations

import json


def test_a_logged_sample_leaves_only_its_item_and_call_report(pytester):
    pytester.makeconftest("""
        import json, pytest

        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(session):
            stats = session.config.pluginmanager.get_plugin("terminalreporter").stats
            items = [item for item in session.items if hasattr(item, "sample")]
            kept = {key: sum(getattr(report, "humaneval_sample", False) for report in reports)
                    for key, reports in stats.items()}
            with open("kept.json", "w") as out:
                json.dump({"stats": kept, "results": sum(item.result is not None for item in items),
                           "properties": sum(len(item.user_properties) for item in items),
                           "items": len(items)}, out)
    """)
    pytester.makefile(".yaml", run="target: {mode: mock}\nparams: {execute: true, limit: 3, n: 2}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--junitxml", "junit.xml", "-o", "junit_family=xunit1",
                                "-p", "no:xdist")
    result.assert_outcomes(passed=6)
    kept = json.loads((pytester.path / "kept.json").read_text())
    assert kept["items"] == 6
    assert kept["stats"].get("", 0) == 0  # setup and teardown reports: counted, then let go
    assert kept["stats"]["passed"] == 6  # the call reports, which pytest's counts and summaries read
    assert kept["results"] == 0 and kept["properties"] == 0
    # ... and every output still has what it had: the verdicts reached JUnit before they were let go
    assert (pytester.path / "junit.xml").read_text().count('name="humaneval.status" value="passed"') == 6
