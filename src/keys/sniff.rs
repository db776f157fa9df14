//! Recognises files that are not key dumps before they are read as one: a binary file, a
//! damaged RDB snapshot, JSON, `CLUSTER NODES` output or a twemproxy configuration. Each would
//! otherwise be read as "keys" and given a confident verdict. Pure: it looks at the first bytes.

/// What a file looks like instead of a key dump, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this does not look like a key dump: it looks like {looks_like}; {help} (--input-format raw reads it as keys anyway)"
)]
pub struct NotADump {
    /// What it looks like.
    pub looks_like: String,
    /// What to do instead.
    pub help: &'static str,
}

/// How many bytes of a file's start [`not_a_dump`] wants to see.
pub const SNIFF_BYTES: usize = 64 * 1024;

const TOPOLOGY_HELP: &str =
    "did you mean --topology FILE? (a key dump has one key per line, as `redis-cli --scan` writes)";

/// Checks the first bytes of a would-be key dump (`whole` when they are the whole file).
/// `None` when it may be a dump: the reader then decides line by line as always.
pub fn not_a_dump(head: &[u8], whole: bool) -> Option<NotADump> {
    let found = |looks_like: &str, help: &'static str| {
        Some(NotADump {
            looks_like: looks_like.to_string(),
            help,
        })
    };
    // A snapshot whose magic is there but whose version is not four (REDIS) or three
    // (VALKEY) digits: the reader does not take it for a snapshot, so it would be read as
    // lines of binary.
    if (head.starts_with(b"REDIS") || head.starts_with(b"VALKEY") || near_rdb_magic(head))
        && crate::rdb::sniff(head).is_none()
    {
        return found(
            "an RDB snapshot with a damaged header (REDIS or VALKEY not followed by its version digits)",
            "take a fresh snapshot (BGSAVE, or `redis-cli --rdb FILE`) and pass it as it is",
        );
    }
    for (magic, what) in [
        (&b"\x7fELF"[..], "an executable (ELF)"),
        (b"\x1f\x8b", "gzip-compressed data"),
        (b"PK\x03\x04", "a zip archive"),
        (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
        (b"BZh", "bzip2-compressed data"),
        (b"\xfd7zXZ\x00", "xz-compressed data"),
        (b"%PDF-", "a PDF document"),
        (b"\x89PNG", "a PNG image"),
        (b"SQLite format 3\x00", "an SQLite database"),
    ] {
        if head.starts_with(magic) {
            return found(
                what,
                "pass a key dump (`redis-cli --scan > keys.txt`), an RDB snapshot, or decompress it first (`zcat dump.gz | keyplan analyze -`)",
            );
        }
    }
    // Many NUL bytes with few line ends, or mostly bytes no text has: binary data, not lines
    // of keys (a dump of binary keys is written quoted, `redis-cli --scan --quoted-output`).
    let nuls = memchr::memchr_iter(0, head).count();
    let lines = memchr::memchr_iter(b'\n', head).count();
    let binary_help = "pass a key dump (`redis-cli --scan > keys.txt`, or `--quoted-output` for binary keys) or an RDB snapshot";
    if head.len() >= 512 && nuls * 20 > head.len() && lines * 200 < head.len() {
        return found(
            "binary data (NUL bytes and hardly any line ends)",
            binary_help,
        );
    }
    if head.len() >= 512 && not_text(head) * 4 > head.len() {
        return found(
            "binary data (a quarter of its bytes are control bytes or not UTF-8)",
            binary_help,
        );
    }
    let text = String::from_utf8_lossy(head);
    let mut first = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first_line = first.next().unwrap_or("");
    // CLUSTER NODES: `<40 hex id> <ip:port@cport> <flags> …`.
    if looks_like_cluster_nodes(first_line) {
        return found("CLUSTER NODES output", TOPOLOGY_HELP);
    }
    // A twemproxy (nutcracker) pool configuration.
    let yaml_keys = text
        .lines()
        .map(str::trim_start)
        .filter(|l| {
            ["listen:", "servers:", "hash:", "distribution:"]
                .iter()
                .any(|k| l.starts_with(k))
        })
        .count();
    if yaml_keys >= 2
        && text
            .lines()
            .next()
            .is_some_and(|l| l.trim_end().ends_with(':'))
    {
        return found("a twemproxy (nutcracker) configuration", TOPOLOGY_HELP);
    }
    // keyplan's own YAML: a key scheme (`keys:` with `pattern:`s) or a topology (`nodes:`,
    // `ring:` or `enterprise:` with their fields), told by their top-level keys.
    let top: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with([' ', '\t', '#', '-']) && !l.trim().is_empty())
        .filter_map(|l| {
            let l = l.trim_end();
            // `key:` or `key: value`, as YAML writes a mapping (a key `keys:1` is no YAML).
            l.strip_suffix(':')
                .or_else(|| l.split_once(": ").map(|(k, _)| k))
                .map(str::trim)
        })
        .collect();
    // A field under a top-level key, in block style or in a flow mapping
    // (`  profile: { pattern: "user:<id>" }`, `enterprise: { shards: 3 }`).
    let inner = |keys: &[&str]| {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.trim_start_matches([' ', '\t', '-']))
            .any(|l| {
                keys.iter().any(|k| {
                    l.match_indices(k)
                        .any(|(i, _)| i == 0 || l[..i].trim_end().ends_with(['{', ',']))
                })
            })
    };
    let has = |k: &str| top.contains(&k);
    if has("keys") && (has("version") || has("vars") || has("batches")) && inner(&["pattern:"]) {
        return found(
            "a keyplan key scheme",
            "pass it with --scheme FILE (`keyplan lint`, `simulate` or `plan`); a key dump has one key per line, as `redis-cli --scan` writes",
        );
    }
    if (has("nodes") && inner(&["name:", "slots:", "address:"]))
        || (has("ring") && inner(&["kind:", "servers:"]))
        || (has("enterprise") && inner(&["shards:", "hashing:"]))
    {
        return found("keyplan topology YAML", TOPOLOGY_HELP);
    }
    // JSON: the whole file one document, or JSON lines.
    let t = text.trim_start();
    if t.starts_with(['{', '[']) {
        let document = whole
            && serde_json::from_str::<serde_json::Value>(&text)
                .is_ok_and(|v| v.is_object() || v.is_array());
        let sample: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .take(50)
            .collect();
        let json_lines = sample
            .iter()
            .filter(|l| {
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(l).is_ok()
            })
            .count();
        if document || (json_lines >= 2 && json_lines * 2 > sample.len()) {
            return found(
                "JSON",
                "a key dump has one key per line (`redis-cli --scan > keys.txt`); keyplan's own JSON reports are not inputs",
            );
        }
    }
    None
}

