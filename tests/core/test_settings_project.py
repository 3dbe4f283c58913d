"""Settings read once (env prefix plus the seed's names, explicit values over the environment over
``.env``, a bad value named by its field), the project folder decided once (``locate_project``),
which brain a folder belongs to (``resolve_project``: the id file, then git, then the folder; one
id however many processes start at once), and which key pays for a merge (``merge_plan``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from infinite_context_brain.core.brain import ProjectBrain
from infinite_context_brain.core.config import Settings, load_settings
from infinite_context_brain.core.errors import ConfigError, InvalidInput
from infinite_context_brain.core.logs import LOG_LEVEL_VARIABLES, level_from_env
from infinite_context_brain.core.merge.chain import build_chain
from infinite_context_brain.core.merge_plan import merge_plan
from infinite_context_brain.core.project import SESSION_FILE, find_root, locate_project, resolve_project

from ..conftest import REPO


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    names = ("explicit", "root", "claude", "client", "process")
    made = {name: tmp_path / name for name in names}
    for folder in made.values():
        folder.mkdir()
    return made


# ---- locate_project: one test per rule, highest first -------------------------------------
def test_explicit_folder_wins_over_everything(
    folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(folders["process"])
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(folders["claude"]))
    settings = load_settings(project_root=folders["root"])
    assert locate_project(folders["explicit"], settings, folders["client"]) == folders["explicit"]


@pytest.mark.parametrize("variable", ["PROJECT_ROOT", "INFINITE_CONTEXT_PROJECT_ROOT"])
def test_project_root_setting_wins_over_claude_code_and_cwd(
    folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.chdir(folders["process"])
    monkeypatch.setenv(variable, str(folders["root"]))
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(folders["claude"]))
    assert locate_project(None, load_settings(), folders["client"]) == folders["root"]


def test_claude_project_dir_wins_over_the_clients_cwd(
    folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(folders["process"])
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(folders["claude"]))
    assert locate_project(None, load_settings(), str(folders["client"])) == folders["claude"]


def test_client_cwd_wins_over_the_process_cwd(
    folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(folders["process"])
    assert locate_project(None, load_settings(), str(folders["client"])) == folders["client"]


def test_process_cwd_is_the_last_resort(folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folders["process"])
    assert locate_project(None, load_settings()) == folders["process"]


def test_claude_codes_folders_are_skipped_when_missing_or_empty(
    folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(folders["process"])
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path / "gone"))
    assert locate_project(None, load_settings(), str(tmp_path / "also-gone")) == folders["process"]
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", "")  # Claude Code has exported it empty
    assert load_settings().claude_project_dir is None
    assert locate_project(None, load_settings(), str(folders["client"])) == folders["client"]


def test_a_missing_folder_the_user_named_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInput) as info:
        locate_project(tmp_path / "typo", load_settings())
    assert "typo" in info.value.message
    monkeypatch.setenv("PROJECT_ROOT", str(tmp_path / "typo2"))
    with pytest.raises(InvalidInput) as info:
        locate_project(None, load_settings())
    assert info.value.field == "project_root"


def test_brain_open_goes_through_locate_project(
    project_dir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sub = project_dir / "src"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(sub))
    with ProjectBrain.open(settings=load_settings(store_url=store_url)) as brain:
        assert brain.project.root == project_dir.resolve()  # the git top level above it
        assert brain.project.folder == sub  # where Claude Code keys its transcripts


# ---- Settings: prefix for every field, the seed's names kept -------------------------------
def _readme_variables() -> set[str]:
    """The variables the configuration page's tables name (their first column)."""
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    names: set[str] = set()
    for row in text.splitlines():
        if row.startswith("| `"):
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1]))
    return names


def _variables_read() -> set[str]:
    names: set[str] = set()
    for field, info in Settings.model_fields.items():
        alias = info.validation_alias
        choices = getattr(alias, "choices", None)
        if choices is None:
            names.add(f"INFINITE_CONTEXT_{field.upper()}")
        else:
            names |= {c for c in choices if isinstance(c, str) and c.isupper()}
    return names


def test_every_variable_in_the_readme_is_read_by_settings() -> None:
    documented = _readme_variables()
    assert {"REDIS_URL", "PROJECT_ROOT", "ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR"} <= documented
    assert documented - _variables_read() == set()


@pytest.mark.parametrize(
    ("variable", "value", "field", "expected"),
    [
        ("REDIS_URL", "redis://localhost:1/0", "store_url", "redis://localhost:1/0"),
        ("GEMINI_MODEL", "gemini-x", "gemini_model", "gemini-x"),
        ("ANTHROPIC_MODEL", "claude-x", "anthropic_model", "claude-x"),
        ("LOG_LEVEL", "warning", "log_level", "WARNING"),
        ("CLAUDE_CONFIG_DIR", "/tmp/cc", "claude_config_dir", Path("/tmp/cc")),
        ("CLAUDE_PROJECT_DIR", "/tmp/pd", "claude_project_dir", Path("/tmp/pd")),
        ("INFINITE_CONTEXT_REDIS_PREFIX", "team", "redis_prefix", "team"),
        ("INFINITE_CONTEXT_MERGE", "offline", "merge", "offline"),
        ("INFINITE_CONTEXT_RESUME_TOKENS", "3000", "resume_tokens", 3000),
    ],
)
def test_seed_and_prefixed_names(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, field: str, expected: object
) -> None:
    monkeypatch.setenv(variable, value)
    assert getattr(load_settings(), field) == expected


