//! Renders a [`PlanReport`]: per batch the candidates (round trips, latency, skew, keys moved,
//! Pareto front), the recommendation with its reason and the rewritten patterns; or JSON.

use super::TextLayout;
use crate::plan::BatchPlan;
use crate::plan::observed::ObservedPlan;
use comfy_table::{Cell, CellAlignment};
use serde::Serialize;
use std::io::{self, Write};

/// What the plan was scored on.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WorkloadInfo {
    /// `sample`, `declared cardinalities`, or `none`.
    pub source: String,
    /// Sample keys read.
    pub keys: u64,
    /// Sample keys matching no declared pattern.
    pub unmatched: u64,
}

/// The whole plan (`keyplan plan --format json`).
#[derive(Debug, Serialize)]
pub struct PlanReport {
    /// Where keys live.
    pub topology: String,
    /// What skew is measured on.
    pub workload: WorkloadInfo,
    /// The skew budget.
    pub max_skew: f64,
    /// `strategy pipeline` or `client redis-py`.
    pub scored_with: String,
    /// Scheme batches.
    pub batches: Vec<BatchPlan>,
    /// Observed batches over several slots.
    pub observed: ObservedPlanList,
    /// What the observed batches show as a whole (e.g. every one on a single slot).
    pub notes: Vec<String>,
}

impl PlanReport {
    /// How many findings: a scheme batch with a problem or whose recommendation changes
    /// anything, every observed batch listed (each is one that a change would help), and a
    /// note on the observed batches as a whole.
    pub fn findings(&self) -> usize {
        let batches = self.batches.iter();
        batches
            .filter(|b| b.problem.is_some() || b.recommended != 0)
            .count()
            + self.observed.len()
            + self.notes.len()
    }
}

impl WorkloadInfo {
    /// What `sample` scored the plans on.
    pub fn of(sample: &crate::plan::workload::PlanSample<'_>) -> WorkloadInfo {
        WorkloadInfo {
            source: match &sample.workload {
                Some(w) => w.source.to_string(),
                None if sample.read > 0 => "sample".into(),
                None => "none".into(),
            },
            keys: sample.read,
            unmatched: sample.workload.as_ref().map_or(0, |w| w.unmatched),
        }
    }
}

/// The plans of the observed batches over several slots: in memory, or in a spool (one JSON
/// line a plan, moved to a temporary file past a few MiB) with what completes each plan, so a
/// capture of any length is planned and rendered in bounded memory.
pub struct ObservedPlanList {
    len: usize,
    plans: ObservedPlans,
}

enum ObservedPlans {
    Kept(Vec<ObservedPlan>),
    Spooled {
        spool: std::cell::RefCell<tempfile::SpooledTempFile>,
        groups: crate::plan::observed::ObservedGroups,
    },
}

/// The observed plans as they are made, one JSON line each: in memory up to 4 MiB, then in a
/// temporary file, until the report is written.
pub struct ObservedSpool {
    file: io::BufWriter<tempfile::SpooledTempFile>,
    len: usize,
}

impl Default for ObservedSpool {
    fn default() -> Self {
        ObservedSpool {
            file: io::BufWriter::new(tempfile::SpooledTempFile::new(4 << 20)),
            len: 0,
        }
    }
}

impl ObservedSpool {
    /// Adds a plan (none for a batch that needs none).
    pub fn add(&mut self, plan: Option<ObservedPlan>) -> io::Result<()> {
        if let Some(p) = plan {
            serde_json::to_writer(&mut self.file, &p)?;
            self.file.write_all(b"\n")?;
            self.len += 1;
        }
        Ok(())
    }

    /// The plans spooled, each completed by `groups` as it is read back.
    pub fn finish(
        self,
        groups: crate::plan::observed::ObservedGroups,
    ) -> io::Result<ObservedPlanList> {
        let file = self.file.into_inner().map_err(|e| e.into_error())?;
        Ok(ObservedPlanList::spooled(file, self.len, groups))
    }
}

