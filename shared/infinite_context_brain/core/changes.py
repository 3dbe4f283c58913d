"""What changed between two versions of the state, field by field, as a person reads it.

``ProjectBrain.diff`` shows it in full and ``ProjectBrain.history`` sums it up per version in one
line, so every surface (CLI, MCP, editor, notebook) says the same thing about a version.

The state's sections (``active_context``, ``project_context``, ``meta``) only group fields; each
field is compared by its kind:

* a list by its items, each known by its text (a decision by its question, a blocker by its
  check, a journal entry or a next step by what was written): an item in both versions whose
  details differ is *changed*, not removed and added; the same items in another order are
  *reordered*;
* a mapping (tracker titles, the names edited per file, the task list) by its keys;
* anything else as a value before and after.

Fields that only keep the books (when the task was set) are left out: ``changes`` in the
``DiffResult`` still lists every changed leaf as stored.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping

from .models import FieldDiff
from .text import squeeze

#: sections that only group fields, in the order a reader wants them (the work first)
SECTIONS = ("active_context", "project_context")
#: sections shown last
LAST = ("meta",)
#: a field's name for a reader when its key does not say it plainly
LABELS = {
    "current_task": "task",
    "active_decisions": "decisions",
    "item_titles": "tracker titles",
    "file_symbols": "names edited",
    "task_list": "task list",
}
#: bookkeeping a reader does not need to see change
QUIET = frozenset({"active_context.task_since"})
#: the key that names an item of a list, first found wins
NAME_KEYS = ("text", "summary", "question", "check", "content")
#: how much of a value the one-line summary shows
SUMMARY_VALUE_CHARS = 48
SUMMARY_CHARS = 160


def field_diffs(before: Mapping[str, object], after: Mapping[str, object]) -> list[FieldDiff]:
    """Every field that differs between two ``ProjectState.content_dict()`` results."""
    old, new = _fields(before), _fields(after)
    diffs: list[FieldDiff] = []
    for path in dict.fromkeys([*new, *old]):
        if path in QUIET or old.get(path) == new.get(path):
            continue
        diffs.append(_compare(path, old.get(path), new.get(path)))
    return diffs


def summary_line(diffs: list[FieldDiff]) -> str:
    """One line for a history row: ``task: write the docs; next steps +2 -1; journal +1``."""
    parts: list[str] = []
    for d in diffs:
        if d.before is not None or d.after is not None:
            parts.append(
                f"{d.label}: {squeeze(d.after, SUMMARY_VALUE_CHARS)}" if d.after else f"{d.label} cleared"
            )
            continue
        counts = [
            f"{sign}{len(items)}"
            for sign, items in (("+", d.added), ("-", d.removed), ("~", d.changed))
            if items
        ]
        parts.append(f"{d.label} {' '.join(counts)}" if counts else f"{d.label} reordered")
    shown: list[str] = []
    for n, part in enumerate(parts):
        if shown and len("; ".join([*shown, part])) > SUMMARY_CHARS:
            shown.append(f"{len(parts) - n} more")
            break
        shown.append(part)
    return "; ".join(shown)


def _fields(content: Mapping[str, object]) -> dict[str, object]:
    """``{"active_context.current_task": ..., "journal": ...}``: the sections opened, the work first."""
    order = [*SECTIONS, *(k for k in content if k not in SECTIONS and k not in LAST), *LAST]
    out: dict[str, object] = {}
    for key in order:
        if key not in content:
            continue
        value = content[key]
        if (key in SECTIONS or key in LAST) and isinstance(value, dict):
            out.update({f"{key}.{sub}": v for sub, v in value.items()})
        else:
            out[key] = value
    return out


def _label(path: str) -> str:
    name = path.rsplit(".", 1)[-1]
    return LABELS.get(name, name.replace("_", " "))


def _compare(path: str, before: object, after: object) -> FieldDiff:
    label = _label(path)
    kinds = {type(v) for v in (before, after) if v is not None}
    if kinds == {list}:  # a list that was (or became) missing counts as empty
        old = before if isinstance(before, list) else []
        return _list_diff(path, label, old, after if isinstance(after, list) else [])
    if kinds == {dict}:
        was = before if isinstance(before, dict) else {}
        return _mapping_diff(path, label, was, after if isinstance(after, dict) else {})
    return FieldDiff(field=path, label=label, before=show(before), after=show(after))


def _named(item: object) -> str | None:
    """The text an item is known by (``NAME_KEYS``); None when it has none."""
    if isinstance(item, dict):
        for key in NAME_KEYS:
            if isinstance(item.get(key), str):
                return str(item[key])
    return None


def name_of(item: object) -> str:
    """How an item is known: its text, else the item shown whole."""
    named = _named(item)
    return show(item) if named is None else named


def show(value: object) -> str:
    """A value as text: ``""`` for nothing, a list joined by commas, a named item by its name."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(show(v) for v in value)
    if isinstance(value, dict):
        named = _named(value)
        if named is not None:
            return named
        return ", ".join(f"{k}: {show(v)}" for k, v in value.items() if v not in (None, "", [], {}))
    return str(value)


def _details(name: str, before: object, after: object) -> str:
    """``Use SQLite? (status pending -> decided; decision: yes)``: what changed in one item."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = [k for k in dict.fromkeys([*after, *before]) if before.get(k) != after.get(k)]
        parts = [_arrow(k.replace("_", " "), before.get(k), after.get(k)) for k in keys]
    else:
        parts = [_arrow("", before, after)]
    return f"{name} ({'; '.join(parts)})"


def _arrow(label: str, before: object, after: object) -> str:
    """``status pending -> decided``; ``decision: yes`` for a value set where there was none."""
    old, new = show(before), show(after)
    change = f"{old} -> {new or '(none)'}" if old else new
    if not label:
        return change
    return f"{label} {change}" if old else f"{label}: {change}"


def _list_diff(path: str, label: str, before: list[object], after: list[object]) -> FieldDiff:
    waiting: defaultdict[str, deque[int]] = defaultdict(deque)
    for index, item in enumerate(before):
        waiting[name_of(item)].append(index)
    added: list[str] = []
    changed: list[str] = []
    kept: list[int] = []
    for item in after:
        name = name_of(item)
        if not waiting[name]:
            added.append(name)
            continue
        index = waiting[name].popleft()
        kept.append(index)
        if before[index] != item:
            changed.append(_details(name, before[index], item))
    removed = [name_of(before[i]) for i in sorted(i for queue in waiting.values() for i in queue)]
    return FieldDiff(
        field=path,
        label=label,
        added=added,
        removed=removed,
        changed=changed,
        reordered=kept != sorted(kept),
    )


def _mapping_diff(path: str, label: str, before: dict[str, object], after: dict[str, object]) -> FieldDiff:
    def entry(key: str, value: object) -> str:
        named = _named(value)
        return f"{key}: {show(value)}" if named is None else named

    return FieldDiff(
        field=path,
        label=label,
        added=[entry(k, v) for k, v in after.items() if k not in before],
        removed=[entry(k, v) for k, v in before.items() if k not in after],
        changed=[
            _details(_named(v) or k, before[k], v) for k, v in after.items() if k in before and before[k] != v
        ],
    )
