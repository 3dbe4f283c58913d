"""Live endless mode (issue 15): every fixture session replayed through the real proxy process.

Each session is sent as Claude Code sends it (``core.transcript.replay``: one request per main-chain
reply, the whole history each time, compaction not replayed) to a local fake upstream, once
directly and once through ``infinite-context proxy run``. Per session: tool-result and total tokens
sent, the share of requests that extend the previous one byte for byte (cache markers left out),
an estimated billed input cost with prompt caching, the highest context and whether it crosses
Claude Code's auto-compact threshold. Then, on the largest request: proxy overhead and time to
first byte against direct; the proxy's start time and memory; paths kept and failed results left
whole in what the proxy replaced.

Cost model (Anthropic's prompt-caching multipliers of the base input price): cache read 0.1x,
cache write 1.25x (5-minute TTL), uncached 1x. It follows the ``cache_control`` breakpoints block
by block, as the provider bills: each request reads the part it shares with what the previous
request cached (its blocks up to its last breakpoint, plus system and tools), writes the rest up
to its own last breakpoint, and pays what follows that breakpoint as plain input. Claude Code marks
the last block, so a request sent as received writes all it does not read; the proxy may move that
breakpoint back before a result it will replace on the next request. "Prefix-stable" is the same
cache view: the previous request's cached part is a prefix of this one (byte for byte, markers left
out); the stricter "extends the whole previous request" is shown beside it. Tokens are estimated
(bytes / 3.1 x 1.14, the meter's calibration); system and tools are a fixed 18,000 tokens (Claude
Code 2.x sends ~15-20k).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import orjson
from common import percentile, scratch, table

from infinite_context_brain.core.tokens import fast_count
from infinite_context_brain.core.transcript.live import LiveOptions, cache_kept, message_blocks, prefix_stable
from infinite_context_brain.core.transcript.observe import paths_in
from infinite_context_brain.core.transcript.reader import content_text
from infinite_context_brain.core.transcript.replay import requests
from infinite_context_brain.core.transcript.transform import MARKER

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "claude-code"
PROXY_RUN = [sys.executable, "-m", "infinite_context_brain.server", "proxy", "run"]
OVERHEAD_TOKENS = 18_000
CALIBRATION = 1.14
PRICE_READ, PRICE_WRITE = 0.1, 1.25
#: Claude Code auto-compacts at about 83.5% of a 200k window (window - output reserve - buffer)
COMPACT_AT = 167_000
SSE = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_b","type":"message",'
    b'"role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


@contextmanager
def upstream() -> Iterator[tuple[str, list[bytes]]]:
    seen: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append(body)
            reply = b'{"input_tokens": 1}' if "count_tokens" in self.path else SSE
            self.send_response(200)
            self.send_header(
                "content-type", "application/json" if reply[0:1] == b"{" else "text/event-stream"
            )
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
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def proxy(upstream_url: str) -> Iterator[tuple[str, float, int]]:
    """(url, start seconds, pid): spawn to the first answered status request."""
    port = free_port()
    data = scratch("ic-bench-proxy-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFINITE_CONTEXT_")}
    env["INFINITE_CONTEXT_DATA_DIR"] = data
    started = time.perf_counter()
    child = subprocess.Popen(
        [*PROXY_RUN, "--port", str(port), "--upstream", upstream_url],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            if httpx2.get(url + "/_infinite_context_brain/status", timeout=0.2).status_code == 200:
                break
        except httpx2.HTTPError:
            time.sleep(0.01)
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


def results_of(body: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    return [
        (b, content_text(b.get("content")))
        for m in body.get("messages") or []
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def analyse(bodies: list[bytes]) -> dict[str, Any]:
    """Tokens sent, prefix stability and the billed input, block by block as the provider caches:
    a request reads from the cache the part it shares with what the previous request cached (up to
    that request's last breakpoint), writes what lies between that and its own last breakpoint,
    and pays the rest (after its last breakpoint) as plain input."""
    tool = total = stable = strict = 0
    read = write = plain = 0
    peak = 0
    last_tool = 0
    previous: dict[str, Any] | None = None
    prev_blocks: list[bytes] = []
    prev_cached = 0
    for raw in bodies:
        body = orjson.loads(raw)
        blocks, cached = message_blocks(body)
        sizes = [int(len(b) / 3.1 * CALIBRATION) for b in blocks]  # the meter's bytes-to-tokens
        tokens = OVERHEAD_TOKENS + sum(sizes)
        tool_tokens = sum(fast_count(t) for _b, t in results_of(body))
        tool += tool_tokens
        total += tokens
        last_tool = tool_tokens
        peak = max(peak, tokens)
        if previous is None:
            write += OVERHEAD_TOKENS
            shared = 0
        else:
            read += OVERHEAD_TOKENS
            shared = 0
            for a, b in zip(prev_blocks[:prev_cached], blocks, strict=False):
                if a != b:
                    break
                shared += 1
            shared = min(shared, cached)
            strict += prefix_stable(previous, body)
            stable += cache_kept(previous, body)
        read += sum(sizes[:shared])
        write += sum(sizes[shared:cached])
        plain += sum(sizes[max(shared, cached) :])
        previous, prev_blocks, prev_cached = body, blocks, cached
    return {
        "tool": tool,
        "total": total,
        "stable": stable,
        "strict": strict,
        "cost": PRICE_READ * read + PRICE_WRITE * write + plain,
        "read": read,
        "write": write,
        "plain": plain,
        "peak": peak,
        "last_tool": last_tool,
    }


def quality(bodies: list[bytes], originals: list[bytes]) -> tuple[int, int, int, int]:
    """(paths found, paths named, failed results <= cap rewritten, failed results <= cap), over
    the replaced results of the last request of a session."""
    sent = {b["tool_use_id"]: t for b, t in results_of(orjson.loads(bodies[-1]))}
    found = named = rewritten = errors = 0
    cap = LiveOptions().error_cap
    body = orjson.loads(originals[-1])
    inputs = {
        b["id"]: b.get("input") or {}
        for m in body["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    for block, original in results_of(body):
        new = sent.get(block["tool_use_id"], original)
        if block.get("is_error") and fast_count(original) <= cap:
            errors += 1
            rewritten += new != original
        if not new.startswith(MARKER):
            continue
        wanted = listed_paths(inputs.get(block["tool_use_id"], {}), original)[:20]
        named += len(wanted)
        found += sum(1 for p in wanted if p in new)
    return found, named, rewritten, errors


def unread_replaced(raw: bytes) -> tuple[int, int]:
    """(replaced, all) tool results in a request's last user message: the model has not read them
    yet, so none may be replaced."""
    messages = orjson.loads(raw)["messages"]
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    if last < 0 or not isinstance(messages[last].get("content"), list):
        return 0, 0
    texts = [
        content_text(b.get("content"))
        for b in messages[last]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    return sum(t.startswith(MARKER) for t in texts), len(texts)


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


def send_all(client: httpx2.Client, url: str, bodies: list[bytes]) -> list[tuple[float, float]]:
    """(seconds to the first byte, seconds to the end) per request."""
    timings = []
    headers = {"content-type": "application/json", "x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}
    for body in bodies:
        started = time.perf_counter()
        with client.stream("POST", url + "/v1/messages?beta=true", content=body, headers=headers) as reply:
            first = None
            for _chunk in reply.iter_raw():
                first = first or time.perf_counter()
        end = time.perf_counter()
        timings.append(((first or end) - started, end - started))
    return timings


def sessions() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.jsonl") if "subagents" not in p.parts)


def run(quick: bool = False) -> None:
    rows = []
    goals: dict[str, list[Any]] = {"last": [], "sum": [], "cost": [], "stable": [], "strict": [], "under": []}
    paths = [0, 0]
    errors = [0, 0]
    unread = [0, 0]
    largest: bytes = b""
    with (
        upstream() as (up_url, seen),
        proxy(up_url) as (px_url, start_s, pid),
        httpx2.Client(timeout=60) as client,
    ):
        for path in sessions():
            bodies = requests(path)
            if len(bodies) < 5:
                continue
            largest = max(largest, max(bodies, key=len), key=len)
            seen.clear()
            send_all(client, px_url, bodies)
            sent = list(seen)
            before, after = analyse(bodies), analyse(sent)
            found, named, rewritten, errs = quality(sent, bodies)
            paths[0] += found
            paths[1] += named
            errors[0] += rewritten
            errors[1] += errs
            for body in sent:
                replaced, results = unread_replaced(body)
                unread[0] += replaced
                unread[1] += results
            n = len(bodies)
            long = before["last_tool"] > 50_000  # the sessions that near or pass the window
            last_cut = 1 - after["last_tool"] / max(before["last_tool"], 1)
            sum_cut = 1 - after["tool"] / max(before["tool"], 1)
            if long:
                goals["last"].append(last_cut)
                goals["sum"].append(sum_cut)
                goals["cost"].append(after["cost"] / before["cost"])
            goals["stable"].append((after["stable"], n - 1))
            goals["strict"].append((after["strict"], n - 1))
            if before["peak"] > COMPACT_AT:
                goals["under"].append(after["peak"] <= COMPACT_AT)
            rows.append(
                (
                    f"{path.parent.name[:12]}/{path.stem[:8]}" + (" *" if long else ""),
                    n,
                    f"{before['last_tool']:,} -> {after['last_tool']:,} ({last_cut:.0%})",
                    f"{before['tool']:,} -> {after['tool']:,} ({sum_cut:.0%})",
                    f"{before['total']:,} -> {after['total']:,}",
                    f"{before['stable'] / (n - 1):.0%} / {after['stable'] / (n - 1):.0%}"
                    f" ({after['strict'] / (n - 1):.0%})",
                    f"{after['cost'] / before['cost']:.2f}x",
                    " / ".join(
                        f"{r['write'] / 1e3:,.0f}k/{r['read'] / 1e3:,.0f}k/{r['plain'] / 1e3:,.0f}k"
                        for r in (before, after)
                    ),
                    f"{before['peak']:,}{' !' if before['peak'] > COMPACT_AT else ''} -> "
                    f"{after['peak']:,}{' !' if after['peak'] > COMPACT_AT else ''}",
                )
            )
        seen.clear()
        reps = 10 if quick else 40
        direct = send_all(client, up_url, [largest] * reps)
        through = send_all(client, px_url, [largest] * reps)
        memory = rss_mb(pid)
    table(
        "Live endless mode: fixture sessions through the proxy (* long session; ! over the "
        f"auto-compact threshold {COMPACT_AT:,})",
        [
            "session",
            "requests",
            "tool tokens, last request",
            "tool tokens, all requests",
            "tokens sent, all requests",
            "prefix-stable direct / proxy (whole request)",
            "billed input vs direct",
            "written/read/plain tokens, direct / proxy",
            "highest context",
        ],
        rows,
    )
    overhead = sorted((p[1] - d[1]) * 1000 for p, d in zip(through, direct, strict=True))
    stable_n = sum(s for s, _ in goals["stable"])
    stable_d = sum(d for _, d in goals["stable"])
    strict_n = sum(s for s, _ in goals["strict"])
    table(
        f"Live endless mode: goals (issue 15); price x input: read {PRICE_READ} write {PRICE_WRITE} plain 1",
        ["measure", "goal", "measured"],
        [
            ("tool-result tokens cut, last request (long)", ">= 85%", _span(goals["last"])),
            ("tool-result tokens cut, all requests (long)", ">= 50%", _span(goals["sum"])),
            (
                "requests prefix-stable: extend the cached part (all)",
                ">= 95%",
                f"{stable_n / max(stable_d, 1):.1%}",
            ),
            ("  ...extend the whole previous request", "-", f"{strict_n / max(stable_d, 1):.1%}"),
            ("billed input cost vs no proxy (long)", "<= 0.6x", _span(goals["cost"], "x")),
            (
                "sessions over the threshold that stay under",
                "all",
                f"{sum(goals['under'])} of {len(goals['under'])}",
            ),
            (
                f"overhead on the largest request ({len(largest) / 1e6:.1f} MB)",
                "p50 <= 10 ms, p95 <= 30 ms",
                f"p50 {percentile(overhead, 50):.1f} ms, p95 {percentile(overhead, 95):.1f} ms",
            ),
            (
                "time to first byte, direct / proxy",
                "-",
                f"{percentile([d[0] * 1000 for d in direct], 50):.1f} / "
                f"{percentile([p[0] * 1000 for p in through], 50):.1f} ms (p50)",
            ),
            ("proxy start (spawn to first answer)", "<= 1 s", f"{start_s:.2f} s"),
            ("proxy memory (RSS after the replay)", "-", f"{memory:.0f} MB"),
            ("paths kept in replaced results", ">= 90%", f"{paths[0] / max(paths[1], 1):.0%} of {paths[1]}"),
            ("failed results <= cap rewritten", "0", f"{errors[0]} of {errors[1]}"),
            ("unread results replaced (last user message)", "0", f"{unread[0]} of {unread[1]}"),
        ],
    )


def _span(values: list[float], unit: str = "%") -> str:
    if not values:
        return "-"
    shown = [f"{v:.3f}x" if unit == "x" else f"{v:.1%}" for v in values]  # a goal row: no rounding up
    return ", ".join(shown)


if __name__ == "__main__":
    run("--quick" in sys.argv)
