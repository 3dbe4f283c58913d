"""Every argument rule, defined once: one ``Annotated`` type per kind of argument.

Each type carries its bounds, a description and an example. The MCP tool signatures use them (so
the JSON schema a client sees carries the bounds), the language server's request models use them
(camelCase aliases), the notebook magics and the CLI check their flags with them (``flag_type``),
and ``ProjectBrain`` / ``WorkingMemory`` check their arguments with them (``validated``). So a
limit is the same on every surface, and a bad value is refused with a message that names the
argument as the caller spelled it and a fix derived from the same bounds.

Types that are optional somewhere are written ``X | None`` at the use site. Limits that depend
on a setting (the checkpoint context's ``max_context_chars``) are checked where the setting is.

This module only imports pydantic (already loaded with the core models): cheap for the MCP
server and the hooks, which start on every Claude Code session.
"""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, validate_call
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from .errors import InvalidInput
from .flags import HISTORY_LIMIT_DEFAULT

P = ParamSpec("P")
R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("is empty")
    return text


#: ids are key names (Redis) and file-safe: letters, digits and ``._:-``, starting with a letter or digit
ID_CHARS = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
#: the largest version or offset any surface takes (JSON's exact integers stop at 2**53)
MAX_VERSION = 10**15
MAX_OFFSET = 10**15


def _id_chars(text: str) -> str:
    if not ID_CHARS.fullmatch(text):
        bad = next((c for c in text if not re.fullmatch(r"[A-Za-z0-9._:-]", c)), text[:1])
        raise ValueError(f"has {bad!r}: use letters, digits and . _ : - (starting with a letter or digit)")
    return text


# ---- the project brain -------------------------------------------------------------------------
#: checkpoint: free text. Its length cap is the ``max_context_chars`` setting, checked by the brain.
ContextText = Annotated[
    str,
    Field(description="What was done, decided and is next; name files by path.", examples=["Done: login"]),
]
TokenCount = Annotated[
    int,
    Field(
        ge=0,
        le=100_000_000,
        description="Tokens currently in the context window, if known.",
        examples=[120_000],
    ),
]
MaxTokens = Annotated[
    int, Field(ge=50, le=10_000_000, description="Cap the resume text at this many tokens.", examples=[2000])
]
HistoryLimit = Annotated[
    int, Field(ge=1, le=1000, description="How many versions to list, newest first.", examples=[10])
]
Steps = Annotated[int, Field(ge=1, le=1_000_000, description="Go back this many versions.", examples=[1])]
Version = Annotated[
    int, Field(ge=1, le=MAX_VERSION, description="A version kept in history (see `history`).", examples=[3])
]
FromVersion = Annotated[Version, Field(description="The older version.")]
ToVersion = Annotated[Version, Field(description="The newer version.")]
ToolUseId = Annotated[
    str,
    Field(min_length=1, max_length=200, description="A tool use's id.", examples=["toolu_01ABC"]),
    AfterValidator(_not_blank),
]
CharOffset = Annotated[int, Field(ge=0, le=MAX_OFFSET, description="Start at this character.", examples=[0])]
Scope = Annotated[
    Literal["project", "local", "user"],
    Field(description="project: shared with the team; local: only you, this project; user: every project."),
]
HookChoice = Annotated[
    Literal["auto", "mcp", "command"],
    Field(
        description="How PostToolUse and Stop reach infinite-context: mcp (calls to the running MCP "
        "server; Claude Code 2.1.118+), command (a process each time), auto (mcp when the claude on "
        "PATH is recent enough)."
    ),
]
# ---- structured checkpoint fields (what the model in the session states; rules in merge/stated.py)
#: one piece of text a model states in a structured field
StatedText = Annotated[str, Field(max_length=4_000)]
StatedList = Annotated[list[StatedText], Field(max_length=100)]
CheckpointTask = Annotated[
    str,
    Field(
        max_length=4_000,
        description="The user's overall request as it stands now. Replaces the stored task.",
        examples=["Add CSV export to the report page"],
    ),
]
InProgress = Annotated[
    str,
    Field(
        max_length=4_000,
        description="The subtask being worked on right now. Replaces the stored one.",
        examples=["the serializer in reports/export.py"],
    ),
]
NextSteps = Annotated[
    StatedList,
    Field(
        description="Everything still left to do, in order. Replaces the stored next steps "
        "(send the whole list; steps left out are taken as done or dropped).",
        examples=[["wire the export button", "test with 10k rows"]],
    ),
]
DoneList = Annotated[
    StatedList,
    Field(
        description="What was finished since the last checkpoint. Added to recent changes; the next "
        "steps and blockers they settle go.",
        examples=[["serializer for the report rows"]],
    ),
]
FileList = Annotated[
    Annotated[list[Annotated[str, Field(max_length=1_000)]], Field(max_length=100)],
    Field(
        description="Paths (relative to the project) being worked on or to read next. Put first "
        "among the active files.",
        examples=[["reports/export.py"]],
    ),
]
NoteList = Annotated[
    StatedList,
    Field(
        description="Facts to keep (how something works, a constraint). Added.",
        examples=[["exports run as the app user"]],
    ),
]
GotchaList = Annotated[
    StatedList,
    Field(
        description="Pitfalls learned: what failed and what worked. Added.",
        examples=[["to_csv writes the index unless index=False"]],
    ),
]
#: notebook: checkpoint automatically every N executed cells
AutoEvery = Annotated[
    int, Field(ge=1, description="Checkpoint every this many executed cells.", examples=[5])
]

