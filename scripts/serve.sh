#!/usr/bin/env bash
# Builds everything and serves the calculator at http://localhost:${PORT:-8080}/
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec node scripts/serve.mjs web/dist "${PORT:-8080}"
