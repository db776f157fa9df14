#!/usr/bin/env bash
# Runs `keyplan lint` for the action: annotations on the job log, a SARIF file for code
# scanning, Markdown on the job summary. Findings (exit status 1) do not fail this step: the
# exit status goes to GITHUB_OUTPUT (exit-code) for the action's last step, so the SARIF upload
# runs first. Anything else fails this step at once, with exit-code=2 and no findings count:
# args the action cannot pass on, a keyplan that could not run (exit status 2, or killed by a
# signal), or a run that did not write what it was asked for.
set -uo pipefail
out="${GITHUB_OUTPUT:-/dev/null}"

# Fails the step: the message as an error annotation, exit-code=2.
fail() {
  local m="${1//%/%25}"
  m="${m//$'\r'/%0D}"
  echo "::error::${m//$'\n'/%0A}"
  echo "exit-code=2" >> "$out"
  exit 2
}

# Splits $1 into the array `words` as a POSIX shell splits a command line, quotes included:
# words are separated by blanks and newlines, '…' keeps everything literally, "…" keeps
# everything but \" \\ \$ \` (the backslash goes), and a backslash outside quotes keeps the next
# character. Nothing is expanded or run: $VAR, $(…), `…`, globs and ~ stay as written.
split_words() {
  local s="$1" n="${#1}" i=0 c next word="" have=0 quote=""
  words=()
  while [ "$i" -lt "$n" ]; do
    c="${s:i:1}"
    if [ "$quote" = "'" ]; then
      if [ "$c" = "'" ]; then quote=""; else word+="$c"; fi
    elif [ "$quote" = '"' ]; then
      if [ "$c" = '"' ]; then
        quote=""
      elif [ "$c" = '\' ] && [ $((i + 1)) -lt "$n" ]; then
        next="${s:i+1:1}"
        case "$next" in
          '"' | '\' | '$' | '`') word+="$next"; i=$((i + 1)) ;;
          $'\n') i=$((i + 1)) ;;
          *) word+="$c" ;;
        esac
      else
        word+="$c"
      fi
    else
      case "$c" in
        ' ' | $'\t' | $'\n' | $'\r')
          if [ "$have" = 1 ]; then words+=("$word"); word=""; have=0; fi
          ;;
        "'" | '"') quote="$c"; have=1 ;;
        '\')
          if [ $((i + 1)) -lt "$n" ]; then
            next="${s:i+1:1}"
            i=$((i + 1))
            if [ "$next" != $'\n' ]; then word+="$next"; have=1; fi
          else
            word+="$c"; have=1
          fi
          ;;
        *) word+="$c"; have=1 ;;
      esac
    fi
    i=$((i + 1))
  done
  if [ -n "$quote" ]; then
    fail "args: a $quote quote is not closed: close it, or put a backslash before a quote that is part of a value"
  fi
  if [ "$have" = 1 ]; then words+=("$word"); fi
}

args=()
[ -n "${KEYPLAN_SCHEME:-}" ] && args+=(--scheme "$KEYPLAN_SCHEME")
while IFS= read -r k; do [ -n "$k" ] && args+=(--keys "$k"); done <<< "${KEYPLAN_KEYS:-}"
while IFS= read -r c; do [ -n "$c" ] && args+=(--code "$c"); done <<< "${KEYPLAN_CODE:-}"
words=()
split_words "${KEYPLAN_ARGS:-}"
for w in "${words[@]}"; do
  case "$w" in
    --output | --output=* | -o* | -[!-]*o*)
      fail "args: \`$w\`: the action chooses where each report goes (annotations to the log, SARIF to the sarif-file output, Markdown to the job summary): remove -o/--output from args"
      ;;
    --format | --format=*)
      fail "args: \`$w\`: the action runs keyplan lint in three formats itself (github annotations, SARIF, Markdown): remove --format from args, and use the action's \`sarif\` and \`summary\` inputs to choose"
      ;;
    --fail-on | --fail-on=*)
      fail "args: \`$w\`: set the action's \`fail-on\` input instead (with: fail-on: error) and remove --fail-on from args"
      ;;
    -h | --help | -V | --version)
      fail "args: \`$w\` prints keyplan's help or version and checks nothing: remove it from args"
      ;;
  esac
done
args+=("${words[@]}")
args+=(--fail-on "${KEYPLAN_FAIL_ON:-warning}")
tmp="${RUNNER_TEMP:-${TMPDIR:-/tmp}}"
sarif="$tmp/keyplan.sarif"
annotations="$tmp/keyplan-annotations"
rm -f "$sarif" "$annotations"

# keyplan lint's exit status: 0 or 1 goes on; 2 (an error) or 128+n (killed by signal n)
# fails the step.
check() {
  local what="$1" status="$2"
  if [ "$status" -gt 128 ]; then
    fail "keyplan lint ($what) was killed by signal $((status - 128)) (exit status $status): see the log above"
  elif [ "$status" -ge 2 ]; then
    fail "keyplan lint ($what) could not run (exit status $status): see the message above"
  fi
}

# Workflow annotations (and the findings in the log); its status is the action's.
keyplan lint "${args[@]}" --format github | tee "$annotations"
statuses=("${PIPESTATUS[@]}")
check annotations "${statuses[0]}"
[ "${statuses[1]}" = 0 ] || fail "could not write $annotations (tee exit status ${statuses[1]})"
status="${statuses[0]}"
keyplan lint "${args[@]}" --format sarif -o "$sarif"
sarif_status=$?
check SARIF "$sarif_status"
if [ "$sarif_status" != "$status" ]; then
  fail "keyplan lint gave exit status $status for the annotations but $sarif_status for SARIF: the two runs disagree"
fi
[ -s "$sarif" ] || fail "keyplan lint wrote no SARIF file at $sarif"
if [ "${KEYPLAN_SUMMARY:-true}" = true ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  keyplan lint "${args[@]}" --format markdown >> "$GITHUB_STEP_SUMMARY"
  check Markdown "$?"
fi
echo "exit-code=$status" >> "$out"
echo "sarif-file=$sarif" >> "$out"
# One annotation per finding.
echo "findings=$(grep -c '^::' "$annotations")" >> "$out"
exit 0
