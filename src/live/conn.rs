//! One connection to one node, with the reply size capped.
//!
//! Connections are keyplan's own: a TCP socket (under TLS for `rediss://`, with the `tls`
//! build feature), redis-rs's RESP parser, and a reader that follows the replies as they
//! arrive and stops one that announces or sends more than [`MAX_REPLY_BYTES`] or
//! [`MAX_REPLY_ELEMENTS`] (a hostile or broken server that streams a gigantic bulk string or
//! array would otherwise be buffered whole).

use redis::{ConnectionLike, RedisError, RedisResult, Value};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The most bytes one reply may take: Redis's own limit for one value (`proto-max-bulk-len`,
/// 512 MB by default), plus room for the protocol around it.
pub const MAX_REPLY_BYTES: u64 = 512 * 1024 * 1024 + 64 * 1024;

/// The most elements one reply may hold (arrays, maps and sets, nested ones included): far
/// above anything keyplan asks for (a CLUSTER SLOTS reply of 16,384 ranges with six nodes each
/// is under half a million), and low enough that the parsed reply stays within a few hundred
/// megabytes.
pub const MAX_REPLY_ELEMENTS: u64 = 4 * 1024 * 1024;

/// The deepest nesting of aggregates in a reply.
const MAX_DEPTH: usize = 64;

/// The longest line (a simple string, an error, a number): Redis sends long ones only for a
/// script's status or error reply. The parser rescans a line it has not seen the end of, so
/// an endless line would take quadratic time long before the byte limit.
pub const MAX_LINE_BYTES: u64 = 1024 * 1024;

/// A connection to one node, whose replies are followed as they are read and stopped at
/// Redis's own limits.
pub struct NodeConn {
    /// What is read and written: the socket, or TLS over it.
    stream: Box<dyn Stream>,
    /// The socket (for its timeouts).
    tcp: TcpStream,
    parser: redis::Parser,
    tracker: Tracker,
    open: bool,
    limit: u64,
}

/// A byte stream to a node.
trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// Follows the RESP stream byte by byte as it is read (headers, lengths, nesting), so a reply
/// is stopped as soon as its announced or received size passes the limits, before the parser
/// has buffered it. Bytes it cannot follow (not RESP) are left to the parser's own error.
#[derive(Debug, Default)]
struct Tracker {
    /// Remaining elements of each open aggregate, and whether it is an attribute (which
    /// precedes a value instead of being one).
    stack: Vec<(u64, bool)>,
    /// The header line read so far (type byte and up to 31 more bytes), and its length.
    line: Vec<u8>,
    line_bytes: u64,
    /// Bulk payload bytes (with the closing CRLF) still to come.
    payload: u64,
    /// Bytes and elements of the reply under way.
    bytes: u64,
    elements: u64,
    /// The stream stopped being RESP: no more tracking.
    lost: bool,
}

impl Tracker {
    fn feed(&mut self, mut data: &[u8], limit: u64) -> std::io::Result<()> {
        while !data.is_empty() && !self.lost {
            if self.payload > 0 {
                let take = self.payload.min(data.len() as u64);
                self.payload -= take;
                self.bytes += take;
                data = &data[take as usize..];
                if self.payload == 0 {
                    self.done();
                }
            } else {
                let (take, end) = match memchr::memchr(b'\n', data) {
                    Some(p) => (p + 1, true),
                    None => (data.len(), false),
                };
                let room = 32usize.saturating_sub(self.line.len());
                self.line.extend_from_slice(&data[..take.min(room)]);
                self.line_bytes += take as u64;
                self.bytes += take as u64;
                if self.line_bytes > MAX_LINE_BYTES {
                    return Err(too_big(format!(
                        "a line of more than {} MiB",
                        MAX_LINE_BYTES / (1024 * 1024)
                    )));
                }
                data = &data[take..];
                if end {
                    self.header()?;
                    self.line.clear();
                    self.line_bytes = 0;
                }
            }
            if self.bytes > limit {
                return Err(too_big(format!(
                    "a reply of more than {} MiB, past Redis's own limit for one value \
                     (proto-max-bulk-len, 512 MB)",
                    limit / (1024 * 1024)
                )));
            }
        }
        Ok(())
    }

