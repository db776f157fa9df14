//! A seeded generator of realistic keys, shared by `examples/gen_keys.rs`, the benchmarks and
//! the tests (included with `#[path]`; it uses only the standard library).
//!
//! The keys model a plausible e-commerce/social application. About 20% carry a hash tag and
//! the average line is ~28 bytes. The data is deliberately skewed: a low-cardinality
//! `feed:{group_N}` tag (12 groups, Zipf-like) and one hot `lb:{global}` leaderboard tag
//! concentrate keys on a few slots, the way a low-cardinality hash tag does.
#![allow(dead_code)]

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Zipf-like: small values are much more frequent.
    pub fn skewed(&mut self, n: u64) -> u64 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((n as f64).powf(u) as u64).saturating_sub(1).min(n - 1)
    }
}

const WORDS: &[&str] = &[
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory",
    "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter", "yolanda",
];

/// Generates keys one at a time.
pub struct KeyGen {
    rng: Rng,
}

impl KeyGen {
    /// A generator; the same seed gives the same keys.
    pub fn new(seed: u64) -> KeyGen {
        KeyGen { rng: Rng(seed | 1) }
    }

    /// Appends the next key to `line` and returns its memory (bytes) and traffic (ops/s)
    /// weights.
    pub fn next_key(&mut self, line: &mut String) -> (u64, f64) {
        use std::fmt::Write as _;
        let rng = &mut self.rng;
        match rng.below(100) {
            // 20%: user profiles, untagged.
            0..=19 => {
                let id = rng.below(2_000_000);
                let _ = write!(line, "user:{id}:profile");
                (200 + rng.below(400), 0.5)
            }
            // 12%: sessions by uuid.
            20..=31 => {
                let (a, b) = (rng.next(), rng.next());
                let _ = write!(
                    line,
                    "session:{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                    a >> 32,
                    (a >> 16) & 0xffff,
                    a & 0xfff,
                    (b >> 48) & 0x3fff | 0x8000,
                    b & 0xffff_ffff_ffff
                );
                (120 + rng.below(200), 2.0)
            }
            // 8%: carts tagged by user.
            32..=39 => {
                let id = rng.below(2_000_000);
                let _ = write!(line, "cart:{{user:{id}}}:items");
                (300 + rng.below(1500), 1.0)
            }
            // 6%: orders, tagged so items and total share a slot.
            40..=45 => {
                let id = 1_000_000 + rng.below(5_000_000);
                let part = if rng.below(2) == 0 { "items" } else { "total" };
                let _ = write!(line, "order:{{{id}}}:{part}");
                (150 + rng.below(600), 0.2)
            }
            // 5%: social feeds tagged by one of 12 groups: hot slots.
            46..=50 => {
                let g = rng.skewed(12);
                let id = rng.below(2_000_000);
                let _ = write!(line, "feed:{{group_{g}}}:user:{id}");
                (800 + rng.below(4000), 5.0)
            }
            // 1%: a leaderboard under one global tag: one very hot slot.
            51 => {
                let day = 1 + rng.below(28);
                let board = WORDS[rng.below(WORDS.len() as u64) as usize];
                let _ = write!(line, "lb:{{global}}:{board}:2026-11-{day:02}");
                (20_000 + rng.below(50_000), 50.0)
            }
            // 14%: rate limits by IP and date.
            52..=65 => {
                let ip = rng.next();
                let day = 1 + rng.below(30);
                let _ = write!(
                    line,
                    "rate:{}.{}.{}.{}:2026-11-{day:02}",
                    10 + (ip & 0x7f),
                    (ip >> 8) & 0xff,
                    (ip >> 16) & 0xff,
                    1 + (ip >> 24) % 254
                );
                (64, 20.0)
            }
            // 15%: products by SKU.
            66..=80 => {
                let sku = rng.skewed(900_000);
                let _ = write!(line, "product:SKU-{sku:06}");
                (500 + rng.below(3000), 3.0 / (1.0 + sku as f64 / 1000.0))
            }
            // 12%: page cache by content hash.
            81..=92 => {
                let _ = write!(line, "cache:page:{:016x}{:016x}", rng.next(), rng.next());
                (2_000 + rng.below(30_000), 1.0)
            }
            // 7%: per-user settings by name (alphabetic ids).
            _ => {
                let w = WORDS[rng.below(WORDS.len() as u64) as usize];
                let n = rng.below(100_000);
                let _ = write!(line, "settings:{w}{n}");
                (100 + rng.below(100), 0.1)
            }
        }
    }
}

/// Generates `n` keys as raw lines into one buffer (for benchmarks).
pub fn raw_dump(n: usize, seed: u64) -> Vec<u8> {
    let mut g = KeyGen::new(seed);
    let mut out = Vec::with_capacity(n * 30);
    let mut line = String::new();
    for _ in 0..n {
        line.clear();
        g.next_key(&mut line);
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}