# ---- working memory ----------------------------------------------------------------------------
MemoryId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        description="A memory item's id (from store, list or query).",
        examples=["3f9a0c1b2d4e"],
    ),
    AfterValidator(_not_blank),
    AfterValidator(_id_chars),
]
MemoryContent = Annotated[
    str,
    Field(min_length=1, max_length=200_000, description="The text to remember.", examples=["Error: ..."]),
    AfterValidator(_not_blank),
]
Summary = Annotated[
    str,
    Field(max_length=5_000, description="One line; shown instead of the content when the budget is tight."),
]
Tag = Annotated[str, Field(max_length=100, description="A tag (lowercased).", examples=["auth"])]
Tags = Annotated[list[Tag], Field(max_length=50, description="Tags; detected from the content when omitted.")]
Importance = Annotated[int, Field(ge=1, le=10, description="1 (low) to 10 (critical).", examples=[5])]
MemoryQuery = Annotated[
    str,
    Field(max_length=10_000, description="Words to search for (camelCase and snake_case are split)."),
]
SearchLimit = Annotated[int, Field(ge=1, le=100, description="How many items at most.", examples=[10])]
PageLimit = Annotated[int, Field(ge=1, le=500, description="Items per page.", examples=[20])]
PageOffset = Annotated[int, Field(ge=0, le=MAX_OFFSET, description="Skip this many items.", examples=[0])]
CompactTarget = Annotated[
    float,
    Field(
        gt=0,
        le=10_000_000,
        allow_inf_nan=False,
        description="Tokens to get down to, or below 1 a share of the budget.",
        examples=[0.5],
    ),
]
MemoryBudget = Annotated[
    int, Field(ge=1_000, le=10_000_000, description="Working-memory token budget.", examples=[80_000])
]
Threshold = Annotated[
    float,
    Field(gt=0, le=1, allow_inf_nan=False, description="A share of the budget, in (0, 1].", examples=[0.9]),
]


