//! `keyplan bench`: runs batches on a real cluster with each strategy and measures what
//! happens, next to the simulator's prediction. It writes only keys under its own
//! prefix, refuses a prefix that already holds keys, and deletes everything under the prefix
//! when done (also after an error or an interrupt). No printing: the CLI renders the results.

pub mod calibrate;
pub mod record;

use crate::live::{LiveCluster, LiveError, NodeConn, first_line};
use crate::simulate::exec::{ExecError, ExecPlan, exec_plan, onto_one_tag};
use crate::simulate::{Batch, NetworkModel, SimResult, Strategy, costed};
use crate::topology::{SlotMap, Topology};
use redis::Value;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The tolerance of a QPS prediction: predicted over measured within these bounds.
pub const QPS_TOLERANCE: (f64, f64) = (0.7, 1.43);

/// How to bench.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Every key written is under this prefix (`keyplan:bench` → `keyplan:bench:<key>`).
    pub prefix: String,
    /// How long each (batch, strategy) runs.
    pub duration: Duration,
    /// Concurrent workers, each with its own connections.
    pub concurrency: usize,
    /// Strategies to run.
    pub strategies: Vec<Strategy>,
    /// The network model for the predictions.
    pub net: NetworkModel,
}

/// Why the bench cannot run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Talking to the cluster failed.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The prefix already holds keys.
    #[error(
        "the prefix '{prefix}' already holds keys (e.g. '{example}' on {node}); bench writes only under an unused prefix: pick another with --prefix (if an earlier bench run left them, `keyplan bench --cleanup --prefix {prefix} --cluster URL` removes what its journal lists)"
    )]
    PrefixInUse {
        /// The prefix.
        prefix: String,
        /// A key found.
        example: String,
        /// Where.
        node: String,
    },
    /// Cleanup could not delete every key the run wrote.
    #[error(
        "{remaining} key(s) bench wrote under '{prefix}:' remain ({why}); remove them with: keyplan bench --cleanup --prefix {prefix} --cluster URL"
    )]
    LeftKeys {
        /// The prefix.
        prefix: String,
        /// How many remain.
        remaining: u64,
        /// The first failure.
        why: String,
    },
    /// The prefix is unusable.
    #[error("--prefix '{0}': use letters, digits and : _ - . only (no braces or glob characters)")]
    BadPrefix(String),
    /// The record of what the run writes cannot be kept on this machine.
    #[error(
        "cannot keep bench's record of the keys it writes ({0}): `keyplan bench --cleanup` trusts only what a run recorded on this machine, so bench writes nothing without it; set XDG_STATE_HOME (or HOME) to a directory you can write"
    )]
    Record(#[from] record::RecordError),
    /// A batch cannot be executed.
    #[error("batch {batch}")]
    Batch {
        /// The batch.
        batch: String,
        /// Why.
        source: ExecError,
    },
}

/// Measured numbers of one (batch, strategy).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Measured {
    /// Batches executed.
    pub executions: u64,
    /// Round trips waited on per execution (mean).
    pub round_trips: f64,
    /// Batches per second (all workers).
    pub qps: f64,
    /// Median latency of one batch, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Mean, ms.
    pub mean_ms: f64,
    /// Commands per execution, from INFO commandstats deltas (MULTI/EXEC and INFO excluded).
    pub commands: f64,
    /// Per node: commands per execution.
    pub per_node: Vec<NodeCommands>,
    /// Error replies received.
    pub errors: u64,
    /// The first error reply.
    pub first_error: Option<String>,
    /// Every execution's latency, ms (for calibration; not in JSON).
    #[serde(skip)]
    pub latencies: Vec<f64>,
}

/// Commands one node received per execution.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeCommands {
    /// The node.
    pub node: String,
    /// Commands per execution.
    pub commands: f64,
}

/// One (batch, strategy): predicted and measured.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BenchResult {
    /// The batch.
    pub batch: String,
    /// The batch's stable identity (line, scheme name, command).
    pub batch_id: crate::simulate::batch::BatchId,
    /// The strategy.
    pub strategy: Strategy,
    /// The simulator's prediction for the same keys and topology.
    pub predicted: SimResult,
    /// What happened.
    pub measured: Measured,
    /// Round trips and per-node commands equal the prediction, with no error replies.
    pub matches: bool,
    /// Predicted QPS over measured.
    pub qps_ratio: f64,
    /// The predicted QPS is within 0.7–1.43× of the measured.
    pub qps_within: bool,
}

fn valid_prefix(p: &str) -> bool {
    !p.is_empty()
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b":_-.".contains(&b))
}

fn host_port(addr: &str) -> Option<(String, u16)> {
    let (h, p) = addr.rsplit_once(':')?;
    Some((h.to_string(), p.parse().ok()?))
}

fn connect(live: &LiveCluster, addr: &str) -> Result<NodeConn, LiveError> {
    let (h, p) = host_port(addr).ok_or_else(|| LiveError::Node {
        addr: addr.to_string(),
        what: "connect".into(),
        reason: "bad address".into(),
        sampled: 0,
    })?;
    live.connect(&h, p)
}

fn node_err(addr: &str, what: &str, e: redis::RedisError) -> LiveError {
    LiveError::Node {
        addr: addr.to_string(),
        what: what.to_string(),
        reason: first_line(&e.to_string()),
        sampled: 0,
    }
}

