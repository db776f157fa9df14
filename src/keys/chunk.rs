//! Streaming input in chunks of whole lines, through buffers that are reused.
//!
//! A [`Chunker`] reads any [`Read`] (a file, stdin) into ~1 MiB chunks that end on a line
//! boundary; the partial line at the end of a read is carried into the next chunk. Memory stays
//! bounded by the chunk size and `max_line`: a line longer than `max_line` is skipped without
//! being buffered and reported as [`ChunkKind::TooLong`].

use memchr::memrchr;
use std::io::{self, ErrorKind, Read};

/// Default chunk size: large enough to amortise per-chunk costs, small enough for L2-ish reuse.
pub const DEFAULT_CHUNK: usize = 1 << 20;

/// What a chunk holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkKind {
    /// One or more whole lines (the last may lack its `\n` only at end of input).
    Lines,
    /// One line longer than the limit was skipped; `bytes` is its length without the `\n`.
    TooLong {
        /// Length of the skipped line in bytes.
        bytes: u64,
    },
}

/// A buffer of whole lines plus its place in the stream.
#[derive(Debug)]
pub struct Chunk {
    buf: Vec<u8>,
    len: usize,
    /// Position of this chunk in the stream (0, 1, 2, …).
    pub seq: u64,
    /// What the chunk holds.
    pub kind: ChunkKind,
}

impl Chunk {
    /// An empty chunk whose buffer can be handed to [`Chunker::next_into`].
    pub fn new() -> Self {
        Chunk {
            buf: Vec::new(),
            len: 0,
            seq: 0,
            kind: ChunkKind::Lines,
        }
    }

    /// The bytes of the chunk's lines.
    pub fn data(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Default for Chunk {
    fn default() -> Self {
        Self::new()
    }
}

/// Splits a byte stream into chunks of whole lines.
#[derive(Debug)]
pub struct Chunker<R> {
    src: R,
    carry: Vec<u8>,
    eof: bool,
    chunk_size: usize,
    max_line: usize,
    next_seq: u64,
}

fn read_full<R: Read>(src: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl<R: Read> Chunker<R> {
    /// A chunker with the default chunk size and the given longest acceptable line.
    pub fn new(src: R, max_line: usize) -> Self {
        Self::with_chunk_size(src, DEFAULT_CHUNK, max_line)
    }

    /// A chunker with an explicit chunk size (tests use tiny ones to exercise boundaries).
    pub fn with_chunk_size(src: R, chunk_size: usize, max_line: usize) -> Self {
        Chunker {
            src,
            carry: Vec::new(),
            eof: false,
            chunk_size: chunk_size.max(1),
            max_line: max_line.max(1),
            next_seq: 0,
        }
    }

    /// Fills `chunk` with the next whole lines. Returns `false` at end of input.
    pub fn next_into(&mut self, chunk: &mut Chunk) -> io::Result<bool> {
        chunk.len = 0;
        chunk.kind = ChunkKind::Lines;
        let mut target = self.chunk_size.max(self.carry.len());
        loop {
            if chunk.buf.len() < target {
                chunk.buf.resize(target, 0);
            }
            if chunk.len == 0 && !self.carry.is_empty() {
                chunk.buf[..self.carry.len()].copy_from_slice(&self.carry);
                chunk.len = self.carry.len();
                self.carry.clear();
            }
            if !self.eof && chunk.len < target {
                let n = read_full(&mut self.src, &mut chunk.buf[chunk.len..target])?;
                if n < target - chunk.len {
                    self.eof = true;
                }
                chunk.len += n;
            }
            if chunk.len == 0 {
                return Ok(false);
            }
            match memrchr(b'\n', &chunk.buf[..chunk.len]) {
                Some(i) => {
                    self.carry.extend_from_slice(&chunk.buf[i + 1..chunk.len]);
                    chunk.len = i + 1;
                    break;
                }
                None if self.eof => break,
                None if chunk.len > self.max_line => {
                    let bytes = self.skip_line(chunk)?;
                    chunk.len = 0;
                    chunk.kind = ChunkKind::TooLong { bytes };
                    break;
                }
                None => {
                    target = (target * 2).min(self.max_line + 1).max(chunk.len + 1);
                }
            }
        }
        chunk.seq = self.next_seq;
        self.next_seq += 1;
        Ok(true)
    }

    /// Discards the rest of an over-long line whose first `chunk.len` bytes are in `chunk`;
    /// returns its whole length.
    fn skip_line(&mut self, chunk: &mut Chunk) -> io::Result<u64> {
        let mut bytes = chunk.len as u64;
        let mut last = chunk.buf[..chunk.len].last().copied();
        let scratch_len = chunk.buf.len().min(self.chunk_size).max(1);
        loop {
            if self.eof {
                return Ok(without_cr(bytes, last));
            }
            let n = read_full(&mut self.src, &mut chunk.buf[..scratch_len])?;
            if n < scratch_len {
                self.eof = true;
            }
            let read = &chunk.buf[..n];
            if let Some(i) = memchr::memchr(b'\n', read) {
                self.carry.extend_from_slice(&read[i + 1..]);
                let last = if i > 0 { Some(read[i - 1]) } else { last };
                return Ok(without_cr(bytes + i as u64, last));
            }
            bytes += n as u64;
            if n > 0 {
                last = Some(read[n - 1]);
            }
        }
    }
}

/// A line's length without one trailing `\r`, given its last byte.
fn without_cr(len: u64, last: Option<u8>) -> u64 {
    if last == Some(b'\r') { len - 1 } else { len }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8], chunk: usize, max: usize) -> Vec<(ChunkKind, Vec<u8>)> {
        let mut c = Chunker::with_chunk_size(input, chunk, max);
        let mut ch = Chunk::new();
        let mut out = Vec::new();
        while c.next_into(&mut ch).unwrap() {
            out.push((ch.kind, ch.data().to_vec()));
        }
        out
    }

    #[test]
    fn chunks_end_on_line_boundaries_and_cover_the_input() {
        let input = b"alpha\nbeta\ngamma\ndelta-without-newline";
        for size in 1..50 {
            let chunks = collect(input, size, 1 << 20);
            let joined: Vec<u8> = chunks.iter().flat_map(|c| c.1.clone()).collect();
            assert_eq!(joined, input, "size {size}");
            for (kind, data) in &chunks[..chunks.len() - 1] {
                assert_eq!(*kind, ChunkKind::Lines);
                assert_eq!(data.last(), Some(&b'\n'), "size {size}");
            }
        }
    }

    #[test]
    fn over_long_lines_are_skipped() {
        let mut input = b"short\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 1000));
        input.extend_from_slice(b"\r\nafter\n");
        let chunks = collect(&input, 8, 64);
        let kinds: Vec<_> = chunks.iter().map(|c| c.0).collect();
        assert!(
            kinds.contains(&ChunkKind::TooLong { bytes: 1000 }),
            "{kinds:?}"
        );
        let text: Vec<u8> = chunks.iter().flat_map(|c| c.1.clone()).collect();
        assert_eq!(text, b"short\nafter\n");
    }

    #[test]
    fn over_long_last_line_without_newline() {
        let input = vec![b'y'; 500];
        let chunks = collect(&input, 16, 100);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].0, ChunkKind::TooLong { bytes: 500 });
    }
}
