//! Progress on long runs: a bar on stderr while a command works, only when stderr is a
//! terminal and `--quiet` is not given.
//!
//! Workers only bump atomic counters; one drawing thread owns the bar, shows it after a short
//! delay (quick runs never flash one) and refreshes it ten times a second. No stream lock is
//! held across a run: the bar writes to stderr through its own short-lived locks, and the
//! command's own output goes through unlocked handles, so the two can never wait on each other.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a bar counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes of input read.
    Bytes,
    /// Keys (read, sampled or written).
    Keys,
    /// Steps of a job (batches, strategies, slots).
    Steps,
}

/// Whether and how progress is shown in this run.
#[derive(Debug, Clone, Copy)]
pub struct ProgressConfig {
    /// Draw bars at all (stderr is a terminal and no `--quiet`).
    pub enabled: bool,
    /// How long a run goes before its bar appears.
    pub delay: Duration,
}

impl ProgressConfig {
    /// No progress (pipes, files, `--quiet`, in-process runs).
    pub fn off() -> Self {
        ProgressConfig {
            enabled: false,
            delay: Duration::ZERO,
        }
    }

    /// Progress as a person at a terminal gets it. The delay before a bar appears is 400 ms;
    /// `KEYPLAN_PROGRESS_DELAY_MS` changes it (tests set 0 so every run draws).
    pub fn terminal() -> Self {
        let delay = std::env::var("KEYPLAN_PROGRESS_DELAY_MS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_millis(400));
        ProgressConfig {
            enabled: true,
            delay,
        }
    }
}

struct Shared {
    pos: AtomicU64,
    /// 0 when unknown.
    total: AtomicU64,
    done: AtomicBool,
    message: Mutex<String>,
    /// The bar once it is shown; held (briefly) while drawing and while output is written
    /// around it.
    bar: Mutex<Option<ProgressBar>>,
}

/// A progress bar for one long step. Dropping it (or [`Progress::finish`]) clears it.
pub struct Progress {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// A progress that is never drawn (counters still work).
    pub fn hidden() -> Self {
        Progress {
            shared: Arc::new(Shared {
                pos: AtomicU64::new(0),
                total: AtomicU64::new(0),
                done: AtomicBool::new(false),
                message: Mutex::new(String::new()),
                bar: Mutex::new(None),
            }),
            thread: None,
        }
    }

    /// Starts a bar labelled `label` counting `unit`, out of `total` when known.
    pub fn start(config: ProgressConfig, label: &str, unit: Unit, total: Option<u64>) -> Self {
        let mut p = Progress::hidden();
        p.shared.total.store(total.unwrap_or(0), Ordering::Relaxed);
        if !config.enabled {
            return p;
        }
        let shared = Arc::clone(&p.shared);
        let label = label.to_string();
        let delay = config.delay;
        p.thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || draw(&shared, &label, unit, delay))
            .ok();
        p
    }

    /// The position counter, for readers that count bytes as they go.
    pub fn counter(&self) -> &AtomicU64 {
        &self.shared.pos
    }

    /// Adds `n` to the position.
    pub fn inc(&self, n: u64) {
        self.shared.pos.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets the position.
    pub fn set_position(&self, pos: u64) {
        self.shared.pos.store(pos, Ordering::Relaxed);
    }

    /// Sets the total (0 for unknown).
    pub fn set_total(&self, total: u64) {
        self.shared.total.store(total, Ordering::Relaxed);
    }

    /// Sets the text shown after the bar (what is being done now).
    pub fn set_message(&self, message: impl Into<String>) {
        if let Ok(mut m) = self.shared.message.lock() {
            *m = message.into();
        }
    }

    /// Runs `f` with the bar hidden, for output written to the same terminal meanwhile.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.shared.bar.lock() {
            Ok(guard) => match guard.as_ref() {
                Some(bar) => bar.suspend(f),
                None => f(),
            },
            Err(_) => f(),
        }
    }

    /// Clears the bar and stops its thread.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // Wake the drawing thread from its wait so the run ends without a pause.
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

fn style(label: &str, unit: Unit, with_total: bool, start: u64) -> ProgressStyle {
    let (pos, per_sec) = match unit {
        Unit::Bytes => ("{bytes}/{total_bytes}", "{rate}"),
        Unit::Keys => ("{human_pos}/{human_len} keys", "{rate}"),
        Unit::Steps => ("{pos}/{len}", ""),
    };
    let template = if with_total {
        format!("{{spinner}} {label} {pos} [{{bar:24}}] {per_sec} {{left}} {{wide_msg}}")
    } else {
        let pos = match unit {
            Unit::Bytes => "{bytes}",
            Unit::Keys => "{human_pos} keys",
            Unit::Steps => "{pos}",
        };
        format!("{{spinner}} {label} {pos} {per_sec} {{wide_msg}}")
    };
    ProgressStyle::with_template(&template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            move |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&rate(unit, s.pos().saturating_sub(start), s.elapsed()));
            },
        )
        .with_key(
            "left",
            move |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let done = s.pos().saturating_sub(start);
                let left = s.len().unwrap_or(0).saturating_sub(s.pos());
                let _ = w.write_str(&eta(done, left, s.elapsed()));
            },
        )
        .progress_chars("=> ")
}

