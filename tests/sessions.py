"""Shared by the tests that run real pytest sessions with pytester."""

from __future__ import annotations

import json
from pathlib import Path

# The test process imported pytest_humaneval already, so in-process runs cannot assertion-rewrite it: not news.
QUIET_REWRITE = ("-W", "ignore::pytest.PytestAssertRewriteWarning")
NO_CACHE = ("-p", "no:cacheprovider", *QUIET_REWRITE)


def read_report(path: Path) -> dict:
    return json.loads(path.read_text())
