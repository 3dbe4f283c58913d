"""``install claude-code --endless``: route Claude Code through the proxy, and undo it.

It writes ``env.ANTHROPIC_BASE_URL`` (the proxy) in the chosen scope's settings file (the same
files and the same careful writer as the rest of the installer) and ``<data>/proxy/config.json``
(port, chosen per user at the first install, and upstream: the ``ANTHROPIC_BASE_URL`` the user had
before, else the Anthropic API), whose presence makes the SessionStart hook start the proxy when it
is not up and check that the listener on that port is this user's proxy.

The 1M-token window: Claude Code turns it off behind a base URL that is not api.anthropic.com
(it stops sending the ``context-1m`` beta and sizes the window at 200k). Claude Code has an escape
hatch, ``_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL=1``; like caveman (and unlike headroom's opt-in
``--1m`` flag) we set it only when it is verifiably true: the upstream is api.anthropic.com. A
value the user set is never overridden, and uninstall removes only the values we wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ..claude_code.install import InstallReport, Scope, _read_json, _settings_file, _write_json
from .config import (
    DEFAULT_UPSTREAM,
    ProxyConfig,
    free_port,
    read_config,
    remove_config,
    shown_upstream,
    write_config,
)
from .identity import verify
from .process import stop
from .status import status

BASE_URL = "ANTHROPIC_BASE_URL"
FIRST_PARTY = "_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL"
FIRST_PARTY_HOSTS = frozenset({"api.anthropic.com"})


def first_party(upstream: str) -> bool:
    parts = urlsplit(upstream)
    return parts.scheme == "https" and parts.hostname in FIRST_PARTY_HOSTS


def install_endless(
    project: Path,
    scope: Scope,
    data_dir: Path,
    report: InstallReport,
    *,
    uninstall: bool = False,
    claude_config_dir: Path | None = None,
    environ_base_url: str | None = None,
    port: int | None = None,
) -> None:
    """Add (or remove) the proxy's env entries in ``scope``'s settings; changes go to ``report``.
    ``environ_base_url``: the ``ANTHROPIC_BASE_URL`` of the installing shell (the upstream when
    the settings name none)."""
    path = _settings_file(scope, project.expanduser().resolve(), claude_config_dir)
    data = _read_json(path)
    env = data.get("env")
    env = env if isinstance(env, dict) else {}
    installed = read_config(data_dir)
    if uninstall:
        _uninstall(path, data, env, data_dir, installed, report)
        return
    config = installed or ProxyConfig(port=port or free_port())
    if port:
        config = ProxyConfig(port=port, upstream=config.upstream)
    before = env.get(BASE_URL)
    if isinstance(before, str) and before and before.rstrip("/") != config.url:
        upstream = before.rstrip("/")
    elif installed is not None:
        upstream = installed.upstream
    elif environ_base_url and environ_base_url.rstrip("/") != config.url:
        upstream = environ_base_url.rstrip("/")
    else:
        upstream = DEFAULT_UPSTREAM
    config = ProxyConfig(port=config.port, upstream=upstream)
    if installed != config:
        report.files.append(str(write_config(data_dir, config)))
        report.changes.append(f"proxy: {config.url} -> {shown_upstream(config.upstream)}")
    wanted = {BASE_URL: config.url}
    if first_party(config.upstream) and FIRST_PARTY not in env:
        wanted[FIRST_PARTY] = "1"
    if all(env.get(k) == v for k, v in wanted.items()):
        return
    env.update(wanted)
    data["env"] = env
    _write_json(path, data, report)
    report.changes.append(f"{path}: env {', '.join(f'{k}={v}' for k, v in wanted.items())}")


def _uninstall(
    path: Path,
    data: dict[str, Any],
    env: dict[str, Any],
    data_dir: Path,
    installed: ProxyConfig | None,
    report: InstallReport,
) -> None:
    changed = False
    value = env.get(BASE_URL)
    if isinstance(value, str) and installed is not None and value.rstrip("/") == installed.url:
        del env[BASE_URL]
        if installed is not None and installed.upstream != DEFAULT_UPSTREAM:
            env[BASE_URL] = installed.upstream  # the user's own, as it was before
        if env.get(FIRST_PARTY) == "1" and (installed is None or first_party(installed.upstream)):
            del env[FIRST_PARTY]
        changed = True
    if changed:
        if env:
            data["env"] = env
        else:
            data.pop("env", None)
        _write_json(path, data, report)
        report.changes.append(f"{path}: removed env {BASE_URL} (the proxy)")
    if installed is not None:
        stop(data_dir)
        remove_config(data_dir)
        report.changes.append("proxy: stopped, configuration removed")


def endless_check(data_dir: Path) -> tuple[Literal["ok", "warn", "fail"], str, str | None]:
    """(status, detail, fix) for ``doctor``: installed? running? the listener on the installed
    port this user's proxy?"""
    config = read_config(data_dir)
    found = status(data_dir, ask=False)
    if config is None and not found.running:
        return "ok", "live endless mode not installed (install claude-code --endless)", None
    if config is None:  # started by hand or by an editor: check the one that runs
        found = status(data_dir)
        if found.problem:
            return "fail", found.problem, "run `infinite-context proxy stop` then `start`"
        return "ok", f"running (not installed for Claude Code), pid {found.pid}, {found.url}", None
    verdict = verify(data_dir, config.port, found.pid if found.running else None)
    if verdict.ours:
        figures = verdict.figures or {}
        before, after = int(figures.get("tokens_before", 0)), int(figures.get("tokens_after", 0))
        saved = f"; tool-result tokens {before:,} -> {after:,}" if before else ""
        return "ok", f"running, pid {found.pid}, {config.url} -> {found.upstream}{saved}", None
    if verdict.vacant:
        return (
            "warn",
            f"installed ({config.url}) but not running",
            "it starts with the next Claude Code session, or run `infinite-context proxy start`",
        )
    return (
        "fail",
        f"{verdict.reason}: Claude Code would send your API key there ({config.url})",
        "stop that listener, or choose another port: `infinite-context install claude-code --uninstall "
        "--endless` then `infinite-context install claude-code --endless`",
    )
