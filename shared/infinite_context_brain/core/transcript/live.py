"""Live endless mode: the cache-stable transform of Anthropic Messages API request bodies.

The local proxy (``server/proxy``) hands every ``POST /v1/messages`` and ``/count_tokens`` body
here. Unlike the offline transform (``transform.py``), a live conversation is sent again on every
turn, and the provider caches the longest byte-identical prefix; rewriting a different set of
results each turn would turn every cache read into a cache write. So:

* **Each tool result's form is decided once**, by ``tool_use_id``, and remembered (in memory and in
  the store, under ``PROXY_SESSION``): every later request renders the same bytes for it.
* **Epochs.** Undecided results are sent whole. Only when the whole, unprotected results pass
  ``epoch_tokens`` (or the request passes ``epoch_share`` of the window) are all of them decided in
  one step, except the ``keep_recent`` newest. Between epochs a request only appends to the
  previous one.
* **Recent results** are counted in tokens as well as results (``keep_recent_tokens``). Results
  the model has not read yet (in the last user message) are always sent whole.
* **Seen once.** A result bigger than the whole recent budget is sent whole while it is new,
  then replaced on the next request, whatever its age; that alone rewrites nothing the previous
  request cached, so it does not sweep the other undecided results (a sweep far back rewrites the
  whole tail: epochs stay few and big).
  Being replaced next turn, it is not worth writing to the prompt cache (1.25x the input price,
  never read back): the request that brings it moves the client's last cache breakpoint to the
  user block just before it, so it is billed once as plain input and the part before it is cached.
* **Cold cache.** The first request after the provider's cache has expired (no request of that
  conversation for its TTL, 5 minutes or 1 hour) is written whole anyway: it sweeps then, free.
* Only the ``content`` of ``tool_result`` blocks in user messages changes, and at most where the
  ``cache_control`` markers of user blocks sit (never more markers than the client sent):
  assistant messages (thinking blocks and signatures), ``system`` and ``tools`` are never touched,
  and a body with nothing to change is returned as the very bytes received.

Every replaced result starts with the one-line pointer to ``expand``. Originals are kept
(redacted) under ``ORIGINALS_SESSION`` so ``expand`` finds them without the transcript.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..models import Observation
from ..tokens import fast_count
from .observe import DEFAULT_MAX_TOKENS, build_observation
from .reader import content_text
from .transform import MARKER, replacement_text

#: the store "session" the proxy's decisions live under (tool_use_ids are unique across sessions)
PROXY_SESSION = "endless-proxy"
#: the store "session" holding the (redacted) originals of replaced results, for ``expand``
ORIGINALS_SESSION = "endless-proxy-originals"
#: ``Observation.source`` of a decision to keep a result whole
WHOLE = "proxy:whole"
REPLACED = "proxy"

Lookup = Callable[[list[str]], dict[str, Observation]]
Persist = Callable[[list[Observation], list[Observation]], None]


@dataclass(frozen=True)
class LiveOptions:
    #: the newest tool results an epoch leaves undecided (sent whole); those in the last user
    #: message (not read yet) are always sent whole, and count towards this
    keep_recent: int = 2
    #: ... the read ones within this many tokens together; a result bigger than this is replaced
    #: as soon as the model has read it once (0: no token budget, nothing replaced on sight)
    keep_recent_tokens: int = 2_000
    #: whole, unprotected tool-result tokens that start an epoch
    epoch_tokens: int = 10_000
    #: an epoch also starts when the request passes this share of the window
    epoch_share: float = 0.5
    window: int = 200_000
    #: sweep every undecided result on the first request after the provider's cache expired
    cold_sweep: bool = True
    #: results below this many tokens are kept whole (a pointer line would cost about as much)
    min_tokens: int = 80
    #: failed results up to this many tokens are kept verbatim
    error_cap: int = 600
    max_tokens: int = DEFAULT_MAX_TOKENS
    keep_tools: frozenset[str] = frozenset()


@dataclass
class LiveStats:
    results: int = 0
    replaced: int = 0
    tokens_before: int = 0  # tool-result tokens as the client sent them
    tokens_after: int = 0  # tool-result tokens as forwarded
    epoch: bool = False
    decided: int = 0  # results decided by this request's epoch
    seen_once: int = 0  # of which replaced because they were read once and are very large
    sweep: bool = False  # the epoch decided every unprotected result (not only seen-once ones)
    cache_moved: bool = False  # the last cache breakpoint moved before a result sent whole once
    changed: bool = False
    elapsed_ms: float = 0.0


@dataclass
class _Result:
    tid: str
    block: dict[str, Any]
    name: str
    tool_input: dict[str, Any]
    text: str
    tokens: int
    is_error: bool
    message: int  # index of its user message in the request


@dataclass
class LiveTransformer:
    """Decisions by tool_use_id (in memory, loaded from and written to the store); thread-safe."""

    options: LiveOptions = field(default_factory=LiveOptions)
    lookup: Lookup | None = None
    persist: Persist | None = None
    decisions: dict[str, Observation] = field(default_factory=dict)
    _unknown: set[str] = field(default_factory=set)  # looked up once, not in the store
    _tokens: dict[str, int] = field(default_factory=dict)
    _rendered: dict[str, tuple[str, int]] = field(default_factory=dict)  # replacement, its tokens
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: when each conversation last sent a request that warmed the cache (monotonic seconds)
    _warmed: dict[bytes, float] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic

    # ---- the request path ---------------------------------------------------------------------
    def transform_body(self, raw: bytes, *, caches: bool = True) -> tuple[bytes, LiveStats]:
        """The body to forward. Raises on a body that is not JSON (the caller forwards the
        original: fail open); returns ``raw`` itself when nothing changes. ``caches``: the request
        reads and writes the provider's prompt cache (``/v1/messages``; not ``count_tokens``)."""
        started = time.perf_counter()
        body = orjson.loads(raw)
        stats = LiveStats()
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return raw, stats
        with self._lock:
            cold = self._cold(body, raw) if caches else False
            changed = self.transform_messages(body["messages"], stats, size=len(raw), cold=cold)
        stats.changed = changed
        out = orjson.dumps(body) if changed else raw
        stats.elapsed_ms = (time.perf_counter() - started) * 1000
        return out, stats

    def transform_messages(
        self, messages: list[Any], stats: LiveStats, size: int | None = None, cold: bool = False
    ) -> bool:
        """Rewrite tool results in place (the list is the caller's parsed copy); True if changed.
        ``size``: the body's length in bytes, when known (the window-share trigger); ``cold``: the
        provider's cache of this conversation has expired (a sweep costs no extra write)."""
        results = self._results(messages)
        stats.results = len(results)
        if not results:
            return False
        self._load([r.tid for r in results if r.tid not in self.decisions and r.tid not in self._unknown])
        users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
        last = users[-1] if users else -1  # its results are new: the model has not read them
        before = users[-2] if len(users) > 1 else -1  # new in the previous request
        undecided = [r for r in results if r.tid not in self.decisions]
        # Seen once: read by the model, and too big to be kept as a recent result.
        seen = [r for r in undecided if r.message != last and self._seen_once(r)]
        protected = self._recent(results, last)
        pending = [r for r in undecided if r.tid not in protected]
        seen_ids = {r.tid for r in seen}
        open_tokens = sum(r.tokens for r in pending if r.tid not in seen_ids)
        if (
            open_tokens >= self.options.epoch_tokens
            or (
                open_tokens >= self.options.epoch_tokens // 4
                and self._estimate(messages, size, results) >= self._share_limit()
            )
            or any(r.message != before for r in seen)  # not free (e.g. a restart): sweep too
            or (cold and open_tokens >= self.options.min_tokens)
        ):
            stats.epoch = stats.sweep = True
            self._epoch(pending, stats)
        elif seen:  # only them: they lie past what the previous request cached
            stats.epoch = True
            self._epoch(seen, stats)
        stats.seen_once = sum(
            1 for r in seen if (d := self.decisions.get(r.tid)) is not None and d.source == REPLACED
        )
        changed = False
        for r in results:
            stats.tokens_before += r.tokens
            decision = self.decisions.get(r.tid)
            if decision is None or decision.source == WHOLE or r.message == last:
                stats.tokens_after += r.tokens
                continue
            new, tokens = self._rendered.get(r.tid) or self._render(decision)
            stats.replaced += 1
            stats.tokens_after += tokens
            r.block["content"] = _content_like(r.block.get("content"), new)
            changed = True
        fresh = next((r for r in results if r.message == last and self._seen_once(r)), None)
        if fresh is not None and _move_cache_breakpoint(messages, fresh.block):
            stats.cache_moved = changed = True
        return changed

    def _render(self, decision: Observation) -> tuple[str, int]:
        text = replacement_text(decision, decision.original_tokens)
        self._rendered[decision.tool_use_id] = (text, fast_count(text))
        return self._rendered[decision.tool_use_id]

    def _seen_once(self, r: _Result) -> bool:
        """Replaced once the model has read it: bigger than the whole recent budget, and of a
        kind that is replaced at all (the decision itself may still keep it whole)."""
        return 0 < self.options.keep_recent_tokens < r.tokens and not self._kept_whole(r)

    def _recent(self, results: list[_Result], last: int) -> set[str]:
        """The newest results kept whole: the unread ones (always), then read ones until there are
        ``keep_recent`` in all, the read ones within ``keep_recent_tokens`` together (one bigger
        than that is replaced once read, not kept)."""
        kept: set[str] = set()
        budget = self.options.keep_recent_tokens or None
        for r in reversed(results):
            if r.message == last:
                kept.add(r.tid)
                continue
            if len(kept) >= self.options.keep_recent:
                break
            if self._seen_once(r):
                continue
            if budget is not None:
                if r.tokens > budget:
                    break
                budget -= r.tokens
            kept.add(r.tid)
        return kept

    # ---- epochs -------------------------------------------------------------------------------
    def _epoch(self, pending: list[_Result], stats: LiveStats) -> None:
        made: list[Observation] = []
        originals: list[Observation] = []
        for r in pending:
            obs = self._decide(r)
            self.decisions[r.tid] = obs
            made.append(obs)
            if obs.source == REPLACED:
                originals.append(
                    Observation(
                        tool_use_id=r.tid,
                        tool_name=r.name,
                        text=r.text,  # redacted by the store writer, off the request path
                        original_tokens=r.tokens,
                        tokens=r.tokens,
                        is_error=r.is_error,
                        source="proxy:original",
                    )
                )
        stats.decided = len(made)
        if made and self.persist is not None:
            # the decisions hold in memory; the store is for restarts and expand
            with contextlib.suppress(Exception):
                self.persist(made, originals)

    def _decide(self, r: _Result) -> Observation:
        def whole() -> Observation:
            return Observation(
                tool_use_id=r.tid,
                tool_name=r.name,
                text="",
                original_tokens=r.tokens,
                tokens=r.tokens,
                is_error=r.is_error,
                source=WHOLE,
            )

        opts = self.options
        if self._kept_whole(r):
            return whole()
        try:
            obs = build_observation(
                r.tid,
                r.name,
                r.tool_input,
                r.text,
                is_error=r.is_error,
                max_tokens=opts.max_tokens,  # a failure past the cap: its first line and its tail
                source=REPLACED,
                original_tokens=r.tokens,
            )
        except Exception:
            return whole()
        if fast_count(replacement_text(obs, r.tokens)) >= r.tokens:
            return whole()
        return obs

    def _kept_whole(self, r: _Result) -> bool:
        opts = self.options
        return (
            r.tokens < opts.min_tokens
            or r.name in opts.keep_tools
            or r.text.startswith(MARKER)
            or (r.is_error and r.tokens <= opts.error_cap)
            or _has_image(r.block.get("content"))
        )

    # ---- helpers ------------------------------------------------------------------------------
    def _cold(self, body: dict[str, Any], raw: bytes) -> bool:
        """True when this conversation's previous cached request is older than the cache lifetime
        its breakpoints ask for (5 minutes, or 1 hour with ``"ttl":"1h"``): everything is written
        again anyway, so a sweep now is free. Conversations are told apart by the client's
        metadata and the first message."""
        if not self.options.cold_sweep or not body["messages"]:
            return False
        key = hashlib.blake2b(
            orjson.dumps([body.get("metadata"), body["messages"][0]]), digest_size=16
        ).digest()
        now = self.clock()
        then = self._warmed.pop(key, None)
        self._warmed[key] = now  # newest last: the oldest go first when there are too many
        while len(self._warmed) > 512:
            del self._warmed[next(iter(self._warmed))]
        ttl = 3600.0 if b'"ttl":"1h"' in raw else 300.0
        return then is not None and now - then > ttl

    def _load(self, ids: list[str]) -> None:
        if not ids or self.lookup is None:
            self._unknown.update(ids)
            return
        try:
            found = self.lookup(ids)
        except Exception:
            found = {}
        self.decisions.update(found)
        self._unknown.update(i for i in ids if i not in found)

    def _share_limit(self) -> float:
        return self.options.epoch_share * self.options.window

    def _estimate(self, messages: list[Any], size: int | None, results: list[_Result]) -> int:
        """A cheap size of the request as forwarded: bytes / 3.1 less what decisions save."""
        tokens = int((len(orjson.dumps(messages)) if size is None else size) / 3.1)
        for r in results:
            decision = self.decisions.get(r.tid)
            if decision is not None and decision.source == REPLACED:
                tokens -= r.tokens - decision.tokens
        return tokens

    def _results(self, messages: list[Any]) -> list[_Result]:
        uses: dict[str, tuple[str, dict[str, Any]]] = {}
        found: list[_Result] = []
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("content"), list):
                continue
            role = message.get("role")
            for block in message["content"]:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if role == "assistant" and kind == "tool_use" and isinstance(block.get("id"), str):
                    tool_input = block.get("input")
                    uses[block["id"]] = (
                        str(block.get("name") or "unknown"),
                        tool_input if isinstance(tool_input, dict) else {},
                    )
                elif role == "user" and kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
                    tid = block["tool_use_id"]
                    name, tool_input = uses.get(tid, ("unknown", {}))
                    text = content_text(block.get("content"))
                    tokens = self._tokens.get(tid)
                    if tokens is None:
                        tokens = self._tokens[tid] = fast_count(text)
                    error = bool(block.get("is_error"))
                    found.append(_Result(tid, block, name, tool_input, text, tokens, error, index))
        return found


