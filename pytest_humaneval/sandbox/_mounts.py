"""The mounts that show a candidate its view, with namespaces: once per supervisor, a root of its own made of the
view (``enter_new_root``: read-only binds, each folder a skeleton of bound files, fresh tmpfs where it may write),
then ``pivot_root`` into it; in the fork server, the supervisor's own folder covered (``cover_own``); per sample, a
fresh tmpfs for its working dir and a /proc of its own (``mount_work``, ``mount_sample_proc``), detached after it.

A supervisor's script (loaded by path, like ``_contain``, which calls it): standard library only, no package import.
"""

import ctypes
import errno
import os
import stat
import sys

try:
    from . import _linux, _view
except ImportError:  # loaded by path in the supervisor, by the one loader of its scripts (_load.py)
    _linux, _view = sys.modules["_humaneval_load"].siblings("linux", "view")

MNT_DETACH, MS_BIND, MS_NODEV, MS_NOEXEC = _linux.MNT_DETACH, _linux.MS_BIND, _linux.MS_NODEV, _linux.MS_NOEXEC
MS_NOSUID, MS_RDONLY, MS_REC, MS_REMOUNT = _linux.MS_NOSUID, _linux.MS_RDONLY, _linux.MS_REC, _linux.MS_REMOUNT
SYS_PIVOT_ROOT = _linux.SYS_PIVOT_ROOT

STAGE = "/tmp"  # where the new root is put together, on a tmpfs of this namespace's own over the host's /tmp
WORK = "/tmp/work"  # with namespaces: each sample's working dir (HOME, TMPDIR)
OWN = "/tmp/humaneval"  # with namespaces: the supervisor's own folder (0700), kept when /tmp is emptied


def enter_new_root():
    """Make a root of our own and move this mount namespace into it, as bubblewrap and nsjail do: an empty
    tmpfs, then read-only bind mounts of exactly what a candidate needs (``SYSTEM``, a few files of ``ETC``, a
    few ``DEVICES``, the interpreter's import path) and fresh tmpfs where it may write; ``pivot_root`` into
    it, and the host's tree is detached. An allow-list: whatever the harness or the user keeps anywhere else
    (the package's data, datasets, caches, configs, samples, results, home folders, sockets) is not hidden, it
    is simply not there, and so is anything added later. Returns the top folders under /tmp that hold a bound
    import path (a CI venv made with mktemp), which emptying /tmp after a sample must leave."""
    folders, files, links, hidden = _view.view()
    # Descriptors first: the host's /tmp (where a CI venv may live) is covered next.
    sources = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in (*sorted(folders), *sorted(files))}
    sources.update((f"/dev/{name}", os.open(f"/dev/{name}", os.O_PATH | os.O_CLOEXEC)) for name in _view.DEVICES
                   if os.path.exists(f"/dev/{name}"))
    _linux.mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=64k")
    root = STAGE + "/root"
    os.mkdir(root, 0o755)
    # (inodes: as many as the skeletons of the folders need, and room for their long symlinks, a page each: caps,
    # not reservations; read-only before any candidate runs)
    _linux.mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m,nr_inodes=0")
    for place in ("proc", "dev/pts", "dev/mqueue", *(path.strip("/") for path in _view.TMPFS)):
        os.makedirs(os.path.join(root, place), 0o755, exist_ok=True)
    for path, options in _view.TMPFS.items():
        _linux.mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV, options)
    for path, target in links.items():
        os.makedirs(os.path.dirname(root + path), 0o755, exist_ok=True)
        os.symlink(target, root + path)
    for name, target in _view.DEV_LINKS.items():
        os.symlink(target, f"{root}/dev/{name}")
    # An import path under /tmp (a CI venv made with mktemp) is bound into a skeleton of folders of its own, a
    # tmpfs made read-only once it is bound: kept when /tmp is emptied, so no candidate may write there.
    kept = sorted({"/tmp/" + path[len("/tmp/"):].split("/")[0] for path in sources if path.startswith("/tmp/")})
    for top in kept:
        os.makedirs(root + top, 0o755, exist_ok=True)
        _linux.mount("tmpfs", root + top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m,nr_inodes=0")
    staged = {}
    for index, (path, fd) in enumerate(sources.items()):
        if path in folders:  # staged outside the root, read-only, and shown below
            where = staged[path] = f"{STAGE}/{index}"
            os.mkdir(where, 0o700)
        else:
            where = root + path
            os.makedirs(os.path.dirname(where), 0o755, exist_ok=True)
            os.close(os.open(where, os.O_WRONLY | os.O_CREAT, 0o644))
        _linux.mount(f"/proc/self/fd/{fd}", where, None, MS_BIND | MS_REC)
        # Devices too: a read-only bind of /dev/null still takes writes, but not utimensat (another uid may set
        # the host's device times to "now", a channel from one sample, session and supervisor to the next).
        _linux.read_only(where)
        os.close(fd)
    skeletons = {path: _skeleton_plan(where, root + path,
                                      [where + h[len(path):] for h in hidden if _view.within(h, path)])
                 for path, where in staged.items()}
    files = sum(len(plan[2]) for plan in skeletons.values())
    if files <= SKELETON_MAX_FILES:
        for plan in skeletons.values():
            _skeleton(*plan)
        dentries = ""
    else:  # the folders themselves, read-only as staged: one mount each
        for path, where in staged.items():
            os.makedirs(root + path, 0o755, exist_ok=True)
            _linux.mount(where, root + path, None, MS_BIND | MS_REC)
            for covered in (h for h in hidden if _view.within(h, path)):
                _linux.mount("tmpfs", root + covered, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                       "mode=0755,size=4k")
        dentries = (f"dentry cache not held: the view has {files:,} files, more than the {SKELETON_MAX_FILES:,} "
                    "bound one by one (keep the harness in a venv of its own)")
    for top in kept:
        _linux.read_only(root + top, recursive=False)
    # Before the host's tree goes: in a user namespace the kernel lets a /proc be mounted only where one is
    # already in full view.
    mount_proc(root + "/proc")
    _linux.read_only(root, recursive=False)
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(errno.ENOSYS, f"pivot_root's syscall number is not known for {os.uname().machine}")
    os.chdir(root)
    if _linux.LIBC.syscall(number, b".", b".") != 0 or _linux.LIBC.umount2(b".", MNT_DETACH) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"pivot_root: {os.strerror(error)}")
    os.chdir("/")
    if os.path.isdir("/dev/mqueue"):  # this IPC namespace's own queues, so they can be listed and emptied
        _linux.mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    try:  # its own ptys: /dev/ptmx in a loop cannot use up the host's (where the kernel allows an instance)
        _linux.mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                     "newinstance,ptmxmode=0666,mode=0620,max=16")
    except OSError:
        pass
    return set(kept), dentries


