"""What the controller hands each xdist worker: the validated run config, as JSON for ``workerinput``.

A worker never reads the YAML file or the files it names (samples, dataset, baseline): on a remote host
(``--tx ssh=...``) or another directory (``--tx popen//chdir=...``) they need not exist, and reading them again
could give a worker another config than the controller's. No pytest import.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, Union

from ..config import RunConfig

__all__ = ["CONFIG_INPUT", "PLAN_INPUT", "config_from_json", "config_to_json"]

# The workerinput keys (values: JSON text): the run config, and the plan with its completions.
CONFIG_INPUT = "humaneval_config"
PLAN_INPUT = "humaneval_plan"


def config_to_json(config: RunConfig) -> str:
    return json.dumps(_plain(config))


def config_from_json(text: str) -> RunConfig:
    config: RunConfig = _build(RunConfig, json.loads(text))
    return config


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _build(kind: Any, data: Any) -> Any:
    """``data`` (plain JSON) back into the annotated type ``kind`` of a config field."""
    if data is None:
        return None
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (Union, types.UnionType):
        options = [arg for arg in args if arg is not type(None)]
        return _build(options[0], data) if len(options) == 1 else data
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{field.name: _build(hints[field.name], data[field.name])
                       for field in dataclasses.fields(kind) if field.init and field.name in data})
    if kind is Path:
        return Path(data)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], item) for item in data)
        return tuple(_build(arg, item) for arg, item in zip(args, data, strict=False))
    return data
