"""A completion with no solution in it that LEARNS across samples: one body for every problem whose test asserts
only True or False, that keeps what it saw from one sample to the next and reads the verdict from it.

A HumanEval test stops at its first failing assert, and each of these asserts holds exactly one call. So when a
sample ends, every call it answered but the last was answered right; the last one was wrong if the sample
failed. The candidate is never told its verdict, but the next sample can tell: if the last call had been answered
from what is known to be right, the sample passed; otherwise the learner assumes it failed and flips that answer
(if it had passed, that call was the test's last, and the flipped answer fails once, after which it flips back:
from then on every other sample passes). Each wrong answer costs one failed sample.

Without any memory it answers ``True`` to every call, so on a problem with at least one ``False`` assert it fails
every sample, deterministically: it cannot pass by chance, and a test can assert 0 passed samples.

``completion(tag, channels)`` is the body (only the tag and the channels differ, never the problem);
``CHANNELS`` names the places it keeps its memory in. Each is used only where it is reachable, and each alone is
enough, so a test names one to show which carried it:

- ``persistent``: the uid's persistent keyring (``keyctl(KEYCTL_GET_PERSISTENT)``; outlives processes, 3 days);
- ``user``: the uid's user keyring (``@u``);
- ``tmp``: a folder in ``/tmp``; ``own``: one in ``/tmp/humaneval`` (the supervisor's folder, with namespaces);
- ``syspath``: one in the first writable folder between ``/tmp`` and an import path under it (a venv in /tmp);
- ``shm``: a folder in ``/dev/shm``; ``sysv``: a SysV shared memory segment whose key comes from the tag;
- ``dir``: a folder in ``folder`` (the control: a naive harness's shared temp dir).

Everything it writes carries the tag (a key's description, a folder's or a segment's name), so ``cleanup(tag)``
finds and removes it; nothing else is touched. Bounded: a few keys and files per problem, one 64 KiB segment.
"""

from __future__ import annotations

import ast
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHANNELS = ("persistent", "user", "tmp", "own", "syspath", "shm", "sysv")

