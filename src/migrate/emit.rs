//! The commands that would execute a plan, as text: `redis-cli --cluster reshard`
//! lines, or a `CLUSTER SETSLOT` + `MIGRATE` shell script. keyplan prints them and never runs
//! them.

use super::managed::{self, ManagedContext, Service};
use super::redis_cli::RebalanceOptions;
use super::{ClusterView, MigrateError, Move, PlanInput, Problem};
use crate::slot::SLOT_COUNT;
use std::fmt::Write as _;

/// Which commands to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    /// `redis-cli --cluster reshard … --cluster-yes` lines, one per move
    RedisCli,
    /// A shell script of CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE and SETSLOT NODE, in
    /// rounds of 100 slots
    Setslot,
    /// `valkey-cli --cluster reshard … --cluster-use-atomic-slot-migration` lines (Valkey 9)
    ValkeyCli,
    /// A shell script of Valkey 9 `CLUSTER MIGRATESLOTS` jobs (atomic slot migration) on each
    /// source, each polled with `CLUSTER GETSLOTMIGRATIONS`
    ValkeyAtomic,
    /// A shell script of Redis 8.4 `CLUSTER MIGRATION IMPORT` tasks on each target (atomic
    /// slot migration), each polled with `CLUSTER MIGRATION STATUS`
    RedisAtomic,
    /// The `aws elasticache` commands: the plan's shard count online, a contiguous layout
    /// for an offline restore
    ElastiCache,
    /// The `aws memorydb` commands: the plan's shard count online or offline
    MemoryDb,
}

impl Emit {
    /// The command-line tool the script runs.
    fn cli(self) -> &'static str {
        match self {
            Emit::RedisCli | Emit::Setslot | Emit::RedisAtomic => "redis-cli",
            Emit::ValkeyCli | Emit::ValkeyAtomic => "valkey-cli",
            Emit::ElastiCache | Emit::MemoryDb => "aws",
        }
    }

    /// The managed service it writes for, if any.
    fn service(self) -> Option<Service> {
        match self {
            Emit::ElastiCache => Some(Service::ElastiCache),
            Emit::MemoryDb => Some(Service::MemoryDb),
            _ => None,
        }
    }
}

/// What a managed service's layout balances (see [`super::managed`]).
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// `slots`, `keys`, `bytes`, `ops`, ….
    pub balance_by: String,
    /// The weight of each slot (16384 values).
    pub weight: Vec<u64>,
    /// Keys over 256 MB serialized in moving slots: `(key, slot, bytes)`.
    pub large_items: Vec<(String, u16, u64)>,
}

/// What the script is for, shown in its header.
#[derive(Debug, Clone, Default)]
pub struct EmitContext {
    /// Comment lines describing the plan.
    pub header: Vec<String>,
    /// Nodes to remove with `del-node` once the moves are done.
    pub remove: Vec<usize>,
    /// For the managed services: what their layout balances (slot counts when `None`).
    pub layout: Option<Layout>,
}

impl EmitContext {
    /// The header of a rebalance script: the plan, and for redis-cli's own plan
    /// (`slots`) the redis-cli command it equals.
    pub fn rebalance(plan: &super::MigrationPlan, topology: &str, opts: &RebalanceOptions) -> Self {
        let mut header = vec![format!(
            "{} plan (balance by {}), from {topology}",
            plan.plan, plan.balance_by
        )];
        if plan.balance_by == "slots" {
            let mut cmd = "Equivalent to: redis-cli --cluster rebalance <host:port>".to_string();
            for (n, w) in &opts.weights {
                let _ = write!(cmd, " --cluster-weight {n}={w}");
            }
            if opts.use_empty_masters {
                cmd.push_str(" --cluster-use-empty-masters");
            }
            let _ = write!(cmd, " --cluster-threshold {}", opts.threshold);
            header.push(cmd);
        }
        EmitContext {
            header,
            remove: Vec::new(),
            layout: None,
        }
    }

    /// The header of a reshard script: the plan and the redis-cli command it equals.
    pub fn reshard(topology: &str, from: &str, to: &str, slots: usize) -> Self {
        EmitContext {
            header: vec![
                format!("redis-cli reshard plan from {topology}"),
                format!(
                    "Equivalent to: redis-cli --cluster reshard <host:port> --cluster-from {from} --cluster-to {to} --cluster-slots {slots} --cluster-yes"
                ),
            ],
            remove: Vec::new(),
            layout: None,
        }
    }
}

