//! Live clusters, read-only: the topology from `CLUSTER SHARDS` (falling back to
//! `CLUSTER SLOTS`), and keys sampled from every master with `SCAN` (plus `MEMORY USAGE` for
//! bytes). Passwords never appear in any message. The one writer is `--apply` ([`apply`]),
//! which moves slots as a previewed plan says.

pub mod apply;
mod conn;
mod dump;
mod measure;
mod sample;
mod sampled;
mod verify;
pub use verify::ValueOptions;

use crate::topology::reply::{Reply, from_reply};
use crate::topology::{Node, SlotMap};
pub use conn::{MAX_REPLY_BYTES, NodeConn};
pub use dump::DumpError;
pub use measure::NodeMeasures;
use redis::Value;
pub use sample::{Sample, SampleTargets};
pub use sampled::{BIGGEST_KEYS, LiveAnalysis, LiveWeights};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why a live cluster could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The URL is not `redis://[user:pass@]host:port`.
    #[error("{0}: expected redis://[user:password@]host:port")]
    Url(String),
    /// TLS was asked for but not built in.
    #[error(
        "{0}: rediss:// needs keyplan built with the `tls` feature (cargo install --features tls)"
    )]
    NoTls(String),
    /// Connecting failed.
    #[error("cannot connect to {addr}: {reason}")]
    Connect {
        /// host:port
        addr: String,
        /// What went wrong.
        reason: String,
    },
    /// The server refused the credentials.
    #[error(
        "{addr} refused the credentials: {reason} (set the password in the URL or REDISCLI_AUTH)"
    )]
    Auth {
        /// host:port
        addr: String,
        /// The server's words.
        reason: String,
    },
    /// The server wants a password and none was given.
    #[error(
        "{addr} requires a password, and none was given: put it in the URL (redis://user:password@host:port, or redis://:password@host:port for the default user) or in the REDISCLI_AUTH environment variable"
    )]
    NoPassword {
        /// host:port
        addr: String,
    },
    /// Something answers on the port, but not in the Redis protocol.
    #[error(
        "{addr} does not speak the Redis protocol (RESP): check that the port is a Redis or Valkey server's"
    )]
    NotResp {
        /// host:port
        addr: String,
    },
    /// The server is not in cluster mode.
    #[error(
        "{addr} is not a Redis Cluster node (cluster support is disabled); analyze a standalone server's keys with a dump and --masters 1"
    )]
    NotCluster {
        /// host:port
        addr: String,
    },
    /// A command failed on a node.
    #[error("{addr}: {what} failed: {reason}{}", if *.sampled > 0 { format!(" (after {} keys were sampled from it)", .sampled) } else { String::new() })]
    Node {
        /// host:port
        addr: String,
        /// What was being done.
        what: String,
        /// The error.
        reason: String,
        /// Keys already sampled from this node.
        sampled: u64,
    },
    /// The cluster's slot map is unusable.
    #[error("the cluster's slot map: {0}")]
    Topology(String),
    /// Slots changed owner while keys were sampled (a failover or a reshard).
    #[error(
        "the slot map changed while keys were sampled ({0} slot(s) changed owner: a failover or a reshard): the sample would count some keys twice and miss others; run again once the cluster is stable (CLUSTER INFO cluster_state:ok, no slot migrating)"
    )]
    Unstable(usize),
}

/// A parsed `--cluster` URL.
#[derive(Clone)]
pub struct ClusterUrl {
    /// Seed host.
    pub host: String,
    /// Seed port.
    pub port: u16,
    username: Option<String>,
    password: Option<String>,
    /// `rediss://`.
    pub tls: bool,
}

impl std::fmt::Debug for ClusterUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for ClusterUrl {
    /// The URL with the password masked.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "rediss" } else { "redis" };
        // An IPv6 address is written in brackets, as the URL gives it.
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let port = self.port;
        match (&self.username, &self.password) {
            (Some(u), Some(_)) => write!(f, "{scheme}://{u}:***@{host}:{port}"),
            (None, Some(_)) => write!(f, "{scheme}://:***@{host}:{port}"),
            (Some(u), None) => write!(f, "{scheme}://{u}@{host}:{port}"),
            (None, None) => write!(f, "{scheme}://{host}:{port}"),
        }
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (
                (b[i + 1] as char).to_digit(16),
                (b[i + 2] as char).to_digit(16),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl ClusterUrl {
    /// Parses `redis://[user:password@]host[:port]`; `env_password` (REDISCLI_AUTH) is used
    /// when the URL has none.
    pub fn parse(url: &str, env_password: Option<String>) -> Result<ClusterUrl, LiveError> {
        let masked = || {
            // Never echo a password back, even in an error.
            match url.rsplit_once('@') {
                Some((_, host)) => format!("…@{host}"),
                None => url.to_string(),
            }
        };
        let (tls, rest) = if let Some(r) = url.strip_prefix("redis://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("rediss://") {
            (true, r)
        } else {
            return Err(LiveError::Url(masked()));
        };
        let rest = rest.trim_end_matches('/');
        let (auth, hostport) = match rest.rsplit_once('@') {
            Some((a, h)) => (Some(a), h),
            None => (None, rest),
        };
        let (username, password) = match auth {
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (
                    Some(percent_decode(u)).filter(|u| !u.is_empty()),
                    Some(percent_decode(p)),
                ),
                None => (Some(percent_decode(a)).filter(|u| !u.is_empty()), None),
            },
            None => (None, None),
        };
        let password = password
            .filter(|p| !p.is_empty())
            .or(env_password.filter(|p| !p.is_empty()));
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (h, p.parse::<u16>().map_err(|_| LiveError::Url(masked()))?),
            None => (hostport, 6379),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(LiveError::Url(masked()));
        }
        if tls && !cfg!(feature = "tls") {
            return Err(LiveError::NoTls(masked()));
        }
        Ok(ClusterUrl {
            host: host.to_string(),
            port,
            username,
            password,
            tls,
        })
    }
}

/// How keys are sampled.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Keys per master (`None`: all).
    pub per_node: Option<u64>,
    /// `SCAN … MATCH` pattern.
    pub pattern: Option<String>,
    /// Commands per second per node (`None`: unlimited).
    pub rate: Option<f64>,
    /// Also read `MEMORY USAGE` of every key.
    pub bytes: bool,
    /// Also read `OBJECT FREQ` of every key (its LFU access counter; the server must run an
    /// LFU `maxmemory-policy`).
    pub heat: bool,
    /// `SCAN … COUNT`.
    pub count: u64,
    /// Read from replicas: master address → the replica to scan instead (READONLY is sent).
    pub replicas: Option<std::collections::BTreeMap<String, String>>,
    /// Set to stop every scan at its next SCAN call (another node failed).
    pub cancel: Arc<AtomicBool>,
}