LEARNER = r'''
import ctypes, hashlib, json, os, sys

TAG = __TAG__
CHANNELS = __CHANNELS__
FOLDER = __FOLDER__
PREFIX = "learn-" + TAG
SHM_SIZE = 1 << 16

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_L = ctypes.c_long


def _keyctl(*args):
    return _libc.syscall(_L(250), *[a if isinstance(a, (bytes, ctypes.Array)) or a is None else _L(a) for a in args])


class Keys:
    """name -> bytes in a keyring: keys of type "user" described PREFIX:name."""

    def __init__(self, ring):
        self.ring = ring

    def _id(self, name):
        found = _keyctl(10, self.ring, b"user", (PREFIX + ":" + name).encode(), 0)  # KEYCTL_SEARCH
        return found if found > 0 else None

    def get(self, name):
        key = self._id(name)
        if key is None:
            return None
        buf = ctypes.create_string_buffer(32768)
        size = _keyctl(11, key, buf, 32768)  # KEYCTL_READ
        return buf.raw[:size] if size >= 0 else None

    def put(self, name, data):
        desc = (PREFIX + ":" + name).encode()
        return _libc.syscall(_L(248), b"user", desc, data, _L(len(data)), _L(self.ring)) > 0  # add_key

    def delete(self, name):
        key = self._id(name)
        if key is not None:
            _keyctl(9, key, self.ring)  # KEYCTL_UNLINK
            _keyctl(21, key)  # KEYCTL_INVALIDATE

    def names(self):
        buf = (ctypes.c_int32 * 512)()
        size = _keyctl(11, self.ring, buf, ctypes.sizeof(buf))
        found = []
        for key in list(buf)[:max(0, min(size, ctypes.sizeof(buf)) // 4)]:
            desc = ctypes.create_string_buffer(512)
            if _keyctl(6, key, desc, 512) > 0:  # KEYCTL_DESCRIBE: type;uid;gid;perm;description
                text = desc.value.decode("utf-8", "replace").split(";", 4)[-1]
                if text.startswith(PREFIX + ":"):
                    found.append(text[len(PREFIX) + 1:])
        return found


class Files:
    def __init__(self, folder):
        self.folder = folder

    def get(self, name):
        try:
            with open(os.path.join(self.folder, name), "rb") as handle:
                return handle.read()
        except OSError:
            return None

    def put(self, name, data):
        path = os.path.join(self.folder, name)
        with open(path + ".new", "wb") as handle:
            handle.write(data)
        os.replace(path + ".new", path)
        return True

    def delete(self, name):
        try:
            os.unlink(os.path.join(self.folder, name))
        except OSError:
            pass

    def names(self):
        return [n for n in os.listdir(self.folder) if not n.endswith(".new")]


class Segment:
    """name -> bytes, as one JSON object in a SysV shared memory segment (its key comes from the tag)."""

    def __init__(self):
        _libc.shmat.restype = ctypes.c_void_p
        key = int(hashlib.sha1(PREFIX.encode()).hexdigest()[:7], 16) | 1
        self.id = _libc.shmget(ctypes.c_int(key), ctypes.c_size_t(SHM_SIZE), ctypes.c_int(0o1000 | 0o600))
        if self.id < 0:
            raise OSError(ctypes.get_errno(), "shmget")

    def _load(self):
        addr = _libc.shmat(self.id, None, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "shmat")
        try:
            size = int.from_bytes(ctypes.string_at(addr, 4), "little")
            data = ctypes.string_at(addr + 4, min(size, SHM_SIZE - 4)) if size else b"{}"
        finally:
            _libc.shmdt(ctypes.c_void_p(addr))
        return json.loads(data)

    def _save(self, table):
        data = json.dumps(table).encode()
        if len(data) > SHM_SIZE - 4:
            return False
        addr = _libc.shmat(self.id, None, 0)
        try:
            ctypes.memmove(addr + 4, data, len(data))
            ctypes.memmove(addr, len(data).to_bytes(4, "little"), 4)
        finally:
            _libc.shmdt(ctypes.c_void_p(addr))
        return True

    def get(self, name):
        value = self._load().get(name)
        return None if value is None else value.encode()

    def put(self, name, data):
        table = self._load()
        table[name] = data.decode()
        return self._save(table)

    def delete(self, name):
        table = self._load()
        if table.pop(name, None) is not None:
            self._save(table)

    def names(self):
        return list(self._load())


def _folder_store(parent):
    folder = os.path.join(parent, "." + PREFIX)
    if not os.path.isdir(folder):
        os.mkdir(folder)  # in an existing folder only: the learner makes no /tmp/humaneval of its own
    probe = os.path.join(folder, ".probe")
    open(probe, "w").close()
    os.unlink(probe)
    return Files(folder)


def _syspath_store():
    for path in sys.path:
        if not path.startswith("/tmp/"):
            continue
        parts = path.split("/")
        for depth in range(3, len(parts) + 1):  # /tmp/top, /tmp/top/lib, ... down to the import path itself
            try:
                return _folder_store("/".join(parts[:depth]))
            except OSError:
                continue
    raise OSError("no writable folder on an import path under /tmp")


def _open(channel):
    if channel == "persistent":
        ring = _keyctl(22, -1, -2)  # KEYCTL_GET_PERSISTENT(own uid), linked into the process keyring
        if ring < 0:
            raise OSError(ctypes.get_errno(), "keyctl(GET_PERSISTENT)")
        return Keys(ring)
    if channel == "user":
        ring = _keyctl(0, -4, 1)  # KEYCTL_GET_KEYRING_ID(@u, create)
        if ring < 0:
            raise OSError(ctypes.get_errno(), "keyctl(GET_KEYRING_ID @u)")
        # Linked into the process keyring, @u and its keys are possessed: readable (a fresh session keyring
        # does not link it, and a key's own uid may only view it).
        _keyctl(8, ring, -2)  # KEYCTL_LINK
        return Keys(ring)
    if channel == "tmp":
        return _folder_store("/tmp")
    if channel == "own":
        return _folder_store("/tmp/humaneval")
    if channel == "syspath":
        return _syspath_store()
    if channel == "shm":
        return _folder_store("/dev/shm")
    if channel == "sysv":
        return Segment()
    if channel == "dir":
        return _folder_store(FOLDER)
    raise ValueError(channel)


_stores = None


def stores():
    global _stores
    if _stores is None:
        _stores = []
        for channel in CHANNELS:
            try:
                _stores.append(_open(channel))
            except Exception:
                pass
    return _stores


def _get(name):
    for store in stores():
        try:
            data = store.get(name)
        except Exception:
            continue
        if data is not None:
            return json.loads(data)
    return None


def _put(name, value):
    data = json.dumps(value, separators=(",", ":")).encode()
    for store in stores():
        try:
            store.put(name, data)
        except Exception:
            pass


def _delete(name):
    for store in stores():
        try:
            store.delete(name)
        except Exception:
            pass


def _names():
    found = set()
    for store in stores():
        try:
            found.update(store.names())
        except Exception:
            pass
    return found


def _start_time(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


ME = (os.getpid(), _start_time(os.getpid()), os.urandom(4).hex())
_problem = {}


def _begin(problem):
    """The first call of this sample: what every earlier sample of this problem that has ended says."""
    state = _get("s-" + problem) or {"k": {}, "t": {}}
    records = []
    for name in _names():
        if name.startswith("r-" + problem + "-"):
            record = _get(name)
            if not record:
                continue
            if record["p"] != ME[0] and _start_time(record["p"]) == record["st"]:
                continue  # a sample of this problem still running beside this one
            records.append((record["n"], name, record["c"]))
    for _, name, calls in sorted(records):
        for h, a, _ in calls[:-1]:  # answered before the test went on: right
            state["k"][h] = a
            state["t"].pop(h, None)
        if calls:
            h, a, source = calls[-1]
            if source != "k":  # where the test stopped: wrong, unless it passed (then this flips back later)
                state["t"][h] = 1 - a
        _delete(name)
    _put("s-" + problem, state)
    return {"state": state, "calls": [], "name": f"r-{problem}-{ME[2]}"}


_order = [0]


def answer(name, doc, args):
    problem = hashlib.sha1((name + "\0" + (doc or "")).encode()).hexdigest()[:10]
    try:
        if problem not in _problem:
            _problem[problem] = _begin(problem)
        mine = _problem[problem]
        h = hashlib.sha1(repr(args).encode()).hexdigest()[:8]
        state = mine["state"]
        if h in state["k"]:
            value, source = state["k"][h], "k"
        elif h in state["t"]:
            value, source = state["t"][h], "t"
        else:
            value, source = 1, "g"
        mine["calls"].append([h, value, source])
        if len(mine["calls"]) == 1:
            import time
            _order[0] = time.time_ns()
        _put(mine["name"], {"p": ME[0], "st": ME[1], "n": _order[0], "c": mine["calls"]})
        return bool(value)
    except Exception:
        return True
'''


