"""Programs that read standard input, judged in the sandbox (issue 52's judge, its first part): the candidate's
standard input is a real descriptor the judge feeds, its standard output is read by the judge, never by code the
candidate can reach, and the comparison (LiveCodeBench's rule) runs in the judge. Each test of a problem is a fresh
candidate. Run in every isolation mode this machine has: namespaces (as root), user namespaces as nobody, Landlock
(a default container's confinement, ``container.py``) and the basic sandbox.

What each mode must give: every idiom of an honest program passes; wrong answers, a crash after the right output,
a program too slow for its input, an exit before any output, a flood and a closed standard output fail; a program
that hunts its process, its frames, its descriptors and its files for the expected output finds nothing (it finds
the token when the token is in its own input: the control that the hunt works); nothing of one test's candidate
reaches the next test's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import secrets
from typing import Any

import nobody
import pytest
from modes import last_json

from pytest_humaneval.sandbox import Program

pytestmark = pytest.mark.slow

BIG = 200_000  # numbers in the third test's input (about 1.3 MB): the pipe is fed while the program reads
NUMBERS = " ".join(str(number * 7 % 1000 - 500) for number in range(BIG))
SUM = sum(number * 7 % 1000 - 500 for number in range(BIG))
# The problem: N on the first line, N integers on the second; print their sum.
TESTS = [["2\n1 2\n", "3\n"], ["3\n5 7 -2\n", "10\n"], [f"{BIG}\n{NUMBERS}\n", f"{SUM}\n"]]
Tests = list[list[str]] | dict[str, Any]  # [input, output] pairs, or {"tests": pairs, "checker": source}

HONEST = {
    "input()": "n = int(input())\nprint(sum(map(int, input().split())))\n",
    "sys.stdin.read": "import sys\ndata = sys.stdin.read().split()\nprint(sum(map(int, data[1:])))\n",
    "sys.stdin.readline": "import sys\nsys.stdin.readline()\nprint(sum(map(int, sys.stdin.readline().split())))\n",
    "for line in sys.stdin": "import sys\nlines = [line for line in sys.stdin]\nprint(sum(map(int, lines[1].split())))\n",
    "sys.stdin.buffer": ("import sys\nsys.stdin.buffer.readline()\nline = sys.stdin.buffer.readline()\n"
                         "sys.stdout.buffer.write(str(sum(map(int, line.split()))).encode() + b'\\n')\n"),
    "open(0)": "data = open(0).read().split()\nprint(sum(map(int, data[1:])))\n",
    "os.read(0)": ("import os\nchunks = []\nwhile True:\n    chunk = os.read(0, 65536)\n    if not chunk:\n"
                   "        break\n    chunks.append(chunk)\ndata = b''.join(chunks).split()\n"
                   "print(sum(map(int, data[1:])))\n"),
    "fileinput": "import fileinput\nlines = list(fileinput.input())\nprint(sum(map(int, lines[1].split())))\n",
    "__main__ guard and exit()": ("def main():\n    input()\n    print(sum(map(int, input().split())))\n    exit()\n\n\n"
                                  "if __name__ == '__main__':\n    main()\n"),
    "sys.exit(0) after printing": "import sys\ninput()\nprint(sum(map(int, input().split())))\nsys.exit(0)\n",
    "a big-stack thread": ("import sys, threading\nsys.setrecursionlimit(100000)\nthreading.stack_size(256 << 20)\n\n\n"
                           "def depth(k):\n    return 0 if k == 0 else 1 + depth(k - 1)\n\n\n"
                           "def main():\n    input()\n    total = sum(map(int, input().split()))\n"
                           "    print(total + depth(20000) - 20000)\n\n\nthreading.Thread(target=main).start()\n"),
    # (a Pool's or a Queue's semaphores need /dev/shm, which no mode lets a candidate write: docs/safety.md)
    "multiprocessing": ("import multiprocessing\ninput()\nnumbers = list(map(int, input().split()))\n"
                        "ours, theirs = multiprocessing.Pipe()\n"
                        "child = multiprocessing.get_context('fork').Process(target=lambda: theirs.send(sum("
                        "numbers[: len(numbers) // 2])))\n"
                        "child.start()\nfirst = ours.recv()\nchild.join()\n"
                        "print(first + sum(numbers[len(numbers) // 2:]))\n"),
    "stdout.write, no newline": "import sys\ninput()\nsys.stdout.write(str(sum(map(int, input().split()))))\n",
    "print(flush=True) and 1.0 for 1": "input()\nprint(f'{sum(map(int, input().split()))}.000', flush=True)\n",
    # a competitive programmer's fast-I/O template (PyRival's): it reads the streams' mode and fileno
    "the FastIO template": ("import os, sys\nfrom io import BytesIO, IOBase\nBUFSIZE = 8192\n\n\n"
                            "class FastIO(IOBase):\n    newlines = 0\n\n    def __init__(self, file):\n"
                            "        self._fd = file.fileno()\n        self.buffer = BytesIO()\n"
                            "        self.writable = 'x' in file.mode or 'r' not in file.mode\n"
                            "        self.write = self.buffer.write if self.writable else None\n\n"
                            "    def read(self):\n        while True:\n"
                            "            b = os.read(self._fd, max(os.fstat(self._fd).st_size, BUFSIZE))\n"
                            "            if not b:\n                break\n            ptr = self.buffer.tell()\n"
                            "            self.buffer.seek(0, 2), self.buffer.write(b), self.buffer.seek(ptr)\n"
                            "        self.newlines = 0\n        return self.buffer.read()\n\n"
                            "    def flush(self):\n        if self.writable:\n"
                            "            os.write(self._fd, self.buffer.getvalue())\n"
                            "            self.buffer.truncate(0), self.buffer.seek(0)\n\n\n"
                            "sys.stdout = FastIO(sys.stdout)\ndata = FastIO(sys.stdin).read().split()\n"
                            "sys.stdout.write(str(sum(map(int, data[1:]))).encode() + b'\\n')\nsys.stdout.flush()\n"),
    "sys.stdout.close() at the end": "import sys\ninput()\nprint(sum(map(int, input().split())))\nsys.stdout.close()\n",
    "sys.exit(False)": "import sys\ninput()\nprint(sum(map(int, input().split())))\nsys.exit(False)\n",
    "stdout closed early, then an end in time": ("import os, sys, time\ninput()\n"
                                                  "print(sum(map(int, input().split())), flush=True)\nos.close(1)\n"
                                                  "time.sleep(1.3)\n"),
    "sys.stdout replaced after printing": ("import io, sys\ninput()\nprint(sum(map(int, input().split())))\n"
                                           "sys.stdout = io.TextIOWrapper(io.FileIO(1, 'w', closefd=False))\n"),
    "a file on fd 1 never flushed": ("import os\nout = os.fdopen(1, 'w', 1 << 20)\ninput()\n"
                                     "out.write(str(sum(map(int, input().split()))) + '\\n')\n"),
}
WRONG = {  # name -> (program, the status of its first failing test, the test's number)
    "a wrong answer": ("input()\nprint(sum(map(int, input().split())) + 1)\n", "assertion_failed", 1),
    "exit 1 after the right output": ("import sys\ninput()\nprint(sum(map(int, input().split())))\nsys.exit(1)\n",
                                      "runtime_error", 1),
    "an exception after the right output": ("input()\nprint(sum(map(int, input().split())))\nraise ValueError('late')\n",
                                            "runtime_error", 1),
    "quadratic on the large input": ("input()\nnumbers = list(map(int, input().split()))\ntotal = 0\n"
                                     "for i in range(len(numbers)):\n    total = sum(numbers[: i + 1])\nprint(total)\n",
                                     "timeout", 3),
    "exit(0) before any output": ("exit(0)\n", "assertion_failed", 1),
    "os._exit(0) before any output": ("import os\nos._exit(0)\n", "assertion_failed", 1),
    "killed by a signal": ("import os, signal\ninput()\nprint(3, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n",
                           "runtime_error", 1),
    "a flood of output": ("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n", "runtime_error", 1),
    "standard output closed, then on past its time": ("import os, time\nos.close(1)\ntime.sleep(3)\n", "timeout", 1),
    "a syntax error": ("print(\n", "runtime_error", 1),
}
# A hunter for the expected output, a random token only the judge holds. Its input is the token's SHA-256 (as a
# learner that can tell the answer when it sees it): it searches its own memory (every object, every frame up its
# stack), its environment, every descriptor it has and the files it can read (its working dir, /tmp, /proc's
# processes, the usual folders) for a 32-hex-digit string with that digest, and prints it, else "none".
HUNTER = r'''
import gc, hashlib, os, re, sys
data = sys.stdin.read()
target = data.split()[0]
token = re.compile(r"\b[0-9a-f]{32}\b")
found = []
def look(text):
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    if isinstance(text, str):
        found.extend(t for t in token.findall(text) if hashlib.sha256(t.encode()).hexdigest() == target)
look(data)
if found:  # (the control: its own input)
    print(found[0])
    raise SystemExit
for item in gc.get_objects():
    if isinstance(item, (dict, list, tuple)) and item is not found:
        for value in (item.values() if isinstance(item, dict) else item):
            look(value)
frame = sys._getframe()
while frame is not None:
    for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):
        look(value)
    frame = frame.f_back
look(" ".join(os.environ.values()))
for fd in range(3, 64):
    try:
        look(os.pread(fd, 1 << 20, 0))
    except OSError:
        pass
def files():
    for root in (".", "/tmp", "/dev/shm", "/var/tmp", "/root", "/home", "/proc"):
        for folder, dirs, names in os.walk(root):
            if folder.count("/") > 3 or "task" in dirs:
                dirs[:] = [name for name in dirs if name == "fd"] if folder.count("/") <= 3 else []
            for name in names:
                yield os.path.join(folder, name)
for seen, path in enumerate(files()):
    if seen > 3000 or found:
        break
    try:
        with open(path, "rb") as handle:
            look(handle.read(1 << 16))
    except OSError:
        pass
print(found[0] if found else "none")
'''
# Each test's candidate leaves its input where a later one would look; a later test passes only if it finds it.
LEFT_BEHIND = r'''
import os
data = input()
for folder in (".", "/tmp", "/dev/shm"):
    try:
        with open(os.path.join(folder, "left-behind.txt"), "x") as handle:
            handle.write(data)
    except OSError:
        pass
old = None
for folder in (".", "/tmp", "/dev/shm"):
    try:
        with open(os.path.join(folder, "left-behind.txt")) as handle:
            old = old or (handle.read() if handle.read(0) == "" else None)
    except OSError:
        pass
print(old if old and old != data else data)
'''

SCRIPT = """
import json, sys, warnings
warnings.simplefilter("ignore")
from pytest_humaneval.sandbox import Sandbox, SandboxError, Program, Limits
jobs = json.loads(sys.stdin.read())
box = Sandbox(sys.argv[1]).start()
try:
    found = {}
    for name, (code, tests, timeout_s, memory_mb) in jobs.items():
        rule, count = ("checker", len(tests["tests"])) if isinstance(tests, dict) else ("lcb", len(tests))
        try:
            result = box.run(Program("", code, json.dumps(tests), "", whole=True, io=rule, io_tests=count),
                             Limits(timeout_s=timeout_s, memory_mb=memory_mb))
        except SandboxError as exc:
            found[name] = ["harness_error", str(exc)[:300], ""]
            continue
        found[name] = [result.status.value, result.detail[:300], result.stderr[-300:]]
    print(json.dumps([box.isolation, found]))
