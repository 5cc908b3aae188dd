#!/usr/bin/env bash
# From zero to a protected call with curl: an organization, a user, a client credential and an
# API key through the operator API, then an access token (spec 4.1) and GET /v1/me with it.
# Run it from the repository root while `npm start` runs: `bash examples/curl-session.sh`
# (PORT=9000 or BASE=https://... to point it elsewhere). It stops at the first error.
set -euo pipefail

PORT=${PORT:-8787}
BASE=${BASE:-http://127.0.0.1:$PORT}
# A local run keeps ADMIN_TOKEN in .dev.vars, which is read only for a loopback BASE (the local
# token never goes anywhere else); for any other BASE, export ADMIN_TOKEN before running this.
if [ -z "${ADMIN_TOKEN:-}" ]; then
  case "$BASE" in
  http://127.0.0.1:* | http://localhost:*) ADMIN_TOKEN=$(sed -n 's/^ADMIN_TOKEN=//p' .dev.vars 2>/dev/null || true) ;;
  esac
fi
[ -n "${ADMIN_TOKEN:-}" ] || { echo "ADMIN_TOKEN is not set (and no .dev.vars holds one for a local BASE)" >&2; exit 1; }

# field NAME: prints data.NAME of the JSON envelope on stdin; on an error envelope (or no JSON),
# prints the server's message and fails, so `set -e` stops the session there.
field() {
  node -e '
    let s = "";
    process.stdin.on("data", (d) => (s += d)).on("end", () => {
      let body;
      try { body = JSON.parse(s); } catch { console.error("not a JSON answer: " + s.slice(0, 200)); process.exit(1); }
      if (body.data == null) { console.error(`${body.response_status} ${body.error}: ${body.developer_message}`); process.exit(1); }
      console.log(body.data[process.argv[1]]);
    });' "$1"
}
# --fail-with-body: curl fails on a 4xx or 5xx but still hands the error envelope to field.
admin() { curl -sS --fail-with-body -X POST "$BASE/admin/v1$1" -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' -d "$2"; }

ORG=$(admin /organizations '{"name":"Acme"}' | field id)
USER_ID=$(admin "/organizations/$ORG/users" '{"name":"Ada","email":"ada@acme.example"}' | field id)
CRED=$(admin "/organizations/$ORG/users/$USER_ID/client-credentials" '{"name":"laptop"}')
CLIENT_ID=$(echo "$CRED" | field client_id)
CLIENT_SECRET=$(echo "$CRED" | field client_secret)
API_KEY=$(admin "/organizations/$ORG/api-keys" '{"name":"laptop"}' | field api_key)

# Spec 4.1: exchange the client credentials for an access token.
TOKEN=$(curl -sS --fail-with-body -X POST "$BASE/v1/oauth" -H 'Content-Type: application/json' -H "x-api-key: $API_KEY" \
  -d "{\"client_id\":\"$CLIENT_ID\",\"client_secret\":\"$CLIENT_SECRET\",\"grant_type\":\"client_credentials\"}" | field access_token)

sleep 1 # the default limit is 1 request per second per API key
curl -sS --fail-with-body "$BASE/v1/me" -H "x-api-key: $API_KEY" -H "Authorization: Bearer $TOKEN"
echo

# The same token request, form-encoded with HTTP Basic client authentication (RFC 6749 2.3.1).
sleep 1
curl -sS --fail-with-body -X POST "$BASE/v1/oauth" -H "x-api-key: $API_KEY" -u "$CLIENT_ID:$CLIENT_SECRET" \
  -d grant_type=client_credentials | field token_type