/// Quotes `s` for a POSIX shell when it needs it.
fn sh(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"@%+=:,./-_".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `s` made safe for a `#` comment line: a control character (a newline would end the comment
/// and start a command) is written as its escape, `\n`, `\u{1b}`.
pub(super) fn comment(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn split_addr(addr: &str) -> (&str, &str) {
    addr.rsplit_once(':').unwrap_or((addr, ""))
}

/// How the script names each node's id: its id, or a variable set after `add-node`.
fn ids(view: &ClusterView) -> Result<Vec<String>, MigrateError> {
    let mut added = 0;
    view.nodes
        .iter()
        .map(|n| match (&n.id, n.added) {
            // Only an id of 40 hex digits is ever written into a script (it is written
            // unquoted, as a shell word).
            (Some(id), _) if crate::topology::is_node_id(id) => Ok(id.clone()),
            (Some(id), _) => Err(MigrateError::Input {
                input: PlanInput::Emit,
                value: None,
                problem: Problem::BadId(comment(&n.name), format!("{id:?}")),
            }),
            (None, true) => {
                added += 1;
                Ok(format!("\"$NEW_ID_{added}\""))
            }
            (None, false) => Err(MigrateError::Input {
                input: PlanInput::Emit,
                value: None,
                problem: Problem::NoIds(n.name.clone()),
            }),
        })
        .collect()
}

/// A node's `host:port`, which must hold no space or control byte: the setslot script lists
/// the masters in one variable and splits it on spaces.
fn address(view: &ClusterView, i: usize) -> Result<&str, MigrateError> {
    let addr = view.nodes[i]
        .address
        .as_deref()
        .ok_or_else(|| MigrateError::Input {
            input: PlanInput::Emit,
            value: None,
            problem: Problem::NoAddress(comment(&view.nodes[i].name)),
        })?;
    if addr.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(MigrateError::Input {
            input: PlanInput::Emit,
            value: None,
            problem: Problem::BadAddress(comment(&view.nodes[i].name), format!("{addr:?}")),
        });
    }
    Ok(addr)
}

/// The node redis-cli commands connect to: the first node in view order with an address that
/// is already in the cluster (the `myself` node of a CLUSTER NODES capture).
fn entry<'a>(view: &'a ClusterView, ctx: &EmitContext) -> Result<&'a str, MigrateError> {
    // A node the script removes is not the entry when another will do: the script's last
    // commands (and a re-run after them) still need a node of the cluster to talk to.
    let usable = |i: usize| !view.nodes[i].added && view.nodes[i].address.is_some();
    (0..view.nodes.len())
        .find(|&i| usable(i) && !ctx.remove.contains(&i))
        .or_else(|| (0..view.nodes.len()).find(|&i| usable(i)))
        .and_then(|i| view.nodes[i].address.as_deref())
        .ok_or(MigrateError::Input {
            input: PlanInput::Emit,
            value: None,
            problem: Problem::NoEntry,
        })
}

/// Checks that each move takes its source's lowest-numbered slots at the time it runs, which
/// is all `redis-cli --cluster reshard` can do.
fn check_lowest_first(view: &ClusterView, moves: &[Move]) -> Result<(), MigrateError> {
    let mut owner = view.owner.clone();
    for m in moves {
        let lowest: Vec<u16> = (0..SLOT_COUNT)
            .filter(|&s| owner[s] == Some(m.from))
            .take(m.slots.len())
            .map(|s| s as u16)
            .collect();
        if lowest != m.slots {
            return Err(MigrateError::Input {
                input: PlanInput::Emit,
                value: Some("redis-cli".into()),
                problem: Problem::NotLowestFirst(view.nodes[m.from].name.clone()),
            });
        }
        for &s in &m.slots {
            owner[s as usize] = Some(m.to);
        }
    }
    Ok(())
}

fn prelude(out: &mut String, view: &ClusterView, ctx: &EmitContext, entry: &str, cli: &str) {
    out.push_str("#!/bin/sh\n");
    out.push_str("# Written by keyplan; review before running. keyplan never runs it.\n");
    for h in &ctx.header {
        let _ = writeln!(out, "# {}", comment(h));
    }
    match cli {
        "valkey-cli" => out.push_str(
            "# A password is read from VALKEYCLI_AUTH (or REDISCLI_AUTH), as valkey-cli reads it.\nset -euf\n",
        ),
        _ => out.push_str("# A password is read from REDISCLI_AUTH, as redis-cli reads it.\nset -euf\n"),
    }
    let mut added = 0;
    for n in view.nodes.iter().filter(|n| n.added) {
        added += 1;
        let addr = n.address.as_deref().unwrap_or_default();
        let (h, p) = split_addr(addr);
        if added == 1 {
            out.push_str(&ADD_NODE.replace("CLI", cli));
        }
        let _ = writeln!(
            out,
            "add_node {} {} {} {}",
            sh(addr),
            sh(h),
            sh(p),
            sh(entry)
        );
        let _ = writeln!(
            out,
            "NEW_ID_{added}=$({cli} -h {} -p {} CLUSTER MYID)",
            sh(h),
            sh(p)
        );
    }
    if added > 0 {
        out.push_str(
            "# Wait until every node knows the new masters, and they know every node and serve.\n",
        );
        let _ = writeln!(
            out,
            "until {cli} --cluster check {} 2>&1 | grep -q 'All nodes agree about slots configuration'; do sleep 1; done",
            sh(entry)
        );
        for n in view.nodes.iter().filter(|n| n.added) {
            let (h, p) = split_addr(n.address.as_deref().unwrap_or_default());
            let _ = writeln!(
                out,
                "until [ \"$({cli} -h {h} -p {p} CLUSTER NODES | grep -v -c handshake)\" -ge {} ] 2> /dev/null && {cli} -h {h} -p {p} CLUSTER INFO | grep -q '^cluster_state:ok'; do sleep 1; done",
                view.nodes.len(),
                h = sh(h),
                p = sh(p),
            );
        }
        // Every node already in the cluster must know each new master (past its handshake)
        // before a slot is set MIGRATING to it: `--cluster check` asks the nodes the entry
        // knows, and a source that has not yet met the new node answers "I don't know about
        // node".
        for n in view.nodes.iter().filter(|n| !n.added) {
            let Some(addr) = n.address.as_deref() else {
                continue;
            };
            let (h, p) = split_addr(addr);
            for k in 1..=added {
                let _ = writeln!(
                    out,
                    "until {cli} -h {h} -p {p} CLUSTER NODES 2> /dev/null | grep \"^$NEW_ID_{k} \" | grep -v -q handshake; do sleep 1; done",
                    h = sh(h),
                    p = sh(p),
                );
            }
        }
    }
}