def test_the_prefixed_name_wins_over_the_seed_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_MODEL", "seed")
    monkeypatch.setenv("INFINITE_CONTEXT_GEMINI_MODEL", "ours")
    monkeypatch.setenv("LOG_LEVEL", "ERROR")
    monkeypatch.setenv("INFINITE_CONTEXT_LOG_LEVEL", "DEBUG")
    s = load_settings()
    assert (s.gemini_model, s.log_level) == ("ours", "DEBUG")
    assert level_from_env() == "DEBUG"  # the pre-Settings reader agrees


def test_log_level_is_read_under_the_names_level_from_env_reads() -> None:
    alias = Settings.model_fields["log_level"].validation_alias
    assert list(getattr(alias, "choices", [])) == list(LOG_LEVEL_VARIABLES)


def test_resume_tokens_default_and_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().resume_tokens == 2000
    for bad in ("199", "50001"):
        monkeypatch.setenv("INFINITE_CONTEXT_RESUME_TOKENS", bad)
        with pytest.raises(ConfigError) as info:
            load_settings()
        assert "INFINITE_CONTEXT_RESUME_TOKENS" in str(info.value.fix)


def test_settings_precedence_and_seed_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("INFINITE_CONTEXT_HISTORY_SIZE", "7")
    monkeypatch.setenv("PROJECT_ROOT", str(tmp_path))
    monkeypatch.setenv("LOG_LEVEL", "debug")
    s = load_settings()
    assert (s.history_size, s.project_root, s.log_level) == (7, tmp_path, "DEBUG")
    assert load_settings(history_size=9).history_size == 9  # explicit beats environment
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("INFINITE_CONTEXT_STATE_TOKEN_CAP=1234\nINFINITE_CONTEXT_HISTORY_SIZE=2\n")
    s = load_settings()
    assert s.state_token_cap == 1234 and s.history_size == 7  # env beats .env


def test_bad_settings_name_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFINITE_CONTEXT_HISTORY_SIZE", "lots")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "history_size" in str(info.value)
    monkeypatch.delenv("INFINITE_CONTEXT_HISTORY_SIZE")
    with pytest.raises(ConfigError) as info:
        load_settings(store_url="postgres://x")
    assert "store_url" in str(info.value)


# ---- which key pays ------------------------------------------------------------------------
def _tier(settings: Settings, name: str) -> dict[str, object]:
    return next(t.model_dump() for t in merge_plan(settings).tiers if t.tier == name)


def test_plain_anthropic_key_counts_outside_claude_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-plain")
    s = load_settings()
    assert not s.under_claude_code
    assert s.anthropic_api_key is not None and s.anthropic_api_key.get_secret_value() == "sk-plain"
    tier = _tier(s, "anthropic")
    assert tier["runs"] and tier["key_from"] == "ANTHROPIC_API_KEY"
    assert "INFINITE_CONTEXT_ANTHROPIC_API_KEY" in str(tier["note"])  # hooks will not use it
    assert [t.label for t in build_chain(s).tiers] == ["anthropic:claude-sonnet-5-5"]


@pytest.mark.parametrize("marker", [("CLAUDECODE", "1"), ("CLAUDE_CODE_ENTRYPOINT", "cli")])
def test_plain_anthropic_key_is_ignored_under_claude_code(
    monkeypatch: pytest.MonkeyPatch, marker: tuple[str, str]
) -> None:
    monkeypatch.setenv(*marker)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-claude-codes-own")
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-opus-for-claude-code")
    s = load_settings()
    assert s.under_claude_code and s.anthropic_api_key is None
    assert s.anthropic_model == "claude-sonnet-5-5"  # Claude Code's model setting is not ours either
    tier = _tier(s, "anthropic")
    assert not tier["runs"] and tier["key_from"] is None and tier["key_ignored"] == "ANTHROPIC_API_KEY"
    assert "ANTHROPIC_API_KEY is inherited from Claude Code" in str(tier["skipped"])
    assert build_chain(s).tiers == []
    plan = merge_plan(s)
    assert [t.tier for t in plan.running] == ["offline"] and not plan.uses_network


def test_our_anthropic_key_counts_under_claude_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-claude-codes-own")
    monkeypatch.setenv("INFINITE_CONTEXT_ANTHROPIC_API_KEY", "sk-ours")
    s = load_settings()
    assert s.anthropic_api_key is not None and s.anthropic_api_key.get_secret_value() == "sk-ours"
    tier = _tier(s, "anthropic")
    assert tier["runs"] and tier["key_from"] == "INFINITE_CONTEXT_ANTHROPIC_API_KEY" and not tier["note"]
    explicit = load_settings(anthropic_api_key="sk-explicit")
    assert _tier(explicit, "anthropic")["key_from"] == "anthropic_api_key (explicit setting)"