impl std::fmt::Debug for ObservedPlanList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ObservedPlanList({} plans)", self.len)
    }
}

impl ObservedPlanList {
    /// Plans already complete.
    pub fn kept(plans: Vec<ObservedPlan>) -> ObservedPlanList {
        ObservedPlanList {
            len: plans.len(),
            plans: ObservedPlans::Kept(plans),
        }
    }

    /// `len` plans spooled as JSON lines, each completed by `groups` as it is read back.
    pub fn spooled(
        spool: tempfile::SpooledTempFile,
        len: usize,
        groups: crate::plan::observed::ObservedGroups,
    ) -> ObservedPlanList {
        ObservedPlanList {
            len,
            plans: ObservedPlans::Spooled {
                spool: std::cell::RefCell::new(spool),
                groups,
            },
        }
    }

    /// How many plans.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Calls `f` with each plan, in order.
    pub fn for_each(&self, mut f: impl FnMut(&ObservedPlan) -> io::Result<()>) -> io::Result<()> {
        match &self.plans {
            ObservedPlans::Kept(plans) => plans.iter().try_for_each(f),
            ObservedPlans::Spooled { spool, groups } => {
                use std::io::{BufRead, Seek};
                let mut spool = spool.borrow_mut();
                spool.seek(io::SeekFrom::Start(0))?;
                let mut lines = io::BufReader::new(&mut *spool);
                let mut line = String::new();
                for _ in 0..self.len {
                    line.clear();
                    lines.read_line(&mut line)?;
                    let mut p: ObservedPlan = serde_json::from_str(&line)?;
                    groups.complete(&mut p);
                    f(&p)?;
                }
                Ok(())
            }
        }
    }
}

