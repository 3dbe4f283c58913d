"""What a request must be to be served: the rules of a local service that lets no one else in.

* **Origin-form request-targets only** (``/path?query``, RFC 9112 3.2.1): an absolute URL, an
  authority, ``*``, a target not starting with a single ``/`` or holding ``.``/``..`` segments is
  refused; the upstream URL is the upstream's with the target's path appended by the URL library.
* **Only loopback ``Host`` names with our port** (``127.0.0.1``, ``localhost``, ``[::1]``): a page
  that rebinds its own name to 127.0.0.1 sends its own name.
* **No browser**: any request with an ``Origin`` header (every cross-site POST a page can make has
  one; Claude Code's clients send none).
Refusals use the Messages API's error shape, so a client shows them as it shows the API's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import orjson

if TYPE_CHECKING:
    import httpx2


@dataclass(frozen=True)
class Refusal:
    status: int
    kind: str
    message: str

    def body(self) -> bytes:
        return error_body(self.kind, self.message)


def error_body(kind: str, message: str) -> bytes:
    """An error in the Messages API's own shape."""
    return orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})


def allowed_hosts(port: int) -> frozenset[bytes]:
    return frozenset(f"{name}:{port}".encode() for name in ("127.0.0.1", "localhost", "[::1]"))


def screen(scope: dict[str, Any], hosts: frozenset[bytes]) -> Refusal | None:
    """A refusal for a request that breaks one of the rules above, else None."""
    raw = scope.get("raw_path") or b""
    if not origin_form(raw) or scope.get("method") == "CONNECT":
        return Refusal(400, "invalid_request_error", "the request-target must be a path starting with /")
    host = None
    origin = False
    for name, value in scope.get("headers") or []:
        if name == b"host":
            if host is not None:
                return Refusal(400, "invalid_request_error", "more than one Host header")
            host = value.lower()
        elif name == b"origin":
            origin = True
    if host not in hosts:
        return Refusal(403, "permission_error", "this local proxy serves only 127.0.0.1, localhost and [::1]")
    if origin:
        return Refusal(403, "permission_error", "requests from web pages are not served")
    return None


def origin_form(raw_path: bytes) -> bool:
    """``raw_path`` (the target before ``?``) is an absolute path: one leading ``/``, no dot
    segments (encoded ones included), no backslash or control characters."""
    if not raw_path.startswith(b"/") or raw_path.startswith(b"//"):
        return False
    try:
        text = unquote(raw_path.decode("ascii"), errors="strict")
    except (UnicodeDecodeError, ValueError):
        return False
    if any(c in text for c in "\\\x00\r\n\t") or "//" in text:
        return False
    return not any(segment in (".", "..") for segment in text.split("/"))


def upstream_url(base: httpx2.URL, raw_path: bytes, query: bytes) -> httpx2.URL:
    """The upstream URL of a screened request: the base's path, then the request's path and
    query, set as URL components (never joined as strings)."""
    path = base.raw_path.rstrip(b"/") + raw_path
    return base.copy_with(raw_path=path + (b"?" + query if query else b""))
