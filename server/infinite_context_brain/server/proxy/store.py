"""The proxy's link to the store: decisions read once per new tool_use_id, written off the
request path (one worker thread owns the store), originals redacted before they are kept, under
this user and the Claude Code session they came from (``expand`` reads them for that session's
project only)."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from infinite_context_brain.core.models import Observation
from infinite_context_brain.core.redact import redact
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.transcript.live import LiveOptions, decisions_session, originals_session

if TYPE_CHECKING:
    from infinite_context_brain.core.config import Settings
    from infinite_context_brain.core.storage import Store

log = logging.getLogger("infinite_context_brain.proxy")
LOOKUP_TIMEOUT = 0.5
#: the longest original kept for ``expand`` (a larger one keeps its start; the transcript has it all)
ORIGINAL_CHARS = 2_000_000


def live_options(settings: Settings) -> LiveOptions:
    """The transform's options: its defaults, with the ``proxy_*`` settings and the transform
    settings shared with the transcript transform where they are set."""
    base = LiveOptions()

    def chosen(value: int | None, default: int) -> int:
        return default if value is None else value

    return LiveOptions(
        keep_recent=chosen(settings.proxy_keep_recent, base.keep_recent),
        keep_recent_tokens=chosen(settings.proxy_keep_recent_tokens, base.keep_recent_tokens),
        epoch_tokens=chosen(settings.proxy_epoch_tokens, base.epoch_tokens),
        window=chosen(settings.proxy_window, settings.context_window or base.window),
        max_tokens=settings.observation_max_tokens,
        keep_tools=settings.kept_tools(),
        long_cache=settings.proxy_long_cache,
    )


@dataclass
class StoreBridge:
    settings: Settings | None = None
    uid: int = field(default_factory=os.getuid)
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "ic-proxy-store"))
    _store: Store | None = None
    _broken: bool = False

    def _open(self) -> Store | None:
        if self._store is None and not self._broken and self.settings is not None:
            try:
                self._store = open_store(self.settings)
            except Exception as exc:
                self._broken = True
                log.warning("store unavailable, decisions kept in memory only: %s", type(exc).__name__)
        return self._store

    def lookup(self, ids: list[str]) -> dict[str, Observation]:
        def run() -> dict[str, Observation]:
            store = self._open()
            return (
                {} if store is None else store.observations.get_observations(decisions_session(self.uid), ids)
            )

        return self._pool.submit(run).result(timeout=LOOKUP_TIMEOUT)

    def persist(
        self, decisions: list[Observation], originals: list[Observation], session: str | None
    ) -> None:
        def run() -> None:
            store = self._open()
            if store is None:
                return
            try:
                store.observations.put_observations(decisions_session(self.uid), decisions)
                if originals and session is not None:  # without a session, no project could read them
                    kept = [o.model_copy(update={"text": redact(o.text[:ORIGINAL_CHARS])}) for o in originals]
                    store.observations.put_observations(originals_session(self.uid, session), kept)
            except Exception as exc:
                log.warning("decisions not stored: %s", type(exc).__name__)

        self._pool.submit(run)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self._store is not None:
            self._store.close()
