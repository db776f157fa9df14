//! Files as the commands read and write them: key dumps and snapshots (opened, sniffed and
//! read on every core), whole text files (size-capped, UTF-8 checked), batch files and MONITOR
//! captures (streamed, bounded), and reports written atomically (a temporary file renamed
//! into place).
//!
//! This is an adapter: it does I/O on the paths it is given, never prints, and knows nothing
//! of flags.

pub mod atomic;
pub mod batches;
pub mod input;
pub mod monitor;
pub mod source;
pub mod text;

pub use atomic::{AtomicFile, Sink, output_sink};
pub use batches::BatchFile;
pub use input::{Input, TOP_KEYS, open_all, open_snapshot, total_size};
pub use monitor::MonitorFile;
pub use text::{MAX_TEXT_FILE, read_capped, read_text};
