#!/usr/bin/env bash
# Set up (first time) and run the whole test suite: real files, real models, real SQLite, real browser.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1; then  # Debian's chromium for the browser tests
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
exec .venv/bin/python -m pytest "$@"
