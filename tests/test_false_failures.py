"""Correct programs that must pass in every isolation mode (a false failure is a wrong reward): what honest code
does that the sandbox's confinement could refuse by accident. Each program solves HumanEval/0 and, before it
answers, uses one facility; each mode the machine has runs them: namespaces (as root), Landlock (a default
container, ``container.py``) and the basic sandbox. And correct programs that use sockets: each passes where the
confinement allows what it needs and fails, as docs/safety.md says it does, where the channel that refusal closes
could not be closed otherwise."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest
from modes import last_json

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
    # The candidate's __main__ was the supervisor's hidden script, which a spawned child re-runs: exit code 1.
    "multiprocessing spawn": ("    import multiprocessing\n"
                              "    child = multiprocessing.get_context('spawn').Process(target=abs, args=(-1,))\n"
                              "    child.start()\n"
                              "    child.join()\n"
                              "    assert child.exitcode == 0, child.exitcode\n"),
}
# name -> (body, what it needs): "unix" (a unix socket of its own, its name, and Python 3.12's asyncio streams send
# with sendmsg), "sendmsg" (from Python 3.12 only: asyncio's streams write what a socket cannot take at once, and
# writelines, with sendmsg) or "tcp" (refused in every mode: the table the kernel picks a connecting socket's port
# from is one for the whole machine)
SOCKETS = {
    # bind was refused in every mode, and socket() where there are no namespaces
    "multiprocessing.Manager": ("    import multiprocessing\n"
                                "    with multiprocessing.Manager() as manager:\n"
                                "        shared = manager.dict(n=6 * 7)\n"
                                "        assert shared['n'] == 42 and manager.list([1, 2])[1] == 2\n", "unix"),
    # as spawn above, and its server listens on a unix socket of a name of its own (Python 3.14's default method)
    "multiprocessing forkserver": ("    import multiprocessing\n"
                                   "    child = multiprocessing.get_context('forkserver').Process(target=abs, args=(-1,))\n"
                                   "    child.start()\n"
                                   "    child.join()\n"
                                   "    assert child.exitcode == 0, child.exitcode\n", "unix"),
    "asyncio unix server": ("    import asyncio\n"
                            "    async def echo():\n"
                            "        async def handle(reader, writer):\n"
                            "            writer.writelines([await reader.readline(), b'pong\\n'])\n"
                            "            await writer.drain()\n"
                            "            writer.close()\n"
                            "        server = await asyncio.start_unix_server(handle, 'echo.sock')\n"
                            "        reader, writer = await asyncio.open_unix_connection('echo.sock')\n"
                            "        writer.write(b'ping\\n')\n"
                            "        lines = [await reader.readline(), await reader.readline()]\n"
                            "        writer.close()\n"
                            "        server.close()\n"
                            "        return lines\n"
                            "    assert asyncio.run(echo()) == [b'ping\\n', b'pong\\n']\n", "unix"),
    # from Python 3.12 sendmsg was refused: ConnectionResetError, in every mode (on 3dc2c0a still in landlock and
    # basic, where sendmsg stays refused: there asyncio's transports now write with send)
    "asyncio streams write and writelines": (
        "    import asyncio, socket\n"
        "    async def pair():\n"
        "        one, other = socket.socketpair()\n"
        "        _, writer = await asyncio.open_connection(sock=one)\n"
        "        reader, _ = await asyncio.open_connection(sock=other)\n"
        "        writer.writelines([b'for', b'ty-', b'two\\n'])\n"
        "        writer.write(b'x' * 1_000_000)  # more than a socket's buffer: the rest is written as it drains\n"
        "        got, _ = await asyncio.gather(reader.readexactly(10 + 1_000_000), writer.drain())\n"
        "        writer.close()\n"
        "        return got[:10], len(got)\n"
        "    assert asyncio.run(pair()) == (b'forty-two\\n', 1_000_010)\n", "sendmsg"),
    "asyncio TCP echo on 127.0.0.1": ("    import asyncio\n"
                                      "    async def echo():\n"
                                      "        async def handle(reader, writer):\n"
                                      "            writer.write(await reader.readline())\n"
                                      "            await writer.drain()\n"
                                      "            writer.close()\n"
                                      "        server = await asyncio.start_server(handle, '127.0.0.1', 0)\n"
                                      "        address = server.sockets[0].getsockname()\n"
                                      "        reader, writer = await asyncio.open_connection(*address)\n"
                                      "        writer.write(b'ping\\n')\n"
                                      "        line = await reader.readline()\n"
                                      "        writer.close()\n"
                                      "        server.close()\n"
                                      "        return line\n"
                                      "    assert asyncio.run(echo()) == b'ping\\n'\n", "tcp"),
}


def passes(needs: str, isolation: str) -> bool:
    """Whether a program that needs ``needs`` passes under ``isolation`` (docs/safety.md, what the confinement costs
    honest programs): with namespaces each fork server has a network namespace of its own whose unix sockets it sees
    freed after each sample, so a candidate may make unix sockets, bind them and send descriptors; elsewhere it may
    make none but socketpair, and neither bind nor send with sendmsg (where asyncio's streams, which write with
    sendmsg from Python 3.12, are made to write with send, as before 3.12); TCP and UDP nowhere."""
    if needs == "sendmsg":
        return True
    return needs != "tcp" and isolation.startswith("namespaces")


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


@functools.cache
def run_in(mode: str) -> tuple[str, dict]:
    """The sandbox's level in ``mode`` and each program's [status, detail], PROGRAMS and SOCKETS in one run."""
    programs = {**PROGRAMS, **{name: body for name, (body, _) in SOCKETS.items()}}
    isolation, verdicts = last_json(mode, SCRIPT, "basic" if mode == "basic" else "auto", json.dumps(programs))
    return isolation, verdicts


@pytest.mark.parametrize("mode", ["auto", "landlock", "basic"])
def test_honest_programs_pass_in_every_mode(mode):
    isolation, verdicts = run_in(mode)
    if mode == "landlock":
        assert isolation == "landlock"
    failed = {name: verdict for name, verdict in verdicts.items() if name in PROGRAMS and verdict[0] != "passed"}
    assert failed == {}, (isolation, failed)


@pytest.mark.parametrize("mode", ["auto", "landlock", "basic"])
def test_socket_programs_pass_where_their_sockets_are_allowed(mode):
    """Each correct program that uses sockets passes where the confinement allows what it needs (with namespaces:
    multiprocessing.Manager and an asyncio unix server; asyncio streams on Python 3.12+ in every mode; each failed
    in every mode before), and elsewhere fails as a runtime error, as docs/safety.md says; a TCP server on
    127.0.0.1 nowhere. Run on Python 3.12+ (CI's newest-Python part) for the streams to tell anything."""
    isolation, verdicts = run_in(mode)
    got = {name: verdicts[name][0] for name in SOCKETS}
    expected = {name: "passed" if passes(needs, isolation) else "runtime_error" for name, (_, needs) in SOCKETS.items()}
    assert got == expected, (isolation, sys.version_info[:2], {name: verdicts[name] for name in SOCKETS})
