"""Text is redacted before it is cut, at every place that cuts it before storing: a key cut at a
limit no longer matches its pattern, and its first part would be stored.

Each site gets a key that straddles its limit; no piece of the key's body survives."""

from __future__ import annotations

from infinite_context_brain.core.transcript.commands import CHECK_CHARS, classify, tracker_events
from infinite_context_brain.core.transcript.digest import COMMAND_CHARS, clip
from infinite_context_brain.core.transcript.observe import build_observation

#: a JSON Web Token: three parts, so one cut in its second part matches no pattern
JWT = (
    "eyJhbGciOiJIUzI1NiJ9.eyJ"
    + "Zq8xW3rT5yU7iO9pLk2s" * 10
    + "."
    + "Vb3nC8mQ1wE6rT4yU9iO2pA5sD7fG0hJ3kL6zX9cV1b"
)


def pieces(secret: str, size: int = 10) -> set[str]:
    """Every ``size``-character piece of ``secret`` after its first 4 (a known prefix)."""
    return {secret[at : at + size] for at in range(4, len(secret) - size + 1)}


def leaked(text: str, secret: str = JWT) -> list[str]:
    return sorted(p for p in pieces(secret) if p in text)


def test_a_check_named_by_its_command_keeps_no_part_of_a_key() -> None:
    command = "pytest tests/e2e -x --jwt=" + JWT
    assert command.index("eyJ") < CHECK_CHARS < len(command)  # the limit cuts the key
    kind, check = classify(command)
    assert kind == "test" and check.startswith("pytest tests/e2e")
    assert len(check) <= CHECK_CHARS and not leaked(check), check


def test_a_created_issue_named_by_a_key_keeps_no_part_of_it() -> None:
    (event,) = tracker_events(f"bd create {JWT}", "Created issue: app-12")
    assert event.item == "app-12" and not leaked(event.title), event.title


def test_a_digest_line_keeps_no_part_of_a_key() -> None:
    command = "curl -s https://api.example.com/v1/items --data-urlencode q=" + JWT
    assert command.index("eyJ") < COMMAND_CHARS < len(command)
    line = clip(command, COMMAND_CHARS)
    assert line.startswith("curl -s https://api.example.com") and not leaked(line), line


def test_an_observation_cut_to_its_budget_keeps_no_part_of_a_key() -> None:
    for budget in (20, 60, 120):
        for before in range(0, budget * 12, 37):
            output = "x" * before + " " + JWT + " done"
            obs = build_observation(
                "toolu_1", "Bash", {"command": "./deploy"}, output, is_error=True, max_tokens=budget
            )
            assert not leaked(obs.text), (budget, before, obs.text)
