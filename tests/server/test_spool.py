"""The deferred hooks' queue: PostToolUse returns at once and nothing queued is lost (many hooks at
once, the worker killed mid-drain, a full disk); each record runs with its own settings; the queue
is private and nothing in it is trusted unless it is the user's own; SessionStart waits for the
hand-offs of its own project only, never behind a backlog or a record whose store is gone."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.server.claude_code import failures, hooks, replay, spool

from ..conftest import FIXTURES, cli_env, run_cli, settle_hooks

SCRIPT = Path(sys.executable).parent / "infinite-context"
SMALL = FIXTURES / "claude-reliability" / "coverage-test-fix" / "transcript.jsonl"


def _payload(project: Path, i: int, **extra: object) -> bytes:
    return json.dumps(
        {
            "session_id": "s",
            "cwd": str(project),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {i}"},
            "tool_response": {"stdout": f"line one {i}\nline two", "stderr": ""},
            "tool_use_id": f"toolu_spool{i:03d}",
            **extra,
        },
        indent=1,  # line breaks in the payload must not break the queue
    ).encode()


def _hook(store_url: str, event: str, payload: bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(SCRIPT), "hook", event],
        input=payload,
        env=cli_env(store_url, **env),
        capture_output=True,
        timeout=60,
    )


def _post(store_url: str, project: Path, i: int) -> float:
    started = time.perf_counter()
    done = _hook(store_url, "post-tool-use", _payload(project, i))
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b"", done.stderr
    return time.perf_counter() - started


def _stored(store_url: str, project: Path, ids: list[str]) -> dict[str, object]:
    session = (project / ".claude_session_id").read_text().strip()
    with open_store(load_settings(store_url=store_url)) as store:
        return dict(store.observations.get_observations(session, ids))


def _ids(n: int) -> list[str]:
    return [f"toolu_spool{i:03d}" for i in range(n)]


def _enqueue(kind: str, payload: bytes, env: dict[str, str], cwd: Path) -> str:
    """A record queued as a hook with ``env`` in ``cwd`` would queue it."""
    return spool.enqueue(kind, payload, env=env, cwd=str(cwd)).path


@pytest.mark.slow
def test_concurrent_hooks_lose_nothing_and_return_fast(store_url: str, project_dir: Path) -> None:
    n = 24
    with ThreadPoolExecutor(8) as pool:
        times = sorted(pool.map(lambda i: _post(store_url, project_dir, i), range(n)))
    log = settle_hooks()
    assert set(_stored(store_url, project_dir, _ids(n))) == set(_ids(n)), log
    assert '"level":"error"' not in log
    assert times[len(times) // 2] < 2.0  # 8 at once on a small machine; benchmarks/hooks_bench.py times one
    folder = Path(spool.spool_dir())
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "worker.log").stat().st_mode) == 0o600


@pytest.mark.slow
def test_a_killed_worker_loses_nothing(store_url: str, project_dir: Path) -> None:
    env = cli_env(store_url)
    for i in range(40):
        _enqueue("post-tool-use", _payload(project_dir, i), env, project_dir)
    folder = spool.spool_dir()
    worker = subprocess.Popen(
        [sys.executable, "-m", "infinite_context_brain.server.claude_code.worker", folder],
        env=env,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while len(spool.pending(folder)) == 40 and time.monotonic() < deadline:
        time.sleep(0.005)
    worker.send_signal(signal.SIGKILL)  # mid-drain
    worker.wait()
    left = len(spool.pending(folder))
    assert 0 < left < 40, left
    # the next hook starts a new worker, which replays what is left
    _post(store_url, project_dir, 40)
    log = settle_hooks()
    assert not spool.pending(folder)
    assert set(_stored(store_url, project_dir, _ids(41))) == set(_ids(41)), log


def test_queue_records_are_private_whole_and_say_their_kind(tmp_path: Path) -> None:
    folder = str(tmp_path / "data" / "spool")
    path = spool.enqueue("session-end", b'{"a":\n 1}', "/p", folder).path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    record = json.loads(Path(path).read_text())
    assert record["payload"] == {"a": 1} and record["kind"] == "session-end" and record["project"] == "/p"
    # a SessionEnd is a hand-off SessionStart waits for (its name once read as kind "end")
    assert spool.kind_of(Path(path).name) == "session-end"
    assert spool.hand_offs(folder) == [Path(path).name]
    observed = spool.enqueue("post-tool-use", b"{}", None, folder).path
    assert spool.hand_offs(folder) == [Path(path).name] and len(spool.pending(folder)) == 2
    assert spool.kind_of(Path(observed).name) == "post-tool-use"
    assert not any(name.startswith(".") for name in os.listdir(folder))  # no temporary left


def test_records_carry_routing_but_never_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFINITE_CONTEXT_STORE_URL", "sqlite:///x.db")
    monkeypatch.setenv("INFINITE_CONTEXT_ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-secret")
    path = spool.enqueue("stop", b"{}", None, str(tmp_path / "spool")).path
    env = json.loads(Path(path).read_text())["env"]
    assert env["INFINITE_CONTEXT_STORE_URL"] == "sqlite:///x.db"
    assert "secret" not in Path(path).read_text()


def test_each_record_runs_with_its_own_settings_and_this_process_is_untouched(
    tmp_path: Path, project_dir: Path
) -> None:
    """Two projects with their own stores queue into one spool; one drain runs both, each with
    the settings its record carries (a relative store path taken from the hook's folder), and
    the running process's environment and working folder stay as they were."""
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / ".env").write_text("INFINITE_CONTEXT_OBSERVATION_MAX_TOKENS=77\n")
    base = {k: v for k, v in os.environ.items() if not spool.routing(k)}
    data = str(tmp_path / "data")
    first = {
        **base,
        "INFINITE_CONTEXT_STORE_URL": f"sqlite:///{tmp_path / 'a.db'}",
        "INFINITE_CONTEXT_DATA_DIR": data,
    }
    second = {**base, "INFINITE_CONTEXT_STORE_URL": "sqlite:///b.db", "INFINITE_CONTEXT_DATA_DIR": data}
    _enqueue("post-tool-use", _payload(project_dir, 0), first, project_dir)
    _enqueue("post-tool-use", _payload(other, 1, cwd=str(other)), second, other)
    env_before, cwd_before = dict(os.environ), os.getcwd()
    assert replay.drain(spool.spool_dir(), hooks.run_record, set()) == 2
    assert dict(os.environ) == env_before and os.getcwd() == cwd_before
    assert set(_stored(f"sqlite:///{tmp_path / 'a.db'}", project_dir, _ids(2))) == {"toolu_spool000"}
    assert (other / "b.db").exists()  # relative to the hook's folder, not this process's
    stored = _stored(f"sqlite:///{other / 'b.db'}", other, _ids(2))
    assert set(stored) == {"toolu_spool001"}