finally:
    box.close()
"""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


# Programs that attack the judge itself: none may pass, and none may make the harness fail (harness_error: a reward
# of None the program chose). name -> (program, its tests, timeout_s, memory_mb)
AGAINST_THE_JUDGE = {
    # where it runs as the judge's uid (landlock, basic): a second write end on its own standard input, filled
    # between the judge's select and its write (the judge failed with BlockingIOError: a harness_error)
    "fills its own stdin": ("import os, threading, time\nw = os.open('/proc/self/fd/0', os.O_WRONLY)\n"
                            "def writer():\n    for _ in range(20000):\n        os.write(w, b'y' * 512)\n"
                            "for _ in range(3):\n    threading.Thread(target=writer, daemon=True).start()\n"
                            "time.sleep(0.02)\nfor _ in range(20000):\n    os.read(0, 512)\n",
                            [["x" * 2_000_000 + "\n", "3\n"]], 4.0, 2048),
    "drains its own stdout": ("import os, threading\nr = os.open('/proc/self/fd/1', os.O_RDONLY)\n"
                              "threading.Thread(target=lambda: [os.read(r, 512) for _ in range(2000)], daemon=True)"
                              ".start()\nfor _ in range(2000):\n    os.write(1, b'1\\n')\n",
                              [["", "3\n"]], 4.0, 2048),
    # 16 MB of lines just under the output cap: the judge's memory for comparing them is the sample's
    "a flood of lines under the cap": ("import sys\nsys.stdout.write('12\\n' * 5592000)\n", [["", "3\n"]], 4.0,
                                       256),
}


def program(code: str, tests: Tests) -> Program:
    """A job's program: its tests compared by LiveCodeBench's rule, or by the row's checker they carry."""
    if isinstance(tests, dict):
        return Program("", code, json.dumps(tests), "", whole=True, io="checker", io_tests=len(tests["tests"]))
    return Program("", code, json.dumps(tests), "", whole=True, io="lcb", io_tests=len(tests))


