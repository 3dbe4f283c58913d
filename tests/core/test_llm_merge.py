"""LLM merge chain with the real google-genai and anthropic SDKs against local fake servers."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.merge import llm

from ..helpers.fake_providers import fake_provider, good_answer, old_state_in, section_in, session_id_in


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "BACKOFF_BASE_SECONDS", 0.01)


def open_brain(project_dir: Path, store_url: str, **settings: Any) -> ProjectBrain:
    base = {"store_url": store_url, "merge_timeout_seconds": 5.0}
    base.update(settings)
    return ProjectBrain.open(project_dir, load_settings(**base))


def open_both(project_dir: Path, store_url: str, g: Any, a: Any, **settings: Any) -> ProjectBrain:
    """A brain with both provider tiers pointed at their fake servers."""
    return open_brain(
        project_dir,
        store_url,
        gemini_api_key="g",
        gemini_base_url=g.url,
        anthropic_api_key="a",
        anthropic_base_url=a.url,
        **settings,
    )


def test_gemini_success(project_dir: Path, store_url: str) -> None:
    with fake_provider("gemini", [("ok", good_answer("from gemini"))]) as g:
        with open_brain(project_dir, store_url, gemini_api_key="g-key", gemini_base_url=g.url) as brain:
            result = brain.checkpoint("Current task: something in src/app.py", wait=True)
            assert result.merged_by == "gemini:gemini-3.8-flash"
            assert brain.status().merged_by == "gemini:gemini-3.8-flash"
            assert brain.status().current_task == "from gemini"
    (request,) = g.requests
    assert ":generateContent" in request.path and "gemini-3.8-flash" in request.path
    assert request.headers.get("x-goog-api-key") == "g-key"
    config = request.body["generationConfig"]
    assert config["temperature"] == 0.3 and config["maxOutputTokens"] == 8000
    assert config["responseMimeType"] == "application/json" and "responseJsonSchema" in config


def test_gemini_500s_then_anthropic(project_dir: Path, store_url: str) -> None:
    with (
        fake_provider("gemini", [("status", 500)]) as g,
        fake_provider("anthropic", [("ok", good_answer("claude"))]) as a,
        open_both(project_dir, store_url, g, a) as brain,
    ):
        result = brain.checkpoint("Current task: x", wait=True)
    assert len(g.requests) == 3  # one call + two retries
    assert result.merged_by == "anthropic:claude-sonnet-5-5"
    (request,) = a.requests
    assert request.path == "/v1/messages"
    assert request.headers.get("x-api-key") == "a" or request.headers.get("Authorization") == "Bearer a"
    assert request.body["max_tokens"] == 8000 and "temperature" not in request.body
    assert request.body["output_config"]["format"]["type"] == "json_schema"


def test_both_failing_falls_back_offline(
    project_dir: Path, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with fake_provider("gemini", [("status", 503)]) as g, fake_provider("anthropic", [("status", 529)]) as a:
        with open_both(project_dir, store_url, g, a) as brain:
            result = brain.checkpoint("Current task: offline please", wait=True)
    assert result.merged_by == "offline"
    assert any("fell back to offline" in w for w in result.warnings)
    assert "gemini merge failed" in caplog.text and "anthropic merge failed" in caplog.text


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("this is not json", "not valid JSON"),
        (
            '{"meta": {"session_id": 5}, "active_context": {"active_decisions": [{"status": "maybe"}]}}',
            "schema",
        ),
    ],
)
def test_invalid_answers_are_rejected(
    project_dir: Path, store_url: str, caplog: pytest.LogCaptureFixture, answer: str, reason: str
) -> None:
    with fake_provider("gemini", [("ok", answer)]) as g:
        with open_brain(project_dir, store_url, gemini_api_key="g", gemini_base_url=g.url) as brain:
            assert brain.checkpoint("Current task: y", wait=True).merged_by == "offline"
    assert len(g.requests) == 1  # bad output is not retried
    assert reason in caplog.text


def _tamper(change: str) -> Any:
    def build(prompt: str) -> str:
        state = old_state_in(prompt)
        state["meta"]["session_id"] = session_id_in(prompt)
        if change == "session":
            state["meta"]["session_id"] = "someone-else"
        elif change == "drop_pending":
            state["active_context"]["active_decisions"] = []
        elif change == "too_big":
            state["project_context"]["architecture"] = "word " * 20_000
        return json.dumps(state)

    return build


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("session", "session id changed"),
        ("drop_pending", "pending decisions dropped"),
        ("too_big", "over the cap"),
    ],
)
def test_integrity_violations_are_rejected(
    project_dir: Path, store_url: str, caplog: pytest.LogCaptureFixture, change: str, reason: str
) -> None:
    with open_brain(project_dir, store_url) as brain:
        brain.checkpoint("Question: Postgres or SQLite?", wait=True)
        sid = brain.session_id
    with fake_provider("gemini", [("ok", _tamper(change))]) as g:
        with open_brain(project_dir, store_url, gemini_api_key="g", gemini_base_url=g.url) as brain:
            result = brain.checkpoint("Current task: z", wait=True)
            state = brain.resume().state
    assert result.merged_by == "offline" and reason in caplog.text
    assert state is not None and state.meta.session_id == sid
    assert [d.question for d in state.active_context.active_decisions] == ["Postgres or SQLite?"]


def test_429_is_retried_then_succeeds(project_dir: Path, store_url: str) -> None:
    with fake_provider("gemini", [("status", 429), ("ok", good_answer("after retry"))]) as g:
        with open_brain(project_dir, store_url, gemini_api_key="g", gemini_base_url=g.url) as brain:
            result = brain.checkpoint("Current task: q", wait=True)
            tier = brain.merger.tiers[0]  # type: ignore[attr-defined]
    assert result.merged_by.startswith("gemini") and len(g.requests) == 2 and tier.retries_used == 1


def test_429_with_retry_after_waits_as_long_as_the_server_asks(project_dir: Path, store_url: str) -> None:
    # The anthropic SDK's own retry reads retry-after; without it, it would wait 0.375-0.5 s.
    steps = [("status", (429, {"retry-after": "1"})), ("ok", good_answer("after waiting"))]
    with fake_provider("anthropic", steps) as a:
        with open_brain(project_dir, store_url, anthropic_api_key="a", anthropic_base_url=a.url) as brain:
            result = brain.checkpoint("Current task: wait", wait=True)
            tier = brain.merger.tiers[0]  # type: ignore[attr-defined]
    assert result.merged_by.startswith("anthropic") and len(a.requests) == 2 and tier.retries_used == 1
    assert 0.95 <= a.requests[1].at - a.requests[0].at < 2.0


def test_401_fails_over_at_once_with_a_clear_message(
    project_dir: Path, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with fake_provider("gemini", [("status", 401)]) as g, fake_provider("anthropic", [("status", 401)]) as a:
        with open_both(project_dir, store_url, g, a) as brain:
            assert brain.checkpoint("Current task: r", wait=True).merged_by == "offline"
    assert len(g.requests) == 1 and len(a.requests) == 1
    assert "GEMINI_API_KEY was rejected" in caplog.text and "ANTHROPIC_API_KEY was rejected" in caplog.text


def test_hang_past_the_timeout(project_dir: Path, store_url: str) -> None:
    with (
        fake_provider("gemini", [("hang", 5)]) as g,
        open_brain(
            project_dir, store_url, gemini_api_key="g", gemini_base_url=g.url, merge_timeout_seconds=0.5
        ) as b,
    ):
        started = time.monotonic()
        result = b.checkpoint("Current task: s", wait=True)
    assert result.merged_by == "offline"
    assert len(g.requests) == 3 and time.monotonic() - started < 4.5


def test_secrets_never_leave_the_machine(project_dir: Path, store_url: str) -> None:
    secrets = ["sk-ant-api03-" + "Q" * 40, "AIzaSy" + "B" * 33, "ghp_" + "C" * 36, "hunter2hunter2"]
    context = (
        f"Current task: deploy with {secrets[0]}, {secrets[1]}, token {secrets[2]}, password={secrets[3]}"
    )
    with (
        fake_provider("gemini", [("status", 500)]) as g,
        fake_provider("anthropic", [("ok", good_answer("ok"))]) as a,
        open_both(project_dir, store_url, g, a) as brain,
    ):
        brain.checkpoint(context, wait=True)
    bodies = b"".join(r.raw for r in g.requests + a.requests)
    assert g.requests and a.requests and b"REDACTED" in bodies
    db = Path(store_url.split("sqlite://", 1)[1])
    stored = db.read_bytes() + (Path(f"{db}-wal").read_bytes() if Path(f"{db}-wal").exists() else b"")
    for secret in secrets:
        assert secret.encode() not in bodies and secret.encode() not in stored


def test_sdk_base_url_environment_variables_still_work(
    project_dir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        fake_provider("gemini", [("status", 500)]) as g,
        fake_provider("anthropic", [("ok", good_answer("env"))]) as a,
    ):
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", g.url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", a.url)
        with open_brain(project_dir, store_url, gemini_api_key="g", anthropic_api_key="a") as brain:
            assert brain.checkpoint("Current task: t", wait=True).merged_by.startswith("anthropic")
    assert g.requests and a.requests


def test_merge_mode_offline_never_calls_out(project_dir: Path, store_url: str) -> None:
    with (
        fake_provider("gemini", [("ok", good_answer("no"))]) as g,
        open_brain(
            project_dir, store_url, gemini_api_key="g", gemini_base_url=g.url, merge="offline"
        ) as brain,
    ):
        assert brain.checkpoint("Current task: u", wait=True).merged_by == "offline"
    assert g.requests == []


def test_background_refinement_and_a_concurrent_checkpoint(project_dir: Path, store_url: str) -> None:
    with fake_provider("gemini", [("hang", 1.0), ("ok", good_answer("refined by gemini"))]) as g:
        with open_brain(
            project_dir, store_url, gemini_api_key="g", gemini_base_url=g.url, merge_timeout_seconds=0.5
        ) as brain:
            started = time.monotonic()
            first = brain.checkpoint("Current task: refine me", wait=False)
            assert time.monotonic() - started < 1.0
            assert first.merged_by == "offline" and first.refining == "gemini:gemini-3.8-flash"
            # Another writer lands while the refiner waits on the (slow) provider.
            with open_brain(project_dir, store_url) as other:
                other.checkpoint("Decided: keep the concurrent write.", wait=True)
            seen_refining = False
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                status = brain.status()
                seen_refining |= status.refining is not None
                # Stored first, then the refiner's lock is released: wait for both.
                if status.merged_by and status.merged_by.startswith("gemini") and status.refining is None:
                    break
                time.sleep(0.1)
            status = brain.status()
            assert status.merged_by == "gemini:gemini-3.8-flash", status
            assert status.version == 3 and status.refining is None
            state = brain.resume().state
    assert state is not None and state.active_context.current_task == "refined by gemini"
    # the refiner re-merged on the fresh state, so the concurrent decision survived
    assert any("concurrent write" in (d.decision or "") for d in state.active_context.active_decisions)
    assert seen_refining


@pytest.mark.parametrize("mode", ["gemini", "anthropic"])
def test_a_forced_provider_without_its_key_is_a_config_error(mode: str) -> None:
    from infinite_context_brain.core.errors import ConfigError
    from infinite_context_brain.core.merge.chain import build_chain

    with pytest.raises(ConfigError, match=f"MERGE={mode}") as raised:
        build_chain(load_settings(merge=mode))
    assert f"{mode.upper()}_API_KEY" in (raised.value.fix or "")


def test_merge_mode_picks_the_tiers() -> None:
    from infinite_context_brain.core.merge.chain import build_chain

    keys = {"gemini_api_key": "g", "anthropic_api_key": "a"}
    assert [t.name for t in build_chain(load_settings(**keys)).tiers] == ["gemini", "anthropic"]
    assert [t.name for t in build_chain(load_settings(merge="anthropic", **keys)).tiers] == ["anthropic"]
    assert build_chain(load_settings(merge="offline", **keys)).tiers == []
    assert build_chain(load_settings()).tiers == []  # auto without keys: offline only


def test_the_refiner_gets_only_the_keys_the_settings_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under Claude Code its own ANTHROPIC_API_KEY is ignored; the background refiner must not
    receive it either (it travels in the job on the child's stdin)."""
    from infinite_context_brain.core.refine import settings_payload

    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-inherited-from-claude-code")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-ours")
    payload = settings_payload(load_settings())
    assert "sk-ant-inherited-from-claude-code" not in json.dumps(payload)
    assert payload["gemini_api_key"] == "gemini-ours"