def test_claudecode_zero_is_not_claude_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDECODE", "0")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-plain")
    assert _tier(load_settings(), "anthropic")["runs"]


def test_the_plan_names_the_gemini_variable_and_keeps_chain_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g-google")
    monkeypatch.setenv("INFINITE_CONTEXT_ANTHROPIC_API_KEY", "a")
    plan = merge_plan(load_settings())
    assert [(t.tier, t.key_from) for t in plan.running] == [
        ("gemini", "GOOGLE_API_KEY"),
        ("anthropic", "INFINITE_CONTEXT_ANTHROPIC_API_KEY"),
        ("offline", None),
    ]
    monkeypatch.setenv("GEMINI_API_KEY", "g-gemini")
    assert _tier(load_settings(), "gemini")["key_from"] == "GEMINI_API_KEY"
    monkeypatch.setenv("INFINITE_CONTEXT_GEMINI_API_KEY", "g-ours")
    assert _tier(load_settings(), "gemini")["key_from"] == "INFINITE_CONTEXT_GEMINI_API_KEY"
    assert plan.describe().startswith("mode auto: gemini (gemini-3.8-flash, key from GOOGLE_API_KEY) -> ")


def test_the_plan_says_why_a_tier_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = merge_plan(load_settings())
    assert [t.skipped for t in plan.tiers[:2]] == [
        "no key (set GEMINI_API_KEY or INFINITE_CONTEXT_GEMINI_API_KEY)",
        "no key (set INFINITE_CONTEXT_ANTHROPIC_API_KEY)",
    ]
    monkeypatch.setenv("GEMINI_API_KEY", "g")
    offline = merge_plan(load_settings(merge="offline"))
    assert {t.skipped for t in offline.tiers[:2]} == {"INFINITE_CONTEXT_MERGE=offline"}
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-claude-codes-own")
    forced = load_settings(merge="anthropic")
    assert merge_plan(forced).problem is not None
    with pytest.raises(ConfigError) as info:
        build_chain(forced)
    assert "inherited from Claude Code" in info.value.message
    assert "INFINITE_CONTEXT_ANTHROPIC_API_KEY" in str(info.value.fix)


def test_status_reports_the_merge_plan(
    project_dir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-claude-codes-own")
    monkeypatch.setenv("GEMINI_API_KEY", "g")
    with ProjectBrain.open(project_dir, load_settings(store_url=store_url)) as brain:
        report = brain.status()
    assert report.merge_plan is not None
    dumped = report.model_dump(mode="json")["merge_plan"]
    assert [t["tier"] for t in dumped["tiers"] if t["runs"]] == ["gemini", "offline"]
    assert dumped["tiers"][0]["key_from"] == "GEMINI_API_KEY"
    assert "inherited from Claude Code" in dumped["tiers"][1]["skipped"]
    assert "sk-claude-codes-own" not in str(dumped) and '"g"' not in str(dumped)


def test_a_bad_seed_variable_is_reported_by_field_and_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOG_LEVEL", "chatty")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert info.value.message.startswith("setting log_level is invalid")
    assert (
        info.value.fix == "correct log_level (environment variable INFINITE_CONTEXT_LOG_LEVEL or LOG_LEVEL)"
    )


# ---- resolve_project: which brain (the id file, then git, then the folder) -----------------
def test_identity_prefers_session_file_then_git_then_folder(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "sub").mkdir(parents=True)
    assert find_root(plain / "sub") == plain / "sub"

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg" / "deep").mkdir(parents=True)
    project = resolve_project(repo / "pkg" / "deep")
    assert project.root == repo and (repo / SESSION_FILE).read_text().strip() == project.session_id

    (repo / "pkg" / SESSION_FILE).write_text("my-named-brain\n")
    assert resolve_project(repo / "pkg" / "deep").session_id == "my-named-brain"
    assert resolve_project(repo / "pkg" / "deep").root == repo / "pkg"
    assert resolve_project(repo).session_id == project.session_id  # stable


def test_missing_project_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        resolve_project(tmp_path / "nope")
    assert info.value.field == "project"


def test_concurrent_first_use_agrees_on_one_session_id(tmp_path: Path) -> None:
    folder = tmp_path / "fresh"
    folder.mkdir()
    code = (
        "import sys; from infinite_context_brain.core.project import resolve_project; "
        "print(resolve_project(sys.argv[1]).session_id)"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    ids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(ids) == 1 and "" not in ids
    assert (folder / SESSION_FILE).read_text().strip() in ids
    assert sorted(p.name for p in folder.iterdir()) == [SESSION_FILE]  # no temp files left


def test_a_project_that_is_a_file_is_refused_by_name(tmp_path: Path) -> None:
    for given in ("/dev/null", str(tmp_path / "missing")):
        try:
            locate_project(given, load_settings())
        except InvalidInput as exc:
            assert exc.field == "project" and exc.fix and "existing folder" in exc.fix

        else:
            raise AssertionError(f"{given} was taken as a project folder")
