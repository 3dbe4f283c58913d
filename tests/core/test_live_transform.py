"""The live (proxy) transform on real fixture sessions replayed as Messages API requests, billed by
the provider's cache rules (``cache_rules``): deterministic, cheaper than sending them as they are,
never more than four breakpoints (nor one the client did not allow for), lifetimes in order,
thinking blocks, system and tools untouched, every tool_result still paired with its tool_use,
results the model has not read always whole, very large ones replaced once read; a sweep reads
what precedes the breakpoint held before the oldest undecided result. The tests that replay the
fixture sessions carry an explicit marker that skips them without ``../shared``."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from infinite_context_brain.core.models import Observation
from infinite_context_brain.core.transcript.cache_rules import (
    Bill,
    Block,
    PromptCache,
    block_markers,
    request_blocks,
    without_markers,
)
from infinite_context_brain.core.transcript.live import LiveOptions, LiveStats, LiveTransformer
from infinite_context_brain.core.transcript.reader import content_text
from infinite_context_brain.core.transcript.replay import timed_requests
from infinite_context_brain.core.transcript.transform import MARKER

from ..conftest import PHANTOM, SPOTTER_LONG
from ..helpers.paused import PAUSED, paused_request, ttls


@pytest.fixture(scope="module")
def spotter() -> list[tuple[float, bytes]]:
    return timed_requests(SPOTTER_LONG)


@pytest.fixture(scope="module")
def phantom() -> list[tuple[float, bytes]]:
    return timed_requests(PHANTOM)  # few requests, tool outputs of 2-15k tokens


def replay(
    timed: list[tuple[float, bytes]], t: LiveTransformer | None = None, options: LiveOptions | None = None
) -> tuple[list[bytes], list[LiveStats]]:
    """Each body through one transformer, its clock at the time the request was sent."""
    now = [0.0]
    t = t or LiveTransformer(options=options or LiveOptions(), clock=lambda: now[0])
    outs, stats = [], []
    for at, raw in timed:
        now[0] = at
        out, st = t.transform_body(raw)
        outs.append(out)
        stats.append(st)
    return outs, stats


def markers(value: Any) -> int:
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(markers(v) for v in value.values())
    if isinstance(value, list):
        return sum(markers(v) for v in value)
    return 0


def billed(bodies: list[bytes], times: list[float]) -> list[Bill]:
    """Each request billed by the provider's rules (system and tools as 18,000 tokens)."""
    cache = PromptCache()
    bills = []
    for at, raw in zip(times, bodies, strict=True):
        body = orjson.loads(raw)
        blocks = request_blocks(body, lambda key: int(len(key) / 3.1))
        head = len(body["tools"]) + len(body["system"])
        blocks[head - 1] = Block(blocks[head - 1].key, 18_000, blocks[head - 1].ttl)
        bills.append(cache.send(blocks, at))
    return bills


