"""Generations are an asset: stored as they arrive, reused by reruns, batched with n, never billed twice.

Real pytest sessions (in-process, and a real subprocess for SIGINT) against a real loopback server; every
request count is exact.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from fake_openai import MODEL, FakeOpenAI, Reply, chat, choices, models
from sessions import NO_CACHE, QUIET_REWRITE, interruptible_pytest, read_report, read_rows

from pytest_humaneval.completions.store import GenerationStore, normalise_endpoint
from pytest_humaneval.data.dataset import load_problems

KEY = "sk-test-SECRET-store-77aa"
PROBLEMS = load_problems()[1]
USAGE = {"prompt_tokens": 100, "completion_tokens": 20}


def problem_of(request):
    return next(p for p in PROBLEMS if p.prompt.strip() in request.prompt_text)


def solution(problem) -> str:
    return f"```python\n{problem.prompt}{problem.canonical_solution}```"


def answering(wrong: tuple[str, ...] = (), honour_n: bool = False, refuse_n: bool = False,
              hang_from: int | None = None):
    """Canonical answers (``wrong`` task ids get a failing one); optionally n choices per request."""
    def script(request, index):
        if request.method == "GET":
            return models()
        if hang_from is not None and index >= hang_from:
            return Reply(body=chat("    pass\n").body, delay_s=20)
        problem = problem_of(request)
        text = "```python\n    return None\n```" if problem.task_id in wrong else solution(problem)
        n = request.body.get("n", 1)
        if n > 1 and refuse_n:
            return Reply(400, {"error": {"message": "n must be 1"}})
        if n > 1 and honour_n:
            return choices([text] * n, usage={"prompt_tokens": 100, "completion_tokens": 20 * n})
        return chat(text, usage=USAGE)

    return script


def config(pytester, server, params: str = "", limit: int = 4) -> str:
    path = pytester.path / "live.yaml"
    path.write_text(f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}, "
                    "credentials_ref: env:TEST_LLM_KEY}\n"
                    f"params: {{allow_code_execution: true, limit: {limit}{params}}}\n"
                    "pricing: {input_usd_per_mtok: 2.0, output_usd_per_mtok: 6.0}\n")
    return str(path)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", KEY)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def stored_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


@pytest.mark.slow
def test_sigint_resumes_missing_requests(pytester):
    """A run stopped by SIGINT resumes with exactly the missing requests."""
    store = pytester.path / "generations"
    with FakeOpenAI(answering(hang_from=2)) as server:  # the third request never finishes in time
        cfg = config(pytester, server, ", concurrency: 1")
        proc = interruptible_pytest("--humaneval-config", cfg, "-p", "no:xdist",
                                    "--humaneval-generations", str(store), *NO_CACHE, cwd=pytester.path)
        deadline = time.monotonic() + 30
        while len(server.posts()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=30)
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
        assert len(server.posts()) == 3
        server.script = answering()  # the same server (the endpoint is part of the key), now answering
        result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-generations",
                                    str(store), "--humaneval-results", "results.jsonl", "--humaneval-report",
                                    "r.json", *NO_CACHE)
    result.assert_outcomes(passed=4)
    assert sorted(problem_of(r).task_id for r in server.posts()[3:]) == ["HumanEval/2", "HumanEval/3"]
    result.stdout.fnmatch_lines(["humaneval: 2 cached in *; generating 2 completions with *",
                                 "humaneval: 2 cached, requested 2/2: 2 generated, 0 failed (*"])
    assert {r["task_id"]: r["cached"] for r in read_rows(pytester.path / "results.jsonl")} == {
        "HumanEval/0": True, "HumanEval/1": True, "HumanEval/2": False, "HumanEval/3": False}
    measured = read_report(pytester.path / "r.json")["measurements"]
    assert measured["human-eval.cached_generations"] == {"value": 2, "class": "usage", "official": False}
    assert measured["human-eval.total_tokens"]["value"] == 2 * 120  # this run's two requests only
    assert measured["human-eval.cost_usd"]["value"] == pytest.approx(2 * (100 * 2 + 20 * 6) / 1e6)
    assert KEY.encode() not in stored_bytes(store) and b"Bearer" not in stored_bytes(store)
    assert KEY not in output + result.stdout.str()


@pytest.mark.slow
def test_lf_reuses_and_cache_clear_forgets(pytester):
    """--lf after a failing run sends no request, and --cache-clear forgets."""
    # The default store is pytest's cache: --lf and --cache-clear mean what pytest users expect.
    run = ("-p", "no:xdist", "--humaneval-report", "r.json", *QUIET_REWRITE)
    with FakeOpenAI(answering(wrong=("HumanEval/1",))) as server:
        cfg = config(pytester, server)
        first = pytester.runpytest("--humaneval-config", cfg, *run)
        first.assert_outcomes(passed=3, failed=1)
        assert len(server.posts()) == 4
        again = pytester.runpytest("--humaneval-config", cfg, "--lf", *run)
        again.assert_outcomes(failed=1, deselected=3)
        assert len(server.posts()) == 4 and len(server.requests) == 5  # no POST, no preflight either
        again.stdout.fnmatch_lines(["humaneval: all 4 completions cached in *, nothing to generate*"])
        measured = read_report(pytester.path / "r.json")["measurements"]
        assert measured["human-eval.cached_generations"]["value"] == 4
        assert measured["human-eval.total_tokens"]["value"] == 0 and measured["human-eval.cost_usd"]["value"] == 0
        cleared = pytester.runpytest("--humaneval-config", cfg, "--cache-clear", *run)
        cleared.assert_outcomes(passed=3, failed=1)
        assert len(server.posts()) == 8
    assert (pytester.path / ".pytest_cache" / "d" / "humaneval-generations").is_dir()


@pytest.mark.slow
def test_regenerate_keeps_new_draw(pytester):
    """--humaneval-regenerate samples afresh, and the new draw is the one kept."""
    store = ("--humaneval-generations", "gen", "-p", "no:xdist", "--humaneval-results", "results.jsonl", *NO_CACHE)
    with FakeOpenAI(answering(wrong=("HumanEval/0",))) as server:
        cfg = config(pytester, server)
        pytester.runpytest("--humaneval-config", cfg, *store).assert_outcomes(passed=3, failed=1)
        server.script = answering()  # a new draw would now be right
        pytester.runpytest("--humaneval-config", cfg, *store).assert_outcomes(passed=3, failed=1)
        assert len(server.posts()) == 4
        pytester.runpytest("--humaneval-config", cfg, "--humaneval-regenerate", *store).assert_outcomes(passed=4)
        assert len(server.posts()) == 8
        pytester.runpytest("--humaneval-config", cfg, *store).assert_outcomes(passed=4)
        assert len(server.posts()) == 8
    assert all(row["cached"] for row in read_rows(pytester.path / "results.jsonl"))


@pytest.mark.slow
def test_key_is_the_request_not_judging(pytester):
    """Only what is asked keys an answer, not how it is judged."""
    # timeout_s and the retry policy change the dataset digest, not the requests: nothing is asked again.
    store = ("--humaneval-generations", "gen", "-p", "no:xdist", *NO_CACHE)
    with FakeOpenAI(answering()) as server:
        for params, posts in (("", 4), (", timeout_s: 5, retry: {max_attempts: 2}", 4), (", temperature: 0.5", 8)):
            pytester.runpytest("--humaneval-config", config(pytester, server, params), *store).assert_outcomes(passed=4)
            assert len(server.posts()) == posts, params


@pytest.mark.slow
def test_torn_store_file_resumes(pytester):
    """A torn store file resumes and stays readable."""
    # The store's folder from the ini key, relative to the ini file.
    pytester.makeini("[pytest]\nhumaneval_generations = ci/generations\n")
    with FakeOpenAI(answering()) as server:
        cfg = config(pytester, server)
        pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", *NO_CACHE).assert_outcomes(passed=4)
        [path] = (pytester.path / "ci" / "generations").glob("*.jsonl")
        data = path.read_bytes()
        path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 40])  # a crash mid-way through the last line
        torn = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", *NO_CACHE)
        torn.assert_outcomes(passed=4)
        torn.stdout.fnmatch_lines(["humaneval: 1 unreadable line(s) in * ignored*"])
        assert len(server.posts()) == 5
        pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", *NO_CACHE).assert_outcomes(passed=4)
        assert len(server.posts()) == 5


@pytest.mark.slow
def test_honoured_n_one_request_per_problem(pytester):
    """A server that honours n gets one request per problem, and bills the prompt once."""
    reports = {}
    for name, request_n in (("batched", ""), ("single", ", request_n: 1")):
        with FakeOpenAI(answering(honour_n=True)) as server:
            cfg = config(pytester, server, f", n: 10, k: [1, 10]{request_n}", limit=2)
            result = pytester.runpytest("--humaneval-config", cfg, "-n", "2", "--humaneval-report",
                                        f"{name}.json", "--humaneval-results", f"{name}.jsonl", *NO_CACHE)
        result.assert_outcomes(passed=20)
        reports[name] = (server.posts(), read_report(pytester.path / f"{name}.json")["measurements"])
    batched, single = reports["batched"][0], reports["single"][0]
    assert len(batched) == 2 and all(r.body["n"] == 10 for r in batched)
    assert len(single) == 20 and all("n" not in r.body for r in single)
    # billed prompt tokens: 100 per request, so 200 against 2,000; completion tokens are the same 400
    assert reports["batched"][1]["human-eval.total_tokens"]["value"] == 2 * 100 + 20 * 20
    assert reports["single"][1]["human-eval.total_tokens"]["value"] == 20 * 100 + 20 * 20
    samples = rows(pytester.path / "batched.jsonl")
    assert sorted((r["task_id"], r["sample"]) for r in samples) == [(t, i) for t in ("HumanEval/0", "HumanEval/1")
                                                                    for i in range(10)]
    assert sum(r["prompt_tokens"] for r in samples) == 200


@pytest.mark.slow
@pytest.mark.parametrize("server_kind", ["ignores n", "refuses n"])
def test_ignored_n_one_request_per_sample(pytester, server_kind):
    """A server that ignores or refuses n falls back to one request per sample."""
    script = answering(refuse_n=server_kind == "refuses n")  # a plain server answers one choice whatever n says
    with FakeOpenAI(script) as server:
        cfg = config(pytester, server, ", n: 10, k: [1, 10]", limit=2)
        result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-results",
                                    "results.jsonl", *NO_CACHE)
    result.assert_outcomes(passed=20)
    posts = server.posts()
    assert [r.body.get("n", 1) for r in posts].count(10) == 1  # the one request that found out
    assert len(posts) == (20 if server_kind == "ignores n" else 21)
    assert len({(r["task_id"], r["sample"]) for r in read_rows(pytester.path / "results.jsonl")}) == 20


@pytest.mark.slow
def test_failed_generations_not_stored(pytester):
    """Failed generations are not stored, so a rerun retries them."""
    def flaky(request, index):
        if request.method == "POST" and problem_of(request).task_id == "HumanEval/3" and index < 4:
            return Reply(503, {"error": "overloaded"})
        return answering()(request, index)

    store = ("--humaneval-generations", "gen", "-p", "no:xdist", *NO_CACHE)
    with FakeOpenAI(flaky) as server:
        cfg = config(pytester, server)
        pytester.runpytest("--humaneval-config", cfg, *store).assert_outcomes(passed=3, skipped=1)
        retried = pytester.runpytest("--humaneval-config", cfg, *store)
        retried.assert_outcomes(passed=4)
        assert [problem_of(r).task_id for r in server.posts()[4:]] == ["HumanEval/3"]


# -- the store on its own ------------------------------------------------------------------------------------

def test_endpoints_are_normalised():
    assert normalise_endpoint("HTTPS://API.Example.com:443/v1/") == "https://api.example.com/v1"
    assert normalise_endpoint("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert normalise_endpoint("http://[::1]:80/v1") == "http://[::1]/v1"


def test_last_line_of_a_key_wins(tmp_path):
    """The last line of a key wins, and unreadable lines are counted."""
    store = GenerationStore(tmp_path, {"endpoint": "http://x/v1"})
    store.append("k1", "T/0", 0, {"raw": "first"})
    store.append("k2", "T/1", 0, {"raw": "other"})
    store.append("k1", "T/0", 0, {"raw": "second"})
    store.close()
    with store.path.open("a") as handle:
        handle.write('{"key": "k3", "raw": "to')  # torn
    loaded = store.load()
    assert {k: v["raw"] for k, v in loaded.items()} == {"k1": "second", "k2": "other"}
    assert store.ignored_lines == 1
    assert json.loads(store.path.read_text().splitlines()[0])["setting"] == {"endpoint": "http://x/v1"}


@pytest.mark.slow
def test_unwritable_store_costs_reuse_only(pytester):
    """A store that cannot be written costs the reuse, not the run."""
    (pytester.path / "occupied").write_text("a file where the store's folder should be")
    with FakeOpenAI(answering()) as server:
        result = pytester.runpytest("--humaneval-config", config(pytester, server), "-p", "no:xdist",
                                    "--humaneval-generations", "occupied", *NO_CACHE)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["humaneval: warning: generation store: cannot * Not a directory; these "
                                 "completions will not be reused"])
