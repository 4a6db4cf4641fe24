"""Finding the solution in an answer: exact expected completions, no server, nothing executed."""

from __future__ import annotations

import time

import pytest

from pytest_humaneval.completions.extract import extract, split_reasoning, unwrap_completion

PROMPT = 'from typing import List\n\n\ndef add(a, b):\n    """Add two numbers."""\n'
RIGHT = "def add(a, b):\n    return a + b\n"
DRAFT = "def add(a, b):\n    return a - b\n"


def fenced(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}```"


# -- today's rule where there is no choice: every fenced answer of the test suite ---------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("Here you go:\n```python\n    return a + b\n```\nHope it helps.", "    return a + b\n"),
    ("```py\n    return a + b\n```", "    return a + b\n"),
    ("```\n    return a + b\n```", "    return a + b\n"),
    ("Sure!\n```python\nimport math\n\ndef add(a, b):\n    return math.fsum([a, b])\n```",
     "\nimport math\n\ndef add(a, b):\n    return math.fsum([a, b])\n"),
    ("    return a + b\n", "    return a + b\n"),
    ("def add(a, b):\n    return a + b\n", "\ndef add(a, b):\n    return a + b\n"),
    ("", ""),
    ("```python\ndef add(a, b):\n    return a +", "\ndef add(a, b):\n    return a +"),  # cut inside the block
])
def test_single_block_or_none_is_unwrapped(text, expected):
    """A single block, or none, is unwrapped as before several blocks were chosen between (``unwrap_completion``), with
    no note."""
    assert unwrap_completion(text, "add") == expected
    assert extract(text, "add", PROMPT).note is None


def test_no_entry_point_takes_first_block():
    """Without a definition of the entry point, the first Python block is taken."""
    text = fenced("    return a + b\n") + "\nor\n" + fenced("    return b + a\n")
    result = extract(text, "add", PROMPT)
    assert result.completion == "    return a + b\n"
    assert result.note == "took code block 1 of 2 (none defines add)"
    assert extract(fenced("x = 1\n", "js") + fenced("    return 1\n"), "add").completion == "    return 1\n"
    assert extract(fenced("    return 2\n", "rust"), "add").completion == "    return 2\n"


# -- the three shapes of today's models ---------------------------------------------------------------------

def test_usage_example_is_not_taken():
    """A usage example before the implementation is not taken."""
    text = "Usage:\n" + fenced("print(add.__doc__)\nprint(add(1, 2))\n") + "\nImplementation:\n" + fenced(RIGHT)
    result = extract(text, "add", PROMPT)
    assert result.completion == "\n" + RIGHT
    assert result.note == "took code block 2 of 2 (the last that defines add)"


def test_final_version_beats_draft():
    """A draft then a final version takes the final one."""
    text = fenced(DRAFT) + "\nOn second thought, the final version:\n" + fenced(RIGHT)
    assert extract(text, "add", PROMPT).completion == "\n" + RIGHT


def runaway(code: str, cut_at: int, copies: int = 6) -> str:
    """A runaway answer: a complete block, then the same function again and again until the token limit cut it,
    mid-block."""
    again = "".join("\nHere it is again, for clarity:\n" + fenced(code) for _ in range(copies))
    return "Here is the function:\n" + fenced(code) + again + "\nHere it is again:\n```python\n" + code[:cut_at]


@pytest.mark.parametrize(("cut_at", "why"), [(len("def add(a, b):\n    return a +"), "does not compile"),
                                             (len("def add(a, b):\n    ret"), "compiles, but its fence never closed")])
def test_cut_takes_last_complete_block(cut_at, why):
    """A runaway answer cut mid-block is judged by its last complete block."""
    result = extract(runaway(RIGHT, cut_at), "add", PROMPT)
    assert result.completion == "\n" + RIGHT, why
    assert result.note == ("took code block 7 of 8 (the last complete one that defines add; 1 later one is cut off "
                           "or does not compile)")


def test_complete_block_beats_broken_one():
    """A complete block wins over a later one that does not compile, and cut-off ones still run alone."""
    text = fenced(DRAFT) + "\nFixed:\n" + fenced(RIGHT) + "\nOr shorter:\n" + fenced("def add(a, b) return a + b\n")
    assert extract(text, "add", PROMPT).completion == "\n" + RIGHT
    # Without a complete block, the last that compiles, else the last that defines the entry point, as before.
    assert extract(fenced("def add(a, b):\n    return a +\n") + "```python\n" + RIGHT, "add").completion == "\n" + RIGHT
    assert extract("```python\ndef add(a, b):\n    return (a +", "add").completion == "\ndef add(a, b):\n    return (a +"


def test_thinking_draft_is_never_code():
    """Thinking with a draft block in it is never code."""
    thinking = "<think>\nLet me try:\n" + fenced(DRAFT) + "\nNo, that subtracts.\n</think>\n\n"
    result = extract(thinking + fenced(RIGHT), "add", PROMPT)
    assert result.completion == "\n" + RIGHT and result.note is None
    assert result.reasoning.startswith("Let me try:") and result.reasoning.endswith("that subtracts.")


