"""Finding the solution in a model's answer. Pure: no pytest, no httpx, nothing executed.

Answers of chat and reasoning models hold more than one piece of code: a draft inside the thinking, a usage
example before the implementation, a first version and then "on second thought" a final one. The rule:

1. Reasoning is never code: ``<think>``/``<thinking>`` ... closing tag, an opening tag at the start that never
   closes (the answer was cut while thinking) and a closing tag with no opening one (the server's chat template
   opened it in the prompt) are set apart and kept as the reasoning.
2. Among the fenced code blocks, the last *complete* one that defines the entry point wins (models revise), with
   the imports and helper definitions it uses from the other blocks (found with ``ast``; the prompt's own imports
   and helpers are in scope already and are never pulled in). Complete: its fence closes and it compiles. A
   block cut off by the token limit (a runaway answer that repeats the function until ``max_tokens``) never
   wins over a complete one; without any complete one, the last that compiles, else the last that defines it.
3. Without any definition of the entry point: the first Python block (```` ```python ````, ```` ```py ````,
   ```` ```python3 ```` or bare ```` ``` ````), else the first block, else the whole text: the rule used before
   (``bench/extraction_fidelity.py`` compares the two on real chat answers).
4. Code that defines the entry point is appended to the prompt after a newline (it replaces the stub, the
   prompt's imports stay in scope); a body is appended as is.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

__all__ = ["Extraction", "extract", "split_reasoning", "unwrap_completion"]

PYTHON_LANGS = ("python", "py", "python3", "")
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(```|\Z)", re.DOTALL)  # (lang, code, closing fence)
_TAG = r"think(?:ing)?"
_CLOSED = re.compile(rf"<({_TAG})>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_UNCLOSED_AT_START = re.compile(rf"\A\s*<{_TAG}>(.*)\Z", re.DOTALL | re.IGNORECASE)
_ORPHAN_CLOSE = re.compile(rf"\A(.*?)</{_TAG}>", re.DOTALL | re.IGNORECASE)
_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Extraction:
    completion: str  # what is appended to the prompt
    reasoning: str | None  # thinking found in the answer's text, never executed
    note: str | None  # which block was taken, when there was a choice


def split_reasoning(text: str) -> tuple[str, str | None]:
    """(the answer without its reasoning, the reasoning or None)."""
    thoughts: list[str] = []

    def keep(match: re.Match[str]) -> str:
        thoughts.append(match.group(2).strip())
        return ""

    answer = _CLOSED.sub(keep, text)
    orphan = _ORPHAN_CLOSE.match(answer)
    if orphan:
        thoughts.insert(0, orphan.group(1).strip())
        answer = answer[orphan.end():]
    unclosed = _UNCLOSED_AT_START.match(answer)
    if unclosed:
        thoughts.append(unclosed.group(1).strip())
        answer = ""
    if not thoughts:
        return text, None
    return answer, "\n\n".join(t for t in thoughts if t)


def _defines(code: str, entry_point: str) -> bool:
    return re.search(rf"^\s*(async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE) is not None


def _compiles(code: str) -> bool:
    try:
        compile(code, "<answer>", "exec", dont_inherit=True)  # compiled only, never run
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return False
    return True


def _defining_block(blocks: list[tuple[str, str, str]], defining: list[int]) -> int:
    """The last complete block (closed fence, compiles) among ``defining``; else the last that compiles; else the
    last."""
    compiling = [i for i in defining if _compiles(blocks[i][1])]
    complete = [i for i in compiling if blocks[i][2]]
    return (complete or compiling or defining)[-1]


def extract(text: str, entry_point: str, prompt: str = "") -> Extraction:
    answer, reasoning = split_reasoning(text)
    blocks = _FENCE.findall(answer)  # (language, code, closing fence or ""), in order
    candidates = [i for i, (lang, _, _) in enumerate(blocks) if lang.lower() in PYTHON_LANGS] or \
        list(range(len(blocks)))
    note = None
    if not candidates:
        code = answer
    else:
        defining = [i for i in candidates if _defines(blocks[i][1], entry_point)]
        chosen = _defining_block(blocks, defining) if defining else candidates[0]
        code = blocks[chosen][1]
        pulled: list[str] = []
        if defining:
            others = [blocks[i][1] for i in candidates if i != chosen]
            code, pulled = _with_dependencies(code, others, prompt, entry_point)
        if len(blocks) > 1:
            passed_over = sum(1 for i in defining if i > chosen)
            why = f"the last that defines {entry_point}" if defining else f"none defines {entry_point}"
            if passed_over:
                why = (f"the last complete one that defines {entry_point}; {passed_over} later "
                       + ("one is cut off or does not compile" if passed_over == 1 else
                          "ones are cut off or do not compile"))
            note = f"took code block {chosen + 1} of {len(blocks)} ({why})"
            if pulled:
                note += f", with {', '.join(pulled)} from the others"
    if _defines(code, entry_point):
        code = "\n" + code
    return Extraction(code, reasoning, note)


def unwrap_completion(text: str, entry_point: str) -> str:
    """The code to append to the prompt (see the module's docstring)."""
    return extract(text, entry_point).completion


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
    needed = sorted(_free(tree) - available, reverse=True)
    pulled: dict[str, tuple[int, int, str]] = {}
    while needed:
        name = needed.pop()
        if name in pulled or name not in providers:
            continue
        pulled[name] = providers[name]
        helper = _parse(providers[name][2])
        if helper is not None:
            needed.extend(sorted(_free(helper) - available - set(pulled), reverse=True))
    if not pulled:
        return code, []
    imports_first = sorted(set(pulled.values()), key=lambda p: (
        not p[2].lstrip().startswith(("import ", "from ")), p[0], p[1]))
    return "\n".join(p[2] for p in imports_first) + "\n\n" + code, sorted(pulled)
