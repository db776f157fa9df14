//! The HTML report of `plan`: per batch, the candidates on a round trips × skew chart (the
//! Pareto front joined, the recommendation starred), their table, and the rewritten patterns.

use super::{cards, esc, node_color, page_end, page_start, trim_num};
use crate::plan::BatchPlan;
use crate::plan::CandidateKind;
use crate::report::plan::PlanReport;
use std::fmt::Write as _;
use std::io::{self, Write};

fn kind_color(kind: CandidateKind) -> &'static str {
    match kind {
        CandidateKind::Keep => "#777777",
        CandidateKind::Tag => node_color(0),
        CandidateKind::Bucket => node_color(1),
        CandidateKind::PerNodePipelines => node_color(2),
    }
}

fn scatter(h: &mut String, b: &BatchPlan, max_skew: f64) {
    let (w, ht, left, bottom, top, right) = (560.0, 260.0, 56.0, 40.0, 14.0, 20.0);
    let xs: Vec<f64> = b
        .candidates
        .iter()
        .map(|c| c.score.round_trips as f64)
        .collect();
    let ys: Vec<f64> = b
        .candidates
        .iter()
        .map(|c| c.score.skew.unwrap_or(1.0))
        .collect();
    let x1 = xs.iter().cloned().fold(1.0f64, f64::max) + 1.0;
    let y1 = ys.iter().cloned().fold(max_skew, f64::max) * 1.1;
    let y0 = 1.0f64.min(ys.iter().cloned().fold(f64::MAX, f64::min)) * 0.95;
    let sx = |x: f64| left + x / x1 * (w - left - right);
    let sy = |y: f64| top + (1.0 - (y - y0) / (y1 - y0).max(1e-9)) * (ht - top - bottom);
    let _ = write!(
        h,
        "<svg role=\"img\" aria-label=\"candidates by round trips and skew\" viewBox=\"0 0 {w} {ht}\" width=\"{w}\"><line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/><line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\" stroke=\"#999\"/>",
        ht - bottom,
        w - right,
        ht - bottom,
        ht - bottom
    );
    // The skew budget.
    let yb = sy(max_skew);
    let _ = write!(
        h,
        "<line x1=\"{left}\" x2=\"{}\" y1=\"{yb:.1}\" y2=\"{yb:.1}\" stroke=\"#D55E00\" stroke-dasharray=\"5 4\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#D55E00\">--max-skew {}</text>",
        w - right,
        w - right,
        yb - 4.0,
        trim_num(max_skew)
    );
    for i in 0..=4 {
        let y = y0 + (y1 - y0) * i as f64 / 4.0;
        let _ = write!(
            h,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{:.2}</text>",
            left - 4.0,
            sy(y) + 4.0,
            y
        );
    }
    let mut ticks: Vec<u64> = b.candidates.iter().map(|c| c.score.round_trips).collect();
    ticks.sort_unstable();
    ticks.dedup();
    for t in ticks {
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{t}</text>",
            sx(t as f64),
            ht - bottom + 14.0
        );
    }
    let _ = write!(
        h,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">round trips</text><text x=\"12\" y=\"{}\" font-size=\"12\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">skew of its keys (busiest ÷ mean)</text>",
        (left + w - right) / 2.0,
        ht - 6.0,
        (top + ht - bottom) / 2.0,
        (top + ht - bottom) / 2.0
    );
    // The Pareto front, joined.
    let mut front: Vec<(f64, f64)> = b
        .candidates
        .iter()
        .filter(|c| c.pareto)
        .map(|c| (c.score.round_trips as f64, c.score.skew.unwrap_or(1.0)))
        .collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    if front.len() > 1 {
        let pts: Vec<String> = front
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
            .collect();
        let _ = write!(
            h,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#009E73\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\"/>",
            pts.join(" ")
        );
    }
    for (i, c) in b.candidates.iter().enumerate() {
        let (x, y) = (
            sx(c.score.round_trips as f64),
            sy(c.score.skew.unwrap_or(1.0)),
        );
        let r = if i == b.recommended { 8.0 } else { 5.0 };
        let stroke = if c.pareto { "#009E73" } else { "#fff" };
        let _ = write!(
            h,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{}\" stroke=\"{stroke}\" stroke-width=\"2\"><title>{}: {} round trip(s), skew {}, {} keys moved</title></circle>",
            kind_color(c.kind),
            prose(&c.summary),
            c.score.round_trips,
            c.score
                .skew
                .map(|s| format!("{s:.2}"))
                .unwrap_or_else(|| "-".into()),
            trim_num(c.score.keys_moved)
        );
        if i == b.recommended {
            let _ = write!(
                h,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"14\">★</text>",
                x + 9.0,
                y - 6.0
            );
        }
    }
    let _ = write!(h, "</svg>");
}

