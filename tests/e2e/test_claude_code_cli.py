"""The real Claude Code CLI (installed by `make test` / .ci/run from tools/package.json) as an
MCP client: `claude mcp list` must show our server connected."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..conftest import PYTHON
from ..helpers.claude_session import claude_binary, claude_env, install_claude_code

pytestmark = pytest.mark.slow  # the real Claude Code CLI (node) starts our server


def mcp_list_line(claude: str, project_dir: Path, env: dict[str, str]) -> str:
    """Our server's line of `claude mcp list` (the command always exits 0)."""
    out = subprocess.run(
        [claude, "mcp", "list"],
        cwd=project_dir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("infinite-context")), "")
    return line or out.stdout + out.stderr


def doctor_checks(project_dir: Path, env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """`infinite-context --json doctor` in ``project_dir``: its checks by name."""
    doctor = subprocess.run(
        [PYTHON, "-m", "infinite_context_brain.server", "--json", "doctor"],
        cwd=project_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}


@pytest.mark.claude_cli
def test_claude_mcp_list_shows_our_server_connected(project_dir: Path, tmp_path: Path) -> None:
    claude = claude_binary()
    (project_dir / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "infinite-context": {
                        "command": PYTHON,
                        "args": ["-m", "infinite_context_brain.server", "mcp"],
                        "env": {"INFINITE_CONTEXT_STORE_URL": f"sqlite:///{tmp_path / 'brain.db'}"},
                    }
                }
            }
        )
    )
    line = mcp_list_line(claude, project_dir, claude_env(tmp_path))
    assert "✔ Connected" in line, line


@pytest.mark.claude_cli
def test_install_claude_code_then_the_cli_shows_our_server_connected(
    project_dir: Path, tmp_path: Path
) -> None:
    claude = claude_binary()
    env = claude_env(tmp_path)
    env["INFINITE_CONTEXT_STORE_URL"] = f"sqlite:///{tmp_path / 'brain.db'}"
    # project scope names the console script; a teammate has it on PATH (pipx, an active venv)
    env["PATH"] = f"{Path(PYTHON).parent}{os.pathsep}{env['PATH']}"
    install_claude_code(project_dir, env)
    entry = json.loads((project_dir / ".mcp.json").read_text())["mcpServers"]["infinite-context"]
    assert entry["command"] == "infinite-context" and entry["alwaysLoad"] is True
    line = mcp_list_line(claude, project_dir, env)
    assert "✔ Connected" in line, line
    checks = doctor_checks(project_dir, env)
    assert checks["claude code mcp"]["status"] == "ok"
    assert checks["claude code hooks"]["status"] == "ok"
    assert checks["claude code approval"]["status"] == "ok"  # enableAllProjectMcpServers


@pytest.mark.claude_cli
def test_doctor_reads_approval_as_claude_code_does(project_dir: Path, tmp_path: Path) -> None:
    """Pending, approved (local settings) and declined (Claude Code's config) as `claude mcp list`
    shows them."""
    claude = claude_binary()
    env = claude_env(tmp_path)
    (tmp_path / "claude-config" / "settings.json").write_text("{}")  # no blanket approval
    env["INFINITE_CONTEXT_STORE_URL"] = f"sqlite:///{tmp_path / 'brain.db'}"
    env["PATH"] = f"{Path(PYTHON).parent}{os.pathsep}{env['PATH']}"
    install_claude_code(project_dir, env, hooks="command")

    def both() -> tuple[str, str]:
        status = doctor_checks(project_dir, env)["claude code approval"]["status"]
        return status, mcp_list_line(claude, project_dir, env)

    status, line = both()
    assert status == "warn" and "Pending approval" in line, line
    # local settings alone do not approve an untrusted folder
    local = project_dir / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"enabledMcpjsonServers": ["infinite-context"]}))
    status, line = both()
    assert status == "warn" and "Pending approval" in line, line
    config = tmp_path / "claude-config" / ".claude.json"

    def project_entry(**fields: object) -> None:
        data = json.loads(config.read_text()) if config.exists() else {}
        data.setdefault("projects", {})[str(project_dir.resolve())] = fields
        config.write_text(json.dumps(data))

    project_entry(hasTrustDialogAccepted=True)  # answered Claude Code's prompt: now they count
    status, line = both()
    assert status == "ok" and "Connected" in line, line
    local.unlink()
    project_entry(hasTrustDialogAccepted=True, disabledMcpjsonServers=["infinite-context"])
    status, line = both()
    assert status == "fail" and "Pending" not in line and "Connected" not in line, line
