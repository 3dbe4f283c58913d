"""What the LLM tiers share: the prompt, the retry budget, how a failure is told apart, and the
checks a provider's answer must pass before it may replace the offline merge.

A provider implements ``_make_client``, ``_generate(prompt) -> str`` and ``_classify(exc)``;
everything else (JSON parsing, schema and integrity validation) is here, so both tiers behave
identically and the chain can fall through honestly.

Retries are the SDKs' own (``RETRIES`` more attempts on 408/429/5xx, timeouts and dropped
connections): anthropic waits what the server's ``retry-after`` / ``retry-after-ms`` asks, else
0.5 s doubling; google-genai (3.x) backs off exponentially from ``BACKOFF_BASE_SECONDS`` and
does not read ``Retry-After`` (googleapis/python-genai#1875). What is left when the SDK gives up
is classified once: a rejected key or request falls through to the next tier at once, a
transient failure after the retries too, and an answer that does not validate is never retried.
"""

from __future__ import annotations

import json
import logging
import time
from importlib import resources
from typing import Generic, Literal, TypeVar

from pydantic import ValidationError

from ..models import ProjectState
from .base import MergeRequest, MergeResult
from .integrity import RECORD_FIELDS, keep_known_files, known_files, problems

log = logging.getLogger(__name__)

TEMPERATURE = 0.3
MAX_OUTPUT_TOKENS = 8000
#: attempts after the first one, made by the SDK on a transient failure
RETRIES = 2
#: Gemini's first retry delay (and its random extra); anthropic's is the SDK's own 0.5 s
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 8.0
MAX_CONTEXT_CHARS_SENT = 400_000

FailureKind = Literal["transient", "rejected", "invalid_output"]


class ProviderFailure(Exception):
    """A tier could not produce an acceptable state; the chain moves to the next tier."""

    def __init__(self, tier: str, kind: FailureKind, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.tier = tier
        self.kind = kind
        self.message = message
        self.attempts = attempts


def load_prompt_template() -> str:
    return resources.files(__package__).joinpath("prompt.md").read_text(encoding="utf-8")


def state_schema() -> dict[str, object]:
    """The state's JSON schema without the fields kept outside a merger's answer."""
    schema = ProjectState.model_json_schema()
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name in RECORD_FIELDS:
            properties.pop(name, None)
    return schema


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]  # the newest part matters most


