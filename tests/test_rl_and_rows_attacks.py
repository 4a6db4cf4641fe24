"""Attacks on the reward functions over RL ground truth, LiveCodeBench's releases and the comparison rules, each
a test of the guarantee it broke (each failed on the code it was found on, by an attacker helper):

- a Verifier's sandboxes outlive the thread that started them (PR_SET_PDEATHSIG fires when the *thread* that
  forked a supervisor ends, so every supervisor is forked by one long-lived thread: sandbox/harness.py _Forker):
  a sample in flight in another thread was a harness_error, which the reward functions raise by default;
- ``compare`` applies to the ground truth's problems (the reward functions', ``Verifier("ground-truth")``'s);
- float tolerance never lets a wrong count through, however it is printed: an integer expected and an integral
  value given are compared as integers (``1000001.0`` is not ``1000000`` under ``float:1e-6``);
- a LiveCodeBench mirror that compresses its replies serves the release, and a body without framing (a cut one
  cannot be told from a whole one) caches nothing;
- a ground truth nested past the JSON parser's depth is a VerifierError, never a RecursionError out of a reward
  function;
- LiveCodeBench's saved generations with a question_id that is a list or an object are one DatasetError line.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pytest_humaneval import rewards
from pytest_humaneval.completions.sources import read_samples_file
from pytest_humaneval.data import livecodebench
from pytest_humaneval.data.dataset import DatasetError
from pytest_humaneval.data.io_problems import load_io_dataset
from pytest_humaneval.engine.verdict import Status
from pytest_humaneval.engine.verifier import Verifier, VerifierError
from pytest_humaneval.sandbox import _judge

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "pytest_humaneval" / "fixtures" / "io_corpus.jsonl"


# -- a Verifier's sandboxes and the thread that started them ------------------------------------------------------

CLOSE = ("    for i, a in enumerate(numbers):\n        for j, b in enumerate(numbers):\n"
         "            if i != j and abs(a - b) < threshold:\n                return True\n    return False\n")
SLOW_CLOSE = "    import time\n    time.sleep(0.3)\n" + CLOSE  # each call 0.3 s: the sample runs for seconds


def test_a_sample_in_flight_survives_the_end_of_the_thread_that_made_the_verifier():
    """A trainer's reward function makes its kept Verifier in whichever thread calls it first (verifier_for), and
    other threads then share it. The thread that made it ending (a worker thread done with its batch) must not
    take the sandboxes with it: a sample another thread is judging then was a harness_error, 'the sandbox
    supervisor was killed from outside', which compute_score raises as RewardUnavailable by default."""
    box: dict = {}
    ready, leave = threading.Event(), threading.Event()

    def owner() -> None:
        verifier = box["verifier"] = Verifier("humaneval", workers=1, timeout_s=30)
        verifier.verify([("HumanEval/0", CLOSE)])  # its sandbox started, by this thread
        ready.set()
        leave.wait(60)

    made = threading.Thread(target=owner)
    made.start()
    assert ready.wait(120)
    verifier = box["verifier"]
    try:
        judged: dict = {}
        other = threading.Thread(target=lambda: judged.setdefault("verdicts", verifier.verify(
            [("HumanEval/0", SLOW_CLOSE)])))
        other.start()
        time.sleep(1.0)  # the slow sample is in its sandbox now
        leave.set()
        made.join()
        other.join(120)
        [verdict] = judged["verdicts"]
        assert verdict.status == Status.PASSED, verdict.detail
    finally:
        leave.set()
        verifier.close()


# -- compare over ground truth ---------------------------------------------------------------------------------

ONE = json.dumps({"inputs": ["\n"], "outputs": ["1\n"]})  # prime_code's ground truth: print 1
PRINTS_ONE_POINT_ZERO = "```python\nprint('1.0')\n```"  # right by LiveCodeBench's rule, wrong by 'exact'


def test_compare_is_applied_to_ground_truth_or_refused():
    """``compare`` is one of the reward functions' options (an unknown one is an error, 'a typo in reward_kwargs
    must not silently change a benchmark'): over ground truth that holds tests it must compare by that rule, or be
    refused; it was taken and ignored, and '1.0' scored 1.0 under compare='exact' where '1' is expected."""
    try:
        scores = rewards.compute_score_batch(["prime_code"], [PRINTS_ONE_POINT_ZERO], [ONE], compare="exact",
                                             workers=1)
    except VerifierError:
        return  # refused, saying so: fine
    assert scores == [0.0]


def test_a_ground_truth_verifier_applies_its_compare_or_refuses_it():
    from pytest_humaneval.data.ground_truth import problem_from_ground_truth

    try:
        verifier = Verifier("ground-truth", compare="exact", workers=1)
    except VerifierError:
        return
    with verifier:
        problem = problem_from_ground_truth(ONE, "gt")
        verifier.add_problems([problem])
        [verdict] = verifier.verify([{"task_id": problem.task_id, "solution": "print('1.0')\n"}])
    assert verdict.status == Status.ASSERTION_FAILED, verdict.detail


