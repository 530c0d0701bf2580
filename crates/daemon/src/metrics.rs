//! What the daemon counts, and its Prometheus text exposition.
//!
//! The counters live in the [`Daemon`](crate::Daemon) and move as it works
//! (steps, changes, boosts, the guard); [`render`] writes them with the
//! state in force (threads per class, groups and their CPUs) in the text
//! format Prometheus scrapes (version 0.0.4: `# HELP`, `# TYPE`, one
//! sample a line). `corral metrics` prints it; `[metrics] listen` serves
//! it over HTTP ([`crate::http`]).

use crate::api::{GroupStatus, Status};
use corral_core::plan::GroupKind;
use std::fmt::Write;

/// Upper bounds (seconds) of the step and sampler duration buckets: a
/// step takes ~0.3-3 ms here with a few hundred threads.
const STEP_BUCKETS: [f64; 10] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0,
];
/// Upper bounds (seconds) of the boost duration buckets: an input event
/// is handled in a few ms, a boost is capped at `boost.max_ms_limit`.
const BOOST_BUCKETS: [f64; 9] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];

/// A cumulative histogram over fixed buckets, as Prometheus keeps one.
#[derive(Debug, Clone, Default)]
pub struct Histogram {
    /// Observations ≤ each bound (not cumulative here; summed on output).
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, bounds: &[f64], seconds: f64) {
        if self.counts.len() != bounds.len() {
            self.counts = vec![0; bounds.len()];
        }
        if let Some(i) = bounds.iter().position(|&b| seconds <= b) {
            self.counts[i] += 1;
        }
        self.sum += seconds;
        self.count += 1;
    }

    fn write(&self, out: &mut String, name: &str, help: &str, bounds: &[f64]) {
        header(out, name, help, "histogram");
        let mut cumulative = 0;
        for (i, b) in bounds.iter().enumerate() {
            cumulative += self.counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum {}", self.sum);
        let _ = writeln!(out, "{name}_count {}", self.count);
    }
}

/// The daemon's counters since it started.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub steps: u64,
    pub quick_steps: u64,
    pub step_seconds: Histogram,
    pub sample_seconds: Histogram,
    /// Changes applied, by kind: set_group, move, release, remove_group.
    pub changes: [u64; 4],
    /// Changes that failed (a thread that exited is not a failure).
    pub errors: u64,
    pub hotplug: u64,
    pub guard_actions: u64,
    pub boosts_requested: u64,
    pub boosts_granted: u64,
    pub boosts_refused: u64,
    /// How long each boost lasted, from its start to its end.
    pub boost_seconds: Histogram,
    /// The loop's own CPU time (its thread's `CLOCK_THREAD_CPUTIME_ID`)
    /// in full steps and in quick steps (each with what the caller does
    /// after it), ns, and the quick steps that ran
    /// (re-planned or not: each looked at the new threads and exits).
    /// The live loop counts them ([`crate::server::run`]).
    pub step_cpu_ns: u64,
    pub quick_cpu_ns: u64,
    pub quick_looks: u64,
}

pub const CHANGE_KINDS: [&str; 4] = ["set_group", "move", "release", "remove_group"];

impl Counters {
    pub fn observe_step(&mut self, seconds: f64) {
        self.steps += 1;
        self.step_seconds.observe(&STEP_BUCKETS, seconds);
    }

    pub fn observe_sample(&mut self, seconds: f64) {
        self.sample_seconds.observe(&STEP_BUCKETS, seconds);
    }

