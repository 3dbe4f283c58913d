"""Checks behind ``infinite-context doctor``: each says what it found and, if needed, the fix."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from .errors import InfiniteContextError


class Check(BaseModel):
    name: str
    status: Literal["ok", "warn", "fail"]
    detail: str
    fix: str | None = None


def run_checks(project: str | None = None) -> list[Check]:
    from .config import load_settings

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
        settings = load_settings(project_root=Path(project) if project else None)
    except InfiniteContextError as exc:
        checks.append(Check(name="settings", status="fail", detail=exc.message, fix=exc.fix))
        return checks
    checks.append(Check(name="settings", status="ok", detail="environment and .env parsed"))

    from .brain import ProjectBrain

    try:
        with ProjectBrain.open(settings=settings) as brain:
            checks.append(
                Check(
                    name="project",
                    status="ok",
                    detail=f"{brain.project.root} (session {brain.session_id})",
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

    try:
        from .merge.chain import build_chain

        chain = build_chain(settings)
        tiers = [tier.label for tier in chain.tiers]
        checks.append(
            Check(
                name="merge",
                status="ok",
                detail=(
                    f"mode {settings.merge}: {' -> '.join([*tiers, 'offline'])}"
                    if tiers
                    else f"mode {settings.merge}: offline merger only (no provider key set)"
                ),
                fix=None if tiers else "optional: set GEMINI_API_KEY or ANTHROPIC_API_KEY for LLM merges",
            )
        )
    except InfiniteContextError as exc:
        checks.append(Check(name="merge", status="fail", detail=exc.message, fix=exc.fix))
    checks += claude_code_checks(settings.project_root or Path.cwd())
    return checks


def claude_code_checks(folder: Path) -> list[Check]:
    """Is Claude Code wired to this installation (MCP entry, hooks), and where are its
    transcripts for this folder?"""
    from .claude_code import wiring
    from .transcript.locate import all_transcripts, transcripts_dir

    wired = wiring(folder)
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
    found = all_transcripts(folder)
    checks.append(
        Check(
            name="claude code transcripts",
            status="ok",
            detail=f"{len(found)} in {found[0].parent}, newest {found[0].name}"
            if found
            else f"none yet in {transcripts_dir(folder)}",
        )
    )
    return checks
