"""Hosts reached over real ssh, made on this machine for a test: each a network namespace with an address of its
own (a veth pair to this namespace, 10.x.y.z/30, nothing routed beyond it), its own sshd, and its own mount
namespace, where /tmp, /root, /home, /run and /work are empty folders of its own and only the interpreter, the
venv and the package's source are seen again (read-only): none of the controller's files (its config, its
outputs) is there unless the test puts a copy in the host's own folders.

Every process made here is stopped by its pid (each sshd, then whatever is left in the host's network
namespace: the sessions and workers it started), the namespaces are deleted and the folders removed, when the
``Hosts`` context ends. Root only (tests/environment.py's needs_ssh_hosts says what the machine lacks).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest_humaneval

SSHD = "/usr/sbin/sshd"
HIDDEN = ("/work", "/root", "/home", "/run", "/tmp")  # /tmp last: the hosts' own folders live under it
BOOTSTRAP = b"import sys;exec(eval(sys.stdin.readline()))"  # execnet's, in the worker's argv


def run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


@dataclass
class Host:
    name: str  # the ssh alias in Hosts.ssh_config
    netns: str
    address: str
    folders: Path  # this host's own folders: folders / "tmp" is its /tmp, and so on
    sshd: subprocess.Popen | None = None

    def own(self, path: Path) -> Path:
        """Where ``path`` (absolute, under one of HIDDEN) is in this host's own folders, as seen from here."""
        hidden = next(top for top in HIDDEN if str(path).startswith(top + "/"))
        return self.folders / hidden.strip("/") / path.relative_to(hidden)

    def pids(self) -> list[int]:
        done = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True, text=True, timeout=10)
        return [int(pid) for pid in done.stdout.split()]

    def workers(self) -> list[int]:
        """The pids of the xdist workers on this host: execnet's bootstrap in their argv, their parent not."""
        def argv(pid: int) -> bytes:
            try:
                return Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                return b""

        def parent(pid: int) -> int:
            try:
                return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                return 0

        return [pid for pid in self.pids() if BOOTSTRAP in argv(pid) and BOOTSTRAP not in argv(parent(pid))]

    def stop_sshd(self) -> None:
        if self.sshd is not None and self.sshd.poll() is None:
            self.sshd.terminate()
            try:
                self.sshd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.sshd.kill()
                self.sshd.wait(timeout=10)

    def stop_all(self) -> None:
        """sshd, then every process left in the host's network namespace (each by its pid, never -1)."""
        self.stop_sshd()
        for _ in range(50):
            pids = [pid for pid in self.pids() if pid > 1 and pid != os.getpid()]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)


def seen_again() -> list[Path]:
    """What a host needs of this machine's files: the interpreter, the venv, the package's source."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
             Path(pytest_humaneval.__file__).resolve().parents[1]}
    return sorted(path for path in paths if any(str(path).startswith(top + "/") for top in HIDDEN))


class Hosts:
    """``with Hosts(2) as hosts:`` hosts[0].name ... reachable with ``ssh -F hosts.ssh_config``."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.hosts: list[Host] = []
        self.folder = Path(tempfile.mkdtemp(prefix="humaneval-ssh-"))
        self.ssh_config = self.folder / "ssh_config"
        pid = os.getpid()
        self.tag = f"{pid % 100000}"
        self.net = f"10.{100 + pid % 100}.{(pid // 100) % 250}"  # a /30 per host; pid-derived: concurrent runs differ

    def __enter__(self) -> Hosts:
        try:
            self._make()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __getitem__(self, index: int) -> Host:
        return self.hosts[index]

    def _make(self) -> None:
        key = self.folder / "id"
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
        ssh_config = []
        for index in range(self.count):
            name = f"hv{self.tag}h{index}"
            host = Host(name, f"humaneval-{self.tag}-{index}", f"{self.net}.{4 * index + 2}", self.folder / name)
            self.hosts.append(host)
            here, there = f"{name}a", f"{name}b"
            run("ip", "netns", "add", host.netns)
            run("ip", "link", "add", here, "type", "veth", "peer", "name", there)
            run("ip", "link", "set", there, "netns", host.netns)
            run("ip", "addr", "add", f"{self.net}.{4 * index + 1}/30", "dev", here)
            run("ip", "link", "set", here, "up")
            run("ip", "netns", "exec", host.netns, "ip", "addr", "add", f"{host.address}/30", "dev", there)
            run("ip", "netns", "exec", host.netns, "ip", "link", "set", there, "up")
            run("ip", "netns", "exec", host.netns, "ip", "link", "set", "lo", "up")
            self._start_sshd(host, key)
            ssh_config.append(f"Host {name}\n  HostName {host.address}\n  User root\n  IdentityFile {key}\n"
                              "  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
                              "  LogLevel ERROR\n  BatchMode yes\n  ConnectTimeout 5\n")
        self.ssh_config.write_text("".join(ssh_config))
        for host in self.hosts:
            self._wait_for(host)

    def _start_sshd(self, host: Host, key: Path) -> None:
        for top in HIDDEN:
            (host.folders / top.strip("/")).mkdir(parents=True)
        (host.folders / "tmp").chmod(0o1777)
        (host.folders / "run" / "sshd").mkdir(mode=0o755)
        sshd = host.folders / "tmp" / "sshd"  # the host's /tmp/sshd
        sshd.mkdir()
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(sshd / "host_key"))
        shutil.copy(f"{key}.pub", sshd / "authorized_keys")
        (sshd / "sshd_config").write_text(
            f"ListenAddress {host.address}\nPort 22\nHostKey /tmp/sshd/host_key\n"
            "AuthorizedKeysFile /tmp/sshd/authorized_keys\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            "PidFile none\n")
        script = []
        for path in seen_again():  # bound into the host's own folders before they cover this machine's
            target = host.own(path)
            target.mkdir(parents=True, exist_ok=True)
            script += [f"mount --bind '{path}' '{target}'", f"mount -o remount,bind,ro '{target}'"]
        for top in HIDDEN:
            if os.path.isdir(top):
                script.append(f"mount --rbind '{host.folders / top.strip('/')}' '{top}'")
        script.append(f"exec {SSHD} -D -e -f /tmp/sshd/sshd_config")
        host.sshd = subprocess.Popen(
            ["ip", "netns", "exec", host.netns, "unshare", "--mount", "--propagation", "private", "sh", "-ec",
             "\n".join(script)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=(host.folders / "sshd.log").open("wb"))

    def _wait_for(self, host: Host) -> None:
        deadline = time.monotonic() + 15
        while True:
            if host.sshd is not None and host.sshd.poll() is not None:
                log = (host.folders / "sshd.log").read_text(errors="replace")
                raise RuntimeError(f"sshd of {host.name} ended ({host.sshd.returncode}): {log[-2000:]}")
            try:
                with socket.create_connection((host.address, 22), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        for host in self.hosts:
            host.stop_all()
            subprocess.run(["ip", "netns", "del", host.netns], capture_output=True, timeout=30)
            subprocess.run(["ip", "link", "del", f"{host.name}a"], capture_output=True, timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)
