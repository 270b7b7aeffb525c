#!/usr/bin/env bash
# Before a GPU run through the device tool, on the CPU machine (it reaches PyPI; the GPU machine
# reaches nothing). From anywhere in the repository:
#
#   bash tools/validate/cuda_prepare.sh
#
# * .whl/: the pinned pure-Python wheels of requirements-cuda.txt (transformers, peft, accelerate, trl;
#   ~15 MB), and in .whl/bnb/ bitsandbytes unpacked with only its CPU and CUDA 13 libraries (the
#   whole wheel is 43 MB; a run carries at most 64 MiB). .whl/ is kept out of git
#   (.git/info/exclude). Set BNB_CUDA=12 for an image whose torch is a CUDA 12 build.
# * build/cli/memfit, if it is not built (the run compares on the GPU machine when it runs there).
#
# Torch is not carried: the GPU image's CUDA torch runs, and its version is recorded.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
PY=${PYTHON:-python3}
REQ=tools/validate/requirements-cuda.txt

exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >>"$exclude"

rm -rf .whl
mkdir -p .whl/bnb
mapfile -t pins < <(grep -E '^(transformers|peft|accelerate|trl)==' "$REQ")
"$PY" -m pip download -q --no-deps --only-binary=:all: -d .whl "${pins[@]}"

bnb=$(grep -E '^bitsandbytes==' "$REQ" || true)
if [ -n "$bnb" ]; then
  tmp=$(mktemp -d)
  "$PY" -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d "$tmp" "$bnb"
  "$PY" - "$tmp" .whl/bnb "${BNB_CUDA:-13}" <<'PY'
import glob, os, re, sys, zipfile
src, dst, cuda = sys.argv[1], sys.argv[2], sys.argv[3]
whl = glob.glob(os.path.join(src, "*.whl"))[0]
kept = 0
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        lib = re.search(r"libbitsandbytes_(\w+)\.so$", name)
        if lib and not (lib.group(1) == "cpu" or lib.group(1).startswith("cuda" + cuda)):
            continue
        z.extract(name, dst)
        kept += 1
print("bitsandbytes: %s unpacked into %s (%d files; CPU and CUDA %s libraries only)" % (os.path.basename(whl), dst, kept, cuda))
PY
  rm -rf "$tmp"
fi
du -sh .whl | sed 's/^/cuda_prepare: .whl is /'

if [ ! -x build/cli/memfit ]; then
  if [ -f build/CMakeCache.txt ]; then
    cmake --build build --target memfit -j2
  else
    cmake -S . -B build -DMEMFIT_TESTS=OFF -DMEMFIT_BENCH=OFF >/dev/null && cmake --build build --target memfit -j2
  fi
fi
echo "cuda_prepare: ready. Device tool: run(command=\"bash tools/validate/cuda_device_run.sh\", carry=[\".whl\", \"build/cli/memfit\"], timeout_s=600)"
