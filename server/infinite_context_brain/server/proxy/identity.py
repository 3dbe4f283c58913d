"""Is the listener on the proxy's port this user's proxy? Claude Code sends every request, API key
included, to whatever listens on ``ANTHROPIC_BASE_URL``; another local user who binds that port
first would receive them.

Two checks, both must pass where they apply:

* **The socket's owner** (Linux, from ``/proc/net/tcp{,6}``): the listening socket on the port
  belongs to this user, and to the process in ``proxy.json`` when there is one.
* **A proof on the status route**: the hook sends a fresh random nonce; only a process that knows
  the per-install secret (``proxy.key``, 0600) answers ``HMAC-SHA256(secret, nonce)``. The secret
  itself never travels.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import HOST, STATUS_PATH
from .files import secret

NONCE_HEADER = "x-infinite-context-nonce"
_LISTEN = "0A"


def proof(key: bytes, nonce: str) -> str:
    return hmac.new(key, nonce.encode("ascii", "replace"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Listener:
    uid: int
    inode: int


def listeners(port: int) -> list[Listener] | None:
    """The sockets listening on ``port`` (any address), from ``/proc``; None where there is no
    ``/proc/net/tcp`` (not Linux)."""
    found: list[Listener] = []
    readable = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port:
                found.append(Listener(uid=int(fields[7]), inode=int(fields[9])))
    return found if readable else None


def process_sockets(pid: int) -> set[int] | None:
    """Inodes of the sockets ``pid`` holds open; None when its descriptors cannot be read."""
    inodes: set[int] = set()
    try:
        for entry in os.scandir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(entry.path)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
    except OSError:
        return None
    return inodes


@dataclass(frozen=True)
class Verdict:
    ours: bool
    #: nothing listens: requests fail to connect, nothing leaks
    vacant: bool = False
    reason: str = ""
    figures: dict[str, Any] | None = None


def ask(port: int, nonce: str | None = None, timeout: float = 1.0) -> dict[str, Any] | None:
    """The status route's answer (with the proof of ``nonce`` when one is sent); None when
    nothing answers, or not with JSON."""
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        connection.request("GET", STATUS_PATH, headers={NONCE_HEADER: nonce} if nonce else {})
        reply = connection.getresponse()
        data = json.loads(reply.read()) if reply.status == 200 else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        connection.close()
    return data if isinstance(data, dict) else None


def verify(data_dir: Path, port: int, pid: int | None = None) -> Verdict:
    """Who listens on ``port``: this user's proxy (``ours``), nobody (``vacant``), or someone
    else (``reason`` says who, as far as it can be known)."""
    sockets = listeners(port)
    if sockets is not None:
        if not sockets:
            return Verdict(ours=False, vacant=True, reason=f"nothing listens on port {port}")
        strangers = sorted({s.uid for s in sockets if s.uid != os.getuid()})
        if strangers:
            return Verdict(ours=False, reason=f"port {port} is held by another user (uid {strangers[0]})")
        held = process_sockets(pid) if pid is not None else None
        if held is not None and not any(s.inode in held for s in sockets):
            return Verdict(
                ours=False, reason=f"port {port} is held by another process than the proxy (pid {pid})"
            )
    nonce = secrets.token_hex(16)
    answer = ask(port, nonce)
    if answer is None:
        if sockets is None:
            return Verdict(ours=False, vacant=True, reason=f"nothing answers on port {port}")
        return Verdict(ours=False, reason=f"the listener on port {port} does not answer as the proxy")
    given = answer.get("proof")
    if not isinstance(given, str) or not hmac.compare_digest(given, proof(secret(data_dir), nonce)):
        return Verdict(ours=False, reason=f"the listener on port {port} is not this user's proxy")
    return Verdict(ours=True, figures=answer)