impl ScanOptions {
    fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            per_node: Some(10_000),
            pattern: None,
            rate: None,
            bytes: false,
            heat: false,
            count: 1000,
            replicas: None,
            cancel: Arc::default(),
        }
    }
}

/// A read-only view of a running cluster.
#[derive(Debug, Clone)]
pub struct LiveCluster {
    url: ClusterUrl,
    timeout: Duration,
    allow_partial: bool,
}

fn to_reply(v: &Value) -> Reply {
    match v {
        Value::Nil => Reply::Nil,
        Value::Int(i) => Reply::Int(*i),
        Value::BulkString(b) => Reply::Str(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Reply::Str(s.clone()),
        Value::Okay => Reply::Str("OK".into()),
        Value::Array(a) | Value::Set(a) => Reply::Array(a.iter().map(to_reply).collect()),
        Value::Map(m) => Reply::Map(m.iter().map(|(k, v)| (to_reply(k), to_reply(v))).collect()),
        Value::Double(d) => Reply::Str(d.to_string()),
        Value::Boolean(b) => Reply::Int(*b as i64),
        Value::VerbatimString { text, .. } => Reply::Str(text.clone()),
        Value::Attribute { data, .. } => to_reply(data),
        _ => Reply::Nil,
    }
}

impl LiveCluster {
    /// A view through the seed node of `url`.
    pub fn new(url: ClusterUrl) -> LiveCluster {
        LiveCluster {
            url,
            timeout: Duration::from_secs(10),
            allow_partial: false,
        }
    }

    /// How long to wait for a node to connect or answer (10 s by default).
    pub fn timeout(mut self, t: Duration) -> LiveCluster {
        self.timeout = t;
        self
    }

    /// Accept a slot map whose slots are not all served (`--allow-partial`): the uncovered
    /// slots are reported instead of refused.
    pub fn allow_partial(mut self, yes: bool) -> LiveCluster {
        self.allow_partial = yes;
        self
    }

    pub(crate) fn connect(&self, host: &str, port: u16) -> Result<NodeConn, LiveError> {
        let addr = format!("{host}:{port}");
        let opened = NodeConn::open(
            host,
            port,
            self.url.tls,
            self.timeout,
            self.url.username.as_deref(),
            self.url.password.as_deref(),
        );
        let mut con = opened.map_err(|e| {
            let reason = e.to_string();
            if is_not_resp(&reason) {
                LiveError::NotResp { addr: addr.clone() }
            } else if reason.contains("NOAUTH") {
                LiveError::NoPassword { addr: addr.clone() }
            } else if reason.contains("WRONGPASS")
                || reason.contains("NOAUTH")
                || reason.contains("invalid password")
                || reason.contains("Authentication")
            {
                LiveError::Auth {
                    addr: addr.clone(),
                    reason: first_line(&reason),
                }
            } else {
                LiveError::Connect {
                    addr: addr.clone(),
                    reason: first_line(&reason),
                }
            }
        })?;
        let _ = con.set_read_timeout(Some(self.timeout));
        let _ = con.set_write_timeout(Some(self.timeout));
        // A server that wants a password accepts the connection and refuses every command:
        // say so now, not at whatever command comes first.
        if let Err(e) = redis::cmd("PING").query::<()>(&mut con) {
            let reason = e.to_string();
            return Err(if reason.contains("NOAUTH") {
                LiveError::NoPassword { addr }
            } else if is_not_resp(&reason) {
                LiveError::NotResp { addr }
            } else if reason.contains("keyplan stopped reading it") {
                // Connected: the reply to PING was past the protocol's limits.
                LiveError::Node {
                    addr,
                    what: "PING".into(),
                    reason: first_line(&reason),
                    sampled: 0,
                }
            } else {
                LiveError::Connect {
                    addr,
                    reason: first_line(&reason),
                }
            });
        }
        Ok(con)
    }

    /// The cluster's slot map, from the seed node.
    pub fn topology(&self) -> Result<SlotMap, LiveError> {
        let addr = format!("{}:{}", self.url.host, self.url.port);
        let mut con = self.connect(&self.url.host, self.url.port)?;
        let shards: Result<Value, _> = redis::cmd("CLUSTER").arg("SHARDS").query(&mut con);
        let reply = match shards {
            Ok(v) => to_reply(&v),
            Err(e) if e.to_string().contains("cluster support disabled") => {
                return Err(LiveError::NotCluster { addr });
            }
            Err(_) => {
                // Older servers (< 7.0) have no CLUSTER SHARDS.
                let v: Value = redis::cmd("CLUSTER")
                    .arg("SLOTS")
                    .query(&mut con)
                    .map_err(cluster_command_error(&addr, "CLUSTER SLOTS"))?;
                to_reply(&v)
            }
        };
        let mut map = from_reply(&reply, self.allow_partial, &self.url.host)
            .map_err(|e| LiveError::Topology(format!("as {addr} sent it: {e}")))?;
        let migrations = self.migration_markers(map.nodes());
        map.migrations = migrations;
        Ok(map)
    }

    /// One per-key command for `key` on the node `to`, after ASKING: a key of a slot in
    /// migration, on the node that holds it now.
    fn ask_once(
        &self,
        to: &str,
        key: &[u8],
        cmd: &dyn Fn(&mut redis::Pipeline, &[u8]),
    ) -> Result<Value, LiveError> {
        let (host, port) = host_port(to)?;
        let mut con = self.connect(&host, port)?;
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        pipe.cmd("ASKING").ignore();
        cmd(&mut pipe, key);
        let mut replies: Vec<Value> = pipe
            .query(&mut con)
            .map_err(node_error(to, "a key in migration"))?;
        Ok(match replies.pop() {
            Some(Value::ServerError(_)) | None => Value::Nil,
            Some(v) => v,
        })
    }

    /// The slots in migration, from every node of `nodes`: each master lists only its own
    /// markers (`[slot->-id]`, `[slot-<-id]`) in CLUSTER NODES. A node that cannot be asked is
    /// passed over (what needs it reports it).
    pub fn migration_markers(&self, nodes: &[Node]) -> Vec<crate::topology::Migration> {
        let mut migrations: Vec<crate::topology::Migration> = Vec::new();
        for n in nodes {
            let Some(Ok((h, p))) = n.address.as_deref().map(host_port) else {
                continue;
            };
            let Ok(mut c) = self.connect(&h, p) else {
                continue;
            };
            let Ok(text) = redis::cmd("CLUSTER").arg("NODES").query::<String>(&mut c) else {
                continue;
            };
            if let Ok(parsed) = crate::topology::nodes::parse(&text) {
                for m in parsed.migrations {
                    if !migrations.contains(&m) {
                        migrations.push(m);
                    }
                }
            }
        }
        migrations.sort_by(|a, b| (a.slot, &a.node).cmp(&(b.slot, &b.node)));
        migrations
    }

    /// For every master, a replica to read from (the first healthy one in `CLUSTER NODES`):
    /// master address → replica address.
    pub fn replica_map(&self) -> Result<std::collections::BTreeMap<String, String>, LiveError> {
        let text = self.cluster_nodes()?;
        let parsed = crate::topology::nodes::parse(&text).map_err(|e| {
            LiveError::Topology(format!(
                "CLUSTER NODES as {}:{} sent it: {e}",
                self.url.host, self.url.port
            ))
        })?;
        let mut out = std::collections::BTreeMap::new();
        for l in &parsed.lines {
            let healthy = !l
                .flags
                .iter()
                .any(|f| f == "fail" || f == "fail?" || f == "noaddr")
                && l.link_state == "connected";
            let (Some(m), Some(addr)) = (&l.master_of, &l.address) else {
                continue;
            };
            if !healthy {
                continue;
            }
            if let Some(master) = parsed.lines.iter().find(|x| &x.id == m)
                && let Some(maddr) = &master.address
            {
                out.entry(maddr.clone()).or_insert_with(|| addr.clone());
            }
        }
        Ok(out)
    }

    /// The URL, password masked.
    pub fn url_text(&self) -> String {
        self.url.to_string()
    }

    /// The seed node's `CLUSTER NODES` reply: the view `redis-cli --cluster` starts from (the
    /// seed first, then the other nodes in the reply's order).
    pub fn cluster_nodes(&self) -> Result<String, LiveError> {
        let addr = format!("{}:{}", self.url.host, self.url.port);
        let mut con = self.connect(&self.url.host, self.url.port)?;
        let v: Value = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut con)
            .map_err(cluster_command_error(&addr, "CLUSTER NODES"))?;
        match to_reply(&v) {
            Reply::Str(s) => Ok(with_host(&s, &self.url.host)),
            _ => Err(LiveError::Node {
                addr,
                what: "CLUSTER NODES".into(),
                reason: "the reply is not text".into(),
                sampled: 0,
            }),
        }
    }

    /// Scans one master, calling `f(key, bytes)` for every sampled key. Returns keys sampled.
    pub fn scan_node(
        &self,
        node: &Node,
        opts: &ScanOptions,
        mut f: impl FnMut(&[u8], Option<u64>, Option<f64>),
    ) -> Result<u64, LiveError> {
        let (addr, host, port) = node_address(node)?;
        // A master without a healthy replica is sampled itself (the caller warns).
        let replica = opts.replicas.as_ref().and_then(|m| m.get(&addr));
        let (addr, host, port) = match replica {
            None => (addr, host, port),
            Some(r) => {
                let (h, p) = host_port(r)?;
                (r.clone(), h, p)
            }
        };
        let mut con = self.connect(&host, port)?;
        if replica.is_some() {
            // Replicas serve reads of their slots (MEMORY USAGE) only after READONLY.
            redis::cmd("READONLY")
                .query::<()>(&mut con)
                .map_err(node_error(&addr, "READONLY"))?;
        }
        if opts.heat {
            // OBJECT FREQ answers only under an LFU policy: say which policy runs instead.
            let info: String = redis::cmd("INFO")
                .arg("memory")
                .query(&mut con)
                .map_err(node_error(&addr, "INFO memory"))?;
            let policy = info
                .lines()
                .find_map(|l| l.strip_prefix("maxmemory_policy:"))
                .unwrap_or("unknown")
                .trim()
                .to_string();
            if !policy.contains("lfu") {
                return Err(LiveError::Node {
                    addr: addr.clone(),
                    what: "--heat (OBJECT FREQ)".into(),
                    reason: format!(
                        "its maxmemory-policy is {policy}, and OBJECT FREQ needs an LFU policy (allkeys-lfu or volatile-lfu): drop --heat, or run the cluster with an LFU policy"
                    ),
                    sampled: 0,
                });
            }
        }
        let mut cursor: u64 = 0;
        let mut sampled: u64 = 0;
        let started = Instant::now();
        // A server whose cursor never comes back to 0 would keep a scan going forever.
        let mut empty_pages: u64 = 0;
        // Cursors this scan was given: one that comes back is a cycle (a server repeating
        // pages), which would keep the scan going forever too.
        let mut cursors_seen: std::collections::HashSet<u64> = std::collections::HashSet::new();
        let mut commands: u64 = 0;
        let budget = opts.per_node.unwrap_or(u64::MAX);
        // A sample smaller than the node is drawn at random (RANDOMKEY, repeats dropped): a
        // simple random sample, which the byte estimates' intervals assume. SCAN's first keys
        // are not one: they are the same keys on every run, and on servers that keep a table
        // per slot (Redis 7.4+, Valkey 8) they come from the lowest slots. A MATCH pattern
        // needs SCAN.
        let mut draw = if opts.pattern.is_none() && opts.per_node.is_some() {
            let size: u64 = redis::cmd("DBSIZE")
                .query(&mut con)
                .map_err(node_error(&addr, "DBSIZE"))?;
            commands += 1;
            (size > budget).then(|| RandomDraw::new(budget))
        } else {
            None
        };
        loop {
            if opts.is_cancelled() {
                break;
            }
            if let Some(d) = &mut draw {
                // At most a tenth of a second's commands in one go, as for the per-key ones.
                let page = d.page(
                    opts.rate
                        .map_or(opts.count, |r| ((r / 10.0) as u64).max(1))
                        .min(opts.count),
                );
                let mut pipe = redis::pipe();
                for _ in 0..page {
                    pipe.cmd("RANDOMKEY");
                }
                pace(opts.rate, commands, started);
                let drawn: Vec<Option<Vec<u8>>> = pipe
                    .query(&mut con)
                    .map_err(|e| randomkey_error(&addr, sampled, e))?;
                commands += page;
                let keys = d.take(drawn);
                let done = d.done();
                sampled += self.sample_keys(
                    &mut con,
                    &addr,
                    &keys,
                    opts,
                    started,
                    sampled,
                    &mut commands,
                    &mut f,
                )?;
                if done {
                    break;
                }
                continue;
            }
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(cursor);
            if let Some(p) = &opts.pattern {
                cmd.arg("MATCH").arg(p);
            }
            cmd.arg("COUNT").arg(opts.count);
            let (next, keys): (u64, Vec<Vec<u8>>) = cmd
                .query(&mut con)
                .map_err(sampling_error(&addr, "SCAN", sampled))?;
            commands += 1;
            if keys.is_empty() {
                empty_pages += 1;
                if next != 0 && (next == cursor || empty_pages > MAX_EMPTY_PAGES) {
                    return Err(LiveError::Node {
                        addr: addr.clone(),
                        what: "SCAN".into(),
                        reason: format!(
                            "the scan makes no progress (cursor {next} after {empty_pages} empty pages in a row): the server does not end its SCAN"
                        ),
                        sampled,
                    });
                }
            } else {
                empty_pages = 0;
            }
            if next != 0 && !cursors_seen.insert(next) {
                return Err(LiveError::Node {
                    addr: addr.clone(),
                    what: "SCAN".into(),
                    reason: format!(
                        "the scan makes no progress: the server gave cursor {next} a second time, so it repeats its pages and would never end the SCAN"
                    ),
                    sampled,
                });
            }
            let take = keys.len().min((budget - sampled) as usize);
            let keys = &keys[..take];
            sampled += self.sample_keys(
                &mut con,
                &addr,
                keys,
                opts,
                started,
                sampled,
                &mut commands,
                &mut f,
            )?;
            cursor = next;
            if cursor == 0 || sampled >= budget {
                break;
            }
            pace(opts.rate, commands, started);
        }
        Ok(sampled)
    }

    /// Reads what was asked of each sampled key (`MEMORY USAGE`, `OBJECT FREQ`, at the rate
    /// allowed) and hands it to `f`. Returns how many keys it handed.
    #[allow(clippy::too_many_arguments)]
    fn sample_keys(
        &self,
        con: &mut NodeConn,
        addr: &str,
        keys: &[Vec<u8>],
        opts: &ScanOptions,
        started: Instant,
        sampled: u64,
        commands: &mut u64,
        f: &mut impl FnMut(&[u8], Option<u64>, Option<f64>),
    ) -> Result<u64, LiveError> {
        let addr = addr.to_string();
        // Per-key commands go in chunks of a tenth of a second's budget, each sent when
        // the rate allows it: the rate holds in every second, not only on average.
        let chunk = opts
            .rate
            .map_or(keys.len().max(1), |r| ((r / 10.0) as usize).max(1));
        let throttle = |commands: u64| pace(opts.rate, commands, started);
        let mut per_key = |what: &str,
                           cmd: &dyn Fn(&mut redis::Pipeline, &[u8]),
                           commands: &mut u64|
         -> Result<Vec<Value>, LiveError> {
            let mut out = Vec::with_capacity(keys.len());
            for part in keys.chunks(chunk) {
                throttle(*commands);
                let mut pipe = redis::pipe();
                pipe.ignore_errors();
                for k in part {
                    cmd(&mut pipe, k);
                }
                *commands += part.len() as u64;
                let replies: Vec<Value> = pipe
                    .query(con)
                    .map_err(sampling_error(&addr, what, sampled))?;
                for (k, v) in part.iter().zip(replies) {
                    // A key of a slot in migration may have moved since SCAN: the node
                    // answers ASK (or MOVED), and the key is asked where it is now.
                    let v = match v {
                        Value::ServerError(e) if e.code() == "ASK" => {
                            match e.details().and_then(|d| d.split(' ').nth(1)) {
                                Some(to) => self.ask_once(to, k, cmd)?,
                                None => Value::Nil,
                            }
                        }
                        // An importing node holds keys of a slot it does not own yet: it
                        // answers them after ASKING.
                        Value::ServerError(e) if e.code() == "MOVED" => {
                            self.ask_once(&addr, k, cmd)?
                        }
                        Value::ServerError(e) => {
                            return Err(LiveError::Node {
                                addr: addr.clone(),
                                what: what.into(),
                                reason: first_line(&e.to_string()),
                                sampled,
                            });
                        }
                        v => v,
                    };
                    out.push(v);
                }
            }
            Ok(out)
        };
        let sizes: Vec<Option<u64>> = if opts.bytes && !keys.is_empty() {
            per_key(
                "MEMORY USAGE",
                &|p, k| {
                    p.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
                },
                commands,
            )?
            .into_iter()
            .map(|v| match v {
                Value::Int(n) => u64::try_from(n).ok(),
                _ => None,
            })
            .collect()
        } else {
            vec![None; keys.len()]
        };
        let heat: Vec<Option<f64>> = if opts.heat && !keys.is_empty() {
            // A key gone since SCAN answers nil or an error: no heat for it.
            per_key(
                "OBJECT FREQ",
                &|p, k| {
                    p.cmd("OBJECT").arg("FREQ").arg(k);
                },
                commands,
            )?
            .into_iter()
            .map(|v| match v {
                Value::Int(n) => Some(n as f64),
                _ => None,
            })
            .collect()
        } else {
            vec![None; keys.len()]
        };
        for ((k, b), h) in keys.iter().zip(sizes).zip(heat) {
            f(k, b, h);
        }
        Ok(keys.len() as u64)
    }
}

