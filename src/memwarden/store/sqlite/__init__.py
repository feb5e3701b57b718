"""The embedded SQLite engine: every SQL statement memwarden runs on SQLite lives in this package."""

from memwarden.store.sqlite.backend import (
    COLUMNS,
    SELECT_COLS,
    NotCommitted,
    SqliteBackend,
    Tx,
    decode_row,
    decode_row_why,
    default_db_path,
    open_backend,
    resolve_url,
    row_to_record,
    scope_clause,
)

__all__ = ["COLUMNS", "SELECT_COLS", "NotCommitted", "SqliteBackend", "Tx", "decode_row", "decode_row_why",
           "default_db_path", "open_backend", "resolve_url", "row_to_record", "scope_clause"]