# -- float tolerance and integers ------------------------------------------------------------------------------

@pytest.mark.parametrize(("got", "expected", "rule"), [
    ("1000001.0", "1000000", "float:1e-6"),  # print(n * (n + 1) / 2): Python's / prints a float
    ("1000001e0", "1000000", "float:1e-6"),
    ("1000000000000000001.0", "1000000000000000000", "float:rel=1e-6"),
    ("1.2345678901234568e+18", "1234567890123456789", "float:1e-6"),  # a float's rounding of the right count
])
def test_an_integer_expected_is_not_matched_by_another_number_printed_as_a_float(got, expected, rule):
    """docs/datasets.md: a count off by one is wrong however large the tolerance and however it is printed. A
    program that printed a wrong count with '.0' or an exponent passed by the relative tolerance."""
    assert _judge._compare(got, expected, rule) is not None


def test_the_same_integer_printed_as_a_float_stays_equal():
    """(What the fix keeps: 3.0 is 3; and a value that is not integral is within the tolerance of an integer or not,
    as a real-valued answer that happens to be whole is expected.)"""
    assert _judge._compare("3.0", "3", "float:1e-6") is None
    assert _judge._compare("1000000.0", "1000000", "float:1e-6") is None
    assert _judge._compare("2.9999999997", "3", "float:1e-6") is None
    assert _judge._compare("2.99", "3", "float:1e-6") is not None


# -- LiveCodeBench's download ----------------------------------------------------------------------------------

ROWS = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
BODY = "".join(json.dumps(row) + "\n" for row in ROWS).encode()


class _Mirror:
    """A mirror of LiveCodeBench's files on 127.0.0.1 that serves ``test.jsonl`` as ``how`` says: ``gzip`` (the
    body compressed, as nginx's gzip or a CDN serves JSON), ``cut`` (no Content-Length, the connection closed
    halfway through a row: HTTP/1.0's framing)."""

    def __init__(self, how: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                if how == "gzip":
                    data = gzip.compress(BODY)
                    self.send_response(200)
                    self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    self.send_response(200)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(BODY[:len(BODY) // 2 + 7])
                    self.close_connection = True

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/lcb/"

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_mirror_that_compresses_its_replies_serves_the_release(tmp_path, monkeypatch):
    """httpx asks for gzip and gives the decoded bytes; the download compared their count with the compressed
    Content-Length ('sent 22,144 of its 8,520 bytes'), so such a mirror (PYTEST_HUMANEVAL_LIVECODEBENCH_URL)
    could never be used."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with _Mirror("gzip") as url:
        monkeypatch.setenv(livecodebench.BASE_URL_ENV, url)
        dataset = livecodebench.load("v1", (None, None), "w")
    assert len(dataset.problems) == len(ROWS)


def test_a_cut_download_caches_nothing(tmp_path, monkeypatch):
    """The module's promise: 'renamed into place only when complete: a failed or cut download caches nothing'. A
    body without a Content-Length that ends mid-row was renamed into the cache, and every later run failed on its
    last line until someone deleted it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with _Mirror("cut") as url:
        monkeypatch.setenv(livecodebench.BASE_URL_ENV, url)
        with pytest.raises(DatasetError):
            livecodebench.load("v1", (None, None), "w")
    assert not livecodebench.cached_file("test.jsonl").exists()


# -- errors that must be one line ------------------------------------------------------------------------------

@pytest.mark.parametrize("truth", ["[" * 100_000, '{"inputs": ' + "[" * 100_000])
def test_a_deeply_nested_ground_truth_is_a_verifier_error(truth):
    """A reward function's documented errors are VerifierError (and RewardUnavailable); a ground truth nested
    deeper than json's recursion limit raised RecursionError out of holds_tests, before any judging."""
    with pytest.raises(VerifierError):
        rewards.compute_score_batch(["prime_code"], ["print(1)"], [truth], workers=1)


@pytest.mark.parametrize("question_id", [["x"], {"a": 1}])
def test_saved_generations_with_a_question_id_not_a_string_are_one_error(tmp_path, question_id):
    """LiveCodeBench's saved generations: a question_id that is a list or an object raised TypeError (unhashable,
    looked up in the window's set before it was checked) instead of the DatasetError naming it."""
    dataset = load_io_dataset(CORPUS)
    problems = {problem.task_id: problem for problem in dataset.problems}
    first = next(iter(problems))
    path = tmp_path / "generations.json"
    path.write_text(json.dumps([{"question_id": first, "code_list": ["print(1)"]},
                                {"question_id": question_id, "code_list": []}]))
    with pytest.raises(DatasetError, match="question_id"):
        read_samples_file(path, problems)
