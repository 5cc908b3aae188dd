#!/usr/bin/env bash
# From zero to a protected call: an organization, a user, a client credential and an API key
# with the operator CLI, then, with curl, an access token (spec 4.1) and GET /v1/me with it.
# Run it from the repository root while `npm start` runs: `bash examples/curl-session.sh`
# (PORT=9000, or BASE=https://... with ADMIN_TOKEN exported, to point it elsewhere). It stops at
# the first error.
set -euo pipefail

PORT=${PORT:-8787}
BASE=${BASE:-http://127.0.0.1:$PORT}
# The operator's part goes through the operator CLI (docs/operator-cli.md), which prints `data` as
# JSON. It takes ADMIN_TOKEN from the environment, or from .dev.vars when BASE is this machine,
# and stops the session with its own one-line message if keyway refuses.
admin() { npm run --silent admin -- --url "$BASE" --json "$@"; }
# get NAME: prints field NAME of the JSON object on stdin; with nothing on stdin (the CLI has
# already said why on stderr), it just fails.
get() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { try { console.log(JSON.parse(s)[process.argv[1]]); } catch { process.exit(1); } });' "$1"; }
# field NAME: prints data.NAME of keyway's JSON envelope on stdin; on an error envelope (or no
# JSON), prints the server's message and fails, so `set -e` stops the session there.
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

ORG=$(admin orgs create Acme | get id)
USER_ID=$(admin users create "$ORG" Ada --email ada@acme.example | get id)
CRED=$(admin credentials create "$ORG" "$USER_ID" --name laptop)
CLIENT_ID=$(echo "$CRED" | get client_id)
CLIENT_SECRET=$(echo "$CRED" | get client_secret)
# 10 requests per second, so that this session runs without pauses: without --per-second a key
# gets the specification's default of 1 per second and 1000 per day (the token request counts).
API_KEY=$(admin keys create "$ORG" --name laptop --per-second 10 | get api_key)

# The API client's part, with curl. --fail-with-body: curl fails on a 4xx or 5xx but still hands
# the error envelope to field, which prints the server's message.
# Spec 4.1: exchange the client credentials for an access token.
TOKEN=$(curl -sS --fail-with-body -X POST "$BASE/v1/oauth" -H 'Content-Type: application/json' -H "x-api-key: $API_KEY" \
  -d "{\"client_id\":\"$CLIENT_ID\",\"client_secret\":\"$CLIENT_SECRET\",\"grant_type\":\"client_credentials\"}" | field access_token)

curl -sS --fail-with-body "$BASE/v1/me" -H "x-api-key: $API_KEY" -H "Authorization: Bearer $TOKEN"
echo

# The same token request, form-encoded with HTTP Basic client authentication (RFC 6749 2.3.1).
curl -sS --fail-with-body -X POST "$BASE/v1/oauth" -H "x-api-key: $API_KEY" -u "$CLIENT_ID:$CLIENT_SECRET" \
  -d grant_type=client_credentials | field token_type
