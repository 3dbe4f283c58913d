"""`make run`: a short real session on the embedded SQLite default.

Session 1 talks to `infinite-context mcp` over stdio (as Claude Code does) and checkpoints three
times; the server process then exits, as on /clear; session 2 is a brand-new server process that
resumes and shows what survived. The demo project and its store (an SQLite file, the same kind
as the default in your user data dir) live in one temporary folder, removed at the end: the demo
leaves nothing behind and never touches your real brain.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel

console = Console()

STEPS = [
    "Overview: a small Flask todo app.\nCurrent task: add login to src/auth.py.\n"
    "Question: JWT or server-side sessions?",
    "Decided: server-side sessions; one app, no API clients.\nDone: login form and session cookie in "
    "src/auth.py.\nNext: logout button in src/app.py.",
    "Done: logout button in src/app.py.\nCurrent task: password reset email (templates/reset.html).\n"
    "Architecture: Flask blueprints, SQLite via SQLAlchemy, Jinja templates.",
]


def make_project(parent: Path) -> Path:
    root = parent / "todo-app"
    (root / "src").mkdir(parents=True)
    (root / "templates").mkdir()
    for rel in ("src/auth.py", "src/app.py", "templates/reset.html"):
        (root / rel).write_text("# demo\n")
    return root


async def session(project: Path, env: dict[str, str], work: bool) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "infinite_context_brain.server", "mcp"],
        cwd=str(project),
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        if work:
            for i, context in enumerate(STEPS, 1):
                result = await s.call_tool("checkpoint", {"context": context})
                console.print(f"[bold]checkpoint {i}[/] → {result.content[0].text}")
            return
        result = await s.call_tool("resume", {})
        console.print(
            Panel(Markdown(result.content[0].text), title="resume after /clear (new server process)")
        )
        status = await s.call_tool("status", {})
        console.print(status.content[0].text)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="infinite-context-demo-") as tmp:
        project = make_project(Path(tmp))
        # The demo's own data folder: its brain, cursors and logs stay in the temp folder.
        env = {
            k: v for k, v in os.environ.items() if not k.startswith("INFINITE_CONTEXT_") and k != "REDIS_URL"
        }
        env["INFINITE_CONTEXT_DATA_DIR"] = str(Path(tmp) / "data")
        console.rule(f"session 1 in {project}")
        asyncio.run(session(project, env, work=True))
        console.rule("/clear: the MCP server exits; a new one starts")
        asyncio.run(session(project, env, work=False))
    console.print("[dim]The demo's project and store were temporary and are removed.[/]")


if __name__ == "__main__":
    main()
