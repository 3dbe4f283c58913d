"""The language server: custom ``infiniteContext/*`` requests, each one ProjectBrain call, and the
``infiniteContext/budget`` notification pushed at start and on every change.

Blocking work (merges, store reads) runs in pygls's thread pool (``@server.thread()``), so a long
merge never blocks other requests; it reports ``$/progress`` when the client supports it. Core
errors become JSON-RPC errors in ``_mapped`` only: invalid params (-32602) or the server range
(-32000..-32099) with the message and the fix.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcServerError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from infinite_context.core.errors import InfiniteContextError, InvalidInput

from .. import package_version
from .sessions import FolderSession, Sessions

log = logging.getLogger(__name__)
T = TypeVar("T")
BUDGET = "infiniteContext/budget"
METER_POLL_SECONDS = 1.0
READY_TIMEOUT = 60.0


def _params(raw: Any) -> dict[str, Any]:
    value = raw  # a dict: CustomRequest keeps our params as sent
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput("params", "must be an object", fix='pass e.g. {"folderUri": "file:///..."}')
    return value


def _int_param(params: dict[str, Any], name: str, minimum: int = 0) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInput(name, f"must be an integer >= {minimum}", fix=f"pass {name} as a number")
    return value


def _mapped(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except InfiniteContextError as exc:
        data = {"error": type(exc).__name__, "fix": exc.fix}
        if exc.code == -32602:
            raise JsonRpcInvalidParams(message=str(exc), data=data) from None
        code = exc.code if -32099 <= exc.code <= -32000 else -32000
        raise JsonRpcServerError(str(exc), code, data) from None  # type: ignore[no-untyped-call]


@attrs.define
class CustomRequest:
    """Our requests' params stay plain dicts (pygls would make namedtuples of them, which
    cannot hold a key named ``from``)."""

    id: int | str
    method: str
    jsonrpc: str
    params: Any = None


class Protocol(LanguageServerProtocol):
    def get_message_type(self, method: str) -> Any:  # type: ignore[override]
        if method.startswith("infiniteContext/") and method != BUDGET:
            return CustomRequest
        return super().get_message_type(method)


class InfiniteContextServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("infinite-context", package_version(), protocol_cls=Protocol)
        self.sessions = Sessions(self._changed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.init_params: types.InitializeParams | None = None
        # Set once the initial folders are open: requests and folder changes wait for it.
        self.ready = threading.Event()
        self.watcher: asyncio.Task[None] | None = None

    def push_budget(self, session: FolderSession) -> None:
        try:
            payload = session.budget()
        except InfiniteContextError as exc:
            log.warning("budget not available: %s", exc.message, extra={"folder": session.uri})
            return
        self.protocol.notify(BUDGET, payload)

    def _changed(self, session: FolderSession) -> None:
        # Called from the store's change-feed thread: hand over to the event loop.
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.push_budget, session)

    def refresh_meter(self, session: FolderSession) -> bool:
        """Re-measure the folder's live Claude Code transcript if it changed; True if it did."""
        from infinite_context.core.transcript.locate import live_transcript
        from infinite_context.core.transcript.meter import measure

        path = live_transcript(session.root)
        if path is None:
            return False
        mtime = path.stat().st_mtime
        if path == session.transcript and mtime == session.transcript_mtime:
            return False
        meter = measure(path, session.brain.settings.context_window)
        session.transcript, session.transcript_mtime = path, mtime
        session.meter = {"contextTokens": meter.context_tokens, "contextWindow": meter.context_window}
        return True


