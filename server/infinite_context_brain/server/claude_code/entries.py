"""Our entries in Claude Code's configuration: the MCP server and one hook per event (``events``).

Installing merges with what is there (other servers and hooks stay) and is idempotent (a second
run writes nothing). Uninstalling removes our entries and everything the install created: the
backups, a file or ``mcpServers`` object left empty, an empty ``.claude`` folder.

The command: project scope is shared with the team (the files are committed), so it names the
``infinite-context`` console script as found on each machine's PATH (``reach`` checks that it is
found from a new terminal); local and user scopes pin this installation's absolute script. The
MCP entry has ``alwaysLoad``: Claude Code waits for the server before the first request and never
defers our tools behind tool search. Hooks use the exec form (``command`` + ``args``, no shell in
between); PostToolUse and Stop may instead be ``mcp_tool`` calls to our server (``hook_tool``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from infinite_context_brain.core.errors import InvalidInput

from .config_files import (
    SCOPES,
    Scope,
    check_writable,
    config_json,
    mcp_file,
    read_json,
    remove_backup,
    settings_file,
    write_json,
)
from .events import EVENTS, Event
from .hook_tool import HOOK_TOOL, MIN_CLAUDE_CODE, hook_input

#: how PostToolUse and Stop reach us: ``mcp_tool`` calls to our running MCP server (no process
#: per tool call; Claude Code 2.1.118+) or a command each time
HookTransport = Literal["mcp", "command"]
SERVER_NAME = "infinite-context"
#: the console script teammates install; project scope names it instead of a path
SCRIPT = "infinite-context"


@dataclass
class InstallReport:
    """What ``install`` did, and what stands in the way of it working (the CLI prints it, the
    editor's Connect command shows it)."""

    scope: str
    changes: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    #: every file written or removed
    files: list[str] = field(default_factory=list)
    #: which hook transport was chosen, and why
    hooks: str = ""
    #: what will not work as installed, each with its fix
    problems: list[str] = field(default_factory=list)
    #: the checks ``doctor`` makes of the Claude Code wiring, as {name, status, detail, fix}
    checks: list[dict[str, Any]] = field(default_factory=list)
    #: what to do for Claude Code to pick the change up ("" when nothing changed)
    restart: str = ""

    def wrote(self, path: Path, backup: str | None = None) -> None:
        if str(path) not in self.files:
            self.files.append(str(path))
        if backup:
            self.backups.append(backup)


@dataclass
class WiringStatus:
    mcp_scopes: list[str]
    hook_events: dict[str, list[str]]  # event -> scopes where our hook is configured
    command: list[str]
    #: the executables our entries start, as written (a bare name is looked up on PATH)
    executables: list[str] = field(default_factory=list)
    #: events whose hook is an ``mcp_tool`` call to our server
    mcp_hook_events: list[str] = field(default_factory=list)

    def duplicated(self) -> dict[str, list[str]]:
        """Events whose hook is registered in more than one scope (Claude Code runs each)."""
        return {event: scopes for event, scopes in self.hook_events.items() if len(scopes) > 1}


def our_command(scope: Scope = "local") -> list[str]:
    """The command that runs ``infinite-context`` for ``scope``: the bare console script for the
    shared project scope, this installation's absolute script (or interpreter) otherwise."""
    if scope == "project":
        return [SCRIPT]
    script = installed_script()
    return [script] if script else [sys.executable, "-m", "infinite_context_brain.server"]


def installed_script() -> str | None:
    """This installation's console script, as an absolute path (None: there is none)."""
    script = Path(sys.executable).parent / SCRIPT
    return str(script) if script.is_file() and os.access(script, os.X_OK) else None


def _is_ours(hook: Any, event: Event) -> bool:
    """Our hook entry: an ``mcp_tool`` call to our server's hook tool, or a command in the exec
    form (``command`` + ``args``) or the older shell string."""
    if isinstance(hook, dict) and hook.get("type") == "mcp_tool":
        given = hook.get("input")
        name = given.get("event") if isinstance(given, dict) else None
        return hook.get("server") == SERVER_NAME and hook.get("tool") == HOOK_TOOL and name == event.name
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    args = hook.get("args")
    words = " ".join(
        [hook["command"], *(a for a in args if isinstance(a, str))]
        if isinstance(args, list)
        else [hook["command"]]
    )
    return (
        "infinite-context" in words or "infinite_context_brain" in words
    ) and f"hook {event.command}" in words


def _mcp_container(scope: Scope, project: Path, data: dict[str, Any], create: bool) -> dict[str, Any] | None:
    if scope == "local":
        projects = data.setdefault("projects", {}) if create else data.get("projects", {})
        if not isinstance(projects, dict):
            return None
        entry = projects.setdefault(str(project), {}) if create else projects.get(str(project))
        if not isinstance(entry, dict):
            return None
        servers = entry.setdefault("mcpServers", {}) if create else entry.get("mcpServers")
    else:
        servers = data.setdefault("mcpServers", {}) if create else data.get("mcpServers")
    return servers if isinstance(servers, dict) else None


def _prune_empty_mcp(scope: Scope, project: Path, data: dict[str, Any]) -> None:
    """Remove the ``mcpServers`` object our removal left empty (and a local project entry that
    held nothing else)."""
    if scope == "local":
        projects = data.get("projects")
        if not isinstance(projects, dict):
            return
        entry = projects.get(str(project))
        if isinstance(entry, dict) and entry.get("mcpServers") == {}:
            del entry["mcpServers"]
            if not entry:
                del projects[str(project)]
            if not projects:
                del data["projects"]
    elif data.get("mcpServers") == {}:
        del data["mcpServers"]


def _update_mcp(
    scope: Scope, project: Path, data: dict[str, Any], command: list[str], uninstall: bool, where: Path
) -> str | None:
    """Add, update or remove our server entry in ``data``; the change made, if any."""
    if uninstall:
        servers = _mcp_container(scope, project, data, create=False)
        if servers is None or SERVER_NAME not in servers:
            return None
        del servers[SERVER_NAME]
        _prune_empty_mcp(scope, project, data)
        return f"removed MCP server '{SERVER_NAME}' from {where}"
    wanted = {
        "type": "stdio",
        "command": command[0],
        "args": [*command[1:], "mcp"],
        "env": {},
        "alwaysLoad": True,
    }
    servers = _mcp_container(scope, project, data, create=True)
    if servers is None:
        raise InvalidInput(
            str(where), '"mcpServers" is not an object', fix="fix the file, then run install again"
        )
    if servers.get(SERVER_NAME) == wanted:
        return None
    verb = "updated" if SERVER_NAME in servers else "added"
    servers[SERVER_NAME] = wanted
    return f"{verb} MCP server '{SERVER_NAME}' in {where}"


def _hook_entry(event: Event, command: list[str], transport: HookTransport) -> dict[str, Any]:
    if transport == "mcp" and event.mcp_fields:
        return {
            "type": "mcp_tool",
            "server": SERVER_NAME,
            "tool": HOOK_TOOL,
            "input": hook_input(event.name),
            "timeout": event.timeout,
        }
    return {
        "type": "command",
        "command": command[0],
        "args": [*command[1:], "hook", event.command],
        "timeout": event.timeout,
    }


def _ours_in(groups: Any, event: Event) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(group, hook) for each of our hooks among an event's groups."""
    return [
        (g, h)
        for g in (groups if isinstance(groups, list) else [])
        if isinstance(g, dict) and isinstance(g.get("hooks"), list)
        for h in g["hooks"]
        if _is_ours(h, event)
    ]


def _update_hooks(
    data: dict[str, Any], command: list[str], uninstall: bool, where: Path, transport: HookTransport
) -> list[str]:
    """Add, update or remove our hooks in ``data``; the changes made."""
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidInput(str(where), '"hooks" is not an object', fix="fix the file, then run install again")
    hooks = hooks if isinstance(hooks, dict) else {}
    changes = []
    for event in EVENTS:
        groups = hooks.get(event.name)
        groups = groups if isinstance(groups, list) else []
        present = _ours_in(groups, event)
        wanted = _hook_entry(event, command, transport)
        if uninstall and not present:
            continue
        if not uninstall and len(present) == 1 and present[0][1] == wanted:
            continue
        for group, hook in present:
            group["hooks"].remove(hook)
        groups = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [])]
        if uninstall:
            changes.append(f"removed hook {event.name} from {where}")
        else:
            groups.append({"hooks": [wanted]})
            changes.append(f"{'updated' if present else 'added'} hook {event.name} in {where}")
        if groups:
            hooks[event.name] = groups
        else:
            hooks.pop(event.name, None)
    if changes:
        if hooks:
            data["hooks"] = hooks
        else:
            data.pop("hooks", None)
    return changes


