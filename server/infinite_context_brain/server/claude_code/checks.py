"""Is Claude Code wired to this installation, and can it run it? The checks ``doctor`` shows and
``install claude-code`` ends with: each says what it found and, if needed, the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from infinite_context_brain.core import install_command
from infinite_context_brain.core.transcript.locate import all_transcripts, transcripts_dir

from . import failures, spool
from .config_files import user_dir
from .entries import WiringStatus, claude_code_version, installed_script, project_server_approval, wiring
from .hook_tool import MIN_CLAUDE_CODE
from .reach import reach

INSTALL_HINT = "run `infinite-context install claude-code` in the folder you start Claude Code in"


class Check(BaseModel):
    name: str
    status: Literal["ok", "warn", "fail"]
    detail: str
    fix: str | None = None


def claude_code_checks(folder: Path, claude_config_dir: Path | None) -> list[Check]:
    """Claude Code's view of this folder: our MCP entry and hooks (in which scopes), whether it
    can start the command they name, the last hook failure, its transcripts."""
    wired = wiring(folder, claude_config_dir)
    checks = [
        Check(
            name="claude code mcp",
            status="ok" if wired.mcp_scopes else "warn",
            detail=f"server configured ({', '.join(wired.mcp_scopes)} scope)"
            if wired.mcp_scopes
            else f"no 'infinite-context' MCP server for {folder}",
            fix=None if wired.mcp_scopes else INSTALL_HINT,
        )
    ]
    if "project" in wired.mcp_scopes:
        checks.append(approval_check(folder, claude_config_dir, wired))
    checks.append(hooks_check(wired))
    if wired.mcp_hook_events:
        checks.append(mcp_hooks_check(wired.mcp_hook_events, bool(wired.mcp_scopes)))
    checks += command_checks(wired.executables, folder, claude_config_dir)
    checks.append(failure_check(spool.data_dir()))
    found = all_transcripts(folder, user_dir(claude_config_dir))
    checks.append(
        Check(
            name="claude code transcripts",
            status="ok",
            detail=f"{len(found)} in {found[0].parent}, newest {found[0].name}"
            if found
            else f"none yet in {transcripts_dir(folder, user_dir(claude_config_dir))}",
        )
    )
    return checks


def hooks_check(wired: WiringStatus) -> Check:
    """Every event has our hook, in exactly one scope (Claude Code runs a hook once per scope
    that registers it: SessionStart would load the brain twice)."""
    missing = [event for event, scopes in wired.hook_events.items() if not scopes]
    twice = wired.duplicated()
    if missing:
        return Check(
            name="claude code hooks", status="warn", detail=f"missing: {', '.join(missing)}", fix=INSTALL_HINT
        )
    if twice:
        scopes = sorted({s for found in twice.values() for s in found})
        keep = "project" if "project" in scopes else scopes[0]
        drop = [s for s in scopes if s != keep]
        return Check(
            name="claude code hooks",
            status="warn",
            detail=f"registered in several scopes ({', '.join(scopes)}): Claude Code runs each once per "
            f"scope ({', '.join(f'{e} x{len(s)}' for e, s in twice.items())})",
            fix=" and ".join(f"`infinite-context install claude-code --scope {s} --uninstall`" for s in drop)
            + f" (keeps the {keep} scope)",
        )
    return Check(
        name="claude code hooks",
        status="ok",
        detail=", ".join(f"{e} ({'/'.join(s)})" for e, s in wired.hook_events.items()),
    )


def approval_check(folder: Path, claude_config_dir: Path | None, wired: WiringStatus) -> Check:
    """A project-scope server runs only once the user approved it in Claude Code (command hooks
    run regardless; ``mcp_tool`` hooks call that server)."""
    state = project_server_approval(folder, claude_config_dir)
    name = "claude code approval"
    if state == "approved":
        return Check(name=name, status="ok", detail="the project's .mcp.json server is approved")
    if state == "rejected":
        return Check(
            name=name,
            status="fail",
            detail="the project's 'infinite-context' server was declined in Claude Code "
            "(disabledMcpjsonServers)",
            fix="enable it in Claude Code's /mcp menu, or install with --scope local",
        )
    waiting = "its tools"
    if wired.mcp_hook_events:
        waiting += f" and the {'/'.join(wired.mcp_hook_events)} hooks (mcp_tool calls to it)"
    commands = [e for e, s in wired.hook_events.items() if s and e not in wired.mcp_hook_events]
    also = f"; the command hooks ({', '.join(commands)}) run already" if commands else ""
    return Check(
        name=name,
        status="warn",
        detail="Claude Code has not approved the project's .mcp.json server yet (`claude mcp list`: "
        f"Pending approval); until then {waiting} do not run{also}",
        fix="start `claude` in this folder and approve 'infinite-context', or add it to "
        '"enabledMcpjsonServers" in .claude/settings.local.json',
    )


def mcp_hooks_check(events: list[str], server: bool) -> Check:
    """``mcp_tool`` hooks need our MCP server and a Claude Code that knows the hook type."""
    name, need = "claude code mcp hooks", ".".join(map(str, MIN_CLAUDE_CODE))
    redo = "run `infinite-context install claude-code --hooks command`"
    if not server:
        return Check(
            name=name,
            status="warn",
            detail=f"{', '.join(events)} call the 'infinite-context' MCP server, which is not configured; "
            "observations then come only from the hand-off",
            fix=f"run `infinite-context install claude-code`, or {redo}",
        )
    version = claude_code_version()
    if version is not None and version < MIN_CLAUDE_CODE:
        return Check(
            name=name,
            status="fail",
            detail=f"Claude Code {'.'.join(map(str, version))} has no mcp_tool hooks (since {need})",
            fix=f"update Claude Code (`claude update`), or {redo}",
        )
    found = f"Claude Code {'.'.join(map(str, version))}" if version else f"needs Claude Code {need}+"
    return Check(name=name, status="ok", detail=f"{', '.join(events)} as calls to the MCP server ({found})")


def command_fix(command: str) -> str:
    """How to make ``command`` start from anywhere."""
    if "/" in command:
        return "run `infinite-context install claude-code` again from the installation you use"
    script = installed_script()
    pinned = f" ({script})" if script else ""
    local_bin = Path.home() / ".local" / "bin"
    if (local_bin / command).exists():  # linked already: that folder is what a login shell lacks
        put = (
            f'add {local_bin} to PATH in ~/.profile (`export PATH="$HOME/.local/bin:$PATH"`), '
            "then open a new terminal"
        )
    else:
        put = (
            "put the console script on the PATH every terminal gets: `make run` in the checkout links it "
            f"into ~/.local/bin, or `{install_command('pipx')}`"
        )
    local = "`infinite-context install claude-code --scope local`"
    return f"{put}; or pin this installation{pinned} for yourself only with {local}"


def command_checks(executables: list[str], folder: Path, claude_config_dir: Path | None) -> list[Check]:
    """Claude Code must find the commands our entries name, from any terminal: the project scope
    names the bare ``infinite-context``, looked up on PATH (``reach``)."""
    checks = []
    for command in executables:
        found = reach(command, folder, claude_config_dir)
        problem = found.problem()
        if problem is None:
            checks.append(
                Check(name="claude code command", status="ok", detail=f"{command} -> {found.claude}")
            )
        else:
            checks.append(
                Check(name="claude code command", status="fail", detail=problem, fix=command_fix(command))
            )
    return checks


def failure_check(data_dir: str) -> Check:
    """The last hook failure in the hooks' log, and whether a hook has succeeded since."""
    name = "claude code hook failures"
    last = failures.last(data_dir)
    if last is None:
        return Check(name=name, status="ok", detail="none logged")
    entry, unresolved = last
    said = f"{entry.get('event')} {failures.age(entry)}: {entry.get('message')}"
    if not unresolved:
        return Check(name=name, status="ok", detail=f"last one {said} (hooks have worked since)")
    fix = entry.get("fix")
    return Check(
        name=name,
        status="warn",
        detail=f"last one {said}",
        fix=str(fix) if fix else f"see {Path(data_dir) / failures.LOG_NAME} and the hook's log lines",
    )