@pytest.mark.parametrize("text", [
    "<thinking>" + fenced(DRAFT) + "</thinking>" + fenced(RIGHT),
    "<THINK>" + fenced(DRAFT) + "</THINK>\n" + fenced(RIGHT),
    # the chat template opened the tag in the prompt: only the closing one is in the answer
    "Okay, first a draft:\n" + fenced(DRAFT) + "\n</think>\n\n" + fenced(RIGHT),
])
def test_reasoning_tags_are_set_apart(text):
    """Every form of reasoning tag is set apart."""
    result = extract(text, "add", PROMPT)
    assert result.completion == "\n" + RIGHT
    assert "return a - b" in result.reasoning


def test_cut_while_thinking_has_no_code():
    """An answer cut while thinking has no code."""
    result = extract("<think>\nLet me write " + fenced(DRAFT)[:-3], "add", PROMPT)
    assert result.completion == "" and "return a - b" in result.reasoning


def test_no_reasoning_leaves_the_text_alone():
    assert split_reasoning("    return a + b\n") == ("    return a + b\n", None)
    assert split_reasoning("x = '<think>'  # not at the start\n") == ("x = '<think>'  # not at the start\n", None)


# -- imports and helpers the chosen block needs from the others ---------------------------------------------

def test_helpers_come_from_other_blocks():
    """Imports and helpers from other blocks come with the chosen block."""
    text = (fenced("import math\n\nSCALE = 1\n\ndef helper(x):\n    return math.floor(x) * SCALE\n")
            + "\nThen:\n" + fenced("def add(a, b):\n    return helper(a) + helper(b)\n"))
    result = extract(text, "add", PROMPT)
    assert result.completion == ("\nimport math\nSCALE = 1\ndef helper(x):\n    return math.floor(x) * SCALE\n\n"
                                 "def add(a, b):\n    return helper(a) + helper(b)\n")
    assert result.note == "took code block 2 of 2 (the last that defines add), with SCALE, helper, math from the others"


def test_examples_and_locals_not_pulled_in():
    """Usage examples, locals and the prompt's names are never pulled in."""
    example = fenced("from typing import List\nresult = add(1, 2)\nprint(result)\n")
    final = fenced("def add(a, b):\n    result = a + b\n    return result\n\nprint(add(1, 2))\n")
    result = extract(example + final, "add", PROMPT)
    assert result.completion == "\n" + "def add(a, b):\n    result = a + b\n    return result\n\nprint(add(1, 2))\n"


def test_unparsable_block_is_taken_alone():
    """A chosen block that does not parse is taken alone."""
    text = fenced("import math\n") + fenced("def add(a, b):\n    return math.fsum([a, b]\n")
    assert extract(text, "add", PROMPT).completion == "\ndef add(a, b):\n    return math.fsum([a, b]\n"


# -- answers in tags (the R1-Zero template) ------------------------------------------------------------------

INDENTED = "    def add(a, b):\n        return a + b\n"


@pytest.mark.parametrize("text", [
    "<think>\nadd them\n</think>\n<answer>\n" + INDENTED + "</answer>",  # indented, no fence
    "<think>add them</think><answer>\n" + fenced(RIGHT) + "\n</answer>",  # fenced inside the tags
    "<answer>\n" + INDENTED + "</answer>",  # no thinking at all
    "<think>add them</think>\n<answer>first try: a - b</answer>\n<answer>\n" + INDENTED + "</answer>",  # the last
    "<think>add them\n<answer>\n" + INDENTED + "</answer>\n</think>",  # written inside the thinking
    "<think>add them</think><answer>\n" + INDENTED,  # opened and cut: what there is
    "<think>add them</think><ANSWER>\n" + INDENTED + "</ANSWER>",
])
def test_last_answer_block_is_dedented(text):
    """The last answer block is the code, dedented."""
    result = extract(text, "add", PROMPT)
    assert result.completion == "\n" + RIGHT
    assert result.program == "from typing import List\n" + RIGHT
    assert result.note.startswith("took the <answer> block")


def test_answer_block_beats_thinking():
    """An answer block beats the thinking's, and a cut thinking has no code."""
    outside = "<think>maybe <answer>def add(a, b):\n    return a - b\n</answer></think><answer>" + RIGHT + "</answer>"
    assert extract(outside, "add", PROMPT).completion == "\n" + RIGHT
    assert extract("<think>so <answer>" + RIGHT + "</answer> and then", "add", PROMPT).completion == ""
    body = "<answer>\n    return a + b\n</answer>"  # a body keeps its indentation: it continues the prompt
    assert extract(body, "add", PROMPT).completion == "    return a + b\n"
    assert extract(body, "add", PROMPT).program is None


# -- whole programs: what the candidate runs ----------------------------------------------------------------

