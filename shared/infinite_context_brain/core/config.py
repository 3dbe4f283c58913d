"""Settings, with one precedence order for every entry point.

Precedence, highest first:

1. explicit values passed to ``Settings(...)`` (the language server's ``initializationOptions``,
   CLI flags such as ``--project``);
2. environment variables: ``INFINITE_CONTEXT_<FIELD>`` for every field, plus the seed's own
   names ``REDIS_URL``, ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``, ``ANTHROPIC_API_KEY``,
   ``GEMINI_MODEL``, ``ANTHROPIC_MODEL``, ``PROJECT_ROOT``, ``LOG_LEVEL`` (the prefixed name wins
   when both are set) and Claude Code's ``CLAUDE_PROJECT_DIR`` / ``CLAUDE_CONFIG_DIR``;
3. a ``.env`` file in the working directory;
4. the defaults below.

Empty variables count as unset (Claude Code has been seen exporting ``CLAUDE_PROJECT_DIR=``).

This class is the only reader of the environment. One documented exception: the log level is
read by ``logs.level_from_env`` before Settings exist (same variable names, shared constant).

Which key pays for an LLM merge is explicit. ``INFINITE_CONTEXT_ANTHROPIC_API_KEY`` (or an
explicit ``anthropic_api_key``) always counts; the plain ``ANTHROPIC_API_KEY`` counts only when
this process is not running under Claude Code (``CLAUDECODE`` / ``CLAUDE_CODE_ENTRYPOINT`` unset),
because under Claude Code it is Claude Code's own key, inherited by its hooks, MCP servers and
Bash tool, not one given to infinite-context. ``ANTHROPIC_MODEL`` follows the same rule (it is
Claude Code's model setting too). After construction ``anthropic_api_key`` / ``gemini_api_key``
hold the key each tier uses (or None) and ``provider_key`` says where it came from;
``merge_plan.merge_plan`` turns that into the plan ``doctor`` and ``status`` show.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, PrivateAttr, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import ConfigError
from .logs import LOG_LEVEL_VARIABLES
from .params import MemoryBudget, Threshold
from .transcript.nudge import DEFAULT_SHARE as DEFAULT_NUDGE_SHARE

ENV_PREFIX = "INFINITE_CONTEXT_"
Provider = Literal["gemini", "anthropic"]


def _seed(name: str, *seed_names: str) -> AliasChoices:
    """Our prefixed variable, then the seed's own names. Only fields the seed (or Claude Code)
    named get one; every other field is read through ``env_prefix`` alone. The field name is
    deliberately not a choice (``populate_by_name`` covers ``Settings(name=...)``): as a choice it
    would match the unprefixed variable, case-insensitively, before ours (``LOG_LEVEL`` winning
    over ``INFINITE_CONTEXT_LOG_LEVEL``, ``STORE_URL`` being read at all)."""
    return AliasChoices(f"{ENV_PREFIX}{name.upper()}", *seed_names)


def _only(variable: str) -> AliasChoices:
    """A variable read under its own name only (no prefixed twin): Claude Code's markers and the
    seed names kept apart from our own so their origin stays known."""
    return AliasChoices(variable)


@dataclass(frozen=True)
class ProviderKey:
    """The key a merge tier uses, where it came from, and a key that was seen but not used."""

    key: SecretStr | None
    #: the variable (or setting) the key came from, e.g. ``INFINITE_CONTEXT_ANTHROPIC_API_KEY``
    source: str | None
    #: a variable holding a key that is deliberately not used (Claude Code's own key)
    ignored: str | None = None


class Settings(BaseSettings):
    """Everything configurable, documented in docs/configuration.md."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=".env",
        env_file_encoding="utf-8",
        env_ignore_empty=True,
        extra="ignore",
        populate_by_name=True,
    )

    store_url: str | None = Field(
        None,
        validation_alias=_seed("store_url", "REDIS_URL"),
        description="sqlite:///path/to/brain.db (default: a file in the user data dir) or redis://...",
    )
    redis_prefix: str = Field("ic", min_length=1, pattern=r"^[A-Za-z0-9_.:\-]+$")
    redis_cluster: bool = Field(False, description="Use the cluster client (or redis+cluster://).")
    data_dir: Path | None = Field(None, description="Where the default SQLite file lives.")
    project_root: Path | None = Field(
        None,
        validation_alias=_seed("project_root", "PROJECT_ROOT"),
        description="Overrides discovery (see project.locate_project).",
    )
    history_size: int = Field(5, ge=1, le=1000)
    state_token_cap: int = Field(12_000, ge=500, le=200_000)
    resume_tokens: int = Field(2000, ge=200, le=50_000, description="Default budget of the resume text.")
    max_context_chars: int = Field(2_000_000, ge=1000, description="Checkpoint input cap.")
    lock_ttl_seconds: int = Field(300, ge=5)
    cas_attempts: int = Field(3, ge=1, le=10)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", validation_alias=AliasChoices(*LOG_LEVEL_VARIABLES)
    )

    # Keys and models of the LLM tiers. The fields hold our own variables (and explicit values);
    # the seed's names are read into the ``seed_*`` fields and chosen in ``__init__``.
    gemini_api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = None
    merge: Literal["auto", "gemini", "anthropic", "offline"] = Field(
        "auto", description="Which merge tiers run (auto = every tier with a key)."
    )
    gemini_model: str = Field("gemini-3.8-flash", validation_alias=_seed("gemini_model", "GEMINI_MODEL"))
    anthropic_model: str = "claude-sonnet-5-5"
    gemini_base_url: str | None = None
    anthropic_base_url: str | None = None
    merge_timeout_seconds: float = Field(60.0, gt=0, le=600)
    llm_rebase_attempts: int = Field(3, ge=1, le=10)

    seed_gemini_api_key: SecretStr | None = Field(
        None, validation_alias=_only("GEMINI_API_KEY"), exclude=True, repr=False
    )
    seed_google_api_key: SecretStr | None = Field(
        None, validation_alias=_only("GOOGLE_API_KEY"), exclude=True, repr=False
    )
    seed_anthropic_api_key: SecretStr | None = Field(
        None, validation_alias=_only("ANTHROPIC_API_KEY"), exclude=True, repr=False
    )
    seed_anthropic_model: str | None = Field(
        None, validation_alias=_only("ANTHROPIC_MODEL"), exclude=True, repr=False
    )

    # Claude Code's environment (set for its hooks, MCP servers and Bash tool).
    claude_project_dir: Path | None = Field(
        None,
        validation_alias=_only("CLAUDE_PROJECT_DIR"),
        description="The folder Claude Code runs hooks and MCP servers for.",
    )
    claude_config_dir: Path | None = Field(
        None,
        validation_alias=_only("CLAUDE_CONFIG_DIR"),
        description="Where Claude Code keeps its data (default ~/.claude).",
    )
    claudecode: str | None = Field(None, validation_alias=_only("CLAUDECODE"), exclude=True)
    claude_code_entrypoint: str | None = Field(
        None, validation_alias=_only("CLAUDE_CODE_ENTRYPOINT"), exclude=True
    )

    endless_mode: bool = False
    transform_fallback: bool = True
    transform_timeout: int = Field(500, ge=1, le=60_000)
    transform_keep_recent: int = Field(0, ge=0)
    transform_keep_tools: str = Field("", description="Comma-separated tools never replaced.")
    observation_max_tokens: int = Field(300, ge=50, le=4000)
    context_window: int | None = Field(None, ge=1000)
    checkpoint_nudge: float = Field(
        DEFAULT_NUDGE_SHARE,
        ge=0,
        le=1,
        description="Window share past which the Stop hook asks the model for a checkpoint (0: never).",
    )
    # Working memory: the budget is detected from the MCP client unless set here or by `configure`.
    budget: MemoryBudget | None = None
    memory_auto_compact: bool = True
    memory_threshold: Threshold = 0.9
    memory_target: Threshold = 0.8
    # The live proxy (endless mode through ANTHROPIC_BASE_URL). Unset knobs keep the transform's
    # own defaults (``transcript.live.LiveOptions``), so each default is written once.
    proxy_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="The live proxy's port (default: the installed one, else a free one).",
    )
    proxy_upstream: str | None = Field(None, description="The API the live proxy forwards to.")
    proxy_timeout: float = Field(600.0, gt=0, le=3600, description="Seconds per upstream request.")
    proxy_max_body_mb: int = Field(
        32, ge=1, le=1024, description="Largest request body the live proxy takes (MB)."
    )
    proxy_head_timeout: float = Field(
        10.0, gt=0, le=600, description="Seconds for a request's line and headers."
    )
    proxy_body_timeout: float = Field(60.0, gt=0, le=3600, description="Seconds for a request's body.")
    proxy_keep_recent: int | None = Field(None, ge=0, description="Newest tool results sent whole.")
    proxy_keep_recent_tokens: int | None = Field(None, ge=0, description="Read results kept within this.")
    proxy_epoch_tokens: int | None = Field(None, ge=1, description="Whole tokens that start an epoch.")
    proxy_window: int | None = Field(None, ge=1000, description="Context window the proxy assumes.")
    proxy_long_cache: bool = Field(
        True, description="Ask for the 1-hour cache lifetime when pauses make it pay."
    )

    _key_sources: dict[str, ProviderKey] = PrivateAttr(default_factory=dict)
    _model_source: str = PrivateAttr("default")

    def __init__(self, **values: Any) -> None:
        # Explicit values are only known here (pydantic-settings merges every source before
        # validation), and they decide which name a key is reported under.
        super().__init__(**values)
        self._choose_seed_values({name for name in values if not name.startswith("_")})

    def _choose_seed_values(self, explicit: set[str]) -> None:
        def own(field: str) -> str:
            return f"{field} (explicit setting)" if field in explicit else f"{ENV_PREFIX}{field.upper()}"

        gemini = _present(self.gemini_api_key)
        if gemini is not None:
            self._key_sources["gemini"] = ProviderKey(gemini, own("gemini_api_key"))
        else:
            seeds = [
                ("GEMINI_API_KEY", self.seed_gemini_api_key),
                ("GOOGLE_API_KEY", self.seed_google_api_key),
            ]
            name, key = next(((n, k) for n, k in seeds if _present(k) is not None), (None, None))
            self.gemini_api_key = key
            self._key_sources["gemini"] = ProviderKey(key, name)

        inherited = self.under_claude_code
        anthropic = _present(self.anthropic_api_key)
        seed = _present(self.seed_anthropic_api_key)
        if anthropic is not None:
            self._key_sources["anthropic"] = ProviderKey(anthropic, own("anthropic_api_key"))
        elif seed is not None and not inherited:
            self.anthropic_api_key = seed
            self._key_sources["anthropic"] = ProviderKey(seed, "ANTHROPIC_API_KEY")
        else:
            self.anthropic_api_key = None
            self._key_sources["anthropic"] = ProviderKey(
                None, None, "ANTHROPIC_API_KEY" if seed is not None else None
            )

        if "anthropic_model" in self.model_fields_set:
            self._model_source = own("anthropic_model")
        elif self.seed_anthropic_model and not inherited:
            self.anthropic_model = self.seed_anthropic_model
            self._model_source = "ANTHROPIC_MODEL"

    @property
    def under_claude_code(self) -> bool:
        """True in a process Claude Code started (hooks, MCP servers, its Bash tool): it sets
        ``CLAUDECODE=1`` and ``CLAUDE_CODE_ENTRYPOINT`` (``cli``, ``sdk-ts``, ...) there."""
        marker = (self.claudecode or "").strip().lower()
        return marker not in ("", "0", "false", "no") or bool(self.claude_code_entrypoint)

    def provider_key(self, provider: Provider) -> ProviderKey:
        """The key ``provider``'s tier uses and the variable (or setting) it came from."""
        return self._key_sources.get(provider) or ProviderKey(
            self.gemini_api_key if provider == "gemini" else self.anthropic_api_key, f"{provider}_api_key"
        )

    @property
    def anthropic_model_source(self) -> str:
        """Where ``anthropic_model`` came from: a variable, an explicit setting or ``default``."""
        return self._model_source

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("store_url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        scheme = value.split("://", 1)[0].lower() if "://" in value else ""
        if scheme not in {"sqlite", "redis", "rediss", "redis+cluster", "rediss+cluster"}:
            raise ValueError(
                "store URL must start with sqlite:/// or redis:// (e.g. sqlite:////home/me/brain.db)"
            )
        return value

    @field_validator("project_root", "claude_project_dir", "claude_config_dir", "data_dir", mode="before")
    @classmethod
    def _empty_path_is_unset(cls, value: object) -> object:
        # Path("") is the working folder: an empty explicit value must mean "not set", as an
        # empty variable does.
        return None if isinstance(value, str) and not value.strip() else value

    def resolved_data_dir(self) -> Path:
        if self.data_dir is not None:
            return self.data_dir.expanduser()
        from platformdirs import user_data_dir

        return Path(user_data_dir("infinite-context", appauthor=False))

    def kept_tools(self) -> frozenset[str]:
        """``transform_keep_tools`` as names (the transcript transform and the live proxy)."""
        return frozenset(t.strip() for t in self.transform_keep_tools.split(",") if t.strip())

    def resolved_claude_config_dir(self) -> Path:
        """Claude Code's data folder: ``CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
        return self.claude_config_dir.expanduser() if self.claude_config_dir else Path.home() / ".claude"


def _present(key: SecretStr | None) -> SecretStr | None:
    return key if key is not None and key.get_secret_value().strip() else None


def load_settings(**overrides: object) -> Settings:
    """Build Settings, turning pydantic's validation error into a ConfigError naming the field."""
    from pydantic import ValidationError

    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = _field_of(".".join(str(p) for p in first["loc"]) or "settings")
        raise ConfigError(
            f"setting {field} is invalid: {first['msg']}",
            fix=f"correct {field} (environment variable {_variable_of(field)})",
        ) from None


def _field_of(key: str) -> str:
    """The field an error location names (pydantic reports an aliased field by its alias)."""
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices) and key in alias.choices:
            return name
    return key


def _variable_of(field: str) -> str:
    """The environment variable(s) a field is read from, for error messages."""
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    if isinstance(alias, AliasChoices):
        return " or ".join(str(c) for c in alias.choices)
    return f"{ENV_PREFIX}{field.upper()}"
