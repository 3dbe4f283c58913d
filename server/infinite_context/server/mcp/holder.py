"""The MCP server's one ProjectBrain, opened once (by ``warm.start`` at process start, else by the
first call) and shared by every tool. Light on purpose: it is imported before the MCP SDK, so the
brain can start opening while the SDK loads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infinite_context.core.brain import ProjectBrain


class BrainHolder:
    """Opens the brain once, on first use; keeps the advisory session lock fresh."""

    def __init__(self, factory: Callable[[], ProjectBrain]) -> None:
        self._factory = factory
        self._brain: ProjectBrain | None = None
        self._lock = threading.Lock()
        self._owner = ""  # set with the brain: default_owner lives in the brain module
        self._claimed_at = 0.0

    @property
    def ready(self) -> bool:
        """The brain is open: a call now waits for nothing but its own work."""
        return self._brain is not None

    def get(self) -> ProjectBrain:
        with self._lock:
            if self._brain is None:
                from infinite_context.core.brain import default_owner

                self._brain = self._factory()
                self._owner = default_owner("mcp")
            brain = self._brain
            if time.monotonic() - self._claimed_at > brain.settings.lock_ttl_seconds / 3:
                self._claimed_at = time.monotonic()
                brain.claim(self._owner)
        return brain

    def close(self) -> None:
        with self._lock:
            if self._brain is not None:
                try:
                    self._brain.release(self._owner)
                finally:
                    self._brain.close()
                self._brain = None
