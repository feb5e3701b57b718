"""The monotonic anchor kept outside the database (I5, D3, A1): the newest audit row a store has reached.

Why: every row of the database is signed or chained, but a whole older copy of the file is signed and chained
too. Putting one back resurrects forgotten memories, and deleting the newest audit rows while restoring the
head anchor kept in ``meta`` erases security events without breaking the chain. Only something the attacker
cannot roll back with the file can tell: this anchor, a small file beside the signing key (the same directory,
mode 0600, refused if others can write it), MAC'd with the key and bound to the database's real path.

What it holds: ``(epoch, seq, hash)`` — the newest audit row's seq and hash a process saw committed, and an epoch
that only an operator's ``memwarden audit accept-restore`` (or a brand-new database at the path) advances. A
store whose audit log ends before the anchored row, or whose row at that seq is not the anchored one, is refused
at open, and a running process that finds so after a commit stops serving.

Writes are cheap and never torn: two 4 KiB-aligned slots, each a MAC'd line, written in place with one
``pwrite`` under ``flock`` into the slot holding the older anchor; a reader takes the valid slot with the
highest (epoch, seq). A crash mid-write leaves the other slot — an older anchor, which is safe (an older anchor
only checks less), never a false refusal.

Cost: the check after a commit needs no query when the commit linked straight onto the anchored row (the
backend reports which row its first audit append linked to and the head it committed); with the verified slot
bytes cached, it is a lock, two small reads, one MAC and one write.

Durability (honest): with ``durability=full`` each commit is on disk before its anchor is written (after the
COMMIT, once per group commit, before any writer of the group returns), so the anchor is never ahead of the
database; it is not fsynced itself, so after a power loss it may trail the last commits (an older anchor only
checks less, it never refuses a sound store). With ``normal`` a commit is not on disk when it returns, so an
anchor written then could survive an OS crash that the commit does not; there the anchor advances at most once
a second, after memwarden fsyncs the WAL itself, and at close: the newest second of audit rows is not anchored
yet.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platformdirs import user_config_dir

from memwarden.audit import head
from memwarden.errors import KeyError_
from memwarden.keys import default_key_path
from memwarden.signing import Signer
from memwarden.store import DATABASE_ERRORS
from memwarden.store.base import Reads

_DOMAIN = b"memwarden.anchor.v1"
_MAGIC = "MWA1"
_SLOT = 4096  # slot offsets 0 and 4096: never in the same disk sector
_SLOT_BYTES = 512
NORMAL_SYNC_SECONDS = 1.0  # durability=normal: the anchor advances at most this often (after a WAL fsync)
CREATED_EVENT = "anchor_created"


def anchor_dir(explicit_key: bool = False) -> Path:
    """``$MEMWARDEN_ANCHOR_DIR``, else ``anchors/`` beside the key file (the config dir when the key comes from
    ``$MEMWARDEN_KEY`` or ``key=``)."""
    env = os.environ.get("MEMWARDEN_ANCHOR_DIR")
    if env:
        return Path(env).expanduser()
    if explicit_key or os.environ.get("MEMWARDEN_KEY") is not None:
        return Path(user_config_dir("memwarden")) / "anchors"
    return default_key_path().parent / "anchors"


@dataclass(frozen=True, slots=True, order=True)
class Anchor:
    epoch: int
    seq: int
    hash: str


class AnchorFile:
    """The two-slot anchor file of one database."""

    def __init__(self, directory: Path, signer: Signer, db_name: bytes) -> None:
        """``db_name``: what names the database (``Engine.anchor_id``; SQLite: its resolved path)."""
        self._signer = signer
        self.db_id = signer.mac(b"memwarden anchor id " + db_name)[:32]
        self.path = directory / f"{self.db_id}.anchor"
        self._fd: int | None = None
        self._verified: dict[bytes, Anchor] = {}  # slot bytes already verified → their anchor

    def exists(self) -> bool:
        return self.path.exists()

    def _mac(self, epoch: int, seq: int, h: str) -> str:
        # every field is an int or hex: "|" cannot occur in one, so the joined form is unambiguous
        return self._signer.mac(b"%s|%s|%d|%d|%s" % (_DOMAIN, self.db_id.encode(), epoch, seq, h.encode()))

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            mode = os.fstat(fd).st_mode
            if mode & (stat.S_IWGRP | stat.S_IWOTH):
                os.close(fd)
                raise KeyError_(f"anchor file {self.path} is writable by others (mode {stat.S_IMODE(mode):o}); "
                                f"run: chmod 600 {self.path}")
            self._fd = fd
        return self._fd

    def _slots(self, fd: int) -> list[Anchor | None]:
        out: list[Anchor | None] = []
        for i in (0, 1):
            raw = os.pread(fd, _SLOT_BYTES, i * _SLOT).rstrip(b"\0 \n")
            if raw in self._verified:  # the bytes this process last wrote or verified: no MAC to recompute
                out.append(self._verified[raw])
                continue
            try:
                magic, epoch, seq, h, mac = raw.decode("ascii").split(" ")
                a = Anchor(int(epoch), int(seq), h)
            except ValueError:  # empty, torn or not an anchor
                out.append(None)
                continue
            ok = magic == _MAGIC and a.seq >= 0 and a.epoch >= 0 and mac == self._mac(a.epoch, a.seq, a.hash)
            out.append(a if ok else None)
            if ok:
                self._remember(raw, a)
        return out

    def _remember(self, raw: bytes, a: Anchor) -> None:
        if len(self._verified) >= 4:
            self._verified.pop(next(iter(self._verified)))
        self._verified[raw] = a

    def read(self) -> Anchor | None:
        """The current anchor; ``None`` when the file does not exist. Raises ``ValueError`` when it exists
        but no slot verifies (edited, or made with another key)."""
        if self._fd is None and not self.exists():
            return None
        fd = self._open()
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            slots = self._slots(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        valid = [s for s in slots if s is not None]
        if not valid:
            raise ValueError(f"the anchor file {self.path} does not verify (edited, or made with another key)")
        return max(valid)

    @contextlib.contextmanager
    def locked(self) -> Any:
        """Hold the file's exclusive lock; yields (current anchor or None, write function)."""
        fd = self._open()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            slots = self._slots(fd)
            valid = [s for s in slots if s is not None]
            current = max(valid) if valid else None

            def write(a: Anchor) -> None:
                # overwrite the invalid or older slot; the other keeps the previous anchor
                target = 0 if slots[0] is None else 1 if slots[1] is None else int(slots[1] < slots[0])
                line = f"{_MAGIC} {a.epoch} {a.seq} {a.hash} {self._mac(a.epoch, a.seq, a.hash)}".encode("ascii")
                os.pwrite(fd, (line + b"\n").ljust(_SLOT_BYTES, b"\0"), target * _SLOT)
                slots[target] = a
                self._remember(line, a)

            yield current, write
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _problem_behind(db_seq: int, a: Anchor) -> str:
    return (f"the database is behind its anchor: its audit log ends at event {db_seq} but the anchor kept beside"
            f" the key says the store reached event {a.seq} (an older copy of the file was put back, or the"
            " newest audit rows were deleted)")