def test_the_model_reads_the_text_as_written_and_its_next_steps_are_stored(
    project_dir: Path, store_url: str
) -> None:
    """The LLM tier gets the checkpoint's own words (not only what extraction made of them) and an
    empty old state on a first checkpoint; next steps and decisions from its answer are stored,
    shown in the resume, and the journal keeps the text whatever the model answered."""
    text = (
        "Refactoring the parser to stream tokens. The lexer keeps a 4 KB window because "
        "memory-mapped input broke on pipes. Still to wire the CLI flag and benchmark it."
    )
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        state = old_state_in(prompt)
        state["meta"]["session_id"] = session_id_in(prompt)
        ac = state["active_context"]
        ac["current_task"] = "Stream tokens from the parser"
        ac["next_steps"] = [
            {"text": "wire the --stream flag into the CLI", "origin": "stated"},
            {"text": "benchmark streaming against the old parser", "origin": "stated"},
        ]
        ac["active_decisions"] = [
            {
                "question": "lexer window",
                "status": "decided",
                "decision": "a 4 KB window",
                "reason": "memory-mapped input broke on pipes",
            }
        ]
        state["journal"] = []  # a model that drops the journal: it is kept anyway
        return json.dumps(state)

    with fake_provider("gemini", [("ok", answer)]) as g:
        with open_brain(project_dir, store_url, gemini_api_key="g", gemini_base_url=g.url) as brain:
            result = brain.checkpoint(text, wait=True)
            resume = brain.resume().markdown
            state = brain.resume().state
    assert result.merged_by.startswith("gemini") and g.requests
    (prompt,) = prompts
    written = section_in(prompt, "THE TEXT AS WRITTEN")
    assert written.strip() == text
    old = old_state_in(prompt)
    assert old["active_context"]["current_task"] == "" and old["active_context"]["next_steps"] == []
    assert "journal" not in old and "journal" not in json.dumps(llm.state_schema()["properties"])
    assert state is not None and [e.text for e in state.journal] == [text]
    assert "wire the --stream flag into the CLI" in resume and "benchmark streaming" in resume
    assert "a 4 KB window — because memory-mapped input broke on pipes" in resume
    assert text in resume  # the journal, newest first


