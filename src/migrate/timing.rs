//! How long a plan takes each way a cluster can move slots, from the sample's keys and bytes
//! per slot and a few stated figures (round trip, bandwidth, cost per key):
//!
//! - **key by key** (`CLUSTER SETSLOT` + `MIGRATE`, as `redis-cli --cluster reshard` and the
//!   setslot script do): per slot, IMPORTING on the target and MIGRATING on the source, then
//!   rounds of `GETKEYSINSLOT` + `MIGRATE` (whose own RESTORE to the target is a second round
//!   trip) of `pipeline` keys, one more `GETKEYSINSLOT` that finds none, and `SETSLOT NODE` on
//!   every master: each one round trip, one after another;
//! - **atomic** (Valkey 9 `CLUSTER MIGRATESLOTS`, Redis 8.4 `CLUSTER MIGRATION IMPORT`): per
//!   move, a few round trips to start the job and hand the slots over; the slots' keys
//!   stream to the target as one snapshot, with no round trip per key.
//!
//! Both pay for every byte at the bandwidth and for every key at its cost on the servers. Pure.

use super::impact::SlotWeights;
use super::{ClusterView, Move};
use serde::Serialize;

/// The figures an estimate rests on.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Assumptions {
    /// One round trip between the tool and a node (and between two nodes), ms.
    pub rtt_ms: f64,
    /// Bytes per second a node sends another.
    pub bandwidth_bytes_per_s: f64,
    /// Keys per `MIGRATE` (`--pipeline`, redis-cli's `--cluster-pipeline`).
    pub pipeline: usize,
    /// Server time per key migrated key by key (DUMP on the source, RESTORE on the target), µs.
    pub key_us_migrate: f64,
    /// Server time per key streamed in a snapshot (written on the source, applied on the
    /// target), µs.
    pub key_us_atomic: f64,
    /// Round trips an atomic job costs besides its data (start, connect, authenticate,
    /// establish, hand over, done).
    pub atomic_round_trips: u64,
    /// Sample counts are multiplied by this (`--scale`).
    pub scale: f64,
}

impl Assumptions {
    /// The defaults: a round trip of `rtt_ms`, a node sending at 100 MB/s unless
    /// `bandwidth` says, 10 µs a key migrated, 2 µs a key streamed, 6 round trips per job.
    pub fn new(rtt_ms: f64, bandwidth: Option<f64>, pipeline: usize, scale: f64) -> Assumptions {
        Assumptions {
            rtt_ms,
            bandwidth_bytes_per_s: bandwidth.unwrap_or(100e6),
            pipeline: pipeline.max(1),
            key_us_migrate: 10.0,
            key_us_atomic: 2.0,
            atomic_round_trips: 6,
            scale,
        }
    }

    /// The assumptions in words, for the report.
    pub fn describe(&self) -> String {
        format!(
            "{} ms a round trip, {:.0} MB/s between nodes, {} keys per MIGRATE, {} µs a key migrated and {} µs a key streamed on the servers, {} round trips per atomic job{}",
            self.rtt_ms,
            self.bandwidth_bytes_per_s / 1e6,
            self.pipeline,
            self.key_us_migrate,
            self.key_us_atomic,
            self.atomic_round_trips,
            if self.scale != 1.0 {
                format!(", sample × {}", self.scale)
            } else {
                String::new()
            }
        )
    }
}

/// One way's estimate.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Way {
    /// Seconds, start to end.
    pub seconds: f64,
    /// Round trips the tool (or the source, for MIGRATE) waits for, one after another.
    pub round_trips: u64,
}

/// Both ways, and what they assume.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TimeEstimate {
    /// `CLUSTER SETSLOT` + `MIGRATE`, slot after slot.
    pub key_by_key: Way,
    /// One snapshot stream per move.
    pub atomic: Way,
    /// The figures used.
    pub assumptions: Assumptions,
    /// The assumptions in words.
    pub described: String,
}

/// The estimate for `moves` on `view`, with the sample's `weights` per slot.
pub fn estimate(
    view: &ClusterView,
    moves: &[Move],
    weights: &SlotWeights,
    a: &Assumptions,
) -> TimeEstimate {
    let masters = view.masters().len().max(1) as u64;
    let rtt = a.rtt_ms / 1e3;
    let (mut kbk_rt, mut kbk_data, mut atomic_data) = (0u64, 0.0f64, 0.0f64);
    let mut atomic_rt = 0u64;
    for m in moves {
        atomic_rt += a.atomic_round_trips;
        for &s in &m.slots {
            let s = s as usize;
            let keys = weights.keys.get(s).copied().unwrap_or(0) as f64 * a.scale;
            let bytes = weights.bytes.get(s).copied().unwrap_or(0) as f64 * a.scale;
            let rounds = (keys / a.pipeline as f64).ceil() as u64;
            // IMPORTING, MIGRATING; per round GETKEYSINSLOT, MIGRATE and its RESTORE; the
            // empty GETKEYSINSLOT; SETSLOT NODE on every master.
            kbk_rt += 2 + 3 * rounds + 1 + masters;
            let wire = bytes / a.bandwidth_bytes_per_s;
            kbk_data += wire + keys * a.key_us_migrate / 1e6;
            atomic_data += wire + keys * a.key_us_atomic / 1e6;
        }
    }
    TimeEstimate {
        key_by_key: Way {
            seconds: kbk_rt as f64 * rtt + kbk_data,
            round_trips: kbk_rt,
        },
        atomic: Way {
            seconds: atomic_rt as f64 * rtt + atomic_data,
            round_trips: atomic_rt,
        },
        assumptions: *a,
        described: a.describe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::migrate::tests::THREE_MASTERS as NODES;

    #[test]
    fn round_trips_follow_the_slots_and_the_key_rounds() {
        let view = ClusterView::from_cluster_nodes(NODES).unwrap();
        let mut w = SlotWeights::default();
        for i in 0..250 {
            w.add(format!("{{a}}:{i}").as_bytes(), Some(1000), None);
        }
        let slot_a = crate::slot::key_slot(b"a");
        let moves = vec![
            Move {
                from: 0,
                to: 1,
                slots: vec![slot_a],
            },
            Move {
                from: 0,
                to: 2,
                slots: vec![slot_a + 1, slot_a + 2],
            },
        ];
        let a = Assumptions::new(1.0, Some(1e6), 100, 1.0);
        let e = estimate(&view, &moves, &w, &a);
        // Slot a: 2 + 3 rounds × 3 + 1 + 3 masters; the two empty slots 2 + 0 + 1 + 3 each.
        assert_eq!(e.key_by_key.round_trips, 15 + 6 + 6);
        assert_eq!(e.atomic.round_trips, 12);
        // 250 kB at 1 MB/s: 0.25 s on the wire either way.
        let kbk = 27.0 * 1e-3 + 0.25 + 250.0 * 10e-6;
        assert!((e.key_by_key.seconds - kbk).abs() < 1e-9, "{e:?}");
        let atomic = 12.0 * 1e-3 + 0.25 + 250.0 * 2e-6;
        assert!((e.atomic.seconds - atomic).abs() < 1e-9, "{e:?}");
        // Scale multiplies keys and bytes.
        let e2 = estimate(
            &view,
            &moves,
            &w,
            &Assumptions::new(1.0, Some(1e6), 100, 2.0),
        );
        assert_eq!(e2.key_by_key.round_trips, 2 + 3 * 5 + 1 + 3 + 12);
        assert!(e2.described.contains("sample × 2"));
    }
}
