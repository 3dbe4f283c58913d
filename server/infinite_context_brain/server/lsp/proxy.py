"""Live endless mode in the editor: the ``infiniteContext.endless.*`` settings, the
``infiniteContext/proxy`` request (status, start, stop) and the payload of the
``infiniteContext/proxy`` notification the server pushes when the figures change.

The proxy is one per user (``proxy/process.py``; ``proxy/status.py`` finds it), not one per
folder: nothing here needs a workspace folder, and the language server never stops a proxy on
its own (Claude Code sessions in terminals may use it); only the Stop command does. A proxy
that cannot start is not an error of any request: it becomes the payload's ``problem`` and
``fix``, which the status bar shows.
Every call here blocks (files, a local HTTP GET, a child process): the server runs them in a
worker thread.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infinite_context_brain.core.errors import InfiniteContextError, InvalidInput

from .tooltip import proxy_tooltip

if TYPE_CHECKING:
    from infinite_context_brain.core.config import Settings

log = logging.getLogger(__name__)

ENABLED_SETTING = "infiniteContext.endless.enabled"
PORT_SETTING = "infiniteContext.endless.port"
START_COMMAND = "Infinite Context: Start Live Proxy"


@dataclass(frozen=True)
class EndlessOptions:
    enabled: bool = False
    port: int | None = None
    terminals: bool = True


def endless_options(options: dict[str, Any]) -> EndlessOptions:
    """From initializationOptions (``endlessEnabled``, ``endlessPort``, ``endlessTerminals``) or
    the settings tree (``{"endless": {"enabled": ...}}``); a wrong type names the setting."""
    nested = options.get("endless")
    nested = nested if isinstance(nested, dict) else {}

    def pick(flat: str, key: str) -> Any:
        return options[flat] if options.get(flat) is not None else nested.get(key)

    enabled, port, terminals = (
        pick("endlessEnabled", "enabled"),
        pick("endlessPort", "port"),
        pick("endlessTerminals", "terminals"),
    )
    if enabled is not None and not isinstance(enabled, bool):
        raise InvalidInput(
            ENABLED_SETTING, f"must be true or false, not {enabled!r}", fix="set true or false"
        )
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise InvalidInput(
            PORT_SETTING, f"must be a port number, not {port!r}", fix="set 1024-65535, or clear it"
        )
    if terminals is not None and not isinstance(terminals, bool):
        raise InvalidInput(
            "infiniteContext.endless.terminals",
            f"must be true or false, not {terminals!r}",
            fix="set true or false",
        )
    return EndlessOptions(bool(enabled), port, True if terminals is None else terminals)


class ProxyWatch:
    """The language server's view of the per-user proxy."""

    def __init__(self) -> None:
        self.options = EndlessOptions()
        #: why the last start failed (message, fix); cleared by a later success or by disabling
        self.failure: tuple[str, str | None] | None = None
        #: set while the setting's start is under way (the status bar shows it is coming)
        self.starting = False
        #: counts starts and stops, so a status read begun before one is not pushed after it
        self.generation = 0
        #: stopped with the Stop command: a choice, not a problem, until a start
        self.stopped = False
        self._settings: Settings | None = None
        self._lock = threading.Lock()  # one start or stop at a time

    def settings(self) -> Settings:
        """The user's settings (the proxy is one per user: no folder's settings apply)."""
        if self._settings is None:
            from infinite_context_brain.core.config import load_settings

            self._settings = load_settings()
        return self._settings

    def data_dir(self) -> Path:
        return self.settings().resolved_data_dir()

    def configure(self, options: dict[str, Any]) -> bool:
        """Apply the editor's settings; True when the proxy should now be started."""
        try:
            chosen = endless_options(options)
        except InvalidInput as exc:
            self.options, self.failure = EndlessOptions(), (exc.message, exc.fix)
            return False
        turned_on = chosen.enabled and not self.options.enabled
        self.options = chosen
        if turned_on:
            self.stopped = False
        if not chosen.enabled:
            self.failure = None
        return turned_on

    def ensure(self) -> None:
        """The setting is on: keep a proxy running; a failure is kept for the payload."""
        with self._lock:
            try:
                self._start()
            except InfiniteContextError as exc:
                log.warning("live proxy not started: %s", exc.message, extra={"fix": exc.fix})

    def _start(self) -> None:
        """Start (or find) the proxy; a failure is kept for the payload and raised with the
        editor's fix."""
        from ..proxy.process import ensure_for_editor

        try:
            ensure_for_editor(self.settings(), self.options.port, os.environ.get("ANTHROPIC_BASE_URL"))
        except InfiniteContextError as exc:
            exc.fix = _editor_fix(exc.fix)
            self.failure = (exc.message, exc.fix)
            raise
        self.failure = None
        self.stopped = False

    def act(self, action: str) -> dict[str, Any]:
        """The ``infiniteContext/proxy`` request: ``start`` and ``stop`` act, then every action
        answers with the payload. A start that fails raises (the command shows the message)."""
        from ..proxy import process

        if action == "status":
            return self.payload()
        self.generation += 1  # before and after: a status read that overlaps is dropped
        try:
            with self._lock:
                if action == "start":
                    self._start()
                elif action == "stop":
                    stopped = process.stop(self.data_dir())
                    if stopped.running:
                        raise InvalidInput(
                            "action", f"pid {stopped.pid} did not stop within 5 s", fix="try again"
                        )
                    self.stopped = True
        finally:
            self.generation += 1
        return self.payload()

    def payload(self) -> dict[str, Any]:
        """What the status bar shows (camelCase, shares as fractions 0..1, None when unknown)."""
        from ..proxy.status import LiveSaving, live_saving

        log_path: str | None = None
        try:
            data_dir = self.data_dir()
        except InfiniteContextError as exc:  # a bad INFINITE_CONTEXT_* variable: the bar names it
            self.failure, saving = (exc.message, exc.fix), LiveSaving(running=False)
        else:
            saving, log_path = live_saving(data_dir), str(data_dir / "proxy" / "proxy.log")
        problem, fix = self.failure if self.failure is not None else (None, None)
        starting = self.starting and not saving.running and problem is None
        if problem is None and saving.problem:
            problem, fix = saving.problem, "restart it: Infinite Context: Stop Live Proxy, then Start"
        elif problem is None and self.options.enabled and not (saving.running or starting or self.stopped):
            problem = "the live proxy is not running"
            fix = f"run {START_COMMAND}, or turn off {ENABLED_SETTING}"
        payload = {
            "enabled": self.options.enabled,
            "running": saving.running,
            "starting": starting,
            #: stopped on purpose (the Stop command) and not started since
            "stopped": self.stopped and not saving.running,
            #: the last start failed (or a setting is invalid): the editor says so once
            "startFailed": self.failure is not None,
            "url": saving.url,
            "pid": saving.pid,
            "upstream": saving.upstream,
            "installed": saving.installed,
            "requests": saving.requests,
            "transformed": saving.transformed,
            "epochs": saving.epochs,
            "tokensBefore": saving.tokens_before,
            "tokensAfter": saving.tokens_after,
            "savedTokens": saving.saved_tokens,
            "savedShare": saving.saved_share,
            "lastBefore": saving.last_before,
            "lastAfter": saving.last_after,
            "lastSavedTokens": saving.last_saved_tokens,
            "lastSavedShare": saving.last_saved_share,
            "lastOverheadMs": saving.last_overhead_ms,
            "problem": problem,
            "fix": fix,
            "log": log_path,
            "terminalEnv": self._terminal_env(saving.running, saving.url, saving.upstream),
        }
        payload["tooltip"] = proxy_tooltip(payload)
        return payload

    def _terminal_env(self, running: bool, url: str | None, upstream: str | None) -> dict[str, str]:
        """What the integrated terminals get: the same variables as ``install claude-code
        --endless`` writes, only while the setting is on and the proxy answers (else a Claude Code
        started there could not reach the API)."""
        if not (self.options.enabled and self.options.terminals and running and url):
            return {}
        from ..proxy.wiring import BASE_URL, FIRST_PARTY, first_party

        env = {BASE_URL: url}
        if upstream and first_party(upstream):
            env[FIRST_PARTY] = "1"
        return env


def _editor_fix(fix: str | None) -> str:
    """The process's fix speaks of CLI flags: say it with the editor's setting and command too."""
    base = (fix or "").replace("with --port", f"in {PORT_SETTING}")
    return f"{base}; then {START_COMMAND} (or turn off {ENABLED_SETTING})".lstrip("; ")
