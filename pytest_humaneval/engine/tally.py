"""The tally of a run: one record a sample, the judge's ``Verdict``, keyed by (task_id, sample), as verdicts arrive
from wherever they were judged; each sample's results row (``schema.ResultRow``), and what the summary counts.
No pytest import: the pytest front's collector (``session/summary.py``) feeds it from the reports it sees.

Every key is O(1) work, so a 164,000-sample run tallies in linear time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from ..plan import GenerationRecord, Plan, Sample
from ..scoring.metrics import Summary, summarize
from ..scoring.schema import ResultRow
from .verdict import Status, Verdict

__all__ = ["OUTPUT_FIELDS", "Key", "Tally"]

Key = tuple[str, int]  # (task_id, sample)
OUTPUT_FIELDS = ("stdout", "stderr", "traceback")  # what a failing candidate printed and raised


class Tally:
    """The verdicts of a plan's samples (``use``), the first one of each (a sample is judged once)."""

    def __init__(self) -> None:
        self.samples: dict[Key, Sample] = {}
        self.positions: dict[Key, int] = {}  # a sample's place in the plan
        self.verdicts: dict[Key, Verdict] = {}
        self._outputs: dict[Key, dict[str, str]] = {}  # a failing sample's output, seen before its verdict

    def use(self, plan: Plan) -> None:
        """The plan whose samples are tallied (runtime mode: again once completions are generated)."""
        self.samples = {sample.key: sample for sample in plan.samples}
        self.positions = {sample.key: i for i, sample in enumerate(plan.samples)}

    def keep_outputs(self, key: Key | None, outputs: Mapping[str, str]) -> None:
        """What a sample's candidate printed and raised, which arrives before its verdict (``OUTPUT_FIELDS``)."""
        if key is not None and key in self.samples and outputs:
            self._outputs[key] = dict(outputs)

    def record(self, verdict: Verdict) -> Verdict | None:
        """Keep ``verdict`` (with its sample's outputs); None when the sample is not planned or has one already."""
        key = (verdict.task_id, verdict.index)
        if key not in self.samples or key in self.verdicts:
            return None
        outputs = self._outputs.pop(key, None)
        if outputs:
            verdict = dataclasses.replace(verdict, **outputs)  # type: ignore[arg-type]
        self.verdicts[key] = verdict
        return verdict

    def crashed(self, key: Key | None, what: str) -> Verdict | None:
        """The process judging this sample died: no verdict, and not for want of trying (no duration either)."""
        if key is None:
            return None
        detail = f"the xdist worker running this sample crashed, so it has no verdict ({what})"
        return self.record(Verdict(key[1], key[0], Status.HARNESS_ERROR, detail, None))

    def row(self, key: Key, why_not_run: str) -> ResultRow:
        """A sample's line of the results JSONL (and of the HTML page): its verdict's, or not_run with
        ``why_not_run`` when it has none (a sample generation never reached says why it was not)."""
        verdict = self.verdicts.get(key)
        sample = self.samples[key]
        if verdict is None:
            why = sample.not_run if sample.completion is None else None
            verdict = Verdict(key[1], key[0], Status.NOT_RUN, why or why_not_run, None)
        line: ResultRow = {"task_id": key[0], "sample": key[1], "status": verdict.status.value,
                           "passed": verdict.passed, "completion": sample.completion,
                           "duration_ms": verdict.duration_ms, "detail": verdict.detail}
        if sample.solution is not None:  # a whole program, run as written (read back as EvalPlus reads it)
            line["solution"] = sample.solution
        if sample.generation is not None:
            _runtime_fields(line, sample.generation)
        if verdict.base_status is not None:  # HumanEval+: both suites' statuses and first failing inputs
            line["base_status"], line["base_failure"] = verdict.base_status.value, verdict.base_detail or None
            line["plus_status"] = verdict.plus_status.value if verdict.plus_status is not None else None
            line["plus_failure"] = verdict.plus_detail or None
        if verdict.stdout:
            line["stdout"] = verdict.stdout
        if verdict.stderr:
            line["stderr"] = verdict.stderr
        if verdict.traceback:
            line["traceback"] = verdict.traceback
        if verdict.repeat_of is not None:  # an identical earlier sample's verdict: the sample whose execution it is
            line["repeat_of"] = verdict.repeat_of
        if verdict.impossible:
            line["original_status"] = verdict.original_status.value if verdict.original_status is not None else None
            line["impossible_category"] = verdict.impossible_category
            line["impossible_evidence"] = list(verdict.impossible_evidence)
        return line

    def summarize(self, planned: Iterable[Key], ks: Iterable[int]) -> Summary:
        """The summary of the ``planned`` samples (one without a verdict counts as not_run)."""
        return summarize(planned, self.verdicts, ks)

    def generated(self) -> list[GenerationRecord]:
        """The generation records of every sample of the plan (runtime mode only): generation covers the whole
        plan whatever -k or --lf select, and what it cost is what this run paid."""
        return [sample.generation for sample in self.samples.values() if sample.generation is not None]

    def generation_failures(self, planned: Iterable[Key]) -> list[Sample]:
        return [self.samples[key] for key in planned
                if self.samples[key].generation is not None and self.samples[key].completion is None]


def _runtime_fields(line: ResultRow, generation: GenerationRecord) -> None:
    """What the endpoint answered (runtime mode), as the results row names it."""
    line["raw"] = generation.get("raw")
    line["reasoning"] = generation.get("reasoning")
    line["finish_reason"] = generation.get("finish_reason")
    line["prompt_tokens"] = generation.get("prompt_tokens")
    line["completion_tokens"] = generation.get("completion_tokens")
    line["reasoning_tokens"] = generation.get("reasoning_tokens")
    line["generation_ms"] = generation.get("generation_ms")
    line["attempts"] = generation.get("attempts")
    line["cached"] = generation.get("cached")