@pytest.mark.fixtures
@pytest.mark.parametrize("session", ["spotter", "phantom"])
def test_deterministic_and_cheaper_by_the_providers_rules(
    session: str, request: pytest.FixtureRequest
) -> None:
    timed: list[tuple[float, bytes]] = request.getfixturevalue(session)
    first, stats = replay(timed)
    again, _ = replay(timed)
    assert first == again  # same requests, same bytes
    times = [at for at, _ in timed]
    direct, ours = billed([raw for _, raw in timed], times), billed(first, times)
    assert not any(b.refused for b in ours)  # never more than four breakpoints, lifetimes in order
    assert sum(b.cost for b in ours) < 0.7 * sum(b.cost for b in direct)
    sweeps = [i for i, s in enumerate(stats) if s.sweep]
    assert sweeps and len(sweeps) <= max(2, len(timed) // 10)  # few reach back
    # after the first sweep, a sweep on a warm cache reads what precedes the point held before the
    # oldest undecided result: only what follows it is written again
    warm = [i for i in sweeps[1:] if times[i] - times[i - 1] < 300]
    assert all(ours[i].read > 18_000 for i in warm) and (warm or session == "phantom")
    last = stats[-1]
    assert last.tokens_after < 0.25 * last.tokens_before


@pytest.mark.fixtures
@pytest.mark.parametrize("session", ["spotter", "phantom"])
def test_markers_thinking_system_tools_and_pairing_kept(session: str, request: pytest.FixtureRequest) -> None:
    timed: list[tuple[float, bytes]] = request.getfixturevalue(session)
    outs, stats = replay(timed)
    assert any(s.cache_moved for s in stats) and any(s.held for s in stats)
    step = 10 if len(timed) > 50 else 1
    for (_at, raw), out in zip(timed[::step], outs[::step], strict=True):
        before, after = orjson.loads(raw), orjson.loads(out)
        assert 1 <= markers(after) <= min(4, markers(before) + 1)  # one of ours at most, four in all
        for part in ("system", "tools"):  # the same blocks, breakpoints where they were (a lifetime may grow)
            assert [without_markers(b) for b in after[part]] == [without_markers(b) for b in before[part]]
            assert [bool(block_markers(b)) for b in after[part]] == [
                bool(block_markers(b)) for b in before[part]
            ]
        assert len(after["messages"]) == len(before["messages"])
        uses: set[str] = set()
        for old, new in zip(before["messages"], after["messages"], strict=True):
            if old["role"] == "assistant":  # thinking blocks, signatures, tool uses: the same bytes
                assert orjson.dumps(new) == orjson.dumps(old)
                uses |= {b["id"] for b in new["content"] if b.get("type") == "tool_use"}
                continue
            for a, b in zip(old["content"], new["content"], strict=True):
                assert a.get("type") == b.get("type")
                if b.get("type") == "tool_result":
                    assert b["tool_use_id"] == a["tool_use_id"] and b["tool_use_id"] in uses
                    assert {k for k in a if k != "content"} - {"cache_control"} == {
                        k for k in b if k != "content"
                    } - {"cache_control"}
                else:  # a cache breakpoint may have moved, nothing else
                    assert without_markers(a) == without_markers(b)
    if session != "spotter":
        return
    thinking = [out for out, (_at, raw) in zip(outs, timed, strict=True) if b'"signature"' in raw]
    assert thinking, "the fixture session must hold signed thinking blocks"
    assert all(b'"signature"' in out for out in thinking)


def test_unchanged_body_is_forwarded_as_received() -> None:
    raw = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
    out, stats = LiveTransformer().transform_body(raw)
    assert out is raw and not stats.changed
    with pytest.raises(orjson.JSONDecodeError):
        LiveTransformer().transform_body(b"{not json")


@pytest.mark.fixtures
def test_decisions_and_originals_survive_a_restart_through_the_store() -> None:
    timed = timed_requests(PHANTOM)
    saved: dict[str, Observation] = {}
    kept: dict[str, list[str]] = {}

    def persist(decisions: list[Observation], originals: list[Observation], session: str | None) -> None:
        saved.update({o.tool_use_id: o for o in decisions})
        kept.setdefault(str(session), []).extend(o.tool_use_id for o in originals)

    first = LiveTransformer(persist=persist)
    outs = [first.transform_body(raw, session="s-1")[0] for _at, raw in timed[:15]]
    assert saved and any(o.source == "proxy" for o in saved.values())
    assert list(kept) == ["s-1"] and kept["s-1"]  # originals under the Claude Code session
    # a new process: decisions come back from the store, and the next request renders the same
    # results (its breakpoints may sit elsewhere: where it held one is not stored)
    second = LiveTransformer(lookup=lambda ids: {i: saved[i] for i in ids if i in saved})
    again, _ = second.transform_body(timed[14][1])
    assert without_markers(orjson.loads(again)) == without_markers(orjson.loads(outs[-1]))
    assert MARKER.encode() in again


def test_recent_and_small_failed_results_stay_whole() -> None:
    big = "line of output that goes on\n" * 2000
    messages: list[dict[str, Any]] = []
    for i in range(6):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}],
            }
        )
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"t{i}", "content": big}
        if i == 0:
            result = {**result, "content": "Error: exit code 1\nboom at x.py:3", "is_error": True}
        messages.append({"role": "user", "content": [result]})
    raw = orjson.dumps({"model": "m", "messages": messages})
    # counted in results only: no token budget, so no result is replaced on sight
    options = LiveOptions(keep_recent=2, epoch_tokens=1000, keep_recent_tokens=0)
    out, stats = LiveTransformer(options=options).transform_body(raw)
    sent = orjson.loads(out)["messages"]
    contents = [m["content"][0]["content"] for m in sent if m["role"] == "user"]
    assert stats.epoch and contents[0] == "Error: exit code 1\nboom at x.py:3"  # failed, under the cap
    assert all(c.startswith(MARKER) for c in contents[1:4])
    assert contents[4] == big and contents[5] == big  # the newest two stay whole
    # with the token budget (the default), the one read already is too big to keep; the unread one stays
    out, stats = LiveTransformer().transform_body(raw)
    contents = [m["content"][0]["content"] for m in orjson.loads(out)["messages"] if m["role"] == "user"]
    assert contents[4].startswith(MARKER) and contents[5] == big


