#!/usr/bin/env bash
# Creates .venv-frameworks/ at the repository root with the pinned packages of
# tools/frameworks/requirements.txt (torch 2.13.0 CPU build, transformers, peft,
# torchtune, litgpt, accelerate, torchao). Idempotent: a venv whose packages
# already match the pins is left alone. No model weights are downloaded, ever.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$ROOT/.venv-frameworks"
REQ="$ROOT/tools/frameworks/requirements.txt"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup_venv: creating $VENV with $($PY --version 2>&1)"
  "$PY" -m venv "$VENV"
else
  echo "setup_venv: $VENV exists ($("$VENV/bin/python" --version 2>&1))"
fi
PIP=("$VENV/bin/pip" --disable-pip-version-check)

want=$(grep -Ev '^\s*(#|$)' "$REQ" | sed 's/[[:space:]]*$//' | sort)
have=$("${PIP[@]}" freeze 2>/dev/null | sed 's/^torch==2.13.0+cpu$/torch==2.13.0/' | sort)
missing=$(comm -23 <(echo "$want") <(echo "$have") || true)
if [ -z "$missing" ]; then
  echo "setup_venv: all $(echo "$want" | wc -l) pinned packages already installed; nothing to do"
else
  echo "setup_venv: installing/updating $(echo "$missing" | wc -l) packages:"
  echo "$missing" | sed 's/^/  /' | head -20
  # torch first, exactly this pin: the CPU wheel on this machine's disk. An
  # unpinned torch would pull a multi-GB CUDA build.
  "${PIP[@]}" install "torch==2.13.0"
  "${PIP[@]}" install -r "$REQ"
fi
"$VENV/bin/python" - <<'PY'
import importlib, importlib.metadata as md, warnings
warnings.filterwarnings("ignore")
for m in ("torch", "transformers", "peft", "torchtune", "litgpt", "accelerate", "torchao"):
    importlib.import_module(m)  # must import, not just be installed
    print(f"setup_venv: {m} {md.version(m)} imports")
PY
echo "setup_venv: done. Use $VENV/bin/python tools/frameworks/measure.py"
