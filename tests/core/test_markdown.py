"""The one Markdown escaping every surface uses (``core.markdown``), checked by rendering with
markdown-it-py, the Python port of the renderer VS Code's preview uses: whatever the user typed
comes out as typed, line breaks stay, and text with nothing to escape gets no backslash."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from infinite_context_brain.core.markdown import display_markdown, escape_markdown, table_cell

RENDERER = MarkdownIt("commonmark").enable(["strikethrough", "table"])


class _Text(HTMLParser):
    """The text a reader sees in rendered HTML (tags dropped, entities decoded); ``<br>`` and
    block ends become line breaks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "br":
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("p", "li", "h1", "h2", "h3"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        self.parts.append(data.replace("\n", " "))  # a soft line break shows as a space


def seen(markdown: str) -> tuple[str, list[str]]:
    parser = _Text()
    parser.feed(RENDERER.render(markdown))
    return "".join(parser.parts), parser.tags


def one_line(text: str) -> str:
    return " ".join(text.split())


TRICKY = st.text(alphabet="ab1 <>&*_~`[]()!#-+.=|\\$;:/T", max_size=40)


@settings(max_examples=400, deadline=None)
@given(TRICKY)
def test_escaped_text_renders_as_typed_wherever_it_sits(text: str) -> None:
    escaped = escape_markdown(text)
    for prefix in ("", "- ", "- Current task: ", "**Task:** "):
        shown, tags = seen(prefix + escaped)
        expected = one_line(text)
        assert one_line(shown.replace("\n", " ")).endswith(expected), (prefix, text, escaped, shown)
        assert not set(tags) - {"p", "ul", "li", "strong"}, (prefix, text, escaped, tags)


@settings(max_examples=200, deadline=None)
@given(st.lists(TRICKY, min_size=1, max_size=3))
def test_table_cells_stay_in_their_cell(cells: list[str]) -> None:
    row = "| " + " | ".join(table_cell(c) for c in cells) + " |"
    head = "|" + " h |" * len(cells) + "\n|" + "---|" * len(cells)
    html = RENDERER.render(head + "\n" + row)
    parser = _Text()
    parser.feed(html)
    assert parser.tags.count("td") == len(cells), (cells, row, html)


def test_common_text_gets_no_backslash() -> None:
    for text in (
        "API_KEY",
        "MY_API_KEY and snake_case_name",
        "src/app.py",
        "C:\\Users\\me",
        "a - b",
        "x < y and y > x",
        "fix (it) now!",
        "v1.2 + v1.3",
        "3 * 4 = 12",
        "50% done; 100k tokens",
        "sqlite:///home/me/.local/share/brain.db",
        "it's #1 here",
    ):
        assert escape_markdown(text) == text, text


def test_what_would_vanish_or_change_is_escaped_once() -> None:
    assert escape_markdown("parse List<T>") == "parse List\\<T>"
    assert escape_markdown("__init__.py") == "\\_\\_init\\_\\_.py"
    assert escape_markdown("&amp; stays") == "\\&amp; stays"
    assert escape_markdown("1. first") == "1\\. first"
    assert escape_markdown("$(zap) in a tooltip") == "\\$(zap) in a tooltip"
    assert escape_markdown("two\nlines") == "two lines"


def test_a_document_keeps_its_lines_and_its_angle_brackets() -> None:
    resume = "\n".join(
        [
            "# Project context (v2 · 2026-01-01 10:00 UTC · merged by offline)",
            "",
            "## Current work",
            "**Task:** parse List<T> & Map<K, V>",
            "**Last step:** ran `pytest -k <name>`",
            "**Before that:** wrote the lexer",
            "",
            "## Decisions",
            "- [decided] keep <T> generic",
            "",
            "```",
            "raw <b> stays",
            "```",
        ]
    )
    shown, tags = seen(display_markdown(resume))
    lines = [line.strip() for line in shown.splitlines() if line.strip()]
    assert "Task: parse List<T> & Map<K, V>" in lines
    assert "Last step: ran pytest -k <name>" in lines
    assert "Before that: wrote the lexer" in lines
    assert "[decided] keep <T> generic" in lines
    assert "raw <b> stays" in lines
    assert "b" not in tags and "t" not in tags
    # raw, the document reads as written: a backslash only before the tag-like <T>
    raw = display_markdown(resume)
    assert "ran `pytest -k <name>`" in raw and "List\\<T> & Map\\<K, V>" in raw
    assert "raw <b> stays" in raw
