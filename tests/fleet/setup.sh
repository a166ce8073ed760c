#!/usr/bin/env bash
# Installs the pinned npm packages of tests/fleet (DuckDB's Node API, which
# ships its own binaries) when missing or when package-lock.json changed.
# Exit 0 when ready; 77 (ctest's skip code) when node or npm is absent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "setup.sh: node and npm are needed for the DuckDB checks (Node.js >= 20)" >&2
  exit 77
fi
if ! cmp -s "$here/package-lock.json" "$here/node_modules/.lookback-lock"; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2)
  cp "$here/package-lock.json" "$here/node_modules/.lookback-lock"
fi
