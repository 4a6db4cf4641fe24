"""The package's layout is its architecture: imports flow one way, and the trust boundary imports nothing.

Read from the sources (ast), not from a running interpreter: every ``import`` of a module of the package, at
any depth (lazy imports in functions count).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_humaneval"
# The floors, from the ground up (docs/development.md, "The layout"): a module imports modules of its own floor or
# of one below it, never one above, whatever it imports (a leaf is no exception: a module that imports nothing
# still has its floor).
FLOORS = (
    "sandbox",      # the trust boundary: imports nothing of the package
    "data",         # datasets and their loaders (and the bundled fixtures)
    "protocols",    # the published protocols' presets: a leaf below config
    "config",       # the YAML config -> RunConfig
    "plan",         # Sample, Plan
    "completions",  # samples files, extraction, the endpoint, the generation store
    "scoring",      # metrics, stats, selection, gate, schema: pure
    "outputs",      # Markdown, HTML, output paths: renderers of a report
    "engine",       # the judge, the Verifier, planning, the tally, the report: no pytest
    "faces",        # the pytest front (session/), the package's __init__ and __main__, rewards.py
)


def name_of(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def family(module: str) -> str:
    """The floor of ``module`` (a dotted name of the package)."""
    first = module.split(".")[1]
    if first == "fixtures":
        return "data"
    return first if first in FLOORS else "faces"


def imports(path: Path) -> set[str]:
    """The package's modules ``path`` imports (``from . import x`` counts as importing ``x``)."""
    module = name_of(path)
    here = module.split(".")[:-1]  # the package it is in (a package's __init__: that package)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {resolve(alias.name) for alias in node.names if alias.name.startswith("pytest_humaneval")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("pytest_humaneval"):
                target = node.module
            else:
                continue
            for alias in node.names:  # a module of that package, else a name defined in the package itself
                found.add(resolve(f"{target}.{alias.name}") or resolve(target))
    found.discard(module)
    found.discard(None)
    return found


def resolve(dotted: str) -> str | None:
    """The module ``dotted`` names, as a key of MODULES (a package is its ``__init__``), or None."""
    where = PACKAGE.parent / Path(*dotted.split("."))
    if where.with_suffix(".py").exists():
        return dotted
    if (where / "__init__.py").exists():
        return dotted + ".__init__"
    return None


MODULES = {name_of(path): path for path in PACKAGE.rglob("*.py")}
GRAPH = {module: imports(path) for module, path in MODULES.items()}


def test_every_module_has_its_floor():
    """A new top-level module or package is given its floor here on purpose, not by falling through to the top."""
    tops = {module.split(".")[1] for module in MODULES if module.count(".") >= 1}
    faces = {"__init__", "__main__", "cluster", "rewards", "session"}
    assert tops - set(FLOORS) - faces - {"fixtures"} == set()


def test_imports_go_down_the_floors():
    """Every module imports only its own floor or one below it: none runs back up, a leaf included."""
    rank = {name: index for index, name in enumerate(FLOORS)}
    upward = [(module, used) for module, targets in GRAPH.items() for used in targets
              if rank[family(used)] > rank[family(module)]]
    assert upward == []


def test_no_import_cycle():
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for used in GRAPH[module]:
            if state.get(used) == 1:
                raise AssertionError(" -> ".join([*path, module, used]))
            if not state.get(used):
                visit(used, [*path, module])
        state[module] = 2

    for module in GRAPH:
        if not state.get(module):
            visit(module, [])


def test_the_pytest_front_names_the_engine_not_the_sandbox():
    """One judge decides every verdict: the pytest side reaches the sandbox only through the engine's judge."""
    front = {module: used for module, used in GRAPH.items() if module.startswith("pytest_humaneval.session.")}
    assert {module: sorted(u for u in used if u.startswith("pytest_humaneval.sandbox")) for module, used in front.items()
            if any(u.startswith("pytest_humaneval.sandbox") for u in used)} == {}
    assert "pytest_humaneval.engine.judge" in GRAPH["pytest_humaneval.engine.__init__"]
    assert "pytest_humaneval.engine.__init__" in GRAPH["pytest_humaneval.session.items"]  # (its Judge)


def test_trust_boundary_imports_nothing():
    """The trust boundary's own files import nothing of the package."""
    # The supervisor loads them by path in an interpreter of its own: nothing of the package may come in.
    for path in (PACKAGE / "sandbox").glob("_*.py"):
        if path.name == "__init__.py":
            continue
        outside = [used for used in GRAPH[name_of(path)] if not used.startswith("pytest_humaneval.sandbox._")]
        assert outside == [], path.name
        assert "import pytest" not in path.read_text(), path.name


@pytest.mark.slow
def test_only_pytest_side_imports_pytest():
    """The engine (and everything below it) never imports pytest: scripts and trainers call it without pytest."""
    for module, path in MODULES.items():
        names = {alias.name.split(".")[0] for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, (ast.Import, ast.ImportFrom))
                 for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
        if names & {"pytest", "_pytest", "xdist", "pluggy"}:
            assert module.startswith("pytest_humaneval.session."), module


def test_processes_start_only_in_sandbox():
    """Every process the package starts, and every exec, is in the sandbox folder."""
    # Running code (a candidate's, or the dataset's trusted canonical solutions) means a process the harness
    # starts, or exec. Outside sandbox/ only data/plus.py starts one: sandbox/_expected.py, for HumanEval+'s
    # expected outputs, in a process of its own.
    starts = {}
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                named = (f"{func.value.id}.{func.attr}" if isinstance(func, ast.Attribute)
                         and isinstance(func.value, ast.Name) else getattr(func, "id", ""))
                if named in ("os.fork", "subprocess.Popen", "subprocess.run", "exec", "os.execv", "os.execve"):
                    starts.setdefault(family(module), set()).add(module)
    assert set(starts) == {"sandbox", "data"}, starts
    assert starts["data"] == {"pytest_humaneval.data.plus"}
    assert "pytest_humaneval.sandbox._zygote" in starts["sandbox"] and \
        "pytest_humaneval.sandbox._judge" in starts["sandbox"]


@pytest.mark.slow
def test_no_private_pytest_import():
    """pytest's public API only (``pytest.*``): any ``_pytest`` module may change in a minor release."""
    private = {str(path.relative_to(PACKAGE)): node.lineno for path in PACKAGE.rglob("*.py")
               for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, (ast.Import, ast.ImportFrom))
               and any(name.split(".")[0] == "_pytest" for name in
                       ([node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]))}
    assert private == {}
