"""Uncertainty and paired comparison for pass@k. Pure: no pytest, no I/O, deterministic.

Methods (also in docs/ci-and-reports.md):
- Interval for a pass@k mean over problems: Wilson score interval when it is a plain proportion (every problem
  has exactly one sample and k = 1); otherwise a percentile bootstrap over problems, BOOTSTRAP_RESAMPLES
  resamples from a fixed seed, so the same data always gives the same interval.
- Paired comparison with a baseline, per problem on the pass@1 estimate c/n: regressions (the baseline solved it
  more often), improvements, the mean difference with a paired-bootstrap interval, and a one-sided test of
  "the new run is worse": exact McNemar (binomial on the discordant problems) when both runs have one sample
  per problem, otherwise the paired bootstrap's share of resampled mean differences that are >= 0.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from ..data.dataset import natural_key
from .schema import ComparisonSection, IntervalDict

__all__ = ["BOOTSTRAP_RESAMPLES", "SEED", "Comparison", "Interval", "bootstrap_mean_interval", "compare",
           "mcnemar_worse_p", "pass_at_k_interval", "wilson_interval"]

BOOTSTRAP_RESAMPLES = 2000
SEED = 20210707  # fixed: reruns on the same data give the same interval, byte for byte


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    confidence: float
    method: str

    def as_dict(self) -> IntervalDict:
        return {"low": self.low, "high": self.high, "confidence": self.confidence, "method": self.method}


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    return NormalDist().inv_cdf((1 + confidence) / 2)


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes}/{trials}")
    z = _z(confidence)
    p = successes / trials
    denominator = 1 + z * z / trials
    center = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == trials else min(1.0, center + half)
    return Interval(low, high, confidence, "wilson")


def _resampled_means(values: Sequence[float], resamples: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    size = len(values)
    means = []
    for _ in range(resamples):
        picks = rng.choices(values, k=size)
        means.append(sum(picks) / size)
    means.sort()
    return means


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    position = q * (len(sorted_values) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * (position - lower)


def bootstrap_mean_interval(values: Sequence[float], confidence: float = 0.95,
                            resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED) -> Interval:
    if not values:
        raise ValueError("need at least one value")
    _z(confidence)
    means = _resampled_means(values, resamples, seed)
    tail = (1 - confidence) / 2
    return Interval(_percentile(means, tail), _percentile(means, 1 - tail), confidence, "bootstrap")


def pass_at_k_interval(per_problem: Mapping[str, float], samples: Mapping[str, int], k: int,
                       confidence: float = 0.95) -> Interval:
    """Interval for the mean of per-problem pass@k values."""
    values = [per_problem[task] for task in sorted(per_problem)]
    if k == 1 and all(samples[task] == 1 for task in per_problem):
        return wilson_interval(round(sum(values)), len(values), confidence)
    return bootstrap_mean_interval(values, confidence)


def mcnemar_worse_p(regressions: int, improvements: int) -> float:
    """One-sided exact McNemar: P(at least this many regressions | discordant pairs split 50/50)."""
    discordant = regressions + improvements
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, i) for i in range(regressions, discordant + 1))
    return float(tail / 2 ** discordant)


@dataclass(frozen=True)
class Comparison:
    problems: int
    baseline_pass_at_1: float
    new_pass_at_1: float
    mean_difference: float  # new - baseline
    interval: Interval
    test: str
    p_worse: float  # one-sided p-value for "the new run is worse"
    regressions: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)

    @property
    def drop(self) -> float:
        return self.baseline_pass_at_1 - self.new_pass_at_1

    def significant(self, confidence: float) -> bool:
        return self.p_worse < 1 - confidence

    def as_dict(self) -> ComparisonSection:
        return {"problems": self.problems, "baseline_pass_at_1": self.baseline_pass_at_1,
                "new_pass_at_1": self.new_pass_at_1, "mean_difference": self.mean_difference,
                "interval": self.interval.as_dict(), "test": self.test, "p_worse": self.p_worse,
                "regressions": self.regressions, "improvements": self.improvements}


def compare(baseline: Mapping[str, tuple[int, int]], new: Mapping[str, tuple[int, int]],
            confidence: float = 0.95) -> Comparison:
    """Paired comparison over the problems both runs have; each maps task_id -> (n, c)."""
    common = sorted(set(baseline) & set(new), key=natural_key)
    if not common:
        raise ValueError("the two runs share no problem")
    base_rates = {t: baseline[t][1] / baseline[t][0] for t in common}
    new_rates = {t: new[t][1] / new[t][0] for t in common}
    diffs = [new_rates[t] - base_rates[t] for t in common]
    regressions = [t for t in common if new_rates[t] < base_rates[t]]
    improvements = [t for t in common if new_rates[t] > base_rates[t]]
    interval = bootstrap_mean_interval(diffs, confidence)
    if all(baseline[t][0] == 1 and new[t][0] == 1 for t in common):
        test, p_worse = "exact McNemar (one-sided)", mcnemar_worse_p(len(regressions), len(improvements))
    else:
        means = _resampled_means(diffs, BOOTSTRAP_RESAMPLES, SEED)
        test = "paired bootstrap over problems (one-sided)"
        p_worse = sum(1 for m in means if m >= 0) / len(means)
    return Comparison(
        problems=len(common),
        baseline_pass_at_1=sum(base_rates.values()) / len(common),
        new_pass_at_1=sum(new_rates.values()) / len(common),
        mean_difference=sum(diffs) / len(common),
        interval=interval, test=test, p_worse=p_worse,
        regressions=regressions, improvements=improvements,
    )
