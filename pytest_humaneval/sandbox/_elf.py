"""The shared libraries a program or extension module loads: its ELF dynamic section's DT_NEEDED entries and its
program interpreter (the dynamic loader), followed through their own, found as the loader finds them (RUNPATH or
RPATH with $ORIGIN, then the system's library folders). No dependency: the standard library reads the headers.

A candidate's view (``_contain.shown_and_hidden``) shows these files one by one instead of the operating system's
/usr and /lib (5 GB on a CI machine): what the interpreter and the import path's extension modules need, and
nothing a learner could use as a page cache of its own.
"""

from __future__ import annotations

import glob
import os
import struct

PT_INTERP, PT_DYNAMIC, PT_LOAD = 3, 2, 1
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 15, 29
HEADER_BYTES = 64
MAX_SECTION = 1 << 20  # a dynamic section or string table larger than this is not one a loader reads


# What glibc loads by itself, by name, where a program may need it: libgcc_s for pthread_exit and unwinding (a
# daemon thread woken at the interpreter's exit calls it).
LOADED_BY_LIBC = ("libgcc_s.so.1",)


def machine(path: str) -> bytes | None:
    """An ELF file's class, byte order and machine (what the loader matches a library against), or None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return head[4:6] + head[18:20]


def needs(path: str) -> tuple[list[str], list[str], str] | None:
    """(DT_NEEDED names, RUNPATH/RPATH folders, program interpreter or "") of a 64-bit little-endian ELF file;
    None for anything else (a script, a 32-bit or big-endian file, a file that cannot be read)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEADER_BYTES)
            if len(head) < HEADER_BYTES or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            (phoff,) = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            handle.seek(phoff)
            table = handle.read(phentsize * phnum)
            loads, dynamic, interp = [], None, ""
            for i in range(phnum):
                kind, _, offset, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", table, i * phentsize)
                if kind == PT_LOAD:
                    loads.append((vaddr, offset, filesz))
                elif kind == PT_DYNAMIC:
                    dynamic = (offset, min(filesz, MAX_SECTION))
                elif kind == PT_INTERP:
                    handle.seek(offset)
                    interp = handle.read(min(filesz, 4096)).split(b"\0", 1)[0].decode("utf-8", "replace")
            if dynamic is None:
                return [], [], interp
            handle.seek(dynamic[0])
            data = handle.read(dynamic[1])
            entries = []
            for at in range(0, len(data) - 15, 16):
                tag, value = struct.unpack_from("<qQ", data, at)
                if tag == DT_NULL:
                    break
                entries.append((tag, value))
            tags = dict(entries)
            strtab, strsz = tags.get(DT_STRTAB), min(tags.get(DT_STRSZ, 0), MAX_SECTION)
            where = next((offset + strtab - vaddr for vaddr, offset, size in loads
                          if strtab is not None and vaddr <= strtab < vaddr + size), None)
            if where is None:
                return [], [], interp
            handle.seek(where)
            strings = handle.read(strsz)
    except (OSError, struct.error):
        return None

    def text(index: int) -> str:
        end = strings.find(b"\0", index)
        return strings[index:end if end >= 0 else len(strings)].decode("utf-8", "replace")

    names = [text(value) for tag, value in entries if tag == DT_NEEDED]
    folders = [folder for tag, value in entries if tag in (DT_RPATH, DT_RUNPATH) for folder in text(value).split(":")
               if folder]
    return names, folders, interp


def system_folders() -> list[str]:
    """Where the dynamic loader looks after a library's own RUNPATH: /etc/ld.so.conf's folders (and the files it
    includes), then the default ones."""
    found: list[str] = []

    def read(path: str, depth: int = 0) -> None:
        try:
            with open(path) as handle:
                lines = handle.read().splitlines()
        except OSError:
            return
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include ") and depth < 4:
                for included in sorted(glob.glob(os.path.join(os.path.dirname(path), line[8:].strip()))):
                    read(included, depth + 1)
            elif line.startswith("/"):
                found.append(line)

    read("/etc/ld.so.conf")
    machine = os.uname().machine
    triplet = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}.get(machine, f"{machine}-linux-gnu")
    found += [f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib64", "/usr/lib64", "/lib", "/usr/lib"]
    return list(dict.fromkeys(folder for folder in found if os.path.isdir(folder)))


def closure(starts: list[str], folders: list[str] | None = None) -> set[str]:
    """Every file the loader maps for ``starts`` (programs and extension modules), theirs excluded: the
    libraries they need, and those need, by the paths they are found at and by their real paths (a library is
    usually a symlink to a versioned file)."""
    folders = system_folders() if folders is None else folders
    seen: set[tuple[str, str]] = set()
    found: set[str] = set()
    todo = [(path, False) for path in starts]
    first = True
    while todo:
        path, library = todo.pop()
        real = os.path.realpath(path)
        if library:
            found.update((os.path.abspath(path), real))
        origin = os.path.dirname(os.path.abspath(path))
        if (real, origin) in seen:  # (by origin too: $ORIGIN is the path's folder, not the real one's)
            continue
        seen.add((real, origin))
        parsed = needs(real)
        if parsed is None:
            continue
        names, runpath, interp = parsed
        kind = machine(real)
        if first:  # what libc loads by itself, for the first program
            names, first = [*names, *LOADED_BY_LIBC], False
        if interp and os.path.isfile(interp):
            todo.append((interp, True))
        places = [place.replace("${ORIGIN}", origin).replace("$ORIGIN", origin) for place in runpath] + folders
        for name in names:
            candidates = [name] if "/" in name else [os.path.join(place, name) for place in places]
            for candidate in candidates:  # the first of the same class and machine, as the loader takes it
                if os.path.isfile(candidate) and machine(candidate) == kind:
                    todo.append((candidate, True))
                    break
    return found
