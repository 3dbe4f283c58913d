"""SIGINT and SIGTERM stop both stdio servers within a second, cleanly: the MCP server lets go of
the advisory session lock it took on its first tool call (Claude Code stops it with SIGTERM), no
traceback, no "Fatal Python error"; a second signal during the stop changes nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import IO, Any

import pytest

from ..conftest import PYTHON, cli_env, run_cli

pytestmark = pytest.mark.slow  # real server processes


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message).encode() + b"\n")
    stdin.flush()


def _answer(stdout: IO[bytes], request_id: int) -> dict[str, Any]:
    while True:
        line = stdout.readline()
        assert line, "the server closed stdout"
        message = json.loads(line)
        if message.get("id") == request_id:
            return message  # type: ignore[no-any-return]


def _lsp_send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    stdin.flush()


def _stop(process: subprocess.Popen[bytes], signum: int) -> tuple[float, str]:
    started = time.monotonic()
    process.send_signal(signum)
    if signum == signal.SIGINT:
        time.sleep(0.05)
        process.send_signal(signum)  # an impatient second Ctrl-C
    process.wait(timeout=5)
    elapsed = time.monotonic() - started
    assert process.stderr is not None
    return elapsed, process.stderr.read().decode()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_mcp_server_stops_and_releases_the_session_lock(
    signum: int, store_url: str, project_dir: Path
) -> None:
    server = subprocess.Popen(
        [PYTHON, "-m", "infinite_context_brain.server", "mcp"],
        cwd=project_dir,
        env=cli_env(store_url, CLAUDE_PROJECT_DIR=str(project_dir)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        _send(server.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        _answer(server.stdout, 1)
        _send(server.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "checkpoint", "arguments": {"context": "Current task: stop cleanly"}}
        _send(server.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        assert not _answer(server.stdout, 2)["result"].get("isError")
        held = json.loads(run_cli(store_url, "--project", str(project_dir), "--json", "status").stdout)
        assert str(held["lock_holder"]).startswith("mcp:")

        elapsed, stderr = _stop(server, signum)
    finally:
        if server.poll() is None:
            server.kill()
    assert elapsed < 1.0 and server.returncode == 0, (elapsed, server.returncode, stderr)
    assert "Traceback" not in stderr and "Fatal Python error" not in stderr, stderr
    assert "mcp server stopped" in stderr
    after = json.loads(run_cli(store_url, "--project", str(project_dir), "--json", "status").stdout)
    assert after["lock_holder"] is None and after["version"] == 1


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_language_server_stops_cleanly(signum: int, store_url: str, project_dir: Path) -> None:
    server = subprocess.Popen(
        [PYTHON, "-m", "infinite_context_brain.server", "lsp", "--stdio"],
        cwd=project_dir,
        env=cli_env(store_url),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        params = {"processId": None, "rootUri": project_dir.as_uri(), "capabilities": {}}
        _lsp_send(server.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        server.stdout.readline()  # the first header line of the answer: the server is up
        elapsed, stderr = _stop(server, signum)
    finally:
        if server.poll() is None:
            server.kill()
    assert elapsed < 1.0 and server.returncode == 0, (elapsed, server.returncode, stderr)
    assert "Traceback" not in stderr and "Fatal Python error" not in stderr, stderr
