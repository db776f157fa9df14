//! Memory-mapped windows of a regular file: the fastest way to read a large dump that is
//! already in the page cache (no copy into a buffer). A key dump is mapped one window at a time
//! (16 MiB; the reader maps the next while the workers read the ones handed to them) and each
//! is unmapped when done; an RDB snapshot is mapped whole and the ranges read are released.
//! Either way resident memory stays bounded however large the file is.
#![allow(unsafe_code)]

use memmap2::{Mmap, MmapOptions};
use std::fs::File;
use std::io;

/// Maps `len` bytes of `file` from `offset`, read-only. Not pre-faulted: the workers fault the
/// pages in as they read them, which spreads that work evenly over them (pre-faulting on the
/// mapping thread measured slower on two cores).
pub(crate) fn map_window(file: &File, offset: u64, len: usize) -> io::Result<Mmap> {
    // SAFETY: the map is read-only and private to this process. The one hazard is another
    // process truncating the file while it is mapped, which would fault on access; that is
    // the same trade-off ripgrep makes for its mmap search, and keyplan maps only regular files
    // it was asked to read.
    unsafe { MmapOptions::new().offset(offset).len(len).map(file) }
}

/// Drops this process's page-table entries for `map[range]` once it has been read, so resident
/// memory holds only what the workers are reading now. The file's pages stay in the page
/// cache; touching the range again would map them again with the same bytes.
pub(crate) fn release(map: &Mmap, range: std::ops::Range<usize>) {
    #[cfg(unix)]
    {
        // SAFETY: the map is a read-only shared mapping of a file: MADV_DONTNEED only unmaps
        // its pages from this process, and any later access faults the same file bytes back
        // in (it does not zero them, as it would for private or anonymous memory).
        let _ = unsafe {
            map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                range.start,
                range.end - range.start,
            )
        };
    }
    #[cfg(not(unix))]
    let _ = (map, range);
}