impl LiveCluster {
    /// Every slot's key count (16384 entries), asking each master of `owners` for the slots it
    /// owns ([`LiveCluster::slot_key_counts`]); slots no master owns count 0. A slot in
    /// `migrations` has keys on two nodes until it is handed over: the keys already moved are
    /// counted on the importing node (unless it owns the slot already).
    pub fn exact_slot_keys(
        &self,
        owners: &[(Node, Vec<u16>)],
        migrations: &[crate::topology::Migration],
    ) -> Result<Vec<u64>, LiveError> {
        use crate::topology::MigrationDirection;
        let mut counts = vec![0u64; crate::slot::SLOT_COUNT];
        let mut owner: Vec<Option<&str>> = vec![None; crate::slot::SLOT_COUNT];
        for (node, slots) in owners.iter().filter(|(_, s)| !s.is_empty()) {
            for (s, c) in slots.iter().zip(self.slot_key_counts(node, slots)?) {
                counts[usize::from(*s)] = c;
                owner[usize::from(*s)] = node.address.as_deref();
            }
        }
        // Importing node → the slots whose moved keys it holds.
        let mut importing: std::collections::BTreeMap<&str, Vec<u16>> = Default::default();
        for m in migrations {
            let to = match m.direction {
                MigrationDirection::Importing => m.node.as_str(),
                MigrationDirection::Migrating => m.peer.as_str(),
            };
            if host_port(to).is_err() {
                continue;
            }
            let slots = importing.entry(to).or_default();
            if owner[usize::from(m.slot)] != Some(to) && !slots.contains(&m.slot) {
                slots.push(m.slot);
            }
        }
        for (to, slots) in importing.into_iter().filter(|(_, s)| !s.is_empty()) {
            let node = Node {
                name: to.to_string(),
                id: None,
                address: Some(to.to_string()),
                flags: Vec::new(),
                replicas: 0,
            };
            for (s, c) in slots.iter().zip(self.slot_key_counts(&node, &slots)?) {
                counts[usize::from(*s)] += c;
            }
        }
        Ok(counts)
    }