def build_prompt(request: MergeRequest) -> str:
    """The prompt: the old state (an empty one before the first checkpoint), the earlier notes as
    written, the session's own words, this checkpoint's text as written, and the facts."""
    old = request.old or ProjectState.empty(request.session_id)
    facts = request.facts
    context = facts.model_dump_json(exclude_defaults=True, exclude={"text", "excerpt"}, indent=1)
    journal = "\n\n".join(f"[{e.at.isoformat()} {e.origin}] {e.text}" for e in old.journal) or "(none)"
    return load_prompt_template().format(
        session_id=request.session_id,
        now=request.now.isoformat(),
        token_cap=request.token_cap,
        schema=json.dumps(state_schema(), separators=(",", ":")),
        old_state=old.model_dump_json(indent=1, exclude=set(RECORD_FIELDS)),
        journal=_bounded(journal, MAX_CONTEXT_CHARS_SENT // 8),
        excerpt=_bounded("\n\n".join(facts.excerpt), MAX_CONTEXT_CHARS_SENT // 4) or "(none)",
        text=_bounded(facts.text, MAX_CONTEXT_CHARS_SENT // 4) or "(none)",
        context=_bounded(context, MAX_CONTEXT_CHARS_SENT // 2),
    )


#: the provider SDK's client class (imported lazily, so named under TYPE_CHECKING by each tier)
ClientT = TypeVar("ClientT")


class LlmMerger(Generic[ClientT]):
    """Base of the provider tiers. ``name`` is the tier (gemini / anthropic), ``model`` its model."""

    name = "llm"
    key_variable = "API_KEY"
    uses_network = True

    def __init__(self, api_key: str, model: str, timeout_seconds: float, base_url: str | None = None) -> None:
        self.model = model
        self.timeout_seconds = timeout_seconds
        self.retries_used = 0
        self._attempts = 0  # HTTP requests sent, retries included (counted by an event hook)
        self._api_key = api_key
        self._base_url = base_url
        self._client: ClientT | None = None

    def _get_client(self) -> ClientT:
        """The provider SDK's client, made on first use (the SDKs are heavy imports)."""
        if self._client is None:
            self._client = self._make_client()
        return self._client

    @property
    def backoff_seconds(self) -> float:
        """The first retry delay, read when a client is made (so a test can shorten it)."""
        return BACKOFF_BASE_SECONDS

    @property
    def label(self) -> str:
        return f"{self.name}:{self.model}"

    # ---- provider hooks ---------------------------------------------------------------------
    def _make_client(self) -> ClientT:
        raise NotImplementedError

    def _generate(self, prompt: str) -> str:
        raise NotImplementedError

    def _classify(self, exc: Exception) -> tuple[FailureKind, str]:
        raise NotImplementedError

    # ---- the shared policy ------------------------------------------------------------------
    def _count_attempt(self, request: object) -> None:
        """An httpx event hook on the SDK's client: every request, so the SDK's retries show."""
        self._attempts += 1

    def _call(self, prompt: str) -> str:
        before = self._attempts
        try:
            return self._generate(prompt)
        except Exception as exc:
            kind, message = self._classify(exc)
            raise ProviderFailure(
                self.name, kind, message, attempts=max(1, self._attempts - before)
            ) from None
        finally:
            retries = max(0, self._attempts - before - 1)
            if retries:
                self.retries_used += retries
                log.warning(
                    f"{self.name} call needed {retries} retr{'y' if retries == 1 else 'ies'} (of {RETRIES})",
                    extra={"tier": self.name, "model": self.model},
                )

    def validate(self, request: MergeRequest, text: str) -> tuple[ProjectState, list[str]]:
        try:
            state = ProjectState.model_validate_json(_strip_fences(text))
        except ValidationError as exc:
            errors = exc.errors()
            kind = (
                "not valid JSON"
                if errors and errors[0]["type"] == "json_invalid"
                else "does not match the schema"
            )
            detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:3])
            raise ProviderFailure(self.name, "invalid_output", f"answer {kind}: {detail}") from None
        warnings: list[str] = []
        # Paths the facts or the old state name are real even when not on disk now; others must
        # exist, or they were invented and are removed rather than failing the whole merge.
        known = known_files(request)
        kept, dropped = keep_known_files(state.active_context.active_files, request.project_root, known)
        if dropped:
            warnings.append(f"{self.name} named files that do not exist; dropped: {', '.join(dropped[:5])}")
        state.active_context.active_files = kept
        state.active_context.uncommitted_files = keep_known_files(
            state.active_context.uncommitted_files, request.project_root, known
        )[0]
        for change in state.project_context.recent_changes:
            change.files = keep_known_files(change.files, request.project_root, known)[0]
        found = problems(
            request.old,
            state,
            session_id=request.session_id,
            root=request.project_root,
            cap=request.token_cap,
            known=known,
            replied=request.facts.user_replied,
        )
        if found:
            raise ProviderFailure(self.name, "invalid_output", "answer rejected: " + "; ".join(found))
        if request.old is not None:
            state.meta = request.old.meta.model_copy()
        state.meta.session_id = request.session_id
        state.meta.last_checkpoint = request.now
        state.meta.last_access = request.now
        return state, warnings

    def merge(self, request: MergeRequest) -> MergeResult:
        started = time.perf_counter()
        text = self._call(build_prompt(request))
        state, warnings = self.validate(request, text)
        state.meta.merged_by = self.label
        if request.token_count is not None:
            state.meta.token_budget_used = request.token_count
        return MergeResult(
            state=state,
            merged_by=self.label,
            duration_ms=(time.perf_counter() - started) * 1000,
            warnings=tuple(warnings),
        )


def _strip_fences(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text
