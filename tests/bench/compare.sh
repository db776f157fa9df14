#!/usr/bin/env bash
# Runs keyplan's bulk slot pass side by side with what users would otherwise use, on a
# generated dump, and prints each as a ratio of `cat file > /dev/null` measured in the same run.
#
#   tests/bench/compare.sh [KEYS]        # default 10,000,000 keys (~280 MB)
#
# Uses hyperfine when installed (apt-get install hyperfine); otherwise a plain timing loop
# (median of 5). The Python row needs redis-py (pip install redis) and is skipped without it.
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-10000000}"
RUNS=5
cargo build --release --quiet --bin keyplan --example gen_keys --example naive_slots
BIN=target/release/keyplan
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
DUMP="$DIR/keys.txt"
target/release/examples/gen_keys "$N" > "$DUMP"
echo "dump: $N keys, $(( $(stat -c %s "$DUMP") / 1048576 )) MB, $(nproc) cores"

declare -a NAMES CMDS
add() { NAMES+=("$1"); CMDS+=("$2"); }
add "cat file > /dev/null" "cat '$DUMP' > /dev/null"
add "wc -l" "wc -l '$DUMP' > /dev/null"
add "keyplan slot --counts (file, all cores)" "$BIN slot --counts --format json --keys '$DUMP' > /dev/null"
add "keyplan slot --counts (file, 1 thread)" "$BIN slot --counts --format json --threads 1 --keys '$DUMP' > /dev/null"
add "keyplan slot --counts (stdin pipe)" "cat '$DUMP' | $BIN slot --counts --format json --keys - > /dev/null"
add "naive Rust: lines() + String + crc16 crate" "target/release/examples/naive_slots '$DUMP' > /dev/null"
add "keyplan analyze (full report, all cores)" "$BIN analyze --format json '$DUMP' > /dev/null"
if python3 -c 'import redis.crc' 2>/dev/null; then
  add "Python: redis-py key_slot loop" "python3 -c 'import sys,redis.crc as c
