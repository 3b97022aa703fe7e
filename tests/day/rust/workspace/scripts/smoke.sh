#!/usr/bin/env bash
# Smoke-test a running server: ./scripts/smoke.sh [base-url]
set -euo pipefail
BASE="${1:-http://127.0.0.1:3000}"
curl -fsS "$BASE/health" | jq -e '.status == "ok"' >/dev/null
curl -fsS "$BASE/api/checks" | jq -e '.checks | length > 0' >/dev/null
echo "smoke ok"
