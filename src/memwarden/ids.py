"""Sortable record ids (ULID, via python-ulid) and session ids."""

from __future__ import annotations

from ulid import ULID


def new_id() -> str:
    """A ULID string: lexicographic order is creation order (to the millisecond)."""
    return str(ULID())
