"""Checks behind ``infinite-context doctor``: each says what it found and, if needed, the fix.
Python, the settings, the data folder, the store, the merge tiers, Claude Code's wiring
(``checks``) and live endless mode."""

from __future__ import annotations

import sys
from pathlib import Path

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import Settings, load_settings
from infinite_context_brain.core.errors import InfiniteContextError
from infinite_context_brain.core.files import NotOwned, owned_dir
from infinite_context_brain.core.merge_plan import merge_plan
from infinite_context_brain.core.project import locate_project

from ..proxy.wiring import endless_check
from . import spool
from .checks import Check, claude_code_checks


def run_checks(project: str | None = None) -> list[Check]:
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
    checks.append(data_check(settings))
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
    try:
        folder = locate_project(project, settings)
    except InfiniteContextError:
        return checks  # the project check above already says why
    checks += claude_code_checks(folder, settings.claude_config_dir)
    state, detail, fix = endless_check(settings.resolved_data_dir())
    checks.append(Check(name="endless proxy", status=state, detail=detail, fix=fix))
    return checks


def merge_check(settings: Settings) -> Check:
    """Which merge tiers will run, in order, and which variable's key pays for each."""
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


def data_check(settings: Settings) -> Check:
    """The data folder (store, hook queue, cursors, logs) must be the user's own: one another user
    made first, or can write, is never used."""
    folders = dict.fromkeys([Path(spool.data_dir()), settings.resolved_data_dir()])
    for folder in [*folders, Path(spool.spool_dir())]:
        if not folder.exists():
            continue
        try:
            owned_dir(str(folder))
        except NotOwned as exc:
            return Check(
                name="data folder",
                status="fail",
                detail=str(exc),
                fix=f"move {folder} away (infinite-context makes a new one), or set "
                "INFINITE_CONTEXT_DATA_DIR to a folder of yours",
            )
    shown = ", ".join(str(f) for f in folders)
    return Check(name="data folder", status="ok", detail=f"{shown} (yours, private)")