def _results(body: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [
        (i, b)
        for i, m in enumerate(body["messages"])
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


@pytest.mark.fixtures
def test_unread_results_whole_and_large_ones_replaced_once_read(phantom: list[tuple[float, bytes]]) -> None:
    options = LiveOptions()
    outs, stats = replay(phantom)
    seen_once = 0
    for n, ((_at, raw), out) in enumerate(zip(phantom, outs, strict=True)):
        before, after = orjson.loads(raw), orjson.loads(out)
        last_user = max(i for i, m in enumerate(before["messages"]) if m["role"] == "user")
        sent = dict((b["tool_use_id"], b) for _i, b in _results(after))
        for i, block in _results(before):
            original = content_text(block.get("content"))
            now = content_text(sent[block["tool_use_id"]].get("content"))
            if i == last_user:  # new: the model has not read it yet
                assert now == original, f"request {n}: an unread result was replaced"
            elif (
                i == last_user - 2
                and not block.get("is_error")
                and len(original) > 8 * options.keep_recent_tokens  # surely over the budget
            ):
                assert now.startswith(MARKER), f"request {n}: a large result read once is still whole"
                seen_once += 1
        # a large unread result is not written to the cache: the last breakpoint sits before it
        big = [
            b
            for i, b in _results(after)
            if i == last_user and len(content_text(b.get("content"))) > 8 * options.keep_recent_tokens
        ]
        if big and not any(b.get("is_error") for b in big):
            assert stats[n].cache_moved
            blocks = [b for m in after["messages"] if isinstance(m["content"], list) for b in m["content"]]
            marked = [i for i, b in enumerate(blocks) if block_markers(b)]
            assert marked[-1] < next(i for i, b in enumerate(blocks) if b is big[0])
    assert seen_once >= 3


def test_cache_breakpoint_moves_only_onto_user_blocks() -> None:
    big = "a long line of build output, nothing to see here\n" * 800

    def body(assistant_marker: bool) -> dict[str, Any]:
        use: dict[str, Any] = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}
        if assistant_marker:
            use["cache_control"] = {"type": "ephemeral"}
        return {
            "model": "m",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "build it"}]},
                {
                    "role": "assistant",
                    "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, use],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": big},
                        {
                            "type": "text",
                            "text": "go on",
                            "cache_control": {"type": "ephemeral", "ttl": "1h"},
                        },
                    ],
                },
            ],
        }

    out, stats = LiveTransformer().transform_body(orjson.dumps(body(False)))
    sent = orjson.loads(out)["messages"]
    assert stats.cache_moved and markers(sent) == 1
    assert sent[0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}  # the client's own
    assert sent[1] == body(False)["messages"][1]  # the assistant turn untouched
    assert sent[2]["content"][0]["content"] == big  # unread: whole
    # a breakpoint the client put on the assistant block before it (its TTL may be longer than
    # the moved one's), or on one after the result: nothing moves
    raw = orjson.dumps(body(True))
    out, stats = LiveTransformer().transform_body(raw)
    assert not stats.cache_moved and out is raw
    prefilled = body(False)
    prefilled["messages"].append(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "So", "cache_control": {"type": "ephemeral"}}],
        }
    )
    raw = orjson.dumps(prefilled)
    out, stats = LiveTransformer().transform_body(raw)
    assert not stats.cache_moved and out is raw


