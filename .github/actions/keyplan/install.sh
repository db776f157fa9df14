#!/usr/bin/env bash
# Installs keyplan for the action: KEYPLAN_INSTALL is pip, npm, cargo, a wheel's path or
# `path`; KEYPLAN_VERSION a version (empty: the latest). Puts it on GITHUB_PATH.
set -euo pipefail
how="${KEYPLAN_INSTALL:-pip}"
version="${KEYPLAN_VERSION:-}"
tmp="${RUNNER_TEMP:-${TMPDIR:-/tmp}}"
case "$how" in
  path)
    command -v keyplan > /dev/null || { echo "::error::install: path, but there is no keyplan on PATH"; exit 2; }
    ;;
  pip | *.whl)
    venv="$tmp/keyplan-venv"
    python3 -m venv "$venv"
    if [ "$how" = pip ]; then spec="keyplan${version:+==$version}"; else spec="$how"; fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$spec"
    echo "$venv/bin" >> "$GITHUB_PATH"
    export PATH="$venv/bin:$PATH"
    ;;
  npm)
    prefix="$tmp/keyplan-npm"
    # (not --silent: a failed install says why)
    npm install --no-audit --no-fund --loglevel=error --prefix "$prefix" "keyplan${version:+@$version}"
    echo "$prefix/node_modules/.bin" >> "$GITHUB_PATH"
    export PATH="$prefix/node_modules/.bin:$PATH"
    ;;
  cargo)
    cargo install --locked --root "$tmp/keyplan-cargo" keyplan ${version:+--version "$version"}
    echo "$tmp/keyplan-cargo/bin" >> "$GITHUB_PATH"
    export PATH="$tmp/keyplan-cargo/bin:$PATH"
    ;;
  *)
    echo "::error::install: '$how' is not pip, npm, cargo, a .whl path or path"
    exit 2
    ;;
esac
keyplan --version