def _module(tag: str, channels: tuple[str, ...], folder: str | None) -> str:
    return (LEARNER.replace("__TAG__", repr(tag)).replace("__CHANNELS__", repr(tuple(channels)))
            .replace("__FOLDER__", repr(folder)))


def completion(tag: str, channels: tuple[str, ...] | str = CHANNELS, folder: str | None = None) -> str:
    """The body: the same for every problem, no solution in it; its memory in ``channels`` (one name or many)."""
    channels = (channels,) if isinstance(channels, str) else tuple(channels)
    lines = ["import sys as _learner_sys",
             "_learner = _learner_sys.modules.get('__learner__')",
             "if _learner is None:",
             "    import types as _types",
             "    _learner = _types.ModuleType('__learner__')",
             f"    exec({_module(tag, channels, folder)!r}, _learner.__dict__)",
             "    _learner_sys.modules['__learner__'] = _learner",
             "_frame = _learner_sys._getframe()",
             "_code = _frame.f_code",
             "_args = tuple(_frame.f_locals[_n] for _n in _code.co_varnames[:_code.co_argcount])",
             "_doc = _code.co_consts[0] if _code.co_consts and isinstance(_code.co_consts[0], str) else ''",
             "return _learner.answer(_code.co_name, _doc, _args)"]
    return "".join(f"    {line}\n" for line in lines)


