"""The trust boundary: every line that runs, contains or judges candidate code is in this folder.

``Sandbox(isolation).run(program, limits) -> ExecResult`` is its one seam (``harness``): the rest of the package
(the engine's judge, which owns its sandboxes: there is no sandbox of the process) hands it a sample and gets a
verdict back, and imports nothing else from here but the pool that calls it from several threads (``pool``) and
the plain-value format (``_wire``, for HumanEval+'s expected outputs).

What runs where:

- ``harness`` (in the pytest process): starts one warm supervisor per sandbox, sends it requests, and validates
  every reply field by field (an untrusted program's doings are relayed in it): its texts are made inert and
  capped before they go anywhere;
- ``_supervisor`` (``python -I``, its own interpreter, started with an allow-listed environment): isolates itself
  (``_contain``: namespaces, a root built from an allow-list, a uid of its own, limits, cgroups), forks the
  judge and, before any request reaches it, the candidates' fork server (``_zygote``);
- ``_zygote`` forks one candidate per sample, which reads its own request and serves calls to its entry point
  (``_judge.serve``); ``_judge`` and ``_suite`` run the dataset's test or HumanEval+ suites in the judge process;
- ``_expected`` runs the dataset's canonical solutions (trusted code, but never in the pytest process) for
  HumanEval+'s expected outputs.

What may cross, and where:

- into a supervisor: JSON requests (a problem's prompt and test once, then its number; the completion; the
  limits) and, by descriptor, a HumanEval+ suites file;
- into a candidate: its own prompt, completion, entry point and limits (a memfd it reads first), then the
  arguments of one call at a time. Never a test, an expected output, another sample's text, result or verdict,
  nor anything of the package: the supervisor's files import only each other, by path, and a candidate's root
  does not show the package at all;
- out of a candidate: plain values only (``_wire``: None, bool, int, float, complex, str, bytes and the builtin
  containers, decoded by code the candidate never runs), its exit status, and its captured output;
- out of a supervisor: one reply per request (a status from a fixed set, a duration, texts).
"""

from __future__ import annotations

from . import harness
from .harness import (
    DETAIL_MAX,
    ENV_ALLOW,
    ENV_FIXED,
    ISOLATION_MODES,
    SAMPLE_ATTEMPTS,
    SANDBOX_FILES,
    SUITE_ATTEMPTS,
    SUITE_CAP_S,
    SUPERVISOR,
    ExecResult,
    Limits,
    Program,
    Sandbox,
    SandboxError,
    Status,
    Suite,
    build_program,
    clean_text,
    locate,
    sandbox_env,
    shorten,
)

__all__ = ["DETAIL_MAX", "ENV_ALLOW", "ENV_FIXED", "ISOLATION_MODES", "SAMPLE_ATTEMPTS", "SANDBOX_FILES",
           "SUITE_ATTEMPTS", "SUITE_CAP_S",
           "SUPERVISOR", "ExecResult", "Limits", "Program", "Sandbox", "SandboxError", "Status", "Suite",
           "build_program", "clean_text", "harness", "locate", "sandbox_env", "shorten"]
