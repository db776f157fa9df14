//! twemproxy (nutcracker) pool configuration, read as nutcracker reads it (`src/nc_conf.c`).
//!
//! The file is YAML: a mapping of pool names to pools. A pool's `servers` are
//! `host:port:weight [name]` (or `/unix/path:weight [name]`); `hash` (default `fnv1a_64`),
//! `distribution` (default `ketama`) and `hash_tag` (two characters) decide placement. The
//! other directives nutcracker knows are accepted and ignored; unknown ones are errors, as in
//! nutcracker.

use super::hashes::TwemHash;
use super::ring::{Ring, RingKind, RingServer};
use super::{Node, TopologyError};
use indexmap::IndexMap;
use serde::Deserialize;
use serde::de::IgnoredAny;

/// One pool as written in the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PoolConfig {
    listen: Option<IgnoredAny>,
    hash: Option<String>,
    hash_tag: Option<String>,
    distribution: Option<String>,
    timeout: Option<IgnoredAny>,
    backlog: Option<IgnoredAny>,
    client_connections: Option<IgnoredAny>,
    redis: Option<IgnoredAny>,
    tcpkeepalive: Option<IgnoredAny>,
    redis_auth: Option<IgnoredAny>,
    redis_db: Option<IgnoredAny>,
    preconnect: Option<IgnoredAny>,
    auto_eject_hosts: Option<IgnoredAny>,
    server_connections: Option<IgnoredAny>,
    server_retry_timeout: Option<IgnoredAny>,
    server_failure_limit: Option<IgnoredAny>,
    servers: Option<Vec<String>>,
}

/// Whether `text` looks like a nutcracker config: a YAML mapping whose values have `servers:`.
pub fn looks_like(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with("servers:"))
        && text
            .lines()
            .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .is_some_and(|l| !l.starts_with(' ') && l.trim_end().ends_with(':'))
}

fn err(message: impl Into<String>) -> TopologyError {
    TopologyError::Config(message.into())
}

/// An error about `needle` in pool `pool`, placed on the first line of the pool's block that
/// holds it (the line the user has to fix), else unplaced.
fn err_at(text: &str, pool: &str, needle: &str, message: String) -> TopologyError {
    let mut in_pool = false;
    for (i, l) in text.lines().enumerate() {
        if !l.starts_with([' ', '\t', '#']) && !l.trim().is_empty() {
            in_pool = l.trim_end().trim_end_matches(':').trim_matches(['"', '\'']) == pool;
            continue;
        }
        if in_pool && !needle.is_empty() && l.contains(needle) {
            return TopologyError::Parse {
                line: i + 1,
                message,
            };
        }
    }
    err(message)
}

/// An error about pool `pool` as a whole, placed on the line that names it.
fn pool_err(text: &str, pool: &str, message: String) -> TopologyError {
    text.lines()
        .position(|l| {
            !l.starts_with([' ', '\t', '#'])
                && l.trim_end().trim_end_matches(':').trim_matches(['"', '\'']) == pool
        })
        .map_or_else(
            || err(message.clone()),
            |i| TopologyError::Parse {
                line: i + 1,
                message: message.clone(),
            },
        )
}

/// Parses one `servers:` entry into (host, port, weight, name, address).
fn parse_server(entry: &str) -> Result<RingServer, String> {
    let entry = entry.trim();
    let (addr, name) = match entry.split_once(char::is_whitespace) {
        Some((a, n)) => (a, Some(n.trim().to_string()).filter(|n| !n.is_empty())),
        None => (entry, None),
    };
    let (rest, weight) = addr
        .rsplit_once(':')
        .ok_or_else(|| format!("server '{entry}': expected host:port:weight [name]"))?;
    let weight: u32 =
        weight.parse().ok().filter(|w| *w > 0).ok_or_else(|| {
            format!("server '{entry}': weight '{weight}' is not a positive number")
        })?;
    let (ring_name, address) = if rest.starts_with('/') {
        // A unix socket: by nutcracker's code the ring name is the path plus ':'.
        (
            name.clone().unwrap_or_else(|| format!("{rest}:")),
            rest.to_string(),
        )
    } else {
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| format!("server '{entry}': expected host:port:weight [name]"))?;
        let port_n: u16 = port
            .parse()
            .map_err(|_| format!("server '{entry}': '{port}' is not a port number"))?;
        let ring = match &name {
            Some(n) => n.clone(),
            // libmemcached compatibility: port 11211 is left out of the ring name.
            None if port_n == 11211 => host.to_string(),
            None => format!("{host}:{port}"),
        };
        (ring, format!("{host}:{port}"))
    };
    Ok(RingServer {
        node: Node {
            name: ring_name.clone(),
            id: None,
            address: Some(address),
            flags: Vec::new(),
            replicas: 0,
        },
        ring_name: Some(ring_name),
        weight,
    })
}

