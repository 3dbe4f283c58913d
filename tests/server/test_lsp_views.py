"""What the editor shows: a version rendered as Markdown for the read-only view and the
diff editor (no JSON, no session id), the status as Markdown, and the history limit shared with
every other surface."""

from __future__ import annotations

from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from infinite_context_brain.core.params import HISTORY_LIMIT_DEFAULT

from ..helpers.lsp_client import Session, plain


async def test_show_renders_a_version_and_status_has_markdown(lsp: Session) -> None:
    alpha, _beta = lsp.folders
    a = alpha.as_uri()
    await lsp.request("checkpoint", {"folderUri": a, "context": "Current task: fix List<T> in src/app.py"})
    await lsp.request("checkpoint", {"folderUri": a, "context": "Done: it. Current task: ship"})
    first: dict[str, Any] = plain(await lsp.request("show", {"folderUri": a, "version": 1}))
    assert first["version"] == 1 and first["markdown"].startswith("# Project context")
    assert "List\\<T>" in first["markdown"] and "session_id" not in first["markdown"]
    assert "ship" in plain(await lsp.request("show", {"folderUri": a, "version": 2}))["markdown"]
    with pytest.raises(JsonRpcException, match="version 9 is not in the history"):
        await lsp.request("show", {"folderUri": a, "version": 9})
    status = plain(await lsp.request("status", {"folderUri": a}))
    assert "Version 2" in status["markdown"] and "- Current task: ship" in status["markdown"]
    for n in range(HISTORY_LIMIT_DEFAULT + 1):
        await lsp.request("checkpoint", {"folderUri": a, "context": f"Current task: step {n}"})
    items = plain(await lsp.request("history", {"folderUri": a}))["items"]
    assert len(items) == min(HISTORY_LIMIT_DEFAULT, 5)  # the store keeps 5 by default