/// Whether the first bytes are an RDB magic with one or two letters damaged (`RXDIS0011`,
/// `VALKEY` misspelt), followed by the version's digits.
fn near_rdb_magic(head: &[u8]) -> bool {
    let near = |magic: &[u8], digits: usize| {
        let Some(start) = head.get(..magic.len()) else {
            return false;
        };
        let same = start.iter().zip(magic).filter(|(a, b)| a == b).count();
        let version = head
            .get(magic.len()..magic.len() + digits)
            .unwrap_or_default();
        same + 2 >= magic.len()
            && same < magic.len()
            && version.iter().all(u8::is_ascii_digit)
            && version.len() == digits
    };
    near(b"REDIS", 4) || near(b"VALKEY", 3)
}

/// Bytes of `head` that no text holds: control bytes other than tab and line ends, and bytes
/// of invalid UTF-8.
fn not_text(head: &[u8]) -> usize {
    let control = head
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f)
        .count();
    let mut invalid = 0;
    let mut rest = head;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(_) => break,
            Err(e) => {
                let bad = e.error_len().unwrap_or(rest.len() - e.valid_up_to());
                invalid += bad;
                rest = &rest[e.valid_up_to() + bad..];
            }
        }
    }
    control + invalid
}

/// Whether a line is a `CLUSTER NODES` line.
fn looks_like_cluster_nodes(line: &str) -> bool {
    let mut f = line.split(' ');
    let (Some(id), Some(addr), Some(flags)) = (f.next(), f.next(), f.next()) else {
        return false;
    };
    id.len() == 40
        && id.bytes().all(|b| b.is_ascii_hexdigit())
        && addr.contains(':')
        && flags.split(',').any(|x| {
            matches!(
                x,
                "master" | "slave" | "replica" | "myself" | "fail" | "noaddr"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn looks(head: &[u8]) -> Option<String> {
        not_a_dump(head, true).map(|e| e.looks_like)
    }

    #[test]
    fn files_that_are_not_dumps_are_named() {
        let nodes = b"0a4e6aeb71d6f1184a4c30bb4753c0b0db671095 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n";
        assert_eq!(looks(nodes).as_deref(), Some("CLUSTER NODES output"));
        assert_eq!(looks(b"{\"a\":1}\n").as_deref(), Some("JSON"));
        assert_eq!(looks(b"[1, 2]").as_deref(), Some("JSON"));
        assert_eq!(
            looks(b"{\"k\":\"a\"}\n{\"k\":\"b\"}\n").as_deref(),
            Some("JSON")
        );
        assert!(looks(b"\x7fELF\x02\x01\x01").unwrap().contains("ELF"));
        // A damaged magic with some digits is the snapshot reader's to name, at byte 0.
        assert!(crate::rdb::damaged_magic(b"REDIS00X9\xfa").is_some());
        assert_eq!(looks(b"REDIS00X9\xfa"), None);
        assert!(looks(b"VALKEYx\xfa").unwrap().contains("damaged header"));
        assert!(looks(b"RXDIS0011\xfa").unwrap().contains("damaged header"));
        assert!(looks(b"VALKEZ080\xfa").unwrap().contains("damaged header"));
        let mut rdb_like: Vec<u8> = (0..2048u32).map(|i| (i * 37 % 256) as u8).collect();
        rdb_like[..9].copy_from_slice(b"XXXXX0011");
        assert!(looks(&rdb_like).unwrap().contains("binary"));
        let pool = b"alpha:\n  listen: 127.0.0.1:22121\n  hash: fnv1a_64\n  servers:\n   - 127.0.0.1:6379:1\n";
        assert!(looks(pool).unwrap().contains("twemproxy"));
        // keyplan's own scheme and topologies.
        let scheme = include_bytes!("../../examples/keyplan.yaml");
        assert_eq!(looks(scheme).as_deref(), Some("a keyplan key scheme"));
        // Its fields in flow mappings, as examples/plan/shop.yaml writes them.
        let shop = include_bytes!("../../examples/plan/shop.yaml");
        assert_eq!(looks(shop).as_deref(), Some("a keyplan key scheme"));
        for topo in [
            &b"enterprise: { shards: 3, hashing: standard }\n"[..],
            &b"nodes:\n  - name: a\n    slots: 0-16383\n"[..],
            b"# db\nenterprise:\n  shards: 4\n  hashing: custom\n",
            b"ring:\n  kind: ketama\n  servers:\n    - { name: a, address: h:1 }\n",
        ] {
            assert_eq!(looks(topo).as_deref(), Some("keyplan topology YAML"));
        }
        let mut bin = vec![0u8; 4096];
        bin[100] = b'x';
        assert!(looks(&bin).unwrap().contains("binary"));
    }

    #[test]
    fn real_dumps_pass() {
        for dump in [
            &b"user:1\nuser:2\n"[..],
            b"{user:1}:profile\n{user:2}:cart\n",
            b"{\"a\":1}\nuser:2\nuser:3\nuser:4\n",
            b"\"bin\\x00key\"\n\"other\"\n",
            b"key\t100\nother\t200\n",
            b"REDIS0011\xfa",
            // Keys that happen to read like YAML keys are still keys.
            b"keys:1\nversion:2\n  pattern:x\nnodes:3\n",
            b"",
        ] {
            assert_eq!(looks(dump), None, "{}", String::from_utf8_lossy(dump));
        }
        // A big JSON-looking key alone is one key when the file goes on.
        assert_eq!(not_a_dump(b"{\"a\":1}", false), None);
    }
}