fn epilogue(out: &mut String, ctx: &EmitContext, ids: &[String], entry: &str, cli: &str) {
    let (h, p) = split_addr(entry);
    for &r in &ctx.remove {
        // A node the cluster no longer lists was removed by an earlier run of this script.
        let _ = writeln!(
            out,
            "case \"$({cli} -h {} -p {} CLUSTER NODES)\" in *{}*) {cli} --cluster del-node {} {} ;; esac",
            sh(h),
            sh(p),
            ids[r],
            sh(entry),
            ids[r]
        );
    }
}

/// `a b c d`: the runs of consecutive slots of `slots` (sorted), each as its first and last.
fn range_args(slots: &[u16]) -> Vec<(u16, u16)> {
    let mut sorted = slots.to_vec();
    sorted.sort_unstable();
    let mut runs: Vec<(u16, u16)> = Vec::new();
    for s in sorted {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == s => *last = s,
            _ => runs.push((s, s)),
        }
    }
    runs
}

/// The commands for `moves` on `view`.
///
/// `pipeline` is the setslot script's keys per `MIGRATE` of a slot (redis-cli's
/// `--cluster-pipeline`).
pub fn emit(
    view: &ClusterView,
    moves: &[Move],
    how: Emit,
    pipeline: usize,
    ctx: &EmitContext,
) -> Result<String, MigrateError> {
    if let Some(service) = how.service() {
        let layout = ctx.layout.clone().unwrap_or_else(|| Layout {
            balance_by: "slots".into(),
            weight: vec![1; SLOT_COUNT],
            large_items: Vec::new(),
        });
        let managed = ManagedContext {
            header: ctx.header.clone(),
            balance_by: layout.balance_by,
            weight: layout.weight,
            large_items: layout.large_items,
        };
        return Ok(managed::script(view, moves, service, &managed));
    }
    let ids = ids(view)?;
    let entry = entry(view, ctx)?.to_string();
    for m in moves {
        address(view, m.from)?;
        address(view, m.to)?;
    }
    let mut out = String::new();
    let cli = how.cli();
    match how {
        Emit::RedisCli | Emit::ValkeyCli => {
            check_lowest_first(view, moves)?;
            prelude(&mut out, view, ctx, &entry, cli);
            let atomic = match how {
                Emit::ValkeyCli => " --cluster-use-atomic-slot-migration",
                _ => "",
            };
            for (i, m) in moves.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "echo {} >&2",
                    sh(&format!(
                        "keyplan script: move {} of {}: {} slot(s) from {} to {}",
                        i + 1,
                        moves.len(),
                        m.slots.len(),
                        comment(&view.nodes[m.from].name),
                        comment(&view.nodes[m.to].name)
                    ))
                );
                let _ = writeln!(
                    out,
                    "{cli} --cluster reshard {} --cluster-from {} --cluster-to {} --cluster-slots {} --cluster-yes{atomic}",
                    sh(&entry),
                    ids[m.from],
                    ids[m.to],
                    m.slots.len()
                );
            }
        }
        Emit::ElastiCache | Emit::MemoryDb => unreachable!("invariant: written above"),
        Emit::ValkeyAtomic | Emit::RedisAtomic => {
            prelude(&mut out, view, ctx, &entry, cli);
            let total: usize = moves.iter().map(|m| m.slots.len()).sum();
            let _ = writeln!(out, "TOTAL={total} DONE=0");
            out.push_str(match how {
                Emit::ValkeyAtomic => VALKEY_ATOMIC,
                _ => REDIS_ATOMIC,
            });
            for m in moves {
                let (sh_, sp) = split_addr(address(view, m.from)?);
                let (dh, dp) = split_addr(address(view, m.to)?);
                let ranges: Vec<String> = range_args(&m.slots)
                    .iter()
                    .map(|(a, b)| format!("{a} {b}"))
                    .collect();
                match how {
                    Emit::ValkeyAtomic => {
                        let _ = writeln!(
                            out,
                            "migrate_slots {} {} {} {} {} {} {}",
                            sh(sh_),
                            sh(sp),
                            sh(dh),
                            sh(dp),
                            ids[m.to],
                            m.slots.len(),
                            ranges.join(" ")
                        );
                    }
                    _ => {
                        let _ = writeln!(
                            out,
                            "import_slots {} {} {} {} {} {}",
                            sh(dh),
                            sh(dp),
                            sh(sh_),
                            sh(sp),
                            m.slots.len(),
                            ranges.join(" ")
                        );
                    }
                }
            }
        }
        Emit::Setslot => {
            prelude(&mut out, view, ctx, &entry, cli);
            let masters: Vec<String> = view
                .masters()
                .iter()
                .map(|&i| address(view, i).map(str::to_string))
                .collect::<Result<_, _>>()?;
            let _ = writeln!(out, "MASTERS={}", sh(&masters.join(" ")));
            let total: usize = moves.iter().map(|m| m.slots.len()).sum();
            let _ = writeln!(out, "TOTAL={total} DONE=0 PIPELINE={}", pipeline.max(1));
            out.push_str(MOVE_SLOTS);
            let mut rounds = String::new();
            for m in moves {
                let (sh_, sp) = split_addr(address(view, m.from)?);
                let (dh, dp) = split_addr(address(view, m.to)?);
                for group in m.slots.chunks(SLOTS_PER_ROUND) {
                    let slots: Vec<String> = group.iter().map(u16::to_string).collect();
                    let _ = writeln!(
                        rounds,
                        "move_slots {} {} {} {} {} {} {}",
                        sh(sh_),
                        sh(sp),
                        ids[m.from],
                        sh(dh),
                        sh(dp),
                        ids[m.to],
                        slots.join(" ")
                    );
                }
            }
            if !ctx.remove.is_empty() {
                let (eh, ep) = split_addr(&entry);
                let mut pairs = Vec::new();
                for &r in &ctx.remove {
                    pairs.push(format!("{} {}", sh(address(view, r)?), ids[r]));
                }
                let _ = writeln!(
                    out,
                    "drop_removed {} {} {}",
                    sh(eh),
                    sh(ep),
                    pairs.join(" ")
                );
            }
            let keep: Vec<String> = super::impact::emptied_early(view, moves)
                .iter()
                .map(|&(n, _)| address(view, n).map(str::to_string))
                .collect::<Result<_, _>>()?;
            if !keep.is_empty() {
                let _ = writeln!(out, "KEEP_MASTERS={}", sh(&keep.join(" ")));
                // The file holds each master's own value between an interrupted run and the
                // next: named after the plan, so that a re-run of this script finds it.
                let _ = writeln!(
                    out,
                    "STATE=${{KEYPLAN_STATE:-${{TMPDIR:-/tmp}}/keyplan-setslot-{:016x}}}",
                    fnv1a(format!("{}\n{rounds}", masters.join(" ")).as_bytes())
                );
                out.push_str("keep_masters\n");
            }
            out.push_str(&rounds);
            if !keep.is_empty() {
                out.push_str("restore_masters\n");
            }
        }
    }
    epilogue(&mut out, ctx, &ids, &entry, cli);
    Ok(out)
}

