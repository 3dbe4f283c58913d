"""The merge chain: Gemini, then Anthropic, then the offline merger, which always answers.

``INFINITE_CONTEXT_MERGE`` picks the tiers: ``auto`` (default) uses every tier that has a key,
in that order; ``gemini`` / ``anthropic`` use only that provider (then offline); ``offline``
never calls the network. Which tiers run and which key each uses is decided once, in
``merge_plan`` (``doctor`` and ``status`` show the same plan). Each failure is logged with the
reason (a rejected key, a 5xx after retries, an answer that failed validation) so the fallback
is visible, and ``merged_by`` records which tier produced the stored state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..config import Settings
from ..errors import ConfigError
from .base import Merger, MergeRequest, MergeResult
from .llm import LlmMerger, ProviderFailure
from .offline import OfflineMerger

log = logging.getLogger(__name__)


@dataclass
class MergeChain:
    tiers: list[LlmMerger[Any]] = field(default_factory=list)
    offline: Merger = field(default_factory=OfflineMerger)
    name: str = "chain"
    failures: list[ProviderFailure] = field(default_factory=list)

    @property
    def uses_network(self) -> bool:
        return bool(self.tiers)

    @property
    def label(self) -> str:
        """The first tier that will be tried (what a background refinement reports)."""
        return self.tiers[0].label if self.tiers else self.offline.label

    def merge(self, request: MergeRequest) -> MergeResult:
        self.failures = []
        for tier in self.tiers:
            try:
                return tier.merge(request)
            except ProviderFailure as failure:
                self.failures.append(failure)
                log.warning(
                    f"{tier.name} merge failed, falling back: {failure.message}",
                    extra={"tier": tier.name, "model": tier.model, "kind": failure.kind},
                )
        result = self.offline.merge(request)
        if self.failures:
            failed = ", ".join(f"{f.tier} ({f.kind})" for f in self.failures)
            return MergeResult(
                result.state,
                result.merged_by,
                result.duration_ms,
                (*result.warnings, f"fell back to offline: {failed}"),
            )
        return result


def build_chain(settings: Settings) -> MergeChain:
    """The chain ``merge_plan`` describes: the same tiers, keys and models, in the same order."""
    from ..merge_plan import merge_plan
    from .anthropic import AnthropicMerger
    from .gemini import GeminiMerger

    plan = merge_plan(settings)
    if plan.problem is not None:
        raise ConfigError(plan.problem, fix=plan.fix)
    classes: dict[str, type[LlmMerger[Any]]] = {"gemini": GeminiMerger, "anthropic": AnthropicMerger}
    base_urls = {"gemini": settings.gemini_base_url, "anthropic": settings.anthropic_base_url}
    tiers: list[LlmMerger[Any]] = []
    for planned in plan.running:
        if planned.tier == "offline":
            continue
        key = settings.provider_key(planned.tier).key
        assert key is not None and planned.model is not None  # the plan runs only tiers with a key
        tiers.append(
            classes[planned.tier](
                key.get_secret_value(), planned.model, settings.merge_timeout_seconds, base_urls[planned.tier]
            )
        )
    return MergeChain(tiers=tiers)
