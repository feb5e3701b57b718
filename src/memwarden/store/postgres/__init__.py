"""The PostgreSQL engine: every SQL statement memwarden runs on PostgreSQL lives in this package.

``backend.py`` — connections, the write lock, group commit, ``Snapshot`` and ``Tx``; ``views.py`` — a ``View``
as a ``WHERE`` and as the scope the row-level security policies are given; ``records.py``, ``search.py``,
``audit.py``, ``config.py`` (sessions, tokens, settings, host reports), ``checks.py`` — the contract's
operations; ``schema.py`` — migrations, roles and policies; ``migrate.py`` — ``memwarden migrate``. Importing the
package itself loads only the driver's error classes (the store package names them in ``DATABASE_ERRORS``)."""

import psycopg

DATABASE_ERRORS: tuple[type[BaseException], ...] = (psycopg.Error,)  # what a failing database raises

__all__ = ["DATABASE_ERRORS"]
