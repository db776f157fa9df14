//! `CLUSTER SLOTS` and `CLUSTER SHARDS` replies, as `redis-cli` prints them: the numbered
//! display (`1) 1) (integer) 0`), its RESP3 form with maps (`1# "slots" => …`), and
//! `redis-cli --json`. The text is read into a generic reply tree, then interpreted.

use super::{NO_OWNER, Node, SlotMap, TopologyError};
use crate::slot::SLOT_COUNT;

/// A RESP reply as redis-cli shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `(integer) 7`
    Int(i64),
    /// `"text"` (or a bare JSON string)
    Str(String),
    /// `(nil)`
    Nil,
    /// A list; RESP2 maps arrive as flat key/value lists.
    Array(Vec<Reply>),
    /// A RESP3 map.
    Map(Vec<(Reply, Reply)>),
}

impl Reply {
    fn as_str(&self) -> Option<&str> {
        match self {
            Reply::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Int(i) => Some(*i),
            Reply::Str(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// Map entries, from a map or from a flat key/value list.
    fn entries(&self) -> Option<Vec<(&str, &Reply)>> {
        match self {
            Reply::Map(m) => m.iter().map(|(k, v)| k.as_str().map(|k| (k, v))).collect(),
            Reply::Array(a) if a.len() % 2 == 0 && !a.is_empty() => a
                .chunks(2)
                .map(|kv| kv[0].as_str().map(|k| (k, &kv[1])))
                .collect(),
            _ => None,
        }
    }

    fn get(&self, key: &str) -> Option<&Reply> {
        self.entries()?
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
}

fn err(line: usize, m: impl Into<String>) -> TopologyError {
    TopologyError::Parse {
        line,
        message: m.into(),
    }
}

/// Reads redis-cli's quoted string (`"..."` with `sdscatrepr` escapes) at the start of `s`.
fn quoted(s: &str, line: usize) -> Result<String, TopologyError> {
    let mut out = Vec::new();
    crate::keys::unquote(s.as_bytes(), &mut out).map_err(|e| err(line, e.message))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn scalar(s: &str, line: usize) -> Result<Reply, TopologyError> {
    let s = s.trim();
    if let Some(v) = s.strip_prefix("(integer) ") {
        return v
            .trim()
            .parse()
            .map(Reply::Int)
            .map_err(|_| err(line, format!("bad integer '{v}'")));
    }
    if s.starts_with('"') {
        return quoted(s, line).map(Reply::Str);
    }
    match s {
        "(nil)" => Ok(Reply::Nil),
        "(empty array)" | "(empty list or set)" | "(empty set)" => Ok(Reply::Array(Vec::new())),
        "(empty hash)" => Ok(Reply::Map(Vec::new())),
        _ => {
            if let Some(v) = s.strip_prefix("(double) ") {
                return Ok(Reply::Str(v.to_string()));
            }
            Ok(Reply::Str(s.to_string()))
        }
    }
}

/// One piece of redis-cli's display: a list or map marker (identified by the column of its
/// `)` or `#`, which is the same for all items of one container since redis-cli right-aligns
/// the numbers), or a scalar value.
#[derive(Debug)]
enum Event {
    Marker {
        col: usize,
        map_key: Option<Reply>,
        line: usize,
    },
    /// A value, and the line it is on.
    Scalar(Reply, usize),
}

fn events(text: &str) -> Result<Vec<Event>, TopologyError> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i + 1;
        let l = l.trim_end();
        let mut pos = 0;
        loop {
            let rest = &l[pos..];
            let trimmed = rest.trim_start();
            if trimmed.is_empty() {
                break;
            }
            let start = pos + (rest.len() - trimmed.len());
            let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
            let kind = trimmed[digits..].chars().next();
            if digits > 0 && matches!(kind, Some(')') | Some('#')) {
                let col = start + digits;
                let after = &l[col + 1..];
                let after_trim = after.strip_prefix(' ').unwrap_or(after);
                if kind == Some('#') {
                    let (k, v) = match after_trim.split_once(" =>") {
                        Some(kv) => kv,
                        None => return Err(err(line, "expected 'key => value' in a map entry")),
                    };
                    out.push(Event::Marker {
                        col,
                        map_key: Some(scalar(k, line)?),
                        line,
                    });
                    pos = l.len() - v.len();
                } else {
                    out.push(Event::Marker {
                        col,
                        map_key: None,
                        line,
                    });
                    pos = l.len() - after_trim.len();
                }
                continue;
            }
            out.push(Event::Scalar(scalar(trimmed, line)?, line));
            break;
        }
    }
    Ok(out)
}

struct Parser {
    events: Vec<Event>,
    pos: usize,
}

/// Nesting deeper than any CLUSTER SLOTS or SHARDS reply (they nest 4 deep).
const MAX_DEPTH: usize = 32;

impl Parser {
    /// The line of the event at `pos` (or of the last event, past the end).
    fn line_at(&self, pos: usize) -> usize {
        self.events[..(pos + 1).min(self.events.len())]
            .iter()
            .rev()
            .map(|e| match e {
                Event::Marker { line, .. } | Event::Scalar(_, line) => *line,
            })
            .next()
            .unwrap_or(1)
    }

    fn value(&mut self, depth: usize) -> Result<Reply, TopologyError> {
        if depth > MAX_DEPTH {
            return Err(err(
                self.line_at(self.pos),
                format!(
                    "nested deeper than {MAX_DEPTH} levels: not a CLUSTER SLOTS or SHARDS reply"
                ),
            ));
        }
        match self.events.get(self.pos) {
            None => Err(err(
                self.line_at(self.pos),
                "the reply ends where a value was expected",
            )),
            Some(Event::Scalar(r, _)) => {
                let r = r.clone();
                self.pos += 1;
                Ok(r)
            }
            Some(Event::Marker { col, map_key, .. }) => {
                let (col, is_map) = (*col, map_key.is_some());
                let mut items = Vec::new();
                let mut map = Vec::new();
                while let Some(Event::Marker {
                    col: c, map_key, ..
                }) = self.events.get(self.pos)
                {
                    if *c != col || map_key.is_some() != is_map {
                        break;
                    }
                    let key = map_key.clone();
                    self.pos += 1;
                    let v = self.value(depth + 1)?;
                    match key {
                        Some(k) => map.push((k, v)),
                        None => items.push(v),
                    }
                }
                Ok(if is_map {
                    Reply::Map(map)
                } else {
                    Reply::Array(items)
                })
            }
        }
    }
}

/// Parses redis-cli's numbered display of a reply (RESP2 or RESP3).
pub fn parse_display(text: &str) -> Result<Reply, TopologyError> {
    let events = events(text)?;
    if events.is_empty() {
        return Err(err(1, "empty reply"));
    }
    let mut p = Parser { events, pos: 0 };
    let r = p.value(0)?;
    if let Some(e) = p.events.get(p.pos) {
        let line = match e {
            Event::Marker { line, .. } | Event::Scalar(_, line) => *line,
        };
        return Err(err(
            line,
            "unexpected text after the reply (a misaligned item?)",
        ));
    }
    Ok(r)
}

fn from_json(v: &serde_json::Value) -> Reply {
    match v {
        serde_json::Value::Null => Reply::Nil,
        serde_json::Value::Bool(b) => Reply::Int(*b as i64),
        serde_json::Value::Number(n) => n
            .as_i64()
            .map(Reply::Int)
            .unwrap_or_else(|| Reply::Str(n.to_string())),
        serde_json::Value::String(s) => Reply::Str(s.clone()),
        serde_json::Value::Array(a) => Reply::Array(a.iter().map(from_json).collect()),
        serde_json::Value::Object(o) => Reply::Map(
            o.iter()
                .map(|(k, v)| (Reply::Str(k.clone()), from_json(v)))
                .collect(),
        ),
    }
}

/// Whether `text` looks like a redis-cli reply display or its `--json` form.
pub fn looks_like(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("1) ") || t.starts_with('[')
}

/// Parses `CLUSTER SLOTS` or `CLUSTER SHARDS` output (display or JSON) into a slot map.
pub fn parse(text: &str, allow_partial: bool) -> Result<SlotMap, TopologyError> {
    let t = text.trim_start();
    let reply = if t.starts_with('[') || t.starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(t).map_err(|e| err(e.line(), format!("invalid JSON: {e}")))?;
        from_json(&v)
    } else {
        parse_display(text)?
    };
    from_reply_at(&reply, allow_partial, &entry_lines(text), None)
}

/// The 1-based line where each top-level entry of a reply's text starts: the lines of the
/// display's top-level markers (`1) `, `2) `, …), or of the values at depth 1 of JSON.
fn entry_lines(text: &str) -> Vec<usize> {
    let t = text.trim_start();
    let skipped = text.len() - t.len();
    let first_line = 1 + text[..skipped].matches('\n').count();
    if !(t.starts_with('[') || t.starts_with('{')) {
        return text
            .lines()
            .enumerate()
            .filter(|(_, l)| {
                let digits = l.bytes().take_while(u8::is_ascii_digit).count();
                digits > 0 && matches!(l.as_bytes().get(digits), Some(b')' | b'#'))
            })
            .map(|(i, _)| i + 1)
            .collect();
    }
    let (mut depth, mut line, mut in_str, mut escaped) = (0usize, first_line, false, false);
    let mut expect_value = false;
    let mut out = Vec::new();
    for c in t.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        if depth == 1 && expect_value && !c.is_whitespace() && c != ']' {
            out.push(line);
            expect_value = false;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expect_value = true;
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => expect_value = true,
            _ => {}
        }
    }
    out
}

/// Interprets a `CLUSTER SLOTS` or `CLUSTER SHARDS` reply (however it was obtained).
///
/// `asked` is the host the reply came from: a node listed with an empty address is that host
/// (a node that never met another does not know its own address; clients such as redis-cli and
/// redis-py then use the address they reached it at).
pub fn from_reply(
    reply: &Reply,
    allow_partial: bool,
    asked: &str,
) -> Result<SlotMap, TopologyError> {
    from_reply_at(reply, allow_partial, &[], Some(asked))
}

/// A node id, when given, must be one: 40 hexadecimal digits.
fn check_id(id: Option<&str>, what: &str, at: usize) -> Result<(), TopologyError> {
    match id {
        Some(id) if !super::is_node_id(id) => Err(err(
            at,
            format!("{what}: node id {id:?} is not 40 hexadecimal digits"),
        )),
        _ => Ok(()),
    }
}

/// [`from_reply`], with the line each entry starts on for the errors (1 when unknown).
fn from_reply_at(
    reply: &Reply,
    allow_partial: bool,
    lines: &[usize],
    asked: Option<&str>,
) -> Result<SlotMap, TopologyError> {
    let Reply::Array(items) = reply else {
        return Err(err(1, "expected an array of slot ranges or shards"));
    };
    let mut nodes: Vec<Node> = Vec::new();
    let mut owner = vec![NO_OWNER; SLOT_COUNT].into_boxed_slice();
    let mut add =
        |node: Node, ranges: &[(i64, i64)], what: &str, at: usize| -> Result<(), TopologyError> {
            let idx = match nodes.iter().position(|n| n.name == node.name) {
                Some(i) => i,
                None => {
                    nodes.push(node);
                    nodes.len() - 1
                }
            };
            for &(a, b) in ranges {
                if a < 0 || b >= SLOT_COUNT as i64 || a > b {
                    return Err(err(
                        at,
                        format!("{what}: slot range {a}-{b} is not within 0-16383"),
                    ));
                }
                for s in a..=b {
                    let o = &mut owner[s as usize];
                    if *o != NO_OWNER && *o as usize != idx {
                        return Err(err(at, format!("slot {s} is owned twice ({what})")));
                    }
                    *o = idx as u16;
                }
            }
            Ok(())
        };
    for (i, item) in items.iter().enumerate() {
        let what = format!("entry {}", i + 1);
        let at = lines.get(i).copied().unwrap_or(1);
        if let Some(slots) = item.get("slots") {
            // CLUSTER SHARDS: {slots: [s1, e1, …], nodes: [{id, ip, endpoint, port, role, …}]}
            let Reply::Array(flat) = slots else {
                return Err(err(at, format!("{what}: 'slots' is not a list")));
            };
            let v: Vec<i64> = flat.iter().filter_map(Reply::as_int).collect();
            let ranges: Vec<(i64, i64)> = v
                .chunks(2)
                .filter(|c| c.len() == 2)
                .map(|c| (c[0], c[1]))
                .collect();
            let Some(Reply::Array(ns)) = item.get("nodes") else {
                return Err(err(at, format!("{what}: no 'nodes'")));
            };
            let master = ns
                .iter()
                .find(|n| n.get("role").and_then(Reply::as_str) == Some("master"))
                .ok_or_else(|| err(at, format!("{what}: no node with role master")))?;
            let id = master.get("id").and_then(Reply::as_str).map(str::to_string);
            check_id(id.as_deref(), &what, at)?;
            let host = master
                .get("endpoint")
                .and_then(Reply::as_str)
                .filter(|e| !e.is_empty() && *e != "?")
                .or_else(|| master.get("ip").and_then(Reply::as_str))
                .map(|h| match (h, asked) {
                    ("", Some(asked)) => asked,
                    _ => h,
                });
            let port = master
                .get("port")
                .or_else(|| master.get("tls-port"))
                .and_then(Reply::as_int);
            let address = match (host, port) {
                (Some(h), Some(p)) => Some(format!("{h}:{p}")),
                _ => None,
            };
            let health = master
                .get("health")
                .and_then(Reply::as_str)
                .unwrap_or("online");
            let replicas = ns.len() - 1;
            let node = Node {
                name: address
                    .clone()
                    .or_else(|| id.as_ref().map(|i| i.chars().take(8).collect()))
                    .unwrap_or_else(|| what.clone()),
                id,
                address,
                flags: if health == "online" {
                    Vec::new()
                } else {
                    vec![health.to_string()]
                },
                replicas,
            };
            add(node, &ranges, &what, at)?;
        } else if let Reply::Array(parts) = item {
            // CLUSTER SLOTS: [start, end, [ip, port, id, …], replicas…]
            let (Some(a), Some(b)) = (
                parts.first().and_then(Reply::as_int),
                parts.get(1).and_then(Reply::as_int),
            ) else {
                return Err(err(at, format!("{what}: expected start and end slots")));
            };
            let Some(Reply::Array(m)) = parts.get(2) else {
                return Err(err(at, format!("{what}: no master node")));
            };
            let host = match (m.first().and_then(Reply::as_str).unwrap_or(""), asked) {
                ("", Some(asked)) => asked,
                (h, _) => h,
            };
            let port = m.get(1).and_then(Reply::as_int);
            let id = m.get(2).and_then(Reply::as_str).map(str::to_string);
            check_id(id.as_deref(), &what, at)?;
            let address = port
                .map(|p| format!("{host}:{p}"))
                .filter(|_| !host.is_empty() && host != "?");
            let node = Node {
                name: address
                    .clone()
                    .or_else(|| id.as_ref().map(|i| i.chars().take(8).collect()))
                    .unwrap_or_else(|| what.clone()),
                id,
                address,
                flags: Vec::new(),
                replicas: parts.len().saturating_sub(3),
            };
            add(node, &[(a, b)], &what, at)?;
        } else {
            return Err(err(
                at,
                format!("{what}: neither a CLUSTER SLOTS range nor a CLUSTER SHARDS shard"),
            ));
        }
    }
    let map = SlotMap {
        nodes,
        owner,
        migrations: Vec::new(),
        enterprise: None,
    };
    map.validated(allow_partial)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOTS: &str = r#"1) 1) (integer) 0
   2) (integer) 5460
   3) 1) "127.0.0.1"
      2) (integer) 30001
      3) "09dbe9720cda62f7865eabc5fd8857c5d2678366"
      4) (empty array)
   4) 1) "127.0.0.1"
      2) (integer) 30004
      3) "821d8ca00d7ccf931ed3ffc7e3db0599d2271abf"
      4) (empty array)