HELPER_PROMPT = ('import math\n\n\ndef scale(x):\n    return 10 * x\n\n\nLIMIT = 3\n\n\n'
                 'def add(a, b):\n    """Add, scaled."""\n')


def test_whole_program_runs_as_written():
    """A whole program runs as written, after the prompt's imports."""
    assert extract(fenced(RIGHT), "add", PROMPT).program == "from typing import List\n" + RIGHT
    future = "from __future__ import annotations\n\n" + RIGHT
    program = extract(fenced(future), "add", PROMPT).program
    assert program == "from __future__ import annotations\n\nfrom typing import List\n" + RIGHT
    compile(program, "<program>", "exec")
    docstring = '"""My module."""\nfrom __future__ import annotations\n' + RIGHT
    assert extract(docstring, "add", PROMPT).program == (
        '"""My module."""\nfrom __future__ import annotations\nfrom typing import List\n' + RIGHT)


def test_prompt_helpers_only_when_used():
    """The prompt's helpers come in only when used and not redefined."""
    uses = "def add(a, b):\n    return scale(a) + scale(b)\n"
    assert extract(uses, "add", HELPER_PROMPT).program == "import math\ndef scale(x):\n    return 10 * x\n" + uses
    redefined = "def scale(x):\n    return x\n\ndef add(a, b):\n    return scale(a) + scale(b)\n"
    assert extract(redefined, "add", HELPER_PROMPT).program == "import math\n" + redefined
    above = "import math\nimport functools\n\n\ndef add(a, b):\n    return min(a + b, LIMIT)\n"
    assert extract(above, "add", HELPER_PROMPT).program == "import math\nLIMIT = 3\n" + above


def test_compiles_checks_the_program():
    """Whether the code compiles is checked on the program that runs."""
    future = "from __future__ import annotations\n" + RIGHT  # as it ran before (after the prompt): SyntaxError
    result = extract(fenced(DRAFT) + fenced(future), "add", PROMPT)
    assert result.program == "from __future__ import annotations\nfrom typing import List\n" + RIGHT
    compile(result.program, "<program>", "exec")
    # A later block that cannot make a program (a __future__ line after code) loses to an earlier complete one.
    late_future = "def add(a, b):\n    return a + b\nfrom __future__ import annotations\n"
    result = extract(fenced(DRAFT) + fenced(late_future), "add", PROMPT)
    assert result.completion == "\n" + DRAFT
    assert "1 later one is cut off or does not compile" in result.note


def test_indented_definition_is_appended():
    """A definition only indented (inside another block) is not a program of its own: it is appended to the prompt, as
    before several blocks were chosen between."""
    nested = "    def add(a, b):\n        return a + b\n    return add(a, b)\n"
    result = extract(nested, "add", PROMPT)
    assert (result.completion, result.program) == ("\n" + nested, None)


# Answers a model can emit that made extraction quadratic (11-51 s at 40 kB): a megabyte of each shape.
ADVERSARIAL = {
    "blank lines": " \n" * 500_000,
    "newlines": "\n" * 1_000_000,
    "think tags never closed": "<think>" * 150_000,
    "closing think tags": "</think>" * 125_000,
    "answer tags never closed": "<answer>" * 125_000,
    "answer blocks": "<answer>x</answer>" * 55_000,
    "fences": "```\n" * 250_000,
    "defs without a call": "def f\n" * 170_000,
    "end tokens": "</s>" * 250_000,
}


@pytest.mark.parametrize("shape", sorted(ADVERSARIAL))
def test_any_answer_is_handled_in_linear_time(shape):
    """Extraction, the trainers' cleaning and the impossible category on a 1 MB answer: each pass is linear,
    so well under the bound on any machine (a quadratic one takes hours at this size)."""
    from pytest_humaneval.engine.impossible import categorize
    from pytest_humaneval.rewards import answer_text
    from pytest_humaneval.sandbox import Status

    text = ADVERSARIAL[shape]
    started = time.monotonic()
    found = extract(answer_text(text), "f", "def f():\n")
    categorize(Status.RUNTIME_ERROR, "SyntaxError: invalid syntax (at completion line 1: x)", None, found.completion)
    assert time.monotonic() - started < 20


def test_tag_blocks_are_the_regex_blocks():
    """The one-pass tag matcher finds what ``<(tag)>(.*?)</\\1>`` found, on every string of a small alphabet of
    tags and text (names matched case-insensitively, nearest closing tag of the same name)."""
    import itertools
    import re

    from pytest_humaneval.completions import extract as module

    regex = re.compile(r"<(think(?:ing)?)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
    pieces = ["<think>", "</think>", "<thinking>", "</THINKING>", "x"]
    for size in range(1, 6):
        for parts in itertools.product(pieces, repeat=size):
            text = "".join(parts)
            ours = [(o.start(), c.end()) for o, c in module._blocks(module._THINK_TAGS, text)]
            assert ours == [m.span() for m in regex.finditer(text)], text
