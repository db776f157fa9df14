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
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod analyze;
pub mod bench;
pub mod cli;
pub mod error;
pub mod keys;
pub mod lint;
pub mod live;
pub mod migrate;
pub mod pattern;
pub mod plan;
pub mod report;
pub mod scheme;
pub mod simulate;
pub mod sketch;
pub mod skew;
pub mod slot;
pub mod topology;

pub use slot::{SLOT_COUNT, hash_tag, key_slot};