# With namespaces each file of the view is a mount of its own (``_skeleton``); past this many, the folders are
# bound instead (and the dentry cache stays open, which the run says): the kernel allows 100,000 mounts in a
# namespace by default (fs.mount-max), the fork server's copies them, and each costs ~20 us and ~1.5 KiB.
SKELETON_MAX_FILES = 50_000


def _skeleton_plan(source, target, hidden):
    """What showing the folder ``source`` (a read-only bind) at ``target`` as a skeleton takes: (target, [(folder
    to make, mode)], [(file to bind, where)], [(symlink to make, its target)]), parents first; ``hidden``
    folders shown empty; sockets, fifos and devices left out."""
    folders, files, links = [], [], []
    stack = [(source, target)]
    while stack:
        folder, into = stack.pop()
        try:
            with os.scandir(folder) as found:
                for entry in found:
                    made = f"{into}/{entry.name}"
                    try:
                        if entry.is_symlink():
                            links.append((made, os.readlink(entry.path)))
                        elif entry.is_dir(follow_symlinks=False):
                            folders.append((made, stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) & 0o777))
                            if not any(_view.within(entry.path, h) for h in hidden):
                                stack.append((entry.path, made))
                        elif entry.is_file(follow_symlinks=False):
                            files.append((os.fsencode(entry.path), made))
                    except OSError:
                        continue  # gone since the folder was listed (the host's files change), or unreadable
        except OSError:
            # removed since its parent was listed, or one the supervisor may not list (a user namespace's
            # supervisor is your user; a folder of root's with mode 0700 in the view): shown empty
            continue
    return target, folders, files, links


