"""Correct programs that must pass in every isolation mode (a false failure is a wrong reward): what honest code
does that the sandbox's confinement could refuse by accident. Each program solves HumanEval/0 and, before it
answers, uses one facility; each mode the machine has runs them: namespaces (as root), Landlock (a default
container, ``container.py``) and the basic sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from container import available

from pytest_humaneval.sandbox import _confine

HERE = Path(__file__).resolve().parent
ANSWER = "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
PROGRAMS = {
    # In the Landlock mode a venv's interpreter could not start as a child: its pyvenv.cfg was not in the view.
    "child sys.executable": ("    import subprocess, sys\n"
                             "    out = subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True,"
                             " text=True)\n"
                             "    assert out.stdout.strip() == '42', out.stderr[-300:]\n"),
    "posix_spawn": ("    import os, sys\n"
                    "    pid = os.posix_spawn(sys.executable, [sys.executable, '-c', 'pass'], dict(os.environ))\n"
                    "    assert os.waitpid(pid, 0)[1] == 0\n"),
    "asyncio subprocess": ("    import asyncio, sys\n"
                           "    async def child():\n"
                           "        proc = await asyncio.create_subprocess_exec(sys.executable, '-c', 'print(1)',"
                           " stdout=asyncio.subprocess.PIPE)\n"
                           "        return (await proc.communicate())[0]\n"
                           "    assert asyncio.run(child()).strip() == b'1'\n"),
}
SCRIPT = f"""
import json, sys, warnings
warnings.simplefilter("ignore")
from pytest_humaneval import Verifier
programs = json.loads(sys.argv[2])
with Verifier("humaneval", workers=1, isolation=sys.argv[1], allow_basic=True) as verifier:
    verdicts = verifier.verify([("HumanEval/0", body + {ANSWER!r}) for body in programs.values()])
    print(json.dumps([verifier.isolation, {{name: [v.status.value, v.detail[:300]]
                                            for name, v in zip(programs, verdicts)}}]))
"""


def run_in(mode: str) -> tuple[str, dict]:
    command = [sys.executable, "-c", SCRIPT, "basic" if mode == "basic" else "auto", json.dumps(PROGRAMS)]
    if mode == "landlock":
        why = available()
        if why:
            pytest.skip(f"needs_root: a default container's confinement cannot be made here: {why}")
        if _confine.landlock_abi() < 1:
            pytest.skip("needs_landlock: the kernel has no Landlock")
        command = [sys.executable, str(HERE / "container.py"), "--", *command]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    isolation, verdicts = json.loads(run.stdout.strip().splitlines()[-1])
    return isolation, verdicts


@pytest.mark.parametrize("mode", ["auto", "landlock", "basic"])
def test_honest_programs_pass_in_every_mode(mode):
    isolation, verdicts = run_in(mode)
    if mode == "landlock":
        assert isolation == "landlock"
    failed = {name: verdict for name, verdict in verdicts.items() if verdict[0] != "passed"}
    assert failed == {}, (isolation, failed)
