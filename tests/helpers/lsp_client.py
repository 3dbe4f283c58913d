"""Our language server through pytest-lsp over stdio: the command that starts it, a session that
collects the budget notifications it pushes, and plain values from pygls' named tuples."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient

from ..conftest import PYTHON

SERVER = [PYTHON, "-m", "infinite_context_brain.server", "lsp", "--stdio"]


class Session:
    def __init__(
        self, client: LanguageClient, budgets: list[dict[str, Any]], folders: list[Path] | None = None
    ) -> None:
        self.client = client
        self.budgets = budgets
        #: the workspace folders the client opened
        self.folders = folders or []

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        return await self.client.protocol.send_request_async(f"infiniteContext/{method}", params)

    async def budget_where(self, predicate: Any, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for budget in reversed(self.budgets):
                if predicate(budget):
                    return budget
            await asyncio.sleep(0.05)
        raise AssertionError(f"no matching budget notification in {timeout}s: {self.budgets[-3:]}")


def plain(value: Any) -> Any:
    """A custom request's result or notification's params (pygls gives named tuples) as dicts and
    lists."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
