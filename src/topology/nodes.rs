//! `CLUSTER NODES` text and `nodes.conf`.
//!
//! `<id> <ip:port@cport[,hostname[,aux…]]> <flags> <master|-> <ping-sent> <pong-recv>
//! <config-epoch> <link-state> <slot|start-end|[slot->-id]|[slot-<-id]> …`
//!
//! Masters own the slots listed on their line; replicas are counted for their master. The
//! bracketed markers on the `myself` line say a slot is migrating to (`->-`) or importing from
//! (`-<-`) another node: they are reported, never treated as ownership. `nodes.conf` adds a
//! trailing `vars …` line and aux fields after the address; both are accepted.

use super::{Migration, MigrationDirection, Node, TopologyError};
use crate::slot::SLOT_COUNT;

/// A parsed `CLUSTER NODES` listing.
#[derive(Debug, Clone)]
pub struct ClusterNodes {
    /// Masters, in the order of the listing.
    pub masters: Vec<Node>,
    /// Owner (index into `masters`) of each slot, per line parsed.
    pub owner: Vec<Option<u16>>,
    /// Slots in migration.
    pub migrations: Vec<Migration>,
    /// Every node line (masters and replicas), in the order of the listing.
    pub lines: Vec<NodeLine>,
}

/// One node line of a `CLUSTER NODES` listing, as `redis-cli --cluster` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLine {
    /// The 40-character node id.
    pub id: String,
    /// The name keyplan prints (the address when known).
    pub name: String,
    /// `host:port`, when known.
    pub address: Option<String>,
    /// Every flag on the line (`myself`, `master`, `slave`, `fail`, …).
    pub flags: Vec<String>,
    /// The master's id, for a replica.
    pub master_of: Option<String>,
    /// The link state (`connected` or `disconnected`).
    pub link_state: String,
}

use super::is_node_id;

fn err(line: usize, message: impl Into<String>) -> TopologyError {
    TopologyError::Parse {
        line,
        message: message.into(),
    }
}

fn parse_slot(s: &str, line: usize) -> Result<u16, TopologyError> {
    match s.parse::<u32>() {
        Ok(v) if (v as usize) < SLOT_COUNT => Ok(v as u16),
        _ => Err(err(line, format!("'{s}' is not a slot number (0-16383)"))),
    }
}

/// Whether `text` looks like `CLUSTER NODES` output (its first non-blank line does).
pub fn looks_like(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .is_some_and(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            !f.is_empty() && is_node_id(f[0])
        })
}