def test_failed_results_past_the_cap_keep_their_first_line_and_tail() -> None:
    lines = ["$ pytest -q", *[f"tests/test_{i}.py::test_case PASSED" for i in range(400)]]
    text = "\n".join(
        [*lines, "E   AssertionError: boom", "FAILED tests/test_a.py::test_x", "1 failed, 400 passed"]
    )
    messages: list[dict[str, Any]] = []
    for i, content in enumerate([text, "small"]):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{i}", "content": content, "is_error": i == 0}
                ],
            }
        )
    out, _ = LiveTransformer(options=LiveOptions(keep_recent=0)).transform_body(
        orjson.dumps({"messages": messages})
    )
    replaced = orjson.loads(out)["messages"][1]["content"][0]["content"]
    assert replaced.startswith(MARKER) and "$ pytest -q" in replaced
    assert replaced.rstrip().endswith("1 failed, 400 passed") and "AssertionError: boom" in replaced
    assert len(replaced) < len(text) / 5


def test_a_cold_cache_sweeps_for_free() -> None:
    """No request of a conversation for the cache's lifetime: the next one is written whole
    anyway, so every undecided result is decided then, whatever the epoch threshold."""
    results = "output line that matters a little\n" * 60  # ~400 tokens each: far below an epoch
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for i in range(5):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}],
            }
        )
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": results}]}
        )
    now = [1000.0]

    def body(n: int, ttl: str | None = None) -> bytes:
        marker: dict[str, Any] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
        sent = [*messages[: 2 * n + 1]]
        sent[-1] = {**sent[-1], "content": [{**sent[-1]["content"][0], "cache_control": marker}]}
        return orjson.dumps({"metadata": {"user_id": "u"}, "messages": sent})

    for ttl, gap, swept in ((None, 60, False), (None, 301, True), ("1h", 301, False), ("1h", 3601, True)):
        t = LiveTransformer(clock=lambda: now[0])
        t.transform_body(body(4, ttl))
        now[0] += gap
        out, stats = t.transform_body(body(5, ttl))
        assert stats.sweep is swept, (ttl, gap)
        assert out.count(MARKER.encode()) == (3 if swept else 0)  # the newest two stay whole
    # count_tokens does not warm the cache: it neither starts nor refreshes the clock
    t = LiveTransformer(clock=lambda: now[0])
    t.transform_body(body(3))
    now[0] += 200
    t.transform_body(body(4), caches=False)
    now[0] += 200
    assert t.transform_body(body(5))[1].sweep


def conversation(turns: int, output: str, system_marks: int = 2) -> list[bytes]:
    """Claude Code's requests of a session of ``turns`` Bash calls: ``system_marks`` breakpoints
    in the system prompt and one on the last block of the last message."""
    mark = {"type": "ephemeral"}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    bodies = []
    for i in range(turns + 1):
        sent = [dict(m) for m in messages]
        sent[-1]["content"] = [*sent[-1]["content"][:-1], {**sent[-1]["content"][-1], "cache_control": mark}]
        system = [{"type": "text", "text": f"system {n}", "cache_control": mark} for n in range(system_marks)]
        bodies.append(
            orjson.dumps({"metadata": {"user_id": "u"}, "system": system, "tools": [], "messages": sent})
        )
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"step {i}"},
                    {"type": "tool_use", "id": f"toolu_{i:04d}", "name": "Bash", "input": {"command": "ls"}},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:04d}", "content": output}],
            }
        )
    return bodies


LISTING = "\n".join(f"src/package/module_{n}.py" for n in range(120))  # ~1,000 tokens, a listing


def test_a_sweep_reads_what_precedes_the_held_breakpoint() -> None:
    bodies = conversation(40, LISTING)
    times = [10.0 * i for i in range(len(bodies))]
    outs, stats = replay(list(zip(times, bodies, strict=True)))
    sweeps = [i for i, s in enumerate(stats) if s.sweep]
    assert len(sweeps) >= 2
    cache = PromptCache()
    bills = []
    for at, out in zip(times, outs, strict=True):
        body = orjson.loads(out)
        assert markers(body) <= 4
        blocks = request_blocks(body, lambda key: int(len(key) / 3.1))
        blocks[0] = Block(blocks[0].key, 18_000, blocks[0].ttl)
        bills.append(cache.send(blocks, at))
    assert not any(b.refused for b in bills)
    for i in sweeps[1:]:
        # the held point sits before the oldest result the sweep decided: all before it is read
        assert bills[i].read > bills[sweeps[0]].read
        assert bills[i].write_5m < 0.5 * bills[i].read