def install(
    project: Path,
    scope: Scope = "project",
    uninstall: bool = False,
    *,
    claude_config_dir: Path | None = None,
    hooks: HookTransport = "command",
) -> InstallReport:
    """Add (or remove) our MCP server and hooks; ``claude_config_dir`` is
    ``Settings.claude_config_dir`` (None: Claude Code's default, ``~/.claude``); ``hooks``: how
    PostToolUse and Stop reach us (``hook_transport`` picks it for the Claude Code installed)."""
    project = project.expanduser().resolve()
    if scope not in SCOPES:
        raise InvalidInput("scope", f"{scope!r} is not a scope", fix="use project, local or user")
    if not project.is_dir():
        raise InvalidInput("project", f"{project} is not a folder", fix="pass an existing project folder")
    report = InstallReport(scope=scope)
    command = our_command(scope)
    # Read both files first: a malformed one stops the install before anything is written.
    mcp_path = mcp_file(scope, project, claude_config_dir)
    settings_path = settings_file(scope, project, claude_config_dir)
    mcp_data, settings_data = read_json(mcp_path), read_json(settings_path)
    mcp_change = _update_mcp(scope, project, mcp_data, command, uninstall, mcp_path)
    hook_changes = _update_hooks(settings_data, command, uninstall, settings_path, hooks)
    if mcp_change:
        check_writable(mcp_path)  # both refused before either is written
    if hook_changes:
        check_writable(settings_path)
    if mcp_change:
        save(mcp_path, mcp_data, report, uninstall=uninstall, keep=mcp_path == config_json(claude_config_dir))
        report.changes.append(mcp_change)
    if hook_changes:
        save(settings_path, settings_data, report, uninstall=uninstall)
        report.changes += hook_changes
    if uninstall:
        for path in (mcp_path, settings_path):
            removed = remove_backup(path)
            if removed:
                report.changes.append(f"removed the install backup {removed}")
                report.files.append(removed)
        _remove_if_empty(project / ".claude", report)
    return report


