"""Fixtures shared by the whole suite (no ``pytest_plugins`` here: see ``addopts`` in pyproject.toml), and the
hooks of the environment markers (``needs_root`` and the others: ``environment.py``), imported to be registered."""

import pytest
from environment import (  # noqa: F401 (hooks: pytest finds them in this module)
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_configure_node,
    pytest_report_header,
    pytest_sessionfinish,
    pytest_terminal_summary,
)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, with pytest-rerunfailures left out of the sessions it runs unless a test asks for it.

    Under xdist that plugin's controller serves its status over a socket, one thread per worker connection;
    up to 16.6 (the newest that supports pytest 7.4) the thread reads the closed socket in a busy loop after the
    session ends. Dozens of in-process ``-n 2`` sessions then leave dozens of spinning threads in the test
    process: the floors run took 3.5 times as long. The test of ``--reruns`` unsets the variable again."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:rerunfailures")  # pytester clears the variable: set after it
    return pytester
