#!/usr/bin/env bash
# Installs what memfit needs on a fresh Debian 12 machine (idempotent; fast when all is there),
# then builds the native core + CLI + tests, the wasm module and the static page.
# Used by scripts/serve.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make libgtest-dev libbenchmark-dev emscripten chromium python3-torch clang-14 libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "memfit: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# MkDocs (Material) for the browser test of memfit's web component in a generated documentation
# site (examples/mkdocs). Optional: without it that one test is skipped and says so.
if [ ! -x .venv-docs/bin/mkdocs ] && [ -z "${MEMFIT_NO_MKDOCS:-}" ]; then
  (python3 -m venv .venv-docs && .venv-docs/bin/pip install -q "mkdocs-material==9.5.*") >/dev/null 2>&1 \
    || echo "memfit: MkDocs could not be installed; the generated-site embed test will be skipped"
fi

jobs=$(nproc 2>/dev/null || echo 2)
# Native: core, command line, GoogleTest suite, benchmarks.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
# WebAssembly: the same core under Emscripten (its tools look for Debian's acorn here).
export NODE_PATH=/usr/share/nodejs
emcmake cmake -S . -B build-wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-wasm -j"$jobs"
# The static page.
npm run --silent build:web
