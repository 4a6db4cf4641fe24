"""Fixtures shared by the whole suite (no ``pytest_plugins`` here: see ``addopts`` in pyproject.toml), the hooks of
the environment markers (``needs_root`` and the others: ``environment.py``) and of the test tiers (the ``slow``
marker and ``--run-slow``: ``tiers.py``), imported to be registered."""

import os

import environment
import pytest
import tiers
from environment import (  # noqa: F401 (hooks: pytest finds them in this module)
    pytest_configure,
    pytest_configure_node,
    pytest_sessionfinish,
)

from pytest_humaneval import sandbox


def pytest_addoption(parser: pytest.Parser) -> None:
    environment.pytest_addoption(parser)
    tiers.pytest_addoption(parser)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return environment.pytest_report_header(config) + tiers.pytest_report_header(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the tier first: a slow test this session leaves out is skipped as such, whatever the machine lacks
    # (its skip comes first, and a skip for a need --require-env names would fail the session)
    tiers.pytest_collection_modifyitems(config, items)
    environment.pytest_collection_modifyitems(config, items)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    environment.pytest_terminal_summary(terminalreporter, config)
    tiers.pytest_terminal_summary(terminalreporter, config)


def _started_isolation() -> tuple[str, str]:
    box = sandbox.Sandbox("auto").start()
    try:
        return box.isolation, box.isolation_reason
    finally:
        box.close()


@pytest.fixture(scope="session")
def namespaces() -> str:
    """The isolation a sandbox started here applies, when it is one of the namespace modes (else a skip)."""
    isolation, reason = _started_isolation()
    if not isolation.startswith("namespaces"):
        pytest.skip(f"needs_namespaces: the sandbox started without namespace isolation: {reason}")
    return isolation


@pytest.fixture(scope="session")
def root_namespaces() -> str:
    """As root, the namespace path with a uid of the candidates' own (else a skip)."""
    if os.geteuid() != 0:
        pytest.skip("needs_root: the namespace path with a uid of the candidates' own")
    isolation, reason = _started_isolation()
    if isolation != "namespaces":
        pytest.skip(f"needs_namespaces: namespace isolation as root is not available here: {reason}")
    return isolation


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, with pytest-rerunfailures left out of the sessions it runs unless a test asks for it.

    Under xdist that plugin's controller serves its status over a socket, one thread per worker connection;
    up to 16.6 (the newest that supports pytest 7.4) the thread reads the closed socket in a busy loop after the
    session ends. Dozens of in-process ``-n 2`` sessions then leave dozens of spinning threads in the test
    process: the floors run took 3.5 times as long. The test of ``--reruns`` unsets the variable again."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:rerunfailures")  # pytester clears the variable: set after it
    return pytester
