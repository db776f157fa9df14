#!/usr/bin/env bash
# Decides whether the action uploads its SARIF file (GITHUB_OUTPUT upload=true|false):
# KEYPLAN_SARIF is true, false or auto. auto uploads on a public repository; on a private one it
# asks the code scanning API (GITHUB_TOKEN): 403 means code scanning is not available there (no
# GitHub code security), so nothing is uploaded and a notice says how to turn it on or off.
set -uo pipefail
out="${GITHUB_OUTPUT:-/dev/null}"
case "${KEYPLAN_SARIF:-auto}" in
  true) echo "upload=true" >> "$out"; exit 0 ;;
  false) echo "upload=false" >> "$out"; exit 0 ;;
  auto) ;;
  *)
    echo "::error::sarif: '${KEYPLAN_SARIF}' is not auto, true or false"
    exit 2
    ;;
esac
if [ "${KEYPLAN_PRIVATE:-}" != true ]; then
  echo "upload=true" >> "$out"
  exit 0
fi
api="${GITHUB_API_URL:-https://api.github.com}/repos/${GITHUB_REPOSITORY:-}/code-scanning/analyses?per_page=1"
status="$(curl --silent --show-error --output /dev/null --write-out '%{http_code}' \
  --header "Authorization: Bearer ${GITHUB_TOKEN:-}" --header "Accept: application/vnd.github+json" "$api")" || status=000
case "$status" in
  # 200: analyses; 404: none yet, but code scanning is there to take the first.
  200 | 404) echo "upload=true" >> "$out" ;;
  *)
    echo "::notice::keyplan's SARIF was not uploaded: code scanning is not available to this workflow on ${GITHUB_REPOSITORY:-this repository} (the API answered $status; private repositories need GitHub code security and \`permissions: security-events: write\`). The findings are in the log, the job summary and the sarif-file output; set \`sarif: false\` to skip this check or \`sarif: true\` to make a failed upload fail the job."
    echo "upload=false" >> "$out"
    ;;
esac
exit 0
