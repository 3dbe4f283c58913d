"""The proxy's files in ``<data dir>/proxy/``, all private to the user (folder 0700, files 0600):

``config.json`` (port and upstream, written by ``install claude-code --endless``; its presence makes
the SessionStart hook keep a proxy running), ``proxy.lock`` (an exclusive ``flock`` held by the
running proxy), ``proxy.json`` (pid, port, url and upstream of the running proxy, written once its
socket is bound), ``proxy.log`` (a detached proxy's log lines) and ``proxy.key`` (the secret the
proxy proves it knows on its status route, so a hook can tell it from another listener).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from infinite_context_brain.core.errors import ConfigError
from infinite_context_brain.core.files import open_private, private_dir

CONFIG = "config.json"
LOCK = "proxy.lock"
INFO = "proxy.json"
LOG = "proxy.log"
KEY = "proxy.key"


def proxy_dir(data_dir: Path) -> Path:
    return data_dir / "proxy"


def private_folder(data_dir: Path) -> Path:
    """``<data dir>/proxy``, created 0700; refused when another user owns it or may write to it
    (its files steer where Claude Code sends the API key)."""
    folder = private_dir(proxy_dir(data_dir))
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise ConfigError(
            f"{folder} is not a private folder of this user",
            fix=f"remove it (or fix its owner and mode: chmod 700 {folder}), then try again",
        )
    return folder


def open_file(path: Path, flags: int) -> int:
    """A private (0600) file's descriptor; an existing one is tightened."""
    return open_private(path, flags)


def write_private(path: Path, text: str) -> Path:
    """Replace ``path`` with ``text`` as a 0600 file (a temp file renamed into place)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    tmp.replace(path)
    return path


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None


def secret(data_dir: Path) -> bytes:
    """The per-install secret (made on first use)."""
    path = proxy_dir(data_dir) / KEY
    found = read_text(path)
    if found is not None and len(found.strip()) == 64:
        return bytes.fromhex(found.strip())
    private_folder(data_dir)
    value = secrets.token_bytes(32)
    write_private(path, value.hex() + "\n")
    return value