def _has_image(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "image" for b in content
    )


#: block types that can carry a cache breakpoint (not thinking, not empty text)
_CACHEABLE = frozenset({"text", "tool_result", "image", "document", "search_result"})


def _move_cache_breakpoint(messages: list[Any], block: dict[str, Any]) -> bool:
    """Put the client's cache breakpoint(s) found from ``block`` on to the end on the last user
    block before ``block`` instead: what follows is billed once as plain input rather than written
    to the cache. Assistant blocks are never touched: a breakpoint on one after ``block`` leaves
    everything as it is. False when there is nothing to move or nowhere to put it."""
    flat = [
        (message.get("role"), b)
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for b in message["content"]
        if isinstance(b, dict)
    ]
    start = next((i for i, (_role, b) in enumerate(flat) if b is block), None)
    if start is None:
        return False
    after = flat[start:]
    if any(role != "user" and "cache_control" in b for role, b in after):
        return False
    marked = [b for _role, b in after if _markers(b)]
    at = next(
        (
            i
            for i in range(start - 1, -1, -1)
            if flat[i][0] == "user"
            and flat[i][1].get("type") in _CACHEABLE
            and (flat[i][1].get("type") != "text" or flat[i][1].get("text"))
        ),
        None,
    )
    # a breakpoint between (on an assistant block) stays last before the moved one: its TTL may
    # be longer, and a longer TTL may not follow a shorter one
    if not marked or at is None or any(_markers(b) for _role, b in flat[at + 1 : start]):
        return False
    target = flat[at][1]
    marker = _markers(marked[0])[0]
    for b in marked:
        b.pop("cache_control", None)
        if isinstance(b.get("content"), list):
            for inner in b["content"]:
                if isinstance(inner, dict):
                    inner.pop("cache_control", None)
    target["cache_control"] = marker
    return True


