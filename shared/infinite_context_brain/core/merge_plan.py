"""Which merge tiers will run, in order, and which key pays for each: the one answer ``doctor``,
``status`` and ``build_chain`` share.

A tier runs when ``INFINITE_CONTEXT_MERGE`` allows it and it has a key. Each planned tier names
the variable (or setting) its key came from, and a skipped tier says why: no key, the mode, or a
key that is Claude Code's own (``ANTHROPIC_API_KEY`` inherited by a process Claude Code started;
see ``config``). The offline merger always runs last. Kept free of the merger modules so
``status`` and the models can use it without importing any provider code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from .config import Provider, Settings

#: chain order, with the variables that give each tier a key (our own name first)
PROVIDERS: tuple[tuple[Provider, str], ...] = (
    ("gemini", "GEMINI_API_KEY or INFINITE_CONTEXT_GEMINI_API_KEY"),
    ("anthropic", "INFINITE_CONTEXT_ANTHROPIC_API_KEY"),
)


class PlannedTier(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    tier: Literal["gemini", "anthropic", "offline"]
    runs: bool
    model: str | None = None
    #: the variable or setting the key came from (never the key itself)
    key_from: str | None = None
    #: why the tier does not run
    skipped: str | None = None
    #: a variable holding a key that is deliberately not used (Claude Code's own)
    key_ignored: str | None = None
    #: something worth knowing although the tier runs
    note: str | None = None

    def describe(self) -> str:
        if self.tier == "offline":
            return "offline"
        if not self.runs:
            return f"{self.tier} skipped: {self.skipped}"
        return f"{self.tier} ({self.model}, key from {self.key_from})"


class MergePlan(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    mode: Literal["auto", "gemini", "anthropic", "offline"]
    #: every tier in chain order, offline last; ``runs`` says which will be tried
    tiers: list[PlannedTier]
    under_claude_code: bool = False
    #: a configuration that cannot work (the mode names a tier without a key)
    problem: str | None = None
    fix: str | None = None

    @property
    def running(self) -> list[PlannedTier]:
        return [t for t in self.tiers if t.runs]

    @property
    def uses_network(self) -> bool:
        return any(t.runs and t.tier != "offline" for t in self.tiers)

    def describe(self) -> str:
        """One line: the tiers that run, in order, then the ones skipped and why."""
        order = " -> ".join(t.describe() for t in self.running)
        skipped = [t.describe() for t in self.tiers if not t.runs]
        notes = [f"{t.tier}: {t.note}" for t in self.tiers if t.runs and t.note]
        return "; ".join([f"mode {self.mode}: {order}", *skipped, *notes])


def merge_plan(settings: Settings) -> MergePlan:
    """The merge plan ``settings`` give: tiers in chain order, each with its model and the name
    of the variable its key came from, or the reason it is skipped."""
    mode = settings.merge
    tiers: list[PlannedTier] = []
    problem = fix = None
    for provider, variables in PROVIDERS:
        chosen = settings.provider_key(provider)
        model = settings.gemini_model if provider == "gemini" else settings.anthropic_model
        tier = PlannedTier(tier=provider, runs=False, model=model)
        if mode not in ("auto", provider):
            tier.skipped = f"INFINITE_CONTEXT_MERGE={mode}"
        elif chosen.key is not None:
            tier.runs, tier.key_from = True, chosen.source
            if chosen.source == "ANTHROPIC_API_KEY":
                tier.note = (
                    "not used when Claude Code runs infinite-context (hooks, MCP server), where "
                    "ANTHROPIC_API_KEY is Claude Code's own; set INFINITE_CONTEXT_ANTHROPIC_API_KEY "
                    "to pay with it there too"
                )
        elif chosen.ignored is not None:
            tier.key_ignored = chosen.ignored
            tier.skipped = (
                f"{chosen.ignored} is inherited from Claude Code and not used; set "
                f"INFINITE_CONTEXT_ANTHROPIC_API_KEY to let infinite-context pay with a key"
            )
        else:
            tier.skipped = f"no key (set {variables})"
        if mode == provider and not tier.runs:
            problem = f"INFINITE_CONTEXT_MERGE={provider} but {tier.skipped}"
            fix = f"set {variables}, or INFINITE_CONTEXT_MERGE=auto"
        tiers.append(tier)
    tiers.append(PlannedTier(tier="offline", runs=True))
    return MergePlan(
        mode=mode, tiers=tiers, under_claude_code=settings.under_claude_code, problem=problem, fix=fix
    )
