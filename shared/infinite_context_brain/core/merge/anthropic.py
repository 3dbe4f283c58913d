"""Anthropic tier: structured output through ``messages.parse(output_format=...)``.

The SDK is imported on first use only; it retries transient failures itself (``max_retries``),
waiting what the server's ``retry-after`` asks. Base URL: ``INFINITE_CONTEXT_ANTHROPIC_BASE_URL``
or the SDK's own ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..models import ProjectState
from .llm import MAX_OUTPUT_TOKENS, RETRIES, FailureKind, LlmMerger

log = logging.getLogger(__name__)


if TYPE_CHECKING:
    import anthropic


class AnthropicMerger(LlmMerger["anthropic.Anthropic"]):
    name = "anthropic"
    key_variable = "ANTHROPIC_API_KEY"

    def _make_client(self) -> anthropic.Anthropic:
        import anthropic

        kwargs: dict[str, Any] = {
            "api_key": self._api_key,
            "max_retries": RETRIES,  # 408/409/429/5xx, timeouts, connection errors; honours retry-after
            "timeout": self.timeout_seconds,
            "http_client": anthropic.DefaultHttpxClient(event_hooks={"request": [self._count_attempt]}),
        }
        if self._base_url:
            kwargs["base_url"] = self._base_url
        return anthropic.Anthropic(**kwargs)

    def _generate(self, prompt: str) -> str:
        # No temperature: the current Messages API (anthropic SDK 2.x) no longer accepts it.
        message = self._get_client().messages.parse(
            model=self.model,
            max_tokens=MAX_OUTPUT_TOKENS,
            messages=[{"role": "user", "content": prompt}],
            output_format=ProjectState,
        )
        # Validation happens in LlmMerger.validate, on the raw text, for precise rejections.
        return "".join(block.text for block in message.content if block.type == "text")

    def _classify(self, exc: Exception) -> tuple[FailureKind, str]:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            code = exc.status_code
            detail = str(exc.message)[:300]
            if code in (401, 403):
                return "rejected", f"{self.key_variable} was rejected: {detail}"
            if code == 429 or code >= 500:
                return "transient", f"HTTP {code}: {detail}"
            return "rejected", f"Anthropic refused the request (HTTP {code}): {detail}"
        if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
            return "transient", f"{type(exc).__name__}: {exc}"[:300]
        from pydantic import ValidationError

        if isinstance(exc, ValidationError | ValueError):
            # The SDK parses the structured output itself; a malformed answer surfaces here.
            return "invalid_output", f"answer could not be parsed: {type(exc).__name__}: {exc}"[:300]
        log.error("unexpected error from the Anthropic SDK", exc_info=exc)
        return "rejected", f"unexpected {type(exc).__name__}: {exc}"[:300]