def _markers(block: dict[str, Any]) -> list[Any]:
    """The block's cache markers: its own, then its content blocks'."""
    found = [block["cache_control"]] if "cache_control" in block else []
    content = block.get("content")
    if isinstance(content, list):
        found += [b["cache_control"] for b in content if isinstance(b, dict) and "cache_control" in b]
    return found


def _content_like(content: Any, text: str) -> Any:
    """The new content in the shape of the old: a string, or one text block that keeps a
    ``cache_control`` marker found among the old blocks (the marker count never changes)."""
    if isinstance(content, list):
        marker = next(
            (b["cache_control"] for b in content if isinstance(b, dict) and "cache_control" in b), None
        )
        block: dict[str, Any] = {"type": "text", "text": text}
        if marker is not None:
            block["cache_control"] = marker
        return [block]
    return text


def strip_cache_control(value: Any) -> Any:
    """A copy without ``cache_control`` keys: what the provider's prefix cache compares."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def prefix_stable(previous: dict[str, Any], current: dict[str, Any]) -> bool:
    """True when ``current`` extends ``previous`` (same system, tools and earlier messages, byte
    for byte with cache markers left out): the provider can serve the old part from its cache."""
    for key in ("system", "tools"):
        if orjson.dumps(strip_cache_control(previous.get(key))) != orjson.dumps(
            strip_cache_control(current.get(key))
        ):
            return False
    old, new = previous.get("messages") or [], current.get("messages") or []
    if len(new) < len(old):
        return False
    return all(
        orjson.dumps(strip_cache_control(a)) == orjson.dumps(strip_cache_control(b))
        for a, b in zip(old, new, strict=False)
    )


def message_blocks(body: dict[str, Any]) -> tuple[list[bytes], int]:
    """Every message block as the provider's prefix cache compares it (bytes without markers,
    with its message's index and role), and how many of them the request caches: up to its last
    ``cache_control`` breakpoint."""
    blocks: list[bytes] = []
    cached = 0
    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else [content]:
            blocks.append(orjson.dumps([i, message.get("role"), strip_cache_control(block)]))
            if isinstance(block, dict) and _markers(block):
                cached = len(blocks)
    return blocks, cached


def cache_kept(previous: dict[str, Any], current: dict[str, Any]) -> bool:
    """True when what ``previous`` cached (system, tools and its blocks up to its last breakpoint)
    is a byte prefix of ``current``: the provider serves all of it from the cache. What followed
    the last breakpoint was billed as plain input, never cached: changing it costs nothing."""
    for key in ("system", "tools"):
        if orjson.dumps(strip_cache_control(previous.get(key))) != orjson.dumps(
            strip_cache_control(current.get(key))
        ):
            return False
    old, cached = message_blocks(previous)
    new, _ = message_blocks(current)
    return new[:cached] == old[:cached]
