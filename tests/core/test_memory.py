"""Working memory on every backend: ranking, compaction (nothing lost), budgets, bad input."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.errors import InvalidInput, NotFound
from infinite_context_brain.core.memory.model import MemoryItem
from infinite_context_brain.core.memory.text import auto_tags, detect_type, terms
from infinite_context_brain.core.memory.working import WorkingMemory, indexed
from infinite_context_brain.core.models import utcnow
from infinite_context_brain.core.storage import Store

from ..conftest import Backend


def memory(store: Store, client: str | None = None, **overrides: object) -> WorkingMemory:
    return WorkingMemory(store.memory, f"mem-{uuid.uuid4().hex[:8]}", load_settings(**overrides), client)


@pytest.fixture
def mem(backend: Backend) -> WorkingMemory:
    return memory(backend.open())


def test_content_types_tags_and_terms() -> None:
    assert detect_type("Error: connection refused") == "error"
    assert detect_type('Traceback (most recent call last):\n  File "a.py", line 3') == "error"
    assert detect_type("We decided to go with Postgres for the queue") == "decision"
    assert detect_type("def handler(request):\n    return 1") == "code"
    assert detect_type("$ kubectl get pods\nNAME  READY") == "tool_output"
    assert detect_type("The login page looks better now") == "prose"
    tags = auto_tags("Deploy api.py to kubernetes, see https://example.com/x", "prose")
    assert tags == ["prose", ".py", "kubernetes", "reference"]
    assert {"parse", "http", "response", "parsehttpresponse"} <= set(terms("parseHTTPResponse"))
    assert {"get", "user", "getuserbyid"} <= set(terms("get_user_by_id"))


def test_store_is_durable_and_round_trips(backend: Backend) -> None:
    store = backend.open()
    wm = memory(store)
    item, report = wm.store_item(content="Decided: use server sessions", importance=8, tags=["Auth"])
    assert report is None and item.content_type == "decision" and item.tags == ["auth"]
    again = WorkingMemory(backend.open().memory, wm.session_id, wm.settings)  # another connection
    found = again.list_items()
    assert [i.id for i in found] == [item.id] and found[0].importance == 8


def test_ranking_tag_boost_camel_case_recency_and_pins(mem: WorkingMemory) -> None:
    plain, _ = mem.store_item(content="notes about the cache layer and its eviction policy")
    tagged, _ = mem.store_item(content="notes about the layer", tags=["cache"])
    camel, _ = mem.store_item(content="fixed parseHTTPResponse when the body is empty")
    mem.store_item(content="unrelated words entirely about gardening")
    hits = mem.query("cache")
    assert [h.item.id for h in hits][:2] == [tagged.id, plain.id]  # a tag match outranks a body match
    assert mem.query("http response")[0].item.id == camel.id  # camelCase split
    assert mem.query("parse_http_response")[0].item.id == camel.id  # snake_case split

    old = MemoryItem(  # the same text and tags: a tie that recency breaks
        content="deploy notes for staging", tags=["prose"], tokens=5, accessed_at=utcnow() - timedelta(days=3)
    )
    mem.store.memory_put(mem.session_id, indexed([old]))
    fresh, _ = mem.store_item(content="deploy notes for staging")
    ranked = [h.item.id for h in mem.query("deploy staging")]
    assert ranked.index(fresh.id) < ranked.index(old.id)  # recency breaks the tie

    assert mem.query("", tags=["cache"])[0].item.id == tagged.id
    pinned = mem.set_pinned(plain.id, True)
    assert mem.recall().items[0].id == pinned.id  # pinned first


def test_query_touches_access_and_keeps_it(mem: WorkingMemory) -> None:
    item, _ = mem.store_item(content="the redis cluster needs hash tags")
    mem.query("redis cluster")
    mem.query("hash tags")
    stored = mem.store.memory_get(mem.session_id, [item.id])[item.id]
    assert stored.access_count == 2 and stored.accessed_at > item.accessed_at


def test_compaction_promotes_dedups_evicts_and_loses_nothing(mem: WorkingMemory) -> None:
    mem.configure(budget=1000, auto_compact=False)

    def long(tag: str) -> str:  # distinct words, so only the planted pair overlaps
        return " ".join(f"{tag}w{k}" for k in range(150))

    summarised, _ = mem.store_item(
        content="design of the queue " + long("q"), summary="queue design", importance=2
    )
    dup_a, _ = mem.store_item(
        content="the deploy script copies files then restarts nginx on the host", importance=3
    )
    dup_b, _ = mem.store_item(
        content="the deploy script copies files then restarts nginx on the host now", importance=6
    )
    keep, _ = mem.store_item(content="pinned fact " + long("p"), pinned=True)
    fillers = [mem.store_item(content=f"filler {n} " + long(f"f{n}"), importance=1)[0] for n in range(3)]
    before = mem.budget_status().used
    report = mem.compact(0.5)
    assert report.after_tokens <= 500 < before
    assert summarised.id in report.promoted
    assert dup_a.id in report.deduplicated and dup_b.id not in report.deduplicated
    assert report.evicted and keep.id not in report.evicted + report.deduplicated
    assert mem.budget_status().used == report.after_tokens

    everything = {i.id: i for i in mem.store.memory_all(mem.session_id, archived=None)}
    assert len(everything) == 7  # nothing disappeared
    promoted = everything[summarised.id]
    assert promoted.promoted and promoted.content.startswith("design of the queue")  # original kept
    archived_hits = mem.query("filler", archived=True)
    assert {h.item.id for h in archived_hits} >= {f.id for f in fillers if f.id in report.evicted}
    restored = mem.update(report.evicted[0], restore=True)
    assert (
        not restored.archived
        and mem.store.memory_get(mem.session_id, [restored.id])[restored.id].archived is False
    )


def test_auto_compaction_at_threshold(mem: WorkingMemory) -> None:
    mem.configure(budget=1000, threshold=0.5)
    report = None
    for n in range(20):
        _, report = mem.store_item(content=f"item {n} " + "text " * 60)
        if report is not None:
            break
    assert report is not None and report.after_tokens <= report.target_tokens
    assert mem.budget_status().used <= 1000 * 0.5


def test_budget_detection_and_precedence(backend: Backend) -> None:
    store = backend.open()
    assert memory(store, "claude-code").config().budget == 80_000
    assert memory(store, "Cursor").config().budget == 60_000
    assert memory(store, "vscode").config().budget == 100_000
    assert memory(store, "claude-code", budget=50_000).config().budget == 50_000
    wm = memory(store, "claude-code", budget=50_000)
    wm.configure(budget=12_000)
    assert wm.config().budget == 12_000 and wm.config().source == "configure"


def test_bad_input_names_the_field_and_stores_nothing(mem: WorkingMemory) -> None:
    with pytest.raises(InvalidInput, match="importance"):
        mem.store_item(content="x", importance=11)
    with pytest.raises(InvalidInput, match="content"):
        mem.store_item(content="   ")
    with pytest.raises(InvalidInput, match=r"items\[1\]\.importance"):
        mem.bulk_store([{"content": "fine"}, {"content": "bad", "importance": 0}])
    with pytest.raises(InvalidInput, match=r"items\[0\]"):
        mem.bulk_store(["not an object"])
    assert mem.budget_status().items == 0  # the bulk write is all or nothing
    with pytest.raises(NotFound):
        mem.update("nope", summary="x")
    with pytest.raises(NotFound):
        mem.forget("nope")
    with pytest.raises(InvalidInput, match="query"):
        mem.query("")
    with pytest.raises(InvalidInput, match="budget"):
        mem.configure(budget=5)


def test_secrets_are_redacted_before_storage(mem: WorkingMemory) -> None:
    item, _ = mem.store_item(content="key is sk-ant-api03-" + "a" * 40, summary="AKIAABCDEFGHIJKLMNOP")
    stored = mem.store.memory_get(mem.session_id, [item.id])[item.id]
    assert "sk-ant-api03-aaaa" not in stored.content and "AKIAABCDEFGHIJKLMNOP" not in (stored.summary or "")


def test_forget_is_the_only_delete_and_export_import_round_trip(backend: Backend) -> None:
    wm = memory(backend.open())
    a, _ = wm.store_item(content="alpha note", summary="alpha")
    b, _ = wm.store_item(content="beta note")
    wm.forget(b.id)
    assert [i.id for i in wm.list_items()] == [a.id]
    assert wm.query("beta") == []
    exported = wm.export()
    other = memory(backend.open())
    assert other.import_items(exported) == 1
    assert other.list_items()[0].content == "alpha note"
    assert wm.export(summaries_only=True)[0]["summary"] == "alpha"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(min_value=5, max_value=400), min_size=1, max_size=25),
    pins=st.lists(st.booleans(), min_size=25, max_size=25),
    share=st.floats(min_value=0.05, max_value=1.0),
)
def test_compaction_properties(
    sizes: list[int], pins: list[bool], share: float, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from infinite_context_brain.core.storage import open_store

    path = tmp_path_factory.mktemp("prop") / "m.db"
    with open_store(load_settings(store_url=f"sqlite:///{path}")) as store:
        wm = memory(store, budget=100_000, memory_auto_compact=False)
        ids = []
        for n, size in enumerate(sizes):
            item, _ = wm.store_item(
                content=f"topic{n} " + " ".join(f"w{n}x{k}" for k in range(size)),
                summary=f"summary {n}" if n % 2 else None,
                pinned=pins[n],
            )
            ids.append(item)
        pinned_tokens = sum(i.tokens for i in ids if i.pinned)
        target = int(share * sum(i.tokens for i in ids))
        report = wm.compact(target)
        after = {i.id: i for i in store.memory.memory_all(wm.session_id, archived=None)}
        assert set(after) == {i.id for i in ids}  # every item live or archived
        for original in ids:
            if original.pinned:
                assert after[original.id] == original  # untouched
            assert after[original.id].content == original.content  # content never destroyed
        live = sum(i.tokens for i in after.values() if not i.archived)
        assert live == report.after_tokens
        assert live <= max(target, pinned_tokens)  # the budget is met unless pins alone exceed it