/// The time left at the average rate since the bar appeared (`eta 1m05s`); blank until
/// there is a rate to go by (half a second and some work done), so never a false `eta 0s`.
fn eta(done: u64, left: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if secs < 0.5 || done == 0 {
        return String::new();
    }
    let rest = (left as f64 * secs / done as f64).round() as u64;
    match rest {
        0 if left > 0 => "eta <1s".to_string(),
        0..60 => format!("eta {rest}s"),
        60..3600 => format!("eta {}m{:02}s", rest / 60, rest % 60),
        _ => format!("eta {}h{:02}m", rest / 3600, rest / 60 % 60),
    }
}

/// The average rate since the bar appeared, in words (`12.5 MiB/s`, `49.3k keys/s`); blank for
/// its first half second, when one burst would read as an absurd rate.
fn rate(unit: Unit, done: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if secs < 0.5 {
        return String::new();
    }
    let per_sec = done as f64 / secs;
    match unit {
        Unit::Bytes => format!("{}/s", indicatif::BinaryBytes(per_sec as u64)),
        Unit::Keys if per_sec >= 1e6 => format!("{:.1}M keys/s", per_sec / 1e6),
        Unit::Keys if per_sec >= 1e3 => format!("{:.1}k keys/s", per_sec / 1e3),
        Unit::Keys => format!("{per_sec:.0} keys/s"),
        Unit::Steps => String::new(),
    }
}

fn draw(shared: &Shared, label: &str, unit: Unit, delay: Duration) {
    let shown_at = Instant::now() + delay;
    while Instant::now() < shown_at {
        if shared.done.load(Ordering::Relaxed) {
            return;
        }
        std::thread::park_timeout(shown_at.saturating_duration_since(Instant::now()));
    }
    let mut with_total = None;
    let mut start_pos = 0;
    loop {
        let done = shared.done.load(Ordering::Relaxed);
        let total = shared.total.load(Ordering::Relaxed);
        if let Ok(mut guard) = shared.bar.lock() {
            let bar = guard.get_or_insert_with(|| {
                // Styled and positioned before its first frame (no unlabelled frame); rates
                // count from here, not from a jump over the work done before the bar appeared.
                let start = shared.pos.load(Ordering::Relaxed);
                with_total = Some(total > 0);
                let bar = ProgressBar::with_draw_target(
                    (total > 0).then_some(total),
                    ProgressDrawTarget::stderr_with_hz(10),
                )
                .with_style(style(label, unit, total > 0, start))
                .with_position(start);
                bar.reset_eta();
                start_pos = start;
                bar
            });
            if with_total != Some(total > 0) {
                with_total = Some(total > 0);
                bar.set_style(style(label, unit, total > 0, start_pos));
            }
            if total > 0 {
                bar.set_length(total);
            }
            bar.set_position(shared.pos.load(Ordering::Relaxed));
            if let Ok(m) = shared.message.lock() {
                bar.set_message(m.clone());
            }
            bar.tick();
            if done {
                bar.finish_and_clear();
                return;
            }
        }
        if done {
            return;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_comes_from_the_rate_since_the_start() {
        // Nothing to go by yet: no figure rather than a false one.
        assert_eq!(eta(0, 100, Duration::from_secs(3)), "");
        assert_eq!(eta(50, 50, Duration::from_millis(200)), "");
        // Half done in 10 s: 10 s left.
        assert_eq!(eta(500, 500, Duration::from_secs(10)), "eta 10s");
        assert_eq!(eta(100, 900, Duration::from_secs(10)), "eta 1m30s");
        assert_eq!(eta(1, 1000, Duration::from_secs(10)), "eta 2h46m");
        assert_eq!(eta(1000, 1, Duration::from_secs(1)), "eta <1s");
        assert_eq!(eta(1000, 0, Duration::from_secs(1)), "eta 0s");
    }

    #[test]
    fn hidden_progress_counts_and_finishes() {
        let p = Progress::start(ProgressConfig::off(), "x", Unit::Keys, Some(10));
        p.inc(3);
        p.set_position(7);
        assert_eq!(p.counter().load(Ordering::Relaxed), 7);
        assert_eq!(p.suspend(|| 5), 5);
        p.finish();
    }

    #[test]
    fn drawing_thread_stops_on_drop() {
        // Enabled but drawn to a stderr that is not a terminal: indicatif hides the bar; the
        // thread must still end when the progress is dropped.
        let config = ProgressConfig {
            enabled: true,
            delay: Duration::ZERO,
        };
        let p = Progress::start(config, "x", Unit::Bytes, None);
        p.inc(1);
        std::thread::sleep(Duration::from_millis(30));
        drop(p);
    }
}