/// Parses `CLUSTER NODES` text. Every problem names its 1-based line.
pub fn parse(text: &str) -> Result<ClusterNodes, TopologyError> {
    struct Line<'a> {
        no: usize,
        id: &'a str,
        name: String,
        address: Option<String>,
        flags: Vec<String>,
        master_of: Option<&'a str>,
        link_state: &'a str,
        slots: Vec<&'a str>,
    }
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let no = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with("vars ") || l.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 8 {
            return Err(err(
                no,
                format!(
                    "expected at least 8 fields (<id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state>), found {}",
                    f.len()
                ),
            ));
        }
        if !is_node_id(f[0]) {
            return Err(err(no, format!("'{}' is not a 40-character node id", f[0])));
        }
        // ip:port@cport[,hostname[,aux=…]]
        let mut addr_parts = f[1].split(',');
        let endpoint = addr_parts.next().unwrap_or_default();
        let hostname = addr_parts
            .next()
            .filter(|h| !h.is_empty() && !h.contains('='));
        let hostport = endpoint.split('@').next().unwrap_or_default();
        let Some((host, port)) = hostport.rsplit_once(':') else {
            return Err(err(
                no,
                format!("'{}' is not an ip:port@cport address", f[1]),
            ));
        };
        if port.parse::<u16>().is_err() {
            return Err(err(
                no,
                format!("'{port}' in '{}' is not a port number", f[1]),
            ));
        }
        let address = if host.is_empty() || port == "0" {
            None
        } else {
            Some(hostport.to_string())
        };
        let name = match (&address, hostname) {
            (Some(a), _) => a.clone(),
            (None, Some(h)) => format!("{h}:{port}"),
            (None, None) => f[0][..8].to_string(),
        };
        let flags: Vec<String> = f[2].split(',').map(str::to_string).collect();
        let master_of = (f[3] != "-").then_some(f[3]);
        if let Some(m) = master_of
            && !is_node_id(m)
        {
            return Err(err(
                no,
                format!("master field '{m}' is neither '-' nor a node id"),
            ));
        }
        lines.push(Line {
            no,
            id: f[0],
            name,
            address,
            flags,
            master_of,
            link_state: f[7],
            slots: f[8..].to_vec(),
        });
    }
    if lines.is_empty() {
        return Err(err(1, "no node lines found"));
    }
    // Node ids to their first line and their master index: lookups, not a scan per line (a
    // map of thousands of nodes would cost billions of comparisons).
    let mut line_of_id: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, l) in lines.iter().enumerate() {
        line_of_id.entry(l.id).or_insert(i);
    }
    let is_master = |l: &Line<'_>| l.flags.iter().any(|f| f == "master");
    let mut masters: Vec<Node> = Vec::new();
    let mut master_line: Vec<usize> = Vec::new();
    for l in lines.iter().filter(|l| is_master(l)) {
        masters.push(Node {
            name: l.name.clone(),
            id: Some(l.id.to_string()),
            address: l.address.clone(),
            flags: l
                .flags
                .iter()
                .filter(|f| *f != "myself" && *f != "master")
                .cloned()
                .collect(),
            replicas: 0,
        });
        master_line.push(l.no);
    }
    let mut master_of_id: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, l) in lines.iter().filter(|l| is_master(l)).enumerate() {
        master_of_id.entry(l.id).or_insert(i);
    }
    let mut owner: Vec<Option<u16>> = vec![None; SLOT_COUNT];
    let mut migrations = Vec::new();
    for l in &lines {
        if let Some(m) = l.master_of {
            match line_of_id.get(m) {
                Some(_) => {
                    if let Some(&mi) = master_of_id.get(m) {
                        masters[mi].replicas += 1;
                    }
                }
                None => {
                    return Err(err(l.no, format!("replica of unknown node {m}")));
                }
            }
        }
        let mi = master_of_id.get(l.id).copied();
        for s in &l.slots {
            if let Some(inner) = s.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
                let (slot, dir, peer) = if let Some((a, b)) = inner.split_once("->-") {
                    (a, MigrationDirection::Migrating, b)
                } else if let Some((a, b)) = inner.split_once("-<-") {
                    (a, MigrationDirection::Importing, b)
                } else {
                    return Err(err(
                        l.no,
                        format!("'{s}' is not a [slot->-id] or [slot-<-id] marker"),
                    ));
                };
                let slot = parse_slot(slot, l.no)?;
                if !line_of_id.contains_key(peer) {
                    return Err(err(l.no, format!("'{s}' names unknown node {peer}")));
                }
                let peer_name = line_of_id.get(peer).map(|&i| lines[i].name.clone());
                migrations.push(Migration {
                    slot,
                    node: l.name.clone(),
                    peer: peer_name.unwrap_or_else(|| peer.to_string()),
                    direction: dir,
                });
                continue;
            }
            let Some(mi) = mi else {
                return Err(err(
                    l.no,
                    format!("slot range '{s}' on a node that is not a master"),
                ));
            };
            let (a, b) = match s.split_once('-') {
                Some((a, b)) => (parse_slot(a, l.no)?, parse_slot(b, l.no)?),
                None => {
                    let v = parse_slot(s, l.no)?;
                    (v, v)
                }
            };
            if a > b {
                return Err(err(l.no, format!("slot range '{s}' runs backwards")));
            }
            for slot in a..=b {
                if let Some(prev) = owner[slot as usize]
                    && prev as usize != mi
                {
                    return Err(err(
                        l.no,
                        format!(
                            "slot {slot} is owned twice: by {} (line {}) and by {} (this line)",
                            masters[prev as usize].name, master_line[prev as usize], l.name
                        ),
                    ));
                }
                owner[slot as usize] = Some(mi as u16);
            }
        }
    }
    migrations.sort_by(|a, b| a.slot.cmp(&b.slot).then_with(|| a.node.cmp(&b.node)));
    let lines = lines
        .iter()
        .map(|l| NodeLine {
            id: l.id.to_string(),
            name: l.name.clone(),
            address: l.address.clone(),
            flags: l.flags.clone(),
            master_of: l.master_of.map(str::to_string),
            link_state: l.link_state.to_string(),
        })
        .collect();
    Ok(ClusterNodes {
        masters,
        owner,
        migrations,
        lines,
    })
}
