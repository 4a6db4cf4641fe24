"""How the package is found: from a checkout whatever the install mode, and its bundled data with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest_humaneval

CHECKOUT = Path(__file__).resolve().parent.parent


def site_packages() -> str:
    paths = sysconfig.get_paths()
    return os.pathsep.join(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def test_python_m_pytest_from_a_checkout_finds_the_bundled_data_of_the_checkout(tmp_path):
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


def test_bundled_data_lives_inside_the_package():
    package = Path(pytest_humaneval.__file__).resolve().parent
    for name in ("HumanEval.jsonl.gz", "mock_samples.jsonl", "LICENSE-HumanEval", "PROVENANCE.md"):
        assert (package / "fixtures" / name).is_file(), name
