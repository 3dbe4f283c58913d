"""Store identity: a store records who it is, and a brain notices when its store was wiped or
replaced, so a version number never means two different states.

The problem: versions are dense per session (1, 2, 3...) and start from what the store holds. A
flushed Redis, a SQLite file emptied to zero bytes or replaced by another, or a session's keys
deleted by hand look like a brand-new store: the next checkpoint was version 1 again, and a
client holding "version 3" (a diff, a rollback target, an editor's status) met a different
state under the same number.

The design, two halves:

* **The store's id.** Every store holds one random ``store_id`` made the first time it is opened
  (SQLite: the ``store_identity`` table; Redis: the hash ``<prefix>:store``, outside any
  session's hash tag). A wiped or replaced store gets a new id the next time it is opened.
* **What this machine has seen.** ``<data dir>/seen-versions.json`` (0600) records, per store
  location (its URL without password), the store id last seen there and the highest version seen
  for each session. Before each write the brain asks ``Continuity.floor``: if the store's id
  changed, or the store's version of the session is below the highest seen, the store was wiped
  or replaced: a warning is logged and returned (``status``, ``resume`` and ``checkpoint`` show
  it), and the write continues from the highest version seen (``update_state(floor=...)``), so
  no version number repeats on this machine. Then the new id is recorded. Working memory asks
  ``store_replaced`` (``recall`` says so: its items are gone with the store).

Concurrent writers are not a wipe: a version is recorded only after the store holds it, so
``floor`` reads the record first and the store's version after it, under the record's lock; the
store then always holds at least what the record says unless it really lost versions. (Read the
other way round, another process could write and record a newer version in between, and a store
that only moved forward looked wiped.)

What it does not cover: a second machine that never wrote to the store has no record, so it
cannot tell a wiped store from a new one (it starts from what the store holds, like before).
Deleting the data dir deletes the record. Both only lose the warning, never data.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import StorageError
from ..files import open_private, private_dir

if TYPE_CHECKING:
    from .redis_conn import RedisConnection
    from .sqlite_db import SQLiteDB

log = logging.getLogger(__name__)

SEEN_FILE = "seen-versions.json"


class Identity(Protocol):
    def store_id(self) -> str:
        """This store's id, made (once, atomically) the first time it is asked for."""


class SQLiteIdentity:
    def __init__(self, db: SQLiteDB) -> None:
        self.db = db

    def store_id(self) -> str:
        try:  # the common case: one read
            row = self.db.row("SELECT value FROM store_identity WHERE key = 'store_id'")
        except StorageError:  # no such table yet
            row = None
        if row is not None:
            return str(row[0])
        with self.db.write_txn() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS store_identity (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            conn.execute(
                "INSERT OR IGNORE INTO store_identity (key, value) VALUES ('store_id', ?)",
                (uuid.uuid4().hex,),
            )
            row = conn.execute("SELECT value FROM store_identity WHERE key = 'store_id'").fetchone()
        return str(row[0])


class RedisIdentity:
    def __init__(self, conn: RedisConnection) -> None:
        self.conn = conn
        self.key = f"{conn.prefix}:store"

    def store_id(self) -> str:
        def read() -> Any:
            pipe = self.conn.client.pipeline(transaction=False)
            pipe.hsetnx(self.key, "store_id", uuid.uuid4().hex)
            pipe.hget(self.key, "store_id")
            return pipe.execute()[1]

        found = self.conn.guard(read)
        return found.decode() if isinstance(found, bytes) else str(found)


class Continuity:
    """One brain's guard against reused versions (see the module docstring)."""

    def __init__(self, identity: Identity, location: str, data_dir: Path) -> None:
        self.identity = identity
        self.location = location
        self.path = data_dir / SEEN_FILE
        self.warnings: list[str] = []
        self._highest: dict[str, int] = {}  # in this process, so reads cost no file write
        self._known_id: str | None = None  # the store id this process recorded

    def floor(self, session_id: str, read_version: Callable[[], int]) -> int:
        """The version a write must continue from: the store's (``read_version()``, read after
        the record) unless the store was wiped or replaced; records the store's id. A failure
        of the guard itself (a read-only data dir) never stops the write."""
        if not session_id:
            return read_version()
        try:
            store_id = self.identity.store_id()
            with self._record() as record:
                entry = record.setdefault(self.location, {"store_id": store_id, "sessions": {}})
                sessions: dict[str, int] = entry.setdefault("sessions", {})
                seen = max(int(sessions.get(session_id, 0)), self._highest.get(session_id, 0))
                current = read_version()
                replaced = entry.get("store_id") not in (None, store_id)
                if replaced or current < seen:
                    why = (
                        f"its id changed from {str(entry.get('store_id'))[:8]} to {store_id[:8]}"
                        if replaced
                        else f"it holds version {current} of this project, this machine saw {seen}"
                    )
                    self._warn(
                        f"the store {self.location} was wiped or replaced ({why}); "
                        f"versions continue from {max(seen, current) + 1} so none repeats"
                    )
                entry["store_id"] = store_id
                self._known_id = store_id
            return max(seen, current)
        except StorageError:
            raise
        except Exception as exc:  # the seen-versions file: the write reports its own errors
            log.debug("version continuity not checked: %s", exc)
            return read_version()

    def store_replaced(self) -> str | None:
        """A warning when the store's id is not the one this machine recorded for its location
        (a flushed Redis, a replaced file), once; the id is recorded either way."""
        store_id = self.identity.store_id()
        if store_id == self._known_id:
            return None
        try:
            with self._record() as record:
                entry = record.setdefault(self.location, {"store_id": store_id, "sessions": {}})
                before = entry.get("store_id")
                entry["store_id"] = store_id
        except OSError as exc:
            log.debug("store id not recorded: %s", exc)
            return None
        self._known_id = store_id
        if before in (None, store_id):
            return None
        message = (
            f"the store {self.location} was wiped or replaced (its id changed from {str(before)[:8]} "
            f"to {store_id[:8]}): what it held before, working-memory items included, is not there"
        )
        self._warn(message)
        return message

    def seen(self, session_id: str, version: int) -> None:
        """Record that this machine has seen ``version`` (a write, or a read of the state)."""
        if self.identity is None or not session_id or version <= self._highest.get(session_id, 0):
            return
        self._highest[session_id] = version
        try:
            with self._record() as record:
                entry = record.setdefault(self.location, {"sessions": {}})
                sessions = entry.setdefault("sessions", {})
                sessions[session_id] = max(int(sessions.get(session_id, 0)), version)
        except Exception as exc:
            log.debug("version not recorded: %s", exc)

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            log.warning(message)

    @contextlib.contextmanager
    def _record(self) -> Any:
        """The seen-versions file, read and written back under an exclusive lock."""
        private_dir(self.path.parent)
        fd = open_private(self.path, os.O_RDWR)
        with os.fdopen(fd, "r+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            text = handle.read()
            try:
                record = json.loads(text) if text.strip() else {}
            except ValueError:
                record = {}
            if not isinstance(record, dict):
                record = {}
            before = json.dumps(record, sort_keys=True)
            yield record
            after = json.dumps(record, sort_keys=True)
            if after != before:
                handle.seek(0)
                handle.truncate()
                handle.write(after)
                handle.flush()
