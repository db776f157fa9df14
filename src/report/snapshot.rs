//! A snapshot's keys as `keyplan scan --rdb` writes them: JSON lines (one object per key) or
//! the tsv key dump (`key<TAB>bytes`) every other command reads.

use super::render::{Format, Stream};
use crate::keys::display::JsonBytes;
use crate::keys::quote_into;
use crate::rdb::KeyInfo;
use std::io::{self, Write};

/// Starts `scan --rdb`'s output in `format` (tsv or JSON lines) on `out`: a line per key.
pub fn snapshot_stream<'o>(
    format: Format,
    out: &'o mut dyn Write,
) -> io::Result<Box<dyn for<'k> Stream<KeyInfo<'k>> + 'o>> {
    Ok(match format {
        Format::Tsv => Box::new(Tsv {
            out,
            buf: String::new(),
        }),
        Format::Jsonl => Box::new(Jsonl {
            out,
            buf: Vec::new(),
        }),
        other => return Err(super::render::unsupported("scan --rdb", other)),
    })
}

struct Tsv<'o> {
    out: &'o mut dyn Write,
    buf: String,
}

impl<'k> Stream<KeyInfo<'k>> for Tsv<'_> {
    fn item(&mut self, k: &KeyInfo<'k>) -> io::Result<()> {
        write_tsv(self.out, k, &mut self.buf)
    }
    fn finish(self: Box<Self>, _: &()) -> io::Result<()> {
        self.out.flush()
    }
}

struct Jsonl<'o> {
    out: &'o mut dyn Write,
    buf: Vec<u8>,
}

impl<'k> Stream<KeyInfo<'k>> for Jsonl<'_> {
    fn item(&mut self, k: &KeyInfo<'k>) -> io::Result<()> {
        write_jsonl(self.out, k, &mut self.buf)
    }
    fn finish(self: Box<Self>, _: &()) -> io::Result<()> {
        self.out.flush()
    }
}

/// One key as a JSON object on one line: `key` (a string, or `{"base64": …}` when the key is
/// not UTF-8), `db`, `slot`, `type`, `encoding`, `elements`, `bytes` (estimated memory; null
/// for a module's value, whose memory is not estimated),
/// `serialized`, `expires_at_ms`, `lfu`, `idle`.
fn write_jsonl(out: &mut dyn Write, k: &KeyInfo<'_>, buf: &mut Vec<u8>) -> io::Result<()> {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        key: JsonBytes<'a>,
        db: u64,
        slot: u16,
        #[serde(rename = "type")]
        kind: &'a str,
        encoding: &'a str,
        elements: Option<u64>,
        bytes: Option<u64>,
        serialized: u64,
        expires_at_ms: Option<i64>,
        lfu: Option<u8>,
        idle: Option<u64>,
    }
    let kind = k.kind.name();
    buf.clear();
    serde_json::to_writer(
        &mut *buf,
        &Line {
            key: JsonBytes(k.key),
            db: k.db,
            slot: crate::slot::key_slot(k.key),
            kind: &kind,
            encoding: k.encoding,
            elements: k.elements,
            bytes: k.memory_estimated().then_some(k.memory),
            serialized: k.serialized,
            expires_at_ms: k.expires_at_ms,
            lfu: k.lfu,
            idle: k.idle,
        },
    )
    .map_err(io::Error::other)?;
    buf.push(b'\n');
    out.write_all(buf)
}

/// One key as a tsv dump line: the key in redis-cli's quoted form, a TAB, its memory.
fn write_tsv(out: &mut dyn Write, k: &KeyInfo<'_>, buf: &mut String) -> io::Result<()> {
    buf.clear();
    quote_into(k.key, buf);
    buf.push('\t');
    buf.push_str(&k.memory.to_string());
    buf.push('\n');
    out.write_all(buf.as_bytes())
}
