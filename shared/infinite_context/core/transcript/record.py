"""Store the observation of one tool use, as the PostToolUse hook reports it.

Kept apart from ``service`` (and without a ProjectBrain, which also builds the merge chain) so
the hook process imports only what it needs: it runs after every tool call Claude Code makes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..models import Observation
from .observe import build_observation, response_text

if TYPE_CHECKING:
    from pathlib import Path

    from ..config import Settings


def observation_from_payload(payload: dict[str, Any], max_tokens: int) -> Observation:
    """Claude Code's PostToolUse JSON (``tool_name, tool_input, tool_response, tool_use_id``)."""
    tool_use_id = payload.get("tool_use_id")
    tool_name = payload.get("tool_name")
    if not isinstance(tool_use_id, str) or not tool_use_id:
        raise InvalidInput(
            "tool_use_id", "missing from the hook payload", fix="configure this as a PostToolUse hook"
        )
    if not isinstance(tool_name, str) or not tool_name:
        raise InvalidInput(
            "tool_name", "missing from the hook payload", fix="configure this as a PostToolUse hook"
        )
    response = payload.get("tool_response")
    tool_input = payload.get("tool_input")
    is_error = isinstance(response, dict) and bool(response.get("is_error") or response.get("error"))
    return build_observation(
        tool_use_id,
        tool_name,
        tool_input if isinstance(tool_input, dict) else {},
        response_text(response),
        is_error=is_error,
        extra=response if isinstance(response, dict) else None,
        max_tokens=max_tokens,
        source="hook",
    )


def record_observation(
    settings: Settings, payload: dict[str, Any], folder: Path | None = None
) -> Observation:
    """Build the observation and store it under the session id of the project ``folder`` belongs
    to (default: ``locate_project`` with the payload's ``cwd``)."""
    from ..project import locate_project, resolve_project
    from ..storage import open_store

    obs = observation_from_payload(payload, settings.observation_max_tokens)
    if folder is None:
        cwd = payload.get("cwd")
        folder = locate_project(None, settings, cwd if isinstance(cwd, str) else None)
    project = resolve_project(folder)
    with open_store(settings) as store:
        store.put_observation(project.session_id, obs)
    return obs
