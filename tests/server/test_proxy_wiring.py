"""``install claude-code --endless``: env.ANTHROPIC_BASE_URL in the chosen scope, the 1M-window
assertion only for the first-party API, the user's own base URL kept as the upstream and put back
on uninstall; the SessionStart hook's call starts one proxy per user; ``proxy status|stop``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from infinite_context_brain.server.claude_code.install import InstallReport
from infinite_context_brain.server.proxy import process
from infinite_context_brain.server.proxy.wiring import BASE_URL, FIRST_PARTY, endless_check, install_endless

CLI = [sys.executable, "-m", "infinite_context_brain.server"]


def test_install_endless_project_scope_and_uninstall(tmp_path: Path) -> None:
    project, data = tmp_path / "p", tmp_path / "data"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFINITE_CONTEXT_", "ANTHROPIC_BASE"))}
    env.update(INFINITE_CONTEXT_DATA_DIR=str(data), CLAUDE_CONFIG_DIR=str(tmp_path / "cc"))
    done = subprocess.run(
        [*CLI, "--project", str(project), "install", "claude-code", "--endless", "--scope", "project"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["env"] == {BASE_URL: "http://127.0.0.1:8419", FIRST_PARTY: "1"}
    assert "SessionStart" in settings["hooks"]
    assert process.read_config(data) == process.ProxyConfig()
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
    assert process.read_config(data) is None


def test_a_gateway_stays_the_upstream_and_comes_back(tmp_path: Path) -> None:
    project, data = tmp_path / "p", tmp_path / "data"
    (project / ".claude").mkdir(parents=True)
    gateway = "https://gateway.example.com/anthropic"
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"env": {BASE_URL: gateway}}))
    report = InstallReport(scope="local")
    install_endless(project, "local", data, report)
    env = json.loads((project / ".claude" / "settings.local.json").read_text())["env"]
    assert env == {BASE_URL: "http://127.0.0.1:8419"}  # no first-party claim for a gateway
    assert process.read_config(data) == process.ProxyConfig(upstream=gateway)
    install_endless(project, "local", data, InstallReport(scope="local"))  # idempotent
    install_endless(project, "local", data, InstallReport(scope="local"), uninstall=True)
    env = json.loads((project / ".claude" / "settings.local.json").read_text())["env"]
    assert env == {BASE_URL: gateway}


def test_hook_start_one_per_user_status_and_stop(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert process.ensure_running(data) is None  # not installed: nothing started
    process.write_config(data, process.ProxyConfig(port=port, upstream="http://127.0.0.1:9"))
    try:
        first = process.ensure_running(data)
        assert first is not None and first.running
        again = process.ensure_running(data)
        assert again is not None and again.pid == first.pid  # one per user
        assert process.start_detached(data, process.ProxyConfig(port=port + 1)).pid == first.pid
        state, detail, _ = endless_check(data)
        assert state == "ok" and f"pid {first.pid}" in detail
        # a second proxy on the same data folder refuses to run (the lock)
        other = subprocess.run(
            [*CLI, "proxy", "run", "--port", str(port + 2)],
            env={**os.environ, "INFINITE_CONTEXT_DATA_DIR": str(data)},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert other.returncode == 1 and "already runs" in other.stderr
    finally:
        stopped = process.stop(data)
    assert not stopped.running and endless_check(data)[0] == "warn"


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
    chosen = live_options(
        Settings(data_dir=tmp_path, proxy_keep_recent=0, proxy_epoch_tokens=1000, context_window=50_000)
    )
    assert (chosen.keep_recent, chosen.epoch_tokens, chosen.window) == (0, 1000, 50_000)
    assert process.resolve(tmp_path, settings=Settings(proxy_port=9001)).port == 9001
    assert process.resolve(tmp_path, 9002, settings=Settings(proxy_port=9001)).port == 9002  # the flag wins

    env = {**os.environ, "INFINITE_CONTEXT_DATA_DIR": str(tmp_path / "data")}
    for name, value in [
        ("INFINITE_CONTEXT_PROXY_KEEP_RECENT", "two"),
        ("INFINITE_CONTEXT_PROXY_PORT", "70000"),
    ]:
        done = subprocess.run(
            [*CLI, "proxy", "start"], env={**env, name: value}, capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 2, done.stderr
        assert name in done.stderr
        assert not (tmp_path / "data" / "proxy" / "proxy.json").exists()
