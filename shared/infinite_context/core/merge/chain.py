"""The merge chain: Gemini, then Anthropic, then the offline merger, which always answers.

``INFINITE_CONTEXT_MERGE`` picks the tiers: ``auto`` (default) uses every tier that has a key,
in that order; ``gemini`` / ``anthropic`` use only that provider (then offline); ``offline``
never calls the network. Each failure is logged with the reason (a rejected key, a 5xx after
retries, an answer that failed validation) so the fallback is visible, and ``merged_by``
records which tier produced the stored state.
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
    tiers: list[LlmMerger] = field(default_factory=list)
    offline: Merger = field(default_factory=OfflineMerger)
    name: str = "chain"
    failures: list[ProviderFailure] = field(default_factory=list)

    @property
    def uses_network(self) -> bool:
        return bool(self.tiers)

    @property
    def first_label(self) -> str:
        return self.tiers[0].label if self.tiers else self.offline.name

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
    from .anthropic import AnthropicMerger
    from .gemini import GeminiMerger

    providers: list[tuple[type[LlmMerger], Any, str, str | None]] = [
        (GeminiMerger, settings.gemini_api_key, settings.gemini_model, settings.gemini_base_url),
        (AnthropicMerger, settings.anthropic_api_key, settings.anthropic_model, settings.anthropic_base_url),
    ]
    tiers: list[LlmMerger] = []
    for cls, key, model, base_url in providers:  # in chain order
        if settings.merge not in ("auto", cls.name):
            continue
        if key is not None:
            tiers.append(cls(key.get_secret_value(), model, settings.merge_timeout_seconds, base_url))
        elif settings.merge == cls.name:
            raise ConfigError(
                f"INFINITE_CONTEXT_MERGE={cls.name} but no key is set", fix=f"set {cls.key_variable}"
            )
    return MergeChain(tiers=tiers)