h=[0]*16384
for l in open(sys.argv[1],\"rb\"): h[c.key_slot(l.rstrip(b\"\\n\"))]+=1' '$DUMP'"
fi

cat "$DUMP" > /dev/null # warm the page cache
declare -a SECS
if command -v hyperfine > /dev/null; then
  hyperfine --warmup 1 --runs "$RUNS" --export-json "$DIR/h.json" "${CMDS[@]}" > /dev/null
  mapfile -t SECS < <(python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]: print(r["median"])' "$DIR/h.json")
else
  for cmd in "${CMDS[@]}"; do
    ts=()
    for _ in $(seq "$RUNS"); do
      s=$(date +%s%N); bash -c "$cmd"; e=$(date +%s%N); ts+=($(( e - s )))
    done
    SECS+=("$(printf '%s\n' "${ts[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p" | awk '{printf "%.4f", $1/1e9}')")
  done
fi
printf '\n%-46s %9s %9s\n' "program" "median s" "× cat"
for i in "${!NAMES[@]}"; do
  printf '%-46s %9.3f %9.2f\n' "${NAMES[$i]}" "${SECS[$i]}" "$(awk -v a="${SECS[$i]}" -v b="${SECS[0]}" 'BEGIN{print a/b}')"
done
naive_i=5
analyze_i=6
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
printf '\nslot --counts (file, all cores) is %s× faster than the naive Rust loop\n' "$(ratio "${SECS[$naive_i]}" "${SECS[2]}")"
printf 'analyze (full) takes %s× the bulk slot pass\n' "$(ratio "${SECS[$analyze_i]}" "${SECS[2]}")"
# analyze against the naive loop, on this dump and on one of ids that never repeat a skeleton
# (tokens, ULIDs, e-mails, IPv6: analyze has to check far more keys against their memos). The
# table above runs each program's runs in one block; these machines drift by 10-20% within a
# minute, so here the two run in turns, $RUNS times each, and each row prints its median.
IDS="$DIR/ids.txt"
target/release/examples/gen_keys "$N" --ids > "$IDS"
cat "$IDS" > /dev/null
secs() { local s e; s=$(date +%s%N); "$@" > /dev/null; e=$(date +%s%N); echo $(( e - s )); }
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p" | awk '{printf "%.3f", $1/1e9}'; }
for dump in "$DUMP" "$IDS"; do
  A=(); B=()
  for _ in $(seq "$RUNS"); do
    A+=("$(secs "$BIN" analyze --format json "$dump")")
    B+=("$(secs target/release/examples/naive_slots "$dump")")
  done
  ma="$(median "${A[@]}")"; mb="$(median "${B[@]}")"
  name="ordinary dump"; [ "$dump" = "$IDS" ] && name="id-heavy dump"
  printf '%s: analyze %s s, naive Rust loop %s s (medians of %s in turns): analyze is %s× faster\n' \
    "$name" "$ma" "$mb" "$RUNS" "$(ratio "$mb" "$ma")"
done
# lint --keys and plan --keys against analyze on the same dumps (the scheme of the example
# data), in turns: each reads every key, and the ratio is what their per-key work costs on top.
SCHEME=examples/keyplan.yaml
for dump in "$DUMP" "$IDS"; do
  A=(); L=(); LS=(); P=()
  for _ in $(seq "$RUNS"); do
    A+=("$(secs "$BIN" analyze --format json "$dump")")
    L+=("$(secs "$BIN" lint --format json --keys "$dump")")
    LS+=("$(secs "$BIN" lint --format json --scheme "$SCHEME" --keys "$dump")")
    P+=("$(secs "$BIN" plan --format json --scheme "$SCHEME" --keys "$dump")")
  done
  ma="$(median "${A[@]}")"
  name="ordinary dump"; [ "$dump" = "$IDS" ] && name="id-heavy dump"
  printf '%s (medians of %s in turns): analyze %s s' "$name" "$RUNS" "$ma"
  for row in "lint --keys:$(median "${L[@]}")" "lint --keys --scheme:$(median "${LS[@]}")" "plan --keys:$(median "${P[@]}")"; do
    printf ', %s %s s (%s× analyze)' "${row%%:*}" "${row##*:}" "$(ratio "${row##*:}" "$ma")"
  done
  printf '\n'
done
if [ -x /usr/bin/time ]; then
  # The smaller dump is generated the same way as the big one (not cut with `head`): the
  # kernel keeps a file written in large blocks in large page-cache folios and maps them
  # whole, so how a file was written changes the resident memory of reading it.
  SMALL="$DIR/small.txt"
  target/release/examples/gen_keys $(( N / 10 )) > "$SMALL"
  /usr/bin/time -f "peak resident memory, slot --counts (file): %M KB" "$BIN" slot --counts --format json --keys "$DUMP" > /dev/null
  /usr/bin/time -f "peak resident memory, slot --counts (pipe): %M KB" "$BIN" slot --counts --format json --keys - < <(cat "$DUMP") > /dev/null
  /usr/bin/time -f "peak resident memory, analyze, $N keys: %M KB" "$BIN" analyze --format json "$DUMP" > /dev/null
  /usr/bin/time -f "peak resident memory, analyze, $(( N / 10 )) keys: %M KB" "$BIN" analyze --format json "$SMALL" > /dev/null
fi

# RDB snapshots: a real redis-server writes one (DEBUG POPULATE: N/2 string keys, compressed
# as servers compress them), then keyplan reads it; each as MB/s and a ratio of `cat`.
if command -v redis-server > /dev/null && command -v redis-cli > /dev/null; then
  RPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$DIR" --save "" --daemonize yes \
    --enable-debug-command yes --logfile "$DIR/redis.log"
  sleep 0.5
  redis-cli -p "$RPORT" DEBUG POPULATE $(( N / 2 )) user:session 120 > /dev/null
  redis-cli -p "$RPORT" SAVE > /dev/null
  redis-cli -p "$RPORT" SHUTDOWN NOSAVE > /dev/null 2>&1 || true
  RDB="$DIR/dump.rdb"
  MB=$(awk -v b="$(stat -c %s "$RDB")" 'BEGIN{printf "%.1f", b/1048576}')
  cat "$RDB" > /dev/null
  timed() { local s e; s=$(date +%s%N); bash -c "$1"; e=$(date +%s%N); awk -v n=$(( e - s )) 'BEGIN{printf "%.4f", n/1e9}'; }
  tc=$(timed "cat '$RDB' > /dev/null")
  ts=$(timed "$BIN scan --rdb '$RDB' > /dev/null 2>&1")
  ta=$(timed "$BIN analyze --format json '$RDB' > /dev/null")
  printf '\nsnapshot: %s keys, %s MB\n' "$(( N / 2 ))" "$MB"
  for row in "cat:$tc" "keyplan scan --rdb (tsv):$ts" "keyplan analyze (full report):$ta"; do
    name="${row%%:*}"; t="${row##*:}"
    printf '%-46s %9.3f s %8.0f MB/s %7.2f× cat\n' "$name" "$t" "$(awk -v m="$MB" -v t="$t" 'BEGIN{print m/t}')" "$(awk -v a="$t" -v b="$tc" 'BEGIN{print a/b}')"
  done
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "peak resident memory, analyze of the snapshot: %M KB" "$BIN" analyze --format json "$RDB" > /dev/null
  fi
fi

# The fuzz harness with a long budget (CI runs 64 cases per input kind): mutated real inputs of
# every kind, no panic, exit 0/1/2 with a message. KEYPLAN_FUZZ_CASES overrides it.
printf '\nfuzzing every input kind (%s cases each)\n' "${KEYPLAN_FUZZ_CASES:-2000}"
KEYPLAN_FUZZ_CASES="${KEYPLAN_FUZZ_CASES:-2000}" cargo test --release --test integration fuzz:: 2>&1 | grep -E '^test |test result'
