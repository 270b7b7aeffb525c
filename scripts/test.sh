#!/usr/bin/env bash
# Installs and builds what is missing, then runs every test: the core's GoogleTest suite, the
# wasm module against the native CLI, the page in Chromium, and the PyTorch validation grid.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== core (GoogleTest)"
ctest --test-dir build --output-on-failure -j"$(nproc 2>/dev/null || echo 2)"

echo "== golden results (tests/golden: the CLI's JSON for a fixed grid, pinned by hash)"
/usr/bin/python3 tests/golden/golden.py --memfit build/cli/memfit

echo "== wasm module, page unit tests and browser tests (node --test)"
node --test tests/wasm/ tests/browser/

echo "== fuzzing: 30 s of arbitrary input through the JSON reader and writer, the configuration and the"
echo "   estimate, and the Hugging Face importer as every family (ASan, UBSan)"
CXX=clang++-14 cmake -S . -B build-fuzz -DMEMFIT_FUZZ=ON -DMEMFIT_TESTS=OFF -DMEMFIT_BENCH=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc 2>/dev/null || echo 2)"
mkdir -p build-fuzz/corpus
/usr/bin/python3 tests/fuzz/make_seeds.py --memfit build/cli/memfit build-fuzz/seeds
build-fuzz/tests/fuzz/memfit_fuzz build-fuzz/corpus build-fuzz/seeds tests/fuzz/corpus -max_total_time=30 \
  -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>&1 | tail -3
echo "   the command line's argument parser (20 s)"
mkdir -p build-fuzz/corpus_cli
build-fuzz/tests/fuzz/memfit_fuzz_cli build-fuzz/corpus_cli tests/fuzz/corpus_cli -max_total_time=20 \
  -max_len=2048 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>&1 | tail -3

echo "== validation against PyTorch (tools/validate)"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  /usr/bin/python3 -m unittest discover -s tools/validate -p 'test_*.py'
  /usr/bin/python3 tools/validate/grid.py --memfit build/cli/memfit --json-report build/validation.json \
    --report build/validation.md
  /usr/bin/python3 -c 'import json; r = json.load(open("build/validation.json"))
print("validation: %d of %d configurations match PyTorch (report: build/validation.md)"
      % (r["passing_count"], r["configuration_count"]))'
else
  echo "SKIPPED: PyTorch is missing (apt-get install python3-torch); the validation grid did not run"
fi
echo "== the frameworks' real code (tools/frameworks: saved activations within 1 % per measured case)"
/usr/bin/python3 tools/frameworks/compare.py --memfit build/cli/memfit --check | tail -3

echo "== PEFT's GPU benchmark of every method (tools/accuracy/peft_gpu.py: between-steps memory within 2 %, what the methods add to the peak within 0.5 GB at the median, docs/peft_gpu.md up to date)"
/usr/bin/python3 tools/accuracy/peft_gpu.py --memfit build/cli/memfit --check | tail -2

echo "== accuracy report checks (tools/accuracy: every case valid, statistics, the core's band up to date)"
/usr/bin/python3 -m unittest discover -s tools/accuracy -p 'test_*.py'
echo "memfit: all tests passed"
