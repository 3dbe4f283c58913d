"""A scripted fake of the Anthropic Messages API, for driving the real Claude Code CLI.

Claude Code (``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT``) sends ``POST /v1/messages`` with
``stream: true`` and ``POST /v1/messages/count_tokens``; nothing else matters (one ``HEAD /``).
The main conversation is the request whose ``tools`` include ``Bash``; its next action is chosen
from the request alone (how many tool_use blocks the history already holds), so a run is
reproducible. Other requests (titles, summaries) get a short text answer. Replies stream as the
real API does: message_start, content_block_start / delta / stop, message_delta, message_stop.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .fake_providers import serve_http


@dataclass
class Step:
    """One assistant turn: a tool call, or (``tool`` None) a final text answer."""

    tool: str | None = None
    input: dict[str, Any] = field(default_factory=dict)
    text: str = ""


@dataclass
class FakeAnthropic:
    script: list[Step]
    #: tool_use ids are ``toolu_<tag><index>``: a tag per session keeps them apart in one store
    tag: str = "fake"
    #: scripts by the words of the turn's prompt (an interactive session has several turns);
    #: a prompt none of them names plays ``script``
    by_prompt: dict[str, list[Step]] = field(default_factory=dict)
    #: the context each main reply reports in its usage (0: a small one that grows by 300 a step)
    context_tokens: int = 0
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: tool_use ids given out: a later turn's script starts at index 0 again, but ids stay unique
    issued: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def main_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if _is_main(r)]

    def script_for(self, body: dict[str, Any]) -> list[Step]:
        prompt = prompt_of(body)
        return next((steps for words, steps in self.by_prompt.items() if words in prompt), self.script)


def prompt_of(body: dict[str, Any]) -> str:
    """The person's latest prompt in a request: the last user text that is not one of Claude
    Code's own wrappers (``<system-reminder>``, ``<command-name>``, ...) or a tool result."""
    texts = [t for message in body.get("messages") or [] for t in _human_texts(message)]
    return texts[-1] if texts else ""


def _is_main(body: dict[str, Any]) -> bool:
    return any(isinstance(t, dict) and t.get("name") == "Bash" for t in body.get("tools") or [])


def _human_texts(message: dict[str, Any]) -> list[str]:
    """A user message's texts a person typed (not Claude Code's wrappers, not tool results)."""
    if message.get("role") != "user":
        return []
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    texts = (b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    return [t for t in texts if isinstance(t, str) and t.strip() and not t.lstrip().startswith("<")]


def _tool_uses(body: dict[str, Any]) -> int:
    """Tool uses since the turn's prompt (the script's position in this turn)."""
    count = 0
    for message in body.get("messages") or []:
        content = message.get("content")
        if _human_texts(message):
            count = 0
        elif message.get("role") == "assistant" and isinstance(content, list):
            count += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use")
    return count


def _events(
    step: Step, index: int, tag: str = "fake", context_tokens: int = 0, tool_id: str = ""
) -> Iterator[tuple[str, dict[str, Any]]]:
    message = {
        "id": f"msg_fake_{index}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": (context_tokens or 1200) + 300 * index, "output_tokens": 1},
    }
    yield "message_start", {"type": "message_start", "message": message}
    block = 0
    if step.text:
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": block, "content_block": {"type": "text", "text": ""}},
        )
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": block,
                "delta": {"type": "text_delta", "text": step.text},
            },
        )
        yield "content_block_stop", {"type": "content_block_stop", "index": block}
        block += 1
    if step.tool:
        start = {
            "type": "tool_use",
            "id": tool_id or f"toolu_{tag}{index:04d}",
            "name": step.tool,
            "input": {},
        }
        yield "content_block_start", {"type": "content_block_start", "index": block, "content_block": start}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(step.input)}
        yield "content_block_delta", {"type": "content_block_delta", "index": block, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": block}
    stop = "tool_use" if step.tool else "end_turn"
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
    )
    yield "message_stop", {"type": "message_stop"}


@contextmanager
def fake_anthropic(
    script: list[Step],
    tag: str = "fake",
    by_prompt: dict[str, list[Step]] | None = None,
    context_tokens: int = 0,
) -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic(script=script, tag=tag, by_prompt=by_prompt or {}, context_tokens=context_tokens)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with fake.lock:
                fake.requests.append(body)
            if self.path.startswith("/v1/messages/count_tokens"):
                payload = json.dumps({"input_tokens": len(json.dumps(body)) // 4}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            context = 0
            if _is_main(body):
                script = fake.script_for(body)
                index = _tool_uses(body)
                step = script[min(index, len(script) - 1)]
                context = fake.context_tokens
            else:
                index, step = 0, Step(text="Fake session")
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            tool_id = ""
            if step.tool:
                with fake.lock:
                    tool_id = f"toolu_{fake.tag}{index:04d}"
                    while tool_id in fake.issued:
                        tool_id += "b"
                    fake.issued.add(tool_id)
            for event, data in _events(step, index, fake.tag, context, tool_id):
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

    with serve_http(Handler) as url:
        fake.url = url
        yield fake
