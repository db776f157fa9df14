//! Plans on managed Redis: Amazon ElastiCache and MemoryDB run no `CLUSTER SETSLOT` or
//! `MIGRATE` for their users. Online they change the number of shards and then spread the slots
//! as evenly as they can by themselves; a layout of one's own (one slot range per shard) is
//! only taken offline, by restoring a backup into a new cluster. So what of a plan can be
//! applied is: online, its number of shards; offline, a contiguous layout that balances what
//! the plan balances. This module computes that layout and writes the commands. Pure.

use super::{ClusterView, Move};
use crate::slot::SLOT_COUNT;
use std::fmt::Write as _;

/// A managed service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// Amazon ElastiCache (Valkey or Redis OSS, cluster mode enabled).
    ElastiCache,
    /// Amazon MemoryDB.
    MemoryDb,
}

/// Items this large (serialized) are left where they are by online resharding.
pub const LARGE_ITEM_BYTES: u64 = 256 * 1024 * 1024;

/// `shards` contiguous slot ranges covering every slot, each at least one slot, that make
/// the largest range's total of `weight` (one value per slot) as small as it can be; ties
/// break towards cutting as late as possible, so equal weights give redis-cli's even layout
/// within one slot.
pub fn contiguous_layout(weight: &[u64], shards: usize) -> Vec<(u16, u16)> {
    let n = weight.len().min(SLOT_COUNT);
    let shards = shards.clamp(1, n.max(1));
    // The smallest capacity with which a greedy left-to-right fill needs at most `shards`
    // ranges (each range at least one slot).
    let fits = |cap: u64| -> bool {
        let (mut used, mut sum) = (1usize, 0u64);
        for &w in &weight[..n] {
            if w > cap {
                return false;
            }
            if sum + w > cap {
                used += 1;
                sum = 0;
            }
            sum += w;
        }
        used <= shards
    };
    let total: u64 = weight[..n].iter().sum();
    let (mut lo, mut hi) = (weight[..n].iter().copied().max().unwrap_or(0), total.max(1));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let cap = lo;
    // The cuts at equal shares of the total, when they reach that capacity (they do for
    // even weights, and give the most even ranges).
    let mut quantile: Vec<(u16, u16)> = Vec::with_capacity(shards);
    let (mut start, mut acc, mut next) = (0usize, 0u64, 1usize);
    for (i, &w) in weight[..n].iter().enumerate() {
        acc += w;
        let left_after = n - i - 1;
        let ranges_after = shards - next;
        let due = (acc as u128) * (shards as u128) >= (total as u128) * (next as u128);
        if next < shards && (due || left_after == ranges_after) && left_after >= ranges_after {
            quantile.push((start as u16, i as u16));
            start = i + 1;
            next += 1;
        }
    }
    quantile.push((start as u16, (n - 1) as u16));
    let largest = |l: &[(u16, u16)]| {
        l.iter()
            .map(|&(a, b)| weight[a as usize..=b as usize].iter().sum::<u64>())
            .max()
            .unwrap_or(0)
    };
    if quantile.len() == shards && largest(&quantile) <= cap {
        return quantile;
    }
    // Cut from the right, as late as the capacity allows, keeping one slot for each range to
    // the left; then every range but the first is as full as it may be.
    let mut ranges: Vec<(u16, u16)> = Vec::with_capacity(shards);
    let mut end = n; // exclusive
    for left in (1..shards).rev() {
        let mut start = end;
        let mut sum = 0u64;
        while start > left && sum + weight[start - 1] <= cap {
            start -= 1;
            sum += weight[start];
        }
        if start == end {
            start -= 1;
        }
        ranges.push((start as u16, (end - 1) as u16));
        end = start;
    }
    ranges.push((0, (end - 1) as u16));
    ranges.reverse();
    ranges
}

/// What the report says of a layout: each shard's range and share of the weight.
pub fn shares(weight: &[u64], ranges: &[(u16, u16)]) -> Vec<f64> {
    let total: u64 = weight.iter().sum();
    ranges
        .iter()
        .map(|&(a, b)| {
            let s: u64 = weight[a as usize..=b as usize].iter().sum();
            if total == 0 {
                0.0
            } else {
                s as f64 / total as f64
            }
        })
        .collect()
}

/// What goes into the script besides the plan.
#[derive(Debug, Clone, Default)]
pub struct ManagedContext {
    /// Comment lines describing the plan.
    pub header: Vec<String>,
    /// What the layout balances (`slots`, `keys`, `bytes`, `ops`), and its weight per slot.
    pub balance_by: String,
    /// The weight per slot (16384 values).
    pub weight: Vec<u64>,
    /// Keys over [`LARGE_ITEM_BYTES`] serialized in slots that move: `(key, slot, bytes)`.
    pub large_items: Vec<(String, u16, u64)>,
}

