"""``infinite-context install claude-code``: our entries written (``entries``), then the checks that
say whether Claude Code can use them (``checks``), as the CLI prints them and the editor's
Connect command shows them.

After writing, the install looks at what would stop it from working: the same hooks registered
in another scope too (Claude Code would run each twice), and a command Claude Code cannot start
from a new terminal (``reach``: the bare ``infinite-context`` of the shared project scope found
only through this shell's virtual environment). Each is a problem with its fix; the report ends
with ``doctor``'s Claude Code checks, the files changed and "restart Claude Code".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .checks import claude_code_checks, command_fix
from .config_files import Scope, read_json, settings_file, write_json
from .entries import (
    InstallReport,
    claude_code_version,
    hook_transport,
    install,
    our_command,
    wiring,
)
from .reach import reach

RESTART = (
    "Restart Claude Code (or run /mcp in it) to pick the change up; `infinite-context doctor` checks it."
)


def install_for_claude_code(
    project: Path,
    scope: Scope = "project",
    uninstall: bool = False,
    *,
    claude_config_dir: Path | None = None,
    hooks: str = "auto",
) -> InstallReport:
    """Install (or remove) our MCP server and hooks for ``project`` with the hook transport
    ``hooks`` (auto, mcp, command) resolved for the Claude Code on PATH; the report says which
    and why, what stands in the way, and ends with the checks. What the CLI and the editor call."""
    found = claude_code_version() if hooks == "auto" and not uninstall else None
    transport, why = hook_transport(hooks, found)
    report = install(project, scope, uninstall, claude_config_dir=claude_config_dir, hooks=transport)
    if uninstall:
        return report
    report.hooks = why
    folder = project.expanduser().resolve()
    report.problems += problems(folder, scope, claude_config_dir)
    report.checks = [c.model_dump() for c in claude_code_checks(folder, claude_config_dir)]
    if report.changes:
        report.restart = RESTART
    return report


def problems(project: Path, scope: Scope, claude_config_dir: Path | None) -> list[str]:
    """What stops the entries just written from working, each with its fix."""
    found = []
    twice = wiring(project, claude_config_dir).duplicated()
    if twice:
        others = sorted({s for scopes in twice.values() for s in scopes} - {scope})
        found.append(
            f"infinite-context's hooks are also registered in the {' and '.join(others)} scope: Claude Code "
            f"runs each once per scope ({', '.join(twice)}), so SessionStart would load the brain "
            f"{max(len(s) for s in twice.values())} times. Fix: "
            + " and ".join(f"`infinite-context install claude-code --scope {s} --uninstall`" for s in others)
        )
    command = our_command(scope)[0]
    reached = reach(command, project, claude_config_dir)
    problem = reached.problem()
    if problem is not None:
        found.append(f"{problem}. Fix: {command_fix(command)}")
    return found


def endless_warning(scope: Scope, url: str | None) -> str | None:
    """The warning for live endless mode written where teammates get it: the project's committed
    settings send every request of theirs to a proxy on their own machine."""
    if scope != "project" or not url:
        return None
    return (
        f"ANTHROPIC_BASE_URL={url} (a proxy on this machine) is now in .claude/settings.json, which is "
        "committed: a teammate without that proxy running sends every request to a closed port. "
        "Fix: `infinite-context install claude-code --endless --uninstall --scope project`, then "
        "`infinite-context install claude-code --endless` (the local scope, only you)"
    )


# The names live endless mode's installer (``proxy/wiring.py``) writes its ``env`` entry with.
_read_json = read_json
_settings_file = settings_file


def _write_json(path: Path, data: dict[str, Any], report: InstallReport, *, back_up: bool = True) -> None:
    report.wrote(path, write_json(path, data, back_up=back_up))


__all__ = [
    "InstallReport",
    "Scope",
    "_read_json",
    "_settings_file",
    "_write_json",
    "endless_warning",
    "install",
    "install_for_claude_code",
]
