#!/usr/bin/env bash
# Fail when the checked-in frontend contract (openapi.json and the TypeScript types) or the
# viewer build (app/viewer/static) is not what the app and frontend-contract/ make today.
# Fix with `make contract` and commit. Needs Node.js (npm) for the TypeScript generator.
set -euo pipefail
cd "$(dirname "$0")/.."
contract_tmp="$(mktemp -d)"
trap 'rm -rf "$contract_tmp"' EXIT
scripts/openapi.sh "$contract_tmp" >/dev/null
for file in openapi.json highlight-api.d.ts; do
  diff -u "frontend-contract/$file" "$contract_tmp/$file" \
    || { echo "frontend-contract/$file is stale: run make contract" >&2; exit 1; }
done
scripts/build_viewer.sh >/dev/null
git diff --exit-code --stat app/viewer/static && [ -z "$(git status --porcelain app/viewer/static)" ] \
  || { echo "app/viewer/static is stale: run make contract and commit it" >&2; exit 1; }
echo "frontend contract and viewer build are up to date"
