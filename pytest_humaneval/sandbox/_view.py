"""The candidate's view: what its root shows (namespaces: read-only binds) or what Landlock lets it read, an
allow-list narrowed to what the interpreter needs: its import path, its executable and the shared libraries these load
(``_elf``), a few files of /etc, a few devices; every copy of the harness's package, and every site-packages not on
the import path, hidden.

Computed once by the harness's page holder (``_pin``) and handed to each supervisor (``VIEW``); ``_mounts`` builds
the root from it, ``_contain`` the Landlock rules. A supervisor's script (loaded by path): standard library only, no
package import.
"""

import os
import sys

try:
    from . import _elf
except ImportError:  # loaded by path in the supervisor, by the one loader of its scripts (_load.py)
    _elf = sys.modules["_humaneval_load"].sibling("elf")

# What a candidate's root shows, each read-only at its own path; nothing else of the host is in it: the
# interpreter's import path, its executable and the shared libraries these load (``_elf.closure``), one by one,
# not the operating system's /usr (5.3 GB, 128,610 files on a CI machine: every page a candidate can read is held
# in memory, so what it can read must be small). The top-level links of a usrmerge host, which the libraries'
# paths go through:
SYSTEM = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# the time zones (/etc/localtime points into them) and the C.UTF-8 locale, where the C library keeps them apart:
DATA = ("/usr/share/zoneinfo", "/usr/lib/locale/C.utf8", "/usr/lib/locale/C.UTF-8")
# the standard library's own test suite (123 MB), which no program a model writes imports:
STDLIB_LEFT_OUT = ("test",)
# what the dynamic loader, the C library and the time functions read in /etc:
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "nsswitch.conf")
DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
             "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"}
# and, in fresh tmpfs: /tmp and /dev/shm (writable, emptied after every sample); the namespace's own /proc,
# ptys and message queues. The interpreter's import path is added to it (``_interpreter``).
TMPFS = {"/tmp": "mode=1777,size=1g,nr_inodes=262144", "/dev/shm": "mode=1777,size=64m,nr_inodes=16384"}
PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the harness's own package: never shown


# What marks a folder named pytest_humaneval as a copy of the package, of this layout or an earlier one.
_PACKAGE_MARKS = (("sandbox", "_contain.py"), ("_contain.py",), ("fixtures", "HumanEval.jsonl.gz"))


def within(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _outermost(paths):
    return {path for path in paths if not any(path != other and within(path, other) for other in paths)}


# the view the harness's page holder computed (``_pin``), handed to this supervisor: none to compute
VIEW: dict | None = None


def view():
    """The candidate's view: the one this supervisor was handed, else ``shown_and_hidden()``."""
    if VIEW is not None:
        return set(VIEW["folders"]), set(VIEW["files"]), dict(VIEW["links"]), list(VIEW["hidden"])
    return shown_and_hidden()


def shown_and_hidden(path=None):
    """What a candidate's view is made of, with namespaces (the root's binds) or Landlock (its read rules), for
    the import path ``path`` (sys.path): (folders, files, top-level links, what to cover inside the folders)."""
    path = sys.path if path is None else path
    folders, programs = _interpreter(path)
    import_path = {os.path.realpath(p) for p in path if p and os.path.isdir(p)}
    hidden = _hidden(folders, import_path)
    folders, files, links = _system_and_interpreter(folders, programs, hidden)
    return folders, files, links, hidden


def _interpreter(path):
    """(folders, programs) of the interpreter a candidate needs: its import path (the standard library,
    lib-dynload, the site-packages it imports from), without the harness (a folder of the import path that holds
    the harness's package, an editable install's checkout, is left out: ``_hidden`` covers the rest); its
    executable, by the path it was started with and its real one, and the libpython it links against."""
    import sysconfig

    paths = sysconfig.get_paths()
    sites = {os.path.realpath(paths[name]) for name in ("purelib", "platlib") if paths.get(name)}
    folders = {os.path.realpath(p) for p in path if p and os.path.isdir(p)}
    folders = {f for f in folders if f in sites or not within(PACKAGE, f)}
    programs = set()
    executable = os.path.abspath(sys.executable) if sys.executable else ""
    for path in (executable, os.path.realpath(executable)):
        if path and os.path.isfile(path):
            programs.add(path)
    # A venv's interpreter finds its site-packages through pyvenv.cfg (beside it or one folder up): without it a
    # child sys.executable starts as the base interpreter and cannot import what the candidate's can.
    for folder in (os.path.dirname(executable), os.path.dirname(os.path.dirname(executable))):
        config = os.path.join(folder, "pyvenv.cfg")
        if executable and os.path.isfile(config):
            programs.add(config)
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):  # what the executable links against, for a subprocess
        library = os.path.join(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("INSTSONAME") or "")
        if os.path.isfile(library):
            programs.add(os.path.realpath(library))
    return folders, programs


