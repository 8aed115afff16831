"""The SQLite engine moved to astralyx/engines/sqlite.py; this name stays for existing imports."""

from .engines.sqlite import Database, connect, sqlite3

__all__ = ["sqlite3", "connect", "Database"]
