"""The database's files are private (I6): a data directory memwarden creates is 0700, and the database file is
created 0600 before SQLite opens it — SQLite gives its WAL and SHM files the database file's mode, so they are
0600 too. :func:`loose_modes` reports any of them (and the directory) that group or others can use (``doctor``).

Modes of existing files are not changed: an operator may have chosen them, and ``doctor`` says what to run.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
SIDE_FILES = ("-wal", "-shm", "-journal")


def create_private(path: Path) -> None:
    """Create the data directory (0700) and an empty database file (0600) if they do not exist yet."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        with contextlib.suppress(OSError):  # the umask may have masked bits off: state the mode exactly
            os.chmod(path.parent, DIR_MODE)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return  # an existing database (or another process created it first): its mode is left as it is
    os.close(fd)  # SQLite treats an empty file as a new database


def loose_modes(path: Path) -> list[tuple[str, str]]:
    """``(path, problem)`` for the data directory, the database and its WAL/SHM/journal files when group or
    others have any access to them, with the command that fixes it."""
    out: list[tuple[str, str]] = []
    candidates = [(path.parent, DIR_MODE), (path, FILE_MODE)]
    candidates += [(path.with_name(path.name + suffix), FILE_MODE) for suffix in SIDE_FILES]
    for p, want in candidates:
        try:
            mode = stat.S_IMODE(p.stat().st_mode)
        except FileNotFoundError:
            continue
        except OSError as exc:
            out.append((str(p), f"cannot check its mode: {exc.strerror}"))
            continue
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            kind = "data directory" if p == path.parent else "database file"
            out.append((str(p), f"{kind} has mode {mode:o}: group or others can read it (memories, audit log); "
                                f"run: chmod {want:o} {p}"))
    return out
