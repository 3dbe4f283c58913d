"""From a checkout to a Claude Code that starts our server from any terminal, as a new user does it:
`make run` ends with the command linked into ~/.local/bin (its `link` step, run here on this
venv); then, in a fresh login shell that never activated the venv, `infinite-context install
claude-code` (project scope: the bare command) and the real `claude mcp list` say Connected.
The home folder is a temp one holding what a new account's holds (the system's skeleton)."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO
from ..helpers.claude_session import claude_binary

pytestmark = pytest.mark.slow  # the real Claude Code CLI (node)

SKELETON = Path("/etc/skel")
#: what Debian's and Ubuntu's skeleton ~/.profile does for ~/.local/bin
DEFAULT_PROFILE = 'if [ -d "$HOME/.local/bin" ] ; then\n    PATH="$HOME/.local/bin:$PATH"\nfi\n'


def _new_account(home: Path) -> dict[str, str]:
    """A home folder as a new account gets it, and the environment a login gives (nothing of
    this test run's: no venv, no PATH of ours)."""
    home.mkdir()
    profile = SKELETON / ".profile"
    (home / ".profile").write_text(profile.read_text() if profile.is_file() else DEFAULT_PROFILE)
    user = pwd.getpwuid(os.getuid()).pw_name
    return {
        "HOME": str(home),
        "USER": user,
        "LOGNAME": user,
        "SHELL": "/bin/bash",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "TERM": "dumb",
        "LANG": "C.UTF-8",
    }


def test_after_make_run_a_new_terminal_starts_our_server_for_claude_code(tmp_path: Path) -> None:
    claude = claude_binary()
    login = _new_account(tmp_path / "home")
    venv = Path(sys.executable).parent.parent
    made = subprocess.run(
        ["make", "-s", "-C", str(REPO), "link", f"VENV={venv}"],
        env=login,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    assert "a new terminal finds infinite-context" in made.stdout, made.stdout
    link = tmp_path / "home" / ".local" / "bin" / "infinite-context"
    assert link.is_symlink() and Path(os.readlink(link)) == venv / "bin" / "infinite-context"

    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (tmp_path / "home" / ".claude").mkdir()
    (tmp_path / "home" / ".claude" / "settings.json").write_text('{"enableAllProjectMcpServers": true}')
    quiet = "DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1"
    script = (
        f"cd {project} && command -v python3 infinite-context"
        " && infinite-context --json install claude-code --hooks command"
        f" && {quiet} MCP_TIMEOUT=20000 {claude} mcp list < /dev/null"
    )
    done = subprocess.run(
        ["bash", "-l", "-c", script], env=login, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert str(venv) not in done.stdout.split("{", 1)[0]  # the shell's own python, the linked command
    report = json.loads(done.stdout[done.stdout.index("{") : done.stdout.rindex("}") + 1])
    assert report["problems"] == [], report["problems"]
    assert {c["name"]: c for c in report["checks"]}["claude code command"]["status"] == "ok"
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("infinite-context")), done.stdout)
    assert "✔ Connected" in line, line