# A row's checker that wants a token only it holds printed: a hunter that finds the checker's text passes.
# (It accepts its test's expected output too, as every checker must: the judge asks that first.)
WANTS = "SECRET = {!r}\n\n\ndef check(input, expected, got):\n    return got.strip() in (SECRET, expected.strip())\n"


def jobs() -> dict[str, tuple[str, Tests, float, int]]:
    """Every program of this file with its tests (pairs, or pairs and a checker), time and memory limits; the
    hunters' tokens are new each run."""
    found: dict[str, tuple[str, Tests, float, int]] = {}
    for name, code in HONEST.items():
        found[name] = (code, TESTS, 5.0, 2048)
    for name, (code, _, _) in WRONG.items():
        found[name] = (code, TESTS, 2.0, 2048)
    for name, job in AGAINST_THE_JUDGE.items():
        found[name] = job
    hidden, told = secrets.token_hex(16), secrets.token_hex(16)
    found["hunter"] = (HUNTER, [[f"{digest(hidden)}\n", f"{hidden}\n"]], 20.0, 2048)
    found["hunter (control: the token in its input)"] = (HUNTER, [[f"{digest(told)} {told}\n", f"{told}\n"]], 10.0,
                                                         2048)
    secret, known = secrets.token_hex(16), secrets.token_hex(16)
    found["hunter of the checker"] = (HUNTER, {"checker": WANTS.format(secret),
                                               "tests": [[f"{digest(secret)}\n", "x\n"]]}, 20.0, 2048)
    found["hunter of the checker (control: the token in its input)"] = (
        HUNTER, {"checker": WANTS.format(known), "tests": [[f"{digest(known)} {known}\n", "x\n"]]}, 10.0, 2048)
    found["left behind"] = (LEFT_BEHIND, [["first\n", "first\n"], ["second\n", "first\n"]], 5.0, 2048)
    found["wrong case"] = ("print('YES')\n", [["1\n", "Yes\n"]], 5.0, 2048)
    # an output whose comparison takes longer than the program's time (the comparison is the judge's): two million
    # lines written 0.50000 where 0.5 is expected, each compared as decimals
    found["compared after a late end"] = ("import sys\nsys.stdout.write('0.50000\\n' * 2000000)\n",
                                          [["", "0.5\n" * 2000000]], 3.0, 2048)
    return found


