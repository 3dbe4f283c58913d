"""The language server: custom ``infiniteContext/*`` requests, each one ProjectBrain call, and the
``infiniteContext/budget`` notification pushed at start and on every change.

The event loop only reads and writes messages: every store, brain or transcript call runs in
``asyncio.to_thread`` (not pygls's ``@server.thread()`` pool, which also runs the stdin reader: a
few requests stuck on a slow store would stop the server reading, even a cancel). So a long merge
or a slow store never stalls other requests or notifications; a checkpoint reports ``$/progress``
when the client supports it. The budget notification reads ``ProjectBrain.budget()`` (no history,
no file checks), one read per folder at a time, bursts of changes coalesced. Core errors become
JSON-RPC errors in ``_mapped`` only: invalid params (-32602) or the server range (-32000..-32099)
with the message and the fix; anything else is logged with its traceback and answered as an
internal error naming the request, never with the traceback. pygls reads the frames
(``start_io``); those its read loop cannot take are answered by ``frames.Frames`` (see there).

Live endless mode (``proxy.py``): with ``infiniteContext.endless.enabled`` the server starts the
per-user proxy after ``initialized``; ``infiniteContext/proxy`` (status, start, stop) needs no
folder, and ``infiniteContext/proxyStatus`` is pushed when its state or figures change (polled
every 2 s in a worker thread: a file read, plus one loopback GET while it runs).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcServerError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from infinite_context_brain.core.errors import InfiniteContextError, InvalidInput
from infinite_context_brain.core.markdown import display_markdown

from .. import package_version
from ..wire import check_value
from .frames import Frames
from .proxy import ProxyWatch
from .sessions import FolderSession, Sessions

if TYPE_CHECKING:
    from pygls.server import ServerErrors

log = logging.getLogger(__name__)
T = TypeVar("T")
BUDGET = "infiniteContext/budget"
#: pushed when the live proxy's figures or state change (the request of the same state is
#: ``infiniteContext/proxy``)
PROXY_STATUS = "infiniteContext/proxyStatus"
#: notifications the server sends (pygls builds them with this type too)
PUSHED = frozenset({BUDGET, PROXY_STATUS})
METER_POLL_SECONDS = 1.0
#: a file read, plus one GET on loopback while a proxy runs
PROXY_POLL_SECONDS = 2.0
READY_TIMEOUT = 60.0


def _params(raw: Any) -> dict[str, Any]:
    value = raw  # a dict: CustomRequest keeps our params as sent
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput("params", "must be an object", fix='pass e.g. {"folderUri": "file:///..."}')
    # what Python's JSON parser takes but no request of ours may carry (a lone surrogate cannot
    # be stored; Infinity is not JSON)
    problem = check_value({"params": value})
    if problem is not None:
        raise JsonRpcInvalidParams(message=problem.message)
    return value


def _mapped(fn: Callable[[], T], method: str = "request") -> T:
    try:
        return fn()
    except InfiniteContextError as exc:
        data = {"error": type(exc).__name__, "fix": exc.fix}
        if exc.code == -32602:
            raise JsonRpcInvalidParams(message=str(exc), data=data) from None
        code = exc.code if -32099 <= exc.code <= -32000 else -32000
        raise JsonRpcServerError(str(exc), code, data) from None  # type: ignore[no-untyped-call]
    except JsonRpcException:
        raise
    except Exception as exc:  # a bug: the log has the traceback, the client a short message
        log.exception("%s failed", method)
        raise JsonRpcInternalError(
            message=f"{method} failed: internal error ({type(exc).__name__}). Fix: see the "
            "server log (stderr) and report it; other requests still work",
            data={"error": type(exc).__name__},
        ) from None


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
        if method.startswith("infiniteContext/") and method not in PUSHED:
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
        self.proxy = ProxyWatch()
        self.proxy_watcher: asyncio.Task[None] | None = None
        self._proxy_sent: dict[str, Any] | None = None
        self.frames: Frames | None = None

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """pygls's ``start_io``, reading the wire through ``Frames``."""
        out = stdout or sys.stdout.buffer
        self.frames = Frames(stdin or sys.stdin.buffer, out)
        super().start_io(self.frames, out)  # type: ignore[arg-type]  # (pygls calls readline and read)

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        """A frame pygls's read loop could not take gets an error reply; the rest as pygls does."""
        if source is JsonRpcException and self.frames is not None:
            self.frames.refuse(error)
        else:
            super().report_server_error(error, source)

    def push_budget(self, session: FolderSession) -> None:
        """Send the folder's budget notification soon; callable from any thread. The figures are
        read off the event loop; changes that arrive meanwhile cost one more read, not one each."""
        loop = self._loop
        if loop is None:
            return
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self._schedule_budget(session)
        else:
            loop.call_soon_threadsafe(self._schedule_budget, session)

    def _schedule_budget(self, session: FolderSession) -> None:
        if session.pushing is not None:
            session.push_again = True
        else:
            session.pushing = asyncio.ensure_future(self._send_budget(session))

    async def _send_budget(self, session: FolderSession) -> None:
        try:
            while not session.closed:
                session.push_again = False
                try:
                    payload = await asyncio.to_thread(session.budget)
                except InfiniteContextError as exc:
                    log.warning("budget not available: %s", exc.message, extra={"folder": session.uri})
                except Exception:  # a folder closing under the read: the notification is a nicety
                    if not session.closed:
                        log.exception("budget failed", extra={"folder": session.uri})
                else:
                    if not session.closed:
                        self.protocol.notify(BUDGET, payload)
                if not session.push_again:
                    break
        finally:
            session.pushing = None

    def publish_proxy(self, payload: dict[str, Any]) -> None:
        """Push the live proxy's state when it differs from what the client last got (on the
        event loop)."""
        if payload != self._proxy_sent:
            self._proxy_sent = payload
            self.protocol.notify(PROXY_STATUS, payload)

    def _changed(self, session: FolderSession) -> None:
        # Called from the store's change-feed thread.
        self.push_budget(session)


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
                await asyncio.to_thread(_refresh_meter, session)
                ls.push_budget(session)
        ls.ready.set()
        ls.watcher = asyncio.create_task(_watch_transcripts(ls))
        ls.proxy.configure(ls.sessions.options)
        ls.proxy_watcher = asyncio.create_task(_watch_proxy(ls))

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
        if ls.proxy.configure(options if isinstance(options, dict) else {}):
            await asyncio.to_thread(ls.proxy.ensure)
        ls.publish_proxy(await asyncio.to_thread(ls.proxy.payload))

    def request(
        method: str, progress: tuple[str, str] | None = None
    ) -> Callable[[Callable[[FolderSession, dict[str, Any]], Any]], Any]:
        """Register a custom request: resolve the folder and run the handler in a worker thread
        (inside ``$/progress`` if given: title, message with ``{folder}``), core errors mapped."""

        def register(handler: Callable[[FolderSession, dict[str, Any]], Any]) -> Any:
            @server.feature(method)
            async def run(ls: InfiniteContextServer, raw: Any) -> Any:
                if not ls.ready.is_set():
                    await asyncio.to_thread(ls.ready.wait, READY_TIMEOUT)

                def resolve() -> tuple[FolderSession, dict[str, Any]]:
                    from .requests import Request, parse

                    params = _params(raw)
                    return ls.sessions.get(parse(Request, params).folder_uri), params

                # Sessions.get may wait for a folder being opened (a store connecting): a thread too.
                if progress is None:
                    return await asyncio.to_thread(_mapped, lambda: handler(*resolve()), method)
                session, params = await asyncio.to_thread(_mapped, resolve, method)
                title, message = progress
                token = await _begin_progress(ls, title, message.format(folder=session.root.name))
                try:
                    return await asyncio.to_thread(_mapped, lambda: handler(session, params), method)
                finally:
                    _end_progress(ls, token)

            return run

        return register

    @request("infiniteContext/checkpoint", progress=("Checkpoint", "merging into {folder}"))
    def checkpoint(session: FolderSession, params: dict[str, Any]) -> Any:
        from .requests import CheckpointParams, parse

        p = parse(CheckpointParams, params)
        result = session.brain.checkpoint(p.context, p.token_count, origin="editor", wait=False)

        server.push_budget(session)
        return result.model_dump(mode="json")

    @request("infiniteContext/resume")
    def resume(session: FolderSession, params: dict[str, Any]) -> Any:
        from .requests import ResumeParams, parse

        result = session.brain.resume(parse(ResumeParams, params).max_tokens).model_dump(mode="json")
        result["markdown"] = display_markdown(result["markdown"])  # shown in an editor / preview
        return result

    @request("infiniteContext/status")
    def status(session: FolderSession, params: dict[str, Any]) -> Any:
        status_report = session.brain.status()
        report = status_report.model_dump(mode="json")
        report["contextTokens"] = session.meter.get("contextTokens")
        report["contextWindow"] = session.meter.get("contextWindow")
        from ..cli.output import status_md

        report["markdown"] = status_md(status_report)
        return report

    @request("infiniteContext/rollback")
    def rollback(session: FolderSession, params: dict[str, Any]) -> Any:
        from .requests import RollbackParams, parse

        p = parse(RollbackParams, params)
        result = session.brain.rollback(steps=p.steps, version=p.version)
        server.push_budget(session)
        return result.model_dump(mode="json")

    @request("infiniteContext/history")
    def history(session: FolderSession, params: dict[str, Any]) -> Any:
        from .requests import HistoryParams, parse

        limit = parse(HistoryParams, params).limit
        return {"items": [h.model_dump(mode="json") for h in session.brain.history(limit)]}

    @request("infiniteContext/diff")
    def diff(session: FolderSession, params: dict[str, Any]) -> Any:
        from .requests import DiffParams, parse

        p = parse(DiffParams, params)
        return session.brain.diff(p.from_version, p.to_version).model_dump(mode="json")

    @request("infiniteContext/show")
    def show(session: FolderSession, params: dict[str, Any]) -> Any:
        """One version rendered as Markdown (the editor's read-only view and diff of it)."""
        from .requests import ShowParams, parse

        version = parse(ShowParams, params).version
        markdown = session.brain.version_markdown(version).markdown
        return {"version": version, "markdown": display_markdown(markdown)}

    @request("infiniteContext/installClaudeCode")
    def install_claude_code(session: FolderSession, params: dict[str, Any]) -> Any:
        from ..claude_code.install import install_for_claude_code
        from .requests import InstallParams, parse

        p = parse(InstallParams, params)
        report = install_for_claude_code(
            session.root,
            p.scope,
            p.uninstall,
            claude_config_dir=session.brain.settings.claude_config_dir,
            hooks=p.hooks,
        )
        return report.__dict__

    @server.feature("infiniteContext/proxy")
    async def proxy(ls: InfiniteContextServer, raw: Any) -> Any:
        """The live proxy (one per user, no folder needed): ``action`` status, start or stop."""
        if not ls.ready.is_set():
            await asyncio.to_thread(ls.ready.wait, READY_TIMEOUT)

        def run() -> dict[str, Any]:
            from .requests import ProxyParams, parse

            return ls.proxy.act(parse(ProxyParams, _params(raw)).action)

        try:
            payload = await asyncio.to_thread(_mapped, run, "infiniteContext/proxy")
        except JsonRpcException:
            ls.publish_proxy(await asyncio.to_thread(ls.proxy.payload))  # the failure, for the bar
            raise
        ls.publish_proxy(payload)
        return payload

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: InfiniteContextServer, _params: Any) -> None:
        if ls.watcher is not None:
            ls.watcher.cancel()
        if ls.proxy_watcher is not None:
            ls.proxy_watcher.cancel()
        await asyncio.to_thread(ls.sessions.close_all)

    return server