/// The prelude's `add_node`, `CLI` standing for the command-line tool.
const ADD_NODE: &str = r#"# add_node ADDR HOST PORT ENTRY: CLI --cluster add-node, unless the node knows others already
# (added by an earlier run of this script); tried again while the nodes do not agree yet (a
# node added a moment before, or slots left open by an interrupted run, settling).
add_node() {
  tries=0
  while :; do
    case "$(CLI -h "$2" -p "$3" CLUSTER INFO)" in *cluster_known_nodes:1[!0-9]*) ;; *) return 0 ;; esac
    out=$(CLI --cluster add-node "$1" "$4" 2>&1) && return 0
    tries=$((tries + 1))
    if [ "$tries" -ge 30 ]; then
      printf '%s\n' "$out" >&2
      echo "keyplan script: CLI --cluster add-node $1 $4 failed 30 times" >&2
      exit 1
    fi
    sleep 1
  done
}
"#;

/// FNV-1a, 64 bits: names the setslot script's state file after its plan.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Slots the setslot script moves in one round: each of its steps (IMPORTING on the target,
/// MIGRATING on the source, the keys, NODE on the target, the source and every other master)
/// is one redis-cli connection for all of them, not one per slot.
const SLOTS_PER_ROUND: usize = 100;

/// The keys per `MIGRATE` of a slot when `--pipeline` is not given.
pub const DEFAULT_PIPELINE: usize = 100;

