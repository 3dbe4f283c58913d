"""The notebook recorder redacts before it cuts: a key that straddles one of its limits (printed
output, the cell source, an error message, a result's repr, the output kept while a cell runs)
leaves no part of itself in the recorded cells or in the stored state. Cut first, the key's first
part matched no pattern and was stored."""

from __future__ import annotations

import json
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import load_settings
from infinite_context_brain.notebook.recorder import OUTPUT_CHARS, PRINTED_CHARS, SOURCE_CHARS

#: a JSON Web Token: three parts, so a cut in its second part matches no pattern
JWT = (
    "eyJhbGciOiJIUzI1NiJ9.eyJ"
    + "Zq8xW3rT5yU7iO9pLk2s" * 10
    + "."
    + "Vb3nC8mQ1wE6rT4yU9iO2pA5sD7fG0hJ3kL6zX9cV1b"
)
PIECES = {JWT[at : at + 10] for at in range(4, len(JWT) - 9)}


def _leaked(text: str) -> list[str]:
    return sorted(p for p in PIECES if p in text)


def test_a_key_across_any_limit_of_the_recorder_is_never_stored_in_part(
    shell: InteractiveShell, project_dir: Path, store_url: str
) -> None:
    cells = [
        f"print('a' * {OUTPUT_CHARS - 60} + ' {JWT}')",  # printed: across the output limit
        f"print('b' * {PRINTED_CHARS - 60} + ' {JWT}')",  # across what is kept while it runs
        f"for c in 'c' * {PRINTED_CHARS - 60} + ' {JWT} tail': print(c, end='')",  # many writes
        f"# {'d' * (SOURCE_CHARS - 70)}\nkey = '{JWT}'",  # the source, across its limit
        f"raise ValueError('e' * 240 + ' {JWT}')",  # the error, across its limit
        f"'f' * {OUTPUT_CHARS - 60} + ' {JWT}'",  # the result's repr, across the output limit
        f"'{JWT}'",  # the last cell's output reaches the facts
    ]
    for cell in cells:
        shell.run_cell(cell, store_history=True)
    recorder = shell.magics_manager.registry["ContextMagics"].recorder
    recorded = [(c.source, c.output, c.error or "") for c in recorder.cells]
    assert len(recorded) == len(cells)
    assert "ValueError: eee" in recorded[4][2] and recorded[1][1].startswith("bbb")
    assert not [(n, field) for n, fields in enumerate(recorded) for field in fields if _leaked(field)]
    facts = recorder.facts(shell.user_ns, str(project_dir))
    assert not _leaked(facts.model_dump_json())

    shell.run_line_magic("checkpoint", "")
    with ProjectBrain.open(settings=load_settings(store_url=store_url, project_root=project_dir)) as brain:
        state = brain.resume().state
        assert state is not None
        stored = json.dumps(json.loads(state.model_dump_json()))
    assert "[REDACTED:" in stored and not _leaked(stored), stored
