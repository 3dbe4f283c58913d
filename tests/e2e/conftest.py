"""The interactive Claude Code project the end-to-end tests drive: our hooks and MCP server
installed, on each hook transport."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..helpers.claude_session import ClaudeProject, claude_binary, interactive


@pytest.fixture(params=["mcp", "command"])
def interactive_project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ClaudeProject]:
    """A throwaway project with ``install claude-code --hooks <transport>``, ready for the real
    CLI in a pseudo-terminal (onboarding done, folder trusted, API key accepted)."""
    claude_binary()  # skips (or fails in CI) without the CLI
    project = ClaudeProject.create(tmp_path, hooks=request.param)
    hooks = json.loads((project.root / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["Stop"][0]["hooks"][0]["type"] == ("mcp_tool" if request.param == "mcp" else "command")
    interactive(project)
    yield project
    project.spool_settled()  # let its worker leave before the folder goes