/// The script for `service`: the plan's number of shards online, and a contiguous layout of
/// as many shards for an offline restore. `sh SCRIPT online` or `sh SCRIPT offline`.
pub fn script(
    view: &ClusterView,
    moves: &[Move],
    service: Service,
    ctx: &ManagedContext,
) -> String {
    let owners = view.owners_after(moves);
    let mut holders: Vec<usize> = owners.iter().flatten().copied().collect();
    holders.sort_unstable();
    holders.dedup();
    let before: Vec<usize> = {
        let mut v: Vec<usize> = view.owner.iter().flatten().copied().collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let shards = holders.len().max(1);
    let even = contiguous_layout(&vec![1u64; SLOT_COUNT], shards);
    let layout = contiguous_layout(&ctx.weight, shards);
    let layout_shares = shares(&ctx.weight, &layout);
    let plan_share: Vec<f64> = {
        let total: u64 = ctx.weight.iter().sum();
        holders
            .iter()
            .map(|&h| {
                let s: u64 = owners
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| **o == Some(h))
                    .map(|(s, _)| ctx.weight[s])
                    .sum();
                if total == 0 {
                    0.0
                } else {
                    s as f64 / total as f64
                }
            })
            .collect()
    };
    let worst = |v: &[f64]| v.iter().cloned().fold(0.0f64, f64::max) * v.len() as f64;
    let (name, online_cmd) = match service {
        Service::ElastiCache => (
            "Amazon ElastiCache",
            "modify-replication-group-shard-configuration",
        ),
        Service::MemoryDb => ("Amazon MemoryDB", "update-cluster"),
    };
    let mut out = String::new();
    out.push_str(
        "#!/bin/sh\n# Written by keyplan; review before running. keyplan never runs it.\n",
    );
    for h in &ctx.header {
        let _ = writeln!(out, "# {}", super::emit::comment(h));
    }
    let _ = writeln!(
        out,
        "#\n# {name} runs no CLUSTER SETSLOT or MIGRATE for its users, so the plan's slot moves\n# cannot be applied as they are. What can be applied:\n#   online (no downtime): its number of shards, {} -> {shards}; the service then spreads the\n#     slots as evenly as it can by itself (about {} each), whatever the plan balanced;\n#   offline (restore a backup into a new cluster): one slot range per shard, chosen by\n#     keyplan to balance {} with contiguous ranges.",
        before.len(),
        SLOT_COUNT / shards,
        ctx.balance_by
    );
    let _ = writeln!(
        out,
        "# Busiest shard ÷ mean {}: the plan {:.2}, even contiguous slots (about what online\n# resharding reaches) {:.2}, the offline layout {:.2}.",
        ctx.balance_by,
        worst(&plan_share),
        worst(&shares(&ctx.weight, &even)),
        worst(&layout_shares)
    );
    if !ctx.large_items.is_empty() {
        let _ = writeln!(
            out,
            "#\n# WARNING: online resharding leaves items over 256 MB (serialized) where they are, and\n# does not remove a shard that holds one. These keys in moving slots are that large:"
        );
        for (k, slot, b) in &ctx.large_items {
            let _ = writeln!(
                out,
                "#   {} (slot {slot}, {b} bytes serialized)",
                super::emit::comment(k)
            );
        }
    }
    out.push_str("set -euf\ncase \"${1:-}\" in\nonline)\n");
    match service {
        Service::ElastiCache => {
            let _ = writeln!(
                out,
                "  aws elasticache {online_cmd} \\\n    --replication-group-id \"${{REPLICATION_GROUP:?set REPLICATION_GROUP to the replication group id}}\" \\\n    --node-group-count {shards} \\"
            );
            if shards < before.len() {
                let _ = writeln!(
                    out,
                    "    --node-groups-to-remove ${{NODE_GROUPS_TO_REMOVE:?set NODE_GROUPS_TO_REMOVE to the {} node group ids to remove}} \\",
                    before.len() - shards
                );
            }
            out.push_str("    --apply-immediately\n");
        }
        Service::MemoryDb if shards == before.len() => {
            let _ = writeln!(
                out,
                "  echo 'MemoryDB rebalances no slots online, and the plan keeps {shards} shards: nothing to apply online' >&2"
            );
        }
        Service::MemoryDb => {
            let _ = writeln!(
                out,
                "  aws memorydb {online_cmd} \\\n    --cluster-name \"${{CLUSTER_NAME:?set CLUSTER_NAME to the cluster name}}\" \\\n    --shard-configuration ShardCount={shards}"
            );
        }
    }
    out.push_str("  ;;\noffline)\n");
    match service {
        Service::ElastiCache => {
            out.push_str("  # A new replication group from a backup of this one, with one slot range per shard.\n");
            let _ = writeln!(
                out,
                "  aws elasticache create-replication-group \\\n    --replication-group-id \"${{NEW_REPLICATION_GROUP:?set NEW_REPLICATION_GROUP to the new group's id}}\" \\\n    --replication-group-description \"keyplan layout: {shards} shards balancing {}\" \\\n    --snapshot-name \"${{SNAPSHOT:?set SNAPSHOT to a backup of the cluster}}\" \\\n    --cache-node-type \"${{NODE_TYPE:?set NODE_TYPE, e.g. cache.r7g.large}}\" \\\n    --engine \"${{ENGINE:-redis}}\" \\\n    --num-node-groups {shards} \\\n    --node-group-configuration \\",
                ctx.balance_by
            );
            for (i, &(a, b)) in layout.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "      \"NodeGroupId={:04},Slots={a}-{b},ReplicaCount=${{REPLICAS:-1}}\" \\",
                    i + 1
                );
            }
            out.push_str("    --automatic-failover-enabled\n");
        }
        Service::MemoryDb => {
            out.push_str("  # MemoryDB takes no slot ranges when it creates a cluster: offline, only the number of\n  # shards changes (restore a snapshot into a new cluster of that many shards).\n");
            let _ = writeln!(
                out,
                "  aws memorydb create-cluster \\\n    --cluster-name \"${{NEW_CLUSTER_NAME:?set NEW_CLUSTER_NAME}}\" \\\n    --node-type \"${{NODE_TYPE:?set NODE_TYPE, e.g. db.r7g.large}}\" \\\n    --acl-name \"${{ACL_NAME:?set ACL_NAME}}\" \\\n    --snapshot-name \"${{SNAPSHOT:?set SNAPSHOT to a snapshot of the cluster}}\" \\\n    --num-shards {shards}"
            );
        }
    }
    out.push_str(
        "  ;;\n*)\n  echo \"usage: sh $0 online|offline (see the comments at the top)\" >&2\n  exit 2\n  ;;\nesac\n",
    );
    if service == Service::ElastiCache {
        out.push_str("# The offline layout, shard by shard:\n");
        for (i, (&(a, b), s)) in layout.iter().zip(&layout_shares).enumerate() {
            let _ = writeln!(
                out,
                "#   {:04}: slots {a}-{b} ({} slots, {:.1}% of {})",
                i + 1,
                b - a + 1,
                100.0 * s,
                ctx.balance_by
            );
        }
    }
    out
}