/// Keys under `prefix:` on one node (up to `limit`).
fn keys_under(
    con: &mut NodeConn,
    addr: &str,
    prefix: &str,
    limit: usize,
) -> Result<Vec<Vec<u8>>, LiveError> {
    let mut out = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query(con)
            .map_err(|e| node_err(addr, "SCAN", e))?;
        out.extend(keys);
        cursor = next;
        if cursor == 0 || out.len() >= limit {
            return Ok(out);
        }
    }
}

/// The key that lists every key a run writes. It is written before the first batch runs, so
/// that `keyplan bench --cleanup` removes what a killed run left behind.
pub fn journal_key(prefix: &str) -> String {
    format!("{prefix}:journal")
}

/// What a cleanup did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cleanup {
    /// Keys deleted (keys listed but never written are not counted).
    pub deleted: u64,
    /// Keys that could not be deleted (a node unreachable, a refusal).
    pub remaining: u64,
    /// Why, per node or reply.
    pub failures: Vec<String>,
}

fn owner_addr(map: &SlotMap, key: &[u8]) -> Option<String> {
    let n = map.owner_of_slot(crate::slot::key_slot(key))?;
    let node = &map.nodes()[n];
    Some(node.address.clone().unwrap_or_else(|| node.name.clone()))
}

/// Deletes exactly `keys` (never a pattern over keys of others), each on the master that owns
/// its slot in `map`, following the MOVED and ASK answers of a cluster whose slots moved since
/// (a failover, a reshard). Nodes that cannot be reached are skipped and their keys counted as
/// remaining; the other nodes are still cleaned.
pub fn delete_keys(live: &LiveCluster, map: &SlotMap, keys: &[Vec<u8>]) -> Cleanup {
    let mut out = Cleanup::default();
    // (address, asking, key)
    let mut pending: Vec<(String, bool, &[u8])> = Vec::new();
    for k in keys {
        match owner_addr(map, k) {
            Some(a) => pending.push((a, false, k)),
            None => {
                out.remaining += 1;
                out.failures.push(format!(
                    "{}: slot {} has no master",
                    String::from_utf8_lossy(k),
                    crate::slot::key_slot(k)
                ));
            }
        }
    }
    for _round in 0..5 {
        if pending.is_empty() {
            break;
        }
        let mut by_addr: BTreeMap<String, Vec<(bool, &[u8])>> = BTreeMap::new();
        for (a, asking, k) in pending.drain(..) {
            by_addr.entry(a).or_default().push((asking, k));
        }
        for (addr, ks) in by_addr {
            match unlink_on(live, &addr, &ks) {
                Ok((deleted, redirected, refused)) => {
                    out.deleted += deleted;
                    pending.extend(redirected);
                    for r in refused {
                        out.remaining += 1;
                        if out.failures.len() < 8 {
                            out.failures.push(r);
                        }
                    }
                }
                Err(e) => {
                    out.remaining += ks.len() as u64;
                    out.failures.push(e.to_string());
                }
            }
        }
    }
    out.remaining += pending.len() as u64;
    out
}

type Redirected<'a> = Vec<(String, bool, &'a [u8])>;

