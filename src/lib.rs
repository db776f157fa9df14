//! keyplan: plan how Redis keys spread over a Redis Cluster (or a client-side sharded ring),
//! before production does.
//!
//! The library is the engine behind the `keyplan` command line; its modules are pure (no
//! printing, no process exits) so they can be used directly:
//!
//! ```
//! use keyplan::slot::{key_slot, hash_tag};
//! assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
//! assert_eq!(hash_tag(b"order:{42}:items"), b"42");
//! ```
//!
//! # Layers
//!
//! Each layer uses only the ones above it:
//!
//! | layer | modules | what it is |
//! |---|---|---|
//! | core | [`slot`], [`simd`], [`keys`], [`rdb`], [`sketch`], [`skew`] | the slot rule and its kernels, overlapping 16-byte loads, dump and snapshot readers, sketches, skew statistics |
//! | model | [`topology`], [`scheme`], [`pattern`], [`command`] | where keys live, what an application's keys and batches are, key patterns, the servers' command table |
//! | engines | [`analyze`], [`lint`], [`simulate`], [`plan`], [`migrate`], [`code`] | pure computations that return typed reports ([`code`] reads one source file's text into its keys and multi-key sites) |
//! | adapters | [`files`], [`live`], [`bench`](mod@bench) | I/O on the paths and URLs they are given: key dumps, snapshots, text files, captures and atomically written reports; a running cluster (read-only sampling; bench's own keys) |
//! | output | [`report`] | renderers: a typed report in, bytes on a writer out, through one `Render` trait (whole reports) or one `Stream` trait (reports written as the work goes: one writer per format); nothing else |
//! | shell | [`cli`] | flags turned into one resolved set of inputs (`cli::loaded::Loaded`) and domain settings, progress, one engine call, one renderer, exit status |
//!
//! Nothing below the shell prints, exits or uses clap, nothing below the output layer imports
//! it, and only the readers and the adapters do I/O (a test checks each module against its row
//! of a layer table).
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod analyze;
pub mod bench;
pub mod cli;
pub mod code;
pub mod command;
pub mod error;
pub mod files;
pub mod keys;
pub mod lint;
pub mod live;
pub mod migrate;
pub mod pattern;
pub mod plan;
pub mod rdb;
pub mod report;
pub mod scheme;
pub mod simd;
pub mod simulate;
pub mod sketch;
pub mod skew;
pub mod slot;
pub mod topology;

pub use slot::{SLOT_COUNT, hash_tag, key_slot};
