#!/usr/bin/env bash
# Set up (first time) and start the app on its offline defaults, on http://localhost:8501 only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m streamlit run app.py "$@"
