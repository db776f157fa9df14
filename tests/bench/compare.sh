#!/usr/bin/env bash
# keyplan side by side with what a user would run instead, on the same data, in one run:
#
#   tests/bench/compare.sh [KEYS]      # default 10,000,000 keys (~280 MB a dump)
#
# Sections (each prints a Markdown table; rows of a table run in turns, RUNS times each, and
# show medians, since these shared machines drift by 10-20% within a minute):
#   dumps     the floor's own dump (`gen N FILE 1`), a generated dump and an id-heavy one
#             (`gen_keys --ids`): cat, wc -l, the naive Rust loop, the floor (the standalone
#             fused SIMD slot pass in ../shared/bench/floor: newlines, `{…}` tags and the CRC
#             in one pass, 2 threads, mmap, the histogram and nothing else; AVX-512 kernel
#             where the CPU has it, else AVX2), keyplan's own slot pass (`slot --counts`),
#             analyze, lint --keys, plan --keys
#   snapshot  an RDB a real redis-server writes (DEBUG POPULATE KEYS/2): cat, the `rdb` crate
#             0.4 (`rdb -f nil`, parse only; installed into target/bench-tools on first use),
#             keyplan scan --rdb and analyze
#   live      a 3-master loopback cluster of KEYS/10 keys: redis-cli --scan, --memkeys and
#             --bigkeys on every master at once, and analyze --cluster (with and without --bytes)
#   code      keyplan code next to rg -c over exactly the same files, on a JavaScript tree (npm)
#             and a Python tree (PyPI) (tests/bench/tree.sh)
# then peak memory and a long fuzz run.
#
# Every table shows the median wall time and the median CPU time (user + system, from GNU
# time) of each row: on a machine shared with other work the CPU seconds move less.
#
# CPU paths: the floor runs its AVX-512 kernel where the CPU has avx512bw and vpclmulqdq, else
# its AVX2 one; keyplan picks the same way at run time (`KEYPLAN_SIMD=avx2` or `portable`
# lowers it). On an AVX-512 CPU the dump tables also run both programs on the AVX2 path, so
# one run reports both.
#
# Environment: RUNS (default 5); SKIP=live,code,... to leave sections out; FLOOR_DIR (default
# ../shared/bench/floor; built once into FLOOR_TARGET, default /tmp/floor, with its own
# Cargo.lock); PROFILE (default release; `profiling` is the same code with symbols). Needs
# bash and python3; redis-server/redis-cli for snapshot and live, rg and pip for code (npm
# for the JavaScript tree), cargo for the rdb crate, GNU time.
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-10000000}"
RUNS="${RUNS:-5}"
SKIP=",${SKIP:-},"
PROFILE="${PROFILE:-release}"
cargo build --profile "$PROFILE" --quiet --bin keyplan --example gen_keys --example naive_slots
OUTDIR="${CARGO_TARGET_DIR:-$PWD/target}/$PROFILE"
BIN="$OUTDIR/keyplan"
NAIVE="$OUTDIR/examples/naive_slots"
GEN_KEYS="$OUTDIR/examples/gen_keys"
DIR="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT

printf '## Machine\n\n'
printf -- '- %s, %s cores, %s GB memory\n' \
  "$(lscpu 2> /dev/null | sed -n 's/^Model name: *//p' | head -1)" "$(nproc)" \
  "$(awk '/MemTotal/{printf "%.0f", $2/1048576}' /proc/meminfo)"
printf -- '- %s; %s; %s\n' "$(uname -sr)" "$(rustc --version | cut -d' ' -f1-2)" \
  "$(redis-server --version 2> /dev/null | cut -d' ' -f1-3 || echo 'no redis-server')"
printf -- '- %s runs of each row in turns, medians\n' "$RUNS"

# The floor: built once with its own Cargo.lock; its kernel by what the CPU has.
# (Beside the main checkout: from a linked worktree, ../shared is found next to the checkout
# that holds the repository.)
if [ -z "${FLOOR_DIR:-}" ]; then
  FLOOR_DIR=../shared/bench/floor
  COMMON=$(git rev-parse --path-format=absolute --git-common-dir 2> /dev/null || true)
  if [ ! -f "$FLOOR_DIR/Cargo.toml" ] && [ -n "$COMMON" ]; then
    FLOOR_DIR="$(dirname "$COMMON")/../shared/bench/floor"
  fi
fi
FLOOR_TARGET="${FLOOR_TARGET:-/tmp/floor}"
FLOOR=""
AVX512=""
if grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo \
  && grep -qw vpclmulqdq /proc/cpuinfo; then
  AVX512=1
