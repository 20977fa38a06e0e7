#!/usr/bin/env bash
# Regenerate the frontend contract from the app; CI fails when the checked-in copy is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/highlight-service openapi --output frontend-contract/openapi.json
echo "wrote frontend-contract/openapi.json"
