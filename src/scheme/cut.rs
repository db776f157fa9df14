//! A declared key's variable values read without a regex, when its pattern allows it: each
//! value either has a fixed length (UUIDs, dates), or is a run of bytes of its kind's class that
//! ends at a literal whose first byte the class does not hold (or at the key's end), or is an
//! `any` value followed only by fixed-length text. A key then has one way to match the pattern,
//! and the cut finds it in one pass, checking every byte as the pattern's regex would; the
//! values are those the regex's groups capture. Two values side by side (`<name><n>`) are the
//! one choice: the cut tries their splits in the order the regex backtracks through them (the
//! first value longest first), which a regex engine otherwise pays for in a backtracking search
//! with captures on every key (a key longer than 256 bytes is left to the regex, whose search
//! time is linear in it).

use super::template::Seg;
use super::{KeyDecl, Scheme, VarKind};

/// One piece of a pattern, as the cut reads it.
#[derive(Debug, Clone)]
enum Piece {
    /// These bytes.
    Lit(Vec<u8>),
    /// A value of fixed shape: per byte, `h` a hex digit, `d` a decimal digit, `-` itself.
    Fixed(&'static [u8]),
    /// The longest run of bytes in `class` (at least one), after one optional `-` when `minus`;
    /// `stop` is the first byte of the literal after it (which the class does not hold), or
    /// `None` at the pattern's end.
    Run {
        class: Box<[bool; 256]>,
        minus: bool,
        stop: Option<u8>,
    },
    /// The bytes up to `rest` before the key's end (at least one).
    ToEnd { rest: usize },
    /// Two values side by side (`<name><n>`): a run of bytes in `first` (at least one), then a
    /// run as [`Piece::Run`] reads it in `second`, which ends at a literal whose first byte
    /// `second` does not hold (or at the key's end). The regex gives the first value as many
    /// bytes as it can: the longest first run after which the second and the rest match.
    Pair {
        first: Box<[bool; 256]>,
        second: Box<[bool; 256]>,
        minus: bool,
    },
}

/// The most variables a pattern read by a cut may have (their places are kept on the stack
/// until the whole key is known to match).
const MAX_VALUES: usize = 16;

/// The longest key a cut with a pair reads: trying a pair's splits one after another costs,
/// on a key built to defeat it, the square of its length; a longer key goes to the regex
/// engine, whose search is linear in it.
const PAIR_LONGEST: usize = 256;

const UUID: &[u8] = b"hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh";
const DATE: &[u8] = b"dddd-dd-dd";

fn class(ranges: &[(u8, u8)]) -> Box<[bool; 256]> {
    let mut c = Box::new([false; 256]);
    for &(a, b) in ranges {
        for x in a..=b {
            c[x as usize] = true;
        }
    }
    c
}

/// A declared key's pattern as pieces that give its values in one pass (with a choice of
/// split for each pair of values side by side).
#[derive(Debug, Clone)]
pub struct Cut {
    pieces: Vec<Piece>,
    /// Whether a piece is a [`Piece::Pair`] (its values are then always read checked).
    pair: bool,
}

impl Cut {
    /// The cut of `k`'s pattern, when every value of it ends where the pattern says (see the
    /// module's account); `None` otherwise (the regex reads it).
    pub fn new(scheme: &Scheme, k: &KeyDecl) -> Option<Cut> {
        let segs = &k.template.segs;
        let kind = |name: &str| scheme.vars.get(name).map(|v| v.kind);
        let fixed = |seg: &Seg| match seg {
            Seg::Lit(l) => Some(l.len()),
            Seg::Var(v) => match kind(v) {
                Some(VarKind::Uuid) => Some(UUID.len()),
                Some(VarKind::Date) => Some(DATE.len()),
                _ => None,
            },
        };
        // A run of an int, a hex or a word value.
        let run = |name: &str| match kind(name) {
            Some(VarKind::Int) => Some((class(&[(b'0', b'9')]), true)),
            Some(VarKind::Hex) => Some((class(&[(b'0', b'9'), (b'a', b'f'), (b'A', b'F')]), false)),
            Some(VarKind::Word) => Some((
                class(&[
                    (b'0', b'9'),
                    (b'a', b'z'),
                    (b'A', b'Z'),
                    (b'_', b'_'),
                    (b'-', b'-'),
                ]),
                false,
            )),
            _ => None,
        };
        // What follows a run: the first byte of the literal after it (which its class must
        // not hold: it ends the run), or `None` at the pattern's end.
        let stop = |next: Option<&Seg>, class: &[bool; 256]| -> Option<Option<u8>> {
            match next {
                None => Some(None),
                Some(Seg::Lit(l)) => l.bytes().next().filter(|&b| !class[b as usize]).map(Some),
                Some(Seg::Var(_)) => None,
            }
        };
        let mut pieces = Vec::new();
        let mut pair = false;
        let mut i = 0;
        while i < segs.len() {
            let v = match &segs[i] {
                Seg::Lit(l) => {
                    pieces.push(Piece::Lit(l.as_bytes().to_vec()));
                    i += 1;
                    continue;
                }
                Seg::Var(v) => v,
            };
            let piece = match kind(v) {
                Some(VarKind::Uuid) => Piece::Fixed(UUID),
                Some(VarKind::Date) => Piece::Fixed(DATE),
                Some(VarKind::Int | VarKind::Hex | VarKind::Word) => {
                    let (class, minus) = run(v)?;
                    match segs.get(i + 1) {
                        // Two values side by side: a hex or word value, then a run that
                        // ends where the pattern says.
                        Some(Seg::Var(w)) if !minus => {
                            let (second, minus) = run(w)?;
                            stop(segs.get(i + 2), &second)?;
                            pair = true;
                            i += 1;
                            Piece::Pair {
                                first: class,
                                second,
                                minus,
                            }
                        }
                        next => Piece::Run {
                            stop: stop(next, &class)?,
                            class,
                            minus,
                        },
                    }
                }
                Some(VarKind::Enum) => return None,
                Some(VarKind::Any) | None => Piece::ToEnd {
                    rest: segs[i + 1..].iter().map(fixed).sum::<Option<usize>>()?,
                },
            };
            pieces.push(piece);
            i += 1;
        }
        let values: usize = pieces
            .iter()
            .map(|p| match p {
                Piece::Lit(_) => 0,
                Piece::Pair { .. } => 2,
                _ => 1,
            })
            .sum();
        (values <= MAX_VALUES).then_some(Cut { pieces, pair })
    }

