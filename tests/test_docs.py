"""The config snippets of the README and docs/ are real configs: each is loaded as the plugin loads a config.

A snippet that is a whole config (it has ``target``) is loaded as it stands; a fragment (``gate:`` alone) is
loaded beside a minimal target. YAML blocks that are not configs (a CI job's steps: a list) must still parse.
Every link from one page to another names a file that exists, and an anchor that one of its headings makes.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
from pathlib import Path

import pytest
import yaml

from pytest_humaneval.config import load_config

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^( *)```yaml\n(.*?)^\1```", re.M | re.S)


def snippets() -> list:
    found = []
    for page in PAGES:
        for index, match in enumerate(BLOCK.finditer(page.read_text())):
            text = "\n".join(line[len(match.group(1)):] for line in match.group(2).splitlines())
            found.append(pytest.param(text, id=f"{page.relative_to(ROOT)}-{index}"))
    return found


def test_the_pages_have_config_snippets():
    assert len(snippets()) >= 8


@pytest.mark.parametrize("text", snippets())
def test_every_config_snippet_loads(text, tmp_path, monkeypatch):
    data = yaml.safe_load(text)
    if isinstance(data, list):
        pytest.skip("a CI job's steps (a YAML list), not a config: nothing to load")
    assert isinstance(data, dict), text
    for name in re.findall(r"env:(\w+)", text):
        monkeypatch.setenv(name, "sk-test")
    if "target" not in data:
        data = {"target": {"mode": "mock"}, **data}
    folder = tmp_path / "humaneval"
    folder.mkdir()
    # The files a snippet names, where it names them (relative to the config's folder), as its user has them.
    dataset = data.get("dataset")
    dataset = dataset if isinstance(dataset, str) and dataset.endswith((".jsonl", ".jsonl.gz")) else None
    for named in ((data.get("gate") or {}).get("baseline"), (data.get("target") or {}).get("samples"), dataset):
        if named:
            (folder / named).parent.mkdir(parents=True, exist_ok=True)
            (folder / named).touch()
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    config = load_config(path)
    assert config.target.mode == data["target"]["mode"]


LINK = re.compile(r"\]\(([^)#\s]*)(#[^)\s]*)?\)")


def anchors(page: Path) -> set[str]:
    """The anchors a code host gives the page's headings."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), re.M):
        found.add("#" + re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_leads_somewhere(page):
    """Every link between the pages leads somewhere."""
    for target, anchor in LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        destination = (page.parent / target).resolve() if target else page
        assert destination.exists(), f"{page.name}: {target}"
        if anchor and destination.suffix == ".md":
            assert anchor in anchors(destination), f"{page.name}: {target}{anchor}"


# "see above", "(below)", "as above": a pointer a reader cannot follow (a page is read in pieces, from a link or a
# search); a pointer is a link to the heading it means.
VAGUE = re.compile(r"\b(?:see|as|described|listed|shown)\s+(?:\"[^\"]*\"\s+)?(?:above|below)\b|\((?:see\s+)?(?:above|below)\)"
                   r"|\"\s+(?:above|below)\b", re.I)


def headings() -> set[str]:
    return {heading.strip().lower().rstrip(".") for page in PAGES
            for heading in re.findall(r"^#+ (.+)$", page.read_text(), re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_section_pointers_are_links(page):
    """Every pointer to another section is a link."""
    text = page.read_text()
    prose = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks say what they say
    assert not [m.group(0) for m in VAGUE.finditer(prose)], page.name
    # A section named in quotes ("Several choices per request") instead of linked
    named = [quoted for quoted in re.findall(r"\"([^\"\n]{4,80})\"", prose) if quoted.lower().rstrip(".") in headings()]
    assert not named, f"{page.name}: {named}"


def live_configs() -> list:
    """The README's live config (its first runtime snippet) and examples/qwen.yaml, which it abridges."""
    readme = next(text for text in (param.values[0] for param in snippets() if param.id.startswith("README"))
                  if (yaml.safe_load(text).get("target") or {}).get("mode") == "runtime")
    return [pytest.param(readme, id="README.md"),
            pytest.param((ROOT / "examples" / "qwen.yaml").read_text(), id="examples/qwen.yaml")]


@pytest.mark.parametrize("text", live_configs())
def test_the_readme_live_config_runs_without_a_warning(text, pytester, monkeypatch):
    """The config a reader copies first runs as it stands (against a loopback server in place of the provider's)
    with no warning: a warning there would be one the reader cannot act on but by leaving the README."""
    from fake_openai import FakeOpenAI, choices, models

    from pytest_humaneval.data.dataset import load_problems

    problems = load_problems()[1]

    data = yaml.safe_load(text)

    def canonical(request, index):
        if request.method == "GET":
            return models(data["target"]["model"])
        problem = next(p for p in problems if p.prompt.strip() in request.prompt_text)
        return choices([f"```python\n{problem.prompt}{problem.canonical_solution}```"] * request.body.get("n", 1))

    for name in re.findall(r"env:(\w+)", text):
        monkeypatch.setenv(name, "sk-test-readme")
    with FakeOpenAI(canonical) as server:
        data["target"]["endpoint"] = server.url
        (pytester.path / "live.yaml").write_text(yaml.safe_dump(data))
        result = pytester.runpytest("--humaneval-config", "live.yaml", "--humaneval-set", "params.limit=1",
                                    "--humaneval-report", "r.json", "-p", "no:xdist", "-p", "no:cacheprovider",
                                    "-W", "ignore::pytest.PytestAssertRewriteWarning")
    result.assert_outcomes(passed=1)
    output = result.stdout.str()
    assert "warnings summary" not in output and "pytest-humaneval:" not in output, output
    assert json.loads((pytester.path / "r.json").read_text())["run"]["protocol"]["warnings"] == []


PYTHON_BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.M | re.S)


def python_snippets() -> list:
    found = []
    for page in PAGES:
        for index, match in enumerate(PYTHON_BLOCK.finditer(page.read_text())):
            text = "\n".join(line[len(match.group(1)):] for line in match.group(2).splitlines())
            found.append(pytest.param(text, id=f"{page.relative_to(ROOT)}-python-{index}"))
    return found


def bound_names(tree: ast.AST) -> set[str]:
    """Every name the snippet imports, defines or assigns, anywhere in it."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


@pytest.mark.parametrize("text", python_snippets())
def test_a_python_snippet_marks_the_functions_that_are_the_readers(text):
    """A function a Python snippet calls but neither imports nor defines is one the reader writes (an upload to
    their own store): its line says so, so nobody looks for it in the plugin."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        pytest.skip("an outline with '...' for the reader's arguments, not a whole program")
    known = bound_names(tree) | set(dir(builtins))
    lines = text.splitlines()
    unmarked = [lines[node.lineno - 1].strip() for node in ast.walk(tree)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in known
                and "your own" not in lines[node.lineno - 1]]
    assert not unmarked, unmarked


def test_the_tier_table_counts_no_tests_of_its_own():
    """The suite's size changes with every test added, so docs/development.md says how to count a tier's tests
    instead of a count that is soon wrong (it said 683 and 261 long after the suite had grown past them)."""
    text = (ROOT / "docs" / "development.md").read_text()
    assert not re.findall(r"\(\d[\d,]* tests\)", text)
    assert "pytest tests --collect-only -q" in text