/// The shell functions the setslot script uses: redis-cli's `clusterManagerMoveSlot` steps
/// (IMPORTING on the target, MIGRATING on the source, MIGRATE the keys, then NODE on the
/// target, the source and every other master), each step done for a round of up to
/// [`SLOTS_PER_ROUND`] slots over one redis-cli connection (the commands on its standard
/// input), and the keys of every slot of the round listed in one connection and migrated in
/// another (`PIPELINE` keys per slot and `MIGRATE`, as redis-cli's `--cluster-pipeline`), until
/// none is left. redis-cli exits 0 even on an error reply, so every reply is checked. Keys are
/// listed quoted and escaped (`--no-raw`, one a line whatever bytes they hold) and passed to
/// `MIGRATE` in that form, which redis-cli reads back byte for byte.
///
/// The script can be run again after an interruption: each round first reads the slots' state
/// on the source and the target (their own `CLUSTER NODES`) and skips the IMPORTING and
/// MIGRATING steps of a slot the target owns already; a half-done slot gets its remaining keys
/// and its NODE steps. A slot owned by a third node stops the script (the cluster is not in the
/// state it was written for). Masters that give their last slot before the last move get
/// `cluster-allow-replica-migration no` for the run (their own values kept in a state file
/// between runs, restored at the end).
const MOVE_SLOTS: &str = r#"fail() { echo "keyplan script: $*" >&2; exit 1; }
# send HOST PORT: the commands on standard input, over one connection; prints the replies
send() { redis-cli -h "$1" -p "$2" || fail "$1:$2: redis-cli failed"; }
# all_ok HOST PORT N WHAT: the N commands on standard input must each answer OK
all_ok() {
  r=$(send "$1" "$2")
  n=$(printf '%s\n' "$r" | grep -c -x OK || true)
  [ "$n" = "$3" ] || fail "$1:$2 $4: $(printf '%s\n' "$r" | grep -v -x OK | head -n 1)"
}
# setslots STATE ID SLOT...: the CLUSTER SETSLOT commands
setslots() { w=$1 id=$2; shift 2; for s in "$@"; do echo "CLUSTER SETSLOT $s $w $id"; done; }
MARK="keyplan-slot-mark-$$-"
# keys_of HOST PORT SLOT...: up to PIPELINE keys of each slot, each slot's after a mark line.
# Not --raw: each key is printed quoted and escaped, one per line whatever bytes it holds
# (newline, NUL, none), in the form redis-cli reads back as one argument.
keys_of() {
  h=$1 p=$2; shift 2
  for s in "$@"; do echo "ECHO $MARK$s"; echo "CLUSTER GETKEYSINSLOT $s $PIPELINE"; done |
    redis-cli --no-raw -h "$h" -p "$p" || fail "$h:$p: redis-cli failed"
}
# migrates HOST PORT: the MIGRATE to HOST:PORT of each slot's keys listed by keys_of. The
# host and the password reach awk through its environment: `awk -v` would show the password
# in ps and turn its backslash escapes into other bytes.
migrates() {
  KP_HOST=$1 KP_PORT=$2 KP_MARK=$MARK LC_ALL=C awk '
    BEGIN {
      mark = "\"" ENVIRON["KP_MARK"]; host = ENVIRON["KP_HOST"]; port = ENVIRON["KP_PORT"]
      auth = ENVIRON["REDISCLI_AUTH"]
      for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i
    }
    # A quoted argument as redis-cli reads one: backslash, quote and control bytes as hex
    # escapes (built by hand: awks differ in how gsub reads backslashes in a replacement).
    function q(s,   i, c, o) {
      o = ""
      for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "\\" || c == "\"" || ord[c] < 32 || ord[c] == 127) o = o sprintf("\\x%02x", ord[c])
        else o = o c
      }
      return "\"" o "\""
    }
    function flush() {
      if (n > 0) print "MIGRATE " q(host) " " port " \"\" 0 60000" (auth != "" ? " AUTH " q(auth) : "") " KEYS" keys
      keys = ""; n = 0
    }
    index($0, mark) == 1 { flush(); next }
    # A key as redis-cli prints an array element: `N) "escaped bytes"`, already quoted.
    /^ *[0-9]+\) "/ { keys = keys " " substr($0, index($0, "\"")); n++; next }
    /^\(error\)/ { print "keyplan script: CLUSTER GETKEYSINSLOT: " $0 | "cat 1>&2"; failed = 1; exit 1 }
    END { if (!failed) flush(); if (failed) exit 1 }'
}
# slot_states SRC_HOST SRC_PORT SRC_ID DST_HOST DST_PORT DST_ID SLOT...: each SLOT's state as
# the source and the target see it (their own CLUSTER NODES), one a line: "move SLOT" (the
# source owns it, the target does not: import it, or finish importing it), "done SLOT" (the
# target owns it: its keys have moved, the NODE steps may be left), "other SLOT OWNER".
slot_states() {
  a=$(redis-cli --raw -h "$1" -p "$2" CLUSTER NODES) || fail "$1:$2: redis-cli failed"
  case "$a" in *myself*) ;; *) fail "$1:$2 CLUSTER NODES: $a" ;; esac
  b=$(redis-cli --raw -h "$4" -p "$5" CLUSTER NODES) || fail "$4:$5: redis-cli failed"
  case "$b" in *myself*) ;; *) fail "$4:$5 CLUSTER NODES: $b" ;; esac
  sid=$3 did=$6
  shift 6
  { printf '%s\n' "$a"; echo --; printf '%s\n' "$b"; } |
    KP_SID=$sid KP_DID=$did KP_SLOTS="$*" LC_ALL=C awk '
      BEGIN { n = split(ENVIRON["KP_SLOTS"], w, " "); side = 1 }
      $0 == "--" { side = 2; next }
      {
        for (i = 9; i <= NF; i++) {
          f = $i
          if (substr(f, 1, 1) == "[") continue
          k = index(f, "-")
          if (k) { lo = substr(f, 1, k - 1) + 0; hi = substr(f, k + 1) + 0 } else { lo = f + 0; hi = lo }
          for (j = 1; j <= n; j++) if (w[j] + 0 >= lo && w[j] + 0 <= hi) own[side "," j] = $1
        }
      }
      END {
        for (j = 1; j <= n; j++) {
          s = own["1," j]; d = own["2," j]
          if (d == ENVIRON["KP_DID"] || s == ENVIRON["KP_DID"]) print "done " w[j]
          else if (s == ENVIRON["KP_SID"]) print "move " w[j]
          else print "other " w[j] " " (s == "" ? "no node" : s)
        }
      }'
}
# set_node HOST:PORT ID SLOT...: CLUSTER SETSLOT NODE ID on HOST:PORT. A master emptied earlier
# may have become a replica, and a source that gives its last slot may become one as soon as
# the target's new epoch reaches it: a replica follows its master, which owns the slots.
set_node() {
  m=$1
  shift
  r=$(setslots NODE "$@" | send "${m%:*}" "${m##*:}")
  bad=$(printf '%s\n' "$r" | grep -v -x OK | grep -v 'only with masters' || true)
  [ -z "$bad" ] || fail "$m CLUSTER SETSLOT NODE: $bad"
}
# move_slots SRC_HOST SRC_PORT SRC_ID DST_HOST DST_PORT DST_ID SLOT...: moves a round of slots,
# from whatever state an earlier, interrupted run left each slot in.
move_slots() {
  sh=$1 sp=$2 sid=$3 dh=$4 dp=$5 did=$6
  case " $MASTERS " in
    *" $sh:$sp "*) ;;
    # Removed from the cluster by an earlier run (drop_removed): after all its moves.
    *) shift 6; DONE=$((DONE + $#)); echo "keyplan script: $# slot(s) $1..: $sh:$sp is removed already" >&2; return ;;
  esac
  st=$(slot_states "$@") || exit 1
  shift 6
  DONE=$((DONE + $#))
  other=$(printf '%s\n' "$st" | sed -n 's/^other //p' | head -n 1)
  [ -z "$other" ] || fail "slot ${other%% *} is owned by ${other#* } as $sh:$sp sees it, neither by $sh:$sp nor by $dh:$dp: the cluster is not in the state this script was written for; preview the plan again"
  todo=$(printf '%s\n' "$st" | sed -n 's/^move //p' | tr '\n' ' ')
  n=$(printf '%s\n' "$st" | grep -c '^move ' || true)
  echo "keyplan script: $# slot(s) $1..$(eval echo "\${$#}") ($DONE of $TOTAL, $(($# - n)) already moved): $sh:$sp -> $dh:$dp" >&2
  if [ "$n" -gt 0 ]; then
    # Both idempotent while the source owns the slot: a re-run sets them again.
    setslots IMPORTING "$sid" $todo | all_ok "$dh" "$dp" "$n" "CLUSTER SETSLOT IMPORTING"
    setslots MIGRATING "$did" $todo | all_ok "$sh" "$sp" "$n" "CLUSTER SETSLOT MIGRATING"
  fi
  idle=0
  while :; do
    m=$(keys_of "$sh" "$sp" "$@" | migrates "$dh" "$dp")
    [ -n "$m" ] || break
    r=$(printf '%s\n' "$m" | send "$sh" "$sp")
    bad=$(printf '%s\n' "$r" | grep -v -x -e OK -e NOKEY -e '' || true)
    [ -z "$bad" ] || fail "MIGRATE from $sh:$sp to $dh:$dp: $bad"
    # NOKEY for every key listed, twice: not keys expiring meanwhile but keys whose names
    # did not survive the trip through redis-cli.
    if printf '%s\n' "$r" | grep -q -x OK; then idle=0; else idle=$((idle + 1)); fi
    [ "$idle" -lt 2 ] || fail "$sh:$sp: the keys listed in slots $1.. are not found under the names sent (NOKEY)"
  done
  left=$(for s in "$@"; do echo "CLUSTER COUNTKEYSINSLOT $s"; done | send "$sh" "$sp" | grep -v -x 0 || true)
  [ -z "$left" ] || fail "$sh:$sp: keys left in slots $1..: COUNTKEYSINSLOT answered $left"
  setslots NODE "$did" "$@" | all_ok "$dh" "$dp" $# "CLUSTER SETSLOT NODE"
  set_node "$sh:$sp" "$did" "$@"
  for m in $MASTERS; do
    [ "$m" = "$dh:$dp" ] || [ "$m" = "$sh:$sp" ] || set_node "$m" "$did" "$@"
  done
}
# drop_removed HOST PORT ADDR ID [ADDR ID]...: MASTERS less each ADDR whose ID HOST:PORT's
# CLUSTER NODES no longer lists (removed by an earlier run of this script)
drop_removed() {
  k=$(redis-cli --raw -h "$1" -p "$2" CLUSTER NODES) || fail "$1:$2: redis-cli failed"
  case "$k" in *myself*) ;; *) fail "$1:$2 CLUSTER NODES: $k" ;; esac
  shift 2
  while [ $# -gt 1 ]; do
    case "$k" in
      *"$2 "*) ;;
      *) m2=""; for m in $MASTERS; do [ "$m" = "$1" ] || m2="$m2${m2:+ }$m"; done; MASTERS=$m2 ;;
    esac
    shift 2
  done
}
# keep_masters: cluster-allow-replica-migration no on each of KEEP_MASTERS still in the
# cluster (masters that give their last slot before the last move: with yes, Redis makes such
# a master a replica and the moves after it stop), each one's own value saved in STATE first
# (or kept there by an earlier, interrupted run) for restore_masters.
keep_masters() {
  if [ ! -s "$STATE" ]; then
    : > "$STATE.new" || fail "cannot write $STATE.new (set KEYPLAN_STATE to a writable file)"
    for m in $KEEP_MASTERS; do
      case " $MASTERS " in *" $m "*) ;; *) continue ;; esac
      v=$(echo "CONFIG GET cluster-allow-replica-migration" | send "${m%:*}" "${m##*:}" | sed -n 2p)
      [ -z "$v" ] || echo "$m $v" >> "$STATE.new"
    done
    mv "$STATE.new" "$STATE"
  fi
  while read -r m v; do
    r=$(echo "CONFIG SET cluster-allow-replica-migration no" | send "${m%:*}" "${m##*:}")
    [ "$r" = OK ] || fail "$m CONFIG SET cluster-allow-replica-migration no: $r"
  done < "$STATE"
}
# restore_masters: each of KEEP_MASTERS back to the value STATE saved
restore_masters() {
  while read -r m v; do
    r=$(echo "CONFIG SET cluster-allow-replica-migration $v" | send "${m%:*}" "${m##*:}")
    [ "$r" = OK ] || fail "$m CONFIG SET cluster-allow-replica-migration $v: $r"
  done < "$STATE"
  rm -f "$STATE"
}
"#;