    /// Whether the cut reads `key` (a cut with a pair leaves keys longer than
    /// `PAIR_LONGEST`, 256 bytes, to the regex).
    #[inline]
    pub fn reads(&self, key: &[u8]) -> bool {
        !self.pair || key.len() <= PAIR_LONGEST
    }

    /// Calls `f` with each value of `key` in pattern order when `key` matches the pattern;
    /// false (and no call) when it does not.
    pub fn values<'k>(&self, key: &'k [u8], mut f: impl FnMut(&'k [u8])) -> bool {
        let mut found = [(0usize, 0usize); MAX_VALUES];
        let Some(n) = self.match_from(0, key, 0, &mut found, 0) else {
            return false;
        };
        for &(a, b) in &found[..n] {
            f(&key[a..b]);
        }
        true
    }

    /// Matches the pieces from `first` on against `key` from `at` to its end, with `n` values
    /// found before: the number of values found in all, their places in `found`.
    fn match_from(
        &self,
        first: usize,
        key: &[u8],
        mut at: usize,
        found: &mut [(usize, usize); MAX_VALUES],
        mut n: usize,
    ) -> Option<usize> {
        // The end of the run of bytes in `class` from `at` (after one `-` when `minus`), if it
        // holds at least one byte of the class.
        let run = |at: usize, class: &[bool; 256], minus: bool| {
            let mut end = at;
            if minus && key.get(end) == Some(&b'-') {
                end += 1;
            }
            let from = end;
            while end < key.len() && class[key[end] as usize] {
                end += 1;
            }
            (end > from).then_some(end)
        };
        for (i, piece) in self.pieces.iter().enumerate().skip(first) {
            match piece {
                Piece::Lit(l) => {
                    if !key[at..].starts_with(l) {
                        return None;
                    }
                    at += l.len();
                }
                Piece::Fixed(shape) => {
                    let v = key.get(at..at + shape.len())?;
                    let fits = v.iter().zip(*shape).all(|(&b, &s)| match s {
                        b'h' => b.is_ascii_hexdigit(),
                        b'd' => b.is_ascii_digit(),
                        _ => b == s,
                    });
                    if !fits {
                        return None;
                    }
                    found[n] = (at, at + v.len());
                    n += 1;
                    at += shape.len();
                }
                Piece::Run { class, minus, .. } => {
                    let end = run(at, class, *minus)?;
                    found[n] = (at, end);
                    n += 1;
                    at = end;
                }
                Piece::ToEnd { rest } => {
                    let end = key.len().checked_sub(*rest).filter(|&e| e > at)?;
                    found[n] = (at, end);
                    n += 1;
                    at = end;
                }
                Piece::Pair {
                    first,
                    second,
                    minus,
                } => {
                    // The first value as long as it can be, then shorter, as the regex
                    // backtracks: the second run from each split is the longest (the byte
                    // after it, which its class does not hold, must start what follows), so
                    // each split has one way to go on.
                    let mut longest = at;
                    while longest < key.len() && first[key[longest] as usize] {
                        longest += 1;
                    }
                    for split in (at + 1..=longest).rev() {
                        let Some(end) = run(split, second, *minus) else {
                            continue;
                        };
                        found[n] = (at, split);
                        found[n + 1] = (split, end);
                        if let Some(all) = self.match_from(i + 1, key, end, found, n + 2) {
                            return Some(all);
                        }
                    }
                    return None;
                }
            }
        }
        (at == key.len()).then_some(n)
    }

    /// [`Cut::values`] of a key known to match the pattern (its family's automaton said so):
    /// the same values, found by where each ends (a run at its stop byte) without checking
    /// the bytes between.
    pub fn values_of_match<'k>(&self, key: &'k [u8], mut f: impl FnMut(&'k [u8])) {
        if self.pair {
            // Where a pair splits takes its bytes: read them.
            self.values(key, f);
            return;
        }
        let mut at = 0;
        for piece in &self.pieces {
            let start = at.min(key.len());
            at = match piece {
                Piece::Lit(l) => at + l.len(),
                Piece::Fixed(shape) => at + shape.len(),
                // A run's first byte (its `-`, or one of its class) never ends it: its end is
                // the first stop byte after that.
                Piece::Run {
                    stop: Some(stop), ..
                } => {
                    let from = (start + 1).min(key.len());
                    key[from..]
                        .iter()
                        .position(|b| b == stop)
                        .map_or(key.len(), |i| from + i)
                }
                Piece::Run { stop: None, .. } => key.len(),
                Piece::ToEnd { rest } => key.len().saturating_sub(*rest).max(start),
                Piece::Pair { .. } => unreachable!("a cut with a pair reads its values checked"),
            }
            .min(key.len());
            if !matches!(piece, Piece::Lit(_)) {
                f(&key[start..at]);
            }
        }
    }
}
