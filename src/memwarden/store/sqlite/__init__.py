"""The embedded SQLite engine: every SQL statement memwarden runs on SQLite lives in this package.

``backend.py`` — the connections, group commit, :class:`Snapshot` and :class:`Tx` (the contract's reads and
writes); ``views.py`` — a ``View`` as a ``WHERE``; ``records.py`` — records, history, links and their index
entries; ``search.py`` — what ranking reads; ``audit.py`` — the chained log; ``sessions.py``, ``tokens.py``,
``settings.py``, ``host_reports.py`` (the hosts' ingest reports, issue 13); ``checks.py`` — doctor's soundness
checks; ``schema.py`` — the DDL; ``files.py`` — file modes (I6); ``fts_baseline.py`` — the plain FTS5 baseline of
``bench locomo``; ``outside.py`` — the demo's edit around the API."""

import sqlite3

from memwarden.store.sqlite.backend import (
    NotCommitted,
    Snapshot,
    SqliteBackend,
    Tx,
    default_db_path,
    open_backend,
    resolve_url,
)

DATABASE_ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error,)  # what a failing database raises

__all__ = ["DATABASE_ERRORS", "NotCommitted", "Snapshot", "SqliteBackend", "Tx", "default_db_path", "open_backend",
           "resolve_url"]
