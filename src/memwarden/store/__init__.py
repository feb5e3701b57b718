"""Storage: the contract (``base.py``: what memwarden needs from a database), the record row mapping
(``rows.py``), and one package per engine (``sqlite/``). Only the engine packages hold SQL; the service decides
*what* to write, the engine decides *how*."""

from memwarden.store.base import Engine, Order, Reads, View, Writes
from memwarden.store.sqlite import DATABASE_ERRORS, SqliteBackend, open_backend, resolve_url

__all__ = ["DATABASE_ERRORS", "Engine", "Order", "Reads", "SqliteBackend", "View", "Writes", "open_backend",
           "resolve_url"]
