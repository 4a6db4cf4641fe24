"""LiveCodeBench's live prompt and its code extraction, for standard-input and functional problems (issue 52).

What LiveCodeBench's runner does lives here and nowhere else, as its code had it at commit
28fef95ea8c9f7a547c8329f2cd3d32b92c1fa24 (``lcb_runner/prompts/code_generation.py``,
``lcb_runner/utils/extraction_utils.py``, ``lcb_runner/runner/parser.py``, ``oai_runner.py``, ``vllm_runner.py``).
Pure: no pytest, no httpx, nothing executed (code is compiled only, never run).

- **Chat** (``format_prompt_generation`` for ``LMStyle.OpenAIChat``, the style of the OpenAI-compatible chat models
  it runs): a system message, ``PromptConstants.SYSTEM_MESSAGE_GENERIC``, and one user message,
  ``get_generic_question_template_answer``: ``### Question:`` and the statement; ``### Format:`` with the
  starter-code instruction and the starter code in a python fence when the problem has starter code, else the
  standard-input instruction and a fence holding ``# YOUR CODE HERE``; then ``### Answer: (use the provided format
  with backticks)``. Its OpenAI runner sends no stop sequence (``"stop": args.stop`` is commented out there: "stop is
  only used for base models currently"). ``params.system_prompt`` replaces the system message (``''``: none).
- **Completions** (``LMStyle.GenericBase``, its base-model form): ``### Question``, the statement, ``### Starter
  Code`` and the starter code when there is one, ``### Answer``; its vLLM runner stops at its ``--stop`` default,
  ``###``. Its form puts one solved example from its few-shot files before the question; that example is a contest
  site's problem, which this project does not bundle (docs/datasets.md, "Data and licence"), so the question is sent
  alone, and ``protocols.setup_warnings`` says so of an ``lcb`` run over completions.
- **The code** (``extract_code``): for every chat style, the lines between the last two lines that hold a
  ```` ``` ```` (fewer than two such lines: no code); for a base model, its whole answer stripped. The extractor is
  not told the API, so one rule serves both: the last block when the answer has two fence lines, else the answer
  stripped when it compiles, else no code. Over chat that differs from LiveCodeBench only for an answer of bare code
  without a fence (which it scores 0); over completions only for a continuation holding a fenced block (which it
  runs fences and all, a SyntaxError). Reasoning is set apart first, as in every answer (``extract.py``, rule 1):
  a draft inside ``<think>`` is never the code.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..data.dataset import Problem
from ..data.io_problems import CALL_ENTRY

__all__ = ["BASE_STOP", "FORMAT_WITHOUT_STARTER_CODE", "FORMAT_WITH_STARTER_CODE", "SYSTEM_MESSAGE", "Question",
           "asked", "base_prompt", "chat_message", "code_of", "judged_whole", "sent_stop"]

SYSTEM_MESSAGE = ("You are an expert Python programmer. You will be given a question (problem specification) and "
                  "will generate a correct Python program that matches the specification and passes all tests.")
FORMAT_WITH_STARTER_CODE = ("You will use the following starter code to write the solution to the problem and "
                            "enclose your code within delimiters.")
FORMAT_WITHOUT_STARTER_CODE = ("Read the inputs from stdin solve the problem and write the answer to stdout (do not "
                               "directly test on the sample inputs). Enclose your code within delimiters as follows. "
                               "Ensure that when the python program runs, it reads the inputs, runs the algorithm and "
                               "writes output to STDOUT.")
BASE_STOP = ("###",)  # lcb_runner/runner/parser.py: --stop, default "###"
_FENCE = "```"


@dataclass(frozen=True)
class Question:
    """A standard-input or functional problem as a live model is asked it: its text and its starter code ("" when
    none). Nothing of its tests."""

    statement: str
    starter_code: str


def asked(problem: Problem) -> str | Question:
    """What a live model is asked for ``problem``: HumanEval's prompt, or a standard-input or functional problem's
    question (the one place a problem's shape chooses its prompt; ``endpoint.Client`` sends either)."""
    return problem.prompt if problem.statement is None else Question(problem.statement, problem.starter_code)


def judged_whole(entry_point: str) -> bool:
    """Whether a problem of this entry point is a standard-input one (none) or a functional one (the judge's call
    entry): the one clue an extractor gets, which is given strings only."""
    return entry_point in ("", CALL_ENTRY)


def chat_message(question: Question) -> str:
    """The user message LiveCodeBench sends a chat model (``get_generic_question_template_answer``)."""
    text = f"### Question:\n{question.statement}\n\n"
    if question.starter_code:
        text += f"### Format: {FORMAT_WITH_STARTER_CODE}\n```python\n{question.starter_code}\n```\n\n"
    else:
        text += f"### Format: {FORMAT_WITHOUT_STARTER_CODE}\n```python\n# YOUR CODE HERE\n```\n\n"
    return text + "### Answer: (use the provided format with backticks)\n\n"


def base_prompt(question: Question) -> str:
    """LiveCodeBench's base-model prompt for ``question`` (``get_base_model_question_template_answer``'s last part),
    without the solved example it puts first."""
    text = f"### Question\n{question.statement}\n\n"
    if question.starter_code:
        text += f"### Starter Code\n{question.starter_code}\n\n"
    return text + "### Answer\n\n"


def sent_stop(api: str, stop: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The stop sequences a question is sent with: the config's (``params.stop``); else LiveCodeBench's ``###`` on the
    completions API, and none over chat, as its runners send."""
    if stop is not None:
        return stop
    return BASE_STOP if api == "completions" else None


def code_of(answer: str) -> tuple[str, str | None]:
    """(the code, a note on how it was found) in an answer without its reasoning: the lines between its last two
    fence lines; without two, the answer stripped when it compiles; else ("", None): no code."""
    lines = answer.split("\n")
    fences = [number for number, line in enumerate(lines) if _FENCE in line]
    if len(fences) >= 2:
        note = None if len(fences) == 2 else (f"took the last code block (the lines between the last two of "
                                              f"{len(fences)} fence lines, LiveCodeBench's rule)")
        return "\n".join(lines[fences[-2] + 1:fences[-1]]), note
    whole = answer.strip()
    if whole and not fences and compiles(whole):
        return whole, "no fenced code block: the answer taken whole (it compiles)"
    return "", None


def compiles(code: str) -> bool:
    """Whether ``code`` is Python that compiles (compiled only, never run); extract.py asks it too."""
    try:
        compile(code, "<answer>", "exec", dont_inherit=True)  # compiled only, never run
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return False
    return True
