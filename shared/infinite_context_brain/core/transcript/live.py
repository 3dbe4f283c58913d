"""Live endless mode: the cache-aware transform of Anthropic Messages API request bodies.

The local proxy (``server/proxy``) hands every ``POST /v1/messages`` and ``/count_tokens`` body
here. A live conversation is sent again on every turn and the provider bills it by its prompt
cache (``cache_rules``): a prefix read from the cache costs a tenth of plain input, one written
to it a quarter more. Rewriting a different set of results each turn would turn every read into
a write. So:

* **Each tool result's form is decided once**, by ``tool_use_id``, and remembered (in memory and in
  the store): every later request renders the same bytes for it. Its observation is built in the
  background as soon as the result is first seen, so deciding costs the request nothing.
* **Sweeps.** Undecided results are sent whole. A sweep decides all of them at once, except the
  newest (``keep_recent`` within ``keep_recent_tokens``; the ones the model has not read yet are
  never touched). A sweep rewrites the request from the first result it changes, so it runs only
  when what it saves on the requests to come (read at a tenth, ``sweep_horizon`` of them) pays for
  what it writes again now, when the request nears the window, or for free on a cold cache.
* **A held breakpoint.** Claude Code sends three of the four breakpoints the API allows. The
  fourth is held on the block before the oldest undecided result, where nothing ever changes, so a
  sweep reads everything before it from the cache and writes only what follows. A sweep moves the
  client's last breakpoint to where the next one will be held (what follows is plain input once),
  and the held one goes there on the next request. A request never gets more than four, and none
  when the client sent none.
* **Seen once.** A result bigger than the recent budget is sent whole while it is new and replaced
  on the next request. It is not worth writing to the cache (written at 1.25x, never read back):
  the request that brings it moves the client's last breakpoint to the user block before it.
* **Cold cache.** No request of the conversation within the cache's lifetime: the next one is
  written whole anyway, so it sweeps then, free.
* **The long lifetime.** Claude Code gives API-key users the 5-minute cache, so a pause longer
  than that makes the next request write the whole conversation again. Once a conversation has
  paused (a gap between 5 minutes and an hour, which the 1-hour lifetime would have survived), it
  weighs the 1-hour lifetime on the odds seen so far: it costs ``PRICE_WRITE_1H - PRICE_WRITE_5M``
  more on what a request usually writes, and saves ``PRICE_WRITE_5M - PRICE_READ`` on all it
  caches when the next gap is such a pause. When that pays, every request from then on asks for it
  on all its breakpoints. The switch is made on a request that writes the held point anew (a
  sweep), so that the held entry, written once and read long after, lives as long: one written for
  5 minutes would be gone after the next pause. Back after more than an hour, everything is written
  again anyway, with the 5-minute lifetime, and the switch is weighed again. Lifetimes a client
  chose itself are left as they are.
* **count_tokens** renders the decisions made so far and decides nothing: counting must not move
  a sweep, and it neither reads nor writes the cache.
* Only the ``content`` of ``tool_result`` blocks in user messages and the breakpoints on user
  blocks change: assistant messages (thinking blocks, signatures), ``system`` and ``tools`` never,
  and a body with nothing to change is returned as the very bytes received.

Every replaced result starts with the one-line pointer to ``expand``. Originals are kept
(redacted) per Claude Code session (``originals_session``) so ``expand`` finds them for that
session's project without the transcript.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..models import Observation
from ..tokens import CHARS_PER_TOKEN_FALLBACK, fast_count
from . import live_marks as marks
from .cache_rules import (
    PRICE_READ,
    PRICE_WRITE_1H,
    PRICE_WRITE_5M,
    TTL_1H,
    TTL_5M,
    block_markers,
    marker_ttl,
    without_markers,
)
from .observe import BUDGET_FLOOR, BUDGET_SHARE, DEFAULT_MAX_TOKENS, build_observation
from .reader import content_text
from .transform import MARKER, replacement_text

#: the store "session" the proxy's decisions live under, per user (``decisions_session``)
PROXY_SESSION = "endless-proxy"
#: the store "session" of the (redacted) originals of replaced results, per user and Claude Code
#: session (``originals_session``), for ``expand``
ORIGINALS_SESSION = "endless-proxy-originals"
#: ``Observation.source`` of a decision to keep a result whole
WHOLE = "proxy:whole"
REPLACED = "proxy"

#: the tokens of a replaced result's first line (``transform.replacement_text``)
POINTER_TOKENS = 26

Lookup = Callable[[list[str]], dict[str, Observation]]
#: (decisions, originals, the Claude Code session the originals belong to)
Persist = Callable[[list[Observation], list[Observation], str | None], None]


def decisions_session(uid: int) -> str:
    return f"{PROXY_SESSION}:{uid}"


def originals_session(uid: int, session: str) -> str:
    return f"{ORIGINALS_SESSION}:{uid}:{session}"


@dataclass(frozen=True)
class LiveOptions:
    #: the newest read tool results a sweep leaves whole; unread ones are always whole
    keep_recent: int = 2
    #: ... within this many tokens together; a result bigger than this is replaced as soon as the
    #: model has read it once (0: no token budget, nothing replaced on sight)
    keep_recent_tokens: int = 2_000
    #: a sweep is weighed only once the whole, unprotected results reach this many tokens
    epoch_tokens: int = 4_000
    #: the requests to come a sweep's saving is counted over (each reads it at a tenth)
    sweep_horizon: int = 8
    #: a sweep regardless of its price when the request passes this share of the window
    epoch_share: float = 0.5
    window: int = 200_000
    #: sweep every undecided result on the first request after the provider's cache expired
    cold_sweep: bool = True
    #: ask for the 1-hour cache lifetime when the conversation's pauses make it pay
    long_cache: bool = True
    #: results below this many tokens are kept whole (the pointer line costs about as much)
    min_tokens: int = 50
    #: a replacement must save at least this share of the result, else it is kept whole
    min_saving: float = 0.4
    #: failed results up to this many tokens are kept verbatim
    error_cap: int = 200
    max_tokens: int = DEFAULT_MAX_TOKENS
    keep_tools: frozenset[str] = frozenset()
    #: build observations in a background thread when a result is first seen
    prebuild: bool = True


@dataclass
class LiveStats:
    results: int = 0
    replaced: int = 0
    tokens_before: int = 0  # tool-result tokens as the client sent them
    tokens_after: int = 0  # tool-result tokens as forwarded
    epoch: bool = False
    decided: int = 0  # results decided by this request
    seen_once: int = 0  # of which replaced because they were read once and are very large
    sweep: bool = False  # the request decided every unprotected result (not only seen-once ones)
    cache_moved: bool = False  # the client's last breakpoint moved back
    held: bool = False  # a breakpoint of ours held on the block before the oldest undecided result
    long_cache: bool = False  # the request's breakpoints ask for the 1-hour lifetime
    changed: bool = False
    elapsed_ms: float = 0.0


@dataclass
class _Result:
    tid: str
    block: dict[str, Any]
    name: str
    tool_input: dict[str, Any]
    tokens: int
    is_error: bool
    message: int  # index of its user message in the request
    index: int  # its index in that message's content

    def text(self) -> str:
        return content_text(self.block.get("content"))


@dataclass
class _Conversation:
    seen: float = 0.0  # when it last sent a request that reads or writes the cache
    ttl: float = TTL_5M
    held: marks.Spot | None = None  # our breakpoint: its entry exists and is refreshed each request
    last: marks.Spot | None = None  # the previous request's last message breakpoint
    other: list[int] = field(default_factory=list)  # tokens of each message besides its results
    requests: int = 0
    gaps: int = 0  # gaps between its requests seen so far
    pauses: int = 0  # of which longer than the 5-minute lifetime and within the 1-hour one
    cached: int = 0  # tokens the previous request sent (an estimate)
    long: bool = False  # its requests ask for the 1-hour lifetime
    held_ttl: float = TTL_5M  # the lifetime the held breakpoint's entry was written with
    steps: int = 0  # requests that wrote only what was new (not a sweep, not cold)
    step_writes: int = 0  # tokens they wrote
    head: int = 0  # tokens of its system prompt and tools
    head_gone: bool = False  # their entries expired in a pause a longer-lived later entry survived


@dataclass
class LiveTransformer:
    """Decisions by tool_use_id (in memory, loaded from and written to the store); thread-safe."""

    options: LiveOptions = field(default_factory=LiveOptions)
    lookup: Lookup | None = None
    persist: Persist | None = None
    decisions: dict[str, Observation] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    _unknown: set[str] = field(default_factory=set)  # looked up once, not in the store
    _tokens: dict[str, int] = field(default_factory=dict)
    _rendered: dict[str, tuple[str, int]] = field(default_factory=dict)  # replacement, its tokens
    _building: dict[str, Future[Observation | None]] = field(default_factory=dict)
    _pool: ThreadPoolExecutor | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _conversations: dict[bytes, _Conversation] = field(default_factory=dict)

    # ---- the request path ---------------------------------------------------------------------
    def transform_body(
        self, raw: bytes, *, caches: bool = True, session: str | None = None
    ) -> tuple[bytes, LiveStats]:
        """The body to forward. Raises on a body that is not JSON (the caller forwards the
        original: fail open); returns ``raw`` itself when nothing changes. ``caches``: the request
        reads and writes the provider's prompt cache (``/v1/messages``; not ``count_tokens``).
        ``session``: the Claude Code session it belongs to (originals are kept under it)."""
        started = time.perf_counter()
        body = orjson.loads(raw)
        stats = LiveStats()
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return raw, stats
        messages = body["messages"]
        results = self._results(messages)
        stats.results = len(results)
        if not results:
            if caches and messages:  # where its breakpoint sits: the next request may hold it
                with self._lock:
                    convo = self._conversation(body)
                    convo.last, convo.seen = marks.last_message_mark(messages), self.clock()
                    convo.requests += 1
            return raw, stats
        with self._lock:
            changed = self._transform(body, results, stats, len(raw), caches, session)
        stats.changed = changed
        out = orjson.dumps(body) if changed else raw
        stats.elapsed_ms = (time.perf_counter() - started) * 1000
        return out, stats

    def _transform(
        self,
        body: dict[str, Any],
        results: list[_Result],
        stats: LiveStats,
        size: int,
        caches: bool,
        session: str | None,
    ) -> bool:
        messages: list[Any] = body["messages"]
        self._load([r.tid for r in results if r.tid not in self.decisions and r.tid not in self._unknown])
        users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
        last = users[-1] if users else -1  # its results are new: the model has not read them
        before = users[-2] if len(users) > 1 else -1  # new in the previous request
        self._prebuild([r for r in results if r.message == last])
        convo = self._conversation(body) if caches else None
        if convo is not None:
            self._sizes(convo, messages, results)
            if not convo.head:  # measured once: Claude Code's tools and system barely change
                convo.head = int(
                    len(orjson.dumps([body.get("system"), body.get("tools")])) / CHARS_PER_TOKEN_FALLBACK
                )
        cold = False
        if caches:  # count_tokens decides nothing: it only counts what is decided
            cold = convo is not None and self._cold(convo, messages)
            self._decide(messages, results, last, before, convo, cold, size, stats, session)
        changed = self._render(results, last, stats)
        if convo is not None:
            held = convo.held
            if cold or (stats.sweep and held is None):  # written again from the start
                convo.head_gone = False
            changed |= self._place_marks(body, results, last, convo, stats, cold)
            changed |= self._lifetime(body, results, convo, cold, size, stats)
            if convo.held != held:  # its entry is written now, with this request's lifetime
                convo.held_ttl = convo.ttl
            convo.seen = self.clock()
            convo.requests += 1
        return changed

    def _decide(
        self,
        messages: list[Any],
        results: list[_Result],
        last: int,
        before: int,
        convo: _Conversation | None,
        cold: bool,
        size: int,
        stats: LiveStats,
        session: str | None,
    ) -> None:
        undecided = [r for r in results if r.tid not in self.decisions]
        seen = [r for r in undecided if r.message != last and self._seen_once(r)]
        protected = self._recent(results, last)
        pending = [r for r in undecided if r.tid not in protected]
        seen_ids = {r.tid for r in seen}
        open_tokens = sum(r.tokens for r in pending if r.tid not in seen_ids)
        opts = self.options
        if (
            (cold and open_tokens >= opts.min_tokens)
            or any(r.message != before for r in seen)  # not free (e.g. a restart): sweep too
            or (
                open_tokens >= opts.epoch_tokens // 4
                and self._estimate(size, results) >= opts.epoch_share * opts.window
            )
            or (open_tokens >= opts.epoch_tokens and self._worth_it(pending, results, last, convo, messages))
        ):
            stats.epoch = stats.sweep = True
            self._epoch(pending, stats, session)
        elif seen:  # only them: they lie past what the previous request cached
            stats.epoch = True
            self._epoch(seen, stats, session)
        stats.seen_once = sum(
            1 for r in seen if (d := self.decisions.get(r.tid)) is not None and d.source == REPLACED
        )

    def _worth_it(
        self,
        pending: list[_Result],
        results: list[_Result],
        last: int,
        convo: _Conversation | None,
        messages: list[Any],
    ) -> bool:
        """Does a sweep now save more on the requests to come than it bills again now? It saves
        its replaced tokens on each of them (read at a tenth). It writes again what it keeps
        between the read point (the held breakpoint, else the start) and this request's new part;
        with a held point, what follows the next one goes as plain input once (to be written on
        the next request)."""
        saved = sum(max(0, r.tokens - self._after(r)) for r in pending)
        if saved <= 0:
            return False
        held = convo.held if convo is not None else None
        start = held.message if held is not None and marks.block_at(messages, held) is not None else 0
        decided = {r.tid for r in pending}
        oldest = next(
            (r.message for r in results if r.tid not in self.decisions and r.tid not in decided), last
        )
        kept = self._span(convo, results, start) - self._span(convo, results, max(last, start)) - saved
        if not start and convo is not None and convo.head_gone:
            kept += convo.head
        tail = self._span(convo, results, min(oldest, last)) if start else 0
        # as many requests to come as came so far (a conversation's age is the best guess of its
        # future), at least ``sweep_horizon``
        horizon = max(self.options.sweep_horizon, convo.requests // 2 if convo is not None else 0)
        benefit = PRICE_READ * saved * (horizon + 1)
        cost = (PRICE_WRITE_5M - PRICE_READ) * max(0, kept) + (1 - PRICE_READ) * tail
        return benefit >= cost

    def _after(self, r: _Result) -> int:
        """The tokens a result will have once decided: as rendered when it is, else the
        observation's budget and the pointer line (an estimate that never depends on when a
        background build finishes, so the same requests always sweep at the same point)."""
        if self._kept_whole(r):
            return r.tokens
        rendered = self._rendered.get(r.tid)
        if rendered is not None:
            return rendered[1]
        budget = min(self.options.max_tokens, max(BUDGET_FLOOR, int(r.tokens * BUDGET_SHARE)))
        return min(r.tokens, budget + POINTER_TOKENS)

    def _span(self, convo: _Conversation | None, results: list[_Result], start: int) -> int:
        """Tokens of the messages from ``start`` on, as forwarded so far (decided results as
        rendered, the rest whole)."""
        other = sum(convo.other[start:]) if convo is not None else 0
        for r in results:
            if r.message >= start:
                decision = self.decisions.get(r.tid)
                if decision is not None and decision.source == REPLACED:
                    other += self._rendered[r.tid][1] if r.tid in self._rendered else decision.tokens
                else:
                    other += r.tokens
        return other

    def _render(self, results: list[_Result], last: int, stats: LiveStats) -> bool:
        changed = False
        for r in results:
            stats.tokens_before += r.tokens
            decision = self.decisions.get(r.tid)
            if decision is None or decision.source == WHOLE or r.message == last:
                stats.tokens_after += r.tokens
                continue
            new, tokens = self._rendered.get(r.tid) or self._remember_render(decision)
            stats.replaced += 1
            stats.tokens_after += tokens
            r.block["content"] = _content_like(r.block.get("content"), new)
            changed = True
        return changed

    def _remember_render(self, decision: Observation) -> tuple[str, int]:
        text = replacement_text(decision, decision.original_tokens)
        self._rendered[decision.tool_use_id] = (text, fast_count(text))
        return self._rendered[decision.tool_use_id]

    # ---- breakpoints --------------------------------------------------------------------------
    def _place_marks(
        self,
        body: dict[str, Any],
        results: list[_Result],
        last: int,
        convo: _Conversation,
        stats: LiveStats,
        cold: bool = False,
    ) -> bool:
        """Move the client's last breakpoint back when that saves a write nobody reads, and hold
        ours on the block before the oldest undecided result (see the module docstring)."""
        messages: list[Any] = body["messages"]
        free = marks.spare(body)
        held = convo.held if convo.held is not None and marks.block_at(messages, convo.held) else None
        oldest = next((r for r in results if r.tid not in self.decisions), None)
        target = marks.user_spot_before(messages, oldest.message, oldest.index) if oldest else None
        fresh = next((r for r in results if r.message == last and self._seen_once(r)), None)
        moved = False
        add_at: marks.Spot | None
        next_held: marks.Spot | None
        if stats.sweep and held is not None and target is not None:
            # read what precedes the held point; the moved last breakpoint writes the next one
            moved = marks.move_last_mark(messages, target)
            add_at, next_held = held, (target if moved else held)
        elif stats.sweep or (cold and held is None):
            # nothing to read: the whole request is written, the new point with it
            moved = fresh is not None and self._move_before(messages, fresh)
            add_at = next_held = target
        else:
            moved = fresh is not None and self._move_before(messages, fresh)
            if held is None and convo.last is not None and target is not None and _before(convo.last, target):
                # an entry the previous request wrote, before every result still to be decided
                held = convo.last if marks.block_at(messages, convo.last) is not None else None
            add_at = next_held = held
        added = False
        if add_at is not None and free >= 1:
            added = marks.add_mark(messages, add_at, marks.marker_after(messages, add_at))
            stats.held = bool(block_markers(marks.block_at(messages, add_at) or {}))
        convo.held = next_held if free >= 1 else None
        convo.last = marks.last_message_mark(messages)
        stats.cache_moved = moved
        return moved or added

    def _lifetime(
        self,
        body: dict[str, Any],
        results: list[_Result],
        convo: _Conversation,
        cold: bool,
        size: int,
        stats: LiveStats,
    ) -> bool:
        """Ask for the 1-hour lifetime on every breakpoint once the pauses seen so far make it pay
        (see the module docstring); from then on the conversation keeps it."""
        cached = self._estimate(size, results)
        written, convo.cached = max(0, cached - convo.cached), cached  # what a plain step adds
        if not self.options.long_cache:
            return False
        if convo.requests and not (cold or stats.sweep):  # the first one writes everything
            convo.steps, convo.step_writes = convo.steps + 1, convo.step_writes + written
        if cold:  # back after longer than any lifetime: all is written now, weighed again below
            convo.long = False
        if not convo.long and (cold or stats.sweep or convo.held is None) and convo.steps:
            # only where the held point is written anew, so that its entry lives as long; weighed
            # on what a request of this conversation usually writes, since from then on all do
            # (and on all of it when it is all written now)
            odds = convo.pauses / convo.gaps if convo.gaps else 0.0
            saves = odds * (PRICE_WRITE_5M - PRICE_READ) * cached
            usual = cached if cold else convo.step_writes / convo.steps
            convo.long = saves > (PRICE_WRITE_1H - PRICE_WRITE_5M) * usual
        if not convo.long or not marks.lengthen(body):
            return False
        convo.ttl = TTL_1H
        stats.long_cache = True
        return True

    def _move_before(self, messages: list[Any], fresh: _Result) -> bool:
        spot = marks.user_spot_before(messages, fresh.message, fresh.index)
        return spot is not None and marks.move_last_mark(messages, spot)

    # ---- what is kept whole, what is recent ---------------------------------------------------
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

    def _kept_whole(self, r: _Result) -> bool:
        opts = self.options
        return (
            r.tokens < opts.min_tokens
            or r.name in opts.keep_tools
            or (r.is_error and r.tokens <= opts.error_cap)
            or _has_image(r.block.get("content"))
            or _starts_with_marker(r.block.get("content"))
        )

    # ---- deciding -----------------------------------------------------------------------------
    def _epoch(self, pending: list[_Result], stats: LiveStats, session: str | None) -> None:
        made: list[Observation] = []
        originals: list[Observation] = []
        for r in pending:
            obs = self._decision(r)
            self.decisions[r.tid] = obs
            made.append(obs)
            if obs.source == REPLACED:
                originals.append(
                    Observation(
                        tool_use_id=r.tid,
                        tool_name=r.name,
                        text=r.text(),  # redacted by the store writer, off the request path
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
                self.persist(made, originals, session)

    def _decision(self, r: _Result) -> Observation:
        whole = Observation(
            tool_use_id=r.tid,
            tool_name=r.name,
            text="",
            original_tokens=r.tokens,
            tokens=r.tokens,
            is_error=r.is_error,
            source=WHOLE,
        )
        if self._kept_whole(r):
            return whole
        future = self._building.pop(r.tid, None)
        if future is not None and future.done():
            obs = future.result()
        else:
            if future is not None:
                future.cancel()
            obs = _observe(
                r.tid, r.name, r.tool_input, r.text(), r.is_error, r.tokens, self.options.max_tokens
            )
        if obs is None:
            return whole
        _text, tokens = self._remember_render(obs)
        if tokens > (1 - self.options.min_saving) * r.tokens:
            self._rendered.pop(r.tid, None)
            return whole
        return obs

    def _prebuild(self, fresh: list[_Result]) -> None:
        """Start building the observations of results seen for the first time (off the request
        path: by the next request, deciding is a lookup)."""
        if not self.options.prebuild:
            return
        for r in fresh:
            if r.tid in self.decisions or r.tid in self._building or self._kept_whole(r):
                continue
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, "ic-live-observe")
            self._building[r.tid] = self._pool.submit(
                _observe, r.tid, r.name, r.tool_input, r.text(), r.is_error, r.tokens, self.options.max_tokens
            )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    # ---- helpers ------------------------------------------------------------------------------
    def _conversation(self, body: dict[str, Any]) -> _Conversation:
        """This request's conversation, told apart by the client's metadata and first message
        (without its breakpoint: the first request of a conversation has one there)."""
        messages = body["messages"]
        first = without_markers(messages[0]) if messages else None
        key = hashlib.blake2b(orjson.dumps([body.get("metadata"), first]), digest_size=16).digest()
        convo = self._conversations.pop(key, None) or _Conversation()
        self._conversations[key] = convo  # newest last: the oldest go first when there are too many
        while len(self._conversations) > 512:
            del self._conversations[next(iter(self._conversations))]
        return convo

    def _cold(self, convo: _Conversation, messages: list[Any]) -> bool:
        """True when the conversation's previous request is older than the cache lifetime its
        breakpoints asked for: everything is written again anyway, so a sweep now is free. Counts
        the gap (and whether it was a pause) and forgets the entries it outlived."""
        spot = marks.last_message_mark(messages)
        found = block_markers(marks.block_at(messages, spot) or {}) if spot is not None else []
        was, convo.ttl = convo.ttl, (marker_ttl(found[-1]) if found else convo.ttl)
        if not convo.seen:
            return False
        gap = self.clock() - convo.seen
        convo.gaps += 1
        convo.pauses += TTL_5M < gap <= TTL_1H
        if gap > convo.held_ttl:  # the held entry is gone, though a longer-lived later one may not be
            convo.held = None
        if gap > TTL_5M and convo.long:  # so are the client's system prompt's (read, never rewritten)
            convo.head_gone = True
        return self.options.cold_sweep and gap > was

    def _sizes(self, convo: _Conversation, messages: list[Any], results: list[_Result]) -> None:
        """Tokens of each message besides its tool results, measured once per message."""
        known = len(convo.other)
        if known > len(messages):
            del convo.other[:]
            known = 0
        for message in messages[known:]:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):
                rest = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
            else:
                rest = [content]
            convo.other.append(int(len(orjson.dumps(rest)) / CHARS_PER_TOKEN_FALLBACK))

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

    def _estimate(self, size: int, results: list[_Result]) -> int:
        """A cheap size of the request as forwarded: bytes / 3.1 less what decisions save."""
        tokens = int(size / CHARS_PER_TOKEN_FALLBACK)
        for r in results:
            decision = self.decisions.get(r.tid)
            if decision is not None and decision.source == REPLACED:
                tokens -= r.tokens - decision.tokens
        return tokens

    def _results(self, messages: list[Any]) -> list[_Result]:
        uses: dict[str, tuple[str, dict[str, Any]]] = {}
        found: list[_Result] = []
        tokens_of = self._tokens
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("content"), list):
                continue
            role = message.get("role")
            for position, block in enumerate(message["content"]):
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
                    tokens = tokens_of.get(tid)
                    if tokens is None:
                        tokens = tokens_of[tid] = fast_count(content_text(block.get("content")))
                    error = bool(block.get("is_error"))
                    found.append(_Result(tid, block, name, tool_input, tokens, error, index, position))
        return found


def _before(a: marks.Spot, b: marks.Spot) -> bool:
    return (a.message, a.index) <= (b.message, b.index)


def _observe(
    tid: str, name: str, tool_input: dict[str, Any], text: str, is_error: bool, tokens: int, max_tokens: int
) -> Observation | None:
    try:
        return build_observation(
            tid,
            name,
            tool_input,
            text,
            is_error=is_error,
            max_tokens=max_tokens,  # a failure past the cap: its first line and its tail
            source=REPLACED,
            original_tokens=tokens,
        )
    except Exception:
        return None


def _has_image(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "image" for b in content
    )


def _starts_with_marker(content: Any) -> bool:
    if isinstance(content, str):
        return content.startswith(MARKER)
    if isinstance(content, list) and content and isinstance(content[0], dict):
        return str(content[0].get("text", "")).startswith(MARKER)
    return False


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
