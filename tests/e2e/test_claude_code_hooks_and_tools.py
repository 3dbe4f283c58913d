"""The real Claude Code CLI, wired by our `install claude-code` (project scope: the bare
`infinite-context` command on PATH, `alwaysLoad`, the hooks), against the scripted fake Messages
API: every tool call leaves an observation and the hand-off is written even when the answer comes
at once or `--max-turns` cuts the run; the next session's first request carries the brain and our
tools. Both hook transports: ``auto`` (the pinned CLI is recent enough: PostToolUse and Stop are
``mcp_tool`` calls to our running server) and ``command`` (a process each time, through the spool).
One installed project per transport serves the module; each session tags its tool ids."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from infinite_context_brain.core.config import load_settings
from infinite_context_brain.core.storage import open_store
from infinite_context_brain.core.transcript.nudge import MARK

from ..helpers.claude_session import ClaudeProject, Run, claude_binary, run_claude
from ..helpers.fake_anthropic import Step

pytestmark = pytest.mark.slow  # the real Claude Code CLI (node)

CHECKPOINT = "mcp__infinite-context__checkpoint"


@pytest.fixture(scope="module", params=["auto", "command"])
def project(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ClaudeProject]:
    claude_binary()  # skips (or fails in CI) without the CLI
    project = ClaudeProject.create(tmp_path_factory.mktemp("claude-hooks"), hooks=request.param)
    # auto: the pinned CLI (on PATH here) is recent enough for mcp_tool hooks
    assert _mcp_hooks(project) == (request.param == "auto")
    yield project


def _mcp_hooks(project: ClaudeProject) -> bool:
    hooks = json.loads((project.root / ".claude" / "settings.json").read_text())["hooks"]
    return bool(hooks["PostToolUse"][0]["hooks"][0]["type"] == "mcp_tool")


@pytest.fixture(scope="module")
def first(project: ClaudeProject) -> Run:
    """Bash, our checkpoint tool, and the final answer at once (the case that lost hand-offs)."""
    script = [
        Step(text="Listing.", tool="Bash", input={"command": "echo hello-from-bash", "description": "echo"}),
        Step(tool=CHECKPOINT, input={"context": "Current task: wire the hooks\nDone: ran echo"}),
        Step(text="Done: the hooks are wired."),
    ]
    run = run_claude(project, script, tag="first", prompt="Wire the hooks and say when done")
    assert run.returncode == 0, run.stderr[-2000:]
    assert project.spool_settled(), project.worker_log()
    return run


def _observations(project: ClaudeProject, ids: list[str]) -> dict[str, object]:
    session = (project.root / ".claude_session_id").read_text().strip()
    with open_store(load_settings(store_url=project.store_url)) as store:
        return dict(store.observations.get_observations(session, ids))


def _state(project: ClaudeProject) -> tuple[int, str]:
    session = (project.root / ".claude_session_id").read_text().strip()
    with open_store(load_settings(store_url=project.store_url)) as store:
        state = store.states.get_state(session)
    assert state is not None
    return state.meta.version, state.model_dump_json()


def test_install_is_portable_and_loads_first(project: ClaudeProject) -> None:
    entry = json.loads((project.root / ".mcp.json").read_text())["mcpServers"]["infinite-context"]
    assert entry["command"] == "infinite-context" and entry["alwaysLoad"] is True
    hooks = json.loads((project.root / ".claude" / "settings.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "SessionEnd", "PreCompact", "PostToolUse", "Stop"}
    mcp = _mcp_hooks(project)
    for event, groups in hooks.items():
        (ours,) = groups[0]["hooks"]
        assert "async" not in ours
        if mcp and event in ("PostToolUse", "Stop"):
            assert ours["server"] == "infinite-context" and ours["input"]["event"] == event
            assert ours["input"]["transcript_path"] == "${transcript_path}"
        else:
            assert ours["command"] == "infinite-context"


def test_every_tool_call_observed_and_the_hand_off_written(project: ClaudeProject, first: Run) -> None:
    hooks = first.hooks()
    names = [h["name"] for h in hooks]
    assert names.count("PostToolUse:Bash") == 1 and f"PostToolUse:{CHECKPOINT}" in names
    assert "Stop" in names
    assert all(h["outcome"] == "success" and h["exit_code"] == 0 for h in hooks), hooks
    stored = _observations(project, ["toolu_first0000", "toolu_first0001"])
    assert set(stored) == {"toolu_first0000", "toolu_first0001"}
    assert "hello-from-bash" in str(stored["toolu_first0000"])
    # stored by the PostToolUse hook itself (not recovered from the transcript at the hand-off)
    assert {o.source for o in stored.values()} == {"hook"}  # type: ignore[attr-defined]
    version, state = _state(project)
    assert version >= 2 and "wire the hooks" in state  # the checkpoint tool, then the Stop hand-off
    log = project.worker_log()
    assert '"level":"error"' not in log, log
    if not _mcp_hooks(project):  # with mcp_tool hooks, our MCP server wrote it
        assert "hand-off stop: checkpoint v" in log, log
    # our tools were in the very first request, not deferred behind tool search
    tools = {t["name"]: t for t in first.first_main_request()["tools"]}
    assert CHECKPOINT in tools and not tools[CHECKPOINT].get("defer_loading")


def test_max_turns_1_still_observes_and_hands_off(project: ClaudeProject, first: Run) -> None:
    before, _ = _state(project)
    script = [Step(tool="Bash", input={"command": "echo cut-short", "description": "echo"}), Step(text="x")]
    run = run_claude(project, script, "--max-turns", "1", tag="short", prompt="Start the migration")
    assert project.spool_settled(), project.worker_log()
    assert run.returncode in (0, 1), run.stderr[-2000:]  # Claude Code reports error_max_turns
    assert set(_observations(project, ["toolu_short0000"])) == {"toolu_short0000"}
    after, state = _state(project)
    assert after == before + 1 and "Start the migration" in state, project.worker_log()


def test_next_session_starts_with_the_brain_and_our_tools(project: ClaudeProject, first: Run) -> None:
    run = run_claude(project, [Step(text="Continuing.")], tag="second", prompt="Continue")
    assert run.returncode == 0, run.stderr[-2000:]
    request = first_request = run.first_main_request()
    assert any(t["name"] == CHECKPOINT for t in first_request["tools"])
    text = json.dumps(request["messages"])
    assert "infinite-context saved this project's context" in text and "wire the hooks" in text
    start = next(h for h in run.hooks() if h["event"] == "SessionStart")
    assert start["outcome"] == "success"


def _tool_results(run: Run) -> list[str]:
    """The text of each tool result Claude Code sent back, in order (from its last request)."""
    out = []
    for message in run.fake.main_requests()[-1]["messages"]:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_result":
                content = block.get("content")
                parts = content if isinstance(content, list) else [{"text": content}]
                out.append(
                    ("ERROR " if block.get("is_error") else "") + " ".join(p.get("text", "") for p in parts)
                )
    return out


FIELDS = {
    "task": "Add the CSV exporter",
    "next_steps": ["write the CSV writer", "add the --format csv flag"],
    "decisions": [{"decision": "stream rows instead of building the file", "reason": "exports reach 2 GB"}],
}


def _checkpoint_calls(run: Run) -> list[dict[str, object]]:
    return [
        b
        for r in run.fake.main_requests()
        for m in r["messages"]
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use" and b.get("name") == CHECKPOINT
    ]


def test_a_nearly_full_context_gets_the_models_own_checkpoint_before_it_stops(project: ClaudeProject) -> None:
    """Answers that report 150k tokens of context (of 200k): when the model means to stop, our
    Stop hook asks it for a checkpoint; Claude Code passes that on, the model calls the checkpoint
    tool with its fields, then stops (the hook lets it go), and the brain holds what it wrote. The
    hook reads the context from the transcript, where Claude Code may not have written the answer
    it just streamed: on a session's first answer the request can come one answer later, so the
    session goes on once (``--continue``), and the model is asked exactly once in all."""
    asked = {MARK: [Step(tool=CHECKPOINT, input=FIELDS), Step(text="Checkpoint saved.")]}
    runs = [
        run_claude(
            project,
            [Step(text="The exporter runs.")],
            *more,
            tag=tag,
            prompt=prompt,
            by_prompt=asked,
            context_tokens=150_000,
        )
        for tag, prompt, more in (("full", "Add the CSV exporter", ()), ("fuller", "Go on", ("--continue",)))
    ]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-2000:]
    assert project.spool_settled(), project.worker_log()
    last = runs[-1].fake.main_requests()[-1]["messages"]
    asks = [m for m in last if m["role"] == "user" and MARK in json.dumps(m)]
    assert len(asks) == 1 and "Stop hook feedback" in json.dumps(asks[0])  # asked once, by the Stop
    assert any(h["event"] == "Stop" for r in runs for h in r.hooks())
    called = [c for r in runs for c in _checkpoint_calls(r)]
    assert called and called[-1]["input"] == FIELDS
    _version, state = _state(project)
    assert "add the --format csv flag" in state and "exports reach 2 GB" in state


def test_mid_turn_the_request_comes_after_a_tool_call_and_only_once(project: ClaudeProject) -> None:
    """In a turn of tool calls the request comes with a tool result past the share (the first,
    or the next when Claude Code had not written the answer yet), as context for the model's next
    step: a Stop may be far off. After it, neither a later tool call nor the Stop asks again."""
    script = [
        Step(text="Working.", tool="Bash", input={"command": "echo exporter", "description": "echo"}),
        Step(text="Still working.", tool="Bash", input={"command": "echo writer", "description": "echo"}),
        Step(tool=CHECKPOINT, input=FIELDS),
        Step(text="Working on.", tool="Bash", input={"command": "echo csv", "description": "echo"}),
        Step(text="The CSV writer is in."),
    ]
    run = run_claude(project, script, tag="mid", prompt="Add the CSV exporter", context_tokens=150_000)
    assert run.returncode == 0, run.stderr[-2000:]
    assert project.spool_settled(), project.worker_log()
    requests = run.fake.main_requests()
    with_ask = [i for i, r in enumerate(requests) if MARK in json.dumps(r["messages"])]
    assert with_ask and with_ask[0] in (1, 2), with_ask  # right after a tool result
    last = json.dumps(requests[-1]["messages"])
    assert last.count(MARK) == 1 and "Stop hook feedback" not in last  # once; the Stop let it go
    assert len(requests) == len(script) and _checkpoint_calls(run)


def test_memory_tools_answer_claude_code(project: ClaudeProject) -> None:
    """Claude Code's own MCP client calls the working-memory tools (answered by our stdio transport
    itself, past the SDK's request pipeline) beside its hooks: each answer is right, and recall
    reports the budget detected from Claude Code's client name."""
    memory = "mcp__infinite-context__"
    script = [
        Step(tool=memory + "store", input={"content": "The nightly ledgerSync job runs at 02:00 UTC"}),
        Step(tool=memory + "query", input={"query": "ledgerSync"}),
        Step(tool=memory + "store", input={"content": "x", "importance": 50}),
        Step(tool=memory + "recall", input={}),
        Step(text="Noted."),
    ]
    run = run_claude(project, script, tag="memory", prompt="Remember when the ledger job runs")
    assert run.returncode == 0, run.stderr[-2000:]
    stored, found, refused, recalled = _tool_results(run)
    assert "prose" in stored and not stored.startswith("ERROR"), stored
    assert "ledgerSync" in found and not found.startswith("ERROR"), found
    assert refused.startswith("ERROR") and "importance: must be <= 10 (got 50)" in refused, refused
    assert "80,000" in recalled or "80000" in recalled, recalled  # Claude Code's budget


def test_mcp_hooks_without_our_server_lose_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    """mcp_tool hooks whose server is not connected fail (Claude Code goes on); the SessionEnd
    hand-off recovers every tool use from the transcript."""
    claude_binary()
    project = ClaudeProject.create(tmp_path_factory.mktemp("claude-no-server"), hooks="mcp")
    config = project.root / ".mcp.json"
    data = json.loads(config.read_text())
    data["mcpServers"]["infinite-context"]["command"] = "false"  # the server never connects
    config.write_text(json.dumps(data))
    script = [
        Step(tool="Bash", input={"command": "echo kept-anyway", "description": "echo"}),
        Step(text="Done."),
    ]
    run = run_claude(project, script, tag="alone", prompt="Run the echo check")
    assert run.returncode == 0, run.stderr[-2000:]
    assert project.spool_settled(), project.worker_log()
    stored = _observations(project, ["toolu_alone0000"])
    assert "kept-anyway" in str(stored["toolu_alone0000"])
    assert stored["toolu_alone0000"].source == "transcript"  # type: ignore[attr-defined]
    _version, state = _state(project)
    assert "Run the echo check" in state