/// Writes the plan as one self-contained HTML document.
pub fn render_plan(out: &mut dyn Write, r: &PlanReport) -> io::Result<()> {
    let mut h = String::with_capacity(1 << 18);
    page_start(
        &mut h,
        "keyplan plan",
        &format!(
            "topology: {} · skew measured on {} · round trips with {} · max skew {}",
            esc(&r.topology),
            if r.workload.source == "sample" {
                format!("{} sample keys", r.workload.keys)
            } else {
                esc(&r.workload.source)
            },
            esc(&r.scored_with),
            trim_num(r.max_skew)
        ),
    );
    let changes = r.batches.iter().filter(|b| b.problem.is_some()).count();
    cards(
        &mut h,
        &[
            ("scheme batches", r.batches.len().to_string()),
            ("batches to change", changes.to_string()),
            (
                "observed batches over several slots",
                r.observed.len().to_string(),
            ),
        ],
    );
    let _ = write!(
        h,
        "<p class=\"legend\"><span><i class=\"sw\" style=\"background:#777\"></i>keep</span><span><i class=\"sw\" style=\"background:{}\"></i>tag</span><span><i class=\"sw\" style=\"background:{}\"></i>bucket</span><span><i class=\"sw\" style=\"background:{}\"></i>per-node pipelines</span><span>green ring: Pareto front · ★ recommended</span></p>",
        node_color(0),
        node_color(1),
        node_color(2)
    );
    for b in &r.batches {
        let _ = write!(
            h,
            "<h2>{} <small>({})</small></h2>",
            esc(&b.batch),
            esc(&b.command)
        );
        match &b.problem {
            None => {
                let _ = write!(h, "<div class=\"verdict\">{}</div>", prose(&b.reason));
                continue;
            }
            Some(p) => {
                let _ = write!(h, "<div class=\"note\">{}</div>", prose(p));
            }
        }
        scatter(&mut h, b, r.max_skew);
        let _ = write!(
            h,
            "<table><tr><th></th><th class=\"l\">candidate</th><th class=\"l\">outcome</th><th>round trips</th><th>latency ms</th><th>skew (its keys)</th><th>skew (all)</th><th>keys moved</th><th>Pareto</th></tr>"
        );
        for (i, c) in b.candidates.iter().enumerate() {
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if i == b.recommended { "★" } else { "" },
                prose(&c.summary),
                esc(&c.score.outcome.to_string()),
                c.score.round_trips,
                c.score.latency_ms,
                c.score
                    .skew
                    .map(|s| format!("{s:.2}"))
                    .unwrap_or_else(|| "-".into()),
                c.score
                    .skew_overall
                    .map(|s| format!("{s:.2}"))
                    .unwrap_or_else(|| "-".into()),
                trim_num(c.score.keys_moved),
                if c.pareto { "✓" } else { "" }
            );
        }
        let _ = write!(
            h,
            "</table><div class=\"verdict\"><b>Recommended:</b> {}",
            prose(&b.reason)
        );
        let rec = &b.candidates[b.recommended];
        if !rec.rewrites.is_empty() || !rec.new_vars.is_empty() {
            let _ = write!(h, "<ul>");
            for rw in &rec.rewrites {
                let _ = write!(
                    h,
                    "<li>{}: <code>\"{}\"</code> (was <code>\"{}\"</code>)</li>",
                    esc(&rw.key),
                    esc(&rw.to),
                    esc(&rw.from)
                );
            }
            for v in &rec.new_vars {
                let _ = write!(
                    h,
                    "<li>vars: <code>{}: {{ kind: int, cardinality: {} }}</code> ({})</li>",
                    esc(&v.name),
                    v.cardinality,
                    esc(&v.derive)
                );
            }
            let _ = write!(h, "</ul>");
        }
        let _ = write!(h, "</div>");
    }
    if !r.observed.is_empty() {
        let _ = write!(
            h,
            "<h2>Observed batches over several slots</h2><table><tr><th class=\"l\">batch</th><th>keys</th><th>slots</th><th class=\"l\">shapes → tagged</th><th>round trips</th><th class=\"l\">recommendation</th></tr>"
        );
        r.observed.for_each(|o| {
            let _ = write!(
                h,
                "<tr><td class=\"l\"><code>{}</code></td><td>{}</td><td>{}</td><td class=\"l\"><code>{}</code>{}</td><td>{} → {}</td><td class=\"l\">{}</td></tr>",
                esc(&o.batch),
                o.keys,
                o.slots,
                super::esc_token(&o.patterns.join(", ")),
                if o.rewritten.is_empty() {
                    String::new()
                } else {
                    format!(" → <code>{}</code>", super::esc_token(&o.rewritten.join(", ")))
                },
                o.before.round_trips,
                o.after.round_trips,
                prose(&o.recommendation)
            );
            // Written as it grows: a capture's rows need not all be in memory at once.
            if h.len() > 1 << 20 {
                out.write_all(h.as_bytes())?;
                h.clear();
            }
            Ok(())
        })?;
        let _ = write!(h, "</table>");
    }
    page_end(
        &mut h,
        "Skew is the busiest node's load over the mean, of the batch's own keys and of all keys; keys moved would change node if the rewrite were adopted.",
    );
    out.write_all(h.as_bytes())?;
    out.flush()
}

/// Text of the plan's words as HTML: escaped, what it quotes between backticks set as code
/// (text with an odd number of backticks is all escaped).
fn prose(s: &str) -> String {
    if s.matches('`').count() % 2 == 1 {
        return esc(s);
    }
    s.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{}</code>", esc(part))
            } else {
                esc(part)
            }
        })
        .collect()
}

#[cfg(test)]
mod prose_tests {
    #[test]
    fn backticks_become_code() {
        assert_eq!(
            super::prose("tag `{user:<id>}` & more"),
            "tag <code>{user:&lt;id&gt;}</code> &amp; more"
        );
        assert_eq!(super::prose("odd ` tick"), "odd ` tick");
    }
}
