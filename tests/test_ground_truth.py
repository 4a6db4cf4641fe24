"""Reward functions over an RL set's ground truth that holds the tests (verl's ``prime_code`` JSON of inputs and
outputs, DeepCoder's list of tests), called as each trainer calls them: each ground truth judged as a problem of
its own, in the sandbox, by the same judge as a rows file's problems; a row that names a task goes on as before."""

from __future__ import annotations

import json

import pytest

from pytest_humaneval import rewards
from pytest_humaneval.data.ground_truth import holds_tests, problem_from_ground_truth
from pytest_humaneval.engine.verifier import GROUND_TRUTH, Verifier, VerifierError

# A problem the project wrote: the sum of a line of integers (standard input), and a call-based one.
SUM = json.dumps({"inputs": ["1 2 3\n", "10 -4\n", "7\n"], "outputs": ["6\n", "6\n", "7\n"]})
SUM_RIGHT = "```python\nprint(sum(map(int, input().split())))\n```"
SUM_WRONG = "Here it is:\n```python\nprint(max(map(int, input().split())))\n```"  # right on one test only
PAIR = json.dumps({"fn_name": "pairSum", "inputs": [[[1, 2, 3], 5], [[4, 4], 8], [[1], 2]],
                   "outputs": [True, True, False]})
PAIR_RIGHT = ("```python\nclass Solution:\n    def pairSum(self, nums, target):\n"
              "        seen = set()\n        for x in nums:\n            if target - x in seen:\n"
              "                return True\n            seen.add(x)\n        return False\n```")
PAIR_WRONG = "```python\nclass Solution:\n    def pairSum(self, nums, target):\n        return True\n```"
DEEPCODER = [{"input": "1 2 3\n", "output": "6\n", "testtype": "stdin"},
             {"input": "5 5\n", "output": "10\n", "testtype": "stdin"}]


def test_what_holds_tests():
    assert holds_tests(SUM) and holds_tests(json.loads(PAIR)) and holds_tests(DEEPCODER)
    assert holds_tests(json.dumps(DEEPCODER))
    assert not holds_tests("HumanEval/0") and not holds_tests('{"task_id": "HumanEval/0"}')
    assert not holds_tests([]) and not holds_tests("{not json")
    # a row that names its task is that task's, whatever else it carries
    assert not holds_tests({"task_id": "HumanEval/0", "inputs": ["1"], "outputs": ["1"]})


def test_a_problem_is_named_by_its_tests():
    one, same = problem_from_ground_truth(SUM, "gt"), problem_from_ground_truth(json.loads(SUM), "gt")
    assert one == same and one.task_id.startswith("truth/") and len(one.task_id) == len("truth/") + 20
    assert problem_from_ground_truth(PAIR, "gt").task_id != one.task_id


def test_verl_batch_of_prime_code_rows_beside_humaneval():
    """verl's batch manager: prime_code rows (standard input and call-based) and a HumanEval row in one batch; the
    same ground truth in several rows is one problem of the ground-truth Verifier."""
    from pytest_humaneval.data.dataset import load_problems

    _, problems = load_problems()
    humaneval = problems[0]
    scores = rewards.compute_score_batch(
        ["codecontests", "codecontests", "apps", "apps", "humaneval", "taco"],
        [SUM_RIGHT, SUM_WRONG, PAIR_RIGHT, PAIR_WRONG, f"```python\n{humaneval.prompt}"
         f"{humaneval.canonical_solution}```", SUM_RIGHT],
        [SUM, SUM, PAIR, PAIR, humaneval.task_id, SUM],
        [{"index": i} for i in range(6)])
    assert scores == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]
    verifier = rewards.verifier_for(GROUND_TRUTH)
    assert {problem_from_ground_truth(SUM, "gt").task_id, problem_from_ground_truth(PAIR, "gt").task_id} <= \
        set(verifier.problems)


def test_single_call_and_deepcoder_tests():
    assert rewards.compute_score("deepcoder", SUM_RIGHT, DEEPCODER) == 1.0
    assert rewards.compute_score("deepcoder", SUM_WRONG, json.dumps(DEEPCODER)) == 0.0


@pytest.mark.parametrize("answer", [
    "```python\nimport sys\nsys.exit(0)\n```",  # exit 0 before any output
    "```python\nprint('6')\n```",  # the first test's answer, printed blind
    "```python\nimport os\nos._exit(0)\n```",
    "no code at all",
])
def test_exploits_earn_nothing(answer):
    assert rewards.compute_score("codecontests", answer, SUM) == 0.0


def test_trl_and_openrlhf_take_the_tests_column():
    """TRL: the dataset's column holds each row's tests; OpenRLHF: the labels do."""
    reward = rewards.trl_reward(GROUND_TRUTH, column="ground_truth")
    assert reward(completions=[[{"role": "assistant", "content": SUM_RIGHT}], SUM_WRONG],
                  ground_truth=[SUM, SUM], prompts=["p", "p"]) == [1.0, 0.0]
    openrlhf = rewards.openrlhf_reward(GROUND_TRUTH)
    out = openrlhf(["Q" + PAIR_RIGHT + "<|im_end|>", "Q" + PAIR_WRONG], ["Q", "Q"], [PAIR, PAIR])
    assert list(out["rewards"]) == [1.0, 0.0]


def test_bad_ground_truth_is_named():
    bad = json.dumps({"inputs": ["1\n", "2\n"], "outputs": ["1\n"]})
    with pytest.raises(VerifierError, match=r"^sample 1: ground_truth: outputs: expected one per input \(2\), "
                                            r"found 1$"):
        rewards.compute_score_batch(["apps", "apps"], [SUM_RIGHT, SUM_RIGHT], [SUM, bad])
    with pytest.raises(VerifierError, match=r"^sample 1: ground_truth: outputs"):  # its place in the whole batch
        rewards.compute_score_batch(["humaneval", "apps"], [SUM_RIGHT, SUM_RIGHT], ["HumanEval/0", bad])


def test_verifier_takes_problems_added():
    """The library: a ground-truth Verifier knows no problem at first, judges those added, and refuses another
    problem under a known task id."""
    with Verifier(GROUND_TRUTH, workers=1) as verifier:
        assert verifier.problems == {}
        with pytest.raises(VerifierError, match="expected a task of ground-truth"):
            verifier.verify([("truth/x", "print(1)")])
        problem = problem_from_ground_truth(SUM, "gt")
        verifier.add_problems([problem, problem])
        found = verifier.verify([{"task_id": problem.task_id, "solution": "print(sum(map(int, input().split())))"}])
        assert found[0].passed
        other = problem_from_ground_truth(PAIR, "gt")
        with pytest.raises(VerifierError, match=r"add_problems: truth/\w+: expected a new task id or the same "
                                                r"problem, found another"):
            verifier.add_problems([type(other)(**{**other.__dict__, "task_id": problem.task_id})])
