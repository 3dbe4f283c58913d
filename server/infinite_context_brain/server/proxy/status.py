"""Find the running proxy and read its figures: for ``proxy status``, ``doctor`` and editors.

The running proxy is the process in ``proxy.json`` that holds ``proxy.lock``; its figures come from
its status route, with the proof that the listener on its port is this user's proxy
(``identity``): a status that cannot be proved is a problem, never figures.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import read_config
from .files import CONFIG, INFO, LOCK, proxy_dir, read_text
from .identity import verify


@dataclass
class ProxyStatus:
    running: bool
    pid: int | None = None
    url: str | None = None
    upstream: str | None = None
    installed: bool = False
    figures: dict[str, Any] | None = None
    problem: str | None = None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def held(lock_path: Path) -> bool:
    """True when some process holds the proxy lock."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def running_info(data_dir: Path) -> dict[str, Any] | None:
    """``proxy.json`` of a proxy that is running now, else None."""
    folder = proxy_dir(data_dir)
    text = read_text(folder / INFO)
    try:
        info = json.loads(text) if text is not None else None
    except ValueError:
        return None
    if (
        not isinstance(info, dict)
        or not isinstance(info.get("pid"), int)
        or not isinstance(info.get("port"), int)
    ):
        return None
    if not alive(info["pid"]) or not held(folder / LOCK):
        return None
    return info


def status(data_dir: Path, ask: bool = True) -> ProxyStatus:
    installed = (proxy_dir(data_dir) / CONFIG).exists()
    info = running_info(data_dir)
    if info is None:
        return ProxyStatus(running=False, installed=installed)
    pid, port = info["pid"], info["port"]
    found = ProxyStatus(
        running=True,
        pid=pid,
        url=str(info.get("url") or ""),
        upstream=info.get("upstream"),
        installed=installed,
    )
    if ask:
        verdict = verify(data_dir, port, pid)
        if verdict.ours:
            found.figures = {k: v for k, v in (verdict.figures or {}).items() if k != "proof"}
        else:
            found.problem = f"pid {pid} holds the lock, but {verdict.reason}"
    return found


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
        installed=found.installed or read_config(data_dir) is not None,
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
