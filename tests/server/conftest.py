"""The language server started for a test: two workspace folders, a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from ..helpers.lsp_client import SERVER, Session, plain


@pytest_asyncio.fixture
async def lsp(tmp_path: Path, store_url: str) -> AsyncIterator[Session]:
    folders = []
    for name in ("alpha", "beta"):
        root = tmp_path / name
        (root / "src").mkdir(parents=True)
        (root / "src" / "app.py").write_text("def main():\n    pass\n")
        folders.append(root)
    client = await ClientServerConfig(server_command=SERVER).start()
    budgets: list[dict[str, Any]] = []

    @client.feature("infiniteContext/budget")
    def on_budget(params: Any) -> None:
        budgets.append(plain(params))

    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True)
            ),
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
            initialization_options={"storeUrl": store_url, "budget": 50_000},
        )
    )
    yield Session(client, budgets, folders)
    await client.shutdown_session()
