"""The observation of one tool use, as the PostToolUse hook reports it (``ProjectBrain.observe``
stores it)."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from ..models import Observation
from .observe import build_observation, response_text


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