def _hidden(shown, import_path):
    """What to cover inside the shown folders: every copy of the harness's package, and every site-packages or
    dist-packages folder that is not on the import path (a venv's base interpreter keeps its own; /usr has the
    system's), so the modules a candidate can see are the ones it can import."""
    import glob

    found = {PACKAGE}
    # Every import path folder is a place a copy can be imported from, nested ones included (only the outermost
    # folders are shown, so a site-packages inside another shown folder would be missed otherwise).
    places = {*shown, *(p for p in import_path if any(within(p, f) for f in shown))}
    for folder in sorted(places):
        for pattern in ("", "*", "lib/python3*", "local/lib/python3*"):
            for place in glob.glob(os.path.join(folder, pattern)):
                for name in ("site-packages", "dist-packages"):
                    site = os.path.realpath(os.path.join(place, name))
                    if os.path.isdir(site) and site not in import_path:
                        found.add(site)
                copy = os.path.realpath(os.path.join(place, "pytest_humaneval"))
                # a copy of the package of any version: this layout's, the flat one before it, or its data
                if any(os.path.isfile(os.path.join(copy, *rel)) for rel in _PACKAGE_MARKS):
                    found.add(copy)
    found = {path for path in found if os.path.isdir(path) and any(within(path, f) for f in shown)}
    return sorted(_outermost(found))


def _system_and_interpreter(folders, programs, hidden):
    """(folders, files, links) a candidate may read: the interpreter's folders and programs (``_interpreter``),
    the shared libraries these load, ``DATA``, a few files of ``ETC``, the outermost of each; ``links``: the
    top-level symlinks among ``SYSTEM`` (usrmerge) and ``ETC``."""
    folders = set(folders)
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    hidden.extend(os.path.join(stdlib, name) for name in STDLIB_LEFT_OUT
                  if os.path.isdir(os.path.join(stdlib, name)) and stdlib in folders)
    modules = [os.path.join(where, name) for where, name in walk(folders, hidden)
               if ".so" in name and os.path.isfile(os.path.join(where, name))]
    files = {os.path.join(os.path.realpath(os.path.dirname(f)), os.path.basename(f))
             for f in _elf.closure(sorted(programs) + modules)} | set(programs)
    links = {}
    for path in SYSTEM + tuple(f"/etc/{name}" for name in ETC):
        if os.path.islink(path):
            links[path] = os.readlink(path)
        elif path in SYSTEM:  # a host without merged /usr: its /bin or /lib is a folder, shown file by file
            continue
        elif os.path.isdir(path):
            folders.add(path)
        elif os.path.isfile(path):
            files.add(path)
    folders.update(path for path in DATA if os.path.isdir(path) and not os.path.islink(path))
    folders = _outermost(folders)
    files = {f for f in files if not any(within(f, folder) for folder in folders)}
    return folders, files, links


def walk(folders, hidden, with_folders=False):
    """(folder, name) of every file in ``folders``, outside ``hidden``, symlinks to folders not followed; with
    ``with_folders``, (folder, name, is_folder) of the folders below them too."""
    for top in sorted(folders):
        for where, subfolders, names in os.walk(top):
            subfolders[:] = [name for name in subfolders if not any(within(os.path.join(where, name), h)
                                                                    for h in hidden)]
            if with_folders:
                yield from ((where, name, True) for name in subfolders)
                yield from ((where, name, False) for name in names)
            else:
                yield from ((where, name) for name in names)
