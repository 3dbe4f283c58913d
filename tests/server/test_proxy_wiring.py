"""``install claude-code --endless``: env.ANTHROPIC_BASE_URL in the chosen scope on a port chosen
for this user, the 1M-window assertion only for the first-party API, the user's own base URL kept
as the upstream and put back on uninstall; the SessionStart hook starts one proxy per user and
checks that the listener on the installed port is this user's proxy: another user's listener, or
another process of ours, gets Claude Code told to stop (and ``doctor`` says it); ``proxy
status|stop``; the proxy's knobs are settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from infinite_context_brain.server.claude_code.install import InstallReport
from infinite_context_brain.server.proxy import process
from infinite_context_brain.server.proxy.config import (
    PORT_RANGE,
    ProxyConfig,
    read_config,
    resolve,
    write_config,
)
from infinite_context_brain.server.proxy.wiring import BASE_URL, FIRST_PARTY, endless_check, install_endless

from ..helpers.proxy_run import free_port, impostor, proxy_env

CLI = [sys.executable, "-m", "infinite_context_brain.server"]


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = proxy_env(tmp_path / "data")
    env["CLAUDE_CONFIG_DIR"] = str(tmp_path / "cc")
    return env


def test_install_endless_chooses_a_port_for_the_user_and_uninstall_removes_it(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    env = cli_env(tmp_path)
    done = subprocess.run(
        [*CLI, "--project", str(project), "install", "claude-code", "--endless", "--scope", "project"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    config = read_config(tmp_path / "data")
    assert config is not None and PORT_RANGE[0] <= config.port < PORT_RANGE[1]
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["env"] == {BASE_URL: f"http://127.0.0.1:{config.port}", FIRST_PARTY: "1"}
    assert "SessionStart" in settings["hooks"]
    assert (tmp_path / "data" / "proxy" / "config.json").stat().st_mode & 0o777 == 0o600
    done = subprocess.run(
        [
            *CLI,
            "--project",
            str(project),
            "install",
            "claude-code",
            "--uninstall",
            "--endless",
            "--scope",
            "project",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert "env" not in settings and "SessionStart" in settings["hooks"]  # only endless removed
    assert read_config(tmp_path / "data") is None


def test_a_gateway_stays_the_upstream_and_comes_back(tmp_path: Path) -> None:
    project, data = tmp_path / "p", tmp_path / "data"
    (project / ".claude").mkdir(parents=True)
    gateway = "https://gateway.example.com/anthropic"
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"env": {BASE_URL: gateway}}))
    report = InstallReport(scope="local")
    install_endless(project, "local", data, report)
    config = read_config(data)
    assert config is not None and config.upstream == gateway
    env = json.loads((project / ".claude" / "settings.local.json").read_text())["env"]
    assert env == {BASE_URL: config.url}  # no first-party claim for a gateway
    install_endless(project, "local", data, InstallReport(scope="local"))  # idempotent: the same port
    assert read_config(data) == config
    install_endless(project, "local", data, InstallReport(scope="local"), uninstall=True)
    env = json.loads((project / ".claude" / "settings.local.json").read_text())["env"]
    assert env == {BASE_URL: gateway}


@contextmanager
def installed(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    data = tmp_path / "data"
    port = free_port()
    write_config(data, ProxyConfig(port=port, upstream="http://127.0.0.1:9"))
    try:
        yield data, port
    finally:
        process.stop(data)


def test_the_hook_starts_one_proxy_per_user_and_finds_it_ours(tmp_path: Path) -> None:
    assert process.ensure_for_hook(tmp_path / "none") is None  # not installed: nothing started
    with installed(tmp_path) as (data, port):
        assert process.ensure_for_hook(data) is None  # started, and proved ours
        first = process.status(data)
        assert first.running and first.figures is not None and first.problem is None
        assert process.ensure_for_hook(data) is None
        assert process.status(data, ask=False).pid == first.pid  # one per user
        assert process.start_detached(data, ProxyConfig(port=port + 1)).pid == first.pid
        state, detail, _ = endless_check(data)
        assert state == "ok" and f"pid {first.pid}" in detail
        # a second proxy on the same data folder refuses to run (the lock)
        other = subprocess.run(
            [*CLI, "proxy", "run", "--port", str(free_port())],
            env=proxy_env(data),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert other.returncode == 1 and "already runs" in other.stderr
        stopped = process.stop(data)
    assert not stopped.running and endless_check(data)[0] == "warn"


def session_start(data: Path, project: Path) -> dict[str, object]:
    done = subprocess.run(
        [*CLI, "hook", "session-start"],
        input=json.dumps({"hook_event_name": "SessionStart", "source": "startup", "cwd": str(project)}),
        env={**proxy_env(data), "CLAUDE_PROJECT_DIR": str(project)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


@pytest.mark.parametrize("who", ["this user", "another user"])
def test_a_listener_that_is_not_our_proxy_gets_the_session_stopped(tmp_path: Path, who: str) -> None:
    """The installed port taken first: by another user (the socket's owner tells), or by another
    process of this user answering as the proxy without its key (the proof tells)."""
    if who == "another user" and os.getuid() != 0:
        pytest.skip("needs root to run a listener as another user")
    project = tmp_path / "project"
    project.mkdir()
    with installed(tmp_path) as (data, port), impostor(port, user=65534 if who == "another user" else None):
        advice = process.ensure_for_hook(data)
        assert advice is not None and advice.stop
        expected = "another user (uid 65534)" if who == "another user" else "not this user's proxy"
        assert expected in advice.message and "API key" in advice.message
        state, detail, fix = endless_check(data)
        assert state == "fail" and expected in detail and fix and "--endless" in fix
        answer = session_start(data, project)
        assert answer["continue"] is False and answer["stopReason"] == answer["systemMessage"]
        assert expected in str(answer["systemMessage"]) and "hookSpecificOutput" not in answer


def test_a_proxy_that_cannot_start_is_said_without_stopping(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    data = tmp_path / "data"
    write_config(data, ProxyConfig(port=free_port(), upstream="http://127.0.0.1:9"))
    (data / "proxy" / "proxy.lock").mkdir()  # it cannot open its lock: it exits at start
    advice = process.ensure_for_hook(data)
    assert advice is not None and not advice.stop and "not running" in advice.message
    answer = session_start(data, project)
    assert "continue" not in answer and "not running" in str(answer["systemMessage"])


def test_proxy_knobs_are_settings(tmp_path: Path) -> None:
    """The ``INFINITE_CONTEXT_PROXY_*`` knobs are settings: read with every other setting, unset
    ones keep the transform's defaults, a bad value is refused naming the variable (the proxy
    does not start with a silently ignored value)."""
    from infinite_context_brain.core.config import Settings
    from infinite_context_brain.core.transcript.live import LiveOptions
    from infinite_context_brain.server.proxy.store import live_options

    defaults = live_options(Settings(data_dir=tmp_path))
    assert (defaults.keep_recent, defaults.keep_recent_tokens, defaults.epoch_tokens) == (
        LiveOptions.keep_recent,
        LiveOptions.keep_recent_tokens,
        LiveOptions.epoch_tokens,
    )
    assert defaults.long_cache is LiveOptions.long_cache is True
    chosen = live_options(
        Settings(
            data_dir=tmp_path,
            proxy_keep_recent=0,
            proxy_epoch_tokens=1000,
            context_window=50_000,
            proxy_long_cache=False,
        )
    )
    assert (chosen.keep_recent, chosen.epoch_tokens, chosen.window, chosen.long_cache) == (
        0,
        1000,
        50_000,
        False,
    )
    assert resolve(tmp_path, settings=Settings(proxy_port=9001)).port == 9001
    assert resolve(tmp_path, 9002, settings=Settings(proxy_port=9001)).port == 9002  # the flag wins
    assert PORT_RANGE[0] <= resolve(tmp_path / "fresh").port < PORT_RANGE[1]

    env = proxy_env(tmp_path / "data")
    for name, value in [
        ("INFINITE_CONTEXT_PROXY_KEEP_RECENT", "two"),
        ("INFINITE_CONTEXT_PROXY_PORT", "70000"),
        ("INFINITE_CONTEXT_PROXY_MAX_BODY_MB", "0"),
        ("INFINITE_CONTEXT_PROXY_LONG_CACHE", "sometimes"),
    ]:
        done = subprocess.run(
            [*CLI, "proxy", "start"], env={**env, name: value}, capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 2, done.stderr
        assert name in done.stderr
        assert not (tmp_path / "data" / "proxy" / "proxy.json").exists()


def test_a_proxy_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to hand the folder to another user")
    folder = tmp_path / "data" / "proxy"
    folder.mkdir(parents=True, mode=0o700)
    os.chown(folder, 65534, 65534)
    done = subprocess.run(
        [*CLI, "proxy", "start"], env=proxy_env(tmp_path / "data"), capture_output=True, text=True, timeout=30
    )
    assert done.returncode != 0 and "not a private folder of this user" in done.stderr
