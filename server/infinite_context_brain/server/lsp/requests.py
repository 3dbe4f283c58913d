"""The params of the language server's custom requests: one pydantic model per request, camelCase
on the wire (``maxTokens``; ``from``/``to`` for diff), snake_case accepted too. Every field is a
shared rule from ``core.params``, so the editor gets the limits the MCP tools and the core have.

Strict: JSON already carries numbers as numbers, so ``"5"`` or ``true`` for a count is the
client's mistake, reported as ``InvalidInput`` naming the key as sent. Imported on the first
request (pydantic is not needed to answer ``initialize``).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from infinite_context_brain.core.params import (
    HISTORY_LIMIT_DEFAULT,
    ContextText,
    FromVersion,
    HistoryLimit,
    HookChoice,
    MaxTokens,
    Scope,
    Steps,
    TokenCount,
    ToVersion,
    Version,
    check_model,
)

R = TypeVar("R", bound="Request")


class Request(BaseModel):
    """What every request may carry: the workspace folder (optional with one folder open)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", strict=True, frozen=True
    )

    folder_uri: str | None = Field(None, description="The workspace folder's URI.")


class CheckpointParams(Request):
    context: ContextText
    token_count: TokenCount | None = None


class ResumeParams(Request):
    max_tokens: MaxTokens | None = None


class RollbackParams(Request):
    steps: Steps | None = None
    version: Version | None = None


class HistoryParams(Request):
    limit: HistoryLimit = HISTORY_LIMIT_DEFAULT


class ShowParams(Request):
    version: Version


class DiffParams(Request):
    from_version: FromVersion = Field(alias="from")
    to_version: ToVersion = Field(alias="to")


class InstallParams(Request):
    scope: Scope = "project"
    uninstall: bool = False
    hooks: HookChoice = "auto"


class ProxyParams(Request):
    action: Literal["status", "start", "stop"] = Field(
        "status", description="status: the figures; start / stop the per-user live proxy."
    )


def parse(model: type[R], params: dict[str, Any]) -> R:
    return check_model(model, params)