fi
if [ -f "$FLOOR_DIR/Cargo.toml" ] && CARGO_TARGET_DIR="$FLOOR_TARGET" \
  cargo build --release --quiet --locked --manifest-path "$FLOOR_DIR/Cargo.toml" 2> /dev/null; then
  FLOOR_KERNEL=fused-avx2-x4
  [ -n "$AVX512" ] && FLOOR_KERNEL=fused-avx512-x4
  FLOOR_SLOTS="$FLOOR_TARGET/release/slots --io mmap --threads 2 --crc"
  FLOOR="$FLOOR_SLOTS $FLOOR_KERNEL"
  FLOOR_GEN="$FLOOR_TARGET/release/gen"
  # The floor's own naive loop (BufRead::lines, a String per key, the crc16 crate): the one
  # its figures cite.
  NAIVE="$FLOOR_TARGET/release/naive lines"
  printf -- '- the floor: %s, built into %s (kernel %s)\n' "$FLOOR_DIR" "$FLOOR_TARGET" "$FLOOR_KERNEL"
else
  printf -- '- no floor (%s could not be built): ratios are to keyplan slot --counts\n' "$FLOOR_DIR"
fi
# keyplan's own choice, by the same CPU flags its run-time detection reads.
if [ -n "$AVX512" ]; then
  printf -- '- CPU path: AVX-512 (avx512bw, avx512vl, vpclmulqdq): keyplan takes its AVX-512 scan; the AVX2-only path of both programs is timed too (KEYPLAN_SIMD=avx2, fused-avx2-x4)\n'
elif grep -qw avx2 /proc/cpuinfo; then
  printf -- '- CPU path: AVX2 only (no AVX-512 with VPCLMULQDQ): keyplan takes its AVX2 scan\n'
else
  printf -- '- CPU path: neither AVX2 nor AVX-512: keyplan takes its portable scan\n'
fi

