//! Small fake servers that answer hostile or broken replies: keyplan says what is wrong with the
//! node, within its timeout, and never panics or hangs.

use crate::support::keyplan;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// A server that answers every request with `reply` (and then keeps the connection open).
fn fake(reply: &'static [u8]) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 || c.write_all(reply).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

/// A one-node "cluster" that answers each command with what `answer` returns for it (the
/// command's arguments and the server's port), parsing requests as RESP arrays.
fn scripted(answer: fn(&[Vec<u8>], u16) -> Vec<u8>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { continue };
            std::thread::spawn(move || {
                let mut r = std::io::BufReader::new(c.try_clone().unwrap());
                let mut w = c;
                let mut line = String::new();
                loop {
                    line.clear();
                    if std::io::BufRead::read_line(&mut r, &mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let Some(n) = line
                        .trim()
                        .strip_prefix('*')
                        .and_then(|n| n.parse::<usize>().ok())
                    else {
                        return;
                    };
                    let mut args = Vec::new();
                    for _ in 0..n {
                        line.clear();
                        let _ = std::io::BufRead::read_line(&mut r, &mut line);
                        let len: usize = line.trim().trim_start_matches('$').parse().unwrap_or(0);
                        let mut arg = vec![0u8; len + 2];
                        if r.read_exact(&mut arg).is_err() {
                            return;
                        }
                        arg.truncate(len);
                        args.push(arg);
                    }
                    if w.write_all(&answer(&args, port)).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

fn bulk(s: &str) -> Vec<u8> {
    format!("${}\r\n{s}\r\n", s.len()).into_bytes()
}

/// A one-node cluster owning every slot, answering SCAN with `scan` for every cursor, and
/// CLUSTER SLOT-STATS with `slot_stats` (else as a server without it).
fn one_node(args: &[Vec<u8>], port: u16, scan: &[u8], slot_stats: Option<&[u8]>) -> Vec<u8> {
    let id = "0123456789abcdef0123456789abcdef01234567";
    let word = |i: usize| {
        args.get(i)
            .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
            .unwrap_or_default()
    };
    match (word(0).as_str(), word(1).as_str()) {
        ("PING", _) => b"+PONG\r\n".to_vec(),
        ("CLUSTER", "NODES") => bulk(&format!(
            "{id} 127.0.0.1:{port}@{} myself,master - 0 0 1 connected 0-16383\n",
            u32::from(port) + 10000
        )),
        ("CLUSTER", "SLOTS") => {
            let mut r = b"*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n".to_vec();
            r.extend(bulk("127.0.0.1"));
            r.extend(format!(":{port}\r\n").into_bytes());
            r.extend(bulk(id));
            r
        }
        ("SCAN", _) => scan.to_vec(),
        ("CLUSTER", "COUNTKEYSINSLOT") => b":9223372036854775807\r\n".to_vec(),
        ("CLUSTER", "SLOT-STATS") if slot_stats.is_some() => {
            slot_stats.unwrap_or_default().to_vec()
        }
        ("DBSIZE", _) => b":1\r\n".to_vec(),
        _ => b"-ERR unknown command\r\n".to_vec(),
    }
}

/// A node that gives the same SCAN page forever (a non-zero cursor that comes back, the same
/// keys): `scan -o` and `analyze --sample all` stop with an error naming the node instead of
/// running for ever.
fn a_scan_that_repeats_its_pages_is_stopped() {
    let port =
        scripted(|args, port| one_node(args, port, b"*2\r\n$1\r\n7\r\n*1\r\n$3\r\nabc\r\n", None));
    let url = format!("redis://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("keys.txt");
    for args in [
        vec![
            "scan",
            "--cluster",
            &url,
            "--sample",
            "all",
            "-o",
            out_file.to_str().unwrap(),
        ],
        vec!["analyze", "--cluster", &url, "--sample", "all"],
    ] {
        let out = keyplan()
            .env("KEYPLAN_TIMEOUT", "5")
            .args(&args)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(
            text.contains("makes no progress") && text.contains(&format!("127.0.0.1:{port}")),
            "{text}"
        );
    }
}

/// A node that says a slot holds 2^63−1 keys (COUNTKEYSINSLOT), or a negative count
/// (SLOT-STATS): refused naming the node, never summed into a wrapped total.
fn implausible_counts_are_refused() {
    const ONE_PAGE: &[u8] = b"*2\r\n$1\r\n0\r\n*1\r\n$3\r\nabc\r\n";
    let huge = scripted(|args, port| one_node(args, port, ONE_PAGE, None));
    // A key count below zero for slot 0.
    let negative = scripted(|args, port| {
        let stats = b"*1\r\n*2\r\n:0\r\n*2\r\n$9\r\nkey-count\r\n:-5\r\n";
        one_node(args, port, ONE_PAGE, Some(stats))
    });
    for (port, want) in [
        (huge, "9223372036854775807 keys"),
        (negative, "key-count -5"),
    ] {
        let url = format!("redis://127.0.0.1:{port}");
        let out = keyplan()
            .env("KEYPLAN_TIMEOUT", "5")
            .args(["analyze", "--cluster", &url])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{text}{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            text.contains(want) && text.contains(&format!("127.0.0.1:{port}")),
            "{text}"
        );
    }
}

fn hostile_servers_get_clear_errors() {
    for (reply, want) in [
        (
            &b"HTTP/1.1 400 Bad Request\r\n\r\n"[..],
            "does not speak the Redis protocol",
        ),
        (&b"-ERR unknown command\r\n"[..], "127.0.0.1"),
        // Replies that announce more than Redis's own limits are refused at their header.
        (
            &b"$2147483647\r\nabc"[..],
            "a string of 2147483647 bytes, past Redis's own limit",
        ),
        (&b"*2147483647\r\n"[..], "more than 4194304 elements"),
        // A bulk reply that announces a legal size and never sends it: a timeout.
        (&b"$1000\r\nabc"[..], "no answer within the timeout"),
        (&b"+OK\r\n"[..], "127.0.0.1"),
    ] {
        let port = fake(reply);
        let url = format!("redis://127.0.0.1:{port}");
        let started = Instant::now();
        let out = keyplan()
            .env("KEYPLAN_TIMEOUT", "1")
            .args(["analyze", "--cluster", &url])
            .timeout(Duration::from_secs(90))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{reply:?}: {text}");
        assert!(text.contains(want), "{reply:?}: {text}");
        assert!(!text.contains("panicked"), "{reply:?}: {text}");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{reply:?}: took {:?}",
            started.elapsed()
        );
    }
}

/// A server that answers every request with `head` and then `fill` over and over (about
/// `mib` MiB of it), as fast as the socket takes it.
fn streaming(head: &'static [u8], fill: Vec<u8>, mib: usize) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let chunk = fill.repeat(((1 << 20) / fill.len()).max(1));
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let chunk = chunk.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 || c.write_all(head).is_err() {
                        break;
                    }
                    for _ in 0..mib {
                        if c.write_all(&chunk).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    port
}

fn replies_past_redis_limits_are_stopped_while_they_stream() {
    let big_bulk = [&b"$65536\r\n"[..], &[b'x'; 65536], b"\r\n"].concat();
    for (head, fill, want) in [
        // A simple string that never ends.
        (&b"+"[..], b"x".to_vec(), "a line of more than 1 MiB"),
        // An array of a legal length whose 64 KiB elements add up past 512 MiB.
        (
            &b"*4000000\r\n"[..],
            big_bulk,
            "a reply of more than 512 MiB",
        ),
        // Nested arrays that announce more elements than any reply keyplan asks for.
        (
            &b"*4000000\r\n*4000000\r\n"[..],
            b":1\r\n".to_vec(),
            "more than 4194304 elements",
        ),
    ] {
        let port = streaming(head, fill, 2048);
        let out = keyplan()
            .env("KEYPLAN_TIMEOUT", "5")
            .args(["analyze", "--cluster", &format!("redis://127.0.0.1:{port}")])
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{head:?}: {text}");
        assert!(text.contains(want), "{head:?}: {text}");
        assert!(
            text.contains("keyplan stopped reading it"),
            "{head:?}: {text}"
        );
    }
}

fn a_bad_timeout_is_named() {
    let out = keyplan()
        .env("KEYPLAN_TIMEOUT", "soon")
        .args(["analyze", "--cluster", "redis://127.0.0.1:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KEYPLAN_TIMEOUT=soon"));
}

/// This module's tests, run by the harness in `main.rs`.
pub(crate) const TESTS: &[crate::support::Test] = &[
    (
        "implausible_counts_are_refused",
        implausible_counts_are_refused,
    ),
    (
        "a_scan_that_repeats_its_pages_is_stopped",
        a_scan_that_repeats_its_pages_is_stopped,
    ),
    (
        "hostile_servers_get_clear_errors",
        hostile_servers_get_clear_errors,
    ),
    (
        "replies_past_redis_limits_are_stopped_while_they_stream",
        replies_past_redis_limits_are_stopped_while_they_stream,
    ),
    ("a_bad_timeout_is_named", a_bad_timeout_is_named),
];