    pub fn observe_boost(&mut self, seconds: f64) {
        self.boost_seconds.observe(&BOOST_BUCKETS, seconds);
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn single(out: &mut String, name: &str, help: &str, kind: &str, value: impl std::fmt::Display) {
    header(out, name, help, kind);
    let _ = writeln!(out, "{name} {value}");
}

/// A label value with `\`, `"` and newlines escaped, as the text format
/// requires.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The classes a thread is counted under in `corral_threads`; every one is
/// written, zero or not, so a dashboard's series do not come and go.
const CLASSES: [&str; 6] = [
    "heavy",
    "medium",
    "latency-critical",
    "light",
    "unmanaged",
    "new",
];

/// One figure of a group.
type GroupValue = fn(&GroupStatus) -> u64;

/// The exposition: `counters` and the state in `status`.
pub fn render(counters: &Counters, status: &Status) -> String {
    let mut out = String::new();
    render_state(&mut out, status);
    render_counters(&mut out, counters, status);
    out
}

/// The state in force: the daemon, its CPUs, threads by class, groups.
fn render_state(out: &mut String, status: &Status) {
    header(
        out,
        "corral_info",
        "The daemon's version and backend (value always 1).",
        "gauge",
    );
    let _ = writeln!(
        out,
        "corral_info{{version=\"{}\",backend=\"{}\",config=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        label(&status.backend),
        label(status.config.as_deref().unwrap_or("built-in defaults")),
    );
    single(
        out,
        "corral_online_cpus",
        "CPUs online.",
        "gauge",
        status.online.len(),
    );
    header(
        out,
        "corral_threads",
        "Threads in scope by class (unmanaged: left alone; new: not yet classified).",
        "gauge",
    );
    for class in CLASSES {
        let n = status.counts.get(class).copied().unwrap_or(0);
        let _ = writeln!(out, "corral_threads{{class=\"{class}\"}} {n}");
    }
    // Boost groups (one per boosted thread) are counted, not listed: a
    // series per TID would grow without end.
    let (boost, groups): (Vec<_>, Vec<_>) = status
        .groups
        .iter()
        .partition(|g| g.kind == GroupKind::Boost);
    header(
        out,
        "corral_group_info",
        "Each of corral's groups (but boost groups): its kind and CPU list (value always 1).",
        "gauge",
    );
    for g in &groups {
        let _ = writeln!(
            out,
            "corral_group_info{{group=\"{}\",kind=\"{}\",cpus=\"{}\"}} 1",
            label(&g.name),
            g.kind.as_str(),
            g.cpus
        );
    }
    let per_group: [(&str, &str, GroupValue); 3] = [
        (
            "corral_group_cpus",
            "CPUs in each of corral's groups.",
            |g| g.cpus.len() as u64,
        ),
        (
            "corral_group_threads",
            "Threads placed in each of corral's groups.",
            |g| g.members as u64,
        ),
        (
            "corral_group_shares",
            "Weight of each group, in cpu.shares units (cgroup v2 weight = shares * 100 / 1024).",
            |g| g.shares,
        ),
    ];
    for (name, help, value) in per_group {
        header(out, name, help, "gauge");
        for g in &groups {
            let _ = writeln!(out, "{name}{{group=\"{}\"}} {}", label(&g.name), value(g));
        }
    }
    single(
        out,
        "corral_boost_groups",
        "Boost groups: a boosted thread's own group, raised or at rest.",
        "gauge",
        boost.len(),
    );
}

/// What the daemon did since it started: steps, changes, errors, hot-plug,
/// guard actions, boosts.
fn render_counters(out: &mut String, c: &Counters, status: &Status) {
    single(
        out,
        "corral_steps_total",
        "Full steps (sample, classify, plan, apply) taken.",
        "counter",
        c.steps,
    );
    single(
        out,
        "corral_quick_steps_total",
        "Quick steps between full ones that re-planned (a new thread placed, an exit, a spawner).",
        "counter",
        c.quick_steps,
    );
    header(
        out,
        "corral_step_cpu_seconds_total",
        "The control loop's own CPU time in full steps and in quick steps.",
        "counter",
    );
    for (kind, ns) in [("full", c.step_cpu_ns), ("quick", c.quick_cpu_ns)] {
        let _ = writeln!(
            out,
            "corral_step_cpu_seconds_total{{kind=\"{kind}\"}} {}",
            ns as f64 / 1e9
        );
    }
    single(
        out,
        "corral_quick_looks_total",
        "Quick steps run, whether or not they re-planned.",
        "counter",
        c.quick_looks,
    );
    c.step_seconds.write(
        out,
        "corral_step_duration_seconds",
        "Time a full step took.",
        &STEP_BUCKETS,
    );
    c.sample_seconds.write(
        out,
        "corral_sample_duration_seconds",
        "Time reading the threads in scope took (the sampler's cost), per full step.",
        &STEP_BUCKETS,
    );
    header(
        out,
        "corral_changes_total",
        "Changes applied: groups set, threads moved, threads released, groups removed.",
        "counter",
    );
    for (kind, n) in CHANGE_KINDS.iter().zip(c.changes) {
        let _ = writeln!(out, "corral_changes_total{{kind=\"{kind}\"}} {n}");
    }
    single(
        out,
        "corral_errors_total",
        "Changes that failed (a thread that exited meanwhile is not counted).",
        "counter",
        c.errors,
    );
    single(
        out,
        "corral_hotplug_total",
        "Times the set of online CPUs changed.",
        "counter",
        c.hotplug,
    );
    single(
        out,
        "corral_guard_actions_total",
        "Threads the starvation guard took out of corral's groups.",
        "counter",
        c.guard_actions,
    );
    single(
        out,
        "corral_boosts_requested_total",
        "Boost requests received.",
        "counter",
        c.boosts_requested,
    );
    single(
        out,
        "corral_boosts_granted_total",
        "Boost requests granted (new or extended).",
        "counter",
        c.boosts_granted,
    );
    single(
        out,
        "corral_boosts_refused_total",
        "Boost requests refused (rate limit, permission, unknown or unmanaged thread).",
        "counter",
        c.boosts_refused,
    );
    single(
        out,
        "corral_boosts_active",
        "Boosts in force now.",
        "gauge",
        status.boosted.len(),
    );
    c.boost_seconds.write(
        out,
        "corral_boost_duration_seconds",
        "How long each boost lasted, from the request to its end.",
        &BOOST_BUCKETS,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_count_everything() {
        let mut h = Histogram::default();
        for s in [0.0001, 0.003, 0.003, 2.0] {
            h.observe(&STEP_BUCKETS, s);
        }
        let mut out = String::new();
        h.write(&mut out, "x_seconds", "x.", &STEP_BUCKETS);
        assert!(out.contains("x_seconds_bucket{le=\"0.0005\"} 1\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"0.002\"} 1\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"0.005\"} 3\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"1\"} 3\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"+Inf\"} 4\n"), "{out}");
        assert!(out.contains("x_seconds_count 4\n"), "{out}");
    }

    #[test]
    fn boost_groups_are_counted_not_listed() {
        let group = |name: &str, kind: &str, cpus: &str| serde_json::json!({"name": name, "kind": kind, "cpus": cpus, "shares": 1024, "members": 1});
        let status: Status = serde_json::from_value(serde_json::json!({
            "backend": "b\"x", "interval_ms": 1000, "step": 3, "online": "0-1",
            "heterogeneous": false,
            "groups": [group("shared", "shared", "0-1"), group("boost-7", "boost", "1")],
            "counts": {"light": 2}, "threads": [], "notes": [], "errors": [],
            "last_step_us": 5
        }))
        .unwrap();
        let text = render(&Counters::default(), &status);
        assert!(
            text.contains("corral_group_info{group=\"shared\",kind=\"shared\",cpus=\"0-1\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("corral_group_cpus{group=\"shared\"} 2\n"),
            "{text}"
        );
        assert!(!text.contains("boost-7"), "{text}");
        assert!(text.contains("corral_boost_groups 1\n"), "{text}");
        assert!(text.contains("backend=\"b\\\"x\""), "{text}");
        assert!(
            text.contains("corral_threads{class=\"light\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("corral_threads{class=\"heavy\"} 0\n"),
            "{text}"
        );
    }

    #[test]
    fn labels_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
