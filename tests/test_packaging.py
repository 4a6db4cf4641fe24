"""How the package is found: from a checkout whatever the install mode, and its bundled data with it; what its
wheel and sdist contain."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import pytest_humaneval

CHECKOUT = Path(__file__).resolve().parent.parent


def site_packages() -> str:
    paths = sysconfig.get_paths()
    return os.pathsep.join(dict.fromkeys([paths["purelib"], paths["platlib"]]))


@pytest.mark.slow
def test_checkout_finds_its_own_data(tmp_path):
    """python -m pytest from a checkout finds the bundled data of the checkout."""
    # `python -m pytest` (tox, most CI templates) puts the current directory first on sys.path, so the
    # checkout's `pytest_humaneval/` shadows any installed copy: everything the package reads must be inside
    # it. `-S` with the site-packages on PYTHONPATH imports the dependencies without running their .pth
    # files, as with a plain (non-editable) install: no editable-install finder maps the data back in.
    config = tmp_path / "mock.yaml"
    config.write_text("target: {mode: mock}\nparams: {limit: 3}\n")
    env = {**os.environ, "PYTHONPATH": site_packages()}
    where = subprocess.run([sys.executable, "-S", "-c", "import pytest_humaneval; print(pytest_humaneval.__file__)"],
                           cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()).parent == CHECKOUT / "pytest_humaneval", where.stderr
    run = subprocess.run([sys.executable, "-S", "-m", "pytest", "--humaneval-config", str(config), "-q",
                          "-p", "no:cacheprovider", "--humaneval-report", str(tmp_path / "report.json")],
                         cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=120)
    assert "INTERNALERROR" not in run.stdout + run.stderr, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["planned"] == 3 and report["run"]["mode"] == "mock-replay"


def test_data_inside_the_package():
    """The bundled data lives inside the package."""
    package = Path(pytest_humaneval.__file__).resolve().parent
    for name in DATA_FILES:
        assert (package.parent / name).is_file(), name


DATA_FILES = ["pytest_humaneval/fixtures/HumanEval.jsonl.gz", "pytest_humaneval/fixtures/mock_samples.jsonl",
              "pytest_humaneval/fixtures/LICENSE-HumanEval", "pytest_humaneval/fixtures/PROVENANCE.md",
              "pytest_humaneval/fixtures/io_corpus.jsonl", "pytest_humaneval/fixtures/io_corpus_programs.json",
              "pytest_humaneval/fixtures/humanevalplus/HumanEvalPlus.jsonl.gz",
              "pytest_humaneval/fixtures/humanevalplus/HumanEvalPlus-Mini.jsonl.gz",
              "pytest_humaneval/fixtures/humanevalplus/HumanEvalPlus-NoExtreme.jsonl.gz",
              "pytest_humaneval/fixtures/humanevalplus/LICENSE", "pytest_humaneval/fixtures/humanevalplus/PROVENANCE.md",
              "pytest_humaneval/fixtures/mbppplus/MbppPlus.jsonl.gz",
              "pytest_humaneval/fixtures/mbppplus/MbppPlus-NoExtreme.jsonl.gz",
              "pytest_humaneval/fixtures/mbppplus/LICENSE", "pytest_humaneval/fixtures/mbppplus/PROVENANCE.md",
              "pytest_humaneval/fixtures/impossible/humaneval-impossible.jsonl.gz",
              "pytest_humaneval/fixtures/impossible/humaneval-impossible-oneoff.jsonl.gz",
              "pytest_humaneval/fixtures/impossible/humaneval-impossible-conflicting.jsonl.gz",
              "pytest_humaneval/fixtures/impossible/LICENSE", "pytest_humaneval/fixtures/impossible/PROVENANCE.md",
              "pytest_humaneval/outputs/assets/report.css", "pytest_humaneval/outputs/assets/report.js", "pytest_humaneval/py.typed"]
NOT_SOURCES = shutil.ignore_patterns(".git", "__pycache__", "*.py[cod]", "*.egg-info", "build", "dist", ".pytest_cache",
                                     ".venv", "out")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[list[str], list[str], str, str]:
    """(wheel members, sdist members without the top folder, the build's log, the wheel's METADATA), built by the
    project's own backend (setuptools.build_meta) from a copy of the checkout."""
    work = tmp_path_factory.mktemp("build")
    source = work / "src"
    shutil.copytree(CHECKOUT, source, ignore=NOT_SOURCES)
    script = ("import sys\nfrom setuptools import build_meta as backend\n"  # (the backend rewrites sys.argv)
              "out = sys.argv[1]\nprint('SDIST', backend.build_sdist(out))\nprint('WHEEL', backend.build_wheel(out))\n")
    run = subprocess.run([sys.executable, "-c", script, str(work / "dist")], cwd=source, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    names = dict(line.split(" ", 1) for line in run.stdout.splitlines() if line.startswith(("SDIST ", "WHEEL ")))
    with zipfile.ZipFile(work / "dist" / names["WHEEL"]) as wheel:
        members = wheel.namelist()
        metadata = wheel.read(next(name for name in members if name.endswith(".dist-info/METADATA"))).decode()
    with tarfile.open(work / "dist" / names["SDIST"]) as sdist:
        sources = [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]
    return members, sources, run.stdout + run.stderr, metadata


@pytest.mark.slow
def test_wheel_carries_the_licences(built):
    """The wheel carries the project's licence, and every bundled dataset with its own."""
    members, _, log, metadata = built
    missing = [name for name in DATA_FILES if name not in members]
    assert missing == [], missing
    licences = [name.split(".dist-info/licenses/", 1)[1] for name in members if ".dist-info/licenses/" in name]
    assert sorted(licences) == ["LICENSE", "pytest_humaneval/fixtures/LICENSE-HumanEval",
                                "pytest_humaneval/fixtures/humanevalplus/LICENSE",
                                "pytest_humaneval/fixtures/impossible/LICENSE",
                                "pytest_humaneval/fixtures/mbppplus/LICENSE"]
    assert "License-Expression: MIT AND Apache-2.0 AND CC-BY-4.0" in metadata.splitlines()
    assert "absent from the `packages` configuration" not in log, "setuptools warns about a data folder"


@pytest.mark.slow
def test_wheel_carries_every_module(built):
    """Every module of the checkout's package is in the wheel (a subpackage left out of pyproject.toml's
    ``packages`` list is missing from every plain install, engine/ and session/ once were)."""
    members, *_ = built
    modules = sorted(str(path.relative_to(CHECKOUT)) for path in (CHECKOUT / "pytest_humaneval").rglob("*.py"))
    missing = [module for module in modules if module not in members]
    assert missing == [], missing


def test_sdist_is_the_whole_project(built):
    """The sdist is the whole project: its tests run from it."""
    _, sources, _, _ = built
    needed = [str(path.relative_to(CHECKOUT)) for folder in ("tests", "examples", "bench")
              for path in sorted((CHECKOUT / folder).rglob("*"))
              if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
              and "out" not in path.relative_to(CHECKOUT).parts]
    missing = [name for name in [*needed, *DATA_FILES, "pyproject.toml", "README.md", "LICENSE"]
               if name not in sources]
    assert missing == [], missing
    assert "tests/conftest.py" in needed and "tests/data/junit-10.xsd" in needed
