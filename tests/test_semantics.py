"""Honest-but-unusual completions: whatever passes under the reference's semantics must pass in the sandbox.

Each corpus entry is a correct completion of a real HumanEval problem written the way models write them
(imports inside the body, helpers defined after the function, classes, numpy return types, a __main__ block,
prints, temp files, threads). It runs twice: the reference way (exec of the same program with empty globals
in a plain subprocess) and in the sandbox with the isolation this machine offers. Both must pass. A candidate's own
MemoryError, too, reaches the test as it would under the reference.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from programs import sample

from pytest_humaneval import sandbox
from pytest_humaneval.data.dataset import load_problems
from pytest_humaneval.sandbox import Limits, Sandbox, Status

CORPUS = {
    "itertools": ("HumanEval/0", "    import itertools\n"
                  "    return any(abs(a - b) < threshold for a, b in itertools.combinations(numbers, 2))\n"),
    "math": ("HumanEval/2", "    import math\n    return math.modf(number)[0]\n"),
    "numpy_float_return": ("HumanEval/4", "    import numpy as np\n    values = np.array(numbers)\n"
                           "    return np.mean(np.abs(values - values.mean()))\n"),
    "numpy_bool_return": ("HumanEval/3", "    import numpy as np\n"
                          "    return np.any(np.cumsum([0] + operations) < 0)\n"),
    "helper_after_function": ("HumanEval/13", "    return _gcd(a, b)\n\n\ndef _gcd(a, b):\n"
                              "    import math\n    return math.gcd(a, b)\n"),
    "helper_class": ("HumanEval/12", "    class Best:\n        def __init__(self):\n            self.value = None\n\n"
                     "        def offer(self, s):\n"
                     "            if self.value is None or len(s) > len(self.value):\n"
                     "                self.value = s\n\n"
                     "    best = Best()\n    for s in strings:\n        best.offer(s)\n    return best.value\n"),
    "dataclass": ("HumanEval/12", "    from dataclasses import dataclass\n\n    @dataclass\n    class Pick:\n"
                  "        text: str\n\n"
                  "    picks = [Pick(s) for s in strings]\n"
                  "    return max(picks, key=lambda p: len(p.text)).text if picks else None\n"),
    "collections_counter": ("HumanEval/16", "    import collections\n"
                            "    return len(collections.Counter(string.lower()))\n"),
    "re_lookahead": ("HumanEval/18", "    import re\n    if not substring:\n        return 0\n"
                     "    return len(re.findall('(?=' + re.escape(substring) + ')', string))\n"),
    "hashlib": ("HumanEval/162", "    import hashlib\n    return hashlib.md5(text.encode()).hexdigest() if text else None\n"),
    "main_block_does_not_run": ("HumanEval/23", "    return len(string)\n\n\nif __name__ == '__main__':\n"
                                "    raise SystemExit('the __main__ block must not run')\n"),
    "namedtuple_return": ("HumanEval/8", "    from collections import namedtuple\n    import math\n"
                          "    Result = namedtuple('Result', 'total product')\n"
                          "    return Result(sum(numbers), math.prod(numbers))\n"),
    "defaultdict_return": ("HumanEval/111", "    from collections import defaultdict\n"
                           "    counts = defaultdict(int)\n    for word in test.split():\n"
                           "        counts[word] += 1\n"
                           "    top = max(counts.values(), default=0)\n"
                           "    return {k: v for k, v in counts.items() if v == top}\n"),
    "lru_cache_recursion": ("HumanEval/55", "    from functools import lru_cache\n\n    @lru_cache(None)\n"
                            "    def go(k):\n        return k if k < 2 else go(k - 1) + go(k - 2)\n\n"
                            "    return go(n)\n"),
    "prints_debug_output": ("HumanEval/23", "    print('debug:', repr(string))\n    return len(string)\n"),
    "temp_file": ("HumanEval/23", "    import tempfile\n    with tempfile.TemporaryFile('w+') as f:\n"
                  "        f.write(string)\n        f.seek(0)\n        return len(f.read())\n"),
    "threads": ("HumanEval/23", "    from concurrent.futures import ThreadPoolExecutor\n"
                "    with ThreadPoolExecutor(4) as pool:\n        return sum(pool.map(lambda c: 1, string))\n"),
}


@pytest.fixture(scope="module")
def box():
    box = Sandbox("auto").start()
    yield box
    box.close()


@pytest.fixture(scope="module")
def problems():
    return {p.task_id: p for p in load_problems()[1]}


def reference_passes(program: str) -> bool:
    """The reference's semantics, unsandboxed: exec of the program with empty globals in a fresh process."""
    runner = "import sys\nexec(compile(sys.stdin.read(), '<humaneval>', 'exec'), {})\n"
    done = subprocess.run([sys.executable, "-c", runner], input=program, text=True, capture_output=True,
                          timeout=30)
    return done.returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_unusual_completion_passes(box, problems, name):
    """An honest, unusual completion passes as under the reference."""
    if "numpy" in name:
        pytest.importorskip("numpy")
    task_id, completion = CORPUS[name]
    problem = problems[task_id]
    program = sandbox.build_program(problem.prompt, completion, problem.test, problem.entry_point)
    assert reference_passes(program), "the corpus entry must be correct under the reference's semantics"
    result = box.run(sandbox.Program(problem.prompt, completion, problem.test, problem.entry_point),
                     Limits(timeout_s=10.0))
    assert result.status is Status.PASSED, (box.isolation, result.detail, result.traceback)


# A MemoryError is an exception like any other when the candidate raises it: the reference's test sees it, with its
# message. On 5a2097b the judge took it for its own memory running out: the message was lost and a test that expects
# the exception failed.
_RAISES_MEMORY_ERROR = "def f():\n    raise MemoryError('boom')\n"


def test_candidate_memory_error_is_its_exception(box):
    """A candidate's own MemoryError reaches the test as itself, with its message."""
    uncaught = box.run(sample(_RAISES_MEMORY_ERROR, "def check(candidate):\n    candidate()\n"), Limits(timeout_s=10.0))
    assert uncaught.status is Status.RUNTIME_ERROR
    assert uncaught.detail.startswith("MemoryError: boom"), uncaught.detail
    expected = ("def check(candidate):\n    try:\n        candidate()\n    except MemoryError as exc:\n"
                "        assert str(exc) == 'boom', exc\n    else:\n        raise AssertionError('no MemoryError')\n")
    program = sample(_RAISES_MEMORY_ERROR, expected)
    assert reference_passes(sandbox.build_program(program.prompt, program.completion, program.test, "f"))
    caught = box.run(program, Limits(timeout_s=10.0))
    assert caught.status is Status.PASSED, caught.detail


def test_judge_out_of_memory_is_reported_as_such(box):
    """The judge's own memory running out on what the candidate returned fails the sample, and says so."""
    # The test repeats the returned string 2**33 times: 16 GiB asked for at once, past what a judge may take for a
    # sample of 256 MiB, so the allocation fails before any of it is used.
    program = sample("def f():\n    return 'ab'\n", "def check(candidate):\n    assert candidate() * (1 << 33)\n")
    result = box.run(program, Limits(timeout_s=10.0, memory_mb=256))
    assert result.status is Status.RUNTIME_ERROR, result.detail
    assert result.detail.startswith("MemoryError: what the candidate returned took more memory in the judge"), \
        result.detail
