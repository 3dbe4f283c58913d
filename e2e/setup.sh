#!/usr/bin/env bash
# System packages and caches code-server + headless Chromium need (see ../shared/REAL_CLIENTS.md):
# apt packages, then @vscode/ripgrep's download cache seeded from the system rg (its postinstall
# would fetch from GitHub, which is not reachable here), then the pinned npm packages.
set -euo pipefail
cd "$(dirname "$0")"
need=()
for pkg in ripgrep libkrb5-dev libxkbfile-dev libsecret-1-dev chromium fonts-liberation; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
cache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-1.15.11"
archive="$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
if [ ! -f "$archive" ]; then
  mkdir -p "$cache"
  tmp="$(mktemp -d)"
  cp "$(command -v rg)" "$tmp/rg"
  tar -czf "$archive" -C "$tmp" rg
  rm -rf "$tmp"
fi
if [ ! -x node_modules/.bin/code-server ]; then
  npm_config_yes=true npm_config_unsafe_perm=true npm ci --foreground-scripts --no-audit --no-fund --loglevel=error
fi
