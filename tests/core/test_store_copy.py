"""`store copy` moves a whole brain: states with history, working memory (items, their index,
the configuration) and observations, from a real SQLite file to every backend; a second copy
copies nothing, and a destination that differs keeps its data."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.memory.text import terms
from infinite_context_brain.core.memory.working import WorkingMemory, indexed
from infinite_context_brain.core.models import HistoryEntry, Observation, ProjectState
from infinite_context_brain.core.storage import Store, open_store
from infinite_context_brain.core.storage.copy import copy_all

from ..conftest import Backend

QUERIES = ["cache", "http response", "parse_http_response", "redis", "deploy staging", "queue", "filler"]


def entry_for(sid: str, version: int, task: str) -> HistoryEntry:
    state = ProjectState.empty(sid)
    state.meta.version = version
    state.active_context.current_task = task
    return HistoryEntry(version=version, timestamp=datetime.now(UTC), merged_by="test", state=state)


def observation(n: int) -> Observation:
    return Observation(
        tool_use_id=f"toolu_{n:04d}", tool_name="Bash", text=f"ran step {n}", original_tokens=900, tokens=12
    )


def fill(store: Store) -> None:
    """Every part: states with history; memory live, archived, promoted, pinned, configured;
    observations; and sessions that have some parts and not others."""
    for sid, versions in (("s-full", 4), ("s-state-only", 2)):
        for _ in range(versions):
            store.states.update_state(
                sid, lambda _cur, nxt, sid=sid: entry_for(sid, nxt, f"{sid} task {nxt}")
            )

    wm = WorkingMemory(store.memory, "s-full", load_settings(memory_auto_compact=False))
    wm.configure(budget=2000, auto_compact=False)
    wm.store_item(content="notes about the cache layer and its eviction policy", importance=7)
    wm.store_item(content="notes about the layer", tags=["cache", "c++"], pinned=True)
    wm.store_item(content="fixed parseHTTPResponse when the body is empty", summary="http fix")
    wm.store_item(content="Error: connection refused to redis at 6379", tags=["redis"])
    wm.store_item(
        content="We decided to go with Postgres for the queue " + " ".join(f"qw{k}" for k in range(300)),
        summary="queue on postgres",
        importance=2,
    )
    for n in range(3):
        wm.store_item(content=f"filler {n} " + " ".join(f"f{n}w{k}" for k in range(200)), importance=1)
    report = wm.compact(0.4)
    assert report.evicted and report.promoted  # archived and promoted items exist
    wm.query("cache")  # access bookkeeping is part of an item too

    other = WorkingMemory(store.memory, "s-memory-only", load_settings())
    other.store_item(content="deploy notes for staging", tags=["deploy"])

    store.observations.put_observations("s-full", [observation(n) for n in range(5)])
    store.observations.put_observation("s-observations-only", observation(99))


def search_table(store: Store, sid: str) -> dict[str, list[tuple[str, float]]]:
    """Ranked hits per query, live and archived; ties ordered by id, scores rounded."""
    table = {}
    for query in QUERIES:
        for archived in (False, True):
            hits = store.memory.memory_search(sid, terms(query), 50, archived)
            table[f"{query}/{archived}"] = sorted(
                ((i, round(s, 6)) for i, s in hits), key=lambda h: (-h[1], h[0])
            )
    return table


def assert_same_brain(source: Store, destination: Store) -> None:
    assert destination.states.sessions() == source.states.sessions() == ["s-full", "s-state-only"]
    assert (
        destination.memory.memory_sessions() == source.memory.memory_sessions() == ["s-full", "s-memory-only"]
    )
    assert destination.observations.observation_sessions() == source.observations.observation_sessions()
    assert source.observations.observation_sessions() == ["s-full", "s-observations-only"]
    for sid in sorted(
        {
            *source.states.sessions(),
            *source.memory.memory_sessions(),
            *source.observations.observation_sessions(),
        }
    ):
        # state + history
        assert destination.states.get_state(sid) == source.states.get_state(sid)
        assert destination.states.current_version(sid) == source.states.current_version(sid)
        assert destination.states.history(sid) == source.states.history(sid)
        # working memory: items, index terms, configuration, usage
        mine = {e.item.id: e for e in source.memory.memory_export(sid)}
        theirs = {e.item.id: e for e in destination.memory.memory_export(sid)}
        assert {i: e.item for i, e in theirs.items()} == {i: e.item for i, e in mine.items()}
        for item_id, entry in mine.items():
            assert Counter(theirs[item_id].terms.body) == Counter(entry.terms.body), item_id
            assert Counter(theirs[item_id].terms.tags) == Counter(entry.terms.tags), item_id
        assert destination.memory.memory_config(sid) == source.memory.memory_config(sid)
        assert destination.memory.memory_usage(sid) == source.memory.memory_usage(sid)
        assert destination.memory.memory_page(sid, False, 0, 100) == source.memory.memory_page(
            sid, False, 0, 100
        )
        assert destination.memory.memory_page(sid, True, 0, 100) == source.memory.memory_page(
            sid, True, 0, 100
        )
        # observations
        assert destination.observations.all_observations(sid) == source.observations.all_observations(sid)


def test_copy_moves_every_part_and_a_second_copy_copies_nothing(backend: Backend, tmp_path: Path) -> None:
    source = open_store(load_settings(store_url=f"sqlite:///{tmp_path / 'source.db'}"))
    destination = backend.open()
    try:
        fill(source)
        items = {e.item.id: e.item for e in source.memory.memory_export("s-full")}
        assert any(i.archived for i in items.values()) and any(i.promoted for i in items.values())

        first = copy_all(source, destination)
        assert first.skipped == []
        assert (first.sessions_seen, first.sessions_copied, first.history_entries_copied) == (4, 2, 6)
        assert first.memory_items_copied == len(items) + 1
        assert (first.memory_configs_copied, first.observations_copied) == (1, 6)
        assert_same_brain(source, destination)

        # BM25 statistics are per session on every backend: the copy ranks as the source does
        assert search_table(destination, "s-full") == search_table(source, "s-full")
        # The copied index finds what the destination's own index of the same items finds, with
        # the same scores (the terms came from the source's index, not a second analysis).
        destination.memory.memory_put("s-reference", indexed(list(items.values())))
        assert search_table(destination, "s-full") == search_table(destination, "s-reference")
        assert destination.memory.memory_delete("s-reference", list(items)) == len(items)

        second = copy_all(source, destination)
        assert second.skipped == []
        assert (second.sessions_copied, second.history_entries_copied, second.memory_items_copied) == (
            0,
            0,
            0,
        )
        assert (second.memory_configs_copied, second.observations_copied) == (0, 0)
        assert (second.sessions_unchanged, second.memory_items_unchanged, second.observations_unchanged) == (
            2,
            len(items) + 1,
            6,
        )
        assert_same_brain(source, destination)
    finally:
        source.close()


def test_a_destination_that_differs_keeps_its_data(backend: Backend, tmp_path: Path) -> None:
    source = open_store(load_settings(store_url=f"sqlite:///{tmp_path / 'source.db'}"))
    destination = backend.open()
    try:
        fill(source)
        copy_all(source, destination)
        edited = WorkingMemory(destination.memory, "s-full", load_settings()).list_items()[0]
        edited = WorkingMemory(destination.memory, "s-full", load_settings()).update(
            edited.id, summary="edited there"
        )
        destination.observations.put_observation(
            "s-full", observation(0).model_copy(update={"text": "decided there"})
        )
        destination.states.update_state("s-full", lambda _cur, nxt: entry_for("s-full", nxt, "ahead there"))

        report = copy_all(source, destination)
        assert report.sessions_copied == report.memory_items_copied == report.observations_copied == 0
        assert len(report.skipped) == 3 and "ahead" in report.skipped[0]
        assert "1 memory items differ" in report.skipped[1] and "1 observations differ" in report.skipped[2]
        assert destination.memory.memory_get("s-full", [edited.id])[edited.id].summary == "edited there"
        assert (
            destination.observations.get_observations("s-full", ["toolu_0000"])["toolu_0000"].text
            == "decided there"
        )
        assert destination.states.get_state("s-full").active_context.current_task == "ahead there"  # type: ignore[union-attr]
    finally:
        source.close()