/// The shell function of the Valkey 9 script (atomic slot migration, as the Valkey
/// documentation describes it: `CLUSTER MIGRATESLOTS SLOTSRANGE start end [start end …] NODE
/// target-id` sent to the source, which runs the job asynchronously; `CLUSTER
/// GETSLOTMIGRATIONS` on the source lists each job as field/value pairs with `operation`
/// (`EXPORT`), `slot_ranges` (`a-b c-d`) and `state`, ending in `success`, `failed` or
/// `cancelled`). One job per move, waited for before the next.
const VALKEY_ATOMIC: &str = r#"fail() { echo "keyplan script: $*" >&2; exit 1; }
# job_state HOST PORT RANGES: the state of the newest EXPORT job of exactly RANGES
job_state() {
  valkey-cli --raw -h "$1" -p "$2" CLUSTER GETSLOTMIGRATIONS | awk -v want="$3" '
    function done_entry() { if (op == "EXPORT" && r == want) last = st; op = ""; r = ""; st = "" }
    NR % 2 == 1 { k = $0; next }
    k == "name" { done_entry() }
    k == "operation" { op = $0 }
    k == "slot_ranges" { r = $0 }
    k == "state" { st = $0 }
    END { done_entry(); print last }'
}
# migrate_slots SRC_HOST SRC_PORT DST_HOST DST_PORT DST_ID N FIRST LAST [FIRST LAST]...
migrate_slots() {
  sh=$1 sp=$2 dh=$3 dp=$4 did=$5 n=$6
  shift 6
  DONE=$((DONE + n))
  want=$(printf '%s %s
' "$@" | awk '{ printf "%s%s-%s", (NR > 1 ? " " : ""), $1, $2 }')
  echo "keyplan script: $n slot(s) $want ($DONE of $TOTAL): $sh:$sp -> $dh:$dp" >&2
  r=$(valkey-cli -h "$sh" -p "$sp" CLUSTER MIGRATESLOTS SLOTSRANGE "$@" NODE "$did") ||
    fail "$sh:$sp: valkey-cli failed"
  [ "$r" = OK ] || fail "$sh:$sp CLUSTER MIGRATESLOTS: $r"
  while :; do
    st=$(job_state "$sh" "$sp" "$want")
    case "$st" in
      success) break ;;
      failed|cancelled) fail "$sh:$sp: the migration of $want to $dh:$dp is $st (CLUSTER GETSLOTMIGRATIONS has its message)" ;;
      '') fail "$sh:$sp: CLUSTER GETSLOTMIGRATIONS lists no job for $want" ;;
      *) sleep 1 ;;
    esac
  done
}
"#;

