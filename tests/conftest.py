"""Shared fixtures: a throwaway project folder and store, and the contract-suite store factory.

Every test gets its own SQLite file under tmp_path, so tests never touch the user's brain.
``store_backend`` is the parametrised fixture the store contract suite runs on; a backend
joins the suite by adding a param here.
"""

from __future__ import annotations

import atexit
import io
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import Settings, load_settings
from infinite_context_brain.core.project import resolve_project
from infinite_context_brain.core.storage import Store, open_store

from .helpers.redis_servers import RedisCluster, RedisServer, free_port, start_cluster

REPO = Path(__file__).resolve().parents[1]
#: Real Claude Code transcripts, kept beside the repository (``../shared/fixtures``), not in it.
#: A test that reads them is marked ``@pytest.mark.fixtures``; without them it is skipped, saying
#: why (``IC_TEST_FIXTURES`` moves them).
FIXTURES = Path(os.environ.get("IC_TEST_FIXTURES") or REPO.parent / "shared" / "fixtures" / "claude-code")
#: A long session with a compaction, and a 2.1.6 session with phantom reads.
SPOTTER_LONG = FIXTURES / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
PHANTOM = (
    FIXTURES
    / "phantom-reads"
    / "session-examples"
    / "2.1.6-bad"
    / "bf88e2ff-ac8b-4f29-8dbf-c2467325fe4e.jsonl"
)
FIXTURES_MISSING = (
    f"needs the Claude Code transcript fixtures in {FIXTURES} (the team's ../shared folder beside the "
    "repository; set IC_TEST_FIXTURES to use another folder)"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``fixtures`` (per test, or per module with ``pytestmark``) read the real
    transcripts: without them they are skipped, saying where they were looked for."""
    if FIXTURES.is_dir():
        return
    skip = pytest.mark.skip(reason=FIXTURES_MISSING)
    for item in items:
        if item.get_closest_marker("fixtures") is not None:
            item.add_marker(skip)


_TEST_HOME: Path | None = None
#: the user's own home folder, as the run found it (``HOME`` then points into the run's temp folder)
REAL_HOME = Path(os.environ.get("HOME") or Path.home())
#: where the run's processes keep what they would keep in a home folder
HOME_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


def pytest_configure(config: pytest.Config) -> None:
    """Every process the run starts (the CLI, servers, hooks and their worker, the Claude Code
    CLI with its cache, shells) has a home folder and XDG folders in this run's temp folder, set
    before any fixture runs: nothing lands in the user's real home (``home_untouched`` checks)."""
    import tempfile

    global _TEST_HOME
    _TEST_HOME = Path(tempfile.mkdtemp(prefix="ic-tests-home-"))
    # Removed at exit, after the exit handlers registered later (IPython writes its history then).
    atexit.register(shutil.rmtree, _TEST_HOME, True)
    folders = {
        "HOME": _TEST_HOME / "home",
        "XDG_CONFIG_HOME": _TEST_HOME / "home" / ".config",
        "XDG_CACHE_HOME": _TEST_HOME / "home" / ".cache",
        "XDG_DATA_HOME": _TEST_HOME / "home" / ".local" / "share",
        "XDG_STATE_HOME": _TEST_HOME / "home" / ".local" / "state",
    }
    for name, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        os.environ[name] = str(folder)


def home_snapshot(home: Path, depth: int = 2) -> dict[str, tuple[str, int, int]]:
    """Each entry of ``home`` down to ``depth`` levels: kind, size and modification time (a
    folder's time moves when an entry is added to or removed from it, so anything created one
    level deeper shows too). Links are not followed."""
    found: dict[str, tuple[str, int, int]] = {}
    folders = [(home, 0)]
    while folders:
        folder, level = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            kind = "dir" if entry.is_dir(follow_symlinks=False) else "link" if entry.is_symlink() else "file"
            found[os.path.relpath(entry.path, home)] = (
                kind,
                info.st_size if kind == "file" else 0,
                info.st_mtime_ns,
            )
            if kind == "dir" and level + 1 < depth:
                folders.append((Path(entry.path), level + 1))
    return found


@pytest.fixture(scope="session", autouse=True)
def home_untouched() -> Iterator[None]:
    """The run leaves the user's real home folder as it found it (no Claude Code cache, shell
    history, brain, config or backup of ours in it): a snapshot before and after, compared.
    On a machine where other programs write into that home meanwhile (another session's test
    run, a package install), ``IC_TEST_HOME_IGNORE`` names their paths (``:``-separated,
    relative to the home folder); it is never set in CI."""
    ignored = tuple(p for p in os.environ.get("IC_TEST_HOME_IGNORE", "").split(":") if p)
    before = home_snapshot(REAL_HOME)
    yield
    after = home_snapshot(REAL_HOME)
    changed = sorted(
        k
        for k in before.keys() | after.keys()
        if before.get(k) != after.get(k) and not any(k == p or k.startswith(p + "/") for p in ignored)
    )
    assert not changed, f"the test run changed {REAL_HOME}: {changed[:20]}"


PYTHON = sys.executable


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Never read the developer's real settings or brain.
    for name in list(os.environ):
        if name.startswith("INFINITE_CONTEXT_") or name in {
            "REDIS_URL",
            "PROJECT_ROOT",
            "CLAUDE_PROJECT_DIR",
            "CLAUDE_CONFIG_DIR",
            "CLAUDECODE",
            "CLAUDE_CODE_ENTRYPOINT",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_MODEL",
            "ANTHROPIC_MODEL",
            "LOG_LEVEL",
        }:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("INFINITE_CONTEXT_DATA_DIR", str(tmp_path / "data"))
    # The real Claude Code CLI keeps a folder per project under $TMPDIR/claude-<uid>: in the
    # test's own folder, not /tmp (hundreds were left there by the suite's real-CLI tests).
    monkeypatch.setenv("CLAUDE_CODE_TMPDIR", str(tmp_path / "claude-tmp"))


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    pass\n")
    (root / "src" / "auth.py").write_text("def login():\n    pass\n")
    (root / "README.md").write_text("# demo\n")
    (root / ".git").mkdir()
    return root


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'brain.db'}"