@functools.cache
def run_in(mode: str) -> tuple[str, dict[str, list[str]]]:
    """The sandbox's level in ``mode`` and each program's [status, detail, stderr's end]."""
    if mode == "nobody":
        if nobody.unavailable():
            pytest.skip(f"needs_root and needs_system_python: {nobody.unavailable()}")
        found = {}
        with nobody.supervisor() as (ready, run):
            for name, (code, tests, timeout_s, memory_mb) in jobs().items():
                reply = run(program(code, tests), timeout_s=timeout_s, memory_mb=memory_mb)
                found[name] = [reply["status"], reply.get("detail", "")[:300], reply.get("stderr", "")[-300:]]
        return ready["isolation"], found
    isolation, found = last_json(mode, SCRIPT, "basic" if mode == "basic" else "auto", stdin=json.dumps(jobs()))
    return isolation, found


MODES = ["auto", "nobody", "landlock", "basic"]


@pytest.mark.parametrize("mode", MODES)
def test_every_idiom_of_an_honest_program_passes(mode):
    isolation, found = run_in(mode)
    failed = {name: found[name] for name in HONEST if found[name][0] != "passed"}
    assert failed == {}, (isolation, failed)


@pytest.mark.parametrize("mode", MODES)
def test_wrong_programs_fail_on_the_test_they_fail(mode):
    isolation, found = run_in(mode)
    got = {name: (found[name][0], found[name][1].split(":")[0]) for name in WRONG}
    expected = {name: (status, f"test {number} of 3") for name, (_, status, number) in WRONG.items()}
    assert got == expected, (isolation, {name: found[name] for name in WRONG if got[name] != expected[name]})
    assert found["a wrong answer"][1] == "test 1 of 3: wrong answer: line 1: expected '3', got '4'"
    assert found["exit 1 after the right output"][1] == "test 1 of 3: the program ended with exit code 1"
    assert "ValueError: late" in found["an exception after the right output"][2]
    assert found["wrong case"][:2] == ["assertion_failed", "test 1 of 1: wrong answer: line 1: expected 'Yes', "
                                                           "got 'YES'"]


