"""Which port the proxy listens on and which upstream it forwards to.

The port is chosen per user at install (a free one at random in ``PORT_RANGE``, below the kernel's
ephemeral ports), not one fixed number any local user could bind first; ``doctor`` and the
SessionStart hook check that the listener there is this user's proxy (``identity``).

The upstream is, in order: ``--upstream``, ``INFINITE_CONTEXT_PROXY_UPSTREAM`` (a setting),
``config.json``, ``https://api.anthropic.com``. The proxy's own environment is never read for
``ANTHROPIC_BASE_URL``: under Claude Code that is the proxy itself. A gateway's password in the
upstream URL is used, never shown (``shown_upstream``).
"""

from __future__ import annotations

import json
import random
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from infinite_context_brain.core.errors import InvalidInput

from .files import CONFIG, private_folder, proxy_dir, read_text, write_private

if TYPE_CHECKING:
    from infinite_context_brain.core.config import Settings

DEFAULT_UPSTREAM = "https://api.anthropic.com"
HOST = "127.0.0.1"
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
#: where a port is chosen: registered-port space below Linux's ephemeral range (32768-60999)
PORT_RANGE = (20000, 32000)
#: the proxy's own status route (``app`` answers it, ``status`` asks it)
STATUS_PATH = "/_infinite_context_brain/status"


@dataclass(frozen=True)
class ProxyConfig:
    port: int
    upstream: str = DEFAULT_UPSTREAM

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


def free_port(rng: random.Random | None = None) -> int:
    """A port in ``PORT_RANGE`` nothing listens on now, picked at random."""
    pick = rng or random.SystemRandom()
    for _ in range(200):
        port = pick.randrange(*PORT_RANGE)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((HOST, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:  # a crowded range: any free one
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def read_config(data_dir: Path) -> ProxyConfig | None:
    """The installed configuration (None: endless mode not installed)."""
    text = read_text(proxy_dir(data_dir) / CONFIG)
    try:
        raw = json.loads(text) if text is not None else None
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    port = raw.get("port")
    upstream = raw.get("upstream")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        return None
    return ProxyConfig(
        port=port, upstream=upstream if isinstance(upstream, str) and upstream else DEFAULT_UPSTREAM
    )


def write_config(data_dir: Path, config: ProxyConfig) -> Path:
    folder = private_folder(data_dir)
    text = json.dumps({"port": config.port, "upstream": config.upstream}, indent=2) + "\n"
    return write_private(folder / CONFIG, text)


def remove_config(data_dir: Path) -> bool:
    path = proxy_dir(data_dir) / CONFIG
    existed = path.exists()
    path.unlink(missing_ok=True)
    return existed


def check_upstream(upstream: str, port: int) -> str:
    """A usable upstream URL, never the proxy itself (a loop)."""
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(
            "upstream",
            f"{shown_upstream(upstream)!r} is not an http(s) URL",
            fix="pass e.g. https://api.anthropic.com",
        )
    if parts.query or parts.fragment:
        raise InvalidInput(
            "upstream",
            "has a query or a fragment",
            fix="pass the API's base URL, e.g. https://api.anthropic.com",
        )
    default_port = 443 if parts.scheme == "https" else 80
    if parts.hostname in LOCAL_HOSTS and (parts.port or default_port) == port:
        raise InvalidInput(
            "upstream",
            f"{shown_upstream(upstream)} is this proxy itself",
            fix=f"pass the real API (e.g. {DEFAULT_UPSTREAM}) with --upstream",
        )
    return upstream.rstrip("/")


def shown_upstream(upstream: str) -> str:
    """The upstream as it may be shown and logged: without user name and password."""
    parts = urlsplit(upstream)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = (
        host + (f":{parts.port}" if parts.port else "") if parts.hostname else parts.netloc.rpartition("@")[2]
    )
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def resolve(
    data_dir: Path, port: int | None = None, upstream: str | None = None, settings: Settings | None = None
) -> ProxyConfig:
    """Port and upstream: the given ones, else the ``proxy_port`` / ``proxy_upstream`` settings,
    else the installed ``config.json``, else a free port and the Anthropic API."""
    installed = read_config(data_dir)
    chosen_port = (
        port
        or (settings.proxy_port if settings else None)
        or (installed.port if installed else None)
        or free_port()
    )
    chosen = (
        upstream
        or (settings.proxy_upstream if settings else None)
        or (installed.upstream if installed else DEFAULT_UPSTREAM)
    )
    return ProxyConfig(port=chosen_port, upstream=check_upstream(chosen, chosen_port))
