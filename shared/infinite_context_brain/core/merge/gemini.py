"""Gemini tier (google-genai): JSON output bound to the state's JSON schema.

The SDK is imported on first use only. Base URL: ``INFINITE_CONTEXT_GEMINI_BASE_URL`` or the
SDK's own ``GOOGLE_GEMINI_BASE_URL`` (read by the SDK when we pass none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .llm import (
    BACKOFF_MAX_SECONDS,
    MAX_OUTPUT_TOKENS,
    RETRIES,
    TEMPERATURE,
    FailureKind,
    LlmMerger,
    state_schema,
)

if TYPE_CHECKING:
    from google import genai


class GeminiMerger(LlmMerger["genai.Client"]):
    name = "gemini"
    key_variable = "GEMINI_API_KEY"

    def _make_client(self) -> genai.Client:
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            timeout=int(self.timeout_seconds * 1000),
            # The SDK retries 408/429/5xx, timeouts and connection errors (not reading Retry-After).
            retry_options=types.HttpRetryOptions(
                attempts=RETRIES + 1,
                initial_delay=self.backoff_seconds,
                max_delay=BACKOFF_MAX_SECONDS,
                jitter=self.backoff_seconds,
            ),
            client_args={"event_hooks": {"request": [self._count_attempt]}},
        )
        if self._base_url:
            options.base_url = self._base_url
        return genai.Client(api_key=self._api_key, http_options=options)

    def _generate(self, prompt: str) -> str:
        from google.genai import types

        response = self._get_client().models.generate_content(
            model=self.model,
            contents=prompt,
            config=types.GenerateContentConfig(
                temperature=TEMPERATURE,
                max_output_tokens=MAX_OUTPUT_TOKENS,
                response_mime_type="application/json",
                response_json_schema=state_schema(),
            ),
        )
        return response.text or ""

    def _classify(self, exc: Exception) -> tuple[FailureKind, str]:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            code = int(exc.code or 0)
            detail = str(exc.message or exc)[:300]
            if code in (401, 403):
                return "rejected", f"{self.key_variable} was rejected: {detail}"
            if code == 429 or code >= 500:
                return "transient", f"HTTP {code}: {detail}"
            return "rejected", f"Gemini refused the request (HTTP {code}): {detail}"
        # Timeouts and connection errors come from the HTTP layer, not as APIError.
        return "transient", f"{type(exc).__name__}: {exc}"[:300]