@pytest.fixture
def settings(store_url: str) -> Settings:
    return load_settings(store_url=store_url)


@pytest.fixture
def brain(project_dir: Path, settings: Settings) -> Iterator[ProjectBrain]:
    with ProjectBrain.open(project_dir, settings) as b:
        yield b


def run_cli(
    store_url: str, *args: str, stdin: bytes = b"", cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """``infinite-context ARGS`` on ``store_url``, run in this process: ``main(argv)`` with its own
    stdin, stdout, stderr, environment and working folder (bytes in, bytes out, exit status as a
    process would have it). Everything it changes is put back: the streams, the environment, the
    folder and the logging set-up ``main`` installs for its process. The real process path (start-up,
    ``python -m``, the console script) is covered by the tests that use ``run_cli_process``."""
    from infinite_context_brain.server.cli.main import main

    out, err = io.BytesIO(), io.BytesIO()
    streams = sys.stdin, sys.stdout, sys.stderr
    saved_env, saved_cwd, saved_logging = dict(os.environ), os.getcwd(), _logging_state()
    # As a piped process sees it: a plain 80-column console for rich, whatever the terminal.
    os.environ.update({"COLUMNS": "80", **cli_env(store_url, **env)})
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    try:
        if cwd is not None:
            os.chdir(cwd)
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors, as the interpreter would report them
            if isinstance(exc.code, str):
                sys.stderr.write(exc.code + "\n")
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        sys.stdout.flush()
        sys.stderr.flush()
        argv = ["infinite-context", *args]
        result = subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        _restore_logging(saved_logging)
    return result


def _logging_state() -> tuple[list[logging.Handler], dict[str, int]]:
    loggers = logging.root.manager.loggerDict.items()
    levels = {name: lg.level for name, lg in loggers if isinstance(lg, logging.Logger)}
    return list(logging.root.handlers), {"": logging.root.level, **levels}


def _restore_logging(state: tuple[list[logging.Handler], dict[str, int]]) -> None:
    """``main`` sets up logging for its process (a stderr handler, the root level, quieter
    libraries); in a test process that must end with the call."""
    handlers, levels = state
    for handler in logging.root.handlers[:]:
        if handler not in handlers:
            logging.root.removeHandler(handler)
    logging.root.setLevel(levels[""])
    for name, lg in logging.root.manager.loggerDict.items():
        if isinstance(lg, logging.Logger):
            lg.setLevel(levels.get(name, logging.NOTSET))


def run_cli_process(
    store_url: str, *args: str, stdin: bytes = b"", cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """``infinite-context ARGS`` as a real process on ``store_url`` (bytes in, bytes out)."""
    return subprocess.run(
        [PYTHON, "-m", "infinite_context_brain.server", *args],
        input=stdin,
        env=cli_env(store_url, **env),
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )


def settle_hooks(timeout: float = 30.0) -> str:
    """Wait for the deferred hooks (PostToolUse, Stop, SessionEnd) this test queued to be run by
    their worker (a record kept for later counts as settled once the worker left); returns the
    worker's log."""
    import time

    from infinite_context_brain.server.claude_code.spool import pending, spool_dir, worker_alive

    folder = spool_dir()
    deadline, idle = time.monotonic() + timeout, 0
    while time.monotonic() < deadline and pending(folder):
        idle = idle + 1 if not worker_alive(folder) else 0
        # No worker for 3 s: what is left was kept for the next one. (A worker the hook just
        # spawned can take well over half a second to start on a loaded 2-core CI machine.)
        if idle >= 60:
            break
        time.sleep(0.05)
    log = Path(folder) / "worker.log"
    return log.read_text() if log.exists() else ""


def cli_env(store_url: str, **extra: str) -> dict[str, str]:
    """This test's environment (already cleaned by ``_isolated_env``, so it keeps the test's own
    data folder) with the store URL and ``extra`` set."""
    env = dict(os.environ)
    env.update({"INFINITE_CONTEXT_STORE_URL": store_url, "PYTHONUNBUFFERED": "1"}, **extra)
    return env


@dataclass
class Backend:
    """One store backend as the contract suite sees it."""

    name: str
    url: str
    open: Callable[..., Store]
    #: overwrite a session's stored state with bytes that are not a valid state
    corrupt_state: Callable[[str], None]


def _sqlite_backend(tmp_path: Path, opened: list[Store]) -> Backend:
    path = tmp_path / "contract.db"
    url = f"sqlite:///{path}"

    def open_(**overrides: object) -> Store:
        store = open_store(load_settings(store_url=url, **overrides))
        opened.append(store)
        return store

    def corrupt(session_id: str) -> None:
        conn = sqlite3.connect(path)
        with conn:
            conn.execute("UPDATE states SET state = '{\"meta\": 42' WHERE session_id = ?", (session_id,))
        conn.close()

    return Backend("sqlite", url, open_, corrupt)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), tmp_path_factory.mktemp("redis"), ["--appendonly", "no"])
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("redis-cluster"))
    yield cluster
    cluster.stop()


