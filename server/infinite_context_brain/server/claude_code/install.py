"""Wiring infinite-context into Claude Code: the MCP server entry and the hooks.

Where Claude Code reads them (verified with the CLI, 2.1.x):

=========  ==========================================  ==========================================
scope      MCP server                                  hooks
=========  ==========================================  ==========================================
project    ``<project>/.mcp.json`` ``mcpServers``      ``<project>/.claude/settings.json``
local      ``<config>.json`` ``projects[<abs>]``       ``<project>/.claude/settings.local.json``
user       ``<config>.json`` ``mcpServers``            ``<config dir>/settings.json``
=========  ==========================================  ==========================================

``<config>.json`` is ``$CLAUDE_CONFIG_DIR/.claude.json`` when that variable is set, else
``~/.claude.json``; ``<config dir>`` is ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``. The variable
reaches here as ``Settings.claude_config_dir`` (callers pass it; nothing here reads the
environment).

Installing merges with what is there (other servers and hooks stay), is idempotent (a second run
writes nothing), backs a file up before its first change (``<file>.infinite-context.bak``), and
writes files atomically. Uninstalling removes only our entries, and the backups it made in the
project (the files hold the user's own entries again). It never writes through a
symlink (a config file or backup that is a link is refused, naming it) and never replaces a
read-only file (refused: make it writable first).

The command: project scope is shared with the team (the files are committed), so it names the
``infinite-context`` console script as found on each machine's PATH (``doctor`` says how to
install it when it is missing); local and user scopes pin this installation's absolute script.
The MCP entry has ``alwaysLoad``: Claude Code waits for the server before the first request and
never defers our tools behind tool search. Hooks use the exec form (``command`` + ``args``, no
shell in between).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from infinite_context_brain.core.errors import InvalidInput

from .hook_tool import FIELDS as MCP_HOOK_FIELDS
from .hook_tool import HOOK_TOOL, MIN_CLAUDE_CODE, hook_input
from .spool import EVENTS

Scope = Literal["project", "local", "user"]
#: how PostToolUse and Stop reach us: ``mcp_tool`` calls to our running MCP server (no process
#: per tool call; Claude Code 2.1.118+) or a command each time
HookTransport = Literal["mcp", "command"]
SERVER_NAME = "infinite-context"
#: the console script teammates install; project scope names it instead of a path
SCRIPT = "infinite-context"
#: extra fields of each hook entry (the events and their sub-commands are ``spool.EVENTS``).
#: PostToolUse, Stop and SessionEnd only queue their payload (``spool``) and return in
#: milliseconds, so they run synchronously: Claude Code cancels async hooks still running when
#: a ``-p`` run ends, and then skips SessionEnd.
_HOOK_FIELDS: dict[str, dict[str, Any]] = {
    "SessionStart": {"timeout": 15},
    "SessionEnd": {"timeout": 10},
    "PreCompact": {"timeout": 30},
    "PostToolUse": {"timeout": 10},
    "Stop": {"timeout": 10},
}
#: Claude Code event -> our hook sub-command, and extra fields of the hook entry
HOOK_EVENTS: dict[str, tuple[str, dict[str, Any]]] = {
    event: (subcommand, _HOOK_FIELDS.get(event, {"timeout": 15})) for event, subcommand in EVENTS.items()
}
BACKUP_SUFFIX = ".infinite-context.bak"


@dataclass
class InstallReport:
    scope: str
    changes: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    #: which hook transport was chosen, and why
    hooks: str = ""


@dataclass
class WiringStatus:
    mcp_scopes: list[str]
    hook_events: dict[str, list[str]]  # event -> scopes where our hook is configured
    command: list[str]
    #: the executables our entries start, as written (a bare name is looked up on PATH)
    executables: list[str] = field(default_factory=list)
    #: events whose hook is an ``mcp_tool`` call to our server
    mcp_hook_events: list[str] = field(default_factory=list)


def config_json(claude_config_dir: Path | None) -> Path:
    """Claude Code's main config file, given ``CLAUDE_CONFIG_DIR`` (None: not set)."""
    if claude_config_dir is not None:
        return claude_config_dir.expanduser() / ".claude.json"
    return Path.home() / ".claude.json"