    /// The number of keys the master `node` holds in each of `slots`: `CLUSTER SLOT-STATS
    /// SLOTSRANGE` where the server has it (Valkey 8+, Redis 8.2+), else `CLUSTER
    /// COUNTKEYSINSLOT` pipelined. The servers' exact figures, whatever is sampled.
    pub fn slot_key_counts(&self, node: &Node, slots: &[u16]) -> Result<Vec<u64>, LiveError> {
        let addr = node.address.clone().unwrap_or_else(|| node.name.clone());
        let (host, port) = host_port(&addr)?;
        let mut con = self.connect(&host, port)?;
        // Valkey 8+ and Redis 8.2+ answer a whole range at once.
        let stats_error = |reason: String| LiveError::Node {
            addr: addr.clone(),
            what: "CLUSTER SLOT-STATS".into(),
            reason,
            sampled: 0,
        };
        if let Some(counts) = slot_stats_key_counts(&mut con, slots).map_err(stats_error)? {
            return Ok(counts);
        }
        let mut out = Vec::with_capacity(slots.len());
        for chunk in slots.chunks(1024) {
            let mut pipe = redis::pipe();
            for s in chunk {
                pipe.cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(*s);
            }
            let counts: Vec<i64> = pipe
                .query(&mut con)
                .map_err(node_error(&addr, "CLUSTER COUNTKEYSINSLOT"))?;
            for (s, n) in chunk.iter().zip(counts) {
                match u64::try_from(n) {
                    Ok(x) if x <= MAX_PLAUSIBLE_KEYS => out.push(x),
                    _ => {
                        return Err(LiveError::Node {
                            addr: addr.clone(),
                            what: "CLUSTER COUNTKEYSINSLOT".into(),
                            reason: format!(
                                "it says slot {s} holds {n} keys, which no server counts (negative, or more than {MAX_PLAUSIBLE_KEYS}): a broken server or a proxy in the way"
                            ),
                            sampled: 0,
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    /// Per-slot load from every master of `owners` (`CLUSTER SLOT-STATS`), or `None` when a
    /// server does not count CPU per slot (Redis before 8.2, Valkey without
    /// `cluster-slot-stats-enabled yes`). With `window`, the counters are read twice and the
    /// difference kept (a slot whose counters went down changed owner meanwhile: its second
    /// reading is kept).
    pub fn slot_load(
        &self,
        owners: &[(Node, Vec<u16>)],
        window: Option<std::time::Duration>,
    ) -> Result<Option<SlotLoad>, LiveError> {
        let read = |owners: &[(Node, Vec<u16>)]| -> Result<Option<Vec<[u64; 4]>>, LiveError> {
            let mut out = vec![[0u64; 4]; crate::slot::SLOT_COUNT];
            let mut memory = false;
            for (node, slots) in owners.iter().filter(|(_, s)| !s.is_empty()) {
                let addr = node.address.clone().unwrap_or_else(|| node.name.clone());
                let (host, port) = host_port(&addr)?;
                let mut con = self.connect(&host, port)?;
                let Some(stats) =
                    slot_stats(&mut con, slots).map_err(|reason| LiveError::Node {
                        addr: addr.clone(),
                        what: "CLUSTER SLOT-STATS".into(),
                        reason,
                        sampled: 0,
                    })?
                else {
                    return Ok(None);
                };
                for (s, f) in slots.iter().zip(&stats) {
                    let Some(&cpu) = f.get("cpu-usec") else {
                        return Ok(None);
                    };
                    let m = f.get("memory-bytes").copied();
                    memory |= m.is_some();
                    out[usize::from(*s)] = [
                        cpu,
                        f.get("network-bytes-in").copied().unwrap_or(0),
                        f.get("network-bytes-out").copied().unwrap_or(0),
                        m.unwrap_or(u64::MAX),
                    ];
                }
            }
            if !memory {
                for x in &mut out {
                    x[3] = u64::MAX;
                }
            }
            Ok(Some(out))
        };
        let Some(first) = read(owners)? else {
            return Ok(None);
        };
        let (values, since) = match window {
            None => (
                first,
                "the counters as they stand: since each node started or last reset its statistics (CONFIG RESETSTAT), and since each slot last changed owner".to_string(),
            ),
            Some(w) => {
                std::thread::sleep(w);
                let Some(second) = read(owners)? else {
                    return Ok(None);
                };
                let delta = first
                    .iter()
                    .zip(&second)
                    .map(|(a, b)| {
                        let mut d = [0u64; 4];
                        for i in 0..3 {
                            d[i] = if b[i] >= a[i] { b[i] - a[i] } else { b[i] };
                        }
                        // Memory is a level, not a counter: the second reading.
                        d[3] = b[3];
                        d
                    })
                    .collect();
                (delta, format!("the {:.0} s window keyplan measured (--window)", w.as_secs_f64()))
            }
        };
        let memory = (values.first().is_some_and(|v| v[3] != u64::MAX))
            .then(|| values.iter().map(|v| v[3]).collect());
        Ok(Some(SlotLoad {
            cpu_usec: values.iter().map(|v| v[0]).collect(),
            net_in: values.iter().map(|v| v[1]).collect(),
            net_out: values.iter().map(|v| v[2]).collect(),
            memory,
            since,
        }))
    }

    /// One `INFO` section of `node`, with the address asked.
    fn info_section(&self, node: &Node, section: &str) -> Result<(String, String), LiveError> {
        let addr = node.address.clone().unwrap_or_else(|| node.name.clone());
        let (host, port) = host_port(&addr)?;
        let mut con = self.connect(&host, port)?;
        let info: String = redis::cmd("INFO")
            .arg(section)
            .query(&mut con)
            .map_err(node_error(&addr, &format!("INFO {section}")))?;
        Ok((addr, info))
    }

    /// What to do so that `node`'s server counts load per slot, read from its `INFO server`:
    /// the setting to turn on where the server has `CLUSTER SLOT-STATS` (Valkey 8+, Redis
    /// 8.2+), else the version it needs.
    pub fn slot_stats_advice(&self, node: &Node) -> String {
        match self.info_section(node, "server") {
            Ok((addr, info)) => slot_stats_advice(&addr, &info),
            Err(_) => {
                "that needs Valkey 8+ or Redis 8.2+ with cluster-slot-stats-enabled yes".to_string()
            }
        }
    }

    /// The time `node` spent in commands, from `INFO commandstats` (node level: what a server
    /// without per-slot load can say).
    pub fn node_command_time(&self, node: &Node) -> Result<NodeCommandTime, LiveError> {
        let (_, info) = self.info_section(node, "commandstats")?;
        let mut t = NodeCommandTime { usec: 0, calls: 0 };
        for l in info.lines().filter(|l| l.starts_with("cmdstat_")) {
            let field = |name: &str| {
                l.split([':', ','])
                    .find_map(|f| f.strip_prefix(name)?.parse::<u64>().ok())
            };
            t.usec += field("usec=").unwrap_or(0);
            t.calls += field("calls=").unwrap_or(0);
        }
        Ok(t)
    }

    /// The bytes of data the master `node` holds, as it reports them (`INFO memory`,
    /// `used_memory_dataset`).
    pub fn dataset_bytes(&self, node: &Node) -> Result<u64, LiveError> {
        let (addr, info) = self.info_section(node, "memory")?;
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory_dataset:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| LiveError::Node {
                addr,
                what: "INFO memory".into(),
                reason: "no used_memory_dataset field".into(),
                sampled: 0,
            })
    }

    /// What `node` says of each of `keys` (which it should own): type, encoding, element
    /// count (a string's length) and whether it expires; `None` for a key it no longer holds.
    pub fn describe_keys(
        &self,
        node: &Node,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<crate::analyze::snapshot::KeyFacts>>, LiveError> {
        let (addr, host, port) = node_address(node)?;
        let mut con = self.connect(&host, port)?;
        const LENGTHS: [(&str, &str); 6] = [
            ("string", "STRLEN"),
            ("list", "LLEN"),
            ("set", "SCARD"),
            ("zset", "ZCARD"),
            ("hash", "HLEN"),
            ("stream", "XLEN"),
        ];
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(64) {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for k in chunk {
                pipe.cmd("TYPE").arg(*k);
                pipe.cmd("OBJECT").arg("ENCODING").arg(*k);
                pipe.cmd("PTTL").arg(*k);
                for (_, cmd) in LENGTHS {
                    pipe.cmd(cmd).arg(*k);
                }
            }
            let replies: Vec<Value> = pipe.query(&mut con).map_err(node_error(
                &addr,
                "TYPE/OBJECT ENCODING of the biggest sampled keys",
            ))?;
            for r in replies.chunks(3 + LENGTHS.len()) {
                let text = |v: &Value| match v {
                    Value::SimpleString(s) => Some(s.clone()),
                    Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
                    _ => None,
                };
                let int = |v: &Value| match v {
                    Value::Int(i) => Some(*i),
                    _ => None,
                };
                let kind = r.first().and_then(text).filter(|t| t != "none");
                out.push(kind.map(|kind| {
                    let elements = LENGTHS
                        .iter()
                        .position(|(t, _)| *t == kind)
                        .and_then(|i| r.get(3 + i).and_then(int))
                        .and_then(|n| u64::try_from(n).ok());
                    crate::analyze::snapshot::KeyFacts {
                        encoding: r.get(1).and_then(text).unwrap_or_default(),
                        expires: r.get(2).and_then(int).is_some_and(|t| t >= 0),
                        kind,
                        elements,
                    }
                }));
            }
        }
        Ok(out)
    }

    /// Samples `nodes` at once, one thread each, feeding node `i`'s keys (with their bytes
    /// when asked) to `sinks[i]`. The first node to fail stops the others at their next SCAN
    /// call, and its error is returned: a report never silently lacks a node.
    pub fn scan_nodes<S: Send>(
        &self,
        nodes: &[Node],
        opts: &ScanOptions,
        sinks: &mut [S],
        f: impl Fn(&mut S, &[u8], Option<u64>, Option<f64>) + Sync,
    ) -> Result<u64, LiveError> {
        assert_eq!(nodes.len(), sinks.len(), "one sink per node");
        let results: Vec<Result<u64, LiveError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = sinks
                .iter_mut()
                .zip(nodes)
                .map(|(sink, node)| {
                    let f = &f;
                    scope.spawn(move || {
                        let r = self.scan_node(node, opts, |k, b, h| f(sink, k, b, h));
                        if r.is_err() {
                            opts.cancel.store(true, Ordering::Relaxed);
                        }
                        r
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("invariant: sampling threads do not panic"))
                .collect()
        });
        let mut total = 0;
        for r in results {
            total += r?;
        }
        Ok(total)
    }
}

/// Maps the error of a `CLUSTER …` command on `addr`: a server without cluster support, or
/// the command failing there.
/// A command `what` that failed on the node at `addr` (before any key was sampled from it).
fn node_error<'a>(addr: &'a str, what: &'a str) -> impl Fn(redis::RedisError) -> LiveError + 'a {
    sampling_error(addr, what, 0)
}

/// [`node_error`] after `sampled` keys were sampled.
fn sampling_error<'a>(
    addr: &'a str,
    what: &'a str,
    sampled: u64,
) -> impl Fn(redis::RedisError) -> LiveError + 'a {
    move |e| LiveError::Node {
        addr: addr.to_string(),
        what: what.to_string(),
        reason: first_line(&e.to_string()),
        sampled,
    }
}

/// A node that refuses the RANDOMKEY a sample is drawn with (an ACL without it, a renamed
/// command): one line naming the node, the server's first refusal and what to do, where the
/// pipeline's error lists every refusal.
fn randomkey_error(addr: &str, sampled: u64, e: redis::RedisError) -> LiveError {
    if e.is_io_error() || e.is_timeout() {
        return sampling_error(addr, "RANDOMKEY", sampled)(e);
    }
    let refusals = e.clone().into_server_errors();
    let (count, words) = match refusals.as_deref() {
        Some([(_, first), ..]) => (refusals.as_deref().map_or(1, <[_]>::len), first.to_string()),
        _ => (1, e.to_string()),
    };
    let mut words = first_line(&words);
    if words.chars().count() > 160 {
        words = words.chars().take(160).collect::<String>() + "…";
    }
    LiveError::Node {
        addr: addr.to_string(),
        what: "RANDOMKEY".into(),
        reason: format!(
            "the node refused it{} ({words}): a sample smaller than a node is drawn with RANDOMKEY, so allow it for this user (ACL SETUSER <user> +randomkey), or read the keys with SCAN instead (--sample all, or --match PATTERN)",
            if count > 1 {
                format!(" {count} times")
            } else {
                String::new()
            }
        ),
        sampled,
    }
}

fn cluster_command_error<'a>(
    addr: &'a str,
    what: &'a str,
) -> impl Fn(redis::RedisError) -> LiveError + 'a {
    move |e| {
        if e.to_string().contains("cluster support disabled") {
            LiveError::NotCluster {
                addr: addr.to_string(),
            }
        } else {
            node_error(addr, what)(e)
        }
    }
}

/// Each of `slots`' key count from `CLUSTER SLOT-STATS SLOTSRANGE` over their contiguous
/// ranges, or `None` when the server does not have the command (or answers otherwise).
fn slot_stats_key_counts(con: &mut NodeConn, slots: &[u16]) -> Result<Option<Vec<u64>>, String> {
    let Some(stats) = slot_stats(con, slots)? else {
        return Ok(None);
    };
    for (s, f) in slots.iter().zip(&stats) {
        if let Some(&n) = f.get("key-count").filter(|n| **n > MAX_PLAUSIBLE_KEYS) {
            return Err(format!(
                "its CLUSTER SLOT-STATS says slot {s} holds {n} keys, more than {MAX_PLAUSIBLE_KEYS}: a broken server or a proxy in the way"
            ));
        }
    }
    Ok(stats.iter().map(|f| f.get("key-count").copied()).collect())
}

/// `CLUSTER SLOT-STATS SLOTSRANGE` over `slots` (grouped into runs): each slot's fields
/// (`key-count`, and `cpu-usec`, `network-bytes-in`, `network-bytes-out`, `memory-bytes` where
/// the server counts them), in the order of `slots`; `None` when the server does not have the
/// command or a slot is missing from its answer.
fn slot_stats(
    con: &mut NodeConn,
    slots: &[u16],
) -> Result<Option<Vec<std::collections::BTreeMap<String, u64>>>, String> {
    slot_stats_inner(con, slots)
}

/// A counter no server has: negative, or more than [`MAX_PLAUSIBLE_COUNT`].
fn implausible(field: &str, slot: i64, n: i64) -> String {
    format!(
        "its CLUSTER SLOT-STATS says {field} {n} for slot {slot}, which no server counts (negative, or more than {MAX_PLAUSIBLE_COUNT}): a broken server or a proxy in the way"
    )
}

/// The largest counter (CPU µs, network bytes, memory bytes) a server may report for a slot:
/// 2^50 (a pebibyte). Anything above comes from a broken or hostile server.
pub const MAX_PLAUSIBLE_COUNT: u64 = 1 << 50;

/// The most keys a server may report for one slot: 2^40 (about a trillion). Anything above
/// comes from a broken or hostile server, and 16384 of them summed stay far from overflowing.
pub const MAX_PLAUSIBLE_KEYS: u64 = 1 << 40;

fn slot_stats_inner(
    con: &mut NodeConn,
    slots: &[u16],
) -> Result<Option<Vec<std::collections::BTreeMap<String, u64>>>, String> {
    let mut by_slot: std::collections::BTreeMap<u16, std::collections::BTreeMap<String, u64>> =
        std::collections::BTreeMap::new();
    let mut i = 0;
    while i < slots.len() {
        let lo = slots[i];
        let mut hi = lo;
        while i + 1 < slots.len() && slots[i + 1] == hi + 1 {
            i += 1;
            hi = slots[i];
        }
        i += 1;
        let Ok(reply) = redis::cmd("CLUSTER")
            .arg("SLOT-STATS")
            .arg("SLOTSRANGE")
            .arg(lo)
            .arg(hi)
            .query::<Value>(con)
        else {
            return Ok(None);
        };
        let Value::Array(entries) = reply else {
            return Ok(None);
        };
        for e in entries {
            let Value::Array(pair) = e else {
                return Ok(None);
            };
            let (Some(Value::Int(slot)), Some(stats)) = (pair.first(), pair.get(1)) else {
                return Ok(None);
            };
            let fields: Vec<(Value, Value)> = match stats {
                Value::Array(kv) => kv
                    .chunks(2)
                    .filter_map(|c| Some((c.first()?.clone(), c.get(1)?.clone())))
                    .collect(),
                Value::Map(m) => m.clone(),
                _ => return Ok(None),
            };
            let mut map = std::collections::BTreeMap::new();
            for (k, v) in &fields {
                if let (Reply::Str(name), Value::Int(n)) = (to_reply(k), v) {
                    match u64::try_from(*n) {
                        Ok(x) if x <= MAX_PLAUSIBLE_COUNT => {
                            map.insert(name, x);
                        }
                        _ => return Err(implausible(&name, *slot, *n)),
                    }
                }
            }
            let Ok(slot) = u16::try_from(*slot) else {
                return Ok(None);
            };
            by_slot.insert(slot, map);
        }
    }
    Ok(slots.iter().map(|s| by_slot.get(s).cloned()).collect())
}

/// Empty SCAN pages in a row after which a scan is taken to make no progress (a legitimate
/// scan of a sparse table returns at most its buckets / COUNT of them).
const MAX_EMPTY_PAGES: u64 = 200_000;

/// [`LiveCluster::slot_stats_advice`] from the `INFO server` text of the node at `addr`.
pub fn slot_stats_advice(addr: &str, info: &str) -> String {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    let valkey = field("server_name:").is_some_and(|n| n == "valkey");
    let version = if valkey {
        field("valkey_version:").or_else(|| field("redis_version:"))
    } else {
        field("redis_version:")
    };
    let Some(version) = version else {
        return "that needs Valkey 8+ or Redis 8.2+ with cluster-slot-stats-enabled yes".into();
    };
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    let (major, minor) = (
        parts.first().copied().unwrap_or(0),
        parts.get(1).copied().unwrap_or(0),
    );
    let name = if valkey { "Valkey" } else { "Redis" };
    let has = if valkey {
        major >= 8
    } else {
        (major, minor) >= (8, 2)
    };
    if has {
        format!(
            "{addr} runs {name} {version}, which counts it once `cluster-slot-stats-enabled yes` is set: run CONFIG SET cluster-slot-stats-enabled yes on every master (and add it to their config files)"
        )
    } else {
        format!(
            "{addr} runs {name} {version}; CLUSTER SLOT-STATS needs {}",
            if valkey {
                "Valkey 8.0 or later"
            } else {
                "Redis 8.2 or later (or Valkey 8+)"
            }
        )
    }
}

/// What the servers measured per slot (`CLUSTER SLOT-STATS`: Valkey 8+ with
/// `cluster-slot-stats-enabled yes`, Redis 8.2+), for every slot (16384 entries each).
#[derive(Debug, Clone, PartialEq)]
pub struct SlotLoad {
    /// CPU time spent on each slot's commands, in microseconds.
    pub cpu_usec: Vec<u64>,
    /// Request bytes received for each slot's commands.
    pub net_in: Vec<u64>,
    /// Reply bytes sent for each slot's commands.
    pub net_out: Vec<u64>,
    /// Memory each slot's keys take (Redis 8.2+ `memory-bytes`), when the server counts it.
    pub memory: Option<Vec<u64>>,
    /// Over what time: the counters as they stand (since each node started or its statistics
    /// were reset, and a slot's since it last changed owner), or the delta over a window.
    pub since: String,
}

/// One node's command time from `INFO commandstats` (all its commands, in microseconds), for
/// servers without per-slot load.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeCommandTime {
    /// Microseconds spent in commands.
    pub usec: u64,
    /// Commands run.
    pub calls: u64,
}

/// `host` and `port` of a `host:port` address.
/// `CLUSTER NODES` text with `host` for every empty address (`:7000@17000`): a node that never
/// met another does not know its own address, and it is the host that was asked.
fn with_host(text: &str, host: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match line.split_once(' ') {
            Some((id, rest)) if rest.starts_with(':') => {
                out.push_str(id);
                out.push(' ');
                out.push_str(host);
                out.push_str(rest);
            }
            _ => out.push_str(line),
        }
    }
    out
}

fn host_port(addr: &str) -> Result<(String, u16), LiveError> {
    addr.rsplit_once(':')
        .and_then(|(h, p)| p.parse::<u16>().ok().map(|p| (h.to_string(), p)))
        .ok_or_else(|| LiveError::Node {
            addr: addr.to_string(),
            what: "connect".into(),
            reason: "bad address".into(),
            sampled: 0,
        })
}

/// Whether a client error says the peer's bytes are not RESP.
/// A node's `host:port`, host and port; an error naming it when the slot map gave none.
fn node_address(node: &Node) -> Result<(String, String, u16), LiveError> {
    let addr = node.address.clone().ok_or_else(|| LiveError::Node {
        addr: node.name.clone(),
        what: "connect".into(),
        reason: "the node has no address".into(),
        sampled: 0,
    })?;
    let (host, port) = host_port(&addr)?;
    Ok((addr, host, port))
}

fn is_not_resp(reason: &str) -> bool {
    reason.contains("Parse error") || reason.contains("Incompatible type")
}

/// A server's or the OS's words, made short and plain: the first line, at most 300
/// characters, and a timeout said as one.
pub(crate) fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.contains("Resource temporarily unavailable") || line.contains("timed out") {
        return "no answer within the timeout (KEYPLAN_TIMEOUT, 10 s by default): is the node overloaded or unreachable?"
            .to_string();
    }
    match line.char_indices().nth(300) {
        Some((i, _)) => format!("{}… ({} bytes in all)", &line[..i], line.len()),
        None => line.to_string(),
    }
}

/// Waits until `commands` sent since `started` keep to `rate` commands per second (none:
/// no wait).
fn pace(rate: Option<f64>, commands: u64, started: Instant) {
    if let Some(rate) = rate.filter(|r| *r > 0.0) {
        let due = Duration::from_secs_f64(commands as f64 / rate);
        let spent = started.elapsed();
        if due > spent {
            std::thread::sleep(due - spent);
        }
    }
}

/// A simple random sample of `want` distinct keys drawn by RANDOMKEY (with replacement, repeats
/// dropped), giving up after a bounded number of draws (keys expiring or deleted meanwhile).
struct RandomDraw {
    want: u64,
    seen: std::collections::HashSet<Vec<u8>>,
    draws: u64,
}

impl RandomDraw {
    fn new(want: u64) -> RandomDraw {
        RandomDraw {
            want,
            seen: std::collections::HashSet::new(),
            draws: 0,
        }
    }

