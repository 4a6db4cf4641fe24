from __future__ import annotations

import pytest

from pytest_humaneval.scoring.metrics import Outcome, pass_at_k, summarize


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (5, 2, 1, 0.4),
        (10, 8, 3, 1.0),  # n - c < k: some draw of k always contains a pass
        (4, 0, 1, 0.0),
        (4, 0, 4, 0.0),
        (1, 1, 1, 1.0),
        (200, 1, 100, 0.5),
    ],
)
def test_pass_at_k_exact_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == expected


@pytest.mark.parametrize(("n", "c", "k"), [(0, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4), (3.0, 1, 1),
                                           (3, True, 1)])
def test_pass_at_k_rejects_invalid_counts(n, c, k):
    with pytest.raises(ValueError, match="pass_at_k"):
        pass_at_k(n, c, k)


def test_coverage_worked_example():
    planned = [("T/0", 0), ("T/1", 0), ("T/2", 0)]
    outcomes = {
        ("T/0", 0): Outcome("T/0", 0, "passed", 10.0),
        ("T/1", 0): Outcome("T/1", 0, "timeout", 3000.0),
        ("T/2", 0): Outcome("T/2", 0, "not_run"),
    }
    summary = summarize(planned, outcomes, [1])
    assert summary.coverage == pytest.approx(2 / 3)
    assert summary.success_rate == pytest.approx(1 / 3)
    assert summary.attempted_success_rate == pytest.approx(1 / 2)
    assert summary.pass_at == {1: pytest.approx(1 / 3)}
    assert summary.avg_latency_ms == pytest.approx(1505.0)
    assert summary.counts == {"passed": 1, "assertion_failed": 0, "runtime_error": 0, "timeout": 1,
                              "not_run": 1, "harness_error": 0}


def test_not_run_outcomes():
    """All not run gives a null attempted rate, and missing outcomes count as not run."""
    summary = summarize([("T/0", 0), ("T/0", 1)], {("T/0", 1): Outcome("T/0", 1, "not_run")}, [1, 2])
    assert summary.counts["not_run"] == 2
    assert summary.attempted == 0
    assert summary.coverage == 0.0
    assert summary.attempted_success_rate is None
    assert summary.avg_latency_ms is None
    assert summary.pass_at == {1: 0.0, 2: 0.0}


def test_pass_at_k_is_mean_per_problem():
    """pass@k is per problem then the mean, and a harness error counts as not passed."""
    planned = [("A", 0), ("A", 1), ("B", 0), ("B", 1)]
    outcomes = {
        ("A", 0): Outcome("A", 0, "passed"),
        ("A", 1): Outcome("A", 1, "harness_error"),
        ("B", 0): Outcome("B", 0, "passed"),
        ("B", 1): Outcome("B", 1, "passed"),
    }
    summary = summarize(planned, outcomes, [1, 2])
    assert summary.problems["A"].pass_at == {1: 0.5, 2: 1.0}
    assert summary.pass_at == {1: 0.75, 2: 1.0}
    assert summary.attempted == 3


def test_unsupported_k_is_left_out():
    """A k larger than some problems' samples is left out, with a reason."""
    planned = [("A", 0), ("A", 1), ("B", 0)]
    outcomes = {key: Outcome(key[0], key[1], "passed") for key in planned}
    summary = summarize(planned, outcomes, [1, 2])
    assert summary.pass_at == {1: 1.0}
    assert "fewer than 2 samples" in summary.skipped_k[2] and "B" in summary.skipped_k[2]


@pytest.mark.parametrize(("name", "title"), [
    ("openai_humaneval", "HumanEval"), ("humaneval", "HumanEval"), ("humanevalplus", "HumanEval+"),
    ("humanevalplus-mini", "HumanEval+"), ("humanevalplus-noextreme", "HumanEval+"), ("mbppplus", "MBPP+"),
    ("mbppplus-noextreme", "MBPP+"), ("my_problems", "my_problems"), ("humanevalish", "humanevalish"), (None, "HumanEval"),
    ("humaneval-impossible", "Impossible-HumanEval"), ("humaneval-impossible-oneoff", "Impossible-HumanEval"),
])
def test_dataset_title(name, title):
    """The title a run is shown under is its dataset's own (a file of one's own by its name)."""
    from pytest_humaneval.scoring.metrics import dataset_title
    assert dataset_title(name) == title