/// UNLINKs `keys` on one node in pipelines; returns (deleted, keys redirected elsewhere,
/// refusals).
fn unlink_on<'a>(
    live: &LiveCluster,
    addr: &str,
    keys: &[(bool, &'a [u8])],
) -> Result<(u64, Redirected<'a>, Vec<String>), LiveError> {
    let mut con = connect(live, addr)?;
    let (mut deleted, mut redirected, mut refused) = (0, Vec::new(), Vec::new());
    for chunk in keys.chunks(1000) {
        let mut buf = Vec::new();
        let mut replies = 0;
        for (asking, k) in chunk {
            if *asking {
                buf.extend(redis::cmd("ASKING").get_packed_command());
                replies += 1;
            }
            buf.extend(redis::cmd("UNLINK").arg(*k).get_packed_command());
            replies += 1;
        }
        con.send_packed_command(&buf)
            .map_err(|e| node_err(addr, "UNLINK", e))?;
        let mut at = 0;
        for _ in 0..replies {
            let v = con
                .recv_response()
                .map_err(|e| node_err(addr, "UNLINK", e))?;
            let (asking, key) = chunk[at.min(chunk.len() - 1)];
            match v {
                Value::Okay | Value::SimpleString(_) => continue, // ASKING's +OK
                Value::Int(n) => deleted += n.max(0) as u64,
                Value::ServerError(e) => {
                    let to = e
                        .details()
                        .and_then(|d| d.split(' ').nth(1))
                        .map(str::to_string);
                    match (e.code(), to) {
                        ("MOVED", Some(to)) => redirected.push((to, false, key)),
                        ("ASK", Some(to)) => redirected.push((to, true, key)),
                        _ => refused.push(format!(
                            "{addr}: UNLINK {}: {}",
                            String::from_utf8_lossy(key),
                            first_line(&e.to_string())
                        )),
                    }
                }
                other => refused.push(format!("{addr}: UNLINK replied {other:?}")),
            }
            let _ = asking;
            at += 1;
        }
    }
    Ok((deleted, redirected, refused))
}

/// The member every journal bench writes holds besides the keys: a set without it was not
/// written by keyplan bench, and `--cleanup` leaves it and everything it lists alone. It has
/// no `:`, so it can never be a key bench writes (those are all `<prefix>:<key>`).
pub const JOURNAL_MARKER: &str = "#keyplan-bench-journal v2";

/// The marker of journals written before runs were recorded on the machine that ran them.
const OLD_MARKER: &str = "#keyplan-bench-journal v1";

/// The member that names the run which wrote the journal: this, then the run id.
const RUN_MEMBER: &str = "#run ";

/// Why `--cleanup` refuses a journal: it deletes nothing then.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Talking to the cluster failed.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The journal's key holds something other than a set.
    #[error(
        "'{key}' is a {kind}, not a journal keyplan bench wrote; nothing was deleted (check --prefix)"
    )]
    NotAJournal {
        /// The journal's key.
        key: String,
        /// Its Redis type.
        kind: String,
    },
    /// The set has no marker: another program's set under the same name.
    #[error(
        "'{key}' is a set of {members} member(s) without keyplan bench's marker: it was not written by keyplan bench, and nothing was deleted (check --prefix)"
    )]
    Unmarked {
        /// The journal's key.
        key: String,
        /// How many members it has.
        members: usize,
    },
    /// A journal of a keyplan that did not record its runs: nothing proves what it lists.
    #[error(
        "'{key}' has the marker of an older keyplan bench, whose journals cannot be checked against the run that wrote them: nothing was deleted; inspect it with SMEMBERS {key}, UNLINK the keys it lists that are bench's, then the journal"
    )]
    Old {
        /// The journal's key.
        key: String,
    },
    /// The journal does not name exactly one well-formed run.
    #[error(
        "'{key}' {why}, as every journal keyplan bench writes does: the journal was altered or forged, and nothing was deleted; inspect it with SMEMBERS {key}"
    )]
    NoRun {
        /// The journal's key.
        key: String,
        /// What is wrong, as a predicate ("names no run").
        why: String,
    },
    /// The journal lists names outside the prefix: bench never writes those.
    #[error(
        "'{key}' lists {count} name(s) outside '{prefix}:' (e.g. {examples}) that keyplan bench never writes: the journal was altered, and nothing was deleted; inspect it with SMEMBERS {key}"
    )]
    Foreign {
        /// The journal's key.
        key: String,
        /// The prefix.
        prefix: String,
        /// How many such members.
        count: usize,
        /// A few of them, quoted.
        examples: String,
    },
    /// No record of the run on this machine: a forged journal, or a run on another machine.
    #[error(
        "'{key}' names run {run}, which has no record on this machine ({dir}): --cleanup deletes only what a bench run recorded here, so a journal anyone could have written deletes nothing. Nothing was deleted; if the run was on another machine (or as another user), run --cleanup there, or inspect the journal with SMEMBERS {key}"
    )]
    Unrecorded {
        /// The journal's key.
        key: String,
        /// The run id it names.
        run: String,
        /// Where records are kept.
        dir: String,
    },
    /// The run's record is for another prefix: the journal was copied under this one.
    #[error(
        "'{key}' names run {run}, which wrote under '{recorded}:', not '{prefix}:': the journal was copied or forged, and nothing was deleted"
    )]
    OtherPrefix {
        /// The journal's key.
        key: String,
        /// The run id.
        run: String,
        /// The prefix the run recorded.
        recorded: String,
        /// The prefix asked for.
        prefix: String,
    },
    /// The journal lists names the run's record does not: added after the run wrote it.
    #[error(
        "'{key}' lists {count} name(s) that run {run} did not record writing (e.g. {examples}): the journal was altered, and nothing was deleted; inspect it with SMEMBERS {key}"
    )]
    Unlisted {
        /// The journal's key.
        key: String,
        /// The run id.
        run: String,
        /// How many such names.
        count: usize,
        /// A few of them, quoted.
        examples: String,
    },
    /// The run's record could not be read.
    #[error(
        "the record of the run that wrote the journal cannot be read ({0}); nothing was deleted"
    )]
    Record(#[from] record::RecordError),
    /// The run's record is there but is not one.
    #[error("{place}: {why}; nothing was deleted (remove that file if it is not bench's)")]
    BadRecord {
        /// Where it is.
        place: String,
        /// What is wrong with it.
        why: String,
    },
}

/// What the journal of an earlier run under a prefix holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Journal {
    /// Whether the journal's key exists.
    pub exists: bool,
    /// The run that wrote it.
    pub run: String,
    /// The keys it lists, every one under `<prefix>:`.
    pub keys: Vec<Vec<u8>>,
}

/// Reads and checks the journal of an earlier run under `prefix` (from the master that owns
/// it), against the record of that run on this machine: the keys it lists. A key that is not
/// a set, a set without [`JOURNAL_MARKER`] or its run, one that lists any name outside
/// `<prefix>:`, one whose run has no record in `records` (for this prefix) and one that lists
/// a name the record does not are refused as a whole.
pub fn read_journal(
    live: &LiveCluster,
    map: &SlotMap,
    prefix: &str,
    records: &dyn record::Records,
) -> Result<Journal, JournalError> {
    let journal = journal_key(prefix);
    let Some(addr) = owner_addr(map, journal.as_bytes()) else {
        return Ok(Journal::default());
    };
    let mut con = connect(live, &addr)?;
    let kind: String = redis::cmd("TYPE")
        .arg(&journal)
        .query(&mut con)
        .map_err(|e| node_err(&addr, "TYPE", e))?;
    match kind.as_str() {
        "none" => return Ok(Journal::default()),
        "set" => {}
        _ => return Err(JournalError::NotAJournal { key: journal, kind }),
    }
    let mut members: Vec<Vec<u8>> = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, page): (u64, Vec<Vec<u8>>) = redis::cmd("SSCAN")
            .arg(&journal)
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .query(&mut con)
            .map_err(|e| node_err(&addr, "SSCAN", e))?;
        members.extend(page);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    // SSCAN may return a member twice; the set itself has each once.
    members.sort_unstable();
    members.dedup();
    let j = checked_journal(&journal, prefix, members)?;
    let Some((place, text)) = records.find(&j.run)? else {
        return Err(JournalError::Unrecorded {
            key: journal,
            run: j.run,
            dir: records.place(),
        });
    };
    let rec = record::parse(&text).map_err(|why| JournalError::BadRecord { place, why })?;
    recorded(&journal, prefix, &j, &rec)?;
    Ok(j)
}

