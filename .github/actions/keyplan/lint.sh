#!/usr/bin/env bash
# Runs `keyplan lint` for the action: annotations on the job log, a SARIF file for code
# scanning, Markdown on the job summary. Never fails itself: the exit status goes to
# GITHUB_OUTPUT (exit-code) for the action's last step, so the SARIF upload runs first.
set -uo pipefail
args=()
[ -n "${KEYPLAN_SCHEME:-}" ] && args+=(--scheme "$KEYPLAN_SCHEME")
while IFS= read -r k; do [ -n "$k" ] && args+=(--keys "$k"); done <<< "${KEYPLAN_KEYS:-}"
while IFS= read -r c; do [ -n "$c" ] && args+=(--code "$c"); done <<< "${KEYPLAN_CODE:-}"
if [ -n "${KEYPLAN_ARGS:-}" ]; then
  read -r -a more <<< "$KEYPLAN_ARGS"
  args+=("${more[@]}")
fi
args+=(--fail-on "${KEYPLAN_FAIL_ON:-warning}")
tmp="${RUNNER_TEMP:-${TMPDIR:-/tmp}}"
sarif="$tmp/keyplan.sarif"
out="${GITHUB_OUTPUT:-/dev/null}"

# Workflow annotations (and the findings in the log); its status is the action's.
keyplan lint "${args[@]}" --format github | tee "$tmp/keyplan-annotations"
status="${PIPESTATUS[0]}"
echo "exit-code=$status" >> "$out"
if [ "$status" -ge 2 ]; then
  echo "::error::keyplan lint could not run (exit status $status): see the message above"
  exit 0
fi
keyplan lint "${args[@]}" --format sarif -o "$sarif" || true
echo "sarif-file=$sarif" >> "$out"
# One annotation per finding.
echo "findings=$(grep -c '^::' "$tmp/keyplan-annotations")" >> "$out"
if [ "${KEYPLAN_SUMMARY:-true}" = true ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  keyplan lint "${args[@]}" --format markdown >> "$GITHUB_STEP_SUMMARY" || true
fi
exit 0