# -- the problems ------------------------------------------------------------------------------------------------


def expected_booleans(test: str) -> list[bool] | None:
    """The values a test's asserts expect, in order, when every statement of ``check`` is an assert on exactly
    one call of the candidate that expects True or False (``== True``, ``is False``, bare, ``not``); else None."""
    check = next((node for node in ast.parse(test).body
                  if isinstance(node, ast.FunctionDef) and node.name == "check"), None)
    if check is None:
        return None

    def is_call(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "candidate"

    values = []
    for statement in check.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        if not isinstance(statement, ast.Assert):
            return None
        test_ = statement.test
        if isinstance(test_, ast.Constant) and test_.value is True:
            continue  # assert True, "This prints if this assert fails..."
        if sum(is_call(node) for node in ast.walk(statement)) != 1:
            return None
        if is_call(test_):
            values.append(True)
        elif isinstance(test_, ast.UnaryOp) and isinstance(test_.op, ast.Not) and is_call(test_.operand):
            values.append(False)
        elif (isinstance(test_, ast.Compare) and len(test_.ops) == 1 and isinstance(test_.ops[0], (ast.Eq, ast.Is))
              and is_call(test_.left) and isinstance(test_.comparators[0], ast.Constant)
              and type(test_.comparators[0].value) is bool):
            values.append(test_.comparators[0].value)
        else:
            return None
    return values or None


def boolean_problems(count: int = 6, max_false: int = 3, min_asserts: int = 5) -> list:
    """The first ``count`` HumanEval problems whose asserts expect only True or False, with at least one (and at
    most ``max_false``) False among at least ``min_asserts``: the learner's constant first guess (True) fails each,
    a coin would pass each with probability at most 2**-min_asserts, and each costs the learner at most
    ``max_false`` failed samples to learn. Distinct entry points (the learner tells problems apart by the
    function's name and docstring, so this only keeps the tally simple)."""
    from pytest_humaneval.data.dataset import load_problems

    chosen, names = [], set()
    for problem in load_problems()[1]:
        values = expected_booleans(problem.test)
        if (values and 1 <= values.count(False) <= max_false and len(values) >= min_asserts
                and problem.entry_point not in names):
            chosen.append(problem)
            names.add(problem.entry_point)
        if len(chosen) == count:
            break
    return chosen


# -- the control: a naive harness, with nothing between samples but a shared temp dir ------------------------------


def naive_run(problem, body: str, timeout_s: float = 10.0) -> bool:
    """One sample as a harness without a sandbox runs it: ``prompt + completion + test + check(entry_point)`` in
    a fresh ``python`` process. Whether it passed."""
    program = problem.prompt + body + "\n\n" + problem.test + f"\n\ncheck({problem.entry_point})\n"
    with tempfile.TemporaryDirectory(prefix="learner-naive-") as work:
        done = subprocess.run([sys.executable, "-c", program], cwd=work, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout_s)
    return done.returncode == 0


# -- cleaning up what a learner left -----------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.shmat.restype = ctypes.c_void_p


def _keyctl(*args) -> int:
    return _libc.syscall(ctypes.c_long(250), *[a if isinstance(a, (bytes, ctypes.Array)) else ctypes.c_long(a)
                                               for a in args])


def sysv_key(tag: str) -> int:
    return int(hashlib.sha1(f"learn-{tag}".encode()).hexdigest()[:7], 16) | 1


def key_users() -> dict[int, int]:
    """{uid: number of keys} from /proc/key-users."""
    users = {}
    for line in Path("/proc/key-users").read_text().splitlines():
        uid, rest = line.split(":", 1)
        users[int(uid)] = int(rest.split()[1].split("/")[0])
    return users


def _in_child(uid: int, work, timeout_s: float = 10.0) -> bytes:
    """``work()`` in a forked child that runs as ``uid`` (its keyrings, its view of /proc/keys); what it wrote."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read)
            if uid != os.getuid():
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(uid, uid, uid)
            os.write(write, work())
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks)


def _visible_keys(marker: str) -> list[str]:
    """Lines of /proc/keys (what the reader may view) that carry ``marker``."""
    try:
        return [line for line in Path("/proc/keys").read_text(errors="replace").splitlines() if marker in line]
    except OSError:
        return []


def keys_with(tag: str, uids=None) -> dict[int, list[str]]:
    """{uid: lines of /proc/keys carrying the tag} as root and as each uid of /proc/key-users (or ``uids``)."""
    found = {}
    for uid in sorted({0, os.getuid(), *(key_users() if uids is None else uids)}):
        if uid < 0 or uid >= 0xFFFFFFFF:
            continue
        lines = _in_child(uid, lambda: "\n".join(_visible_keys(tag)).encode()).decode()
        if lines:
            found[uid] = lines.splitlines()
    return found


def _remove_tagged_keys(tag: str, drop_empty_persistent: bool) -> bytes:
    """In a child running as the keys' uid: unlink and invalidate every key carrying the tag in its persistent
    keyring (looked up only when /proc/keys shows one, since looking it up creates it) and in @u."""
    removed = 0
    rings = []  # (ring, whether it is the persistent one)
    if any("_persistent." in line for line in _visible_keys("keyring")):
        persistent = _keyctl(22, -1, -2)
        if persistent > 0:
            rings.append((persistent, True))
    user = _keyctl(0, -4, 0)
    if user > 0:
        _keyctl(8, user, -2)  # possessed: its keys can be invalidated, not only unlinked
        rings.append((user, False))
    for ring, is_persistent in rings:
        buf = (ctypes.c_int32 * 1024)()
        size = _keyctl(11, ring, buf, ctypes.sizeof(buf))
        ids = list(buf)[:max(0, min(size, ctypes.sizeof(buf)) // 4)]
        left = 0
        for key in ids:
            desc = ctypes.create_string_buffer(512)
            if _keyctl(6, key, desc, 512) > 0 and tag in desc.value.decode("utf-8", "replace"):
                _keyctl(9, key, ring)
                _keyctl(21, key)
                removed += 1
            else:
                left += 1
        if is_persistent and drop_empty_persistent and left == 0:
            _keyctl(21, ring)  # a persistent keyring the learner made: empty now, let the kernel free it
    if os.getuid() not in (0, 65534):
        # Looking @u up made this sandbox uid's two user keyrings, which the kernel would keep until the machine
        # restarts: invalidated, both ids first (as the supervisor releases them).
        rings = [_keyctl(0, spec, 0) for spec in (-4, -5)]
        for ring in rings:
            if ring > 0:
                _keyctl(21, ring)
    return str(removed).encode()


def cleanup(tag: str) -> dict:
    """Remove everything a learner (or a test's samples) with this tag left on the host: keys (as root and as
    every uid of /proc/key-users whose /proc/keys shows one), folders and files in /tmp and /dev/shm, the SysV
    segments with its key. What it removed, for the report."""
    removed: dict = {}
    for uid, _ in keys_with(tag).items():
        count = int(_in_child(uid, lambda: _remove_tagged_keys(tag, drop_empty_persistent=True)) or 0)
        removed[f"keys of uid {uid}"] = count
    for parent in ("/tmp", "/dev/shm", "/var/tmp", "/tmp/humaneval"):
        if not os.path.isdir(parent):
            continue
        for entry in os.listdir(parent):
            if tag in entry:
                path = os.path.join(parent, entry)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
                removed.setdefault("files", []).append(path)
    for kind, remove in (("shm", lambda i: _libc.shmctl(i, 0, None)), ("sem", lambda i: _libc.semctl(i, 0, 0)),
                         ("msg", lambda i: _libc.msgctl(i, 0, None))):  # IPC_RMID
        for ident in sysv_ids(sysv_key(tag), (kind,)):
            remove(ident)
            removed.setdefault("sysv", []).append((kind, ident))
    return removed


def sysv_ids(key: int, kinds=("shm",)) -> list[int]:
    """Ids of the host's SysV objects with ``key`` (/proc/sysvipc/*)."""
    found = []
    for kind in kinds:
        for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) > 1 and int(fields[0]) == key:
                found.append(int(fields[1]))
    return found