/// The shell function of the Redis 8.4 script (atomic slot migration, as the Redis
/// documentation describes it: `CLUSTER MIGRATION IMPORT start end [start end …]` sent to the
/// destination master returns a task id; `CLUSTER MIGRATION STATUS ID task-id` lists the
/// task's field/value pairs, `state` being `completed` once done). One task per move, waited
/// for before the next.
const REDIS_ATOMIC: &str = r#"fail() { echo "keyplan script: $*" >&2; exit 1; }
# task_field HOST PORT ID FIELD: one field of the task's status
task_field() {
  redis-cli --raw -h "$1" -p "$2" CLUSTER MIGRATION STATUS ID "$3" |
    awk -v f="$4" 'NR % 2 == 1 { k = $0; next } k == f { print; exit }'
}
# import_slots DST_HOST DST_PORT SRC_HOST SRC_PORT N FIRST LAST [FIRST LAST]...
import_slots() {
  dh=$1 dp=$2 sh=$3 sp=$4 n=$5
  shift 5
  DONE=$((DONE + n))
  echo "keyplan script: $n slot(s) $* ($DONE of $TOTAL): $sh:$sp -> $dh:$dp" >&2
  id=$(redis-cli --raw -h "$dh" -p "$dp" CLUSTER MIGRATION IMPORT "$@") ||
    fail "$dh:$dp: redis-cli failed"
  case "$id" in *[!0-9a-f]*|'') fail "$dh:$dp CLUSTER MIGRATION IMPORT: $id" ;; esac
  while :; do
    st=$(task_field "$dh" "$dp" "$id" state)
    case "$st" in
      completed) break ;;
      failed|canceled|cancelled) fail "$dh:$dp: task $id is $st: $(task_field "$dh" "$dp" "$id" last_error)" ;;
      '') fail "$dh:$dp: CLUSTER MIGRATION STATUS lists no task $id" ;;
      *) sleep 1 ;;
    esac
  done
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::redis_cli::{RebalanceOptions, rebalance};

    use crate::migrate::tests::THREE_MASTERS as NODES;

    #[test]
    fn redis_cli_lines_for_an_added_node() {
        let mut v = ClusterView::from_cluster_nodes(NODES).unwrap();
        v.add_node("127.0.0.1:7003").unwrap();
        let p = rebalance(
            &v,
            &RebalanceOptions {
                use_empty_masters: true,
                threshold: 2.0,
                ..Default::default()
            },
        )
        .unwrap();
        let s = emit(
            &v,
            &p.moves,
            Emit::RedisCli,
            DEFAULT_PIPELINE,
            &EmitContext::default(),
        )
        .unwrap();
        assert!(s.contains("\nadd_node 127.0.0.1:7003 127.0.0.1 7003 127.0.0.1:7000\n"));
        assert!(s.contains("out=$(redis-cli --cluster add-node \"$1\" \"$4\" 2>&1) && return 0"));
        assert!(s.contains("NEW_ID_1=$(redis-cli -h 127.0.0.1 -p 7003 CLUSTER MYID)"));
        // Each master already there is asked until it knows the new one, before any move.
        for port in [7000, 7001, 7002] {
            let wait = format!(
                "until redis-cli -h 127.0.0.1 -p {port} CLUSTER NODES 2> /dev/null | grep \"^$NEW_ID_1 \" | grep -v -q handshake; do sleep 1; done"
            );
            let at = s
                .find(&wait)
                .unwrap_or_else(|| panic!("no wait on {port}:\n{s}"));
            assert!(at < s.find("--cluster reshard").unwrap());
        }
        assert!(s.contains(
            "redis-cli --cluster reshard 127.0.0.1:7000 --cluster-from bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb --cluster-to \"$NEW_ID_1\" --cluster-slots 1366 --cluster-yes"
        ));
        assert_eq!(s.matches("--cluster reshard").count(), 3);
        assert!(
            s.contains("echo 'keyplan script: move 1 of 3: 1366 slot(s) from "),
            "{s}"
        );
        let s = emit(
            &v,
            &p.moves,
            Emit::Setslot,
            DEFAULT_PIPELINE,
            &EmitContext::default(),
        )
        .unwrap();
        assert!(s.contains("\nTOTAL=4096 DONE=0 PIPELINE=100\n"));
        // Every slot once, in rounds of at most 100 slots between one pair of nodes.
        let rounds: Vec<&str> = s.lines().filter(|l| l.starts_with("move_slots ")).collect();
        let mut slots: Vec<u16> = Vec::new();
        for r in &rounds {
            let words: Vec<&str> = r.split(' ').collect();
            assert!(words.len() > 7 && words.len() <= 7 + SLOTS_PER_ROUND, "{r}");
            slots.extend(words[7..].iter().map(|w| w.parse::<u16>().unwrap()));
        }
        assert_eq!(slots.len(), 4096);
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), 4096);
        assert_eq!(rounds.len(), 3 * 14);
        assert!(rounds[0].starts_with(
            "move_slots 127.0.0.1 7001 bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 127.0.0.1 7003 \"$NEW_ID_1\" 5461 5462 "
        ));
        let s = emit(&v, &p.moves, Emit::Setslot, 10, &EmitContext::default()).unwrap();
        assert!(s.contains("\nTOTAL=4096 DONE=0 PIPELINE=10\n"));
    }

    #[test]
    fn refusals() {
        let v = ClusterView::from_cluster_nodes(NODES).unwrap();
        // Not lowest-first: redis-cli cannot express it.
        let m = vec![Move {
            from: 0,
            to: 1,
            slots: vec![5],
        }];
        assert!(
            emit(
                &v,
                &m,
                Emit::RedisCli,
                DEFAULT_PIPELINE,
                &EmitContext::default()
            )
            .is_err()
        );
        assert!(
            emit(
                &v,
                &m,
                Emit::Setslot,
                DEFAULT_PIPELINE,
                &EmitContext::default()
            )
            .is_ok()
        );
        // No ids: nothing to emit.
        let v = ClusterView::from_slot_map(&crate::topology::SlotMap::from_masters(3).unwrap());
        let e = emit(
            &v,
            &[],
            Emit::RedisCli,
            DEFAULT_PIPELINE,
            &EmitContext::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("needs node ids"), "{e}");
    }

    #[test]
    fn comments_carry_no_control_bytes() {
        assert_eq!(comment("from t.yaml"), "from t.yaml");
        assert_eq!(comment("t\ntouch x\r\u{1b}[2J"), "t\\ntouch x\\r\\u{1b}[2J");
        let ctx = EmitContext::reshard("a\nrm -rf /", "x", "y\n$(id)", 1);
        let v = ClusterView::from_cluster_nodes(NODES).unwrap();
        let m = vec![Move {
            from: 0,
            to: 1,
            slots: vec![0],
        }];
        for how in [
            Emit::RedisCli,
            Emit::Setslot,
            Emit::ValkeyAtomic,
            Emit::ElastiCache,
        ] {
            let s = emit(&v, &m, how, DEFAULT_PIPELINE, &ctx).unwrap();
            assert!(
                s.lines()
                    .all(|l| !l.starts_with("rm ") && !l.starts_with("$(id)")),
                "{s}"
            );
        }
    }

    #[test]
    fn ids_and_addresses_a_script_cannot_carry_are_refused() {
        let m = vec![Move {
            from: 0,
            to: 1,
            slots: vec![0],
        }];
        let mut v = ClusterView::from_cluster_nodes(NODES).unwrap();
        v.nodes[1].id = Some("$(touch x)".into());
        let e = emit(
            &v,
            &m,
            Emit::Setslot,
            DEFAULT_PIPELINE,
            &EmitContext::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a cluster node id"), "{e}");
        let mut v = ClusterView::from_cluster_nodes(NODES).unwrap();
        v.nodes[1].address = Some("a b:7001".into());
        let e = emit(
            &v,
            &m,
            Emit::Setslot,
            DEFAULT_PIPELINE,
            &EmitContext::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("space or a control character"), "{e}");
    }

    #[test]
    fn quoting() {
        assert_eq!(sh("127.0.0.1:7000"), "127.0.0.1:7000");
        assert_eq!(sh("a b"), "'a b'");
        assert_eq!(sh("it's"), r"'it'\''s'");
    }
}
