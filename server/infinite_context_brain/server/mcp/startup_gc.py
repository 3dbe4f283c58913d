"""The MCP server starts without the cyclic garbage collector (issue 19).

Start-up is almost all imports and pydantic class and schema building (the SDK's ~500 ms, then
ours): hundreds of thousands of new objects, none of them garbage, and CPython's collector walked
them again and again while they were made (~15% of the SDK import alone, measured). So collection
is paused while the server starts and resumes once every part of start-up has said it is done
(``done``: the server built, the warm-up's read path ready).

Resuming freezes what start-up made (``gc.freeze``, the pattern the ``gc`` docs give for start-up
before fork): the modules, classes and the open brain live as long as the process, and later
collections no longer walk them, so no collection over ~100k start-up objects lands on an early
tool call. The price: the few cycles that became garbage during start-up (~3,000 objects, well
under a megabyte, measured) are never freed. A host that had switched collection off itself keeps
it off.
"""

from __future__ import annotations

import gc
import threading


class StartupGc:
    """Pauses collection now; resumes it when ``done`` has been called once per party."""

    def __init__(self, parties: int) -> None:
        self._lock = threading.Lock()
        self._left = parties
        self._paused = gc.isenabled()
        if self._paused:
            gc.disable()

    @property
    def paused(self) -> bool:
        """Collection is off because of this pause (not every party is done yet)."""
        return self._paused and self._left > 0

    def done(self) -> None:
        """One party's start-up work is over; the last one resumes collection. Extra calls (a
        ``finally`` after an error) are harmless."""
        with self._lock:
            if self._left <= 0:
                return
            self._left -= 1
            if self._left or not self._paused:
                return
            gc.freeze()
            gc.enable()
