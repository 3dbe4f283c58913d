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
* Only the ``content`` of ``tool_result`` blocks in user messages changes: the block keeps its
  other keys (``cache_control`` stays where the client put it, so the marker count is unchanged),
  assistant messages (thinking blocks and signatures), ``system`` and ``tools`` are never touched,
  and a body with nothing to change is returned as the very bytes received.

Every replaced result starts with the one-line pointer to ``expand``. Originals are kept
(redacted) under ``ORIGINALS_SESSION`` so ``expand`` finds them without the transcript.
"""

from __future__ import annotations

import contextlib
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
    #: the newest tool results an epoch leaves undecided (sent whole)
    keep_recent: int = 2
    #: whole, unprotected tool-result tokens that start an epoch
    epoch_tokens: int = 20_000
    #: an epoch also starts when the request passes this share of the window
    epoch_share: float = 0.5
    window: int = 200_000
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


@dataclass
class LiveTransformer:
    """Decisions by tool_use_id (in memory, loaded from and written to the store); thread-safe."""

    options: LiveOptions = field(default_factory=LiveOptions)
    lookup: Lookup | None = None
    persist: Persist | None = None
    decisions: dict[str, Observation] = field(default_factory=dict)
    _unknown: set[str] = field(default_factory=set)  # looked up once, not in the store
    _tokens: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ---- the request path ---------------------------------------------------------------------
    def transform_body(self, raw: bytes) -> tuple[bytes, LiveStats]:
        """The body to forward. Raises on a body that is not JSON (the caller forwards the
        original: fail open); returns ``raw`` itself when nothing changes."""
        started = time.perf_counter()
        body = orjson.loads(raw)
        stats = LiveStats()
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return raw, stats
        with self._lock:
            changed = self.transform_messages(body["messages"], stats, size=len(raw))
        stats.changed = changed
        out = orjson.dumps(body) if changed else raw
        stats.elapsed_ms = (time.perf_counter() - started) * 1000
        return out, stats

    def transform_messages(self, messages: list[Any], stats: LiveStats, size: int | None = None) -> bool:
        """Rewrite tool results in place (the list is the caller's parsed copy); True if changed.
        ``size``: the body's length in bytes, when known (the window-share trigger)."""
        results = self._results(messages)
        stats.results = len(results)
        if not results:
            return False
        self._load([r.tid for r in results if r.tid not in self.decisions and r.tid not in self._unknown])
        protected = (
            {r.tid for r in results[-self.options.keep_recent :]} if self.options.keep_recent else set()
        )
        open_tokens = sum(r.tokens for r in results if r.tid not in self.decisions and r.tid not in protected)
        if open_tokens >= self.options.epoch_tokens or (
            open_tokens >= self.options.epoch_tokens // 4
            and self._estimate(messages, size, results) >= self._share_limit()
        ):
            stats.epoch = True
            self._epoch([r for r in results if r.tid not in self.decisions and r.tid not in protected], stats)
        changed = False
        for r in results:
            stats.tokens_before += r.tokens
            decision = self.decisions.get(r.tid)
            if decision is None or decision.source == WHOLE:
                stats.tokens_after += r.tokens
                continue
            new = replacement_text(decision, decision.original_tokens)
            stats.replaced += 1
            stats.tokens_after += fast_count(new)
            r.block["content"] = _content_like(r.block.get("content"), new)
            changed = True
        return changed

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
        if (
            r.tokens < opts.min_tokens
            or r.name in opts.keep_tools
            or r.text.startswith(MARKER)
            or (r.is_error and r.tokens <= opts.error_cap)
            or _has_image(r.block.get("content"))
        ):
            return whole()
        try:
            obs = build_observation(
                r.tid,
                r.name,
                r.tool_input,
                r.text,
                is_error=r.is_error,
                max_tokens=max(opts.max_tokens, opts.error_cap) if r.is_error else opts.max_tokens,
                source=REPLACED,
                original_tokens=r.tokens,
            )
        except Exception:
            return whole()
        if fast_count(replacement_text(obs, r.tokens)) >= r.tokens:
            return whole()
        return obs

    # ---- helpers ------------------------------------------------------------------------------
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
        for message in messages:
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
                    found.append(
                        _Result(tid, block, name, tool_input, text, tokens, bool(block.get("is_error")))
                    )
        return found


def _has_image(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "image" for b in content
    )


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