def save(
    path: Path, data: dict[str, Any], report: InstallReport, *, uninstall: bool, keep: bool = False
) -> None:
    """Write ``data``; a file left empty is removed unless ``keep`` (Claude Code's own config).
    Uninstalling makes no backup: the file holds the user's own entries again."""
    if data or keep:
        report.wrote(path, write_json(path, data, back_up=not uninstall))
        return
    if path.exists():  # nothing of the user's is left (we created the file): remove it
        check_writable(path)
        path.unlink()
        report.changes.append(f"removed {path} (it held only our entries)")
        report.wrote(path)


def _remove_if_empty(folder: Path, report: InstallReport) -> None:
    try:
        folder.rmdir()  # only when empty
    except OSError:
        return
    report.changes.append(f"removed the empty folder {folder}")
    report.wrote(folder)


def wiring(project: Path, claude_config_dir: Path | None = None) -> WiringStatus:
    """Where our MCP server and hooks are configured for ``project`` (every scope)."""
    project = project.expanduser().resolve()
    scopes: list[str] = []
    events: dict[str, list[str]] = {event.name: [] for event in EVENTS}
    executables: list[str] = []
    mcp_events: list[str] = []
    for scope in SCOPES:
        try:
            mcp = read_json(mcp_file(scope, project, claude_config_dir))
            settings = read_json(settings_file(scope, project, claude_config_dir))
        except InvalidInput:
            continue
        servers = _mcp_container(scope, project, mcp, create=False)
        if servers and SERVER_NAME in servers:
            scopes.append(scope)
            entry = servers[SERVER_NAME]
            if isinstance(entry, dict) and isinstance(entry.get("command"), str):
                executables.append(entry["command"])
        hooks = settings.get("hooks")
        for event in EVENTS:
            ours = [
                h for _g, h in _ours_in(hooks.get(event.name) if isinstance(hooks, dict) else None, event)
            ]
            if ours:
                events[event.name].append(scope)
                executables += [h["command"] for h in ours if isinstance(h.get("args"), list)]
                if any(h.get("type") == "mcp_tool" for h in ours):
                    mcp_events.append(event.name)
    return WiringStatus(
        mcp_scopes=scopes,
        hook_events=events,
        command=our_command(),
        executables=list(dict.fromkeys(executables)),
        mcp_hook_events=list(dict.fromkeys(mcp_events)),
    )