# ---- turning a pydantic error into the project's InvalidInput ----------------------------------
def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def problem(error: ErrorDetails, *, show_input: bool = True) -> str:
    """What is wrong, in the words of the rest of the project (``must be >= 50 (got 3)``)."""
    kind, value, raw = error["type"], error.get("input"), error.get("ctx") or {}
    ctx = {k: _number(v) for k, v in raw.items()}
    if kind in ("missing", "missing_argument", "missing_keyword_only_argument"):
        return "is required"
    if kind == "string_too_short" and raw.get("min_length") == 1:
        return "is empty"
    if kind == "string_too_long":
        return f"is {len(value):,} characters, over the limit of {ctx['max_length']}"
    text = {
        "greater_than_equal": "must be >= {ge}",
        "less_than_equal": "must be <= {le}",
        "greater_than": "must be > {gt}",
        "less_than": "must be < {lt}",
        "too_long": "has more than {max_length} entries",
        "string_too_short": "must be at least {min_length} characters",
        "literal_error": "must be one of {expected}",
        "value_error": "{error}",
    }.get(kind)
    if text is not None:
        text = text.format(**ctx)
    elif kind.startswith(("int_", "float_", "string_", "bool_", "list_")):
        noun = {"int": "an integer", "float": "a number", "string": "text", "bool": "true or false"}
        text = "must be " + noun.get(kind.split("_")[0], "a list")
    else:
        text = error["msg"][:1].lower() + error["msg"][1:]
    if text == "is empty" or not show_input:
        return text
    return f"{text} (got {_short(value)})"


def _rule_of(annotation: Any) -> tuple[Any, list[Any], list[Any], bool]:
    """(base type, constraints, examples, None allowed) of an annotation such as ``MaxTokens | None``."""
    info = FieldInfo.from_annotation(annotation)
    base, constraints, examples = info.annotation, list(info.metadata), list(info.examples or [])
    args = typing.get_args(base)
    optional = typing.get_origin(base) in (typing.Union, types.UnionType) and type(None) in args
    rest = [a for a in args if a is not type(None)]
    if optional and len(rest) == 1:
        inner = FieldInfo.from_annotation(rest[0])
        base, constraints = inner.annotation, constraints + list(inner.metadata)
        examples = examples or list(inner.examples or [])
    return base, constraints, examples, optional


def fix_for(annotation: Any) -> str:
    """The fix, from the rule itself: ``pass an integer from 1 to 1000, e.g. 10``."""
    base, constraints, examples, optional = _rule_of(annotation)
    bounds: dict[str, Any] = {}
    for constraint in constraints:
        for name in ("ge", "gt", "le", "lt", "min_length", "max_length"):
            if getattr(constraint, name, None) is not None:
                bounds[name] = getattr(constraint, name)
    if typing.get_origin(base) is Literal:
        what = "one of " + ", ".join(str(a) for a in typing.get_args(base))
    elif base in (int, float):
        what = "an integer" if base is int else "a number"
        bounds = {k: _number(v) for k, v in bounds.items()}
        if "ge" in bounds and "le" in bounds:
            what += f" from {bounds['ge']} to {bounds['le']}"
        else:
            low = f">= {bounds['ge']}" if "ge" in bounds else f"> {bounds['gt']}" if "gt" in bounds else ""
            high = f"<= {bounds['le']}" if "le" in bounds else ""
            what += " " + " and ".join(part for part in (low, high) if part)
    elif base is str:
        what = "non-empty text" if bounds.get("min_length") else "text"
        if "max_length" in bounds:
            what += f" of at most {bounds['max_length']:,} characters"
    elif typing.get_origin(base) is list:
        what = "a list of strings" + (f" (at most {bounds['max_length']})" if "max_length" in bounds else "")
    elif base is bool:
        what = "true or false"
    else:
        what = "a valid value"
    if examples:
        what += f", e.g. {examples[0]!r}" if isinstance(examples[0], str) else f", e.g. {examples[0]}"
    return ("omit it or pass " if optional else "pass ") + what


def dotted(loc: tuple[Any, ...]) -> str:
    """``("items", 1, "importance")`` -> ``items[1].importance``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def invalid_input(
    exc: ValidationError, rules: Callable[[str], Any], head: Callable[[Any], str] = str, prefix: str = ""
) -> InvalidInput:
    """The first error of ``exc`` as InvalidInput. ``head`` names the location's first part as
    the caller spelled it; ``rules`` gives that name's annotation, which the fix is derived from."""
    error = exc.errors(include_url=False)[0]
    loc = tuple(error["loc"])
    name = head(loc[0]) if loc else "value"
    field = prefix + dotted((name, *loc[1:]))
    try:
        fix = fix_for(rules(name))
    except (KeyError, TypeError, ValueError):
        fix = f"correct {field}"
    return InvalidInput(field, problem(error), fix=fix)


