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
//! # The map
//!
//! This table is the one statement of keyplan's architecture: `tests/integration/architecture.rs`
//! reads it from this file and fails on any top-level module of `src/` without a row, any
//! `crate::` path outside a module's **uses** cell, a use listed there that the module does not
//! make, I/O in a module whose **I/O** cell says no, and a use that goes down the layers (each
//! module uses only modules of its own layer or of the layers above it).
//!
//! | layer | module | uses | I/O | what it is |
//! |---|---|---|---|---|
//! | core | [`slot`] | | no | the slot rule (CRC16, hash tags) and its SIMD kernels, the bulk slot histogram |
//! | core | [`simd`] | | no | overlapping 16-byte loads: the blocks that cover a slice, a byte mask by SSE2 and its portable twin |
//! | core | [`sketch`] | | no | cardinality and heavy-hitter sketches |
//! | core | [`skew`] | | no | skew statistics |
//! | core | [`command`] | | no | the servers' command table (key specs) |
//! | core | [`error`] | | no | user errors (what went wrong, what to do) and exit statuses |
//! | readers | [`keys`] | `rdb`, `slot` | yes | key dumps: sniffed, memory-mapped or streamed, read on every core |
//! | readers | [`rdb`] | `keys`, `slot` | yes | RDB snapshots: keys with types, encodings, expiries and estimated memory |
//! | model | [`pattern`] | `simd`, `sketch` | no | key patterns: a key's shape, classes of keys |
//! | model | [`topology`] | `error`, `keys`, `slot` | no | slot maps, rings and hashes, and their parsers (CLUSTER NODES/SLOTS/SHARDS, YAML, twemproxy, libketama, Redis Enterprise) |
//! | model | [`scheme`] | `command`, `error`, `pattern`, `simd` | no | the key scheme: declared keys, batches and what they hash |
//! | engines | [`simulate`] | `command`, `keys`, `scheme`, `slot`, `topology` | no | batches run by strategies and client profiles (one execution model, the cluster's answer as written) |
//! | engines | [`migrate`] | `keys`, `rdb`, `simulate`, `skew`, `slot`, `topology` | no | rebalance, reshard and scheme-change previews, placements, the moves of a plan |
//! | engines | [`code`] | `command`, `slot` | no | one source file's text in, its keys and multi-key sites out (client profiles from `rules/code/`) |
//! | engines | [`lint`] | `code`, `command`, `error`, `keys`, `pattern`, `scheme`, `simd`, `simulate`, `sketch`, `skew`, `slot`, `topology` | no | the rules of `rules/` run on a scheme, keys, batches and code |
//! | engines | [`plan`] | `keys`, `lint`, `pattern`, `scheme`, `simulate`, `slot`, `topology` | no | hash-tag candidates per batch, costed, and the scheme rewritten |
//! | engines | [`analyze`] | `keys`, `pattern`, `rdb`, `sketch`, `skew`, `slot`, `topology` | no | a dump's or a snapshot's patterns, tags, slots and nodes |
//! | adapters | [`files`] | `error`, `keys`, `rdb`, `simulate` | yes | the paths given: dumps and snapshots opened and read, text files size-capped and checked, MONITOR captures streamed, reports written atomically |
//! | adapters | [`live`] | `analyze`, `keys`, `migrate`, `slot`, `topology` | yes | a running cluster: read-only sampling, the slot moves of `--apply` |
//! | adapters | [`bench`](mod@bench) | `keys`, `live`, `simulate`, `slot`, `topology` | yes | batches run on a live cluster with bench's own keys, measured |
//! | output | [`report`] | `analyze`, `bench`, `code`, `keys`, `lint`, `migrate`, `plan`, `rdb`, `simulate`, `skew`, `slot`, `topology` | no | renderers: a typed report in, bytes on a writer out |
//! | shell | [`cli`] | `analyze`, `bench`, `code`, `command`, `error`, `files`, `keys`, `lint`, `live`, `migrate`, `pattern`, `plan`, `rdb`, `report`, `scheme`, `simulate`, `slot`, `topology` | yes | flags turned into one resolved set of inputs, progress, one engine call, one renderer, exit status |
//!
//! Two uses the layers alone would not allow, each argued and listed in the test so that it
//! fails once the use is gone:
//!
//! - `keys` and `rdb` use each other: the dump reader hands a snapshot to the snapshot reader
//!   (sniffing, `--server`, the snapshot's summary and errors), and the snapshot reader reuses
//!   the dump reader's memory map, parallel sink and record types. It is the one cycle.
//! - `report` uses the adapter `bench`: bench's results are measured, not computed, so its
//!   result type lives where it is measured, and the renderer reads it like an engine's report.
//!
//! Beyond the table: nothing below the shell prints, exits or uses clap, and only the readers
//! and the adapters touch files, sockets, processes or the environment (the **I/O** column).
//!
//! ## Inside the layers
//!
//! - **Output.** Every format is one [`report::render::Format`]: table, JSON, HTML, YAML,
//!   SARIF, GitHub annotations, GitLab Code Quality, Markdown, tsv and JSON lines. Whole
//!   reports implement one `Render` trait (analyze, plan, the previews, lint, `slot --counts`,
//!   bench); reports written as the work goes implement one `Stream` trait with one writer per
//!   format (simulate's batches, bench's results, slot's rows, `scan --rdb`'s keys). Markdown
//!   is the table output passed through one writer ([`report::markdown`]) whose tables are
//!   GFM; JSON reports share one envelope ([`report::json`]).
//! - **Shell.** One loader (`cli/loaded.rs`: `Loaded` reads the scheme, applies the one
//!   topology precedence, opens the one live-cluster handle of a run with a typed account of
//!   where the topology came from, and holds the run's load model, lint rules and report
//!   target, all checked before the main work starts); dump readers under one progress bar
//!   and `-o` through one writer (`cli/args.rs`). The engines' enums get their command-line
//!   words and help in `cli/values.rs` (one parser, `one_of`, maps each command's words for
//!   `--format`, `--strategy` and `--fail-on` to the engines' own enums), and `migrate`'s
//!   typed errors and warnings get their flags and hints from the shell. `cli/analyze.rs` is
//!   the shape of a command: resolve the inputs, call the engine, build the report, render.
//! - **Findings** are typed values that word themselves (a topology's kind and source, an ops
//!   source, a plan's outcome, a preview's sample sources); JSON carries their words.
//! - **Clients.** Each client profile is one row of facts (`simulate/client/profile.rs`: names
//!   and versions, topologies, how it splits, what it refuses, redirects, pipeline and MULTI
//!   policies) that the phases read; a new client is one row. A strategy's plan (the commands
//!   bench sends) and a client's waves after its splits and redirects are the two variants of
//!   one `simulate::exec::Execution`, costed by one function.
//! - **`unsafe`** is confined to the x86-64 SIMD kernels ([`slot`], [`simd`], `pattern::simd`,
//!   `pattern::segment`), the prefetch hint and the memory map ([`keys`]); each has a
//!   `// SAFETY:` note. The kernels have portable twins, which other targets (arm64, say) run:
//!   tests hold each twin to its kernel, and the `portable` feature builds keyplan with the
//!   twins in place of every kernel on an x86-64 machine.
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
