"""Checks behind ``infinite-context doctor``: each says what it found and, if needed, the fix."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from infinite_context_brain.core import install_command
from infinite_context_brain.core.errors import InfiniteContextError

if TYPE_CHECKING:
    from infinite_context_brain.core.config import Settings


class Check(BaseModel):
    name: str
    status: Literal["ok", "warn", "fail"]
    detail: str
    fix: str | None = None


def run_checks(project: str | None = None) -> list[Check]:
    from infinite_context_brain.core.config import load_settings

    checks: list[Check] = []
    ok = sys.version_info >= (3, 11)
    checks.append(
        Check(
            name="python",
            status="ok" if ok else "fail",
            detail=f"{sys.version.split()[0]} at {sys.executable}",
            fix=None if ok else "install Python 3.11 or newer",
        )
    )
    try:
        settings = load_settings()
    except InfiniteContextError as exc:
        checks.append(Check(name="settings", status="fail", detail=exc.message, fix=exc.fix))
        return checks
    checks.append(Check(name="settings", status="ok", detail="environment and .env parsed"))

    from infinite_context_brain.core.brain import ProjectBrain

    try:
        with ProjectBrain.open(project, settings) as brain:
            checks.append(
                Check(
                    name="project",
                    status="ok",
                    detail=f"{brain.project.root} "
                    + (
                        f"(session {brain.session_id})"
                        if brain.session_id
                        else "(no brain yet: created on the first write)"
                    ),
                )
            )
            status = brain.status()
            checks.append(
                Check(
                    name="store",
                    status="ok",
                    detail=f"{status.store}: "
                    + (
                        f"version {status.version} stored"
                        if status.has_state
                        else "reachable, no checkpoint yet"
                    ),
                )
            )
    except InfiniteContextError as exc:
        checks.append(Check(name="store", status="fail", detail=exc.message, fix=exc.fix))

    checks.append(merge_check(settings))
    from infinite_context_brain.core.project import locate_project

    try:
        folder = locate_project(project, settings)
    except InfiniteContextError:
        return checks  # the project check above already says why
    checks += claude_code_checks(folder, settings)
    from ..proxy.wiring import endless_check

    state, detail, fix = endless_check(settings.resolved_data_dir())
    checks.append(Check(name="endless proxy", status=state, detail=detail, fix=fix))
    return checks


def merge_check(settings: Settings) -> Check:
    """Which merge tiers will run, in order, and which variable's key pays for each."""
    from infinite_context_brain.core.merge_plan import merge_plan

    plan = merge_plan(settings)
    detail = plan.describe()
    if plan.problem is not None:
        return Check(name="merge", status="fail", detail=f"{plan.problem} ({detail})", fix=plan.fix)
    if any(t.key_ignored for t in plan.tiers):
        return Check(
            name="merge",
            status="warn",
            detail=detail,
            fix="to let infinite-context pay with an Anthropic key here, set "
            "INFINITE_CONTEXT_ANTHROPIC_API_KEY (Claude Code's own ANTHROPIC_API_KEY is never used)",
        )
    if not plan.uses_network:
        return Check(
            name="merge",
            status="ok",
            detail=detail,
            fix=None
            if plan.mode == "offline"
            else "optional: set GEMINI_API_KEY or INFINITE_CONTEXT_ANTHROPIC_API_KEY for LLM merges",
        )
    return Check(name="merge", status="ok", detail=detail)


def claude_code_checks(folder: Path, settings: Settings) -> list[Check]:
    """Is Claude Code wired to this installation (MCP entry, hooks), and where are its
    transcripts for this folder?"""
    from infinite_context_brain.core.transcript.locate import all_transcripts, transcripts_dir

    from .install import wiring

    wired = wiring(folder, settings.claude_config_dir)
    config_dir = settings.resolved_claude_config_dir()
    install = "run `infinite-context install claude-code` in the folder you start Claude Code in"
    checks = [
        Check(
            name="claude code mcp",
            status="ok" if wired.mcp_scopes else "warn",
            detail=f"server configured ({', '.join(wired.mcp_scopes)} scope)"
            if wired.mcp_scopes
            else f"no 'infinite-context' MCP server for {folder}",
            fix=None if wired.mcp_scopes else install,
        )
    ]
    if "project" in wired.mcp_scopes:
        checks.append(_approval_check(folder, settings))
    missing = [event for event, scopes in wired.hook_events.items() if not scopes]
    checks.append(
        Check(
            name="claude code hooks",
            status="warn" if missing else "ok",
            detail=f"missing: {', '.join(missing)}"
            if missing
            else ", ".join(f"{e} ({'/'.join(s)})" for e, s in wired.hook_events.items()),
            fix=install if missing else None,
        )
    )
    if wired.mcp_hook_events:
        checks.append(_mcp_hooks_check(wired.mcp_hook_events, bool(wired.mcp_scopes)))
    checks += _command_checks(wired.executables)
    found = all_transcripts(folder, config_dir)
    checks.append(
        Check(
            name="claude code transcripts",
            status="ok",
            detail=f"{len(found)} in {found[0].parent}, newest {found[0].name}"
            if found
            else f"none yet in {transcripts_dir(folder, config_dir)}",
        )
    )
    return checks


def _approval_check(folder: Path, settings: Settings) -> Check:
    """A project-scope server runs only once the user approved it in Claude Code."""
    from .install import project_server_approval

    state = project_server_approval(folder, settings.claude_config_dir)
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
    return Check(
        name=name,
        status="warn",
        detail="Claude Code has not approved the project's .mcp.json server yet (`claude mcp list`: "
        "Pending approval); until then neither its tools nor its hooks run",
        fix="start `claude` in this folder and approve 'infinite-context', or add it to "
        '"enabledMcpjsonServers" in .claude/settings.local.json',
    )


def _mcp_hooks_check(events: list[str], server: bool) -> Check:
    """``mcp_tool`` hooks need our MCP server and a Claude Code that knows the hook type."""
    from .hook_tool import MIN_CLAUDE_CODE
    from .install import claude_code_version

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


def _command_checks(executables: list[str]) -> list[Check]:
    """Claude Code must find the commands our entries name: the project scope (shared with the
    team) names the bare ``infinite-context`` console script, looked up on PATH."""
    import shutil

    checks = []
    for command in executables:
        found = shutil.which(command)
        if found:
            checks.append(Check(name="claude code command", status="ok", detail=f"{command} -> {found}"))
            continue
        bare = "/" not in command
        checks.append(
            Check(
                name="claude code command",
                status="fail",
                detail=f"`{command}` (named in Claude Code's config) is not "
                + ("on PATH" if bare else "an executable file"),
                fix="install the console script where Claude Code finds it: "
                f"`{install_command('pipx')}` (or `{install_command()} --user`, or activate the venv "
                "that has it before starting Claude Code); or pin this installation for yourself with "
                "`infinite-context install claude-code --scope local`"
                if bare
                else "run `infinite-context install claude-code` again from the installation you use",
            )
        )
    return checks
