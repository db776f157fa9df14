//! The words the command line takes for the engines' enums, and their help. The engines' types
//! know nothing of clap: each is mapped here, one row per variant (a variant left out does not
//! compile).

use crate::keys::InputFormat;
use crate::migrate::balance::BalanceBy;
use crate::migrate::emit::Emit;
use crate::report::lint::LintFormat;
use crate::topology::TopologyFormat;
use clap::builder::PossibleValue;

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
    Keyplan => "keyplan": "keyplan topology YAML (nodes: or ring:)",
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
    Setslot => "setslot": "A shell script of CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE and SETSLOT NODE per slot",
});

words!(LintFormat {
    Human => "human": "`path:line:col: KP301 [error] message` and a help line",
    Json => "json": "{\"schema_version\": 1, \"diagnostics\": [...], \"summary\": {...}}",
    Sarif => "sarif": "SARIF 2.1.0 for GitHub code scanning",
    Github => "github": "GitHub Actions workflow annotations",
});
