"""The live (proxy) transform on real fixture sessions replayed as Messages API requests:
deterministic, byte-prefix-stable between epochs, cache markers, thinking blocks, system and
tools untouched, every tool_result still paired with its tool_use."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from infinite_context.core.models import Observation
from infinite_context.core.transcript.live import (
    LiveOptions,
    LiveStats,
    LiveTransformer,
    prefix_stable,
)
from infinite_context.core.transcript.replay import requests
from infinite_context.core.transcript.transform import MARKER

from ..conftest import PHANTOM, SPOTTER_LONG


@pytest.fixture(scope="module")
def spotter() -> list[bytes]:
    return requests(SPOTTER_LONG)


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


def test_deterministic_and_prefix_stable_between_epochs(spotter: list[bytes]) -> None:
    first, stats = replay(spotter)
    again, _ = replay(spotter)
    assert first == again  # same requests, same bytes
    epochs = [i for i, s in enumerate(stats) if s.epoch]
    assert 1 <= len(epochs) <= len(spotter) // 20  # >= 95% of requests are plain extensions
    bodies = [orjson.loads(b) for b in first]
    for i in range(1, len(bodies)):
        if i not in epochs:
            assert prefix_stable(bodies[i - 1], bodies[i]), f"request {i} rewrote its prefix"
    last = stats[-1]
    assert last.tokens_after < 0.25 * last.tokens_before


def test_markers_thinking_system_tools_and_pairing_kept(spotter: list[bytes]) -> None:
    outs, _ = replay(spotter)
    for raw, out in zip(spotter[::10], outs[::10], strict=True):
        before, after = orjson.loads(raw), orjson.loads(out)
        assert markers(after) == markers(before) <= 4
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
                    assert {k for k in a if k != "content"} == {k for k in b if k != "content"}
                else:
                    assert a == b
    thinking = [out for out, raw in zip(outs, spotter, strict=True) if b'"signature"' in raw]
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
    out, stats = LiveTransformer(options=LiveOptions(keep_recent=2, epoch_tokens=1000)).transform_body(raw)
    sent = orjson.loads(out)["messages"]
    contents = [m["content"][0]["content"] for m in sent if m["role"] == "user"]
    assert stats.epoch and contents[0] == "Error: exit code 1\nboom at x.py:3"  # failed, under the cap
    assert all(c.startswith(MARKER) for c in contents[1:4])
    assert contents[4] == big and contents[5] == big  # the newest two stay whole