# ms CMD: "WALL_NS CPU_MS" of one run of CMD (CPU: user + system of it and its children).
ms() {
  local s e c
  s=$(date +%s%N)
  /usr/bin/time -f '%U %S' -o "$DIR/cpu" bash -c "$1" > /dev/null 2>&1 || true
  e=$(date +%s%N)
  c=$(awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { printf "%.0f", ($1 + $2) * 1000 }' "$DIR/cpu")
  echo "$(( e - s )) ${c:-0}"
}
median_s() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p" | awk '{printf "%.3f", $1/1e9}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a/b; else print "-" }'; }

# turns TITLE REF [EXTRA_COLUMN_FN] -- NAME CMD NAME CMD ...: runs the commands in turns and
# prints a table of medians with a ratio to row REF (0-based). Leaves MED[i] for later lines.
declare -a MED CPU
turns() {
  local title="$1" ref="$2" extra="$3"; shift 4
  local names=() cmds=() i r m
  while [ $# -gt 0 ]; do names+=("$1"); cmds+=("$2"); shift 2; done
  declare -A T=() C=()
  for i in "${!cmds[@]}"; do bash -c "${cmds[$i]}" > /dev/null 2>&1 || true; done # warm up
  for r in $(seq "$RUNS"); do
    for i in "${!cmds[@]}"; do
      m=$(ms "${cmds[$i]}")
      T[$i]+="${m% *} "
      C[$i]+="$(( ${m#* } * 1000000 )) "
    done
  done
  MED=()
  CPU=()
  for i in "${!cmds[@]}"; do
    # shellcheck disable=SC2086
    MED[$i]=$(median_s ${T[$i]})
    # shellcheck disable=SC2086
    CPU[$i]=$(median_s ${C[$i]})
  done
  printf '\n### %s\n\n| program | median s | × %s | CPU s | CPU × |%s\n|---|---:|---:|---:|---:|%s\n' "$title" \
    "${names[$ref]}" "${extra:+ $($extra head) |}" "${extra:+---:|}"
  for i in "${!cmds[@]}"; do
    printf '| %s | %s | %s | %s | %s |%s\n' "${names[$i]}" "${MED[$i]}" \
      "$(ratio "${MED[$i]}" "${MED[$ref]}")" "${CPU[$i]}" "$(ratio "${CPU[$i]}" "${CPU[$ref]}")" \
      "${extra:+ $($extra "${MED[$i]}") |}"
  done
}

# ---------------------------------------------------------------------------------- dumps
if [[ $SKIP != *,dumps,* ]]; then
  SCHEME=examples/keyplan.yaml
  kinds="ordinary ids"
  [ -n "$FLOOR" ] && kinds="floor's $kinds"
  for kind in $kinds; do
    DUMP="$DIR/${kind%\'s}.txt"
    if [ "$kind" = ids ]; then
      "$GEN_KEYS" "$N" --ids > "$DUMP"
    elif [ "$kind" = "floor's" ]; then
      # The floor's own generator, seed 1: the dump its figures are about (10,000,000 keys:
      # 311 MB, average line 31 B, 22% with a hash tag).
      "$FLOOR_GEN" "$N" "$DUMP" 1 > /dev/null
    else
      "$GEN_KEYS" "$N" > "$DUMP"
    fi
    MB=$(( $(stat -c %s "$DUMP") / 1048576 ))
    rows=("cat file > /dev/null" "cat '$DUMP'"
      "wc -l" "wc -l '$DUMP'"
      "naive Rust loop (lines() + String + crc16 crate)" "$NAIVE '$DUMP'")
    f=-1
    if [ -n "$FLOOR" ]; then
      f=$(( ${#rows[@]} / 2 ))
      rows+=("the floor (fused SIMD pass, 2 threads, mmap; $FLOOR_KERNEL)" "$FLOOR '$DUMP'")
    fi
    k=$(( ${#rows[@]} / 2 ))
    rows+=("keyplan slot --counts" "$BIN slot --counts --format json --keys '$DUMP'"
      "keyplan analyze" "$BIN analyze --format json '$DUMP'"
      "keyplan lint --keys" "$BIN lint --format json --keys '$DUMP'"
      "keyplan lint --keys --scheme" "$BIN lint --format json --scheme $SCHEME --keys '$DUMP'"
      "keyplan plan --keys --scheme" "$BIN plan --format json --scheme $SCHEME --keys '$DUMP'")
    a2=-1
    if [ -n "$AVX512" ]; then
      # The AVX2-only path of both programs, on this AVX-512 CPU.
      a2=$(( ${#rows[@]} / 2 ))
      [ -n "$FLOOR" ] && rows+=("the floor, AVX2 kernel (fused-avx2-x4)" "$FLOOR_SLOTS fused-avx2-x4 '$DUMP'")
      rows+=("keyplan slot --counts, AVX2 path (KEYPLAN_SIMD=avx2)" "KEYPLAN_SIMD=avx2 $BIN slot --counts --format json --keys '$DUMP'"
        "keyplan analyze, AVX2 path (KEYPLAN_SIMD=avx2)" "KEYPLAN_SIMD=avx2 $BIN analyze --format json '$DUMP'")
    fi
    ref=$f
    [ "$f" -lt 0 ] && ref=$k
    turns "$kind dump: $N keys, $MB MB" "$ref" "" -- "${rows[@]}"
    an=$(( k + 1 ))
    if [ "$f" -ge 0 ]; then
      printf '\nslot --counts: %s× the floor (CPU %s×)' "$(ratio "${MED[$k]}" "${MED[$f]}")" \
        "$(ratio "${CPU[$k]}" "${CPU[$f]}")"
      if [ "$a2" -ge 0 ]; then
        printf '; AVX2 path: slot --counts %s× the AVX2 floor (CPU %s×), analyze %s× (CPU %s×)' \
          "$(ratio "${MED[$((a2 + 1))]}" "${MED[$a2]}")" "$(ratio "${CPU[$((a2 + 1))]}" "${CPU[$a2]}")" \
          "$(ratio "${MED[$((a2 + 2))]}" "${MED[$a2]}")" "$(ratio "${CPU[$((a2 + 2))]}" "${CPU[$a2]}")"
      fi
      printf '\nanalyze: %s× the floor (CPU %s×),' "$(ratio "${MED[$an]}" "${MED[$f]}")" \
        "$(ratio "${CPU[$an]}" "${CPU[$f]}")"
    else
      printf '\nanalyze:'
    fi
    printf ' %s× faster than the naive loop (CPU %s×), %s× cat; lint --keys %s×, with a scheme %s×, plan --keys %s× analyze\n' \
      "$(ratio "${MED[2]}" "${MED[$an]}")" "$(ratio "${CPU[2]}" "${CPU[$an]}")" \
      "$(ratio "${MED[$an]}" "${MED[0]}")" "$(ratio "${MED[$((k + 2))]}" "${MED[$an]}")" \
      "$(ratio "${MED[$((k + 3))]}" "${MED[$an]}")" "$(ratio "${MED[$((k + 4))]}" "${MED[$an]}")"
    [ "$kind" = ordinary ] && cp "$DUMP" "$DIR/keep.txt"
    rm -f "$DUMP"
  done
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ------------------------------------------------------------------------------- snapshot
if [[ $SKIP != *,snapshot,* ]] && command -v redis-server > /dev/null && command -v redis-cli > /dev/null; then
  RDBBIN="$PWD/target/bench-tools/bin/rdb"
  if [ ! -x "$RDBBIN" ]; then
    cargo install --quiet --locked rdb --version '=0.4.0' --root "$PWD/target/bench-tools" > /dev/null 2>&1 \
      || echo "(could not install the rdb crate: its row is left out)"
  fi
  P=$(free_port)
  mkdir -p "$DIR/snap"
  redis-server --port "$P" --bind 127.0.0.1 --dir "$DIR/snap" --save "" --daemonize yes \
    --enable-debug-command yes --logfile "$DIR/snap/redis.log"
  sleep 0.5
  redis-cli -p "$P" DEBUG POPULATE $(( N / 2 )) user:session 120 > /dev/null
  redis-cli -p "$P" SAVE > /dev/null
  redis-cli -p "$P" SHUTDOWN NOSAVE > /dev/null 2>&1 || true
  RDB="$DIR/snap/dump.rdb"
  MB=$(awk -v b="$(stat -c %s "$RDB")" 'BEGIN{printf "%.1f", b/1048576}')
  mbs() { if [ "$1" = head ]; then echo "MB/s"; else awk -v m="$MB" -v t="$1" 'BEGIN{printf "%.0f", m/t}'; fi; }
  rows=("cat file > /dev/null" "cat '$RDB'")
  [ -x "$RDBBIN" ] && rows+=("rdb crate 0.4: rdb -f nil (parse only)" "$RDBBIN -f nil '$RDB'")
  rows+=("keyplan scan --rdb (keys with type, memory, TTL)" "$BIN scan --rdb '$RDB'"
    "keyplan analyze (full report)" "$BIN analyze --format json '$RDB'")
  turns "snapshot: $(( N / 2 )) keys (DEBUG POPULATE, $(redis-server --version | cut -d' ' -f3)), $MB MB" 0 mbs -- "${rows[@]}"
  last=$(( ${#MED[@]} - 1 ))
  printf '\nanalyze of the snapshot: %s× cat' "$(ratio "${MED[$last]}" "${MED[0]}")"
  [ -x "$RDBBIN" ] && printf ', %s× faster than the rdb crate parsing alone' "$(ratio "${MED[1]}" "${MED[$last]}")"
  printf '\n'
  /usr/bin/time -f "peak resident memory, analyze of the snapshot: %M KB" "$BIN" analyze --format json "$RDB" > /dev/null 2>> "$DIR/mem.txt" || true
  rm -rf "$DIR/snap"
fi

# ----------------------------------------------------------------------------------- live
if [[ $SKIP != *,live,* ]] && command -v redis-server > /dev/null && command -v redis-cli > /dev/null; then
  LIVE=$(( N / 10 ))
  PORTS=()
  for i in 1 2 3; do
    P=$(free_port); PORTS+=("$P")
    mkdir -p "$DIR/c$i"
    redis-server --port "$P" --bind 127.0.0.1 --dir "$DIR/c$i" --save "" --appendonly no \
      --cluster-enabled yes --cluster-config-file "$DIR/c$i/nodes.conf" --daemonize yes \
      --pidfile "$DIR/c$i/pid" --logfile "$DIR/c$i/log"
  done
  sleep 0.5
  for i in 1 2 3; do PIDS+=("$(cat "$DIR/c$i/pid")"); done
  redis-cli --cluster create $(printf '127.0.0.1:%s ' "${PORTS[@]}") --cluster-yes > /dev/null
  until [ "$(redis-cli -p "${PORTS[0]}" CLUSTER INFO | tr -d '\r' | sed -n 's/^cluster_state://p')" = ok ]; do sleep 0.2; done
  # Keys of the generator, each SET on its master (slots as `redis-cli --cluster create` lays
  # them out, which `--masters 3` reproduces), through redis-cli --pipe.
  "$GEN_KEYS" "$LIVE" > "$DIR/live.txt"
  "$BIN" slot --masters 3 --keys "$DIR/live.txt" | tail -n +2 | awk -F'\t' -v d="$DIR" '
    { n = substr($4, 8) + 0; k = $1
      printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(k), k, 40, sprintf("%040d", NR) > (d "/pipe" n) }'
  for i in 0 1 2; do redis-cli -p "${PORTS[$i]}" --pipe < "$DIR/pipe$i" > /dev/null; done
  URL="redis://127.0.0.1:${PORTS[0]}"
  each() { local c=""; for P in "${PORTS[@]}"; do c+="redis-cli -p $P $1 > /dev/null & "; done; echo "${c}wait"; }
  turns "live: 3 loopback masters, $LIVE keys" 1 "" -- \
    "redis-cli --scan (every master at once)" "$(each --scan)" \
    "keyplan analyze --cluster --sample all" "$BIN analyze --cluster $URL --sample all --rate 10000000 --format json" \
    "redis-cli --memkeys (every master at once)" "$(each --memkeys)" \
    "keyplan analyze --cluster --sample all --bytes" "$BIN analyze --cluster $URL --sample all --bytes --rate 10000000 --format json" \
    "redis-cli --bigkeys (every master at once)" "$(each --bigkeys)"
  printf '\nanalyze --bytes: %s× the time of redis-cli --memkeys; keys/s: %s (scan), %s (--bytes)\n' \
    "$(ratio "${MED[3]}" "${MED[2]}")" \
    "$(awk -v n="$LIVE" -v t="${MED[1]}" 'BEGIN{printf "%.0f", n/t}')" \
    "$(awk -v n="$LIVE" -v t="${MED[3]}" 'BEGIN{printf "%.0f", n/t}')"
  for P in "${PORTS[@]}"; do redis-cli -p "$P" SHUTDOWN NOSAVE > /dev/null 2>&1 || true; done
  PIDS=()
fi

# ----------------------------------------------------------------------------------- code
if [[ $SKIP != *,code,* ]] && command -v rg > /dev/null; then
  . tests/bench/tree.sh
  EXTS='py|js|mjs|cjs|jsx|ts|mts|cts|tsx|go|rb|java'
  for lang in JavaScript Python; do
    if { [ "$lang" = JavaScript ] && bench_js_tree 2> /dev/null; } \
      || { [ "$lang" = Python ] && bench_py_tree 2> /dev/null; }; then
      # The same files for both: those of keyplan's languages, listed once.
      rg --files "$TREE" | grep -E "\.($EXTS)$" | LC_ALL=C sort > "$DIR/files.txt"
      tr '\n' '\0' < "$DIR/files.txt" > "$DIR/files0.txt"
      LINES=$(xargs -0 cat < "$DIR/files0.txt" | wc -l)
      turns "code: $lang tree, $(wc -l < "$DIR/files.txt") files, $LINES lines" 1 "" -- \
        "keyplan code (all cores)" "$BIN code '$TREE'" \
        "rg -c over four words, the same files" "xargs -0 rg -c 'pipeline|redis|mget|execute' < '$DIR/files0.txt'"
      printf '\ncode (%s): %s× rg -c (CPU %s×)\n' "$lang" "$(ratio "${MED[0]}" "${MED[1]}")" \
        "$(ratio "${CPU[0]}" "${CPU[1]}")"
    else
      echo "(no $lang tree: the package manager could not download it; left out)"
    fi
  done
fi

# --------------------------------------------------------------------------------- memory
if [ -x /usr/bin/time ] && [ -f "$DIR/keep.txt" ]; then
  printf '\n### Peak resident memory\n\n'
  SMALL="$DIR/small.txt"
  # Generated the same way as the big one (not cut with `head`): the kernel keeps a file
  # written in large blocks in large page-cache folios, which changes resident memory.
  "$GEN_KEYS" $(( N / 10 )) > "$SMALL"
  /usr/bin/time -f "slot --counts, $N keys (file): %M KB" "$BIN" slot --counts --format json --keys "$DIR/keep.txt" > /dev/null
  /usr/bin/time -f "slot --counts, $N keys (pipe): %M KB" "$BIN" slot --counts --format json --keys - < <(cat "$DIR/keep.txt") > /dev/null
  /usr/bin/time -f "analyze, $N keys: %M KB" "$BIN" analyze --format json "$DIR/keep.txt" > /dev/null
  /usr/bin/time -f "analyze, $(( N / 10 )) keys: %M KB" "$BIN" analyze --format json "$SMALL" > /dev/null
  [ -f "$DIR/mem.txt" ] && cat "$DIR/mem.txt"
fi 2>&1

# ----------------------------------------------------------------------------------- fuzz
if [[ $SKIP != *,fuzz,* ]]; then
  # The fuzz harness with a long budget (CI runs 64 cases per input kind): mutated real
  # inputs of every kind, no panic, exit 0/1/2 with a message. KEYPLAN_FUZZ_CASES overrides.
  printf '\nfuzzing every input kind (%s cases each)\n' "${KEYPLAN_FUZZ_CASES:-2000}"
  KEYPLAN_FUZZ_CASES="${KEYPLAN_FUZZ_CASES:-2000}" cargo test --release --test integration fuzz:: 2>&1 | grep -E '^test |test result'
fi
