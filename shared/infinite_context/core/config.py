"""Settings, with one precedence order for every entry point.

Precedence, highest first:

1. explicit values passed to ``Settings(...)`` (the language server's ``initializationOptions``,
   CLI flags such as ``--project``);
2. environment variables: ``INFINITE_CONTEXT_<FIELD>`` plus the seed's names ``REDIS_URL``,
   ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``, ``ANTHROPIC_API_KEY``, ``PROJECT_ROOT``, ``LOG_LEVEL``;
3. a ``.env`` file in the working directory;
4. the defaults below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import ConfigError


def _env(name: str, *seed_names: str) -> AliasChoices:
    # Field name first so Settings(store_url=...) works; then our prefixed variable; then the
    # seed's historical names.
    return AliasChoices(name, f"INFINITE_CONTEXT_{name.upper()}", *seed_names)


class Settings(BaseSettings):
    """Everything configurable, documented in README.md's configuration table."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    store_url: str | None = Field(
        None,
        validation_alias=_env("store_url", "REDIS_URL"),
        description="sqlite:///path/to/brain.db (default: a file in the user data dir) or redis://...",
    )
    redis_prefix: str = Field(
        "ic", min_length=1, pattern=r"^[A-Za-z0-9_.:\-]+$", validation_alias=_env("redis_prefix")
    )
    redis_cluster: bool = Field(
        False,
        validation_alias=_env("redis_cluster"),
        description="Use the cluster client (or redis+cluster://).",
    )
    data_dir: Path | None = Field(
        None, validation_alias=_env("data_dir"), description="Where the default SQLite file lives."
    )
    project_root: Path | None = Field(
        None, validation_alias=_env("project_root", "PROJECT_ROOT"), description="Overrides discovery."
    )
    history_size: int = Field(5, ge=1, le=1000, validation_alias=_env("history_size"))
    state_token_cap: int = Field(4000, ge=500, le=200_000, validation_alias=_env("state_token_cap"))
    max_context_chars: int = Field(
        2_000_000, ge=1000, validation_alias=_env("max_context_chars"), description="Checkpoint input cap."
    )
    lock_ttl_seconds: int = Field(300, ge=5, validation_alias=_env("lock_ttl_seconds"))
    cas_attempts: int = Field(3, ge=1, le=10, validation_alias=_env("cas_attempts"))
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", validation_alias=_env("log_level", "LOG_LEVEL")
    )
    gemini_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("gemini_api_key", "GEMINI_API_KEY", "GOOGLE_API_KEY")
    )
    anthropic_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("anthropic_api_key", "ANTHROPIC_API_KEY")
    )

    merge: Literal["auto", "gemini", "anthropic", "offline"] = Field(
        "auto",
        validation_alias=_env("merge"),
        description="Which merge tiers run (auto = every tier with a key).",
    )
    gemini_model: str = Field("gemini-3.8-flash", validation_alias=_env("gemini_model", "GEMINI_MODEL"))
    anthropic_model: str = Field(
        "claude-sonnet-5-5", validation_alias=_env("anthropic_model", "ANTHROPIC_MODEL")
    )
    gemini_base_url: str | None = Field(None, validation_alias=_env("gemini_base_url"))
    anthropic_base_url: str | None = Field(None, validation_alias=_env("anthropic_base_url"))
    merge_timeout_seconds: float = Field(60.0, gt=0, le=600, validation_alias=_env("merge_timeout_seconds"))
    llm_rebase_attempts: int = Field(3, ge=1, le=10, validation_alias=_env("llm_rebase_attempts"))

    endless_mode: bool = Field(False, validation_alias=_env("endless_mode"))
    transform_fallback: bool = Field(True, validation_alias=_env("transform_fallback"))
    transform_timeout: int = Field(500, ge=1, le=60_000, validation_alias=_env("transform_timeout"))
    transform_keep_recent: int = Field(0, ge=0, validation_alias=_env("transform_keep_recent"))
    transform_keep_tools: str = Field(
        "", validation_alias=_env("transform_keep_tools"), description="Comma-separated tools never replaced."
    )
    observation_max_tokens: int = Field(300, ge=50, le=4000, validation_alias=_env("observation_max_tokens"))
    context_window: int | None = Field(None, ge=1000, validation_alias=_env("context_window"))
    # Working memory: the budget is detected from the MCP client unless set here or by `configure`.
    budget: int | None = Field(None, ge=1000, le=10_000_000, validation_alias=_env("budget"))
    memory_auto_compact: bool = Field(True, validation_alias=_env("memory_auto_compact"))
    memory_threshold: float = Field(0.9, gt=0, le=1, validation_alias=_env("memory_threshold"))
    memory_target: float = Field(0.8, gt=0, le=1, validation_alias=_env("memory_target"))

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

    def resolved_data_dir(self) -> Path:
        if self.data_dir is not None:
            return self.data_dir.expanduser()
        from platformdirs import user_data_dir

        return Path(user_data_dir("infinite-context", appauthor=False))


def load_settings(**overrides: object) -> Settings:
    """Build Settings, turning pydantic's validation error into a ConfigError naming the field."""
    from pydantic import ValidationError

    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "settings"
        raise ConfigError(
            f"setting {field} is invalid: {first['msg']}",
            fix=f"correct {field} (environment variable INFINITE_CONTEXT_{field.upper()})",
        ) from None