    /// A complete header line.
    fn header(&mut self) -> std::io::Result<()> {
        let Some((&kind, rest)) = self.line.split_first() else {
            self.lost = true;
            return Ok(());
        };
        let number = || -> Option<i64> { std::str::from_utf8(rest).ok()?.trim_end().parse().ok() };
        match kind {
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => self.done(),
            b'$' | b'!' | b'=' => match number() {
                Some(n) if n < 0 => self.done(),
                Some(n) if n as u64 > MAX_REPLY_BYTES => {
                    return Err(too_big(format!(
                        "a string of {n} bytes, past Redis's own limit for one value \
                         (proto-max-bulk-len, 512 MB)"
                    )));
                }
                Some(0) => self.payload = 2,
                Some(n) => self.payload = n as u64 + 2,
                None => self.lost = true,
            },
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let pairs = matches!(kind, b'%' | b'|');
                match number() {
                    Some(n) if n <= 0 => self.done(),
                    Some(n) => {
                        let n = (n as u64).saturating_mul(if pairs { 2 } else { 1 });
                        self.elements = self.elements.saturating_add(n);
                        if self.elements > MAX_REPLY_ELEMENTS {
                            return Err(too_big(format!(
                                "a reply of more than {MAX_REPLY_ELEMENTS} elements"
                            )));
                        }
                        if self.stack.len() >= MAX_DEPTH {
                            return Err(too_big(format!(
                                "a reply nested more than {MAX_DEPTH} levels deep"
                            )));
                        }
                        self.stack.push((n, kind == b'|'));
                    }
                    None => self.lost = true,
                }
            }
            _ => self.lost = true,
        }
        Ok(())
    }

    /// One value is complete.
    fn done(&mut self) {
        loop {
            let Some(top) = self.stack.last_mut() else {
                // A whole reply: the next one starts from zero.
                self.bytes = 0;
                self.elements = 0;
                return;
            };
            top.0 -= 1;
            if top.0 > 0 {
                return;
            }
            let (_, attribute) = self.stack.pop().unwrap_or((0, false));
            if attribute {
                // An attribute is followed by the value it describes.
                return;
            }
        }
    }
}

fn too_big(what: String) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("the node sent {what}: keyplan stopped reading it"),
    )
}

/// Reads from a stream through the [`Tracker`].
struct Capped<'a> {
    stream: &'a mut dyn Stream,
    tracker: &'a mut Tracker,
    limit: u64,
}

impl Read for Capped<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.stream.read(buf)?;
        self.tracker.feed(&buf[..n], self.limit)?;
        Ok(n)
    }
}

impl NodeConn {
    /// A connection to `host:port` within `timeout` (TLS when `tls`), authenticated when a
    /// password is given (`AUTH [username] password`).
    pub fn open(
        host: &str,
        port: u16,
        tls: bool,
        timeout: Duration,
        username: Option<&str>,
        password: Option<&str>,
    ) -> RedisResult<NodeConn> {
        let mut last = None;
        let mut tcp = None;
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let tcp = match (tcp, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(e.into()),
            (None, None) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{host} resolves to no address"),
                )
                .into());
            }
        };
        tcp.set_read_timeout(Some(timeout))?;
        tcp.set_write_timeout(Some(timeout))?;
        let stream: Box<dyn Stream> = if tls {
            tls_stream(host, tcp.try_clone()?)?
        } else {
            Box::new(tcp.try_clone()?)
        };
        let mut con = NodeConn {
            stream,
            tcp,
            parser: redis::Parser::new(),
            tracker: Tracker::default(),
            open: true,
            limit: MAX_REPLY_BYTES,
        };
        if let Some(password) = password {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = username {
                auth.arg(user);
            }
            auth.arg(password).query::<()>(&mut con)?;
        }
        Ok(con)
    }

    /// Sends a packed command (or pipeline) without reading its replies.
    pub fn send_packed_command(&mut self, cmd: &[u8]) -> RedisResult<()> {
        let sent = self
            .stream
            .write_all(cmd)
            .and_then(|()| self.stream.flush());
        sent.map_err(|e| {
            self.open = false;
            RedisError::from(e)
        })
    }

    /// Reads one reply (RESP3 push messages, which keyplan never asks for, are skipped).
    pub fn recv_response(&mut self) -> RedisResult<Value> {
        loop {
            let mut capped = Capped {
                stream: &mut *self.stream,
                tracker: &mut self.tracker,
                limit: self.limit,
            };
            match self.parser.parse_value(&mut capped) {
                Ok(Value::Push { .. }) => continue,
                Ok(v) => return Ok(v),
                Err(e) => {
                    // The stream is somewhere inside a reply: nothing after it can be read.
                    self.open = false;
                    return Err(e);
                }
            }
        }
    }

    /// Sets the read timeout.
    pub fn set_read_timeout(&self, dur: Option<Duration>) -> RedisResult<()> {
        Ok(self.tcp.set_read_timeout(dur)?)
    }

    /// Sets the write timeout.
    pub fn set_write_timeout(&self, dur: Option<Duration>) -> RedisResult<()> {
        Ok(self.tcp.set_write_timeout(dur)?)
    }
}

/// TLS over `tcp` to `host`, the handshake done (so a certificate that is not trusted is an
/// error here, not at the first command). Trusted: the system's store (which `SSL_CERT_FILE`
/// and `SSL_CERT_DIR` replace) and the Mozilla roots.
#[cfg(feature = "tls")]
fn tls_stream(host: &str, tcp: TcpStream) -> RedisResult<Box<dyn Stream>> {
    use std::sync::Arc;
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        RedisError::from(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("TLS {what}: {e}"),
        ))
    };
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in rustls_native_certs::load_native_certs().certs {
        // A certificate of the system's store that rustls cannot use is passed over.
        let _ = roots.add(cert);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| failed("setup", &e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| failed("server name", &e))?;
    let conn = rustls::ClientConnection::new(Arc::new(config), name)
        .map_err(|e| failed("handshake", &e))?;
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    while stream.conn.is_handshaking() {
        stream
            .conn
            .complete_io(&mut stream.sock)
            .map_err(|e| failed("handshake", &e))?;
    }
    Ok(Box::new(stream))
}

