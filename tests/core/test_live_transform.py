"""The live (proxy) transform on real fixture sessions replayed as Messages API requests:
deterministic, byte-prefix-stable between epochs and cache-stable across them, cache markers,
thinking blocks, system and tools untouched, every tool_result still paired with its tool_use,
results the model has not read always whole, very large ones replaced once read."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from infinite_context_brain.core.models import Observation
from infinite_context_brain.core.transcript.live import (
    LiveOptions,
    LiveStats,
    LiveTransformer,
    cache_kept,
    message_blocks,
    prefix_stable,
    strip_cache_control,
)
from infinite_context_brain.core.transcript.reader import content_text
from infinite_context_brain.core.transcript.replay import requests
from infinite_context_brain.core.transcript.transform import MARKER

from ..conftest import PHANTOM, SPOTTER_LONG


@pytest.fixture(scope="module")
def spotter() -> list[bytes]:
    return requests(SPOTTER_LONG)


@pytest.fixture(scope="module")
def phantom() -> list[bytes]:
    return requests(PHANTOM)  # few requests, tool outputs of 2-15k tokens


def replay(bodies: list[bytes], t: LiveTransformer | None = None) -> tuple[list[bytes], list[LiveStats]]:
    t = t or LiveTransformer()
    outs, stats = [], []
    for raw in bodies:
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


@pytest.mark.parametrize("session", ["spotter", "phantom"])
def test_deterministic_and_prefix_stable_between_epochs(session: str, request: pytest.FixtureRequest) -> None:
    bodies_in: list[bytes] = request.getfixturevalue(session)
    first, stats = replay(bodies_in)
    again, _ = replay(bodies_in)
    assert first == again  # same requests, same bytes
    sweeps = [i for i, s in enumerate(stats) if s.sweep]
    assert any(s.epoch for s in stats) and len(sweeps) <= max(1, len(bodies_in) // 20)  # few reach back
    bodies = [orjson.loads(b) for b in first]
    moved = {i for i, s in enumerate(stats) if s.cache_moved}
    for i in range(1, len(bodies)):
        if i not in sweeps:  # what the previous request cached is still a prefix
            assert cache_kept(bodies[i - 1], bodies[i]), f"request {i} rewrote what was cached"
        if not stats[i].epoch and i - 1 not in moved:  # and then the whole of it
            assert prefix_stable(bodies[i - 1], bodies[i]), f"request {i} rewrote its prefix"
    last = stats[-1]
    assert last.tokens_after < 0.25 * last.tokens_before


@pytest.mark.parametrize("session", ["spotter", "phantom"])
def test_markers_thinking_system_tools_and_pairing_kept(session: str, request: pytest.FixtureRequest) -> None:
    bodies: list[bytes] = request.getfixturevalue(session)
    outs, stats = replay(bodies)
    assert any(s.cache_moved for s in stats)
    step = 10 if len(bodies) > 50 else 1
    for raw, out in zip(bodies[::step], outs[::step], strict=True):
        before, after = orjson.loads(raw), orjson.loads(out)
        assert 1 <= markers(after) <= markers(before) <= 4  # moved, never added
        assert after["system"] == before["system"] and after["tools"] == before["tools"]
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
                    assert strip_cache_control(a) == strip_cache_control(b)
    if session != "spotter":
        return
    thinking = [out for out, raw in zip(outs, bodies, strict=True) if b'"signature"' in raw]
    assert thinking, "the fixture session must hold signed thinking blocks"
    assert all(b'"signature"' in out for out in thinking)


def test_unchanged_body_is_forwarded_as_received() -> None:
    raw = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
    out, stats = LiveTransformer().transform_body(raw)
    assert out is raw and not stats.changed
    with pytest.raises(orjson.JSONDecodeError):
        LiveTransformer().transform_body(b"{not json")


def test_decisions_survive_a_restart_through_the_store() -> None:
    bodies = requests(PHANTOM)
    saved: dict[str, Observation] = {}

    def persist(decisions: list[Observation], originals: list[Observation]) -> None:
        saved.update({o.tool_use_id: o for o in decisions})

    first = LiveTransformer(persist=persist)
    outs, _ = replay(bodies[:15], first)
    assert saved and any(o.source == "proxy" for o in saved.values())
    # a new process: decisions come back from the store, and the next request renders the same bytes
    second = LiveTransformer(lookup=lambda ids: {i: saved[i] for i in ids if i in saved})
    again, _ = replay(bodies[14:15], second)
    assert again[0] == outs[-1]
    assert MARKER.encode() in again[0]


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


def test_unread_results_whole_and_large_ones_replaced_once_read(phantom: list[bytes]) -> None:
    options = LiveOptions()
    outs, stats = replay(phantom, LiveTransformer(options=options))
    seen_once = 0
    for n, (raw, out) in enumerate(zip(phantom, outs, strict=True)):
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
            blocks, cached = message_blocks(after)
            first_big = orjson.dumps([last_user, "user", big[0]])
            assert first_big in blocks and blocks.index(first_big) >= cached
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
