#!/usr/bin/env bash
# Fuzz the API with schemathesis (all operations, all checks) against the real service, the way
# CI does: `highlight-service demo` on a fresh database, then `st run` with scripts/schemathesis.toml.
#
#   scripts/schemathesis.sh sqlite|postgres [open|auth] [MAX_EXAMPLES]
#
# `auth` configures read and write tokens and sends the write token, so the auth checks
# (ignored_auth, missing_required_header) run too. MAX_EXAMPLES: examples per operation and
# phase instead of scripts/schemathesis.toml's 100 (the same fixed seed, fewer cases). Reports
# (JUnit, JSON, NDJSON) go to bench/results/schemathesis/<database>-<mode>/; the exit code is
# schemathesis's (0: no failure).
set -euo pipefail
cd "$(dirname "$0")/.."
database="${1:?usage: scripts/schemathesis.sh sqlite|postgres [open|auth] [MAX_EXAMPLES]}"
mode="${2:-open}"
examples=()
[ -n "${3:-}" ] && examples=(--max-examples "$3")
work="$(mktemp -d)"
reports="bench/results/schemathesis/$database-$mode"
rm -rf "$reports" && mkdir -p "$reports"
port="$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
pg_admin="${HIGHLIGHT_TEST_POSTGRES:-postgresql://postgres@127.0.0.1:5432/postgres}"
pg_db="highlight_st_$$"

export HIGHLIGHT_PDF_ROOT="$work/pdfs" HIGHLIGHT_INDEX_CACHE_DIR="$work/cache" HIGHLIGHT_LOG_LEVEL=WARNING
case "$database" in
  sqlite) export HIGHLIGHT_DATABASE_URL="sqlite+aiosqlite:///$work/st.db" ;;
  postgres)
    psql "$pg_admin" -qc "CREATE DATABASE \"$pg_db\""
    export HIGHLIGHT_DATABASE_URL="postgresql+asyncpg://postgres@127.0.0.1:5432/$pg_db" ;;
  *) echo "unknown database $database" >&2; exit 2 ;;
esac
auth_args=()
if [ "$mode" = auth ]; then
  export HIGHLIGHT_AUTH_READ_TOKENS='["st-read-token"]' HIGHLIGHT_AUTH_WRITE_TOKENS='["st-write-token"]'
  auth_args=(--header "Authorization: Bearer st-write-token")
fi

.venv/bin/highlight-service demo --port "$port" >"$reports/server.log" 2>&1 &
server=$!
cleanup() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  if [ "$database" = postgres ]; then
    psql "$pg_admin" -qc "DROP DATABASE IF EXISTS \"$pg_db\" WITH (FORCE)" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
.venv/bin/python - "$port" <<'PY'
import sys, time, urllib.request
for _ in range(240):
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=1).status == 200:
            break
    except OSError:
        time.sleep(0.5)
else:
    sys.exit("the service did not come up")
PY

status=0
# Without --max-time every phase runs once (about a minute); `timeout` is only the hard bound.
# The upload route's raw PDF bodies come from scripts/schemathesis_hooks.py.
PYTHONPATH=scripts SCHEMATHESIS_HOOKS=schemathesis_hooks \
  timeout -s INT 900 .venv/bin/st --config-file scripts/schemathesis.toml run \
  "http://127.0.0.1:$port/openapi.json" "${auth_args[@]}" "${examples[@]}" --wait-for-schema 30 \
  --report junit,json,ndjson --report-dir "$reports" || status=$?
.venv/bin/python scripts/schemathesis_counts.py "$reports" || true
if grep -q "Traceback" "$reports/server.log"; then
  echo "the server logged an exception during the run (see $reports/server.log):" >&2
  grep -m5 -A3 "Traceback" "$reports/server.log" >&2
  status=1
fi
exit "$status"