impl Serialize for ObservedPlanList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.len))?;
        let mut failed: Option<S::Error> = None;
        let read = self.for_each(|p| {
            seq.serialize_element(p).map_err(|e| {
                let text = e.to_string();
                failed = Some(e);
                io::Error::other(text)
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        read.map_err(S::Error::custom)?;
        seq.end()
    }
}

/// Writes the report as JSON (one line).
pub fn render_json(out: &mut dyn Write, r: &PlanReport) -> io::Result<()> {
    super::json::write_document(out, super::json::PLAN, r)
}

fn right(s: impl ToString) -> Cell {
    Cell::new(s.to_string()).set_alignment(CellAlignment::Right)
}

fn skew(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

fn moved(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// Writes the report as tables.
pub fn render_table(out: &mut dyn Write, r: &PlanReport, layout: &TextLayout) -> io::Result<()> {
    writeln!(out, "keyplan plan: topology {}", r.topology)?;
    let w = &r.workload;
    match w.source.as_str() {
        "sample" => writeln!(
            out,
            "skew measured on {} sample keys ({} match no declared pattern); max skew {}; round trips with {}",
            w.keys, w.unmatched, r.max_skew, r.scored_with
        )?,
        "none" => writeln!(
            out,
            "no key sample and no scheme: skew is not measured (give --keys); round trips with {}",
            r.scored_with
        )?,
        other => writeln!(
            out,
            "skew measured on keys generated from the {other} (give --keys for a real sample); max skew {}; round trips with {}",
            r.max_skew, r.scored_with
        )?,
    }
    for n in &r.notes {
        writeln!(out, "\n{n}")?;
    }
    if r.batches.is_empty() && r.observed.is_empty() && r.notes.is_empty() {
        writeln!(
            out,
            "\nNothing to plan: no scheme batches, and no observed batch spans several slots."
        )?;
    }
    for b in &r.batches {
        writeln!(out)?;
        match &b.problem {
            None => {
                writeln!(out, "{} ({}): fine. {}", b.batch, b.command, b.reason)?;
                continue;
            }
            Some(p) => writeln!(out, "{} ({}): {p}", b.batch, b.command)?,
        }
        let mut t = layout.table();
        // The candidates side by side are the point of `plan`: a narrow terminal moves their
        // descriptions under the table (numbered) before it gives up the table.
        t.set_header([
            "#",
            "outcome",
            "candidate",
            "round trips",
            "mean ms",
            "skew (its keys)",
            "skew (all)",
            "keys moved",
            "pareto",
        ]);
        // At 80 columns the figures still fit side by side under short headers.
        t.short_headers(
            [
                "#", "outcome", "candidate", "trips", "ms", "its skew", "all skew", "moved",
                "pareto",
            ]
            .map(String::from)
            .to_vec(),
            "(trips: round trips; ms: mean ms; its skew, all skew: skew of its keys, of all keys; moved: keys moved)"
                .to_string(),
        );
        for (i, c) in b.candidates.iter().enumerate() {
            t.add_row(vec![
                Cell::new(if i == b.recommended {
                    format!("★{}", i + 1)
                } else {
                    format!("{}", i + 1)
                }),
                Cell::new(c.score.outcome.short()),
                Cell::new(&c.summary),
                right(c.score.round_trips),
                right(format!("{:.3}", c.score.latency_ms)),
                right(skew(c.score.skew)),
                right(skew(c.score.skew_overall)),
                right(moved(c.score.keys_moved)),
                Cell::new(if c.pareto { "✓" } else { "" }),
            ]);
        }
        writeln!(out, "{t}")?;
        writeln!(out, "Recommended: {}", b.reason)?;
        let rec = &b.candidates[b.recommended];
        for rw in &rec.rewrites {
            writeln!(out, "  {}: \"{}\"   (was \"{}\")", rw.key, rw.to, rw.from)?;
        }
        for v in &rec.new_vars {
            writeln!(
                out,
                "  vars: {}: {{ kind: int, cardinality: {} }}   ({})",
                v.name, v.cardinality, v.derive
            )?;
        }
        if !rec.add_same.is_empty() {
            writeln!(
                out,
                "  batch {}: same: [..., {}] (one pipeline per bucket)",
                b.batch,
                rec.add_same.join(", ")
            )?;
        }
        // An `allow:` to add: what it goes on, the rules, why.
        let allow = |out: &mut dyn Write, on: &str, rules: &[String], why: &str| {
            writeln!(out, "  {on}: allow: [{}] ({why})", rules.join(", "))
        };
        if !rec.allow.is_empty() {
            let on = format!("batch {}", b.batch);
            allow(out, &on, &rec.allow, "it spreads over nodes on purpose")?;
        }
        for ka in &rec.key_allow {
            let why = "its tag has fewer values than the rules ask, on purpose";
            allow(out, &ka.key, &ka.rules, why)?;
        }
    }
    if !r.observed.is_empty() {
        writeln!(out, "\nObserved batches over several slots:")?;
        r.observed.for_each(|o| {
            writeln!(out, "\n{} — {} keys on {} slots", o.batch, o.keys, o.slots)?;
            writeln!(out, "  shapes: {}", o.patterns.join(", "))?;
            if !o.rewritten.is_empty() {
                writeln!(out, "  tagged: {}", o.rewritten.join(", "))?;
            }
            for (a, b) in &o.examples {
                writeln!(out, "    {a} → {b}")?;
            }
            writeln!(
                out,
                "  round trips {} → {}, latency {:.3} → {:.3} ms{}",
                o.before.round_trips,
                o.after.round_trips,
                o.before.latency_ms,
                o.after.latency_ms,
                match (o.before.skew, o.after.skew) {
                    (Some(a), Some(b)) => format!(", skew of these keys {a:.2} → {b:.2}"),
                    _ => String::new(),
                }
            )?;
            writeln!(out, "  {}", o.recommendation)
        })?;
    }
    out.flush()
}
