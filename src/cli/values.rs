//! The words the command line takes for the engines' enums, and their help. The engines' types
//! know nothing of clap: each is mapped here, one row per variant (a variant left out does not
//! compile).

use crate::keys::InputFormat;
use crate::lint::rule::Severity;
use crate::migrate::balance::BalanceBy;
use crate::migrate::emit::Emit;
use crate::report::render::Format;
use crate::simulate::Strategy;
use crate::topology::TopologyFormat;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// One word the command line takes: the word, the engine value it stands for, its help.
pub type Word<T> = (&'static str, T, &'static str);

/// A value parser over `rows`: one engine type, the words (and help) a command gives it. Help
/// and errors list the words as they do for any enum argument.
pub fn one_of<T: Clone + Send + Sync + 'static>(
    rows: &'static [Word<T>],
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(rows.iter().map(|(w, _, h)| PossibleValue::new(*w).help(*h))).map(
        move |word: String| {
            rows.iter()
                .find(|r| r.0 == word)
                .map(|r| r.1.clone())
                .expect("invariant: the parser accepts only the rows' words")
        },
    )
}

/// `--format` of the reports that are tables or JSON, with no HTML page (migrate, verify).
pub const TABLE_FORMATS: &[Word<Format>] = &[
    ("table", Format::Table, "Tables"),
    (
        "json",
        Format::Json,
        "One JSON document (its schema_version and fields are documented in README)",
    ),
    (
        "markdown",
        Format::Markdown,
        "The tables as Markdown (a pull-request comment or a CI job summary)",
    ),
];

/// `--format` of the reports that are tables, JSON or HTML (analyze, the previews).
pub const REPORT_FORMATS: &[Word<Format>] = &[
    ("table", Format::Table, "Tables"),
    (
        "json",
        Format::Json,
        "One JSON document (its schema_version and fields are documented in README)",
    ),
    (
        "html",
        Format::Html,
        "A self-contained HTML report with charts (use -o FILE)",
    ),
    (
        "markdown",
        Format::Markdown,
        "The tables as Markdown (a pull-request comment or a CI job summary)",
    ),
];

/// `--fail-on`: the lowest severity that makes the exit status 1.
pub const FAIL_ON: &[Word<Severity>] = &[
    ("hint", Severity::Hint, "Any finding"),
    ("info", Severity::Info, "Info and above"),
    ("warning", Severity::Warning, "Warnings and errors"),
    ("error", Severity::Error, "Errors only"),
];

/// `--strategy` of simulate and bench: strategies, or all of them.
pub const STRATEGIES: &[Word<&[Strategy]>] = &[
    ("serial", &[Strategy::Serial], "One command per key"),
    (
        "pipeline",
        &[Strategy::Pipeline],
        "Per-node pipelines, one node after another",
    ),
    (
        "parallel",
        &[Strategy::Parallel],
        "Per-node pipelines, concurrently",
    ),
    (
        "slot-parallel",
        &[Strategy::SlotParallel],
        "Per-slot pipelines, concurrently",
    ),
    (
        "hashtag",
        &[Strategy::Hashtag],
        "The batch rewritten onto one hash tag",
    ),
    ("all", &Strategy::ALL, "Every strategy"),
];

/// `--strategy` of plan: how batches are run when they span nodes.
pub const PLAN_STRATEGIES: &[Word<Strategy>] = &[
    ("serial", Strategy::Serial, "One command per key"),
    (
        "pipeline",
        Strategy::Pipeline,
        "Per-node pipelines, one node after another",
    ),
    (
        "parallel",
        Strategy::Parallel,
        "Per-node pipelines, concurrently",
    ),
    (
        "slot-parallel",
        Strategy::SlotParallel,
        "Per-slot pipelines, concurrently",
    ),
];

/// Implements `clap::ValueEnum` for an enum from `variant => "word": "help"` rows.
macro_rules! words {
    ($ty:ty { $($variant:ident => $name:literal : $help:literal),+ $(,)? }) => {
        impl clap::ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                &[$(<$ty>::$variant),+]
            }
            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(match self {
                    $(<$ty>::$variant => PossibleValue::new($name).help($help)),+
                })
            }
        }
    };
}

words!(InputFormat {
    Auto => "auto": "Decide from the first non-blank line",
    Raw => "raw": "One key per line, as `redis-cli --scan > file` writes (one trailing CR is stripped)",
    Quoted => "quoted": "redis-cli's quoted form: \"...\" with \\\\ \\\" \\n \\r \\t \\a \\b \\xHH escapes",
    Tsv => "tsv": "key<TAB>bytes[<TAB>ops]; the key raw (no TABs) or quoted",
    Rdb => "rdb": "An RDB snapshot (SAVE/BGSAVE; any Redis or Valkey version): keys with their memory",
});

words!(TopologyFormat {
    Auto => "auto": "Decide from the content",
    ClusterNodes => "cluster-nodes": "The text of CLUSTER NODES, or a nodes.conf",
    Twemproxy => "twemproxy": "A twemproxy (nutcracker) YAML config",
    Keyplan => "keyplan": "keyplan topology YAML (nodes:, ring: or enterprise:)",
    ClusterReply => "cluster-reply": "CLUSTER SLOTS or CLUSTER SHARDS as redis-cli prints them (RESP2, RESP3 or --json)",
    Libketama => "libketama": "A libketama server file (ip:port memory)",
});

words!(BalanceBy {
    Slots => "slots": "Slot counts, exactly as redis-cli --cluster rebalance",
    Keys => "keys": "Sample keys per node",
    Bytes => "bytes": "Sample bytes per node (tsv samples or --bytes)",
    Ops => "ops": "Sample ops per node (tsv samples with an ops column)",
    Cpu => "cpu": "CPU time per slot as the servers measured it (--cluster; CLUSTER SLOT-STATS)",
    Net => "net": "Network bytes in and out per slot as the servers measured them (--cluster; CLUSTER SLOT-STATS)",
    Memory => "memory": "Memory per slot as the servers measured it (--cluster; Redis 8.2+ CLUSTER SLOT-STATS)",
});

words!(Emit {
    RedisCli => "redis-cli": "`redis-cli --cluster reshard … --cluster-yes` lines, one per move",
    Setslot => "setslot": "A shell script of CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE and SETSLOT NODE, in rounds of 100 slots",
    ValkeyCli => "valkey-cli": "`valkey-cli --cluster reshard … --cluster-use-atomic-slot-migration` lines (Valkey 9)",
    ValkeyAtomic => "valkey-atomic": "A shell script of Valkey 9 CLUSTER MIGRATESLOTS jobs (atomic slot migration), each polled until done",
    RedisAtomic => "redis-atomic": "A shell script of Redis 8.4 CLUSTER MIGRATION IMPORT tasks (atomic slot migration), each polled until done",
    ElastiCache => "elasticache": "The aws elasticache commands: the plan's shard count online, or a contiguous slot layout balancing the same weight for an offline restore",
    MemoryDb => "memorydb": "The aws memorydb commands: the plan's shard count, online or by an offline restore",
});

/// `--client NAME[@VERSION]`: any word passes here (the names and versions are checked where
/// they are resolved, with their help), but shells complete the profiles' names and `all`.
#[derive(Debug, Clone, Copy)]
pub struct ClientName;

impl TypedValueParser for ClientName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let names = crate::simulate::client::Client::ALL.map(|c| c.name());
        Some(Box::new(
            names.into_iter().chain(["all"]).map(PossibleValue::new),
        ))
    }
}
