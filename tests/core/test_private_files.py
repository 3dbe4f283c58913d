"""What infinite-context creates is private whatever the umask, the id file appears only on the
first write, and a hostile or stray id file never hangs, crashes or captures another project."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.project import SESSION_FILE, find_root, resolve_project
from infinite_context_brain.core.transcript.handoff import checkpoint_from_transcript

from ..conftest import FIXTURES


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.fixtures
def test_everything_created_is_private_under_umask_zero(tmp_path: Path, loose_umask: None) -> None:
    data = tmp_path / "data" / "nested"
    project = tmp_path / "project"
    project.mkdir()
    old_db = tmp_path / "old.db"
    old_db.touch(mode=0o644)
    os.chmod(old_db, 0o644)
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((FIXTURES / "spotter" / "short.jsonl").read_bytes())
    for url in (f"sqlite:///{data / 'brain.db'}", f"sqlite:///{old_db}"):
        settings = load_settings(store_url=url, data_dir=data, merge="offline")
        with ProjectBrain.open(project, settings) as brain:
            checkpoint_from_transcript(brain, transcript, "test")
    assert mode(data) == 0o700 and mode(data.parent) == 0o700
    assert mode(data / "brain.db") == 0o600 and mode(old_db) == 0o600  # an older 0644 file tightened
    cursors = data / "cursors"
    assert mode(cursors) == 0o700
    assert {mode(p) for p in cursors.iterdir()} == {0o600}


def test_the_id_file_appears_on_the_first_write_only(tmp_path: Path, store_url: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    settings = load_settings(store_url=store_url, merge="offline")
    with ProjectBrain.open(project, settings) as brain:
        assert brain.resume().state is None and brain.status().version == 0
        assert brain.history() == [] and brain.budget().version == 0
        assert brain.claim("mcp:test").acquired  # held from the first write on
        assert not (project / SESSION_FILE).exists()
        brain.checkpoint("Current task: first write")
        assert (project / SESSION_FILE).exists()
        assert brain.status().lock_holder == "mcp:test"
    # a hook given a missing transcript, and doctor, create nothing either
    other = tmp_path / "other"
    other.mkdir()
    env = {**os.environ, "INFINITE_CONTEXT_STORE_URL": store_url, "CLAUDE_PROJECT_DIR": str(other)}
    payload = {"session_id": "s", "transcript_path": str(other / "missing.jsonl"), "cwd": str(other)}
    for args in (["hook", "session-end"], ["hook", "session-start"], ["doctor"], ["status"]):
        subprocess.run(
            [sys.executable, "-m", "infinite_context_brain.server", *args],
            input=json.dumps(payload),
            text=True,
            env=env,
            cwd=other,
            capture_output=True,
            timeout=60,
        )
    assert not (other / SESSION_FILE).exists()


def test_hostile_id_files_never_hang_or_crash(tmp_path: Path) -> None:
    cases = {
        "fifo": lambda p: os.mkfifo(p),
        "zero": lambda p: p.symlink_to("/dev/zero"),
        "binary": lambda p: p.write_bytes(b"\xff\xfe\x00garbage"),
        "huge": lambda p: p.write_text("x" * 100_000),
        "folder": lambda p: p.mkdir(),
    }
    for name, make in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        make(folder / SESSION_FILE)
        project = resolve_project(folder, create=False)  # returns at once, no id
        assert project.session_id == "", name


def test_a_parent_id_file_is_adopted_only_inside_the_same_repository(tmp_path: Path) -> None:
    (tmp_path / SESSION_FILE).write_text("stray-home-id\n")
    repo = tmp_path / "work" / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    assert find_root(repo / "sub") == repo  # the stray id above the repository is ignored
    (repo / SESSION_FILE).write_text("repo-id\n")
    assert resolve_project(repo / "sub").session_id == "repo-id"  # inside the repository: shared
    plain = tmp_path / "plain" / "child"
    plain.mkdir(parents=True)
    assert find_root(plain) == plain  # no repository: only the folder's own id file counts


def test_a_second_store_on_the_same_file_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    """Opening a store never opens and closes the database file itself: POSIX locks belong to the
    process, so that close would drop the locks SQLite holds through the first store, and another
    process closing the file would then delete the WAL under it: what the first store writes next
    would go to a deleted file."""
    import subprocess
    import sys

    from infinite_context_brain.core.config import load_settings
    from infinite_context_brain.core.storage import open_store

    url = f"sqlite:///{tmp_path / 'brain.db'}"
    reader = (
        "import sys\n"
        "from infinite_context_brain.core.config import load_settings\n"
        "from infinite_context_brain.core.storage import open_store\n"
        "store = open_store(load_settings(store_url=sys.argv[1]))\n"
        "print(store.states.current_version(sys.argv[2]))\n"
        "store.close()\n"
    )

    def version_elsewhere() -> int:
        done = subprocess.run(
            [sys.executable, "-c", reader, url, "s"], capture_output=True, text=True, check=True
        )
        return int(done.stdout.strip())

    first = open_store(load_settings(store_url=url))
    second = None
    try:
        for version in (1, 2):
            first.states.update_state("s", lambda _old, n: _entry(n))
            if version == 1:
                second = open_store(load_settings(store_url=url))  # a second workspace folder
                assert version_elsewhere() == 1  # another process reads, then closes
        assert version_elsewhere() == 2  # the write after it reached the file others read
    finally:
        if second is not None:
            second.close()
        first.close()


def _entry(version: int) -> object:
    from infinite_context_brain.core.models import HistoryEntry, ProjectState, utcnow

    state = ProjectState.empty("s")
    state.meta.version = version
    return HistoryEntry(version=version, timestamp=utcnow(), merged_by="test", state=state)
