"""Live endless mode: every fixture session replayed through the real proxy process, billed by the
provider's documented cache rules, beside the provider's own server-side context editing.

Each session is sent as Claude Code sends it (``core.transcript.replay``: one request per
main-chain reply, the whole history each time, compaction not replayed, Claude Code 2.1's three
breakpoints, each request at the time its reply was written) to a local fake upstream, once
directly and once through ``infinite-context proxy run``, the two interleaved request by request
(alternating which goes first) so the machine's load falls on both alike.

Per session: tool-result tokens cut on the last request and summed over all; the billed input
against sending directly (``proxy_billing``: the provider's rules, and the old model this
benchmark used before, until it is dropped); the provider's context editing
(``clear_tool_uses_20250919``, defaults, and with ``clear_at_least`` 20k) billed by the same rules;
unread results changed (must be none); requests the API would refuse (more than four breakpoints,
a longer lifetime after a shorter); the proxy's overhead per request (through the proxy minus
direct, p50 and p95). Then the proxy's start (spawn to first answer, the median of five) and its
memory after the replay.
In brackets beside the proxy's billing: the same transform run in this process with its clock at
each request's own time. The replay reaches the proxy back to back, so the proxy never sees a
pause, a cold cache or the 1-hour lifetime a paused conversation earns; what a user is billed is
the figure at each request's own time, which the billing goal uses (both are shown).

A session is long when it has at least ``LONG_REQUESTS`` requests; the goals on billing and cuts
apply to those, the overhead goal to every session.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import orjson
from common import percentile, scratch, table
from proxy_billing import bill_by_rules, bill_old_model, context_edited, price_note, tool_tokens

from infinite_context_brain.core.tokens import fast_count
from infinite_context_brain.core.transcript.live import LiveOptions, LiveTransformer
from infinite_context_brain.core.transcript.observe import paths_in
from infinite_context_brain.core.transcript.reader import content_text
from infinite_context_brain.core.transcript.replay import timed_requests
from infinite_context_brain.core.transcript.transform import MARKER

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"
PROXY_RUN = [sys.executable, "-m", "infinite_context_brain.server", "proxy", "run"]
STATUS = "/_infinite_context_brain/status"
LONG_REQUESTS = 100
SSE = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_b","type":"message",'
    b'"role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


@contextmanager
def upstream() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    seen: list[tuple[str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else the head and body writes wait on delayed ACKs (40 ms)

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append((self.path, body))
            reply = b'{"input_tokens": 1}' if "count_tokens" in self.path else SSE
            self.send_response(200)
            self.send_header("content-type", "application/json" if reply[:1] == b"{" else "text/event-stream")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def proxy(upstream_url: str) -> Iterator[tuple[str, float, int]]:
    """(url, start seconds, pid): spawn to the first answered status request."""
    port = free_port()
    data = scratch("ic-bench-proxy-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFINITE_CONTEXT_")}
    env.update(INFINITE_CONTEXT_DATA_DIR=data, HOME=data)
    started = time.perf_counter()
    child = subprocess.Popen(
        [*PROXY_RUN, "--port", str(port), "--upstream", upstream_url], env=env, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            if httpx2.get(url + STATUS, timeout=0.2).status_code == 200:
                break
        except httpx2.HTTPError:
            time.sleep(0.005)
    took = time.perf_counter() - started
    try:
        yield url, took, child.pid
    finally:
        child.terminate()
        child.wait(10)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def send(client: httpx2.Client, url: str, body: bytes, headers: dict[str, str]) -> float:
    """Seconds from the first byte sent to the last byte received."""
    started = time.perf_counter()
    with client.stream("POST", url, content=body, headers=headers) as reply:
        for _chunk in reply.iter_raw():
            pass
    return time.perf_counter() - started


def results_of(body: dict[str, Any]) -> list[tuple[int, dict[str, Any], str]]:
    return [
        (i, b, content_text(b.get("content")))
        for i, m in enumerate(body.get("messages") or [])
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def unread_changed(raw: bytes, sent: bytes) -> tuple[int, int]:
    """(changed, all) tool results in a request's last user message: the model has not read them
    yet, so none may change."""
    before, after = orjson.loads(raw), orjson.loads(sent)
    last = max((i for i, m in enumerate(before["messages"]) if m.get("role") == "user"), default=-1)
    now = {b["tool_use_id"]: text for _i, b, text in results_of(after)}
    unread = [(b["tool_use_id"], text) for i, b, text in results_of(before) if i == last]
    return sum(now.get(tid) != text for tid, text in unread), len(unread)


def pairs_broken(sent: bytes) -> int:
    body = orjson.loads(sent)
    uses = {
        b["id"]
        for m in body["messages"]
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    return sum(b["tool_use_id"] not in uses for _i, b, _t in results_of(body))


_LISTED = re.compile(r"^(?:[MADRCU?!]{1,2}\s+|modified:\s+|new file:\s+|deleted:\s+)?(.+?)(?::\d+[:-].*)?$")


def listed_paths(tool_input: dict[str, Any], original: str) -> list[str]:
    """The paths a result is about: its input's file_path / path, and output lines that name one
    path each (git status, ls, find, Glob, Grep's file:line), not every path-like word in code."""
    found = [str(tool_input[k]) for k in ("file_path", "path", "notebook_path") if tool_input.get(k)]
    for line in original.splitlines()[:400]:
        m = _LISTED.match(line.strip().removeprefix("→"))
        candidate = m.group(1).strip() if m else ""
        if candidate and " " not in candidate and paths_in(candidate) == [candidate]:
            found.append(candidate)
    return list(dict.fromkeys(found))


def quality(raw: bytes, sent: bytes) -> tuple[int, int, int, int]:
    """(paths kept, paths named, failed results <= cap rewritten, failed results <= cap), over
    the replaced results of one request."""
    before, after = orjson.loads(raw), orjson.loads(sent)
    now = {b["tool_use_id"]: text for _i, b, text in results_of(after)}
    inputs = {
        b["id"]: b.get("input") or {}
        for m in before["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    found = named = rewritten = errors = 0
    cap = LiveOptions().error_cap
    for _i, block, original in results_of(before):
        new = now.get(block["tool_use_id"], original)
        if block.get("is_error") and fast_count(original) <= cap:
            errors += 1
            rewritten += new != original
        if not new.startswith(MARKER):
            continue
        wanted = listed_paths(inputs.get(block["tool_use_id"], {}), original)[:20]
        named += len(wanted)
        found += sum(1 for p in wanted if p in new)
    return found, named, rewritten, errors


def at_their_times(timed: list[tuple[float, bytes]]) -> list[bytes]:
    """The transform in this process, its clock at each request's own time: the replay through
    the proxy is sent back to back, so the proxy never sees the idle gaps after which the
    provider's cache has expired and a sweep costs nothing."""
    now = [0.0]
    transformer = LiveTransformer(clock=lambda: now[0])
    out = []
    for at, raw in timed:
        now[0] = at
        out.append(transformer.transform_body(raw)[0])
    transformer.close()
    return out


def by_tool(raw: bytes, sent: bytes, shares: dict[str, list[int]]) -> None:
    """Adds each replaced result's tokens before and after, by tool, to ``shares``."""
    before, after = orjson.loads(raw), orjson.loads(sent)
    now = {b["tool_use_id"]: text for _i, b, text in results_of(after)}
    names = {
        b["id"]: str(b.get("name"))
        for m in before["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    for _i, block, original in results_of(before):
        new = now.get(block["tool_use_id"], original)
        if new.startswith(MARKER):
            name = names.get(block["tool_use_id"], "?")
            name = "MCP tools" if name.startswith("mcp__") else name
            kept = shares.setdefault(name, [0, 0, 0])
            kept[0] += 1
            kept[1] += fast_count(original)
            kept[2] += fast_count(new)


def sessions() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.jsonl") if "subagents" not in p.parts)


def ratio(part: float, whole: float) -> float:
    return part / whole if whole else 1.0


def run(quick: bool = False) -> None:
    """Every session in full (the goals need all of them; ``quick`` changes nothing here)."""
    rows: list[tuple[Any, ...]] = []
    goals: dict[str, list[Any]] = {k: [] for k in ("last", "sum", "cost", "timed", "below", "overhead")}
    unread = [0, 0]  # changed, all
    paths = [0, 0]  # kept, named
    errors = [0, 0]  # rewritten, all (failed results under the cap)
    refusals = broken = 0
    shares: dict[str, list[int]] = {}  # tool: replaced results, tokens before, after (last requests)
    headers = {"content-type": "application/json", "x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}
    with upstream() as (up_url, _seen):
        starts = []
        for _ in range(5):
            with proxy(up_url) as (_url, took, _pid):
                starts.append(took)
    start_s = percentile(starts, 50)
    with (
        upstream() as (up_url, seen),
        proxy(up_url) as (px_url, _took, pid),
        httpx2.Client(timeout=120) as client,
    ):
        for path in sessions():
            timed = timed_requests(path)
            if len(timed) < 5:
                continue
            times, bodies = [at for at, _ in timed], [raw for _, raw in timed]
            session = {**headers, "x-claude-code-session-id": str(uuid.uuid5(uuid.NAMESPACE_URL, path.stem))}
            seen.clear()
            overhead = []
            for i, raw in enumerate(bodies):
                legs = [(px_url, "proxy"), (up_url, "direct")]
                spent = {}
                for base, via in legs if i % 2 == 0 else legs[::-1]:
                    spent[via] = send(client, f"{base}/v1/messages?beta=true&via={via}", raw, session)
                overhead.append((spent["proxy"] - spent["direct"]) * 1000)
            sent = [body for where, body in seen if where.endswith("via=proxy")]
            assert len(sent) == len(bodies)
            direct, _ = bill_by_rules(bodies, times)
            ours, refused = bill_by_rules(sent, times)
            edited = {n: bill_by_rules(context_edited(bodies, n), times)[0] for n in (None, 20_000)}
            old_direct, old_ours = bill_old_model(bodies), bill_old_model(sent)
            last_before, last_after = tool_tokens(bodies[-1]), tool_tokens(sent[-1])
            sum_before = sum(map(tool_tokens, bodies))
            sum_after = sum(map(tool_tokens, sent))
            cut_last, cut_sum = 1 - ratio(last_after, last_before), 1 - ratio(sum_after, sum_before)
            cost = ratio(ours.cost, direct.cost)
            timed_cost = ratio(bill_by_rules(at_their_times(timed), times)[0].cost, direct.cost)
            ce = {n: ratio(b.cost, direct.cost) for n, b in edited.items()}
            for raw, out in zip(bodies, sent, strict=True):
                changed, count = unread_changed(raw, out)
                unread[0] += changed
                unread[1] += count
            refusals += refused
            broken += sum(pairs_broken(out) for out in sent[::10])
            by_tool(bodies[-1], sent[-1], shares)
            found, named, rewritten, failed = quality(bodies[-1], sent[-1])
            paths[0], paths[1] = paths[0] + found, paths[1] + named
            errors[0], errors[1] = errors[0] + rewritten, errors[1] + failed
            long = len(bodies) >= LONG_REQUESTS
            p50, p95 = percentile(overhead, 50), percentile(overhead, 95)
            goals["overhead"].append(p50)
            if long:
                goals["last"].append(cut_last)
                goals["sum"].append(cut_sum)
                goals["cost"].append(cost)
                goals["timed"].append(timed_cost)
                goals["below"].append(max(cost, timed_cost) < min(ce.values()))
            rows.append(
                (
                    f"{path.parent.name[:12]}/{path.stem[:8]}" + (" *" if long else ""),
                    len(bodies),
                    f"{max(map(len, bodies)) / 1e6:.2f}",
                    f"{last_before:,} -> {last_after:,} ({cut_last:.0%})",
                    f"{cut_sum:.0%}",
                    f"{cost:.3f}x ({timed_cost:.3f}x)",
                    f"{ce[None]:.2f}x / {ce[20_000]:.2f}x",
                    f"{ratio(old_ours.cost, old_direct.cost):.3f}x",
                    "/".join(
                        (
                            f"{ours.write_5m / 1e3:,.0f}k+{ours.write_1h / 1e3:,.0f}k",
                            f"{ours.read / 1e3:,.0f}k",
                            f"{ours.plain / 1e3:,.0f}k",
                        )
                    ),
                    f"{p50:.1f} / {p95:.1f}",
                )
            )
        memory = rss_mb(pid)
    table(
        "Live endless mode: fixture sessions through the proxy, billed by the provider's cache rules "
        f"(* long: {LONG_REQUESTS}+ requests; prices x base input: {price_note()})",
        [
            "session",
            "requests",
            "largest MB",
            "tool tokens, last request",
            "cut, summed",
            "billed vs direct (at its times)",
            "context editing (20k) vs direct",
            "old model",
            "written 5 min+1 h/read/plain",
            "overhead ms p50 / p95",
        ],
        rows,
    )
    table(
        "Replaced results by tool, last request of every session: the observation with its pointer line",
        ["tool", "results", "tokens before", "tokens after", "kept"],
        [
            (name, n, f"{before:,}", f"{after:,}", f"{after / max(before, 1):.1%}")
            for name, (n, before, after) in sorted(shares.items(), key=lambda kv: -kv[1][1])
            if n >= 3
        ],
    )
    table(
        "Live endless mode: goals",
        ["measure", "goal", "measured"],
        [
            ("billed input vs direct, provider's rules (long)", "<= 0.6x", _span(goals["timed"], "x")),
            ("  ...the same, sent back to back through the proxy", "<= 0.6x", _span(goals["cost"], "x")),
            ("  ...below server-side context editing, both settings (long)", "all", _all(goals["below"])),
            ("tool-result tokens cut, last request (long)", ">= 85%", _span(goals["last"])),
            ("tool-result tokens cut, summed (long)", ">= 50%", _span(goals["sum"])),
            ("unread results changed (last user message)", "0", f"{unread[0]} of {unread[1]}"),
            ("requests the API would refuse (breakpoints)", "0", str(refusals)),
            ("tool_result without its tool_use (every 10th request)", "0", str(broken)),
            ("overhead p50 per session", "<= 10 ms each", _span(goals["overhead"], " ms")),
            ("proxy start, spawn to first answer (median of 5)", "<= 1 s", f"{start_s:.2f} s"),
            ("proxy memory (RSS after the replay)", "<= 100 MB", f"{memory:.0f} MB"),
            (
                "paths kept in replaced results (last request)",
                "-",
                f"{paths[0] / max(paths[1], 1):.0%} of {paths[1]}",
            ),
            ("failed results <= cap rewritten (last request)", "0", f"{errors[0]} of {errors[1]}"),
        ],
    )


def _span(values: list[float], unit: str = "%") -> str:
    if not values:
        return "-"
    if unit == "x":
        return ", ".join(f"{v:.3f}x" for v in values)  # a goal row: no rounding up
    if unit == " ms":
        return ", ".join(f"{v:.1f}" for v in values) + " ms"
    return ", ".join(f"{v:.1%}" for v in values)


def _all(flags: list[bool]) -> str:
    return f"{sum(flags)} of {len(flags)}"


if __name__ == "__main__":
    run("--quick" in sys.argv)
