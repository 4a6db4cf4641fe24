"""Config-time warnings that point at the user's config file, not at the plugin.

``config.issue_config_time_warning`` places a warning at a Python frame, so pytest's summary named
``pytest_humaneval/plugin.py:197`` and printed the plugin's own source line for a setting of the user's YAML.
:func:`warn_at` places it at the config file and the line of the key it is about (pytest's summary then shows
that line), honouring the user's ``filterwarnings`` and ``-W`` as pytest's own config-time warnings do.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

__all__ = ["line_of", "warn_at"]


def line_of(path: Path, key: str) -> int:
    """The line of ``key`` (dotted: ``params.protocol``) in the YAML file, by its last part; 1 if not found."""
    name = key.rpartition(".")[2]
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    pattern = re.compile(rf"(^|[\s{{,]){re.escape(name)}\s*:")
    return next((number for number, line in enumerate(lines, 1) if pattern.search(line)), 1)


def warn_at(config: pytest.Config, text: str, path: Path, key: str) -> None:
    if config.pluginmanager.is_blocked("warnings"):
        return
    line = line_of(path, key)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always", pytest.PytestConfigWarning)
        ini = config.getini("filterwarnings")
        command_line = getattr(config.known_args_namespace, "pythonwarnings", None) or []
        for spec in [*ini, *command_line]:  # the later one wins, as in pytest
            _apply(spec)
        warnings.warn_explicit(pytest.PytestConfigWarning(text), pytest.PytestConfigWarning, str(path), line,
                               module="pytest_humaneval")
    for record in records:
        config.hook.pytest_warning_recorded.call_historic(kwargs={
            "warning_message": record, "when": "config", "nodeid": "", "location": (str(path), line, key)})


def _apply(spec: str) -> None:
    """One ``action:message:category:module:lineno`` filter (pytest's form), as far as it can be read."""
    parts = [part.strip() for part in spec.split(":")] + [""] * 5
    action, message, category, module, lineno = parts[:5]
    kind: type[Warning] = Warning
    if category:
        where, _, name = category.rpartition(".")
        try:
            found = getattr(importlib.import_module(where or "builtins"), name)
        except (ImportError, AttributeError, ValueError):
            return
        if not (isinstance(found, type) and issubclass(found, Warning)):
            return
        kind = found
    try:
        warnings.filterwarnings(action or "default", message, kind, module,  # type: ignore[arg-type]  # checked
                                int(lineno) if lineno else 0)                  # by warnings itself
    except (ValueError, AssertionError):
        pass
