"""Local fake HTTP servers that speak the Gemini and Anthropic wire formats, so the real SDKs
(google-genai, anthropic) are exercised end to end. Each records every request (path, headers,
body) and answers from a script: a list of steps consumed in order, the last one repeating."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A step: ("ok", answer_text_builder) | ("status", code) | ("status", (code, headers)) | ("hang", seconds)
Step = tuple[str, Any]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes
    at: float = 0.0  # time.monotonic() when it arrived


@dataclass
class FakeProvider:
    kind: str  # "gemini" | "anthropic"
    steps: list[Step] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""

    def prompt_of(self, body: dict[str, Any]) -> str:
        if self.kind == "gemini":
            return "".join(p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []))
        return "".join(
            m["content"]
            if isinstance(m["content"], str)
            else "".join(b.get("text", "") for b in m["content"])
            for m in body.get("messages", [])
        )

    def next_step(self) -> Step:
        return self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]


def session_id_in(prompt: str) -> str:
    match = re.search(r"Keep `meta.session_id` exactly as it is: (\S+)\.", prompt)
    return match.group(1) if match else "unknown"


def old_state_in(prompt: str) -> dict[str, Any]:
    block = prompt.split("OLD STATE:\n", 1)[1].split("\n\nEARLIER NOTES", 1)[0]
    return json.loads(block)  # type: ignore[no-any-return]


def section_in(prompt: str, title: str) -> str:
    """One titled part of the merge prompt ("THE TEXT AS WRITTEN", "NEW FACTS (since ...)")."""
    rest = prompt.split(f"\n{title}", 1)[1].split(":\n", 1)[1]
    return re.split(r"\n\n[A-Z][A-Z ]+(?: \([^)]*\))?:\n", rest, maxsplit=1)[0]


def good_answer(task: str) -> Callable[[str], str]:
    """An answer a well-behaved model would give: the old state with a new current task."""

    def build(prompt: str) -> str:
        state = old_state_in(prompt)
        state["meta"]["session_id"] = session_id_in(prompt)
        state["active_context"]["current_task"] = task
        state["project_context"]["overview"] = "merged by a fake model"
        return json.dumps(state)

    return build


def _error_body(kind: str, code: int) -> dict[str, Any]:
    if kind == "gemini":
        status = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED"}.get(
            code, "INTERNAL"
        )
        return {"error": {"code": code, "message": f"fake error {code}", "status": status}}
    etype = {401: "authentication_error", 429: "rate_limit_error", 400: "invalid_request_error"}.get(
        code, "api_error"
    )
    return {"type": "error", "error": {"type": etype, "message": f"fake error {code}"}}


def _ok_body(kind: str, text: str) -> dict[str, Any]:
    if kind == "gemini":
        return {
            "candidates": [
                {"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20},
            "modelVersion": "fake",
        }
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "fake",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


@contextmanager
def serve_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free local port in a background thread; yields the base URL and
    shuts the server down on leaving the block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    # serve_forever checks for shutdown() every poll_interval (0.5 s by default): each test would
    # wait that long on leaving the block.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def fake_provider(kind: str, steps: list[Step]) -> Iterator[FakeProvider]:
    provider = FakeProvider(kind, list(steps))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw or b"{}")
            with lock:
                provider.requests.append(Recorded(self.path, dict(self.headers), body, raw, time.monotonic()))
                step = provider.next_step()
            action, arg = step
            if action == "hang":
                time.sleep(arg)
                return
            headers: dict[str, str] = {}
            if action == "status":
                code, headers = arg if isinstance(arg, tuple) else (arg, {})
                payload = _error_body(kind, code)
            else:
                payload, code = _ok_body(kind, arg(provider.prompt_of(body)) if callable(arg) else arg), 200
            data = json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    with serve_http(Handler) as url:
        provider.url = url
        yield provider