@pytest.mark.parametrize("mode", MODES)
def test_a_program_cannot_make_the_judge_fail(mode):
    """Programs that fill their own input, drain their own output or flood lines under the cap: each is the
    program's failure (never passed), never the harness's (harness_error, a reward of None the program chose)."""
    isolation, found = run_in(mode)
    got = {name: found[name][0] for name in AGAINST_THE_JUDGE}
    assert not {"passed", "harness_error"} & set(got.values()), (isolation, {n: found[n] for n in AGAINST_THE_JUDGE})
    assert found["compared after a late end"][0] == "passed", (isolation, found["compared after a late end"])


@pytest.mark.parametrize("mode", MODES)
def test_the_expected_output_is_nowhere_the_program_can_look(mode):
    """The hunter finds no token where only the judge holds it, and finds it in its own input (the control)."""
    isolation, found = run_in(mode)
    assert found["hunter (control: the token in its input)"][0] == "passed", found
    assert found["hunter"][0] == "assertion_failed", (isolation, found["hunter"])
    assert found["hunter"][1].endswith("got 'none'"), (isolation, found["hunter"])


@pytest.mark.parametrize("mode", MODES)
def test_the_rows_checker_is_nowhere_the_program_can_look(mode):
    """A row's checker runs in the judge and travels with the tests: the hunter finds no token only the checker's
    text holds, and finds it in its own input (the control: the checker then accepts it)."""
    isolation, found = run_in(mode)
    assert found["hunter of the checker (control: the token in its input)"][0] == "passed", (isolation, found)
    assert found["hunter of the checker"][:2] == [
        "assertion_failed", "test 1 of 1: wrong answer: the row's checker refused the output (its first line: "
                            "'none')"], (isolation, found["hunter of the checker"])


@pytest.mark.parametrize("mode", MODES)
def test_nothing_of_one_tests_candidate_reaches_the_next(mode):
    isolation, found = run_in(mode)
    assert found["left behind"][:2] == ["assertion_failed", "test 2 of 2: wrong answer: line 1: expected 'first', "
                                                            "got 'second'"], (isolation, found["left behind"])


def test_a_crash_prints_the_programs_traceback_only(mode="auto"):
    """A program's exception is its traceback on stderr, from its own frames, as ``python prog.py`` prints it: no
    frame of the harness (its files' paths) in it."""
    isolation, found = run_in(mode)
    stderr = found["an exception after the right output"][2]
    assert 'File "<humaneval>", line 3, in <module>' in stderr and "ValueError: late" in stderr, stderr
    assert "pytest_humaneval" not in stderr and "_judge.py" not in stderr, stderr