/// The names of the pools in a nutcracker config, in file order.
pub fn pools(text: &str) -> Result<Vec<String>, TopologyError> {
    let cfg: IndexMap<String, PoolConfig> = serde_saphyr::from_str(text)
        .map_err(|e| err(crate::error::yaml_message(&e.to_string())))?;
    Ok(cfg.keys().cloned().collect())
}

/// Reads pool `pool` (required when the file has several) of a nutcracker config.
pub fn parse(text: &str, pool: Option<&str>) -> Result<Ring, TopologyError> {
    let cfg: IndexMap<String, PoolConfig> = serde_saphyr::from_str(text)
        .map_err(|e| err(crate::error::yaml_message(&e.to_string())))?;
    let names: Vec<String> = cfg.keys().cloned().collect();
    let (name, p) = match pool {
        Some(want) => cfg.get_key_value(want).ok_or_else(|| {
            err(format!(
                "no pool '{want}' in the config; its pools: {}",
                names.join(", ")
            ))
        })?,
        None if cfg.len() == 1 => cfg.first().expect("invariant: one pool"),
        None => {
            return Err(TopologyError::PoolNotChosen(
                names.iter().map(|n| n.to_string()).collect(),
            ));
        }
    };
    let hash_name = p.hash.as_deref().unwrap_or("fnv1a_64");
    let hash = TwemHash::from_name(hash_name).ok_or_else(|| {
        err_at(
            text,
            name,
            hash_name,
            format!(
                "pool '{name}': hash '{hash_name}' is not one nutcracker knows ({})",
                TwemHash::ALL.map(|(n, _)| n).join(", ")
            ),
        )
    })?;
    let kind = match p.distribution.as_deref().unwrap_or("ketama") {
        "ketama" => RingKind::Ketama { hash },
        "modula" => RingKind::Modula { hash },
        "random" => RingKind::Random,
        other => {
            return Err(err_at(
                text,
                name,
                other,
                format!("pool '{name}': distribution '{other}' is not ketama, modula or random"),
            ));
        }
    };
    let hash_tag = match p.hash_tag.as_deref() {
        None | Some("") => None,
        Some(t) if t.len() == 2 => Some([t.as_bytes()[0], t.as_bytes()[1]]),
        Some(t) => {
            return Err(err_at(
                text,
                name,
                "hash_tag",
                format!(
                    "pool '{name}': hash_tag '{t}' must be exactly two characters, like \"{{}}\""
                ),
            ));
        }
    };
    let servers = p
        .servers
        .as_ref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            let m = format!(
                "pool '{name}' has no servers (add `servers:` with host:port:weight entries)"
            );
            match err_at(text, name, "servers:", m.clone()) {
                placed @ TopologyError::Parse { .. } => placed,
                _ => pool_err(text, name, m),
            }
        })?
        .iter()
        .map(|s| {
            parse_server(s).map_err(|m| err_at(text, name, s.trim(), format!("pool '{name}': {m}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // nutcracker sorts a pool's servers by name (shorter names first, then bytewise) when it
    // checks for duplicates (`conf_validate_server`), and keeps that order: it is the order of
    // the modula continuum.
    let mut servers = servers;
    servers.sort_by(|a, b| {
        let (x, y) = (
            a.ring_name.as_deref().unwrap_or(""),
            b.ring_name.as_deref().unwrap_or(""),
        );
        x.len().cmp(&y.len()).then_with(|| x.cmp(y))
    });
    if let Some(w) = servers
        .windows(2)
        .find(|w| w[0].ring_name == w[1].ring_name)
    {
        let dup = w[0].ring_name.as_deref().unwrap_or("");
        return Err(err_at(
            text,
            name,
            dup,
            format!(
                "pool '{name}' has servers with the same name '{dup}' (nutcracker refuses this)"
            ),
        ));
    }
    let desc = format!(
        "twemproxy pool '{name}' ({} servers, distribution {}, hash {hash_name}{})",
        servers.len(),
        p.distribution.as_deref().unwrap_or("ketama"),
        hash_tag
            .map(|t| format!(", hash_tag \"{}\"", String::from_utf8_lossy(&t)))
            .unwrap_or_default()
    );
    Ring::try_new(kind, servers, hash_tag, desc)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONF: &str = "\
alpha:
  listen: 127.0.0.1:22121
  hash: fnv1a_64
  distribution: ketama
  auto_eject_hosts: true
  redis: true
  servers:
   - 127.0.0.1:6379:1
   - 127.0.0.1:6380:1
   - 127.0.0.1:6381:1
beta:
  listen: 127.0.0.1:22122
  hash: md5
  hash_tag: \"{}\"
  distribution: modula
  servers:
   - 127.0.0.1:6379:3 redis1
   - 127.0.0.1:11211:1
";

    #[test]
    fn pools_and_servers() {
        assert_eq!(pools(CONF).unwrap(), ["alpha", "beta"]);
        let e = parse(CONF, None).unwrap_err();
        assert_eq!(
            e,
            TopologyError::PoolNotChosen(vec!["alpha".into(), "beta".into()])
        );
        assert_eq!(e.to_string(), "the config has 2 pools (alpha, beta)");
        let a = parse(CONF, Some("alpha")).unwrap();
        assert_eq!(a.node_of(b"foo"), Some(2));
        let b = parse(CONF, Some("beta")).unwrap();
        let names: Vec<&str> = b.servers().iter().map(|s| s.node.name.as_str()).collect();
        assert_eq!(
            names,
            ["redis1", "127.0.0.1"],
            "sorted by name length, then bytes"
        );
        assert!(looks_like(CONF));
    }

    #[test]
    fn errors_in_a_pool_name_their_line() {
        let lines: Vec<&str> = CONF.lines().collect();
        let line_of = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap() + 1;
        let bad = CONF.replace("hash: md5", "hash: sha1");
        let e = parse(&bad, Some("beta")).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("line {}:", line_of("hash: md5"))),
            "{e}"
        );
        let bad = CONF.replace("127.0.0.1:11211:1", "127.0.0.1:x:1");
        let e = parse(&bad, Some("beta")).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("line {}:", line_of("127.0.0.1:11211:1"))),
            "{e}"
        );
        // The same entry in another pool is not the one named.
        let bad = CONF.replace("distribution: modula", "distribution: rendezvous");
        let e = parse(&bad, Some("beta")).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("line {}:", line_of("distribution: modula"))),
            "{e}"
        );
    }

    #[test]
    fn bad_configs() {
        let bad = CONF.replace("hash: md5", "hash: sha1");
        assert!(
            parse(&bad, Some("beta"))
                .unwrap_err()
                .to_string()
                .contains("sha1")
        );
        let bad = CONF.replace("redis: true", "rediss: true");
        assert!(parse(&bad, Some("alpha")).is_err());
        let bad = CONF.replace("\"{}\"", "\"{\"");
        assert!(
            parse(&bad, Some("beta"))
                .unwrap_err()
                .to_string()
                .contains("two characters")
        );
        assert!(
            parse(CONF, Some("gamma"))
                .unwrap_err()
                .to_string()
                .contains("alpha, beta")
        );
    }
}
