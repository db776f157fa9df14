//! The JSON envelope: every document keyplan writes is one object whose first field is
//! `schema_version`, written here and nowhere else. The versions are a contract: a field is
//! only ever added within a version; a rename, a removal or a change of type bumps it (README
//! "JSON output" lists every change).

use serde::Serialize;
use std::io::{self, Write};

/// `keyplan analyze --format json`.
pub const ANALYZE: u32 = 2;
/// `keyplan plan --format json`.
pub const PLAN: u32 = 2;
/// `keyplan simulate --format json`.
pub const SIMULATE: u32 = 2;
/// `keyplan bench --format json`.
pub const BENCH: u32 = 2;
/// `keyplan rebalance|reshard --preview --format json`.
pub const MIGRATION: u32 = 2;
/// `keyplan migrate --format json`.
pub const SCHEME_CHANGE: u32 = 1;
/// `keyplan lint --format json`.
pub const LINT: u32 = 1;
/// `keyplan slot --format json` (with or without `--counts`).
pub const SLOT: u32 = 1;
/// `keyplan verify --format json`.
pub const VERIFY: u32 = 1;

#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    schema_version: u32,
    #[serde(flatten)]
    body: &'a T,
}

/// Writes `body`'s fields after `"schema_version": version`, as one line.
pub fn write_document<T: Serialize>(out: &mut dyn Write, version: u32, body: &T) -> io::Result<()> {
    serde_json::to_writer(
        &mut *out,
        &Envelope {
            schema_version: version,
            body,
        },
    )?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The opening of a document streamed by hand: `{"schema_version":N,`.
pub fn open_document(version: u32) -> String {
    format!("{{\"schema_version\":{version},")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_comes_first() {
        #[derive(Serialize)]
        struct Body {
            b: u8,
            a: &'static str,
        }
        let mut out = Vec::new();
        write_document(&mut out, 7, &Body { b: 1, a: "x" }).unwrap();
        assert_eq!(out, b"{\"schema_version\":7,\"b\":1,\"a\":\"x\"}\n");
        assert_eq!(open_document(1), "{\"schema_version\":1,");
    }
}
