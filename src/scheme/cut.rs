//! A declared key's variable values read without a regex, when its pattern allows it: each
//! value either has a fixed length (UUIDs, dates), or is a run of bytes of its kind's class that
//! ends at a literal whose first byte the class does not hold (or at the key's end), or is an
//! `any` value followed only by fixed-length text. A key then has one way to match the pattern,
//! and the cut finds it in one pass, checking every byte as the pattern's regex would; the
//! values are those the regex's groups capture.

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
}

/// The most variables a pattern read by a cut may have (their places are kept on the stack
/// until the whole key is known to match).
const MAX_VALUES: usize = 16;

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

/// A declared key's pattern as pieces that give its values in one pass.
#[derive(Debug, Clone)]
pub struct Cut(Vec<Piece>);

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
        let mut pieces = Vec::new();
        for (i, seg) in segs.iter().enumerate() {
            let v = match seg {
                Seg::Lit(l) => {
                    pieces.push(Piece::Lit(l.as_bytes().to_vec()));
                    continue;
                }
                Seg::Var(v) => v,
            };
            let piece = match kind(v) {
                Some(VarKind::Uuid) => Piece::Fixed(UUID),
                Some(VarKind::Date) => Piece::Fixed(DATE),
                Some(VarKind::Int) => Piece::Run {
                    class: class(&[(b'0', b'9')]),
                    minus: true,
                    stop: None,
                },
                Some(VarKind::Hex) => Piece::Run {
                    class: class(&[(b'0', b'9'), (b'a', b'f'), (b'A', b'F')]),
                    minus: false,
                    stop: None,
                },
                Some(VarKind::Word) => Piece::Run {
                    class: class(&[
                        (b'0', b'9'),
                        (b'a', b'z'),
                        (b'A', b'Z'),
                        (b'_', b'_'),
                        (b'-', b'-'),
                    ]),
                    minus: false,
                    stop: None,
                },
                Some(VarKind::Enum) => return None,
                Some(VarKind::Any) | None => Piece::ToEnd {
                    rest: segs[i + 1..].iter().map(fixed).sum::<Option<usize>>()?,
                },
            };
            // A run ends at the first byte out of its class: what follows must start with one.
            let mut piece = piece;
            if let Piece::Run { class, stop, .. } = &mut piece {
                match segs.get(i + 1) {
                    None => {}
                    Some(Seg::Lit(l)) if l.bytes().next().is_some_and(|b| !class[b as usize]) => {
                        *stop = l.bytes().next();
                    }
                    Some(_) => return None,
                }
            }
            pieces.push(piece);
        }
        let values = pieces
            .iter()
            .filter(|p| !matches!(p, Piece::Lit(_)))
            .count();
        (values <= MAX_VALUES).then_some(Cut(pieces))
    }

    /// Calls `f` with each value of `key` in pattern order when `key` matches the pattern;
    /// false (and no call) when it does not.
    pub fn values<'k>(&self, key: &'k [u8], mut f: impl FnMut(&'k [u8])) -> bool {
        let mut found = [(0usize, 0usize); MAX_VALUES];
        let mut n = 0;
        let mut at = 0;
        for piece in &self.0 {
            match piece {
                Piece::Lit(l) => {
                    if !key[at..].starts_with(l) {
                        return false;
                    }
                    at += l.len();
                }
                Piece::Fixed(shape) => {
                    let Some(v) = key.get(at..at + shape.len()) else {
                        return false;
                    };
                    let fits = v.iter().zip(*shape).all(|(&b, &s)| match s {
                        b'h' => b.is_ascii_hexdigit(),
                        b'd' => b.is_ascii_digit(),
                        _ => b == s,
                    });
                    if !fits {
                        return false;
                    }
                    found[n] = (at, at + v.len());
                    n += 1;
                    at += shape.len();
                }
                Piece::Run { class, minus, .. } => {
                    let start = at;
                    if *minus && key.get(at) == Some(&b'-') {
                        at += 1;
                    }
                    let digits = at;
                    while at < key.len() && class[key[at] as usize] {
                        at += 1;
                    }
                    if at == digits {
                        return false;
                    }
                    found[n] = (start, at);
                    n += 1;
                }
                Piece::ToEnd { rest } => {
                    let Some(end) = key.len().checked_sub(*rest).filter(|&e| e > at) else {
                        return false;
                    };
                    found[n] = (at, end);
                    n += 1;
                    at = end;
                }
            }
        }
        if at != key.len() {
            return false;
        }
        for &(a, b) in &found[..n] {
            f(&key[a..b]);
        }
        true
    }

    /// [`Cut::values`] of a key known to match the pattern (its family's automaton said so):
    /// the same values, found by where each ends (a run at its stop byte) without checking
    /// the bytes between.
    pub fn values_of_match<'k>(&self, key: &'k [u8], mut f: impl FnMut(&'k [u8])) {
        let mut at = 0;
        for piece in &self.0 {
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
            }
            .min(key.len());
            if !matches!(piece, Piece::Lit(_)) {
                f(&key[start..at]);
            }
        }
    }
}
