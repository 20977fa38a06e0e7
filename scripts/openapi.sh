#!/usr/bin/env bash
# Regenerate the frontend contract from the app: openapi.json and the TypeScript types made from
# it. CI regenerates both and fails when the checked-in copies differ.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-frontend-contract}")"
mkdir -p "$out"
.venv/bin/highlight-service openapi --output "$out/openapi.json"
(cd frontend-contract && { [ -d node_modules ] || npm ci --no-audit --no-fund --silent 2>/dev/null; } \
  && npx --no-install openapi-typescript "$out/openapi.json" -o "$out/highlight-api.d.ts" \
     >/dev/null)
echo "wrote $out/openapi.json and $out/highlight-api.d.ts"
