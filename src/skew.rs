//! Distribution statistics over nodes: how unevenly a weight (keys, bytes, ops) is
//! spread, and a verdict in plain words.

use serde::Serialize;

/// Skew of one weight over the nodes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Skew {
    /// The busiest node's value over the mean (1.0 = perfectly even).
    pub max_over_mean: f64,
    /// Coefficient of variation: population standard deviation over the mean.
    pub cv: f64,
    /// The busiest node (name).
    pub hottest_node: String,
    /// The busiest node's share of the total (0..1).
    pub hottest_share: f64,
    /// The busiest node's nominal share (0..1): of the slots it serves, or of the ring.
    pub hottest_slot_share: f64,
    /// The least busy node's share of the total (0..1).
    pub coldest_share: f64,
}

/// Skew of `values` (one per node); `None` when the total is zero or there are no nodes.
/// `slot_shares` are each node's share of the slots (0..1). Ties go to the first node.
pub fn skew(values: &[f64], names: &[String], slot_shares: &[f64]) -> Option<Skew> {
    let n = values.len();
    let total: f64 = values.iter().sum();
    if n == 0 || total <= 0.0 {
        return None;
    }
    let mean = total / n as f64;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    let (imax, max) =
        values.iter().enumerate().fold(
            (0, f64::MIN),
            |acc, (i, &v)| if v > acc.1 { (i, v) } else { acc },
        );
    let min = values.iter().cloned().fold(f64::MAX, f64::min);
    Some(Skew {
        max_over_mean: max / mean,
        cv: var.sqrt() / mean,
        hottest_node: names.get(imax).cloned().unwrap_or_default(),
        hottest_share: max / total,
        hottest_slot_share: slot_shares.get(imax).copied().unwrap_or(0.0),
        coldest_share: min / total,
    })
}

/// One sentence about a weight's skew, e.g. `127.0.0.1:7000 holds 38.0% of keys with 33.3% of
/// the slots (1.14× the mean)`.
pub fn describe(s: &Skew, what: &str, nominal: &str) -> String {
    format!(
        "{} holds {:.1}% of {what} with {:.1}% {nominal} ({:.2}× the mean node)",
        s.hottest_node,
        100.0 * s.hottest_share,
        100.0 * s.hottest_slot_share,
        s.max_over_mean
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_and_skewed() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let shares = [1.0 / 3.0; 3];
        let s = skew(&[10.0, 10.0, 10.0], &names, &shares).unwrap();
        assert!((s.max_over_mean - 1.0).abs() < 1e-12 && s.cv.abs() < 1e-12);
        let s = skew(&[10.0, 40.0, 10.0], &names, &shares).unwrap();
        assert_eq!(s.hottest_node, "b");
        assert!((s.hottest_share - 2.0 / 3.0).abs() < 1e-12);
        assert!((s.max_over_mean - 2.0).abs() < 1e-12);
        assert!(
            describe(&s, "keys", "of the slots")
                .starts_with("b holds 66.7% of keys with 33.3% of the slots")
        );
        assert!(skew(&[0.0, 0.0], &names, &shares).is_none());
    }
}
