#!/usr/bin/env bash
# Runs `keyplan code` over a large source tree next to `rg -c` over the same tree (the floor:
# reading every file and matching a pattern, no parsing), and prints files/s, lines/s, peak
# memory and the ratio. Runs alternate (keyplan, rg, keyplan, rg, …); each row is a median.
#
#   tests/bench/code.sh [DIR] [RUNS]
#
# Without DIR it builds a tree of real code from PyPI once (tests/bench/tree.sh: about 1.1M
# lines of Python and JavaScript; needs pip, downloads ~33 MB).
# Needs rg (apt-get install ripgrep); GNU time for peak memory (apt-get install time).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${2:-5}"
command -v rg > /dev/null || { echo "rg not found: apt-get install ripgrep" >&2; exit 2; }
cargo build --release --quiet --bin keyplan
BIN="$PWD/target/release/keyplan"

if [ -n "${1:-}" ]; then
  TREE="$1"
else
  . tests/bench/tree.sh
  bench_tree
fi

# What keyplan reads: the files of its languages (its walk: .gitignore and hidden
# directories aside, as rg's).
# (Exit status 1 is findings.)
FILES=$({ "$BIN" code --format json "$TREE" 2> /dev/null || true; } \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["files_scanned"])')
EXTS='py|js|mjs|cjs|jsx|ts|mts|cts|tsx|go|rb|java'
LINES=$(rg --files "$TREE" | grep -E "\.($EXTS)$" | tr '\n' '\0' | xargs -0 cat | wc -l)
BYTES=$(rg --files "$TREE" | grep -E "\.($EXTS)$" | tr '\n' '\0' | xargs -0 cat | wc -c)
echo "tree: $TREE"
echo "      $FILES files read by keyplan, $LINES lines, $(( BYTES / 1048576 )) MB; $(nproc) cores"

# Warm the page cache, then alternate.
rg -c 'redis' "$TREE" > /dev/null || true
secs() { local s e; s=$(date +%s%N); "$@" > /dev/null 2>&1 || true; e=$(date +%s%N); echo $(( e - s )); }
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
K=(); R=()
for _ in $(seq "$RUNS"); do
  K+=("$(secs "$BIN" code "$TREE")")
  R+=("$(secs rg -c 'pipeline|redis|mget|execute' "$TREE")")
done
k=$(median "${K[@]}"); r=$(median "${R[@]}")
mem() {
  if [ -x /usr/bin/time ]; then
    { /usr/bin/time -f '%M' "$@" 2>&1 > /dev/null || true; } | tail -1
  else
    echo "?"
  fi
}
km=$(mem "$BIN" code "$TREE"); rm_=$(mem rg -c 'pipeline|redis|mget|execute' "$TREE")
printf '\n%-34s %9s %12s %14s %12s\n' "program" "median s" "files/s" "lines/s" "peak MB"
row() {
  awk -v n="$1" -v ns="$2" -v f="$FILES" -v l="$LINES" -v m="$3" 'BEGIN{
    s = ns / 1e9; printf "%-34s %9.2f %12.0f %14.0f %12s\n", n, s, f / s, l / s, (m == "?" ? "?" : sprintf("%.0f", m / 1024)) }'
}
row "keyplan code (all cores)" "$k" "$km"
row "rg -c (the floor)" "$r" "$rm_"
awk -v a="$k" -v b="$r" -v n="$RUNS" 'BEGIN{ printf "\nkeyplan code takes %.1f× the time of rg -c (medians of %d alternating runs)\n", a / b, n }'