def user_dir(claude_config_dir: Path | None) -> Path:
    """Claude Code's data folder: ``CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    return claude_config_dir.expanduser() if claude_config_dir is not None else Path.home() / ".claude"


def our_command(scope: Scope = "local") -> list[str]:
    """The command that runs ``infinite-context`` for ``scope``: the bare console script for the
    shared project scope, this installation's absolute script (or interpreter) otherwise."""
    if scope == "project":
        return [SCRIPT]
    script = Path(sys.executable).parent / SCRIPT
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "infinite_context_brain.server"]


def _settings_file(scope: Scope, project: Path, config_dir: Path | None) -> Path:
    if scope == "user":
        return user_dir(config_dir) / "settings.json"
    name = "settings.json" if scope == "project" else "settings.local.json"
    return project / ".claude" / name


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            str(path), f"is not valid JSON ({exc})", fix="fix or move the file, then run install again"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(str(path), "does not hold a JSON object", fix="fix or move the file")
    return data


def check_writable(path: Path) -> None:
    """Refuse to write ``path`` (or its backup) through a symlink, or to replace a read-only file."""
    for target in (path, path.with_name(path.name + BACKUP_SUFFIX)):
        if target.is_symlink():
            raise InvalidInput(
                str(target),
                f"is a symlink (to {os.readlink(target)}); infinite-context does not write through links",
                fix=f"replace {target} with a regular file (or remove it), then run install again",
            )
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise InvalidInput(str(path), "is not a regular file", fix="move it away, then run install again")
    if not mode & stat.S_IWUSR:
        raise InvalidInput(
            str(path),
            "is read-only; infinite-context does not replace it",
            fix=f"make it writable (chmod u+w {path}) or add the entries by hand, then run install again",
        )


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` (never through a symlink) holding ``data``; an old regular file is replaced."""
    if path.exists() and not path.is_symlink():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)


def _write_json(path: Path, data: dict[str, Any], report: InstallReport, *, back_up: bool = True) -> None:
    """Write ``data`` atomically; before the first change to a file that was there, keep its
    original as ``<file>.infinite-context.bak`` (a later change keeps that first backup)."""
    check_writable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.lstat().st_mode & 0o777 if path.exists() else 0o644
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if back_up and path.exists() and not backup.exists():
        _write_new(backup, path.read_bytes(), mode)
        report.backups.append(str(backup))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    _write_new(tmp, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), mode)
    tmp.replace(path)  # rename replaces the name itself, never a link's target
    report.files.append(str(path))


def _is_ours(hook: Any, subcommand: str) -> bool:
    """Our hook entry: an ``mcp_tool`` call to our server's hook tool, or a command in the exec
    form (``command`` + ``args``) or the older shell string."""
    if isinstance(hook, dict) and hook.get("type") == "mcp_tool":
        given = hook.get("input")
        event = given.get("event") if isinstance(given, dict) else None
        return (
            hook.get("server") == SERVER_NAME
            and hook.get("tool") == HOOK_TOOL
            and EVENTS.get(str(event)) == subcommand
        )
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
    ) and f"hook {subcommand}" in words


def _mcp_container(scope: Scope, project: Path, data: dict[str, Any], create: bool) -> dict[str, Any] | None:
    if scope == "local":
        projects = data.setdefault("projects", {}) if create else data.get("projects", {})
        entry = projects.setdefault(str(project), {}) if create else projects.get(str(project))
        if not isinstance(entry, dict):
            return None
        servers = entry.setdefault("mcpServers", {}) if create else entry.get("mcpServers")
    else:
        servers = data.setdefault("mcpServers", {}) if create else data.get("mcpServers")
    return servers if isinstance(servers, dict) else None


def _mcp_file(scope: Scope, project: Path, config_dir: Path | None) -> Path:
    return project / ".mcp.json" if scope == "project" else config_json(config_dir)


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
    if scope not in ("project", "local", "user"):
        raise InvalidInput("scope", f"{scope!r} is not a scope", fix="use project, local or user")
    if not project.is_dir():
        raise InvalidInput("project", f"{project} is not a folder", fix="pass an existing project folder")
    report = InstallReport(scope=scope)
    command = our_command(scope)
    # Read both files first: a malformed one stops the install before anything is written.
    config_dir = claude_config_dir
    mcp_path = _mcp_file(scope, project, config_dir)
    settings_path = _settings_file(scope, project, config_dir)
    mcp_data, settings_data = _read_json(mcp_path), _read_json(settings_path)

    changed_mcp = _update_mcp(scope, project, mcp_data, command, uninstall, report, mcp_path)
    changed_hooks = _update_hooks(settings_data, command, uninstall, report, settings_path, hooks)
    for path, changed in ((mcp_path, changed_mcp), (settings_path, changed_hooks)):
        if changed:
            check_writable(path)  # both refused before either is written
    if changed_mcp:
        _save(mcp_path, mcp_data, report, keep=mcp_path == config_json(config_dir), uninstall=uninstall)
    if changed_hooks:
        _save(settings_path, settings_data, report, uninstall=uninstall)
    return report


def _save(
    path: Path, data: dict[str, Any], report: InstallReport, keep: bool = False, uninstall: bool = False
) -> None:
    """Write ``data``; a file left empty is removed unless ``keep`` (Claude Code's own config).
    Uninstalling leaves no backup behind: the file holds the user's own entries again (and
    Claude Code's config file keeps its backup, which is outside the project)."""
    if data or keep:
        _write_json(path, data, report, back_up=not uninstall)
    else:  # nothing of the user's is left (we created the file): remove it
        check_writable(path)
        path.unlink()
        report.changes.append(f"removed {path} (it held only our entries)")
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if uninstall and not keep and backup.is_file() and not backup.is_symlink():
        backup.unlink()
        report.changes.append(f"removed the install backup {backup}")


def _update_mcp(
    scope: Scope,
    project: Path,
    data: dict[str, Any],
    command: list[str],
    uninstall: bool,
    report: InstallReport,
    where: Path,
) -> bool:
    if uninstall:
        servers = _mcp_container(scope, project, data, create=False)
        if servers is None or SERVER_NAME not in servers:
            return False
        del servers[SERVER_NAME]
        if not servers:
            _prune_empty_mcp(scope, project, data)
        report.changes.append(f"removed MCP server '{SERVER_NAME}' from {where}")
        return True
    wanted = {
        "type": "stdio",
        "command": command[0],
        "args": [*command[1:], "mcp"],
        "env": {},
        "alwaysLoad": True,
    }
    servers = _mcp_container(scope, project, data, create=True)
    assert servers is not None
    if servers.get(SERVER_NAME) == wanted:
        return False
    verb = "updated" if SERVER_NAME in servers else "added"
    servers[SERVER_NAME] = wanted
    report.changes.append(f"{verb} MCP server '{SERVER_NAME}' in {where}")
    return True


def _prune_empty_mcp(scope: Scope, project: Path, data: dict[str, Any]) -> None:
    if scope == "local":
        entry = data.get("projects", {}).get(str(project), {})
        if entry.get("mcpServers") == {}:
            del entry["mcpServers"]
    elif data.get("mcpServers") == {} and scope == "project":
        del data["mcpServers"]


def _hook_entry(event: str, subcommand: str, command: list[str], transport: HookTransport) -> dict[str, Any]:
    extra = HOOK_EVENTS[event][1]
    if transport == "mcp" and event in MCP_HOOK_FIELDS:
        return {
            "type": "mcp_tool",
            "server": SERVER_NAME,
            "tool": HOOK_TOOL,
            "input": hook_input(event),
            **extra,
        }
    return {"type": "command", "command": command[0], "args": [*command[1:], "hook", subcommand], **extra}


def _update_hooks(
    data: dict[str, Any],
    command: list[str],
    uninstall: bool,
    report: InstallReport,
    where: Path,
    transport: HookTransport = "command",
) -> bool:
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidInput(str(where), '"hooks" is not an object', fix="fix the file, then run install again")
    hooks = hooks if isinstance(hooks, dict) else {}
    changed = False
    for event, (subcommand, _extra) in HOOK_EVENTS.items():
        groups = hooks.get(event)
        groups = groups if isinstance(groups, list) else []
        wanted = _hook_entry(event, subcommand, command, transport)
        present = [
            (g, h)
            for g in groups
            if isinstance(g, dict)
            for h in g.get("hooks") or []
            if _is_ours(h, subcommand)
        ]
        if uninstall:
            if not present:
                continue
            for group, hook in present:
                group["hooks"].remove(hook)
            groups = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [])]
            report.changes.append(f"removed hook {event} from {where}")
        else:
            if len(present) == 1 and present[0][1] == wanted:
                continue
            for group, hook in present:
                group["hooks"].remove(hook)
            groups = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [])]
            groups.append({"hooks": [wanted]})
            report.changes.append(f"{'updated' if present else 'added'} hook {event} in {where}")
        changed = True
        if groups:
            hooks[event] = groups
        else:
            hooks.pop(event, None)
    if changed:
        if hooks:
            data["hooks"] = hooks
        else:
            data.pop("hooks", None)
    return changed


def wiring(project: Path, claude_config_dir: Path | None = None) -> WiringStatus:
    """Where our MCP server and hooks are configured for ``project`` (for ``doctor``);
    ``claude_config_dir`` as in ``install``."""
    project = project.expanduser().resolve()
    scopes: list[str] = []
    events: dict[str, list[str]] = {event: [] for event in HOOK_EVENTS}
    executables: list[str] = []
    mcp_events: list[str] = []
    all_scopes: tuple[Scope, ...] = ("project", "local", "user")
    for scope in all_scopes:
        try:
            mcp = _read_json(_mcp_file(scope, project, claude_config_dir))
            settings = _read_json(_settings_file(scope, project, claude_config_dir))
        except InvalidInput:
            continue
        servers = _mcp_container(scope, project, mcp, create=False)
        if servers and SERVER_NAME in servers:
            scopes.append(scope)
            entry = servers[SERVER_NAME]
            if isinstance(entry, dict) and isinstance(entry.get("command"), str):
                executables.append(entry["command"])
        hooks = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else {}
        for event, (subcommand, _extra) in HOOK_EVENTS.items():
            groups = hooks.get(event) if isinstance(hooks, dict) else None
            ours = [
                h
                for g in (groups if isinstance(groups, list) else [])
                if isinstance(g, dict)
                for h in g.get("hooks") or []
                if _is_ours(h, subcommand)
            ]
            if ours:
                events[event].append(scope)
                executables += [h["command"] for h in ours if isinstance(h.get("args"), list)]
                if any(h.get("type") == "mcp_tool" for h in ours):
                    mcp_events.append(event)
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
    import re
    import shutil
    import subprocess

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
    tools nor the ``mcp_tool`` hooks run). As Claude Code 2.1.x decides it: declined in this
    project's entry of ``<config>.json`` (``disabledMcpjsonServers``) -> rejected; approved by the
    user settings (``enableAllProjectMcpServers``, ``enabledMcpjsonServers``), or, once the folder
    is trusted (``hasTrustDialogAccepted``, set when you answer Claude Code's prompt), by that
    entry or the project / local settings; else pending."""
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
            return _read_json(path)
        except InvalidInput:
            return {}

    entry = read(config_json(claude_config_dir)).get("projects", {}).get(str(project))
    entry = entry if isinstance(entry, dict) else {}
    declined = entry.get("disabledMcpjsonServers")
    if isinstance(declined, list) and SERVER_NAME in declined:
        return "rejected"
    if approves(read(_settings_file("user", project, claude_config_dir))):
        return "approved"
    if entry.get("hasTrustDialogAccepted") is True and (
        approves(entry)
        or approves(read(_settings_file("project", project, claude_config_dir)))
        or approves(read(_settings_file("local", project, claude_config_dir)))
    ):
        return "approved"
    return "pending"


def install_for_claude_code(
    project: Path,
    scope: Scope = "project",
    uninstall: bool = False,
    *,
    claude_config_dir: Path | None = None,
    hooks: str = "auto",
) -> InstallReport:
    """``install`` with the hook transport ``hooks`` (auto, mcp, command) resolved for the
    Claude Code on PATH; the report says which and why. What the CLI and the editor call."""
    found = claude_code_version() if hooks == "auto" and not uninstall else None
    transport, why = hook_transport(hooks, found)
    report = install(project, scope, uninstall, claude_config_dir=claude_config_dir, hooks=transport)
    if not uninstall:
        report.hooks = why
    return report