def _session_end(project: Path, transcript: Path) -> bytes:
    payload = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(project), "reason": "clear"}
    return json.dumps(payload).encode()


def _start(store_url: str, project: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    payload = {"session_id": "s2", "cwd": str(project), "source": "clear", "hook_event_name": "SessionStart"}
    return _hook(store_url, "session-start", json.dumps(payload).encode(), **env)


def _context(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


@pytest.mark.fixtures
@pytest.mark.slow
def test_session_start_runs_the_hand_off_ahead_of_a_backlog(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    """A SessionEnd queued behind 1,000 PostToolUse records that a worker is busy with: the new
    session still starts with the ended one (SessionStart runs that hand-off itself)."""
    transcript = tmp_path / "session.jsonl"
    shutil.copy(SMALL, transcript)
    env = cli_env(store_url)
    for i in range(1000):
        _enqueue("post-tool-use", _payload(project_dir, i), env, project_dir)
    _enqueue("session-end", _session_end(project_dir, transcript), env, project_dir)
    folder = spool.spool_dir()
    spool.ensure_worker(folder)
    started = _start(store_url, project_dir)
    assert "multiply_numbers" in _context(started)
    assert len(spool.pending(folder)) > 100  # the backlog was not waited for
    assert not spool.hand_offs(folder)


@pytest.mark.fixtures
def test_session_start_waits_only_for_its_own_project(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    """A hand-off of another project whose store is gone is left alone (it once cost every
    SessionStart a 5 s wait); one of this project is run first, and a failing one of this project
    is tried once and said to the user."""
    transcript = tmp_path / "session.jsonl"
    shutil.copy(SMALL, transcript)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ".git").mkdir(parents=True)
    gone = tmp_path / "not-a-folder"
    gone.write_text("")
    broken = cli_env(f"sqlite:///{gone}/brain.db")
    theirs = _enqueue("session-end", _session_end(elsewhere, transcript), broken, elsewhere)
    before = Path(theirs).read_bytes()
    _enqueue("session-end", _session_end(project_dir, transcript), cli_env(store_url), project_dir)
    started = _start(store_url, project_dir)
    assert "multiply_numbers" in _context(started)
    assert Path(theirs).read_bytes() == before and spool.hand_offs(spool.spool_dir()) == [Path(theirs).name]
    assert b"kept" not in started.stderr and b"elsewhere" not in started.stderr

    mine = _start(f"sqlite:///{gone}/brain.db", elsewhere)  # its own store is gone: one try, then told
    assert mine.returncode == 0
    told = json.loads(mine.stdout)["systemMessage"]
    assert "infinite-context could not" in told and "Not a directory" in told, told
    assert mine.stderr.count(b"kept for the next run") == 1
    assert spool.hand_offs(spool.spool_dir()) == [Path(theirs).name]  # kept for a later try


def test_a_record_that_is_not_the_users_own_is_never_run(
    store_url: str, project_dir: Path, tmp_path: Path
) -> None:
    """A record anyone can write, one in place of a symlink, and (as root) one another user owns:
    refused and removed, never replayed."""
    env = cli_env(store_url)
    writable = _enqueue("post-tool-use", _payload(project_dir, 0), env, project_dir)
    os.chmod(writable, 0o666)
    planted = tmp_path / "planted.rec"
    planted.write_bytes(Path(writable).read_bytes())
    (Path(spool.spool_dir()) / "00000000000000000001-1.post-tool-use.rec").symlink_to(planted)
    if os.getuid() == 0:
        os.chown(_enqueue("post-tool-use", _payload(project_dir, 2), env, project_dir), 65534, 65534)
    ran: list[str] = []
    assert replay.drain(spool.spool_dir(), lambda r: ran.append(r.path), set()) == 0
    assert ran == [] and spool.pending(spool.spool_dir()) == []
    assert planted.exists()  # a link's target is never touched


def test_a_folder_that_is_not_the_users_own_is_never_used(store_url: str, project_dir: Path) -> None:
    folder = Path(spool.spool_dir())
    folder.mkdir(parents=True)
    folder.chmod(0o777)  # made by someone else's umask, or for someone else
    done = _hook(store_url, "post-tool-use", _payload(project_dir, 0))
    assert done.returncode == 0 and not spool.pending(str(folder))
    assert b"writable by others" in done.stderr
    assert "writable by others" in json.loads(done.stdout)["systemMessage"]
    doctor = run_cli(store_url, "--json", "doctor", cwd=project_dir)
    check = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}["data folder"]
    assert check["status"] == "fail" and "writable by others" in check["detail"] and "move" in check["fix"]
    if os.getuid() == 0:  # a data folder another user made first
        folder.chmod(0o700)
        os.chown(folder.parent, 65534, 65534)
        done = _hook(store_url, "stop", _session_end(project_dir, project_dir / "t.jsonl"))
        assert b"owned by uid 65534" in done.stderr and not spool.pending(str(folder))
        start = _start(store_url, project_dir)
        assert b"owned by uid 65534" in start.stderr
        os.chown(folder.parent, 0, 0)


def test_a_full_disk_leaves_no_partial_record(store_url: str, project_dir: Path) -> None:
    """The record cannot be written (the file size limit stands in for a full disk): no
    temporary file with the raw payload is left; the hook runs inline instead, and exits 0."""
    folder = Path(spool.spool_dir())
    folder.mkdir(parents=True)

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    big = _payload(project_dir, 0, tool_response={"stdout": "secret-ish output " * 2000, "stderr": ""})
    done = subprocess.run(
        [str(SCRIPT), "hook", "post-tool-use"],
        input=big,
        env=cli_env(store_url),
        capture_output=True,
        timeout=60,
        preexec_fn=small_files,
    )
    assert done.returncode == 0, done.stderr
    assert b"queue unavailable" in done.stderr
    assert os.listdir(folder) == [] or all(not n.endswith(".tmp") for n in os.listdir(folder))
    assert not spool.pending(str(folder))


def test_a_crashing_handler_keeps_the_record_redacted(tmp_path: Path) -> None:
    """A record whose handler raised something unexpected moves to spool/failed with every
    secret in it redacted, and the failure is kept for the user (hooks.log, the notice)."""
    folder = str(tmp_path / "data" / "spool")
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    payload = json.dumps(
        {"session_id": "s9", "tool_use_id": "t", "tool_name": "Bash", "tool_response": secret}
    )
    spool.enqueue("post-tool-use", payload.encode(), None, folder)

    def crash(record: replay.Record) -> None:
        raise RuntimeError("the handler broke")

    assert replay.drain(folder, crash, set()) == 1
    (kept,) = list((Path(folder) / "failed").iterdir())
    assert secret not in kept.read_text() and "REDACTED" in kept.read_text()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and not spool.pending(folder)
    last = failures.last(str(tmp_path / "data"))
    assert last is not None and "RuntimeError: the handler broke" in last[0]["message"] and last[1]
    assert failures.notice(str(tmp_path / "data"), "s9") is None  # the next hand-off recovers it
    spool.enqueue("stop", payload.encode(), None, folder)
    assert replay.drain(folder, crash, set()) == 1
    notice = failures.notice(str(tmp_path / "data"), "s9")
    assert notice is not None and "could not save the hand-off" in notice and "the handler broke" in notice
    assert failures.notice(str(tmp_path / "data"), "s9") is None  # once per session


def test_half_an_emoji_and_huge_integers_survive_the_queue(store_url: str, project_dir: Path) -> None:
    """A tool output cut in the middle of an emoji (a lone surrogate, as a JavaScript slice leaves
    it) and integers past 64 bits, in a PostToolUse payload: stored, not lost."""
    payload = _payload(
        project_dir, 0, tool_response={"stdout": "done \ud83d", "stderr": ""}, tool_input={"n": 2**70}
    )
    assert b"\\ud83d" in payload
    done = _hook(store_url, "post-tool-use", payload)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    log = settle_hooks()
    stored = _stored(store_url, project_dir, _ids(1))
    assert "done \ufffd" in str(stored["toolu_spool000"]), log
    assert '"level":"error"' not in log
