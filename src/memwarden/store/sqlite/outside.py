"""An edit of the database file around memwarden, as anyone who can write the file could make it with the
``sqlite3`` shell — what the guided demo (``memwarden demo``) does to show that such an edit is reported by
``doctor`` and never served (I1, T6). Nothing else calls it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

_EDIT_CONTENT = "UPDATE memories SET content = ? WHERE id = ?"


def edit_content(path: Path, memory_id: str, content: str) -> str:
    """Overwrite one record's content without re-signing it; returns the shell command that does the same."""
    with sqlite3.connect(path) as raw:
        raw.execute(_EDIT_CONTENT, (content, memory_id))
    raw.close()
    shown = _EDIT_CONTENT.replace("?", repr(content), 1).replace("?", repr(memory_id), 1)
    return f'sqlite3 {path.name} "{shown}"'