    /// Draws at most this many in all: beyond, the node is taken to hold too few keys now.
    fn max_draws(&self) -> u64 {
        self.want.saturating_mul(4).saturating_add(100)
    }

    /// How many RANDOMKEY to send next: what is still wanted, at most `count`.
    fn page(&self, count: u64) -> u64 {
        let left = self.want - self.seen.len() as u64;
        left.min(count.max(1))
            .min(self.max_draws() - self.draws)
            .max(1)
    }

    /// The new keys among `drawn` (nil: the node is empty now), up to the sample's size.
    fn take(&mut self, drawn: Vec<Option<Vec<u8>>>) -> Vec<Vec<u8>> {
        self.draws += drawn.len() as u64;
        let mut out = Vec::new();
        for k in drawn.into_iter().flatten() {
            if (self.seen.len() as u64) < self.want && !self.seen.contains(&k) {
                self.seen.insert(k.clone());
                out.push(k);
            }
        }
        out
    }

    fn done(&self) -> bool {
        self.seen.len() as u64 >= self.want || self.draws >= self.max_draws()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_masking() {
        let u = ClusterUrl::parse("redis://alice:s%40cret@10.0.0.1:7000", None).unwrap();
        assert_eq!((u.host.as_str(), u.port), ("10.0.0.1", 7000));
        assert_eq!(u.password.as_deref(), Some("s@cret"));
        assert_eq!(u.to_string(), "redis://alice:***@10.0.0.1:7000");
        let u = ClusterUrl::parse("redis://127.0.0.1", Some("envpw".into())).unwrap();
        assert_eq!((u.port, u.password.as_deref()), (6379, Some("envpw")));
        assert!(!format!("{u:?}").contains("envpw"));
        let e = ClusterUrl::parse("http://x:topsecret@h:1", None)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("topsecret"), "{e}");
        let e = ClusterUrl::parse("redis://x:topsecret@h:port", None)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("topsecret"), "{e}");
        let u = ClusterUrl::parse("redis://[::1]:7001", None).unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 7001));
        assert_eq!(u.to_string(), "redis://[::1]:7001");
    }
}

