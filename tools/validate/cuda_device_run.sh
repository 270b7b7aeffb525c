#!/usr/bin/env bash
# On the GPU machine, from the repository root (the device tool runs there):
#
#   run(command="bash tools/validate/cuda_device_run.sh", carry=[".whl", "build/cli/memfit"], timeout_s=600)
#
# Installs the wheels tools/validate/cuda_prepare.sh put in .whl/ into /tmp (the image's own
# transformers / peft / accelerate are used when the carried ones do not import), then runs
# cuda_grid.py: cuda_grid.json, cuda_grid.md and this log go to $OUT (the device tool brings them
# back), or to tools/validate/out without $OUT. Arguments go to cuda_grid.py (--only NAME, ...).
# CUDA_GRID_BUDGET_S (default 420): configurations that would end later are skipped, so the
# command ends well inside the device tool's 600 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUTDIR=${OUT:-tools/validate/out}
mkdir -p "$OUTDIR"

main() {
  local PY=${PYTHON:-python3} SITE=/tmp/cuda_grid_site BNB=/tmp/cuda_grid_bnb path=""
  echo "== cuda_device_run $(date -u +%FT%TZ) $(uname -m) $("$PY" --version 2>&1)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true
  if [ -d .whl/bnb/bitsandbytes ]; then
    rm -rf "$BNB" && mkdir -p "$BNB" && cp -r .whl/bnb/. "$BNB"/ && path=$BNB
  fi
  if ls .whl/*.whl >/dev/null 2>&1; then
    rm -rf "$SITE"
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .whl/*.whl &&
       PYTHONPATH="$SITE${path:+:$path}" "$PY" -c "import transformers, peft, accelerate" 2>/tmp/cuda_grid_import.err; then
      path="$SITE${path:+:$path}"
    else
      echo "the carried transformers / peft / accelerate do not install or import here; the image's own run:"
      tail -5 /tmp/cuda_grid_import.err 2>/dev/null
    fi
  else
    echo "no .whl/ (tools/validate/cuda_prepare.sh makes it): the image's own transformers / peft / accelerate run"
  fi
  export PYTHONPATH="$path${PYTHONPATH:+:$PYTHONPATH}"
  "$PY" - <<'PY'
import importlib.metadata as md
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None
print("packages:", {k: version(k) for k in ("torch", "transformers", "peft", "accelerate")})
try:
    import bitsandbytes
    print("bitsandbytes", bitsandbytes.__version__, "imports")
except Exception as e:  # noqa: BLE001
    print("bitsandbytes does not import:", type(e).__name__, str(e)[:200])
PY
  local memfit=(--no-memfit)
  if [ -x build/cli/memfit ] && build/cli/memfit --list-gpus >/dev/null 2>&1; then
    memfit=(--memfit build/cli/memfit)
  else
    echo "build/cli/memfit missing or does not run here: memfit's columns come from cuda_grid.py --reuse afterwards"
  fi
  PYTHONUNBUFFERED=1 "$PY" tools/validate/cuda_grid.py --out-dir "$OUTDIR" \
    --time-budget-s "${CUDA_GRID_BUDGET_S:-420}" "${memfit[@]}" "$@"
}

main "$@" 2>&1 | tee "$OUTDIR/cuda_grid.log"
exit "${PIPESTATUS[0]}"