2) 1) (integer) 5461
   2) (integer) 16383
   3) 1) "127.0.0.1"
      2) (integer) 30002
      3) "c9d93d9f2c0c524ff34cc11838c2003d8c29e013"
      4) (empty array)
"#;

    const SHARDS3: &str = r#"1) 1# "slots" => 
      1) (integer) 0
      2) (integer) 5460
      3) (integer) 7000
      4) (integer) 16383
   2# "nodes" => 
      1) 1# "id" => "e10b7051d6bf2d5febd39a2be297bbaea6084111"
         2# "port" => (integer) 30001
         3# "ip" => "127.0.0.1"
         4# "endpoint" => "127.0.0.1"
         5# "role" => "master"
         6# "replication-offset" => (integer) 72156
         7# "health" => "online"
2) 1# "slots" => 
      1) (integer) 5461
      2) (integer) 6999
   2# "nodes" => 
      1) 1# "id" => "d3a6f8f0a4e2b1c7d9e8f7a6b5c4d3e2f1a0b9c8"
         2# "port" => (integer) 30002
         3# "ip" => "127.0.0.1"
         4# "endpoint" => "127.0.0.1"
         5# "role" => "master"
         6# "replication-offset" => (integer) 72156
         7# "health" => "online"
"#;

    #[test]
    fn slots_display() {
        let m = parse(SLOTS, false).unwrap();
        assert_eq!(m.nodes().len(), 2);
        assert_eq!(m.nodes()[0].name, "127.0.0.1:30001");
        assert_eq!(m.nodes()[0].replicas, 1);
        assert_eq!(m.owner_of_slot(5461), Some(1));
    }

    #[test]
    fn shards_resp3_display() {
        let m = parse(SHARDS3, false).unwrap();
        assert_eq!(m.ranges_of(0), vec![(0, 5460), (7000, 16383)]);
        assert_eq!(m.nodes()[1].name, "127.0.0.1:30002");
    }

    #[test]
    fn json_and_errors() {
        let j = r#"[[0,16383,["127.0.0.1",7000,"e10b7051d6bf2d5febd39a2be297bbaea6084111",{}]]]"#;
        assert_eq!(parse(j, false).unwrap().nodes()[0].name, "127.0.0.1:7000");
        let e = parse(&SLOTS.replace("16383", "16000"), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("16001-16383"), "{e}");
        assert!(parse("1) nonsense\n  2) x", false).is_err());
        // A stray value after the reply is placed on its own line, never on "line 0".
        let stray = "1) 1) (integer) 0\n   2) (integer) 16383\n   3) 1) \"127.0.0.1\"\n      2) (integer) 7000\n\"x\"\n";
        let e = parse(stray, false).unwrap_err().to_string();
        assert!(e.starts_with("line 5:"), "{e}");
        assert!(parse("[1,2", false).is_err());
        // An id that is not 40 hex digits is refused at its line (scripts write ids as shell
        // words), in CLUSTER SLOTS and CLUSTER SHARDS alike; no panic on odd ids or garbage.
        let j = r#"[[0,16383,["",0,"ééééééééé",{}]]]"#;
        let e = parse(j, false).unwrap_err().to_string();
        assert!(e.contains("not 40 hexadecimal digits"), "{e}");
        let j = r#"[{"slots":[0,16383],"nodes":[{"id":"$(touch x)","ip":"h","port":1,"role":"master"}]}]"#;
        let e = parse(j, false).unwrap_err().to_string();
        assert!(
            e.contains("\"$(touch x)\" is not 40 hexadecimal digits"),
            "{e}"
        );
        for junk in [
            "1) (integer) x",
            "1) 1) 2) 3)",
            "1# x",
            "[[[]]]",
            "[{\"slots\":[0,99999],\"nodes\":[]}]",
        ] {
            let _ = parse(junk, true);
        }
    }

    #[test]
    fn errors_name_the_entry_line() {
        let display = "1) 1) (integer) 0\n   2) (integer) 5460\n   3) 1) \"127.0.0.1\"\n      2) (integer) 1\n2) 1) (integer) 5461\n   2) (integer) 99999\n   3) 1) \"127.0.0.1\"\n      2) (integer) 2\n";
        assert_eq!(entry_lines(display), vec![1, 5]);
        let e = parse(display, false).unwrap_err().to_string();
        assert!(e.starts_with("line 5: entry 2"), "{e}");
        let json = "[\n  [0, 5460, [\"a\", 1]],\n  [5461, 99999, [\"b]\", 2]]\n]\n";
        assert_eq!(entry_lines(json), vec![2, 3]);
        let e = parse(json, false).unwrap_err().to_string();
        assert!(e.starts_with("line 3: entry 2"), "{e}");
    }
}