/// Without the `tls` feature, `rediss://` URLs are refused when they are parsed.
#[cfg(not(feature = "tls"))]
fn tls_stream(_host: &str, _tcp: TcpStream) -> RedisResult<Box<dyn Stream>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "rediss:// needs keyplan built with the `tls` feature",
    )
    .into())
}

impl ConnectionLike for NodeConn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.send_packed_command(cmd)?;
        self.recv_response()
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.send_packed_command(cmd)?;
        // Every reply is read, even after an error, so the next command reads its own.
        let mut out = Vec::with_capacity(count);
        let mut first_err = None;
        let mut queue_error = None;
        for i in 0..offset + count {
            match self.recv_response() {
                // A command a transaction refused to queue: the transaction is aborted.
                Ok(v @ Value::ServerError(_)) if i < offset => {
                    queue_error.get_or_insert(v);
                }
                Ok(v) if i >= offset => out.push(v),
                Ok(_) => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                    if !self.open {
                        break;
                    }
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        if let Some(v) = queue_error {
            v.extract_error()?;
        }
        Ok(out)
    }

    fn get_db(&self) -> i64 {
        0
    }

    fn check_connection(&mut self) -> bool {
        redis::cmd("PING").query::<String>(self).is_ok()
    }

    fn is_open(&self) -> bool {
        self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `data` in pieces of `step` bytes.
    fn feed(data: &[u8], step: usize, limit: u64) -> (Tracker, std::io::Result<()>) {
        let mut t = Tracker::default();
        for piece in data.chunks(step) {
            if let Err(e) = t.feed(piece, limit) {
                return (t, Err(e));
            }
        }
        (t, Ok(()))
    }

    #[test]
    fn follows_replies_split_anywhere() {
        let stream: &[u8] = b"+OK\r\n:12\r\n$5\r\nhello\r\n$-1\r\n$0\r\n\r\n*-1\r\n*0\r\n\
            *2\r\n*2\r\n:1\r\n$1\r\na\r\n-ERR x\r\n%1\r\n+k\r\n*1\r\n:2\r\n\
            |1\r\n+ttl\r\n:3\r\n$2\r\nhi\r\n>2\r\n+m\r\n+n\r\n";
        for step in 1..=stream.len() {
            let (t, r) = feed(stream, step, MAX_REPLY_BYTES);
            assert!(r.is_ok(), "step {step}: {r:?}");
            assert!(t.stack.is_empty() && !t.lost, "step {step}: {t:?}");
            assert_eq!((t.bytes, t.elements, t.payload), (0, 0, 0), "step {step}");
        }
    }

    #[test]
    fn announced_sizes_past_the_limits_stop_at_the_header() {
        for (reply, want) in [
            (&b"$2147483647\r\n"[..], "a string of 2147483647 bytes"),
            (&b"*2147483647\r\n"[..], "more than 4194304 elements"),
            (&b"*5\r\n*4194300\r\n"[..], "more than 4194304 elements"),
            (&b"%3000000\r\n"[..], "more than 4194304 elements"),
        ] {
            let err = feed(reply, 3, MAX_REPLY_BYTES).1.unwrap_err();
            assert!(err.to_string().contains(want), "{reply:?}: {err}");
        }
        let deep = b"*1\r\n".repeat(MAX_DEPTH + 1);
        let err = feed(&deep, 7, MAX_REPLY_BYTES).1.unwrap_err();
        assert!(err.to_string().contains("levels deep"), "{err}");
    }

    #[test]
    fn bytes_past_the_limit_stop_a_reply_and_each_reply_counts_alone() {
        // A simple string that never ends.
        let long = [b"+".as_slice(), &[b'x'; 5000]].concat();
        let err = feed(&long, 512, 4096).1.unwrap_err();
        assert!(err.to_string().contains("stopped reading"), "{err}");
        let endless = [b"+".as_slice(), &vec![b'x'; 2 << 20]].concat();
        let err = feed(&endless, 4096, MAX_REPLY_BYTES).1.unwrap_err();
        assert!(
            err.to_string().contains("a line of more than 1 MiB"),
            "{err}"
        );
        // Many small replies in a row, each well under the limit.
        let many = b"$10\r\n0123456789\r\n".repeat(1000);
        assert!(feed(&many, 100, 4096).1.is_ok());
    }

    #[test]
    fn what_is_not_resp_is_left_to_the_parser() {
        let (t, r) = feed(b"HTTP/1.1 400 Bad Request\r\n\r\n", 5, MAX_REPLY_BYTES);
        assert!(r.is_ok());
        assert!(t.lost);
    }
}
