"""Numbered schema migrations for the SQLite store, tracked in ``PRAGMA user_version``.

Append new steps; never edit a released one. Each step runs in one ``BEGIN IMMEDIATE``
transaction, so two processes opening a fresh file at once apply it exactly once. A step is SQL
text (statements split with ``sqlite3.complete_statement``, so triggers work) or a function of
the connection for data a statement cannot compute.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .sqlite_memory_schema import SPLIT_POSTINGS, finish_deferred_writes, upgrade_memory_index

Step = str | Callable[[sqlite3.Connection], None]

MIGRATIONS: list[tuple[int, Step]] = [
    (
        1,
        """
        CREATE TABLE states (
            session_id TEXT PRIMARY KEY,
            version    INTEGER NOT NULL,
            state      TEXT NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE history (
            session_id TEXT NOT NULL,
            version    INTEGER NOT NULL,
            entry      TEXT NOT NULL,
            PRIMARY KEY (session_id, version)
        ) WITHOUT ROWID;
        CREATE TABLE locks (
            session_id TEXT PRIMARY KEY,
            owner      TEXT NOT NULL,
            expires_at REAL NOT NULL
        );
        CREATE TABLE changes (
            seq        INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            version    INTEGER NOT NULL,
            kind       TEXT NOT NULL,
            at         REAL NOT NULL
        );
        """,
    ),
    (
        2,
        """
        CREATE TABLE observations (
            session_id  TEXT NOT NULL,
            tool_use_id TEXT NOT NULL,
            observation TEXT NOT NULL,
            created_at  REAL NOT NULL,
            PRIMARY KEY (session_id, tool_use_id)
        ) WITHOUT ROWID;
        """,
    ),
    (
        3,
        """
        CREATE TABLE memory_items (
            rid        INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            id         TEXT NOT NULL,
            item       TEXT NOT NULL,
            archived   INTEGER NOT NULL,
            pinned     INTEGER NOT NULL,
            tokens     INTEGER NOT NULL,
            created_at REAL NOT NULL,
            UNIQUE (session_id, id)
        );
        CREATE INDEX memory_items_by_age ON memory_items(session_id, archived, created_at);
        CREATE VIRTUAL TABLE memory_fts USING fts5(body, tags, tokenize = 'unicode61');
        CREATE TABLE memory_config (
            session_id TEXT PRIMARY KEY,
            config     TEXT NOT NULL
        );
        """,
    ),
    (4, upgrade_memory_index),
    (5, SPLIT_POSTINGS),
    (6, finish_deferred_writes),
]

LATEST = MIGRATIONS[-1][0]


def migrate(conn: sqlite3.Connection) -> int:
    """Bring ``conn``'s schema to LATEST; returns the version found before migrating."""
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if found > LATEST:
        from .. import install_command
        from ..errors import StorageUnavailable

        raise StorageUnavailable(
            f"the store file has schema version {found}, newer than this infinite-context ({LATEST})",
            fix=f"upgrade infinite-context ({install_command(upgrade=True)})",
        )
    for number, script in MIGRATIONS:
        if number <= found:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-check inside the write lock: another process may have migrated meanwhile.
            if int(conn.execute("PRAGMA user_version").fetchone()[0]) >= number:
                conn.execute("ROLLBACK")
                continue
            if callable(script):
                script(conn)
            else:
                for statement in _statements(script):
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return found


def _statements(script: str) -> list[str]:
    """Complete SQL statements of ``script`` (a trigger body's semicolons do not end it)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
