"""The run as every part of a session sees it: its config, its plan, and what the sandbox applied. No pytest import."""

from __future__ import annotations

from dataclasses import dataclass

from .completions.sources import Plan
from .config import RunConfig
from .sandbox import Limits

__all__ = ["Run"]


@dataclass(frozen=True)
class Run:
    config: RunConfig
    plan: Plan
    isolation: str  # what the sandbox applied: "namespaces", "namespaces-userns", "basic",
    #                 "none (replay)" or "unavailable"
    sandbox_limits: str = ""  # how memory and processes are limited (a cgroup per sample, or rlimits)
    candidate_ids: str = ""  # which uid candidates run as, and how it was chosen

    @property
    def limits(self) -> Limits:
        return Limits(timeout_s=self.config.params.timeout_s, memory_mb=self.config.params.memory_mb)
