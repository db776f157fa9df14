//! `--apply` carried out: each step of the plan's journal (one slot) through keyplan's own
//! connections: CLUSTER SETSLOT IMPORTING on the destination and MIGRATING on the source, the
//! slot's keys moved by MIGRATE (--pipeline keys at a time), then SETSLOT NODE on the
//! destination, the source and every other master, as redis-cli does. Each step checks the
//! slot's state before it acts, so that a step cut short is finished by running it again.

use super::LiveCluster;
use super::conn::NodeConn;
use crate::migrate::apply::{
    JournalHead, check_resume, fingerprint, head_line, journal_line, owner_ids, parse_journal,
};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Keys moved by one MIGRATE unless told otherwise (redis-cli's --cluster-pipeline).
const KEYS_PER_MIGRATE: usize = crate::migrate::emit::DEFAULT_PIPELINE;

/// Why a plan could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A node or the cluster could not be read or written.
    #[error(transparent)]
    Live(#[from] super::LiveError),
    /// The cluster is not in the state the plan (or the journal) was made from.
    #[error("{0}")]
    Changed(String),
    /// The journal cannot be written or read.
    #[error("{path}: {problem}")]
    Journal {
        /// The journal.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A command failed on a node.
    #[error("{addr}: {what} failed: {reason}")]
    Node {
        /// host:port
        addr: String,
        /// The command.
        what: String,
        /// The server's words.
        reason: String,
    },
}

fn node_err(addr: &str, what: &str) -> impl Fn(redis::RedisError) -> ApplyError {
    let (addr, what) = (addr.to_string(), what.to_string());
    move |e| ApplyError::Node {
        addr: addr.clone(),
        what: what.clone(),
        reason: super::first_line(&e.to_string()),
    }
}

/// Carries out the journal's steps not yet done, writing each step's start and end to it.
pub struct Applier<'a> {
    live: &'a LiveCluster,
    head: JournalHead,
    done: Vec<bool>,
    journal: std::fs::File,
    path: PathBuf,
    keys_per_migrate: usize,
}

impl<'a> Applier<'a> {
    /// A new run: the journal at `path` is created (an existing one is refused: --resume
    /// continues it) after checking the cluster is still as `view` was read.
    pub fn start(
        live: &'a LiveCluster,
        head: JournalHead,
        path: &Path,
    ) -> Result<Applier<'a>, ApplyError> {
        let now = live.cluster_view()?;
        let now_fp = fingerprint(&owner_ids(&now));
        if now_fp != head.fingerprint {
            return Err(ApplyError::Changed(
                "the cluster's slot map changed since the plan was made (a slot moved, or a failover): nothing was applied; preview again".into(),
            ));
        }
        if !now.open.is_empty() {
            return Err(ApplyError::Changed(format!(
                "slot {} is open (migrating/importing): nothing was applied; finish or fix it first (redis-cli --cluster fix)",
                now.open[0].slot
            )));
        }
        let mut journal = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| ApplyError::Journal {
                path: path.to_path_buf(),
                problem: format!(
                    "cannot be created ({e}); to continue a run it holds, add --resume"
                ),
            })?;
        journal
            .write_all(head_line(&head).as_bytes())
            .and_then(|()| journal.sync_data())
            .map_err(|e| ApplyError::Journal {
                path: path.to_path_buf(),
                problem: e.to_string(),
            })?;
        let done = vec![false; head.steps.len()];
        Ok(Applier {
            live,
            head,
            done,
            journal,
            path: path.to_path_buf(),
            keys_per_migrate: KEYS_PER_MIGRATE,
        })
    }

    /// A run continued from the journal at `path`: the cluster must be as the journal says
    /// it left it (each slot's owner that of the plan's start with the done steps done; the
    /// step under way may be either).
    pub fn resume(live: &'a LiveCluster, path: &Path) -> Result<Applier<'a>, ApplyError> {
        let bad = |problem: String| ApplyError::Journal {
            path: path.to_path_buf(),
            problem,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
        let (head, done) = parse_journal(&text).map_err(bad)?;
        let now = live.cluster_view()?;
        if let Err(differ) = check_resume(&head, &done, &owner_ids(&now)) {
            return Err(ApplyError::Changed(format!(
                "{} slot(s) are not where the journal left them (slot {} first): the cluster changed since the run stopped; nothing was applied",
                differ.len(),
                differ[0]
            )));
        }
        let journal = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| bad(e.to_string()))?;
        Ok(Applier {
            live,
            head,
            done,
            journal,
            path: path.to_path_buf(),
            keys_per_migrate: KEYS_PER_MIGRATE,
        })
    }

    /// Keys moved by one MIGRATE (at least 1).
    pub fn keys_per_migrate(mut self, n: usize) -> Self {
        self.keys_per_migrate = n.max(1);
        self
    }

    /// Steps in the plan, and steps done.
    pub fn progress(&self) -> (usize, usize) {
        (
            self.head.steps.len(),
            self.done.iter().filter(|d| **d).count(),
        )
    }

    fn note(&mut self, step: usize, done: bool) -> Result<(), ApplyError> {
        let text = journal_line(&self.head, step, done);
        self.journal
            .write_all(text.as_bytes())
            .and_then(|()| self.journal.sync_data())
            .map_err(|e| ApplyError::Journal {
                path: self.path.clone(),
                problem: e.to_string(),
            })
    }

    fn addr_of(&self, id: &str) -> Result<&str, ApplyError> {
        self.head
            .nodes
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, a)| a.as_str())
            .ok_or_else(|| ApplyError::Changed(format!("node {id} is not in the journal")))
    }

    /// Runs every step not done, calling `tick(done, total)` after each.
    pub fn run(&mut self, mut tick: impl FnMut(usize, usize)) -> Result<(), ApplyError> {
        let total = self.head.steps.len();
        let mut conns: HashMap<String, NodeConn> = Default::default();
        for step in 0..total {
            if self.done[step] {
                continue;
            }
            self.note(step, false)?;
            let (slot, from, to) = self.head.steps[step].clone();
            self.move_slot(&mut conns, slot, &from, &to)?;
            self.note(step, true)?;
            self.done[step] = true;
            tick(self.progress().1, total);
        }
        Ok(())
    }

    fn conn<'c>(
        &self,
        conns: &'c mut HashMap<String, NodeConn>,
        addr: &str,
    ) -> Result<&'c mut NodeConn, ApplyError> {
        if !conns.contains_key(addr) {
            let (h, p) = addr
                .rsplit_once(':')
                .and_then(|(h, p)| p.parse::<u16>().ok().map(|p| (h.to_string(), p)))
                .ok_or_else(|| ApplyError::Changed(format!("{addr} is not host:port")))?;
            let c = self.live.connect(&h, p)?;
            conns.insert(addr.to_string(), c);
        }
        Ok(conns.get_mut(addr).expect("invariant: inserted above"))
    }

    /// Moves one slot, checking its state first: a slot the destination owns already and
    /// whose source holds none of its keys is only closed on every master.
    fn move_slot(
        &self,
        conns: &mut HashMap<String, NodeConn>,
        slot: u16,
        from: &str,
        to: &str,
    ) -> Result<(), ApplyError> {
        let (src, dst) = (
            self.addr_of(from)?.to_string(),
            self.addr_of(to)?.to_string(),
        );
        let (dhost, dport) = dst.rsplit_once(':').unwrap_or((&dst, "0"));
        let (dhost, dport) = (dhost.to_string(), dport.to_string());
        let owner_by = |c: &mut NodeConn, addr: &str| -> Result<Option<String>, ApplyError> {
            let text: String = redis::cmd("CLUSTER")
                .arg("NODES")
                .query(c)
                .map_err(node_err(addr, "CLUSTER NODES"))?;
            let parsed = crate::topology::nodes::parse(&text)
                .map_err(|e| ApplyError::Changed(format!("{addr}: CLUSTER NODES: {e}")))?;
            Ok(parsed.owner[usize::from(slot)]
                .and_then(|i| parsed.masters[usize::from(i)].id.clone()))
        };
        let dst_sees = owner_by(self.conn(conns, &dst)?, &dst)?;
        let src_sees = owner_by(self.conn(conns, &src)?, &src)?;
        if dst_sees.as_deref() != Some(to) {
            let r: redis::RedisResult<()> = redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("IMPORTING")
                .arg(from)
                .query(self.conn(conns, &dst)?);
            r.map_err(node_err(&dst, "CLUSTER SETSLOT IMPORTING"))?;
        }
        if src_sees.as_deref() == Some(from) {
            let r: redis::RedisResult<()> = redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("MIGRATING")
                .arg(to)
                .query(self.conn(conns, &src)?);
            r.map_err(node_err(&src, "CLUSTER SETSLOT MIGRATING"))?;
        }
        // The keys, --pipeline at a time, until the source holds none of the slot.
        loop {
            let c = self.conn(conns, &src)?;
            let keys: Vec<Vec<u8>> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(self.keys_per_migrate)
                .query(c)
                .map_err(node_err(&src, "CLUSTER GETKEYSINSLOT"))?;
            if keys.is_empty() {
                break;
            }
            let migrate = |replace: bool| {
                let mut cmd = redis::cmd("MIGRATE");
                cmd.arg(&dhost).arg(&dport).arg("").arg(0).arg(60_000);
                if replace {
                    cmd.arg("REPLACE");
                }
                // The source logs in to the destination as keyplan did.
                match (&self.live.url.username, &self.live.url.password) {
                    (Some(user), Some(password)) => {
                        cmd.arg("AUTH2").arg(user).arg(password);
                    }
                    (None, Some(password)) => {
                        cmd.arg("AUTH").arg(password);
                    }
                    _ => {}
                }
                cmd.arg("KEYS");
                for k in &keys {
                    cmd.arg(k.as_slice());
                }
                cmd
            };
            let r: redis::RedisResult<redis::Value> = migrate(false).query(c);
            match r {
                Ok(_) => {}
                // A key already on the destination (a copy a stopped run left there): the
                // source's, the one clients were served, wins, as redis-cli --cluster fix does.
                Err(e) if e.to_string().contains("BUSYKEY") => {
                    let r: redis::RedisResult<redis::Value> = migrate(true).query(c);
                    r.map_err(node_err(&src, "MIGRATE … REPLACE"))?;
                }
                Err(e) => return Err(node_err(&src, "MIGRATE")(e)),
            }
        }
        // The destination first (it then owns the slot whatever else happens), then the source,
        // then every other master, as redis-cli does.
        let mut order = vec![dst.clone(), src.clone()];
        for (_, a) in &self.head.nodes {
            if !order.contains(a) {
                order.push(a.clone());
            }
        }
        for addr in order {
            let r: redis::RedisResult<()> = redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("NODE")
                .arg(to)
                .query(self.conn(conns, &addr)?);
            r.map_err(node_err(&addr, "CLUSTER SETSLOT NODE"))?;
        }
        Ok(())
    }
}
