"""User text made literal where Markdown is rendered (a notebook, an editor preview, a tooltip).

The resume text (``render.py``) is written for an assistant to read as plain text, so it keeps
the user's words as typed. Shown in a Markdown renderer, those words can vanish or change:
``List<T>`` becomes an unknown HTML tag and disappears, ``&lt;`` becomes ``<``. Two helpers:

- ``escape_markdown(text)``: one piece of user text going into Markdown we build (a table cell,
  a list item): every Markdown-significant character is backslash-escaped (CommonMark lets any
  ASCII punctuation be escaped), so it renders exactly as typed.
- ``display_markdown(md)``: a whole Markdown document whose user text was not escaped (the
  resume text): ``<``, ``>`` and ``&`` outside code spans and fenced blocks become entities, so
  no user text is taken for HTML. The document's own Markdown (headings, lists, bold, code
  spans) is untouched; inside code, text is already literal.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def escape_markdown(text: str) -> str:
    """``text`` with every Markdown-significant character backslash-escaped."""
    return _SPECIAL.sub(r"\\\1", text)


def _entities(text: str) -> str:
    return re.sub(r"[<>&]", lambda m: _ENTITIES[m.group(0)], text)


def _outside_code_spans(line: str) -> str:
    out, last = [], 0
    for match in _CODE_SPAN.finditer(line):
        out += [_entities(line[last : match.start()]), match.group(0)]
        last = match.end()
    out.append(_entities(line[last:]))
    return "".join(out)


def display_markdown(md: str) -> str:
    """``md`` with ``<``, ``>`` and ``&`` outside code turned into entities (see the module doc).
    A ``>`` that starts a line (a block quote) is left alone."""
    lines, fence = [], ""
    for line in md.split("\n"):
        opener = _FENCE.match(line)
        if fence:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                fence = ""
            lines.append(line)
        elif opener:
            fence = opener.group(1)
            lines.append(line)
        else:
            quote = re.match(r"^(\s{0,3}>+\s?)", line)
            head = quote.group(1) if quote else ""
            lines.append(head + _outside_code_spans(line[len(head) :]))
    return "\n".join(lines)
