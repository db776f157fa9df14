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

#[test]
fn hostile_servers_get_clear_errors() {
    for (reply, want) in [
        (
            &b"HTTP/1.1 400 Bad Request\r\n\r\n"[..],
            "does not speak the Redis protocol",
        ),
        (&b"-ERR unknown command\r\n"[..], "127.0.0.1"),
        // A bulk reply that announces 2 GB and never sends it: a timeout, not a 2 GB buffer.
        (&b"$2147483647\r\nabc"[..], "no answer within the timeout"),
        (&b"*2147483647\r\n"[..], "no answer within the timeout"),
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

#[test]
fn a_bad_timeout_is_named() {
    let out = keyplan()
        .env("KEYPLAN_TIMEOUT", "soon")
        .args(["analyze", "--cluster", "redis://127.0.0.1:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KEYPLAN_TIMEOUT=soon"));
}