/// Quoted examples of names, for a message.
fn examples(names: &[Vec<u8>]) -> String {
    names
        .iter()
        .take(3)
        .map(|k| format!("'{}'", crate::keys::display::display_key(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The journal's members checked: the marker present, one run named, every other member
/// under the prefix.
fn checked_journal(
    journal: &str,
    prefix: &str,
    members: Vec<Vec<u8>>,
) -> Result<Journal, JournalError> {
    let marker = JOURNAL_MARKER.as_bytes();
    if !members.iter().any(|m| m == marker) {
        if members.iter().any(|m| m == OLD_MARKER.as_bytes()) {
            return Err(JournalError::Old {
                key: journal.to_string(),
            });
        }
        return Err(JournalError::Unmarked {
            key: journal.to_string(),
            members: members.len(),
        });
    }
    let runs: Vec<&[u8]> = members
        .iter()
        .filter_map(|m| m.strip_prefix(RUN_MEMBER.as_bytes()))
        .collect();
    let run = match runs.as_slice() {
        [one] => match std::str::from_utf8(one) {
            Ok(id) if record::valid_run_id(id) => id.to_string(),
            _ => {
                return Err(JournalError::NoRun {
                    key: journal.to_string(),
                    why: "names a run that is not a run id (32 hex digits)".into(),
                });
            }
        },
        [] => {
            return Err(JournalError::NoRun {
                key: journal.to_string(),
                why: "names no run".into(),
            });
        }
        _ => {
            return Err(JournalError::NoRun {
                key: journal.to_string(),
                why: format!("names {} runs, not one", runs.len()),
            });
        }
    };
    let under = format!("{prefix}:");
    let (keys, foreign): (Vec<Vec<u8>>, Vec<Vec<u8>>) = members
        .into_iter()
        .filter(|m| m != marker && !m.starts_with(RUN_MEMBER.as_bytes()))
        .partition(|m| m.starts_with(under.as_bytes()) && m.as_slice() != journal.as_bytes());
    if !foreign.is_empty() {
        return Err(JournalError::Foreign {
            key: journal.to_string(),
            prefix: prefix.to_string(),
            count: foreign.len(),
            examples: examples(&foreign),
        });
    }
    Ok(Journal {
        exists: true,
        run,
        keys,
    })
}

/// The journal held to the record of its run: the same prefix, and no name the run did not
/// record.
fn recorded(
    journal: &str,
    prefix: &str,
    j: &Journal,
    rec: &record::Record,
) -> Result<(), JournalError> {
    if rec.prefix != prefix {
        return Err(JournalError::OtherPrefix {
            key: journal.to_string(),
            run: j.run.clone(),
            recorded: rec.prefix.clone(),
            prefix: prefix.to_string(),
        });
    }
    let unlisted: Vec<Vec<u8>> = j
        .keys
        .iter()
        .filter(|k| !rec.keys.contains(*k))
        .cloned()
        .collect();
    if !unlisted.is_empty() {
        return Err(JournalError::Unlisted {
            key: journal.to_string(),
            run: j.run.clone(),
            count: unlisted.len(),
            examples: examples(&unlisted),
        });
    }
    Ok(())
}

/// Writes the journal: the marker and the run, then every key the run will write.
fn write_journal(
    live: &LiveCluster,
    map: &SlotMap,
    prefix: &str,
    run: &str,
    keys: &BTreeSet<Vec<u8>>,
) -> Result<(), LiveError> {
    let journal = journal_key(prefix);
    let addr = owner_addr(map, journal.as_bytes()).ok_or_else(|| LiveError::Node {
        addr: "-".into(),
        what: "journal".into(),
        reason: format!("no master serves the slot of '{journal}'"),
        sampled: 0,
    })?;
    let mut con = connect(live, &addr)?;
    redis::cmd("SADD")
        .arg(&journal)
        .arg(JOURNAL_MARKER)
        .arg(format!("{RUN_MEMBER}{run}"))
        .query::<()>(&mut con)
        .map_err(|e| node_err(&addr, "SADD (journal)", e))?;
    let all: Vec<&Vec<u8>> = keys.iter().collect();
    for chunk in all.chunks(1000) {
        redis::cmd("SADD")
            .arg(&journal)
            .arg(chunk)
            .query::<()>(&mut con)
            .map_err(|e| node_err(&addr, "SADD (journal)", e))?;
    }
    Ok(())
}

/// Deletes what an earlier run under `prefix` wrote, from its journal (`keyplan bench
/// --cleanup`), then the journal and the run's record when nothing remains. Only a journal
/// bench wrote, of a run recorded on this machine, is acted on (see [`read_journal`]);
/// anything else is refused before a key is deleted.
pub fn clean_journal(
    live: &LiveCluster,
    map: &SlotMap,
    prefix: &str,
    records: &dyn record::Records,
) -> Result<Cleanup, JournalError> {
    let journal = read_journal(live, map, prefix, records)?;
    let mut c = delete_keys(live, map, &journal.keys);
    if c.remaining == 0 && journal.exists {
        let j = delete_keys(live, map, &[journal_key(prefix).into_bytes()]);
        c.remaining += j.remaining;
        c.failures.extend(j.failures);
    }
    if c.remaining == 0 && journal.exists {
        records.forget(&journal.run);
    }
    Ok(c)
}

/// `cmdstat_<name>:calls=N` per command, from INFO commandstats.
fn command_calls(con: &mut NodeConn, addr: &str) -> Result<BTreeMap<String, u64>, LiveError> {
    let text: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(con)
        .map_err(|e| node_err(addr, "INFO commandstats", e))?;
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let Some(rest) = l.strip_prefix("cmdstat_") else {
            continue;
        };
        let Some((name, fields)) = rest.split_once(':') else {
            continue;
        };
        if let Some(calls) = fields
            .split(',')
            .find_map(|f| f.strip_prefix("calls="))
            .and_then(|v| v.parse::<u64>().ok())
        {
            out.insert(name.to_string(), calls);
        }
    }
    Ok(out)
}

/// The calls of `counted` commands (lower-case names, as INFO commandstats names them) between
/// two readings: only the batch's own commands, never the bench's bookkeeping, transaction
/// wrappers or what replicas and other clients send meanwhile (`REPLCONF ACK`, …).
fn counted_delta(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    counted: &BTreeSet<String>,
) -> u64 {
    after
        .iter()
        .filter(|(name, _)| counted.contains(name.as_str()))
        .map(|(name, &calls)| calls.saturating_sub(before.get(name).copied().unwrap_or(0)))
        .sum()
}

/// The lower-case names of the commands a plan counts (MULTI/EXEC wrappers left out).
fn plan_commands(plan: &ExecPlan) -> BTreeSet<String> {
    plan.waves
        .iter()
        .flat_map(|w| &w.lanes)
        .flat_map(|l| &l.commands)
        .filter_map(|c| c.first())
        .map(|n| String::from_utf8_lossy(n).to_ascii_lowercase())
        .filter(|n| n != "multi" && n != "exec")
        .collect()
}

/// The batch with its keys under the prefix.
fn prefixed(b: &Batch, prefix: &str) -> Batch {
    b.map_keys(|k| [prefix.as_bytes(), b":", k].concat())
}

struct Worker {
    /// Connections per node; as many as the plan's widest use of that node in one wave.
    cons: BTreeMap<usize, Vec<NodeConn>>,
}

struct Run {
    latencies: Vec<f64>,
    round_trips: u64,
    executions: u64,
    errors: u64,
    first_error: Option<String>,
}

fn packed(commands: &[Vec<Vec<u8>>]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in commands {
        let mut cmd = redis::Cmd::new();
        for a in c {
            cmd.arg(a.as_slice());
        }
        out.extend_from_slice(&cmd.get_packed_command());
    }
    out
}

/// Runs `plan` once on the worker's connections: per wave, every lane is written, then every
/// reply read. Returns (round trips waited on, error replies, first error).
fn execute(
    w: &mut Worker,
    plan: &ExecPlan,
    wire: &[Vec<Vec<u8>>],
    addrs: &[String],
) -> Result<(u64, u64, Option<String>), LiveError> {
    let mut errors = 0;
    let mut first = None;
    let mut rts = 0;
    for (wi, wave) in plan.waves.iter().enumerate() {
        let mut used: BTreeMap<usize, usize> = BTreeMap::new();
        let mut reading: Vec<(usize, usize, usize)> = Vec::new();
        for (li, lane) in wave.lanes.iter().enumerate() {
            let k = used.entry(lane.node).or_default();
            let con = &mut w.cons.get_mut(&lane.node).expect("connections opened")[*k];
            con.send_packed_command(&wire[wi][li])
                .map_err(|e| node_err(&addrs[lane.node], "send", e))?;
            reading.push((lane.node, *k, lane.commands.len()));
            *k += 1;
        }
        for (node, k, n) in reading {
            let con = &mut w.cons.get_mut(&node).expect("connections opened")[k];
            for _ in 0..n {
                match con.recv_response() {
                    Ok(Value::ServerError(e)) => {
                        errors += 1;
                        first.get_or_insert_with(|| first_line(&e.to_string()));
                    }
                    Ok(_) => {}
                    Err(e) if e.is_io_error() || e.is_timeout() => {
                        return Err(node_err(&addrs[node], "read", e));
                    }
                    Err(e) => {
                        errors += 1;
                        first.get_or_insert_with(|| first_line(&e.to_string()));
                    }
                }
            }
        }
        rts += 1;
    }
    Ok((rts, errors, first))
}

/// The median time of a PING on every master (100 each, one connection at a time), ms: the
/// round trip bench's predictions use when no calibration is given.
pub fn probe_round_trip(live: &LiveCluster, map: &SlotMap) -> Result<f64, LiveError> {
    let mut times = Vec::new();
    for n in map.nodes() {
        let addr = n.address.clone().unwrap_or_else(|| n.name.clone());
        let mut con = connect(live, &addr)?;
        for _ in 0..100 {
            let t = Instant::now();
            redis::cmd("PING")
                .query::<()>(&mut con)
                .map_err(|e| node_err(&addr, "PING", e))?;
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(percentile(&times, 0.5))
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs every batch with every strategy on the cluster. `stop` ends the runs early (Ctrl-C);
/// keys under the prefix are deleted before returning, whatever happens. `observe` is told
/// what starts (a result of `None`, with the step's index and the number of steps) and each
/// result as it finishes, so a caller can show progress and print results as they come.
pub fn run_bench(
    live: &LiveCluster,
    map: &SlotMap,
    batches: &[Batch],
    opts: &BenchOptions,
    records: &dyn record::Records,
    stop: &AtomicBool,
    observe: &mut dyn FnMut(BenchStep<'_>),
) -> Result<Vec<BenchResult>, BenchError> {
    let pairs: Vec<(&Batch, Strategy)> = batches
        .iter()
        .flat_map(|b| opts.strategies.iter().map(move |&s| (b, s)))
        .collect();
    run_pairs(live, map, &pairs, opts, records, stop, observe)
}

/// [`run_bench`] for chosen (batch, strategy) pairs, in order.
pub fn run_pairs(
    live: &LiveCluster,
    map: &SlotMap,
    pairs: &[(&Batch, Strategy)],
    opts: &BenchOptions,
    records: &dyn record::Records,
    stop: &AtomicBool,
    observe: &mut dyn FnMut(BenchStep<'_>),
) -> Result<Vec<BenchResult>, BenchError> {
    if !valid_prefix(&opts.prefix) {
        return Err(BenchError::BadPrefix(opts.prefix.clone()));
    }
    let topo = Topology::Cluster(map.clone());
    let addrs: Vec<String> = map
        .nodes()
        .iter()
        .map(|n| n.address.clone().unwrap_or_else(|| n.name.clone()))
        .collect();
    // Plans first: a batch that cannot run stops everything before a key is written.
    let mut work = Vec::new();
    let mut written: BTreeSet<Vec<u8>> = BTreeSet::new();
    for &(b, s) in pairs {
        // Keys stay under the prefix: the one-tag rewrite comes first, so the prefix
        // (which has no braces) goes in front of the tag.
        let input = if s == Strategy::Hashtag {
            prefixed(&onto_one_tag(b), &opts.prefix)
        } else {
            prefixed(b, &opts.prefix)
        };
        written.extend(input.keys().map(<[u8]>::to_vec));
        let plan = exec_plan(&input, &topo, s).map_err(|source| BenchError::Batch {
            batch: b.name.clone(),
            source,
        })?;
        // The prediction is the cost of the very plan executed.
        let predicted = costed(b, &topo, s, &plan, 0, &opts.net);
        work.push((b, s, plan, predicted));
    }
    for addr in &addrs {
        let mut con = connect(live, addr)?;
        if let Some(k) = keys_under(&mut con, addr, &opts.prefix, 1)?.first() {
            return Err(BenchError::PrefixInUse {
                prefix: opts.prefix.clone(),
                example: String::from_utf8_lossy(k).into_owned(),
                node: addr.clone(),
            });
        }
    }
    // Every key the plans address (destinations included), recorded on this machine and
    // journaled on the cluster before any is written.
    let run = records.new_run_id()?;
    records.keep(&run, &record::render(&opts.prefix, &written))?;
    // Should this fail, part of the journal may be on the cluster (no key yet): the record
    // lets --cleanup remove it.
    write_journal(live, map, &opts.prefix, &run, &written)?;
    let result = run_all(live, &addrs, &work, opts, stop, observe);
    // A fresh slot map if the cluster can give one (slots may have moved meanwhile).
    let now = live.topology().unwrap_or_else(|_| map.clone());
    let written: Vec<Vec<u8>> = written.into_iter().collect();
    let mut cleaned = delete_keys(live, &now, &written);
    if cleaned.remaining == 0 {
        cleaned = delete_keys(live, &now, &[journal_key(&opts.prefix).into_bytes()]);
    }
    if cleaned.remaining == 0 {
        records.forget(&run);
    }
    if cleaned.remaining > 0 {
        return Err(BenchError::LeftKeys {
            prefix: opts.prefix.clone(),
            remaining: cleaned.remaining,
            why: cleaned.failures.first().cloned().unwrap_or_default(),
        });
    }
    result
}

fn run_all(
    live: &LiveCluster,
    addrs: &[String],
    work: &[(&Batch, Strategy, ExecPlan, SimResult)],
    opts: &BenchOptions,
    stop: &AtomicBool,
    observe: &mut dyn FnMut(BenchStep<'_>),
) -> Result<Vec<BenchResult>, BenchError> {
    let mut out = Vec::new();
    let mut stats: Vec<NodeConn> = addrs
        .iter()
        .map(|a| connect(live, a))
        .collect::<Result<_, _>>()?;
    for (step, (batch, strategy, plan, predicted)) in work.iter().enumerate() {
        let name = &batch.name;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        observe(BenchStep {
            index: step,
            steps: work.len(),
            batch: name,
            strategy: *strategy,
            result: None,
        });
        let wire: Vec<Vec<Vec<u8>>> = plan
            .waves
            .iter()
            .map(|w| w.lanes.iter().map(|l| packed(&l.commands)).collect())
            .collect();
        // Connections per node: the widest wave's lanes on that node.
        let mut need: BTreeMap<usize, usize> = BTreeMap::new();
        for w in &plan.waves {
            let mut here: BTreeMap<usize, usize> = BTreeMap::new();
            for l in &w.lanes {
                *here.entry(l.node).or_default() += 1;
            }
            for (n, c) in here {
                let e = need.entry(n).or_default();
                *e = (*e).max(c);
            }
        }
        let mut workers: Vec<Worker> = Vec::new();
        for _ in 0..opts.concurrency.max(1) {
            let mut cons = BTreeMap::new();
            for (&n, &c) in &need {
                let v: Vec<NodeConn> = (0..c)
                    .map(|_| connect(live, &addrs[n]))
                    .collect::<Result<_, _>>()?;
                cons.insert(n, v);
            }
            workers.push(Worker { cons });
        }
        let before: Vec<BTreeMap<String, u64>> = stats
            .iter_mut()
            .zip(addrs)
            .map(|(c, a)| command_calls(c, a))
            .collect::<Result<_, _>>()?;
        let started = Instant::now();
        let deadline = started + opts.duration;
        let runs: Vec<Result<Run, LiveError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = workers
                .iter_mut()
                .map(|w| {
                    let (wire, plan) = (&wire, plan);
                    scope.spawn(move || {
                        let mut run = Run {
                            latencies: Vec::new(),
                            round_trips: 0,
                            executions: 0,
                            errors: 0,
                            first_error: None,
                        };
                        // At least one execution, then until the deadline.
                        loop {
                            let t = Instant::now();
                            let (rts, errs, first) = execute(w, plan, wire, addrs)?;
                            run.latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                            run.round_trips += rts;
                            run.executions += 1;
                            run.errors += errs;
                            if run.first_error.is_none() {
                                run.first_error = first;
                            }
                            if Instant::now() >= deadline || stop.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                        Ok(run)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("invariant: bench workers do not panic"))
                .collect()
        });
        let elapsed = started.elapsed().as_secs_f64();
        let after: Vec<BTreeMap<String, u64>> = stats
            .iter_mut()
            .zip(addrs)
            .map(|(c, a)| command_calls(c, a))
            .collect::<Result<_, _>>()?;
        let counted = plan_commands(plan);
        let mut latencies = Vec::new();
        let (mut rts, mut execs, mut errors) = (0u64, 0u64, 0u64);
        let mut first_error = None;
        for r in runs {
            let r = r?;
            latencies.extend(r.latencies);
            rts += r.round_trips;
            execs += r.executions;
            errors += r.errors;
            if first_error.is_none() {
                first_error = r.first_error;
            }
        }
        latencies.sort_by(f64::total_cmp);
        let per_node: Vec<NodeCommands> = addrs
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let d = counted_delta(&before[i], &after[i], &counted);
                (d > 0).then(|| NodeCommands {
                    node: a.clone(),
                    commands: d as f64 / execs.max(1) as f64,
                })
            })
            .collect();
        let measured = Measured {
            executions: execs,
            round_trips: rts as f64 / execs.max(1) as f64,
            qps: execs as f64 / elapsed.max(1e-9),
            p50_ms: percentile(&latencies, 0.5),
            p99_ms: percentile(&latencies, 0.99),
            mean_ms: latencies.iter().sum::<f64>() / latencies.len().max(1) as f64,
            commands: per_node.iter().map(|n| n.commands).sum(),
            per_node,
            errors,
            first_error,
            latencies,
        };
        let predicted_nodes: Vec<(String, f64)> = predicted
            .load
            .nodes
            .iter()
            .map(|n| {
                (
                    n.address.clone().unwrap_or_else(|| n.node.clone()),
                    n.commands as f64,
                )
            })
            .collect();
        let measured_nodes: Vec<(String, f64)> = measured
            .per_node
            .iter()
            .map(|n| (n.node.clone(), n.commands))
            .collect();
        let matches = errors == 0
            && (measured.round_trips - predicted.load.round_trips as f64).abs() < 1e-9
            && predicted_nodes == measured_nodes;
        let qps_ratio = if measured.qps > 0.0 {
            predicted.load.qps / measured.qps
        } else {
            0.0
        };
        out.push(BenchResult {
            batch: name.clone(),
            batch_id: batch.id.clone(),
            strategy: *strategy,
            predicted: predicted.clone(),
            measured,
            matches,
            qps_ratio,
            qps_within: (QPS_TOLERANCE.0..=QPS_TOLERANCE.1).contains(&qps_ratio),
        });
        observe(BenchStep {
            index: step,
            steps: work.len(),
            batch: name,
            strategy: *strategy,
            result: out.last(),
        });
    }
    Ok(out)
}

/// One (batch, strategy) run of [`run_bench`], as it starts (`result: None`) and finishes.
#[derive(Debug, Clone, Copy)]
pub struct BenchStep<'a> {
    /// Which run this is, from 0.
    pub index: usize,
    /// Runs in all.
    pub steps: usize,
    /// The batch.
    pub batch: &'a str,
    /// The strategy.
    pub strategy: Strategy,
    /// The result, once the run is done.
    pub result: Option<&'a BenchResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_batch_is_explained_once() {
        let e = anyhow::Error::from(BenchError::Batch {
            batch: "line 1: EVAL \"return 1\" 1 a".into(),
            source: ExecError::Unsplittable("EVAL".into()),
        });
        let text = format!("{e:#}");
        assert_eq!(text.matches("does not split").count(), 1, "{text}");
        assert!(text.starts_with("batch line 1: EVAL"), "{text}");
    }

    #[test]
    fn a_journal_is_trusted_only_with_its_marker_its_run_and_its_record() {
        let m = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let id = "0123456789abcdef0123456789abcdef";
        let run = format!("{RUN_MEMBER}{id}");
        // What bench writes: the marker, the run and keys under the prefix.
        let ok = checked_journal(
            "kp:journal",
            "kp",
            m(&[JOURNAL_MARKER, &run, "kp:a", "kp:{t}b"]),
        )
        .unwrap();
        assert_eq!(ok.keys, m(&["kp:a", "kp:{t}b"]));
        assert_eq!(ok.run, id);
        // An application's own set under the same name: no marker, nothing trusted.
        let e = checked_journal("kp:journal", "kp", m(&["app:important", "user:1"])).unwrap_err();
        assert!(
            matches!(e, JournalError::Unmarked { members: 2, .. }),
            "{e}"
        );
        // The old public marker alone proves nothing.
        let e = checked_journal("kp:journal", "kp", m(&[OLD_MARKER, "kp:a"])).unwrap_err();
        assert!(matches!(e, JournalError::Old { .. }), "{e}");
        // No run, two runs, or a run id that is a path.
        for runs in [
            vec![],
            vec![run.clone(), format!("{RUN_MEMBER}{}", "f".repeat(32))],
            vec![format!("{RUN_MEMBER}../../../etc/passwd")],
        ] {
            let mut v = m(&[JOURNAL_MARKER, "kp:a"]);
            v.extend(runs.iter().map(|r| r.as_bytes().to_vec()));
            let e = checked_journal("kp:journal", "kp", v).unwrap_err();
            assert!(matches!(e, JournalError::NoRun { .. }), "{runs:?}: {e}");
            assert!(e.to_string().contains("nothing was deleted"), "{e}");
        }
        // A planted name outside the prefix (or a look-alike prefix) poisons the whole journal.
        for planted in ["app:important", "kpx:a", "kp", "kp:journal"] {
            let e = checked_journal(
                "kp:journal",
                "kp",
                m(&[JOURNAL_MARKER, &run, "kp:a", planted]),
            )
            .unwrap_err();
            assert!(
                matches!(e, JournalError::Foreign { count: 1, .. }),
                "{planted}: {e}"
            );
            assert!(e.to_string().contains("nothing was deleted"), "{e}");
        }
        // Held to the run's record: its prefix, and only names it lists.
        let rec = record::Record {
            prefix: "kp".into(),
            keys: m(&["kp:a", "kp:{t}b", "kp:c"]).into_iter().collect(),
        };
        assert!(recorded("kp:journal", "kp", &ok, &rec).is_ok());
        let planted = checked_journal(
            "kp:journal",
            "kp",
            m(&[JOURNAL_MARKER, &run, "kp:a", "kp:victim"]),
        )
        .unwrap();
        let e = recorded("kp:journal", "kp", &planted, &rec).unwrap_err();
        assert!(
            matches!(e, JournalError::Unlisted { count: 1, .. })
                && e.to_string().contains("'kp:victim'"),
            "{e}"
        );
        let other = record::Record {
            prefix: "kq".into(),
            ..rec
        };
        let e = recorded("kp:journal", "kp", &ok, &other).unwrap_err();
        assert!(matches!(e, JournalError::OtherPrefix { .. }), "{e}");
    }

    #[test]
    fn prefixes_and_deltas() {
        assert!(valid_prefix("keyplan:bench"));
        assert!(!valid_prefix("a{b}"));
        assert!(!valid_prefix("a*"));
        assert!(!valid_prefix(""));
        let b = &crate::simulate::parse_batches("MSET a 1 {t}b 2").unwrap()[0];
        let p = prefixed(b, "kp");
        assert_eq!(p.ops[0].args[1], b"kp:a".to_vec());
        assert_eq!(p.ops[0].args[3], b"kp:{t}b".to_vec());
        assert_eq!(p.ops[0].args[4], b"2".to_vec());
        let before: BTreeMap<String, u64> =
            [("get".to_string(), 5), ("info".to_string(), 1)].into();
        let after: BTreeMap<String, u64> = [
            ("get".to_string(), 9),
            ("info".to_string(), 2),
            ("exec".to_string(), 3),
            ("set".to_string(), 2),
            ("replconf".to_string(), 40),
        ]
        .into();
        // Only the plan's own commands count (a replica's REPLCONF ACK does not).
        let counted: BTreeSet<String> = ["get".to_string(), "set".to_string()].into();
        assert_eq!(counted_delta(&before, &after, &counted), 6);
        // Destinations are prefixed too: every key position the server knows.
        for (line, keys) in [
            ("RENAME {x}a {x}victim", vec!["kp:{x}a", "kp:{x}victim"]),
            ("COPY {x}a {x}dst", vec!["kp:{x}a", "kp:{x}dst"]),
            ("SMOVE {x}a {x}b m", vec!["kp:{x}a", "kp:{x}b"]),
        ] {
            let b = &crate::simulate::parse_batches(line).unwrap()[0];
            let p = prefixed(b, "kp");
            let got: Vec<String> = p
                .keys()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            assert_eq!(got, keys, "{line}");
        }
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.5), 3.0);
    }
}
