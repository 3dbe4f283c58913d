"""One proxy per user: run it, start it detached, find it, stop it.

Files in ``<data dir>/proxy/``: ``proxy.lock`` (an exclusive ``flock`` held by the running
proxy, so a second one refuses to start), ``proxy.json`` (pid, port, url, upstream, written once
the port is bound), ``proxy.log`` (a detached proxy's log lines) and ``config.json`` (port and
upstream, written by ``install claude-code --endless``: its presence tells the SessionStart hook
to keep a proxy running).

The upstream is, in order: ``--upstream``, ``INFINITE_CONTEXT_PROXY_UPSTREAM`` (a setting), ``config.json``,
``https://api.anthropic.com``. The proxy's own environment is never read for
``ANTHROPIC_BASE_URL``: under Claude Code that is the proxy itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

from infinite_context_brain.core.errors import ConfigError, InvalidInput

if TYPE_CHECKING:
    from infinite_context_brain.core.config import Settings

DEFAULT_PORT = 8419
DEFAULT_UPSTREAM = "https://api.anthropic.com"
HOST = "127.0.0.1"
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
#: the proxy's own status route (``app`` answers it, ``fetch_status`` asks it)
STATUS_PATH = "/_infinite_context_brain/status"


def proxy_dir(data_dir: Path) -> Path:
    return data_dir / "proxy"


@dataclass(frozen=True)
class ProxyConfig:
    port: int = DEFAULT_PORT
    upstream: str = DEFAULT_UPSTREAM

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


def read_config(data_dir: Path) -> ProxyConfig | None:
    """The installed configuration (None: endless mode not installed)."""
    try:
        raw = json.loads((proxy_dir(data_dir) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    port = raw.get("port")
    upstream = raw.get("upstream")
    return ProxyConfig(
        port=port if isinstance(port, int) and 0 < port < 65536 else DEFAULT_PORT,
        upstream=upstream if isinstance(upstream, str) and upstream else DEFAULT_UPSTREAM,
    )


def write_config(data_dir: Path, config: ProxyConfig) -> Path:
    folder = proxy_dir(data_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / "config.json"
    tmp = folder / f".config.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"port": config.port, "upstream": config.upstream}, indent=2) + "\n")
    tmp.replace(path)
    return path


def remove_config(data_dir: Path) -> bool:
    path = proxy_dir(data_dir) / "config.json"
    existed = path.exists()
    path.unlink(missing_ok=True)
    return existed


def check_upstream(upstream: str, port: int) -> str:
    """A usable upstream URL, never the proxy itself (a loop)."""
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(
            "upstream", f"{upstream!r} is not an http(s) URL", fix="pass e.g. https://api.anthropic.com"
        )
    default_port = 443 if parts.scheme == "https" else 80
    if parts.hostname in LOCAL_HOSTS and (parts.port or default_port) == port:
        raise InvalidInput(
            "upstream",
            f"{upstream} is this proxy itself",
            fix=f"pass the real API (e.g. {DEFAULT_UPSTREAM}) with --upstream",
        )
    return upstream.rstrip("/")


def resolve(
    data_dir: Path, port: int | None = None, upstream: str | None = None, settings: Settings | None = None
) -> ProxyConfig:
    """Port and upstream: the given ones, else the ``proxy_port`` / ``proxy_upstream`` settings,
    else the installed ``config.json``, else the defaults."""
    installed = read_config(data_dir) or ProxyConfig()
    chosen_port = port or (settings.proxy_port if settings else None) or installed.port
    chosen = upstream or (settings.proxy_upstream if settings else None) or installed.upstream
    return ProxyConfig(port=chosen_port, upstream=check_upstream(chosen, chosen_port))


# ---- the running proxy ---------------------------------------------------------------------------
@dataclass
class ProxyStatus:
    running: bool
    pid: int | None = None
    url: str | None = None
    upstream: str | None = None
    installed: bool = False
    figures: dict[str, Any] | None = None
    problem: str | None = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _held(lock_path: Path) -> bool:
    """True when some process holds the proxy lock."""
    try:
        handle = open(lock_path, "a+b")  # noqa: SIM115 - released below
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        handle.close()
    return False


def fetch_status(url: str, timeout: float = 1.0) -> dict[str, Any] | None:
    import urllib.request  # here: the SessionStart hook imports this module on every session

    try:
        with urllib.request.urlopen(url + STATUS_PATH, timeout=timeout) as reply:
            data = json.loads(reply.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def status(data_dir: Path, ask: bool = True) -> ProxyStatus:
    folder = proxy_dir(data_dir)
    installed = (folder / "config.json").exists()
    try:
        info = json.loads((folder / "proxy.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        info = None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return ProxyStatus(running=False, installed=installed)
    pid, url = info["pid"], str(info.get("url") or "")
    if not _alive(pid) or not _held(folder / "proxy.lock"):
        return ProxyStatus(running=False, pid=pid, installed=installed, problem="stale pid file")
    figures = fetch_status(url) if ask else None
    return ProxyStatus(
        running=True,
        pid=pid,
        url=url,
        upstream=info.get("upstream"),
        installed=installed,
        figures=figures,
        problem=None
        if figures is not None or not ask
        else f"pid {pid} holds the lock but {url} does not answer",
    )


def _port_open(port: int, timeout: float = 0.2) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        return probe.connect_ex((HOST, port)) == 0


def serve(data_dir: Path, config: ProxyConfig, settings: Settings) -> int:
    """Run the proxy in this process until SIGINT/SIGTERM; 1 when one already runs."""
    import logging

    import uvicorn

    from infinite_context_brain.core.transcript.live import LiveTransformer

    from .app import ProxyApp
    from .store import live_options, store_bridge

    folder = proxy_dir(data_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = open(folder / "proxy.lock", "a+b")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.stderr.write(f"error: a proxy already runs for this user (see {folder / 'proxy.json'})\n")
        return 1
    bridge = store_bridge(settings)
    transformer = LiveTransformer(
        options=live_options(settings), lookup=bridge.lookup, persist=bridge.persist
    )
    app = ProxyApp(config.upstream, transformer, timeout=settings.proxy_timeout)
    server = uvicorn.Server(
        uvicorn.Config(
            app, host=HOST, port=config.port, log_level="warning", access_log=False, lifespan="on", http="h11"
        )
    )
    info = folder / "proxy.json"

    async def run() -> None:
        await server.serve()

    import asyncio

    original_startup = server.startup

    async def startup(sockets: Any = None) -> None:
        await original_startup(sockets=sockets)
        if server.started:
            data = {"pid": os.getpid(), "port": config.port, "url": config.url, "upstream": config.upstream}
            data["started_at"] = time.time()
            tmp = folder / f".proxy.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(data) + "\n")
            tmp.replace(info)
            logging.getLogger("infinite_context_brain.proxy").info(
                "proxy listening on %s, upstream %s", config.url, config.upstream
            )

    server.startup = startup  # type: ignore[method-assign]
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then raises the signal again for the
    # handler that was there before: make that one a clean exit, so the files below are cleaned.
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        asyncio.run(run())
    finally:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(info.read_text()).get("pid") == os.getpid():
                info.unlink()
        bridge.close()
        lock.close()
        signal.signal(signal.SIGTERM, previous)
    return 0 if server.started else 1


def start_detached(data_dir: Path, config: ProxyConfig, wait: float = 5.0) -> ProxyStatus:
    """Start a proxy in its own session (it outlives the caller) unless one runs; wait until it
    answers."""
    now = status(data_dir, ask=False)
    if now.running:
        return now
    folder = proxy_dir(data_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    command = [sys.executable, "-m", "infinite_context_brain.server", "proxy", "run"]
    command += ["--port", str(config.port), "--upstream", config.upstream]
    env = {**os.environ, "INFINITE_CONTEXT_DATA_DIR": str(data_dir)}
    log_file: IO[bytes] = open(folder / "proxy.log", "ab")  # noqa: SIM115 - handed to the child
    with log_file:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
            start_new_session=True,
            env=env,
            close_fds=True,
        )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if child.poll() is not None:  # it exited: another one won the lock, or the port is taken
            found = status(data_dir, ask=False)
            if found.running:
                return found
            raise ConfigError(
                f"the proxy exited at start (code {child.returncode})",
                fix=f"see {folder / 'proxy.log'}; is port {config.port} taken? set another with --port",
            )
        if _port_open(config.port) and (found := status(data_dir, ask=False)).running:
            return found
        time.sleep(0.05)
    raise ConfigError(f"the proxy did not answer within {wait:.0f} s", fix=f"see {folder / 'proxy.log'}")


def stop(data_dir: Path, wait: float = 5.0) -> ProxyStatus:
    now = status(data_dir, ask=False)
    if not now.running or now.pid is None:
        return now
    with contextlib.suppress(ProcessLookupError):
        os.kill(now.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and _alive(now.pid) and status(data_dir, ask=False).running:
        time.sleep(0.05)
    return status(data_dir, ask=False)


def ensure_running(data_dir: Path) -> ProxyStatus | None:
    """For the SessionStart hook: when endless mode is installed and no proxy runs, start one.
    None when endless mode is not installed (one file check: costs nothing otherwise)."""
    config = read_config(data_dir)
    if config is None:
        return None
    return start_detached(data_dir, resolve(data_dir, config.port, config.upstream))


def ensure_for_hook(data_dir: Path) -> None:
    """The SessionStart hook's one call: keep the proxy up when endless mode is installed; a
    failure is logged, never raised (the session goes on; Claude Code then reports the API
    unreachable, and ``doctor`` says why)."""
    import logging

    try:
        ensure_running(data_dir)
    except Exception as exc:
        logging.getLogger("infinite_context_brain.hooks").warning("endless proxy not started: %s", exc)


# ---- for editors ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class LiveSaving:
    """The running proxy's saving as an editor shows it: tool-result tokens received and
    forwarded, for the last transformed request and summed since the proxy started."""

    running: bool
    url: str | None = None
    pid: int | None = None
    upstream: str | None = None
    installed: bool = False
    requests: int = 0
    transformed: int = 0
    epochs: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    last_before: int = 0
    last_after: int = 0
    last_overhead_ms: float = 0.0
    problem: str | None = None

    @property
    def saved_tokens(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)

    @property
    def saved_share(self) -> float | None:
        """None before any tool-result token went through (nothing to compare yet)."""
        return self.saved_tokens / self.tokens_before if self.tokens_before else None

    @property
    def last_saved_tokens(self) -> int:
        return max(0, self.last_before - self.last_after)

    @property
    def last_saved_share(self) -> float | None:
        return self.last_saved_tokens / self.last_before if self.last_before else None


def _count(figures: dict[str, Any], key: str) -> int:
    value = figures.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def live_saving(data_dir: Path) -> LiveSaving:
    """``status`` with the proxy's running figures read into fields (one local GET when it runs)."""
    found = status(data_dir)
    figures = found.figures or {}
    overhead = figures.get("last_overhead_ms")
    return LiveSaving(
        running=found.running,
        url=found.url,
        pid=found.pid if found.running else None,
        upstream=found.upstream,
        installed=found.installed,
        requests=_count(figures, "requests"),
        transformed=_count(figures, "transformed"),
        epochs=_count(figures, "epochs"),
        tokens_before=_count(figures, "tokens_before"),
        tokens_after=_count(figures, "tokens_after"),
        last_before=_count(figures, "last_before"),
        last_after=_count(figures, "last_after"),
        last_overhead_ms=float(overhead) if isinstance(overhead, (int, float)) else 0.0,
        problem=found.problem if found.running else None,
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
    if read_config(data_dir) is None and not settings.proxy_upstream:
        base = (environ_base_url or "").rstrip("/")
        chosen_port = port or settings.proxy_port or DEFAULT_PORT
        if base and base != ProxyConfig(port=chosen_port).url:
            upstream = base
    return start_detached(data_dir, resolve(data_dir, port, upstream, settings))
