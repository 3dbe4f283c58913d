"""User text made literal where Markdown is rendered (an editor preview, a tooltip, a notebook),
with as few backslashes as that takes: the same documents are also read raw (an editor tab, a
pipe, a terminal), where every needless ``\\`` is noise.

The resume text (``render.py``) is written for an assistant to read as plain text, so it keeps
the user's words as typed. Shown in a Markdown renderer, those words can vanish or change:
``List<T>`` is taken for an HTML tag and disappears, ``&lt;`` becomes ``<``, ``__init__`` turns
bold, and lines written one under the other run into one paragraph. Every surface that shows our
Markdown goes through the two functions here, and nothing else escapes:

- ``escape_markdown(text)``: one piece of user text going into Markdown we build (a list item, a
  tooltip line). A character is escaped only where it would start Markdown or HTML: ``<`` before
  a tag name, ``&`` of an entity, ``*`` / ``_`` / ``~`` / backticks when they could pair up,
  ``[`` of a link, a list or heading marker at the start. ``API_KEY``, ``src/app.py``,
  ``C:\\Users`` and ``a - b`` come out as typed.
- ``display_markdown(md)``: a whole document whose user text was not escaped (the resume text):
  outside code, ``<`` before a tag name and ``&`` of an entity get a backslash, and a line
  followed by another line ends in a hard break (two spaces), so "Task / Last step / Before
  that" stay three lines. The document's own Markdown (headings, lists, bold, code) is untouched.
- ``table_cell(text)``: ``escape_markdown`` for a table cell (``|`` escaped, one line).

CommonMark lets any ASCII punctuation be backslash-escaped, so every escape here renders as the
character itself in VS Code (markdown-it), Jupyter (marked) and GitHub alike.
"""

from __future__ import annotations

import re

#: ``<`` that opens an HTML tag, comment, declaration or autolink
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
#: ``&`` of a named or numeric character reference
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
#: a backslash that escapes the punctuation after it (or ends a line: a hard break)
_BACKSLASH = re.compile(r"\\(?=[!-/:-@\[-`{-~]|$)")
#: ``$(`` starts a theme icon in VS Code's Markdown (tooltips)
_ICON = re.compile(r"\$(?=\()")
_LINK_OPEN = re.compile(r"!?\[(?=[^\]]*\][(\[])")
#: a block marker at the start of a line: heading, quote, list item, thematic break (also a
#: run of ``-``/``*``/``_`` too short for one: after a list item's ``- `` it makes one), and a
#: link reference definition (``[1]: x`` would vanish)
_BLOCK_START = re.compile(
    r"^(#{1,6}(?=\s|$)|>|[-+*](?=\s|$)|\d{1,9}(?=[.)](?:\s|$))|=+\s*$|[-*_](?=(?:\s*[-*_])*\s*$)|\[(?=[^\]]*\]:))"
)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_SPACE = re.compile(r"\s+")


def _flanking_runs(text: str, char: str) -> str:
    """``*`` / ``_`` runs escaped where they can open or close emphasis. A run between two
    spaces never can, nor an ``_`` inside a word (``API_KEY``); a lone run has no partner."""
    runs = list(re.finditer(re.escape(char) + "+", text))
    if len(runs) < 2:
        return text
    out, last = [], 0
    for run in runs:
        before = text[run.start() - 1] if run.start() > 0 else " "
        after = text[run.end()] if run.end() < len(text) else " "
        inert = (before.isspace() and after.isspace()) or (
            char == "_" and before.isalnum() and after.isalnum()
        )
        out.append(text[last : run.start()])
        out.append(run.group(0) if inert else "\\" + "\\".join(run.group(0)))
        last = run.end()
    out.append(text[last:])
    return "".join(out)


def _paired(text: str, char: str) -> str:
    """Every ``char`` escaped when there are two or more (a code span or strikethrough needs a
    pair; one alone is literal)."""
    return text.replace(char, "\\" + char) if text.count(char) >= 2 else text


def escape_markdown(text: str) -> str:
    """``text`` as one line of Markdown that renders exactly as typed (whitespace runs, line
    breaks included, become one space)."""
    text = _SPACE.sub(" ", text).strip()
    text = _BACKSLASH.sub(r"\\\\", text)
    text = _paired(text, "`")
    text = _paired(text, "~")
    text = _flanking_runs(text, "*")
    text = _flanking_runs(text, "_")
    text = _LINK_OPEN.sub(lambda m: "\\" + m.group(0) if m.group(0) == "[" else "!\\[", text)
    text = _TAG_OPEN.sub(r"\\<", text)
    text = _ENTITY.sub(r"\\&", text)
    text = _ICON.sub(r"\\$", text)
    block = _BLOCK_START.match(text)
    if block:
        at = block.end(1) if block.group(1)[0].isdigit() else 0
        text = text[:at] + "\\" + text[at:]
    return text


def table_cell(text: str) -> str:
    """``text`` for one cell of a Markdown table."""
    return escape_markdown(text).replace("|", "\\|")


def _literal(text: str) -> str:
    return _ENTITY.sub(r"\\&", _TAG_OPEN.sub(r"\\<", text))


def _outside_code_spans(line: str) -> str:
    out, last = [], 0
    for match in _CODE_SPAN.finditer(line):
        out += [_literal(line[last : match.start()]), match.group(0)]
        last = match.end()
    out.append(_literal(line[last:]))
    return "".join(out)


def display_markdown(md: str) -> str:
    """``md`` for a Markdown renderer (see the module doc): user text literal, lines kept."""
    lines = md.split("\n")
    out: list[str] = []
    fence = ""
    for i, line in enumerate(lines):
        opener = _FENCE.match(line)
        if fence:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = ""
            out.append(line)
            continue
        if opener:
            fence = opener.group(1)
            out.append(line)
            continue
        shown = _outside_code_spans(line).rstrip()
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if shown.strip() and following.strip() and not _FENCE.match(following):
            shown += "  "  # a hard break: the next line stays a line of its own
        out.append(shown)
    return "\n".join(out)
