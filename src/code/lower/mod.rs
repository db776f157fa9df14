//! Each language's syntax tree lowered into the one model the analysis reads ([`super::ir`]).
//! A lowering knows its grammar's node kinds and nothing of Redis: which calls matter, and what
//! they mean, is decided once, on the model, by [`super::engine`].
//!
//! Every lowering parses with its grammar, refuses what [`super::guard`] refuses (a tree too
//! deep to walk, text that would abort the grammar's scanner), and recurses at most once per
//! level of the tree, so the reader threads' stacks ([`super::guard::READER_STACK`]) hold it.

pub mod go;
pub mod java;
pub mod javascript;
pub mod python;
pub mod ruby;

/// Why a file could not be lowered.
#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    /// The parser returned no tree.
    #[error("the parser returned no syntax tree")]
    NoTree,
    /// The file is not read (too deep, or text the grammar's scanner cannot hold).
    #[error(transparent)]
    Unreadable(#[from] super::guard::Unreadable),
}
