//! Each language's syntax tree lowered into the one model the analysis reads ([`super::ir`]).
//! A lowering knows its grammar's node kinds and nothing of Redis: which calls matter, and what
//! they mean, is decided once, on the model, by [`super::engine`].
//!
//! Every lowering parses with its grammar, refuses what [`super::guard`] refuses (a tree too
//! deep to walk, text that would abort the grammar's scanner), and recurses at most once per
//! level of the tree, so the reader threads' stacks ([`super::guard::READER_STACK`]) hold it.

use super::Position;
use tree_sitter::Node;

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

/// Columns in characters, counted from the last position asked for on the same line (a walk
/// goes mostly forward), so that a minified file's one long line is not counted again for
/// every node on it.
pub(super) struct Columns<'s> {
    text: &'s str,
    ascii: bool,
    /// Row, byte offset and column of the last position given.
    last: (usize, usize, usize),
}

impl<'s> Columns<'s> {
    pub(super) fn new(text: &'s str) -> Columns<'s> {
        Columns {
            text,
            ascii: text.is_ascii(),
            last: (usize::MAX, 0, 0),
        }
    }

    fn chars(&self, from: usize, to: usize) -> usize {
        self.text
            .get(from..to)
            .map_or(to - from, |s| s.chars().count())
    }

    pub(super) fn at(&mut self, n: Node<'_>) -> Position {
        let p = n.start_position();
        let byte = n.start_byte();
        if self.ascii {
            return Position {
                line: p.row + 1,
                column: p.column + 1,
            };
        }
        let (row, b, col) = self.last;
        let column = if row == p.row && b <= byte {
            col + self.chars(b, byte)
        } else if row == p.row {
            col - self.chars(byte, b)
        } else {
            self.chars(byte - p.column, byte) + 1
        };
        self.last = (p.row, byte, column);
        Position {
            line: p.row + 1,
            column,
        }
    }
}
