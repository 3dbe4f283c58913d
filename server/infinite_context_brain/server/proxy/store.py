"""The proxy's link to the store: decisions read once per new tool_use_id, written off the
request path (one worker thread owns the store), originals redacted before they are kept."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from infinite_context_brain.core.models import Observation
from infinite_context_brain.core.transcript.live import ORIGINALS_SESSION, PROXY_SESSION, LiveOptions

if TYPE_CHECKING:
    from infinite_context_brain.core.config import Settings
    from infinite_context_brain.core.storage import Store

log = logging.getLogger("infinite_context_brain.proxy")
LOOKUP_TIMEOUT = 0.5


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
    )


@dataclass
class StoreBridge:
    settings: Any = None
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "ic-proxy-store"))
    _store: Store | None = None
    _broken: bool = False

    def _open(self) -> Store | None:
        if self._store is None and not self._broken and self.settings is not None:
            from infinite_context_brain.core.storage import open_store

            try:
                self._store = open_store(self.settings)
            except Exception as exc:
                self._broken = True
                log.warning("store unavailable, decisions kept in memory only: %s", type(exc).__name__)
        return self._store

    def lookup(self, ids: list[str]) -> dict[str, Observation]:
        def run() -> dict[str, Observation]:
            store = self._open()
            return {} if store is None else store.observations.get_observations(PROXY_SESSION, ids)

        return self._pool.submit(run).result(timeout=LOOKUP_TIMEOUT)

    def persist(self, decisions: list[Observation], originals: list[Observation]) -> None:
        def run() -> None:
            from infinite_context_brain.core.redact import redact

            store = self._open()
            if store is None:
                return
            try:
                store.observations.put_observations(PROXY_SESSION, decisions)
                if originals:
                    kept = [o.model_copy(update={"text": redact(o.text)}) for o in originals]
                    store.observations.put_observations(ORIGINALS_SESSION, kept)
            except Exception as exc:
                log.warning("decisions not stored: %s", type(exc).__name__)

        self._pool.submit(run)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self._store is not None:
            self._store.close()


def store_bridge(settings: Settings | None) -> StoreBridge:
    return StoreBridge(settings)
