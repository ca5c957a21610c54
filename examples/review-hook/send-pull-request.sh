#!/bin/sh
# Sends one signed pull_request event to the fleet's github hook, as GitHub would.
# Needs REVIEW_HOOK_SECRET (the value the fleet was started with) and a running fleet.
# Exits non-zero when the hook refuses the event (a bad signature, a replay, a rate limit).
set -eu
here=$(dirname "$0")
port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"].rsplit(":", 1)[1])' \
       "$here/.flotilla/endpoint.json")
body=$(cat "$here/pull-request.txt")
sig=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$REVIEW_HOOK_SECRET" -r | cut -d' ' -f1)
if ! curl -sS --fail-with-body "http://127.0.0.1:$port/hooks/github" \
     -H "X-Hub-Signature-256: sha256=$sig" \
     -H 'X-GitHub-Event: pull_request' \
     -H "X-GitHub-Delivery: $(date +%s)-$$" \
     -H 'Content-Type: text/plain' \
     --data-binary "$body"; then
  echo
  echo "error: the hook did not take the event (its answer is above)" >&2
  exit 1
fi
echo
