"""Start-up cost: Claude Code runs the console script on every hook and session, so the entry
modules must not load heavy packages before a command needs them."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("pydantic", "rich", "mcp", "redis", "httpx", "httpx2", "uvicorn", "anthropic", "IPython", "orjson")


def _loaded(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.mark.parametrize(
    ("module", "also_absent"),
    [
        # the deferred hooks (every tool call) exit from here: not even logging
        (
            "infinite_context_brain.server.launch",
            ("logging", "infinite_context_brain.server.claude_code.hooks"),
        ),
        # every other command builds its parser first; the flag rules (pydantic) load only when given
        ("infinite_context_brain.server.cli.main", ("infinite_context_brain.core.params",)),
        (
            "infinite_context_brain.server.proxy.process",
            ("urllib.request", "infinite_context_brain.server.proxy.app"),
        ),
        # %load_ext registers the magics; pydantic waits for the first magic that needs it
        ("infinite_context_brain.notebook.magics", ("infinite_context_brain.core.params",)),
    ],
)
def test_entry_modules_stay_light(module: str, also_absent: tuple[str, ...]) -> None:
    loaded = _loaded(f"import {module}")
    allowed = {"IPython"} if module.startswith("infinite_context_brain.notebook") else set()
    assert not {name for name in loaded if name.split(".")[0] in set(HEAVY) - allowed}
    assert not loaded & set(also_absent)


def test_parser_builds_without_the_rules() -> None:
    loaded = _loaded("from infinite_context_brain.server.cli.parser import build_parser\nbuild_parser()")
    assert "pydantic" not in loaded


def test_a_brain_that_only_reads_loads_no_merge_code() -> None:
    """SessionStart opens the brain and resumes: the mergers (and the redaction rules they use)
    load on the first merge, not with the brain."""
    loaded = _loaded("from infinite_context_brain.core.brain import ProjectBrain")
    assert not loaded & {
        "infinite_context_brain.core.merge.offline",
        "infinite_context_brain.core.merge.chain",
    }
    assert "infinite_context_brain.core.redact_rules" not in loaded


def test_the_first_memory_call_loads_no_merge_rendering_or_redaction_code() -> None:
    """What the MCP server's warm-up imports: the brain, working memory and the SQLite store; the
    merge code, rendering, difflib and the redaction rules load with the first checkpoint, resume
    or write (and the Redis client only for a Redis store)."""
    loaded = _loaded(
        "from infinite_context_brain.core import brain\n"
        "from infinite_context_brain.core.memory import working\n"
        "from infinite_context_brain.core.storage import sqlite"
    )
    assert not loaded & {
        "difflib",
        "infinite_context_brain.core.render",
        "infinite_context_brain.core.merge.base",
        "infinite_context_brain.core.merge.integrity",
        "infinite_context_brain.core.redact",
        "infinite_context_brain.core.redact_rules",
        "redis",
    }


def test_the_mcp_server_is_built_without_the_brain() -> None:
    """``infinite-context mcp`` builds its server before serving; the brain, the stores, the
    transcript code and the redaction rules load afterwards, in the warm-up thread (or on the
    first call), never on the way to `initialize`."""
    loaded = _loaded(
        "from infinite_context_brain.server.mcp.app import build_server\n"
        "from infinite_context_brain.server.mcp.holder import BrainHolder\n"
        "build_server(BrainHolder(lambda: None))\n"
    )
    assert not loaded & {
        "infinite_context_brain.core.brain",
        "infinite_context_brain.core.storage.sqlite",
        "infinite_context_brain.core.transcript.service",
        "infinite_context_brain.core.redact_rules",
        "redis",
    }


def test_the_language_server_answers_initialize_without_the_brain() -> None:
    loaded = _loaded("from infinite_context_brain.server.lsp.app import build_server\nbuild_server()\n")
    assert not loaded & {
        "infinite_context_brain.core.brain",
        "infinite_context_brain.core.storage.sqlite",
        "redis",
    }
