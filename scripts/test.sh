#!/usr/bin/env bash
# Set up (first time) and run the whole test suite against the real files, models and SQLite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
