"""The language server's read loop: pygls's ``run_async`` made robust, so one bad frame costs only
itself (answered with a JSON-RPC error where it had an id), never the stream or a hang.

What pygls 2.1 does and this loop does instead:

* A frame without ``Content-Length`` (or with the header in another case): pygls reads its body
  as a header line, which swallows the next frame's header too, and every frame after that is
  lost. Here a ``Content-Length`` header is found wherever it starts (also right after a
  headerless body, on the same line), the stray text before it is answered as "no
  Content-Length" when it was a request, and the next frame is read normally.
* A body that does not parse, is nested deeper than ``wire.MAX_DEPTH`` (pygls hit
  ``RecursionError`` at ~1000 and logged it), carries a lone surrogate, a non-finite number or
  an integer beyond 64 bits, or whose params do not fit the LSP type: pygls logged and wrote
  nothing, so the client waited forever. Here: an error reply naming the field and the fix.
* A frame over ``MAX_FRAME_BYTES`` is skipped in chunks and answered (id null), not buffered.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

from lsprotocol.types import ResponseError
from pygls.protocol import JsonRPCProtocol

from ..wire import INVALID_PARAMS, INVALID_REQUEST, Problem, check_message, parse_problem, request_id

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 64 * 1024 * 1024
MAX_STRAY_BYTES = 1024 * 1024
CHUNK = 1024 * 1024
_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?\n?$", re.IGNORECASE)
NO_LENGTH = Problem(
    INVALID_REQUEST,
    "message: sent without a Content-Length header. "
    "Fix: frame each message as 'Content-Length: <bytes>\\r\\n\\r\\n<json>'",
)


def reply_error(protocol: JsonRPCProtocol, msg_id: Any, problem: Problem) -> None:
    if (isinstance(msg_id, str) and len(msg_id) > 256) or isinstance(msg_id, bool):
        msg_id = None
    protocol._send_response(msg_id, error=ResponseError(code=problem.code, message=problem.message))


def _stray(protocol: JsonRPCProtocol, stray: bytes) -> None:
    """Text outside any frame: answered if it was a request (it has an id), else logged."""
    text = stray.decode("utf-8", "replace").strip()
    if not text:
        return
    start = text.find("{")  # after any headers that came without a Content-Length
    msg_id = request_id(text[start:]) if start != -1 else None
    log.warning("text outside a Content-Length frame skipped", extra={"bytes": len(stray), "id": msg_id})
    if msg_id is not None:
        reply_error(protocol, msg_id, NO_LENGTH)


def handle_body(protocol: JsonRPCProtocol, body: bytes) -> None:
    """Parse, check and hand one frame's body to pygls; answer what cannot go through."""
    text = body.decode("utf-8", "replace")
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        reply_error(protocol, request_id(text), parse_problem(text))
        return
    problem = check_message(message) if isinstance(message, dict) else parse_problem(text)
    msg_id = message.get("id") if isinstance(message, dict) else None
    if problem is not None:
        reply_error(protocol, msg_id, problem)
        return
    try:
        structured = protocol.structure_message(message)
    except Exception as exc:  # pygls raises JsonRpcInvalidParams / JsonRpcInternalError here
        method = message.get("method", "?")
        cause = exc.__cause__ or exc
        log.warning("params of %s do not fit the LSP type: %s", method, cause)
        if msg_id is not None and "method" in message:
            reply_error(
                protocol,
                msg_id,
                Problem(
                    INVALID_PARAMS,
                    f"params: do not fit the {method} request ({_first_line(cause)}). "
                    "Fix: send params as the LSP specification defines them",
                ),
            )
        return
    try:
        protocol.handle_message(structured)
    except Exception:
        log.exception("could not handle a message")
        if msg_id is not None and "method" in message:
            reply_error(
                protocol,
                msg_id,
                Problem(-32603, "internal error while dispatching the request (logged). Fix: retry"),
            )


def _first_line(exc: BaseException) -> str:
    """cattrs' own summary of what does not fit (``required field missing @ $.params.position``)."""
    try:
        from cattrs import transform_error

        details = transform_error(exc) if isinstance(exc, Exception) else []
    except Exception:
        details = []
    text = "; ".join(details[:3]) if details else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return text[:300]


async def read_loop(stop_event: threading.Event, reader: Any, protocol: JsonRPCProtocol) -> None:
    """Read frames from ``reader`` (pygls's ``StdinAsyncReader``) until EOF or ``stop_event``."""
    length: int | None = None
    stray = b""
    while not stop_event.is_set():
        line: bytes = await reader.readline()
        if not line:
            break
        match = _LENGTH.search(line)
        if match is not None:
            before = line[: match.start()]
            if before.strip() or stray.strip():
                _stray(protocol, stray + before)
            stray = b""
            length = int(match.group(1))
            continue
        if line.strip() == b"":
            if length is None:
                continue  # an empty line outside a frame: nothing to answer
            if length > MAX_FRAME_BYTES:
                await _skip(reader, length)
                reply_error(
                    protocol,
                    None,
                    Problem(
                        INVALID_REQUEST,
                        f"message: {length:,} bytes, over the limit of {MAX_FRAME_BYTES:,}. "
                        "Fix: send smaller requests (checkpoint text is capped far below this)",
                    ),
                )
            else:
                body = await _read_exactly(reader, length)
                if len(body) < length:
                    break  # EOF inside a frame
                handle_body(protocol, body)
            length = None
            continue
        if length is None:
            if len(stray) < MAX_STRAY_BYTES:
                stray += line  # a body sent without a header, or noise: kept to answer it
            continue
        # another header of the current frame (Content-Type): nothing to do


async def _read_exactly(reader: Any, n: int) -> bytes:
    parts: list[bytes] = []
    got = 0
    while got < n:
        chunk: bytes = await reader.readexactly(min(n - got, CHUNK * 16))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


async def _skip(reader: Any, n: int) -> None:
    while n > 0:
        chunk: bytes = await reader.readexactly(min(n, CHUNK))
        if not chunk:
            return
        n -= len(chunk)