/// What a managed service's layout balances: `by`'s weight per slot (in thousandths, so that
/// ops and measured loads keep their fractions), and the moving keys too large for online
/// resharding.
pub fn layout(
    by: super::balance::BalanceBy,
    weights: &super::impact::SlotWeights,
    report: &super::MigrationReport,
) -> super::emit::Layout {
    super::emit::Layout {
        balance_by: by.name().to_string(),
        weight: by
            .slot_weights(weights)
            .iter()
            .map(|w| (w.max(0.0) * 1000.0).round() as u64)
            .collect(),
        large_items: report
            .moving_big_keys
            .iter()
            .filter_map(|k| {
                let b = k.key.serialized.filter(|&b| b > LARGE_ITEM_BYTES)?;
                Some((
                    crate::keys::display::display_key(&k.key.key.0).into_owned(),
                    k.key.slot,
                    b,
                ))
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_weights_give_even_ranges() {
        let l = contiguous_layout(&vec![1; SLOT_COUNT], 3);
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].0, 0);
        assert_eq!(l[2].1, 16383);
        let sizes: Vec<u32> = l.iter().map(|&(a, b)| (b - a + 1) as u32).collect();
        assert!(sizes.iter().all(|&s| (5461..=5462).contains(&s)), "{l:?}");
        for w in l.windows(2) {
            assert_eq!(w[0].1 + 1, w[1].0);
        }
    }

    #[test]
    fn the_largest_range_is_as_small_as_it_can_be() {
        // A hot slot: one range holds it alone as far as it can.
        let mut w = vec![1u64; SLOT_COUNT];
        w[100] = 20_000;
        let l = contiguous_layout(&w, 4);
        let max = |l: &[(u16, u16)]| {
            l.iter()
                .map(|&(a, b)| w[a as usize..=b as usize].iter().sum::<u64>())
                .max()
                .unwrap()
        };
        // The hot slot's range cannot be below 20,000; slots 0..=100 are all in the first.
        assert!(max(&l) <= 20_000 + 101, "{l:?}");
        // Brute force over the first cut on a small instance confirms optimality.
        let small: Vec<u64> = vec![5, 1, 1, 9, 2, 2, 2, 7, 1, 3];
        for k in 1..=5 {
            let l = contiguous_layout(&small, k);
            let got = l
                .iter()
                .map(|&(a, b)| small[a as usize..=b as usize].iter().sum::<u64>())
                .max()
                .unwrap();
            assert_eq!(got, best(&small, k), "k={k} {l:?}");
            assert_eq!(l.len(), k);
            assert_eq!(l.last().unwrap().1 as usize, small.len() - 1);
        }
    }

    /// The optimal largest range by exhaustive search.
    fn best(w: &[u64], k: usize) -> u64 {
        if k == 1 {
            return w.iter().sum();
        }
        (1..=w.len() - (k - 1))
            .map(|i| w[..i].iter().sum::<u64>().max(best(&w[i..], k - 1)))
            .min()
            .unwrap()
    }
}