def claude_code_version(claude: str | None = None, timeout: float = 15.0) -> tuple[int, ...] | None:
    """The version of the Claude Code CLI (``claude`` on PATH unless given), None when there is
    none or it does not say."""
    found = claude or shutil.which("claude")
    if not found:
        return None
    try:
        done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"\s*(\d+)\.(\d+)\.(\d+)", done.stdout)
    return tuple(int(part) for part in match.groups()) if match else None


def hook_transport(chosen: str, version: tuple[int, ...] | None) -> tuple[HookTransport, str]:
    """The transport for ``--hooks chosen`` (auto, mcp, command) given the installed Claude
    Code's ``version``, and why (for the install report)."""
    need = ".".join(map(str, MIN_CLAUDE_CODE))
    if chosen == "mcp":
        return "mcp", "mcp_tool hooks (asked for)"
    if chosen == "command":
        return "command", "command hooks (asked for)"
    if chosen != "auto":
        raise InvalidInput("--hooks", f"{chosen!r} is not a hook transport", fix="use auto, mcp or command")
    if version is None:
        return "command", f"command hooks (no Claude Code found on PATH to check for {need}+)"
    have = ".".join(map(str, version))
    if version >= MIN_CLAUDE_CODE:
        return "mcp", f"mcp_tool hooks for PostToolUse and Stop (Claude Code {have})"
    return "command", f"command hooks (Claude Code {have} predates mcp_tool hooks, {need})"


def project_server_approval(project: Path, claude_config_dir: Path | None = None) -> str:
    """Whether Claude Code will start the project-scope (``.mcp.json``) server here: approved,
    rejected or pending (Claude Code asks on its next interactive start; until then neither our
    tools nor the ``mcp_tool`` hooks run; command hooks do). As Claude Code 2.1.x decides it:
    declined in this project's entry of ``<config>.json`` (``disabledMcpjsonServers``) ->
    rejected; approved by the user settings (``enableAllProjectMcpServers``,
    ``enabledMcpjsonServers``), or, once the folder is trusted (``hasTrustDialogAccepted``, set
    when you answer Claude Code's prompt), by that entry or the project / local settings; else
    pending."""
    project = project.expanduser().resolve()

    def approves(data: Any) -> bool:
        if not isinstance(data, dict):
            return False
        enabled = data.get("enabledMcpjsonServers")
        return data.get("enableAllProjectMcpServers") is True or (
            isinstance(enabled, list) and SERVER_NAME in enabled
        )

    def read(path: Path) -> dict[str, Any]:
        try:
            return read_json(path)
        except InvalidInput:
            return {}

    projects = read(config_json(claude_config_dir)).get("projects")
    entry = projects.get(str(project)) if isinstance(projects, dict) else None
    entry = entry if isinstance(entry, dict) else {}
    declined = entry.get("disabledMcpjsonServers")
    if isinstance(declined, list) and SERVER_NAME in declined:
        return "rejected"
    if approves(read(settings_file("user", project, claude_config_dir))):
        return "approved"
    if entry.get("hasTrustDialogAccepted") is True and (
        approves(entry)
        or approves(read(settings_file("project", project, claude_config_dir)))
        or approves(read(settings_file("local", project, claude_config_dir)))
    ):
        return "approved"
    return "pending"