def _redis_backend(name: str, url: str, opened: list[Store]) -> Backend:
    import redis

    plain = url.replace("+cluster://", "://")
    admin = redis.RedisCluster.from_url(plain) if "+cluster" in url else redis.Redis.from_url(plain)
    if "+cluster" in url:
        admin.flushall(target_nodes="primaries")
    else:
        admin.flushall()

    def open_(**overrides: object) -> Store:
        store = open_store(load_settings(store_url=url, **overrides))
        opened.append(store)
        return store

    def corrupt(session_id: str) -> None:
        admin.set(f"ic:{{{session_id}}}:state", b'{"meta": 42')

    return Backend(name, url, open_, corrupt)


BACKEND_NAMES = ["sqlite", "redis", "redis-cluster"]


# The cluster (three redis-server processes joined by redis-cli) is the slow one to start.
_BACKEND_PARAMS = [pytest.param(n, marks=pytest.mark.slow) if "cluster" in n else n for n in BACKEND_NAMES]


@pytest.fixture(params=_BACKEND_PARAMS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    opened: list[Store] = []
    if request.param == "sqlite":
        yield _sqlite_backend(tmp_path, opened)
    elif request.param == "redis":
        yield _redis_backend("redis", request.getfixturevalue("redis_server").url, opened)
    else:
        yield _redis_backend("redis-cluster", request.getfixturevalue("redis_cluster").url, opened)
    for store in opened:
        store.close()


@pytest.fixture
def session_id(project_dir: Path) -> str:
    return resolve_project(project_dir).session_id
