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
        "hostile_servers_get_clear_errors",
        hostile_servers_get_clear_errors,
    ),
    (
        "replies_past_redis_limits_are_stopped_while_they_stream",
        replies_past_redis_limits_are_stopped_while_they_stream,
    ),
    ("a_bad_timeout_is_named", a_bad_timeout_is_named),
];
