#!/usr/bin/env bash
# Times the `--emit setslot` script on a real cluster next to redis-cli moving the same number
# of slots, and checks the script ends where the preview said.
#
#   tests/bench/setslot.sh [SLOTS] [KEYS] [OLD_KEYPLAN]
#
# Starts a 3-master cluster (redis-server, cluster mode, loopback, a temp dir), loads KEYS keys
# (default 200000), then:
#   1. `keyplan reshard --preview --emit setslot` moves SLOTS slots (default 2000) from the
#      first master to the second: the script is timed, then each master's DBSIZE and slots
#      are compared with the preview's;
#   2. `redis-cli --cluster reshard --cluster-pipeline 100` moves them back (the same slots
#      and keys): timed;
#   3. with OLD_KEYPLAN (another keyplan binary, e.g. an earlier build), its script for the
#      same plan: timed.
# Prints the seconds and the ratios. Needs redis-server and redis-cli.
set -euo pipefail
cd "$(dirname "$0")/../.."
SLOTS="${1:-2000}"
KEYS="${2:-200000}"
OLD="${3:-}"
for b in redis-server redis-cli; do
  command -v "$b" > /dev/null || { echo "$b not found: apt-get install redis-server" >&2; exit 2; }
done
cargo build --release --quiet --bin keyplan
BIN="$PWD/target/release/keyplan"

DIR="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORTS=()
while [ "${#PORTS[@]}" -lt 3 ]; do
  p=$(free_port)
  if [ "$p" -lt 55000 ]; then PORTS+=("$p"); fi
done
for p in "${PORTS[@]}"; do
  mkdir -p "$DIR/$p"
  (cd "$DIR/$p" && redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
    --cluster-config-file nodes.conf --save '' --appendonly no --daemonize no \
    > "$DIR/$p/log" 2>&1 &
    echo $! > "$DIR/$p/pid")
done
sleep 0.5
for p in "${PORTS[@]}"; do
  PIDS+=("$(cat "$DIR/$p/pid")")
  until redis-cli -p "$p" PING > /dev/null 2>&1; do sleep 0.1; done
done
A="127.0.0.1:${PORTS[0]}"
B="127.0.0.1:${PORTS[1]}"
redis-cli --cluster create "$A" "$B" "127.0.0.1:${PORTS[2]}" --cluster-replicas 0 --cluster-yes > /dev/null
until redis-cli --cluster check "$A" > /dev/null 2>&1; do sleep 0.2; done

# Keys: SET key:N through each key's own master (redis-cli -c follows MOVED per key).
python3 - "$KEYS" > "$DIR/keys" <<'EOF'
import sys
for i in range(int(sys.argv[1])):
    print(f"key:{i}")
EOF
redis-cli -p "${PORTS[0]}" CLUSTER NODES > "$DIR/nodes.txt"
for p in "${PORTS[@]}"; do
  # Each master loads the keys of its own slots.
  python3 - "$DIR/keys" "$p" "$DIR/nodes.txt" <<'EOF' | redis-cli -p "$p" --pipe > /dev/null
import sys
def crc16(b):
    c = 0
    for x in b:
        c ^= x << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) & 0xFFFF if c & 0x8000 else (c << 1) & 0xFFFF
    return c
mine = []
for line in open(sys.argv[3]):
    f = line.split()
    if f[1].split("@")[0].endswith(":" + sys.argv[2]):
        for r in f[8:]:
            lo, _, hi = r.partition("-")
            mine.append((int(lo), int(hi or lo)))
out = sys.stdout.buffer
for line in open(sys.argv[1], "rb"):
    k = line.rstrip(b"\n")
    s = crc16(k) % 16384
    if any(lo <= s <= hi for lo, hi in mine):
        out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n" % (len(k), k))
EOF
done
dbsize() { redis-cli -p "$1" DBSIZE; }
echo "cluster: 3 masters ($A, $B, 127.0.0.1:${PORTS[2]}); keys: $(( $(dbsize "${PORTS[0]}") + $(dbsize "${PORTS[1]}") + $(dbsize "${PORTS[2]}") ))"
id_of() { redis-cli -p "$1" CLUSTER MYID; }
AID=$(id_of "${PORTS[0]}")
BID=$(id_of "${PORTS[1]}")

preview() { # BIN: the script and the preview's JSON for SLOTS slots A -> B
  redis-cli -p "${PORTS[0]}" CLUSTER NODES > "$DIR/nodes.txt"
  "$1" reshard --preview --topology "$DIR/nodes.txt" --from "$AID" --to "$BID" \
    --slots "$SLOTS" --emit setslot > "$DIR/script.sh" || [ $? -eq 1 ]
}
timed() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1; t1=$(date +%s.%N); awk "BEGIN { printf \"%.2f\", $t1 - $t0 }"; }
ratio() { awk "BEGIN { printf \"%.1f\", $1 / $2 }"; }
settle() { until redis-cli --cluster check "$A" > /dev/null 2>&1; do sleep 0.2; done; }

before_a=$(dbsize "${PORTS[0]}")
preview "$BIN"
# What the preview says moves: the keys of the slots the script names.
moved_slots=$(grep '^move_slots ' "$DIR/script.sh" | cut -d' ' -f8- | tr ' ' '\n' | grep -c .)
T_NEW=$(timed sh "$DIR/script.sh")
settle
after_a=$(dbsize "${PORTS[0]}")
owned_b=$(redis-cli -p "${PORTS[0]}" CLUSTER NODES | awk -v id="$BID" '$1 == id { n = 0; for (i = 9; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } print n }')
echo "keyplan setslot script: $moved_slots slots, $((before_a - after_a)) keys moved in ${T_NEW}s; $B now owns $owned_b slots"
[ "$moved_slots" = "$SLOTS" ] || { echo "the script moved $moved_slots slots, not $SLOTS" >&2; exit 1; }

T_CLI=$(timed redis-cli --cluster reshard "$A" --cluster-from "$BID" --cluster-to "$AID" \
  --cluster-slots "$SLOTS" --cluster-yes --cluster-pipeline 100)
settle
echo "redis-cli --cluster reshard back: ${T_CLI}s; $A has $(dbsize "${PORTS[0]}") keys again (was $before_a)"

if [ -n "$OLD" ]; then
  preview "$OLD"
  T_OLD=$(timed sh "$DIR/script.sh")
  settle
  echo "old keyplan setslot script: ${T_OLD}s"
  echo "ratio old / new: $(ratio "$T_OLD" "$T_NEW")×"
fi
echo "ratio keyplan script / redis-cli: $(ratio "$T_NEW" "$T_CLI")×"