def _skeleton(target, folders, files, links):
    """Show a folder of the view as a skeleton (``_skeleton_plan``): its folders made anew on the root's tmpfs,
    with the host's modes, its symlinks copied, each of its regular files bound on its own (read-only, as the
    staged folder it comes from is).

    Why not the folder itself: a name looked up and not found in a folder of the host's filesystem leaves a
    negative dentry in the kernel's dentry cache, which answers the next lookup of that name about twice as fast
    (~2 against ~4 us), so one sample could set bits (names it looked up) that a later one reads by timing lookups
    (docs/safety.md). A tmpfs keeps no negative dentries (a name not found is forgotten at once), and a lookup here
    never reaches the host's folders: each file is a mount of its own, whose dentry and inode the mount holds.
    Cost: once per supervisor, ~0.2 s and ~23 MiB for 12,000 files (docs/performance.md)."""
    os.makedirs(target, 0o755, exist_ok=True)
    for made, _ in folders:
        os.mkdir(made, 0o700)
    for made, pointed in links:
        os.symlink(pointed, made)
    mount, regular = _linux.LIBC.mount, 0o644 | stat.S_IFREG
    for source, made in files:
        os.mknod(made, regular)
        if mount(source, os.fsencode(made), None, MS_BIND, None) != 0:
            error = ctypes.get_errno()
            if error in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):  # removed, or made a folder, since it was
                os.unlink(made)  # listed; or in a folder the supervisor may not search
                continue
            raise OSError(error, f"mount {os.fsdecode(source)}: {os.strerror(error)}")
    for made, mode in reversed(folders):  # as the host has them (after what goes in them)
        os.chmod(made, mode)


def cover_own():
    """In the fork server's mount namespace: the supervisor's own folder, covered by an empty read-only tmpfs,
    so a candidate sharing the supervisor's uid (user namespaces) can neither read nor write it; the
    supervisor keeps its own view."""
    _linux.mount("tmpfs", OWN, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "mode=0000,size=4k,nr_inodes=16")


def mount_work(isolation, size_mb):
    """In the fork server's mount namespace, before a candidate: a fresh tmpfs on the working dir, owned by the
    candidate's uid, so nothing of the last sample's files, not even how many inode numbers it used, is left.
    Returns WORK, or "!why" when it could not be made."""
    uid, gid = (isolation.uid, isolation.gid) if isolation.uid is not None else (0, 0)
    size = f"{size_mb}m" if size_mb > 0 else _view.TMPFS["/tmp"].split("size=")[1].split(",")[0]
    try:
        _linux.mount("tmpfs", WORK, "tmpfs", MS_NOSUID | MS_NODEV,
               f"mode=0700,size={size},nr_inodes=262144,uid={uid},gid={gid}")
    except OSError as exc:
        return f"!the sample's working dir could not be made: {exc}"
    return WORK


def mount_sample_proc():
    """In the fork server's mount namespace, before a candidate: a fresh /proc over the fork server's (a procfs
    mount is a filesystem of its own), detached after the sample. The kernel keeps a dentry for every /proc entry
    a lookup found (``/proc/sys/...``, ``/proc/meminfo``, the fork server's ``/proc/1/...``), and the next lookup
    of it is faster: in one /proc shared by every sample of a fork server, one sample could set bits (entries it
    looked up, with a ``stat``, which Landlock does not stop) that a later one reads by timing lookups (184 of 200
    told right). Returns "" or "!why"."""
    try:
        mount_proc(hidden=True)
    except OSError as exc:
        return f"!the sample's /proc could not be made: {exc}"
    return ""


def mount_proc(where="/proc", hidden=False):
    """This PID namespace's own /proc (in this mount namespace). ``hidden``: the candidates' view, in which a
    process it may not trace (the fork server: another uid, or not dumpable) is not there at all."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if hidden:
        for option in ("hidepid=invisible", "hidepid=2"):  # the name since 5.8; the number before
            try:
                _linux.mount("proc", where, "proc", flags, option)
                return
            except OSError:
                pass
    _linux.mount("proc", where, "proc", flags)


def size_tmpfs(memory_mb):
    """Without a cgroup (which counts tmpfs files as the sample's memory), /tmp and /dev/shm hold at most the
    sample's memory limit: files there are memory that no rlimit counts. With namespaces, where they are ours."""
    for path, options in _view.TMPFS.items():
        default = dict(option.split("=") for option in options.split(","))["size"]
        size = f"{memory_mb}m" if _megabytes(default) > memory_mb else default
        _linux.mount(None, path, None, MS_REMOUNT | MS_NOSUID | MS_NODEV, f"size={size}")


def _megabytes(size):
    return int(size[:-1]) * {"k": 1 / 1024, "m": 1, "g": 1024}[size[-1]]
