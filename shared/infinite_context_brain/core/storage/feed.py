"""What both change feeds share (redis_feed.py, sqlite_feed.py): a background thread per
subscription, and the list of them a feed stops on ``close``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar


class FeedThread:
    """One subscription's background thread: ``_run`` loops until ``_stop`` is set."""

    def __init__(self, run: Callable[[], None], name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2)


_Sub = TypeVar("_Sub", bound=FeedThread)


class Subscriptions(Generic[_Sub]):
    """The subscriptions a feed started; ``close`` stops every one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscriptions: list[_Sub] = []

    def _started(self, subscription: _Sub) -> _Sub:
        with self._lock:
            self._subscriptions.append(subscription)
        subscription.start()
        return subscription

    def close(self) -> None:
        with self._lock:
            subs, self._subscriptions = self._subscriptions, []
        for sub in subs:
            sub.close()
