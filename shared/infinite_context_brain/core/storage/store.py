"""``Store``: a whole brain store, the four parts a backend builds on one connection.

Callers use the part they need (``store.states``, ``store.feed``, ``store.observations``,
``store.memory``; contracts in parts.py), so each store method is written once per backend.
"""

from __future__ import annotations

from collections.abc import Callable

from .identity import Identity
from .parts import ChangeFeed, MemoryIndex, ObservationStore, StateStore


class Store:
    def __init__(
        self,
        *,
        display_url: str,
        states: StateStore,
        feed: ChangeFeed,
        observations: ObservationStore,
        memory: MemoryIndex,
        identity: Identity,
        close: Callable[[], None],
    ) -> None:
        #: the store location as shown to people (never with a password).
        self.display_url = display_url
        self.states = states
        self.feed = feed
        self.observations = observations
        self.memory = memory
        #: who this store is (identity.py)
        self.identity = identity
        self._close_connection = close

    def close(self) -> None:
        """Stop the change feed's listeners first: they read through the same connection."""
        self.feed.close()
        self._close_connection()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
