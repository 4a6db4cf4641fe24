"""The run as every part of a session sees it: its config, its plan, and what the sandbox applied. No pytest import."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import RunConfig
from ..plan import Plan
from ..sandbox import Limits

__all__ = ["Run"]


@dataclass(frozen=True)
class Run:
    config: RunConfig
    plan: Plan
    isolation: str  # what the sandbox applied: "namespaces", "namespaces-userns", "landlock", "basic",
    #                 "none (replay)" or "unavailable"
    sandbox_limits: str = ""  # how memory and processes are limited (a cgroup per sample, or rlimits)
    candidate_ids: str = ""  # which uid candidates run as, and how it was chosen
    confinement: str = ""  # what confines each candidate beyond the isolation: Landlock's ABI, seccomp

    @property
    def isolation_line(self) -> str:
        """The isolation as the summary header says it: the level, and the short names of what adds to it."""
        parts = [part.split(" (")[0] for part in self.confinement.split("; ") if part]
        if self.isolation == "landlock" and parts and parts[0].startswith("landlock"):
            return " + ".join(parts)  # "landlock ABI 7 + seccomp"
        return " + ".join([self.isolation, ", ".join(parts)]) if parts else self.isolation

    @property
    def limits(self) -> Limits:
        return Limits(timeout_s=self.config.params.timeout_s, memory_mb=self.config.params.memory_mb)
