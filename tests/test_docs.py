"""The config snippets of the README and docs/ are real configs: each is loaded as the plugin loads a config.

A snippet that is a whole config (it has ``target``) is loaded as it stands; a fragment (``gate:`` alone) is
loaded beside a minimal target. YAML blocks that are not configs (a CI job's steps: a list) must still parse.
Every link from one page to another names a file that exists, and an anchor that one of its headings makes.
"""

from __future__ import annotations

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
    for named in ((data.get("gate") or {}).get("baseline"), (data.get("target") or {}).get("samples")):
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
