"""One proxy per user: start it detached, stop it, keep it up for the SessionStart hook and for
editors. The proxy itself runs in ``serve``; finding it is ``status``; its port and upstream are
``config``; its files are ``files``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from infinite_context_brain.core.errors import ConfigError

from .config import ProxyConfig, read_config, resolve
from .files import LOG, open_file, private_folder
from .identity import verify
from .status import ProxyStatus, alive, status

if TYPE_CHECKING:
    from infinite_context_brain.core.config import Settings

log = logging.getLogger("infinite_context_brain.hooks")


def start_detached(data_dir: Path, config: ProxyConfig, wait: float = 5.0) -> ProxyStatus:
    """Start a proxy in its own session (it outlives the caller) unless one runs; wait until it
    answers."""
    now = status(data_dir, ask=False)
    if now.running:
        return now
    folder = private_folder(data_dir)
    command = [sys.executable, "-m", "infinite_context_brain.server", "proxy", "run"]
    command += ["--port", str(config.port), "--upstream", config.upstream]
    env = {**os.environ, "INFINITE_CONTEXT_DATA_DIR": str(data_dir)}
    log_fd = open_file(folder / LOG, os.O_WRONLY | os.O_APPEND)
    try:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log_fd,
            start_new_session=True,
            env=env,
            close_fds=True,
        )
    finally:
        os.close(log_fd)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        found = status(data_dir, ask=False)
        if found.running:
            return found
        if child.poll() is not None:  # it exited: another one won the lock, or the port is taken
            raise ConfigError(
                f"the proxy exited at start (code {child.returncode})",
                fix=f"see {folder / LOG}; is port {config.port} taken? set another with --port",
            )
        time.sleep(0.02)
    raise ConfigError(f"the proxy did not answer within {wait:.0f} s", fix=f"see {folder / LOG}")


def stop(data_dir: Path, wait: float = 5.0) -> ProxyStatus:
    now = status(data_dir, ask=False)
    if not now.running or now.pid is None:
        return now
    with contextlib.suppress(ProcessLookupError):
        os.kill(now.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and alive(now.pid) and status(data_dir, ask=False).running:
        time.sleep(0.05)
    return status(data_dir, ask=False)


def ensure_running(data_dir: Path) -> ProxyStatus | None:
    """When endless mode is installed and no proxy runs, start one. None when endless mode is
    not installed (one file check: costs nothing otherwise)."""
    config = read_config(data_dir)
    if config is None:
        return None
    return start_detached(data_dir, resolve(data_dir, config.port, config.upstream))


@dataclass(frozen=True)
class EndlessAdvice:
    """What the SessionStart hook tells Claude Code about the proxy."""

    message: str
    #: Claude Code must not talk to the port: ask it to stop (the strongest a hook can)
    stop: bool


def ensure_for_hook(data_dir: Path) -> EndlessAdvice | None:
    """The SessionStart hook's one call: keep the proxy up when endless mode is installed, and
    make sure the listener on the installed port is this user's proxy. None when all is well (or
    endless mode is not installed); else what to tell the user. Never raises: the session goes on.
    """
    try:
        config = read_config(data_dir)
        if config is None:
            return None
        try:
            running = ensure_running(data_dir)
        except ConfigError as exc:
            running = None
            started = f"{exc.message} ({exc.fix})" if exc.fix else exc.message
        else:
            started = ""
        verdict = verify(data_dir, config.port, running.pid if running is not None else None)
    except Exception as exc:
        log.warning("endless proxy not checked: %s", exc)
        return EndlessAdvice(f"infinite-context: the endless-mode proxy was not checked ({exc})", stop=False)
    if verdict.ours:
        return None
    if verdict.vacant:
        log.warning("endless proxy not running: %s", started or verdict.reason)
        return EndlessAdvice(
            f"infinite-context: the endless-mode proxy is not running ({started or verdict.reason}); "
            "requests to the API will fail until it runs. `infinite-context doctor` says more.",
            stop=False,
        )
    log.error("endless proxy port taken: %s", verdict.reason)
    return EndlessAdvice(
        f"infinite-context: STOP - {verdict.reason}: Claude Code would send your API key to it. "
        "Quit this session; then `infinite-context install claude-code --uninstall --endless` and "
        "`infinite-context install claude-code --endless` choose another port.",
        stop=True,
    )


def ensure_for_editor(
    settings: Settings, port: int | None = None, environ_base_url: str | None = None
) -> ProxyStatus:
    """An editor's setting asks for the proxy: use the running one (one per user, whatever its
    port), else start one. The upstream is the installed one, else ``environ_base_url`` (the
    ``ANTHROPIC_BASE_URL`` the editor was started with, unless it is this proxy), else the API."""
    data_dir = settings.resolved_data_dir()
    now = status(data_dir, ask=False)
    if now.running:
        return now
    upstream = None
    chosen = resolve(data_dir, port, None, settings)
    if read_config(data_dir) is None and not settings.proxy_upstream:
        base = (environ_base_url or "").rstrip("/")
        if base and base != chosen.url:
            upstream = base
    return start_detached(data_dir, resolve(data_dir, chosen.port, upstream, settings))
