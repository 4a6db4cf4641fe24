"""The plugin's hooks: what a ``conftest.py`` or a plugin of a team's own can implement, without a fork.

Registered by ``pytest_addhooks``; pytest checks every implementation's argument names against these. ::

    # conftest.py: a model that answers in <solution> tags
    import re

    def pytest_humaneval_extract(answer, entry_point, prompt):
        found = re.search(r"<solution>(.*?)</solution>", answer, re.DOTALL)
        return found.group(1) if found else None   # None: the plugin's own rule

    # conftest.py: every finished run's report to the team's store
    def pytest_humaneval_report(report, config):
        upload(report)   # the dict written by --humaneval-report, before any output is written;
                         # an error here is reported, and every output still written
"""

from __future__ import annotations

import pytest

from ..scoring.schema import Report

__all__ = ["pytest_humaneval_extract", "pytest_humaneval_report"]


@pytest.hookspec(firstresult=True)
def pytest_humaneval_extract(answer: str, entry_point: str, prompt: str) -> str | None:
    """The code in a live model's ``answer`` (the reply's text, reasoning included), for the problem whose
    function is ``entry_point`` and whose prompt is ``prompt``; or None to leave the answer to the next
    implementation, the plugin's own rule last (docs/live-models.md, "Which code is run").

    The code returned is treated as the plugin treats the code it finds: when it defines ``entry_point`` it is a
    whole program, run as written with the prompt's imports and the helpers it uses in front of it; else it is a
    body appended to the prompt. Called on the controller, once per answer, when an answer is generated and again
    when a stored one is reused (so a changed hook applies to stored answers too); it must be a pure function of
    its arguments. A hook that raises, or returns something other than a string or None, costs that sample
    (``not_run``, with the error), never the run."""


@pytest.hookspec
def pytest_humaneval_report(report: Report, config: pytest.Config) -> None:
    """The finished run's report (the ``--humaneval-report`` JSON, as a dict), on the controller, once, at the end
    of the session, before any output is written. The files are written from the report as the implementations
    leave it: the report JSON whole, and what the Markdown, the HTML page and JUnit's suite properties show of it
    (its ``measurements``, ``run``, ``dataset``, ``counts``, ``problems``...), so a change there is in each of
    them; a key of an implementation's own is in the report JSON only. The terminal section shows the run's own
    figures, as measured, and the exit status is decided already (the gate's verdict, from the run's own figures).
    An upload sees the run as it is reported. Not called under ``--collect-only``, nor when the session stopped
    before it began (a usage error).

    Each plugin's implementation is called on its own: one that raises (an unreachable results store) loses the
    run nothing. What it changed before it raised is undone, the others are still called, every output is written
    from the report as those that succeeded left it, the terminal section and a warning name the plugin (a
    conftest's path) and its error, and the session exits 3 (unless it was interrupted: 2)."""