def build_server() -> InfiniteContextServer:
    server = InfiniteContextServer()

    def open_folder(uri: str) -> FolderSession | None:
        try:
            return server.sessions.open(uri, Path(to_fs_path(uri) or uri))
        except InfiniteContextError as exc:
            log.error("cannot open %s: %s", uri, exc.message, extra={"fix": exc.fix})
            server.window_show_message(
                types.ShowMessageParams(types.MessageType.Error, f"infinite-context: {exc}")
            )
            return None

    @server.feature(types.INITIALIZE)
    def initialize(ls: InfiniteContextServer, params: types.InitializeParams) -> None:
        ls.init_params = params  # folders are opened after the reply, in INITIALIZED

    @server.feature(types.INITIALIZED)
    async def initialized(ls: InfiniteContextServer, _params: types.InitializedParams) -> None:
        ls._loop = asyncio.get_running_loop()
        init = ls.init_params
        options = init.initialization_options if init is not None else None
        ls.sessions.options = options if isinstance(options, dict) else {}
        folders = [f.uri for f in (init.workspace_folders or [])] if init is not None else []
        if not folders and init is not None and init.root_uri:
            folders = [init.root_uri]
        for uri in folders:
            session = await asyncio.to_thread(open_folder, uri)
            if session is not None:
                await asyncio.to_thread(ls.refresh_meter, session)
                ls.push_budget(session)
        ls.ready.set()
        ls.watcher = asyncio.create_task(_watch_transcripts(ls))

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(
        ls: InfiniteContextServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        await asyncio.to_thread(ls.ready.wait, READY_TIMEOUT)
        for removed in params.event.removed:
            await asyncio.to_thread(ls.sessions.close, removed.uri)
        for added in params.event.added:
            session = await asyncio.to_thread(open_folder, added.uri)
            if session is not None:
                ls.push_budget(session)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration_changed(
        ls: InfiniteContextServer, params: types.DidChangeConfigurationParams
    ) -> None:
        await asyncio.to_thread(ls.ready.wait, READY_TIMEOUT)
        settings = params.settings or {}
        options = settings.get("infiniteContext", settings) if isinstance(settings, dict) else {}
        await asyncio.to_thread(ls.sessions.reconfigure, options if isinstance(options, dict) else {})
        for session in ls.sessions.all():
            ls.push_budget(session)

    def request(method: str) -> Callable[[Callable[[FolderSession, dict[str, Any]], Any]], Any]:
        """Register a custom request: resolve the folder, run in the thread pool, map errors."""

        def register(handler: Callable[[FolderSession, dict[str, Any]], Any]) -> Any:
            @server.thread()
            @server.feature(method)
            def run(ls: InfiniteContextServer, raw: Any) -> Any:
                def call() -> Any:
                    ls.ready.wait(READY_TIMEOUT)
                    params = _params(raw)
                    session = ls.sessions.get(params.get("folderUri"))
                    return handler(session, params)

                return _mapped(call)

            return run

        return register

    @request("infiniteContext/checkpoint")
    def checkpoint(session: FolderSession, params: dict[str, Any]) -> Any:
        context = params.get("context")
        if not isinstance(context, str):
            raise InvalidInput("context", "must be a string", fix="pass the text to merge")
        tokens = _int_param(params, "tokenCount")
        token = _begin_progress(server, "Checkpoint", f"merging into {session.root.name}")
        try:
            result = session.brain.checkpoint(context, tokens, wait=False)
        finally:
            _end_progress(server, token)
        server.push_budget(session)
        return result.model_dump(mode="json")

    @request("infiniteContext/resume")
    def resume(session: FolderSession, params: dict[str, Any]) -> Any:
        return session.brain.resume(_int_param(params, "maxTokens", 50)).model_dump(mode="json")

    @request("infiniteContext/status")
    def status(session: FolderSession, params: dict[str, Any]) -> Any:
        report = session.brain.status().model_dump(mode="json")
        report["contextTokens"] = session.meter.get("contextTokens")
        report["contextWindow"] = session.meter.get("contextWindow")
        return report

    @request("infiniteContext/rollback")
    def rollback(session: FolderSession, params: dict[str, Any]) -> Any:
        result = session.brain.rollback(
            steps=_int_param(params, "steps", 1), version=_int_param(params, "version", 1)
        )
        server.push_budget(session)
        return result.model_dump(mode="json")

    @request("infiniteContext/history")
    def history(session: FolderSession, params: dict[str, Any]) -> Any:
        limit = _int_param(params, "limit", 1) or 10
        return {"items": [h.model_dump(mode="json") for h in session.brain.history(limit)]}

    @request("infiniteContext/diff")
    def diff(session: FolderSession, params: dict[str, Any]) -> Any:
        older, newer = _int_param(params, "from", 1), _int_param(params, "to", 1)
        if older is None or newer is None:
            raise InvalidInput("from/to", "both versions are required", fix='pass {"from": 3, "to": 5}')
        return session.brain.diff(older, newer).model_dump(mode="json")

    @request("infiniteContext/installClaudeCode")
    def install_claude_code(session: FolderSession, params: dict[str, Any]) -> Any:
        from infinite_context.core.claude_code import Scope, install

        scope = params.get("scope") or "project"
        if scope not in ("project", "local", "user"):
            raise InvalidInput("scope", f"{scope!r} is not a scope", fix="use project, local or user")
        report = install(session.root, cast(Scope, scope), uninstall=bool(params.get("uninstall")))
        return report.__dict__

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: InfiniteContextServer, _params: Any) -> None:
        ls.sessions.close_all()

    return server


def _begin_progress(server: InfiniteContextServer, title: str, message: str) -> str | None:
    caps = server.client_capabilities.window
    if caps is None or not caps.work_done_progress:
        return None
    token = f"infinite-context-{uuid.uuid4().hex[:8]}"
    try:
        server.work_done_progress.create(token).result(timeout=5)
        server.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message=message))
    except Exception:  # progress is a nicety: the merge goes on without it
        return None
    return token


def _end_progress(server: InfiniteContextServer, token: str | None) -> None:
    if token is not None:
        server.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))


async def _watch_transcripts(server: InfiniteContextServer) -> None:
    """Poll each folder's live Claude Code transcript (a stat a second); re-measure on change."""
    while True:
        await asyncio.sleep(METER_POLL_SECONDS)
        for session in server.sessions.all():
            try:
                changed = await asyncio.to_thread(server.refresh_meter, session)
            except (OSError, InfiniteContextError) as exc:
                log.debug("meter: %s", exc)
                continue
            if changed:
                server.push_budget(session)


def serve() -> None:
    build_server().start_io()
