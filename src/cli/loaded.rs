//! What a run reads before its main work, resolved once from its flags: the scheme, where the
//! keys live (with a typed account of where that came from), the one handle on a live
//! cluster, the load model, the lint rules and where the report goes. Every subcommand that
//! places keys goes through [`Loaded::open`], so the precedence of topology flags, the
//! scheme's `topology:` and the default is decided in one place, and everything that can be
//! refused before the main work (a bad calibration file, an unknown rule, a missing scheme)
//! is refused there.

use super::Ctx;
use super::args::{LoadedScheme, ModelArgs, TopologyArgs, live_cluster, load_scheme};
use super::lint::RuleArgs;
use crate::error::UserError;
use crate::lint::RuleSet;
use crate::live::LiveCluster;
use crate::migrate::ClusterView;
use crate::report::render::{Format, Render, render};
use crate::simulate::NetworkModel;
use crate::topology::{SlotMap, Topology, TopologyFormat, TopologyOptions, nodes};
use anyhow::Context as _;
use std::fmt;
use std::path::{Path, PathBuf};

/// Who chose a number of masters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--masters N`.
    Flag,
    /// The scheme's `topology: { masters: N }`.
    Scheme,
    /// The command's default.
    Default,
}

/// Where a run's topology came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologySource {
    /// A live cluster (its URL, any password masked), read with `CLUSTER SLOTS`, or with
    /// `CLUSTER NODES` when `nodes`.
    Live {
        /// The URL, password masked.
        url: String,
        /// Read as `CLUSTER NODES` (redis-cli's view of it).
        nodes: bool,
    },
    /// `CLUSTER NODES` text in a file, kept in redis-cli's node order.
    NodesFile(PathBuf),
    /// A slot map in a file (any of the cluster formats).
    SlotMapFile(PathBuf),
    /// A Redis Enterprise / Cloud database in a file.
    DatabaseFile {
        /// The database, in words.
        what: String,
        /// The file.
        path: PathBuf,
    },
    /// A client-side ring in a file.
    RingFile {
        /// What kind of ring, in words.
        kind: String,
        /// The file.
        path: PathBuf,
    },
    /// N masters laid out as `redis-cli --cluster create` assigns slots.
    Masters {
        /// How many.
        n: u16,
        /// Who chose them.
        origin: Origin,
    },
}

impl fmt::Display for TopologySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologySource::Live { url, nodes: false } => write!(f, "live cluster {url}"),
            TopologySource::Live { url, nodes: true } => {
                write!(f, "live cluster {url} (CLUSTER NODES)")
            }
            TopologySource::NodesFile(p) => write!(
                f,
                "CLUSTER NODES from {} (redis-cli's node order)",
                p.display()
            ),
            TopologySource::SlotMapFile(p) => write!(f, "slot map from {}", p.display()),
            TopologySource::RingFile { kind, path } => write!(f, "{kind} from {}", path.display()),
            TopologySource::DatabaseFile { what, path } => {
                write!(f, "{what}, from {}", path.display())
            }
            TopologySource::Masters { n, origin } => match origin {
                Origin::Flag => {
                    write!(f, "{n} masters as redis-cli --cluster create assigns slots")
                }
                Origin::Scheme => write!(
                    f,
                    "the scheme's {n} masters, as redis-cli --cluster create assigns slots"
                ),
                Origin::Default => write!(
                    f,
                    "default: {n} masters as redis-cli --cluster create assigns slots (use --masters or --topology)"
                ),
            },
        }
    }
}

/// What the flags and the scheme chose, before anything is read from it.
#[derive(Debug)]
enum Choice {
    Live,
    File {
        path: PathBuf,
        text: String,
        format: TopologyFormat,
        options: TopologyOptions,
    },
    Masters(u16, Origin),
    Nothing,
}

/// Where a run's report goes, and in which format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `-o FILE` (written whole, or not at all); `None`: standard output.
    pub path: Option<PathBuf>,
    /// `--format`.
    pub format: Format,
}