def test_a_hand_off_sends_the_session_in_its_own_words(
    project_dir: Path, store_url: str, tmp_path: Path
) -> None:
    """From a Claude Code transcript the model gets the user's request, the assistant's text and
    the failing output, beside the facts."""
    from infinite_context_brain.core.transcript.handoff import checkpoint_from_transcript

    lines = [
        {"type": "user", "message": {"role": "user", "content": "Make the exporter resume after a crash"}},
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I'll checkpoint every 500 rows instead of at the end."},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "pytest tests/test_export.py"},
                    },
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": "Exit code 1\n"
                        "FAILED tests/test_export.py::test_resume - KeyError: 'offset'",
                    }
                ],
            },
        },
    ]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return good_answer("resume after a crash")(prompt)

    with fake_provider("gemini", [("ok", answer)]) as g:
        with open_brain(project_dir, store_url, gemini_api_key="g", gemini_base_url=g.url) as brain:
            checkpoint_from_transcript(brain, transcript, "test")
            deadline = time.monotonic() + 20
            while not prompts and time.monotonic() < deadline:
                time.sleep(0.1)
    excerpt = section_in(prompts[0], "THE SESSION IN ITS OWN WORDS")
    assert "User: Make the exporter resume after a crash" in excerpt
    assert "checkpoint every 500 rows instead of at the end" in excerpt
    assert "KeyError: 'offset'" in excerpt