# -- a learner whose memory is bits of files every sample can read (issue 42) ------------------------------------
#
# The same problems, but no file of its own: its memory is state of files it may only read, one bit each:
#
# - ``flags``: a file's FS_NODUMP_FL inode flag (``ioctl(FS_IOC_SETFLAGS)``, which needs only ownership: where the
#   candidate runs as the uid that owns the files, Landlock and basic);
# - ``atime``: whether a file's access time is later than its change time (a read sets it under relatime);
# - ``pages``: whether a page of a file is in the page cache, told by a ``preadv2(RWF_NOWAIT)`` read (EAGAIN on a
#   page not cached) and set by touching a one-page mapping with MADV_RANDOM (exactly that page is read); one
#   file, its bits PAGE_GAP pages apart. (On this machine's virtual disk the read that RWF_NOWAIT starts can end
#   before it looks again, so a clear bit now and then reads as set: with a file of one page a bit, most did);
# - ``faults``: the same pages, told by whether touching the mapping counted a major fault (``getrusage``): what
#   still tells a page's residency without timing it (docs/safety.md);
# - ``dentries``: whether names that do not exist in ``folder`` were looked up before, told by a lookup's time (a
#   negative dentry answers it from the dentry cache): open in every mode (docs/safety.md), and not used by a test
#   through the sandbox: the two-sample probe of tests/test_channels.py does not depend on a whole run's noise.
#
# Each bit is test-and-set (reading a page's residency caches it): a sample finds its own number in a unary
# counter (the first bit it finds clear, and sets), records each call it reaches in a row of its own, and reads
# the rows of the samples before it (each reader sets one more bit of a row: the ones before it are counted out);
# from how far each earlier sample got it replays their answers and knows which calls were answered right (every
# call a sample reached but its last) and which answer failed (its last). ``prepare_bits`` makes the files.