# ---- the core: checked methods and models ------------------------------------------------------
def validated(fn: Callable[P, R]) -> Callable[P, R]:
    """``pydantic.validate_call`` in strict mode (``True`` is not a count, ``"5"`` not a number)
    whose errors become ``InvalidInput`` naming the parameter and the fix from its rule. Every
    adapter maps InvalidInput already, so they all report the same thing. The validator is built
    on the method's first call (``defer_build``): ~0.6 ms each, ~15 methods, most of which a
    process never calls (the MCP server's first memory call waited for all of them)."""
    config = ConfigDict(strict=True, arbitrary_types_allowed=True, defer_build=True)
    checked = validate_call(config=config)(fn)
    parameters = list(inspect.signature(fn).parameters)

    def head(part: Any) -> str:  # positional arguments are located by index (self is 0)
        return parameters[part] if isinstance(part, int) and part < len(parameters) else str(part)

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return checked(*args, **kwargs)
        except ValidationError as exc:
            hints = typing.get_type_hints(fn, include_extras=True)
            raise invalid_input(exc, hints.__getitem__, head) from None

    return wrapper


def model_rule(model: type[BaseModel], name: str) -> Any:
    """The annotation of ``model``'s field called ``name`` (or aliased so)."""
    for key, info in model.model_fields.items():
        choices = getattr(info.validation_alias, "choices", ())
        if name == key or name == info.alias or name in choices:
            return Annotated[info.annotation, info]
    raise KeyError(name)


def check_model(model: type[M], data: Any, prefix: str = "") -> M:
    """``model.model_validate(data)`` with its errors as InvalidInput, named as sent (an alias
    such as ``maxTokens``) and prefixed (``items[1].``)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_input(exc, functools.partial(model_rule, model), prefix=prefix) from None


# ---- flags: the notebook magics and the CLI -----------------------------------------------------
@functools.cache
def _adapter(rule: Any) -> TypeAdapter[Any]:
    return TypeAdapter(rule)


def parse_flag(rule: Any, text: str) -> Any:
    """A flag's text checked against ``rule`` (``"5"`` -> 5); ValueError with the problem and
    the fix. argparse reports it as ``argument --flag: ...``, naming the flag as typed."""
    import argparse

    try:
        return _adapter(rule).validate_python(text)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        raise argparse.ArgumentTypeError(f"{problem(error, show_input=False)}; {fix_for(rule)}") from None


def flag_type(rule: Any) -> Callable[[str], Any]:
    """An argparse ``type=`` for a flag following ``rule``."""

    def parse(text: str) -> Any:
        return parse_flag(rule, text)

    parse.__name__ = getattr(rule, "__name__", "value")
    return parse


__all__ = [
    "HISTORY_LIMIT_DEFAULT",
    "AutoEvery",
    "CharOffset",
    "CheckpointTask",
    "CompactTarget",
    "ContextText",
    "DoneList",
    "FileList",
    "FromVersion",
    "GotchaList",
    "HistoryLimit",
    "HookChoice",
    "Importance",
    "InProgress",
    "MaxTokens",
    "MemoryBudget",
    "MemoryContent",
    "MemoryId",
    "MemoryQuery",
    "NextSteps",
    "NoteList",
    "PageLimit",
    "PageOffset",
    "Scope",
    "SearchLimit",
    "StatedList",
    "StatedText",
    "Steps",
    "Summary",
    "Tag",
    "Tags",
    "Threshold",
    "ToVersion",
    "TokenCount",
    "ToolUseId",
    "Version",
    "check_model",
    "fix_for",
    "flag_type",
    "invalid_input",
    "model_rule",
    "parse_flag",
    "problem",
    "validated",
]