impl Target {
    /// The report to `path` (or standard output) in `format`.
    pub fn new(path: Option<&PathBuf>, format: Format) -> Target {
        Target {
            path: path.cloned(),
            format,
        }
    }

    /// Renders a whole report here.
    pub fn render(&self, report: &dyn Render, ctx: &mut Ctx<'_>) -> anyhow::Result<()> {
        let format = self.format;
        ctx.write_to(self.path.as_ref(), |out, layout| {
            render(report, format, out, layout).context("writing the report")
        })
    }
}

/// A run's inputs, resolved once.
#[derive(Debug)]
pub struct Loaded {
    /// The scheme (`--scheme`, or the command's default scheme file), read.
    pub scheme: Option<LoadedScheme>,
    /// The live cluster `--cluster` names (one handle for the whole run).
    pub live: Option<LiveCluster>,
    /// Where the report goes.
    pub target: Target,
    model: Option<NetworkModel>,
    rules: Option<RuleSet>,
    choice: Choice,
}

impl Loaded {
    /// Reads the scheme at `scheme` (if any) and the topology file the flags or the scheme
    /// name, and opens the live cluster handle. The one precedence rule of every command:
    /// `--cluster`, `--topology` or `--masters`, else the scheme's `file:` (read relative to
    /// the scheme, with its `pool:` unless `--pool` is given), else the scheme's `masters:`,
    /// else `default_masters` (`None`: no topology).
    pub fn open(
        t: &TopologyArgs,
        scheme: Option<&Path>,
        default_masters: Option<u16>,
        target: Target,
    ) -> anyhow::Result<Loaded> {
        let scheme = scheme.map(load_scheme).transpose()?;
        let live = t
            .cluster
            .as_deref()
            .map(live_cluster)
            .transpose()?
            .map(|l| l.allow_partial(t.allow_partial));
        let from_scheme = scheme
            .as_ref()
            .and_then(|s| Some((&s.path, s.scheme.topology.as_ref()?)));
        let file = |path: PathBuf, pool: Option<String>| -> anyhow::Result<Choice> {
            let bytes =
                crate::files::read_capped(&path, "topology file", crate::files::MAX_TEXT_FILE)?;
            Ok(Choice::File {
                text: String::from_utf8_lossy(&bytes).into_owned(),
                path,
                format: t.topology_format,
                options: TopologyOptions {
                    allow_partial: t.allow_partial,
                    pool,
                },
            })
        };
        let choice = if live.is_some() {
            Choice::Live
        } else if let Some(path) = &t.topology {
            file(path.clone(), t.pool.clone())?
        } else if let Some(n) = t.masters {
            Choice::Masters(n, Origin::Flag)
        } else if let Some((path, st)) = from_scheme
            && (st.file.is_some() || st.masters.is_some())
        {
            match (&st.file, st.masters) {
                (Some(f), _) => {
                    let dir = path.parent().unwrap_or(Path::new("."));
                    file(dir.join(f), t.pool.clone().or_else(|| st.pool.clone()))?
                }
                (None, Some(n)) => Choice::Masters(n, Origin::Scheme),
                (None, None) => unreachable!("invariant: checked above"),
            }
        } else if let Some(n) = default_masters {
            Choice::Masters(n, Origin::Default)
        } else {
            Choice::Nothing
        };
        Ok(Loaded {
            scheme,
            live,
            target,
            model: None,
            rules: None,
            choice,
        })
    }

    /// Adds the load model the flags describe (`simulate`, `plan`): the calibration file is
    /// read and checked here.
    pub fn with_model(mut self, m: &ModelArgs) -> anyhow::Result<Loaded> {
        self.model = Some(m.model()?);
        Ok(self)
    }