BIT_SAMPLES = 8  # per problem: the counter's width
BIT_CALLS = 16  # calls remembered per sample
BIT_ROW = BIT_CALLS + BIT_SAMPLES  # a row: its calls, plus one bit for each later reader
BIT_REGION = BIT_SAMPLES + BIT_SAMPLES * BIT_ROW
PAGE_GAP = 8  # pages between two bits of ``pages``: no readahead reaches the next one

# A candidate's timed lookup of a name (``dentries`` here, and tests/test_channels.py's probe): program text, with
# ``os`` and ``time`` imported where it is pasted.
TIMED_LOOKUP = r"""
def _stat_ns(path):
    started = time.perf_counter_ns()
    try:
        os.stat(path)
    except OSError:
        pass
    return time.perf_counter_ns() - started
"""

BIT_LEARNER = r'''
import array, fcntl, mmap, os, time

FOLDER, CHANNEL, REGIONS = __FOLDER__, __CHANNEL__, __REGIONS__
SAMPLES, CALLS, ROW, REGION, GAP = __SIZES__


def _path(i):
    return os.path.join(FOLDER, "b%05d" % i)


def _flags_tas(i):
    fd = os.open(_path(i), os.O_RDONLY)
    try:
        flags = array.array("l", [0])
        fcntl.ioctl(fd, 0x80086601, flags, True)  # FS_IOC_GETFLAGS
        if flags[0] & 0x40:  # FS_NODUMP_FL
            return True
        flags[0] |= 0x40
        fcntl.ioctl(fd, 0x40086602, flags, True)  # FS_IOC_SETFLAGS
        return False
    finally:
        os.close(fd)


def _atime_tas(i):
    info = os.stat(_path(i))
    if info.st_atime_ns > info.st_mtime_ns:
        return True
    with open(_path(i), "rb") as handle:
        handle.read(1)
    return False


_pages = []


def _page(i):
    """The pages file, and bit i's offset in it."""
    if not _pages:
        _pages.append(os.open(os.path.join(FOLDER, "pages"), os.O_RDONLY))
    return _pages[0], i * GAP * 4096


def _touch(fd, offset):
    view = mmap.mmap(fd, 4096, prot=mmap.PROT_READ, offset=offset)
    view.madvise(mmap.MADV_RANDOM)
    view[0]
    view.close()


def _pages_tas(i):
    fd, offset = _page(i)
    try:
        os.preadv(fd, [bytearray(1)], offset, os.RWF_NOWAIT)
        return True
    except BlockingIOError:
        _touch(fd, offset)
        return False


def _faults_tas(i):
    import resource

    fd, offset = _page(i)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
    _touch(fd, offset)
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt == before  # a major fault: read from the disk


_timing = []
__TIMED_LOOKUP__

def _dentries_tas(i):
    """Whether names that do not exist were looked up before: a lookup leaves a negative dentry, and a second
    lookup of one is answered from the dentry cache without the folder's entries being searched (about 2 against
    4 us here). A bit is three names, set when the fastest of them answers fast: a pause only slows a lookup."""
    if not _timing:
        known = os.path.join(FOLDER, "known-%d" % os.getpid())
        _stat_ns(known)
        hit = min(_stat_ns(known) for _ in range(25))  # (the fastest of each)
        miss = min(_stat_ns(os.path.join(FOLDER, "fresh-%s" % os.urandom(8).hex())) for _ in range(25))
        _timing.append((hit + miss) / 2)
    _stat_ns(os.path.join(FOLDER, "warm-%s" % os.urandom(8).hex()))
    return min(_stat_ns(os.path.join(FOLDER, "n%05d-%d" % (i, k))) for k in range(3)) < _timing[0]


tas = {"flags": _flags_tas, "atime": _atime_tas, "pages": _pages_tas, "faults": _faults_tas,
       "dentries": _dentries_tas}[CHANNEL]


def _first_clear(start, width):
    for k in range(width):
        if not tas(start + k):
            return k
    raise OSError("no clear bit")


def _policy(right, wrong, k):
    if k in right:
        return right[k]
    return not wrong[k][-1] if k in wrong else True  # a sample's last call: the other answer than last time


def _begin(name):
    base = REGIONS[name] * REGION
    me = _first_clear(base, SAMPLES)
    right, wrong = {}, {}
    for i in range(me):
        reached = _first_clear(base + SAMPLES + i * ROW, ROW) - (me - 1 - i)
        answers = [_policy(right, wrong, k) for k in range(reached)]
        for k, value in enumerate(answers):
            if k < reached - 1:
                right[k] = value
            else:
                wrong.setdefault(k, []).append(value)
    return {"row": base + SAMPLES + me * ROW, "right": right, "wrong": wrong, "calls": 0}


_state = {}


def answer(name):
    try:
        if name not in _state:
            _state[name] = _begin(name)
        mine = _state[name]
        k = mine["calls"]
        mine["calls"] += 1
        if k >= CALLS:
            return True
        tas(mine["row"] + k)
        return _policy(mine["right"], mine["wrong"], k)
    except Exception:
        return True
'''