#[cfg(test)]
mod draw_tests {

    #[test]
    fn slot_stats_advice_names_the_setting_or_the_version() {
        let valkey9 =
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n";
        let a = slot_stats_advice("h:1", valkey9);
        assert!(
            a.contains("Valkey 9.1.2") && a.contains("CONFIG SET cluster-slot-stats-enabled yes"),
            "{a}"
        );
        let redis82 = "# Server\r\nredis_version:8.2.3\r\n";
        let a = slot_stats_advice("h:1", redis82);
        assert!(
            a.contains("Redis 8.2.3") && a.contains("cluster-slot-stats-enabled yes"),
            "{a}"
        );
        let redis74 = "redis_version:7.4.1\r\n";
        let a = slot_stats_advice("h:1", redis74);
        assert!(
            a.contains("Redis 7.4.1") && a.contains("needs Redis 8.2 or later"),
            "{a}"
        );
        let valkey7 = "redis_version:7.2.5\r\nserver_name:valkey\r\nvalkey_version:7.2.5\r\n";
        assert!(slot_stats_advice("h:1", valkey7).contains("needs Valkey 8.0 or later"));
        assert!(slot_stats_advice("h:1", "").contains("Valkey 8+ or Redis 8.2+"));
    }

    use super::{RandomDraw, slot_stats_advice};

    #[test]
    fn a_random_draw_keeps_distinct_keys_and_ends() {
        let mut d = RandomDraw::new(3);
        assert_eq!(d.page(1000), 3);
        let k = |s: &str| Some(s.as_bytes().to_vec());
        assert_eq!(d.take(vec![k("a"), k("a"), None]), vec![b"a".to_vec()]);
        assert!(!d.done());
        assert_eq!(d.page(1000), 2);
        assert_eq!(d.take(vec![k("b"), k("c"), k("d")]).len(), 2);
        assert!(d.done());
        // A node that keeps answering the same key stops after a bounded number of draws.
        let mut d = RandomDraw::new(10);
        let mut rounds = 0;
        while !d.done() {
            let page = d.page(5);
            d.take(vec![k("x"); page as usize]);
            rounds += 1;
            assert!(rounds < 100);
        }
    }
}