    /// Adds bench's prediction model: the calibration (or `--rtt`) when given, as simulate
    /// and plan build it, else the documented defaults around a round trip measured on the
    /// live cluster; at `concurrency` clients.
    pub fn with_probed_model(
        mut self,
        calibration: Option<&Path>,
        rtt: Option<f64>,
        concurrency: u32,
    ) -> anyhow::Result<Loaded> {
        let mut net = if calibration.is_some() || rtt.is_some() {
            super::args::network_model(calibration, rtt, None, None)?
        } else {
            let live = self
                .live
                .as_ref()
                .expect("invariant: bench opens a live cluster");
            NetworkModel::probed(crate::bench::probe_round_trip(live, &live.topology()?)?)
        };
        net.concurrency = concurrency;
        self.model = Some(net);
        Ok(self)
    }

    /// Adds the lint rules the flags ask for (built-ins, `--rules` directories, `--select`,
    /// `--ignore`, `--severity`), checked here.
    pub fn with_rules(mut self, r: &RuleArgs) -> anyhow::Result<Loaded> {
        self.rules = Some(r.rule_set()?);
        Ok(self)
    }

    /// The load model ([`Loaded::with_model`] or [`Loaded::with_probed_model`]).
    pub fn model(&self) -> &NetworkModel {
        self.model
            .as_ref()
            .expect("invariant: the command loads its model first")
    }

    /// The lint rules ([`Loaded::with_rules`]).
    pub fn rules(&self) -> &RuleSet {
        self.rules
            .as_ref()
            .expect("invariant: the command loads its rules first")
    }

    /// The live cluster at `url` and the scheme at `scheme`, for the commands that run only
    /// on a live cluster (`bench`, `scan`).
    pub fn live_only(url: &str, scheme: Option<&Path>, target: Target) -> anyhow::Result<Loaded> {
        let t = TopologyArgs {
            masters: None,
            cluster: Some(url.to_string()),
            topology: None,
            topology_format: TopologyFormat::Auto,
            pool: None,
            allow_partial: false,
        };
        Loaded::open(&t, scheme, None, target)
    }

    /// The live cluster handle of [`Loaded::live_only`].
    pub fn into_live(self) -> LiveCluster {
        self.live.expect("invariant: opened with a cluster URL")
    }

    /// The topology and where it came from (`None` when nothing names one and the command has
    /// no default). A live cluster is asked for its slot map here.
    pub fn topology(&self) -> anyhow::Result<Option<(Topology, TopologySource)>> {
        Ok(Some(match &self.choice {
            Choice::Live => {
                let live = self.live.as_ref().expect("invariant: Live has a handle");
                let source = TopologySource::Live {
                    url: live.url_text(),
                    nodes: false,
                };
                (Topology::Cluster(live.topology()?), source)
            }
            Choice::File {
                path,
                text,
                format,
                options,
            } => {
                let t = Topology::parse_as(text, *format, options)
                    .map_err(|e| not_a_topology(path, text, e))?;
                let source = match &t {
                    // A match, not an `if let` guard: those are newer than rust-version (1.91).
                    Topology::Cluster(m) => match m.enterprise() {
                        Some(e) => TopologySource::DatabaseFile {
                            what: e.describe(),
                            path: path.clone(),
                        },
                        None => TopologySource::SlotMapFile(path.clone()),
                    },
                    Topology::Ring(r) => TopologySource::RingFile {
                        kind: r.source.clone(),
                        path: path.clone(),
                    },
                };
                (t, source)
            }
            &Choice::Masters(n, origin) => (
                Topology::Cluster(SlotMap::from_masters(n as usize)?),
                TopologySource::Masters { n, origin },
            ),
            Choice::Nothing => return Ok(None),
        }))
    }

    /// The topology, for a command that has a default.
    pub fn topology_or_default(&self) -> anyhow::Result<(Topology, TopologySource)> {
        Ok(self
            .topology()?
            .expect("invariant: the command gives a default topology"))
    }