@pytest.mark.parametrize("system_marks", [0, 3])
def test_no_breakpoint_the_client_did_not_allow_for(system_marks: int) -> None:
    """A client that sends no breakpoint gets none; one that sends four gets no fifth."""
    bodies = conversation(30, LISTING, system_marks=system_marks)
    if system_marks == 0:
        bodies = [orjson.dumps(without_markers(orjson.loads(b))) for b in bodies]
    outs, stats = replay([(10.0 * i, b) for i, b in enumerate(bodies)])
    assert any(s.sweep for s in stats)
    for raw, out in zip(bodies, outs, strict=True):
        assert markers(orjson.loads(out)) == markers(orjson.loads(raw))
    assert not any(s.held for s in stats)


def test_count_tokens_decides_nothing_and_counts_what_was_decided() -> None:
    bodies = conversation(30, LISTING)
    t = LiveTransformer()
    counted, stats = t.transform_body(bodies[-1], caches=False)
    assert counted == bodies[-1] and not stats.epoch and not t.decisions  # nothing decided yet
    for raw in bodies:
        t.transform_body(raw)
    decided = dict(t.decisions)
    counted, stats = t.transform_body(bodies[-1], caches=False)
    assert t.decisions == decided and not stats.epoch
    assert stats.replaced and counted.count(MARKER.encode()) == stats.replaced
    assert markers(orjson.loads(counted)) == markers(orjson.loads(bodies[-1]))  # breakpoints as sent


def test_a_paused_conversation_asks_for_the_1_hour_lifetime_and_the_next_pause_reads() -> None:
    """Before any pause the client's 5-minute lifetime stands. After a pause of 10 minutes (which
    the 1-hour lifetime would have survived), the next request that writes the held point anew (a
    sweep) asks for an hour on every breakpoint, and so does every request after it; the next
    pause then reads the conversation up to the held point instead of writing it all again."""
    timed = [(at, paused_request(n)) for at, n in PAUSED]
    times = [at for at, _ in timed]
    long_outs, long_stats = replay(timed)
    short_outs, _ = replay(timed, options=LiveOptions(long_cache=False))
    pauses = [i for i in range(1, len(times)) if times[i] - times[i - 1] > 300]
    first = next(i for i, s in enumerate(long_stats) if s.long_cache)
    assert pauses[0] < first < pauses[1] and long_stats[first].sweep
    assert all(set(ttls(out)) == {None} for out in long_outs[:first])
    assert all(s.long_cache for s in long_stats[first:])
    for (_at, raw), out in zip(timed[first:], long_outs[first:], strict=True):
        assert set(ttls(out)) == {"1h"} and len(ttls(raw)) <= len(ttls(out)) <= 4
    bills, short_bills = billed(long_outs, times), billed(short_outs, times)
    assert not any(b.refused for b in bills)  # never a 1-hour breakpoint after a 5-minute one
    assert bills[pauses[1]].read > 18_000 and short_bills[pauses[1]].read == 0
    assert bills[pauses[1]].cost < 0.6 * short_bills[pauses[1]].cost
    assert sum(b.cost for b in bills) < sum(b.cost for b in short_bills)


def test_the_1_hour_lifetime_is_never_asked_for_when_it_cannot_pay_or_was_not_ours_to_give() -> None:
    timed = [(at, paused_request(n)) for at, n in PAUSED]
    # requests never more than 5 minutes apart: no pause, no 1-hour lifetime
    steady = [(1000.0 + 60 * i, raw) for i, (_at, raw) in enumerate(timed)]
    assert not any(s.long_cache for s in replay(steady)[1])
    # the client chose lifetimes itself: they stand, byte for byte where nothing else changed
    own = [(at, paused_request(n, ttl="1h")) for at, n in PAUSED]
    outs, stats = replay(own)
    assert not any(s.long_cache for s in stats) and all(set(ttls(o)) == {"1h"} for o in outs)
    # turned off
    assert not any(s.long_cache for s in replay(timed, options=LiveOptions(long_cache=False))[1])
    # count_tokens neither reads nor writes the cache: it never asks for a lifetime
    now = [0.0]
    t = LiveTransformer(clock=lambda: now[0])
    for at, raw in timed:
        now[0] = at
        t.transform_body(raw)
    now[0] += 30
    out, stats = t.transform_body(paused_request(19), caches=False)
    assert not stats.long_cache and set(ttls(out)) == {None}
