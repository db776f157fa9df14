//! `rediss://` with the `tls` build: a real 3-master cluster serving only TLS (`tls-cluster
//! yes`), its certificate signed by a CA made for the test. Untrusted, the handshake fails with
//! a clear error; trusted through `SSL_CERT_FILE`, keyplan reads the cluster as over TCP.
#![cfg(feature = "tls")]

use crate::support::{keyplan, require_binary};
use std::process::Command;

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run a setup command");
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a server certificate for 127.0.0.1, made with the openssl command.
fn certificates(dir: &std::path::Path) {
    let openssl = require_binary("openssl").expect("openssl (CI installs it)");
    let at = |f: &str| dir.join(f);
    run(Command::new(&openssl)
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=keyplan test CA", "-keyout"])
        .arg(at("ca.key"))
        .arg("-out")
        .arg(at("ca.crt")));
    run(Command::new(&openssl)
        .args([
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
        ])
        .arg(at("server.key"))
        .arg("-out")
        .arg(at("server.csr")));
    std::fs::write(
        at("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    run(Command::new(&openssl)
        .args(["x509", "-req", "-days", "2", "-CAcreateserial", "-in"])
        .arg(at("server.csr"))
        .arg("-CA")
        .arg(at("ca.crt"))
        .arg("-CAkey")
        .arg(at("ca.key"))
        .arg("-extfile")
        .arg(at("ext.cnf"))
        .arg("-out")
        .arg(at("server.crt")));
}

/// Three TLS-only cluster nodes, stopped when dropped.
struct TlsCluster {
    ports: Vec<u16>,
    cli: std::path::PathBuf,
    ca: std::path::PathBuf,
}

impl Drop for TlsCluster {
    fn drop(&mut self) {
        for p in &self.ports {
            let _ = Command::new(&self.cli)
                .args(["--tls", "--cacert"])
                .arg(&self.ca)
                .args(["-p", &p.to_string(), "shutdown", "nosave"])
                .output();
        }
    }
}

fn rediss_reads_a_tls_cluster_and_refuses_an_untrusted_one() {
    let (Some(server), Some(cli)) = (require_binary("redis-server"), require_binary("redis-cli"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path());
    let file = |f: &str| dir.path().join(f);
    let cluster = TlsCluster {
        ports: (0..3).map(|_| crate::support::free_port()).collect(),
        cli: cli.clone(),
        ca: file("ca.crt"),
    };
    for p in &cluster.ports {
        run(Command::new(&server)
            .args(["--port", "0", "--tls-port", &p.to_string()])
            .arg("--tls-cert-file")
            .arg(file("server.crt"))
            .arg("--tls-key-file")
            .arg(file("server.key"))
            .arg("--tls-ca-cert-file")
            .arg(file("ca.crt"))
            .args(["--tls-auth-clients", "no", "--tls-cluster", "yes"])
            .args(["--tls-replication", "yes", "--cluster-enabled", "yes"])
            .args(["--cluster-config-file", &format!("nodes-{p}.conf")])
            .args(["--save", "", "--daemonize", "yes", "--dir"])
            .arg(dir.path())
            .arg("--logfile")
            .arg(file(&format!("{p}.log"))));
    }
    let tls_cli = || {
        let mut c = Command::new(&cli);
        c.args(["--tls", "--cacert"]).arg(file("ca.crt"));
        c
    };
    // Wait for the servers, then join them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    for p in &cluster.ports {
        while !tls_cli()
            .args(["-p", &p.to_string(), "PING"])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("PONG"))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "TLS node {p} did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let mut create = tls_cli();
    create.args(["--cluster", "create"]);
    for p in &cluster.ports {
        create.arg(format!("127.0.0.1:{p}"));
    }
    run(create.arg("--cluster-yes"));
    let seed = cluster.ports[0].to_string();
    while !tls_cli()
        .args(["-p", &seed, "CLUSTER", "INFO"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("cluster_state:ok"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "TLS cluster did not reach ok"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let script: String = (0..300).map(|i| format!("SET user:{i} x\n")).collect();
    let mut load = tls_cli()
        .args(["-c", "-p", &seed])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(load.stdin.as_mut().unwrap(), script.as_bytes()).unwrap();
    drop(load.stdin.take());
    assert!(load.wait().unwrap().success());

    let url = format!("rediss://127.0.0.1:{seed}");
    // The test CA is in no trust store (the system's, the Mozilla roots): a clear error.
    let out = keyplan()
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .args(["analyze", "--cluster", &url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("TLS handshake") && text.contains("UnknownIssuer"),
        "{text}"
    );
    // Trusted through SSL_CERT_FILE: the exact counts come over TLS.
    let out = keyplan()
        .env("SSL_CERT_FILE", file("ca.crt"))
        .args([
            "analyze",
            "--cluster",
            &url,
            "--sample",
            "all",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: u64 = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["keys"].as_u64().unwrap())
        .sum();
    assert_eq!(keys, 300, "{v}");
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[(
    "rediss_reads_a_tls_cluster_and_refuses_an_untrusted_one",
    rediss_reads_a_tls_cluster_and_refuses_an_untrusted_one,
)];