def _problem_forked(a: Anchor) -> str:
    return (f"the database does not match its anchor: audit event {a.seq} is not the one anchored (the file was "
            "replaced by a different copy, or its audit log rewritten)")


class AnchorKeeper:
    """Checks a store against its anchor at open and after commits, and advances the anchor."""

    def __init__(self, file: AnchorFile, durability: str, sync: Callable[[], None]) -> None:
        """``sync``: makes the commits seen so far durable (``Engine.sync``; used under durability=normal)."""
        self.file = file
        self.durability = durability
        self._sync = sync
        self.known: Anchor | None = None  # the newest anchor this process read or wrote
        self.problem: str | None = None  # set: the store is behind or off its anchor; nothing is served
        self.error: str | None = None  # the anchor could not be written (reported by doctor)
        self._synced = 0.0

    def check(self, conn: Reads, *, created: bool) -> str | None:
        """At open (``conn``: a read snapshot). Returns the problem, or None. ``created``: the database file
        did not exist (or was empty) before this open. A missing anchor is created by :meth:`start`."""
        try:
            a = self.file.read()
        except ValueError as exc:
            return str(exc)
        if a is None:
            if not created and conn.audit_log(events=(CREATED_EVENT,), limit=1, newest_first=False):
                return ("this database was anchored before but its anchor beside the key is missing (the "
                        "database was moved or copied here, or the anchor deleted)")
            return None
        self.known = a
        if created and head(conn)[0] == 0:
            return None  # a brand-new database at this path: start() opens a new epoch
        return self._compare(conn, a)

    @staticmethod
    def _compare(conn: Reads, a: Anchor) -> str | None:
        return AnchorKeeper._head_against(conn, a)[1]

    @staticmethod
    def _head_against(conn: Reads, a: Anchor) -> tuple[tuple[int, str], str | None]:
        """The head (seq, hash) ``conn`` sees, and the problem if it is behind or off the anchor ``a``."""
        now = conn.audit_head()
        if now[0] < a.seq:
            return now, _problem_behind(now[0], a)
        if a.seq and (now[1] if now[0] == a.seq else conn.audit_hash(a.seq)) != a.hash:
            return now, _problem_forked(a)
        return now, None

    def needs_start(self, created: bool) -> bool:
        """Whether this open must write a new anchor (none yet, or a brand-new database at an anchored path)."""
        return self.known is None or created

    def start(self, conn: Reads) -> None:
        """Anchor the head ``conn`` sees (the ``anchor_created`` event just committed) in a new epoch."""
        seq, h = head(conn)
        with self.file.locked() as (current, write):
            a = Anchor((current.epoch + 1) if current else 1, seq, h)
            write(a)
        self.known = a

    def reset(self, conn: Reads) -> Anchor:
        """An operator accepted the store as it is: anchor its head in a new epoch (monotonic otherwise)."""
        self.problem = None
        self.start(conn)
        assert self.known is not None
        return self.known

    def after_commit(self, conn: Reads, base: tuple[int, str] | None, top: tuple[int, str] | None) -> None:
        """Called by the backend once per committed write transaction (a whole group commit), on the write
        connection outside any transaction, before any writer of the group returns. ``base`` is the chain's
        head the transaction's first audit append linked to, ``top`` the head it committed (both None when it
        appended nothing). Checks the store had not fallen behind the anchor, and advances it. Never raises."""
        if self.problem is not None or top is None or base is None:
            return
        if self.durability != "full":
            now = time.monotonic()
            if now - self._synced < NORMAL_SYNC_SECONDS:
                return
            self._synced = now
        try:
            self._advance(conn, base=base, top=top)
        except (OSError, *DATABASE_ERRORS) as exc:
            self.error = f"the anchor {self.file.path} could not be checked or written: {exc}"

    def _advance(self, conn: Reads, *, base: tuple[int, str] | None = None, top: tuple[int, str] | None = None,
                 sync: bool | None = None) -> None:
        with self.file.locked() as (current, write):
            # under the lock: every anchor written so far is of a commit this connection can see now
            a = current if current is not None and (self.known is None or current > self.known) else self.known
            if a is not None and base == (a.seq, a.hash) and top is not None:
                seq, h = top  # the commit linked straight onto the anchored row: nothing to look up
            elif a is not None:
                (seq, h), problem = self._head_against(conn, a)
                if problem is not None:
                    self.problem = problem
                    return
            else:
                seq, h = head(conn)
            if a is not None and seq <= a.seq:
                self.known = a
                return
            if sync if sync is not None else self.durability != "full":
                self._sync()
            new = Anchor(a.epoch if a is not None else 1, seq, h)
            write(new)
            self.known = new

    def close(self, conn: Reads) -> None:
        """At close: durability=normal anchors what the last second committed (after a WAL fsync)."""
        try:
            if self.problem is None and self.durability != "full":
                self._advance(conn, sync=True)
        except (OSError, *DATABASE_ERRORS) as exc:
            self.error = f"the anchor {self.file.path} could not be written: {exc}"
        finally:
            self.file.close()