async def _begin_progress(server: InfiniteContextServer, title: str, message: str) -> str | None:
    caps = server.client_capabilities.window
    if caps is None or not caps.work_done_progress:
        return None
    token = f"infinite-context-{uuid.uuid4().hex[:8]}"
    try:
        await asyncio.wait_for(server.work_done_progress.create_async(token), timeout=5)
        server.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message=message))
    except Exception:  # progress is a nicety: the merge goes on without it
        return None
    return token


def _end_progress(server: InfiniteContextServer, token: str | None) -> None:
    if token is not None:
        server.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))


def _refresh_meter(session: FolderSession) -> bool:
    """The live figures of the status item: the transcript's meter, then the memory count."""
    try:
        meter = session.refresh_meter()
    except (OSError, InfiniteContextError) as exc:  # the transcript went away, a bad setting
        log.debug("meter: %s", exc)
        meter = False
    try:
        return session.memory_changed() or meter
    except InfiniteContextError as exc:  # the store is down: the next look tries again
        log.debug("memory usage: %s", exc)
        return meter


async def _watch_transcripts(server: InfiniteContextServer) -> None:
    """Poll each folder's live Claude Code transcript (a stat a second); read what it gained."""
    while True:
        await asyncio.sleep(METER_POLL_SECONDS)
        for session in server.sessions.all():
            if await asyncio.to_thread(_refresh_meter, session):
                server.push_budget(session)


async def _watch_proxy(server: InfiniteContextServer) -> None:
    """Start the proxy if the setting asks for it, then push its state whenever it changes."""
    if server.proxy.options.enabled:
        server.proxy.starting = True
        try:
            server.publish_proxy(await asyncio.to_thread(server.proxy.payload))
            await asyncio.to_thread(server.proxy.ensure)
        finally:
            server.proxy.starting = False
    while True:
        try:
            seen = server.proxy.generation
            payload = await asyncio.to_thread(server.proxy.payload)
            if server.proxy.generation == seen:  # else a start/stop answered meanwhile: newer
                server.publish_proxy(payload)
        except Exception:  # a status bar figure: never let it end the loop
            log.exception("live proxy status failed")
        await asyncio.sleep(PROXY_POLL_SECONDS)
