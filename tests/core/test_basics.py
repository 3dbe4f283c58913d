"""Project identity, settings, redaction, tokens, migrations, file modes."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.errors import ConfigError, CorruptState, StorageUnavailable
from infinite_context_brain.core.project import SESSION_FILE, find_root, resolve_project
from infinite_context_brain.core.redact import find_secrets, redact
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.storage.sqlite_migrations import LATEST
from infinite_context_brain.core.tokens import count_tokens


def test_identity_prefers_session_file_then_git_then_folder(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "sub").mkdir(parents=True)
    assert find_root(plain / "sub") == plain / "sub"

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg" / "deep").mkdir(parents=True)
    project = resolve_project(repo / "pkg" / "deep")
    assert project.root == repo and (repo / SESSION_FILE).read_text().strip() == project.session_id

    (repo / "pkg" / SESSION_FILE).write_text("my-named-brain\n")
    assert resolve_project(repo / "pkg" / "deep").session_id == "my-named-brain"
    assert resolve_project(repo / "pkg" / "deep").root == repo / "pkg"
    assert resolve_project(repo).session_id == project.session_id  # stable


def test_missing_project_folder(tmp_path: Path) -> None:
    from infinite_context_brain.core.errors import InvalidInput

    with pytest.raises(InvalidInput) as info:
        resolve_project(tmp_path / "nope")
    assert info.value.field == "project"


def test_settings_precedence_and_seed_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("INFINITE_CONTEXT_HISTORY_SIZE", "7")
    monkeypatch.setenv("PROJECT_ROOT", str(tmp_path))
    monkeypatch.setenv("LOG_LEVEL", "debug")
    s = load_settings()
    assert (s.history_size, s.project_root, s.log_level) == (7, tmp_path, "DEBUG")
    assert load_settings(history_size=9).history_size == 9  # explicit beats environment
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("INFINITE_CONTEXT_STATE_TOKEN_CAP=1234\nINFINITE_CONTEXT_HISTORY_SIZE=2\n")
    s = load_settings()
    assert s.state_token_cap == 1234 and s.history_size == 7  # env beats .env


def test_bad_settings_name_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFINITE_CONTEXT_HISTORY_SIZE", "lots")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "history_size" in str(info.value)
    monkeypatch.delenv("INFINITE_CONTEXT_HISTORY_SIZE")
    with pytest.raises(ConfigError) as info:
        load_settings(store_url="postgres://x")
    assert "store_url" in str(info.value)


SECRETS = {
    "anthropic": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
    "openai": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_" + "a" * 36,
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_redacts_provider_keys(kind: str) -> None:
    text = f"use {SECRETS[kind]} now"
    out = redact(text)
    assert SECRETS[kind] not in out and "[REDACTED:" in out and out.startswith("use ")


def test_redacts_blocks_urls_and_assignments() -> None:
    text = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n"
        "db postgres://admin:s3cr3tpw@localhost:5432/app\n"
        'password = "hunter22"\nAPI_KEY: abcdef123\n"client_secret": "zzz999"\n'
        "the password policy is strict"
    )
    out = redact(text)
    for secret in ("MIIEow", "s3cr3tpw", "hunter22", "abcdef123", "zzz999"):
        assert secret not in out
    assert "postgres://admin:[REDACTED:password]@localhost" in out
    assert "password policy is strict" in out  # prose about passwords is kept
    assert find_secrets(text) and redact(out) == out  # idempotent: placeholders stay as they are


def test_token_estimate_is_sane() -> None:
    assert count_tokens("") == 0
    assert 8 <= count_tokens("The quick brown fox jumps over the lazy dog.") <= 12
    code = "def checkpoint(self, context: str) -> CheckpointResult:\n    return self._merge(context)\n"
    assert 15 <= count_tokens(code) <= 35
    big = "word " * 200_000
    assert 150_000 <= count_tokens(big) <= 350_000


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


def test_concurrent_first_use_agrees_on_one_session_id(tmp_path: Path) -> None:
    import subprocess
    import sys

    folder = tmp_path / "fresh"
    folder.mkdir()
    code = (
        "import sys; from infinite_context_brain.core.project import resolve_project; "
        "print(resolve_project(sys.argv[1]).session_id)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 1 and "" not in ids
    assert (folder / SESSION_FILE).read_text().strip() in ids
    assert sorted(p.name for p in folder.iterdir()) == [SESSION_FILE]  # no temp files left