def bits_completion(channel: str, folder: str, names: list[str]) -> str:
    """The body for ``channel`` (flags, atime, pages, faults, dentries) over the files ``prepare_bits`` made in
    ``folder``; ``names``: the problems' entry points, in order (each its own region of bits; no answer is in it)."""
    module = (BIT_LEARNER.replace("__TIMED_LOOKUP__", TIMED_LOOKUP).replace("__FOLDER__", repr(folder)).replace("__CHANNEL__", repr(channel))
              .replace("__REGIONS__", repr({name: i for i, name in enumerate(names)}))
              .replace("__SIZES__", repr((BIT_SAMPLES, BIT_CALLS, BIT_ROW, BIT_REGION, PAGE_GAP))))
    lines = ["import sys as _learner_sys",
             "_learner = _learner_sys.modules.get('__bit_learner__')",
             "if _learner is None:",
             "    import types as _types",
             "    _learner = _types.ModuleType('__bit_learner__')",
             f"    exec({module!r}, _learner.__dict__)",
             "    _learner_sys.modules['__bit_learner__'] = _learner",
             "return _learner.answer(_learner_sys._getframe().f_code.co_name)"]
    return "".join(f"    {line}\n" for line in lines)


def prepare_bits(channel: str, folder: str, problems: int) -> None:
    """Every bit clear, in ``folder`` (made, readable by all): for ``flags`` and ``atime`` one file of a byte per bit
    (its access time a minute before its change time), for ``pages`` and ``faults`` one file of PAGE_GAP pages per
    bit, synced and evicted from the page cache (checked); for ``dentries`` the folder alone (no name in it was
    ever looked up)."""
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o755)
    count = problems * BIT_REGION
    if channel == "dentries":  # a fresh folder: no name in it was ever looked up
        return
    if channel in ("pages", "faults"):
        path = os.path.join(folder, "pages")
        with open(path, "wb") as handle:
            handle.write(os.urandom(count * PAGE_GAP * 4096))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(path, 0o644)
        evict(path)
        return
    for i in range(count):
        path = os.path.join(folder, f"b{i:05d}")
        with open(path, "wb") as handle:
            handle.write(b"x")
        os.chmod(path, 0o644)
        info = os.stat(path)
        os.utime(path, ns=(info.st_mtime_ns - 60 * 10**9, info.st_mtime_ns))


