"""Does the command our Claude Code entries name start from anywhere?

Claude Code runs our MCP server and hooks with its own environment: the one of the terminal it
was started from, plus the ``env`` of its settings files. A bare ``infinite-context`` (what the
shared project scope writes) that resolves only through a virtual environment activated in the
installing shell fails from every other terminal ("Executable not found in $PATH"). So the
check is the one a new terminal would make: a fresh login shell of the user's, with nothing of
this process's environment but who the user is, and ``PATH`` as Claude Code's settings set it
when they do. ``install`` and ``doctor`` both use it.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .config_files import Scope, read_json, settings_file

#: ``PATH`` as login(1) sets it before the user's profile adds to it
LOGIN_PATH = "/usr/local/bin:/usr/bin:/bin"
_TIMEOUT_SECONDS = 10.0
#: the settings whose ``env`` wins, first
PATH_ORDER: tuple[Scope, ...] = ("local", "project", "user")


def login_shell() -> str:
    shell = os.environ.get("SHELL") or pwd.getpwuid(os.getuid()).pw_shell
    return shell if shell and os.access(shell, os.X_OK) else "/bin/sh"


def in_login_shell(command: str) -> str | None:
    """Where ``command`` resolves in a fresh login shell (None: nowhere)."""
    user = pwd.getpwuid(os.getuid()).pw_name
    shell = login_shell()
    env = {
        "HOME": os.environ.get("HOME") or str(Path.home()),
        "USER": user,
        "LOGNAME": user,
        "SHELL": shell,
        "PATH": LOGIN_PATH,
        "TERM": "dumb",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    try:
        done = subprocess.run(
            [shell, "-l", "-c", f"command -v -- {shlex.quote(command)}"],
            env=env,
            cwd=env["HOME"] if os.path.isdir(env["HOME"]) else "/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = next((line for line in reversed(done.stdout.splitlines()) if line.startswith("/")), None)
    return found if found and os.access(found, os.X_OK) else None


def settings_path(project: Path, claude_config_dir: Path | None) -> str | None:
    """The ``PATH`` Claude Code's settings give its commands (local > project > user), if any."""
    for scope in PATH_ORDER:
        try:
            env = read_json(settings_file(scope, project, claude_config_dir)).get("env")
        except Exception:  # a malformed file: Claude Code reports it itself
            continue
        if isinstance(env, dict) and isinstance(env.get("PATH"), str):
            return str(env["PATH"])
    return None


@dataclass
class Reach:
    """Where a command resolves: here, in a new terminal, and for Claude Code."""

    command: str
    here: str | None
    login: str | None
    #: the ``PATH`` Claude Code's settings set (None: it inherits the terminal's)
    claude_path: str | None = None
    claude: str | None = None

    @property
    def ok(self) -> bool:
        return self.claude is not None

    def problem(self) -> str | None:
        """Why Claude Code cannot start it (None: it can)."""
        if self.ok:
            return None
        if "/" in self.command:
            return f"`{self.command}` (named in Claude Code's config) is not an executable file"
        where = (
            "on the PATH Claude Code's settings set"
            if self.claude_path is not None
            else "on the PATH of a new terminal (a fresh login shell)"
        )
        here = f"; it resolves here only ({self.here}), through this shell's PATH" if self.here else ""
        return f"`{self.command}` is not {where}{here}: Claude Code started there cannot run it"


def reach(command: str, project: Path, claude_config_dir: Path | None = None) -> Reach:
    """Where ``command`` resolves for Claude Code run in ``project``."""
    if "/" in command:
        found = command if os.path.isfile(command) and os.access(command, os.X_OK) else None
        return Reach(command, found, found, None, found)
    here = shutil.which(command)
    login = in_login_shell(command)
    path = settings_path(project, claude_config_dir)
    claude = shutil.which(command, path=path) if path is not None else login
    return Reach(command, here, login, path, claude)
