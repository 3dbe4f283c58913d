"""The frames pygls's read loop leaves unanswered, answered.

pygls 2 reads each frame and hands its body to ``json.loads`` with its message types. When that
fails (not JSON, nested deeper than Python's parser goes, params that do not fit the LSP type of
the method) it logs the error, tells ``LanguageServer.report_server_error`` (source
``JsonRpcException``) and writes nothing: the client waits for an answer that never comes. A frame
sent without its ``Content-Length`` header costs more: pygls reads the next frame's header as part
of that body, and from then on every frame.

``Frames.stdin`` is what pygls reads stdin through (``start_io(stdin=...)``): every byte passes,
but the last body read is kept (so ``refuse`` can answer the request it held, by its id), and a
``Content-Length`` header that follows a headerless body on the same line is handed to pygls on
its own (the body before it is answered as sent without a header). Replies are whole frames
written in one call on the stdout pygls writes to, so they never interleave with its own.
``tests/server/test_protocol_faults.py`` pins the pygls behaviour this works around.
"""

from __future__ import annotations

import json
import logging
import re
from typing import BinaryIO

from cattrs import transform_error
from pygls.exceptions import JsonRpcInvalidParams

from ..wire import INVALID_PARAMS, INVALID_REQUEST, MAX_ID_CHARS, Problem, parse_problem, request_id

log = logging.getLogger(__name__)
#: the header pygls reads (``^Content-Length: (\d+)\r\n$``), found after other text on a line
_HEADER = re.compile(rb"Content-Length: \d+\r\n$")
NO_LENGTH = Problem(
    INVALID_REQUEST,
    "message: sent without a Content-Length header. "
    "Fix: frame each message as 'Content-Length: <bytes>\\r\\n\\r\\n<json>'",
)


class Frames:
    """The wire as pygls reads it, and error replies for what it could not take."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self._stdin, self._stdout = stdin, stdout
        #: the last body pygls read: the one its read loop failed on when ``refuse`` is called
        self.body = b""

    # ---- what pygls reads (``StdinAsyncReader`` calls these in a worker thread) -------------
    def readline(self) -> bytes:
        line = self._stdin.readline()
        header = _HEADER.search(line)
        if header is not None and header.start() > 0:
            self._stray(line[: header.start()])
            return line[header.start() :]
        return line

    def read(self, size: int) -> bytes:
        self.body = self._stdin.read(size)
        return self.body

    # ---- answers -----------------------------------------------------------------------------
    def refuse(self, error: Exception) -> None:
        """Answer the body pygls's read loop failed on with ``error``."""
        text = self.body.decode("utf-8", "replace")
        msg_id = request_id(text)
        if isinstance(error, JsonRpcInvalidParams) and error.__cause__ is not None:
            method = _method(text)
            log.warning("params of %s do not fit the LSP type: %s", method, error.__cause__)
            problem = Problem(
                INVALID_PARAMS,
                f"params: do not fit the {method} request ({_detail(error.__cause__)}). "
                "Fix: send params as the LSP specification defines them",
            )
            if msg_id is not None:  # a notification gets no reply
                self.reply(msg_id, problem)
            return
        problem = parse_problem(text)
        log.warning("refused a frame: %s", problem.message, extra={"id": msg_id})
        self.reply(msg_id, problem)

    def reply(self, msg_id: int | str | None, problem: Problem) -> None:
        if isinstance(msg_id, str) and len(msg_id) > MAX_ID_CHARS:
            msg_id = None
        error = {"code": problem.code, "message": problem.message}
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": error}).encode()
        self._stdout.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        self._stdout.flush()

    def _stray(self, text: bytes) -> None:
        """Text outside any frame: answered if it was a request (it has an id), else logged."""
        start = text.find(b"{")  # after any headers that came without a Content-Length
        msg_id = request_id(text[start:].decode("utf-8", "replace")) if start != -1 else None
        log.warning("text outside a Content-Length frame skipped", extra={"bytes": len(text), "id": msg_id})
        if msg_id is not None:
            self.reply(msg_id, NO_LENGTH)


def _method(text: str) -> str:
    try:
        method = json.loads(text).get("method")
    except (ValueError, AttributeError, RecursionError):
        return "?"
    return method if isinstance(method, str) else "?"


def _detail(cause: BaseException) -> str:
    """cattrs' own summary of what does not fit (``required field missing @ $.params.position``)."""
    details = transform_error(cause) if isinstance(cause, Exception) else []
    return ("; ".join(details[:3]) or type(cause).__name__)[:300]