    /// The cluster as redis-cli would see it (its node order from `CLUSTER NODES`, live or in
    /// a file), for the migration previews. A ring has no slots to migrate.
    pub fn view(&self) -> anyhow::Result<(ClusterView, TopologySource)> {
        match &self.choice {
            Choice::Live => {
                let live = self.live.as_ref().expect("invariant: Live has a handle");
                let source = TopologySource::Live {
                    url: live.url_text(),
                    nodes: true,
                };
                return Ok((live.cluster_view()?, source));
            }
            Choice::File {
                path, text, format, ..
            } if match format {
                TopologyFormat::ClusterNodes => true,
                TopologyFormat::Auto => nodes::looks_like(text),
                _ => false,
            } =>
            {
                let view = ClusterView::from_cluster_nodes(text)
                    .with_context(|| format!("in topology file {}", path.display()))?;
                return Ok((view, TopologySource::NodesFile(path.clone())));
            }
            _ => {}
        }
        let (topology, source) = self.topology_or_default()?;
        match topology {
            Topology::Cluster(map) => Ok((ClusterView::from_slot_map(&map), source)),
            Topology::Ring(_) => Err(UserError::new(
                format!("{source}: a client-side ring has no slots to migrate"),
                "rebalance and reshard preview Redis Cluster slot maps: give CLUSTER NODES text, keyplan YAML with slots, or --masters N",
            )
            .into()),
        }
    }
}

/// The formats `--topology` reads, as a hint names them.
const TOPOLOGY_FORMATS: &str = "a topology is CLUSTER NODES text (`redis-cli cluster nodes > nodes.txt`), a CLUSTER SLOTS or SHARDS reply, keyplan YAML, a twemproxy config or a libketama server file";

/// A topology file's error, where nothing in it reads as a topology: a binary file or a key
/// dump is named for what it is, with what to give instead.
fn not_a_topology(path: &Path, text: &str, e: crate::topology::TopologyError) -> anyhow::Error {
    use crate::topology::TopologyError;
    let unrecognised = matches!(
        e,
        TopologyError::Unrecognised | TopologyError::Guessed { .. }
    );
    if unrecognised {
        let head = &text.as_bytes()[..text.len().min(crate::keys::sniff::SNIFF_BYTES)];
        let replaced = text.chars().filter(|&c| c == '\u{FFFD}').count();
        let binary =
            crate::keys::sniff::not_a_dump(head, text.len() <= head.len()).is_some_and(|n| {
                n.looks_like.contains("binary") || n.looks_like.contains("executable")
            }) || replaced * 20 > text.chars().count().max(1);
        if binary {
            return UserError::new(
                format!(
                    "{}: this is not a topology: it is binary data",
                    path.display()
                ),
                TOPOLOGY_FORMATS,
            )
            .into();
        }
        if looks_like_keys(text) {
            return UserError::new(
                format!(
                    "{}: this is not a topology: it looks like a key dump (one key a line)",
                    path.display()
                ),
                format!(
                    "pass it as the keys input instead (keyplan analyze {0}); {TOPOLOGY_FORMATS}",
                    path.display()
                ),
            )
            .into();
        }
    }
    anyhow::Error::new(e).context(format!("in topology file {}", path.display()))
}

/// Whether `text` reads as a key dump: most of its first lines are one word with a key's
/// separators (`user:1`, `cache/page.7`), none of a topology's.
fn looks_like_keys(text: &str) -> bool {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .take(200)
        .collect();
    if lines.len() < 3 {
        return false;
    }
    let keyish = lines
        .iter()
        .filter(|l| {
            let word = l.split('\t').next().unwrap_or(l);
            !word.contains(' ')
                && !word.ends_with(':')
                && word.contains([':', '/', '.', '_', '-', '{'])
                && !word.contains("://")
                && !is_address(word)
        })
        .count();
    keyish * 10 >= lines.len() * 9
}

/// `host:port` with a numeric port and a dotted or bracketed host: a server, not a key.
fn is_address(word: &str) -> bool {
    word.rsplit_once(':').is_some_and(|(host, port)| {
        !port.is_empty()
            && port.bytes().all(|b| b.is_ascii_digit())
            && (host.contains('.') || host.starts_with('[') || host == "localhost")
    })
}