def resident(path: str) -> int:
    """How many pages of ``path`` are in the page cache (``mincore`` of a mapping, in the harness)."""
    import mmap

    size = os.path.getsize(path)
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, ctypes.c_size_t(size), mmap.PROT_READ, mmap.MAP_SHARED, fd, ctypes.c_long(0))
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        try:
            vector = (ctypes.c_ubyte * pages)()
            if libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vector) != 0:
                raise OSError(ctypes.get_errno(), "mincore")
            return sum(byte & 1 for byte in vector)
        finally:
            libc.munmap(ctypes.c_void_p(address), ctypes.c_size_t(size))
    finally:
        os.close(fd)


def evict(path: str, tries: int = 20) -> None:
    """Every page of ``path`` out of the page cache, checked (``mincore``); an error if some stay."""
    import time

    for _ in range(tries):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        left = resident(path)
        if not left:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{left} pages of {path} stay in the page cache after {tries} evictions")


def clear_bits(folder: str) -> None:
    """Remove ``folder``, FS_NODUMP_FL cleared first (nothing a learner set stays on the host)."""
    import array
    import fcntl

    if not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            flags = array.array("l", [0])
            fcntl.ioctl(fd, 0x80086601, flags, True)
            if flags[0] & 0x40:
                flags[0] &= ~0x40
                fcntl.ioctl(fd, 0x40086602, flags, True)
        except OSError:
            pass
        finally:
            os.close(fd)
    shutil.rmtree(folder, ignore_errors=True)
