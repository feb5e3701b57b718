"""Storage backends. Only SQL lives here: the service decides *what* to write, the store decides *how*."""

from memwarden.store.sqlite import SqliteBackend, open_backend

__all__ = ["SqliteBackend", "open_backend"]
