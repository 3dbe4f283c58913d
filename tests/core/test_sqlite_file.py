"""The SQLite store's file: private (0600 in a 0700 folder), in WAL mode, at the latest schema,
refused when a newer version wrote it; in the data folder by default; a location that cannot
hold it or a file that is no database named with the fix, and never overwritten."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.errors import CorruptState, StorageUnavailable
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.storage.sqlite_migrations import LATEST


def test_sqlite_file_mode_wal_and_migrations(tmp_path: Path) -> None:
    path = tmp_path / "d" / "brain.db"
    store = open_store(load_settings(store_url=f"sqlite:///{path}"))
    store.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    conn.close()
    with pytest.raises(StorageUnavailable) as info:
        open_store(load_settings(store_url=f"sqlite:///{path}"))
    assert "newer" in str(info.value)


def test_default_store_lives_in_the_data_dir(tmp_path: Path) -> None:
    store = open_store(load_settings(data_dir=tmp_path / "dd"))
    store.close()
    assert (tmp_path / "dd" / "brain.db").exists()


def test_unwritable_or_garbage_store_location(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("I am a file, not a folder")
    with pytest.raises(StorageUnavailable) as info:
        open_store(load_settings(store_url=f"sqlite:///{blocker}/brain.db"))
    assert str(blocker) in str(info.value) and "INFINITE_CONTEXT_STORE_URL" in str(info.value)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(os.urandom(4096))
    with pytest.raises(CorruptState) as damaged:  # a damaged file: recover or move away, never overwritten
        open_store(load_settings(store_url=f"sqlite:///{garbage}"))
    assert "not a usable" in str(damaged.value) and ".recover" in (damaged.value.fix or "")
