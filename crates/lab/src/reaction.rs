//! `corral lab reaction`: how fast the daemon reacts to threads that start
//! and end, watched from outside through its socket as any client would
//! (`explain` and `status`, every 5 ms).
//!
//! The daemon is `corral run --scope-pid <this process>`, a process of its
//! own (see [`crate::daemon_process`]), with its default configuration.
//! Each run measures, on the monotonic clock:
//!
//! - latency: beside three CPU hogs it already knows, a thread that wakes
//!   every 10 ms for 1 ms starts; the time from its start until `explain`
//!   shows it latency-critical and in the `latency` group;
//! - heavy: beside one light sleeper, a hog starts; the time until it is
//!   in a `dedicated-cpuN` group;
//! - release: that hog is killed (SIGKILL); the time until `status` shows
//!   no dedicated group any more (the plan no longer holds its CPU).

use crate::daemon_process::DaemonProcess;
use crate::error::{Error, Result};
use crate::groups::LabGroups;
use corral_core::classify::Class;
use corral_core::plan::{GroupKind, LATENCY};
use corral_daemon::api::Status;
use corral_linux::placer::Layout;
use serde::Serialize;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the daemon is asked.
pub const POLL: Duration = Duration::from_millis(5);
/// How long a reaction may take before it counts as not happening.
pub const LIMIT: Duration = Duration::from_secs(5);
/// CPU hogs beside the new periodic thread.
pub const HOGS: u32 = 3;
/// Goals for the medians, ms.
pub const GOAL_LATENCY_MS: f64 = 200.0;
pub const GOAL_HEAVY_MS: f64 = 300.0;
pub const GOAL_RELEASE_MS: f64 = 50.0;

#[derive(Debug, Clone)]
pub struct Options {
    pub runs: u32,
    /// The daemon's configuration file (default: its built-in one).
    pub config: Option<std::path::PathBuf>,
    /// Set (by a signal handler) to stop early and clean up.
    pub stop: Arc<AtomicBool>,
}

/// One run's reaction times, ms (`None`: not within [`LIMIT`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Run {
    pub run: u32,
    /// Periodic thread started → latency-critical and in the latency group.
    pub latency_ms: Option<f64>,
    /// … → first answered by `explain` (the daemon knows it).
    pub latency_seen_ms: Option<f64>,
    /// … → latency-critical (placed or not).
    pub latency_classified_ms: Option<f64>,
    /// Hog started → in a dedicated group.
    pub heavy_ms: Option<f64>,
    /// The dedicated group it got.
    pub heavy_group: Option<String>,
    /// Dedicated hog killed → no dedicated group in `status`.
    pub release_ms: Option<f64>,
    /// What went differently from the plan of the run.
    pub notes: Vec<String>,
}

/// A median and its goal.
#[derive(Debug, Clone, Serialize)]
pub struct Goal {
    pub measure: String,
    /// The median over the runs where it happened.
    pub median_ms: Option<f64>,
    /// Runs where it did not happen within the limit.
    pub missing: usize,
    pub goal_ms: f64,
    /// Whether the median is within the goal and it happened in every run.
    pub met: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub poll_ms: f64,
    pub limit_s: f64,
    pub hogs: u32,
    /// The daemon's interval (its default configuration).
    pub interval_ms: Option<u64>,
    pub runs: Vec<Run>,
    pub goals: Vec<Goal>,
}

/// Runs the measurements `o.runs` times, each with a daemon of its own.
pub fn run(
    exe: &Path,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let dir = std::env::temp_dir().join(format!("corral-lab-reaction-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    let mut groups = LabGroups::for_experiment(layout)?;
    let work = groups.group("work", 1024)?;
    let mut report = Report {
        poll_ms: POLL.as_secs_f64() * 1000.0,
        limit_s: LIMIT.as_secs_f64(),
        hogs: HOGS,
        interval_ms: None,
        runs: Vec::new(),
        goals: Vec::new(),
    };
    let mut result = Ok(());
    for i in 1..=o.runs {
        progress(&format!("run {i} of {}", o.runs));
        match one_run(exe, o, &mut groups, &work, &dir, i, &mut progress) {
            Ok((r, interval)) => {
                report.interval_ms = report.interval_ms.or(interval);
                report.runs.push(r);
            }
            Err(e) => {
                result = Err(e.logs_kept(&dir));
                break;
            }
        }
    }
    groups.cleanup();
    result?;
    let _ = std::fs::remove_dir_all(&dir);
    report.goals = goals(&report.runs);
    Ok(report)
}

/// Polls every [`POLL`] until `done` gives a value or [`LIMIT`] passes;
/// the value and the time since `t0`, ms.
fn wait_for<T>(
    t0: Instant,
    stop: &AtomicBool,
    mut done: impl FnMut() -> Option<T>,
) -> Result<Option<(T, f64)>> {
    loop {
        if let Some(v) = done() {
            return Ok(Some((v, t0.elapsed().as_secs_f64() * 1000.0)));
        }
        if stop.load(Ordering::SeqCst) {
            return Err(Error::Interrupted);
        }
        if t0.elapsed() > LIMIT {
            return Ok(None);
        }
        std::thread::sleep(POLL);
    }
}

fn managed(s: &Status, pid: u32) -> bool {
    s.threads.iter().any(|t| t.tid == pid)
}

/// The dedicated group thread `tid` is in, if it is in one.
fn dedicated_group(s: &Status, tid: u32) -> Option<String> {
    let group = s.threads.iter().find(|t| t.tid == tid)?.group.as_ref()?;
    s.groups
        .iter()
        .any(|g| &g.name == group && g.kind == GroupKind::Dedicated)
        .then(|| group.clone())
}

fn spawn(groups: &mut LabGroups, group: &Path, exe: &Path, args: &[&str]) -> Result<u32> {
    let mut c = Command::new(exe);
    c.args(["lab", "work"]).args(args);
    groups.spawn(group, c)
}

/// Kills processes started here and waits (up to [`LIMIT`]) until the
/// daemon has forgotten them, so the next measurement starts quiet.
fn end(
    groups: &mut LabGroups,
    daemon: &DaemonProcess,
    pids: &[u32],
    stop: &AtomicBool,
) -> Result<()> {
    for &p in pids {
        groups.kill(p);
    }
    wait_for(Instant::now(), stop, || {
        let s = daemon.status().ok()?;
        (!pids.iter().any(|&p| managed(&s, p))).then_some(())
    })?;
    Ok(())
}

/// Latency: a periodic thread starts beside hogs the daemon already
/// knows; when it is seen, called latency-critical, and in the latency
/// group.
fn latency(
    exe: &Path,
    o: &Options,
    groups: &mut LabGroups,
    work: &Path,
    daemon: &DaemonProcess,
    r: &mut Run,
    progress: &mut impl FnMut(&str),
) -> Result<()> {
    let me = std::process::id();
    let hogs = (0..HOGS)
        .map(|_| spawn(groups, work, exe, &["hog"]))
        .collect::<Result<Vec<u32>>>()?;
    let known = wait_for(Instant::now(), &o.stop, || {
        let s = daemon.status().ok()?;
        hogs.iter()
            .all(|&h| s.threads.iter().any(|t| t.tid == h && t.class.is_some()))
            .then_some(())
    })?;
    if known.is_none() {
        let none = daemon.status().is_ok_and(|s| s.threads.is_empty());
        r.notes.push(if none {
            format!(
                "the daemon managed no thread at all after {} s (is this process, {me}, in its scope?)",
                LIMIT.as_secs()
            )
        } else {
            format!(
                "the daemon had not classified the {HOGS} hogs after {} s",
                LIMIT.as_secs()
            )
        });
    }
    progress(&format!(
        "latency: a 10 ms / 1 ms periodic thread starts beside {HOGS} hogs"
    ));
    let t0 = Instant::now();
    let periodic = spawn(
        groups,
        work,
        exe,
        &[
            "periodic",
            "--period-ms",
            "10",
            "--run-ms",
            "1",
            "--periods",
            "100000000",
        ],
    )?;
    let got = wait_for(t0, &o.stop, || {
        let e = daemon.explain(periodic).ok();
        if let Some(e) = &e {
            r.latency_seen_ms
                .get_or_insert(t0.elapsed().as_secs_f64() * 1000.0);
            if e.class == Some(Class::LatencyCritical) {
                r.latency_classified_ms
                    .get_or_insert(t0.elapsed().as_secs_f64() * 1000.0);
            }
        }
        let e = e?;
        (e.class == Some(Class::LatencyCritical) && e.group.as_deref() == Some(LATENCY))
            .then_some(())
    })?;
    r.latency_ms = got.map(|g| g.1);
    let mut pids = hogs;
    pids.push(periodic);
    end(groups, daemon, &pids, &o.stop)?;
    Ok(())
}

/// Heavy: a hog starts beside a light sleeper; when it has a dedicated
/// group; then release: the hog killed, when the dedication is gone.
fn heavy(
    exe: &Path,
    o: &Options,
    groups: &mut LabGroups,
    work: &Path,
    daemon: &DaemonProcess,
    r: &mut Run,
    progress: &mut impl FnMut(&str),
) -> Result<()> {
    let sleeper = spawn(groups, work, exe, &["sleepers", "--threads", "0"])?;
    wait_for(Instant::now(), &o.stop, || {
        managed(&daemon.status().ok()?, sleeper).then_some(())
    })?;
    progress("heavy: a hog starts beside a light sleeper");
    let t0 = Instant::now();
    let hog = spawn(groups, work, exe, &["hog"])?;
    let got = wait_for(t0, &o.stop, || dedicated_group(&daemon.status().ok()?, hog))?;
    r.heavy_ms = got.as_ref().map(|g| g.1);
    r.heavy_group = got.map(|g| g.0);

    // Release: kill the dedicated hog.
    if r.heavy_group.is_some() {
        progress("release: the dedicated hog is killed");
        let t0 = Instant::now();
        groups.kill(hog);
        let got = wait_for(t0, &o.stop, || {
            let s = daemon.status().ok()?;
            (!managed(&s, hog) && !s.groups.iter().any(|g| g.kind == GroupKind::Dedicated))
                .then_some(())
        })?;
        r.release_ms = got.map(|g| g.1);
    } else {
        r.notes
            .push("the hog got no dedicated group: nothing to release".into());
    }
    end(groups, daemon, &[hog, sleeper], &o.stop)?;
    Ok(())
}

fn one_run(
    exe: &Path,
    o: &Options,
    groups: &mut LabGroups,
    work: &Path,
    dir: &Path,
    run: u32,
    progress: &mut impl FnMut(&str),
) -> Result<(Run, Option<u64>)> {
    let me = std::process::id();
    let socket = std::env::temp_dir().join(format!("corral-lab-reaction-{me}.sock"));
    let daemon = DaemonProcess::start(
        exe,
        me,
        &socket,
        None,
        o.config.as_deref(),
        &dir.join(format!("run{run}-daemon.log")),
        &o.stop,
    )?;
    let interval = daemon.status().ok().map(|s| s.interval_ms);
    let mut r = Run {
        run,
        ..Default::default()
    };

    latency(exe, o, groups, work, &daemon, &mut r, progress)?;
    heavy(exe, o, groups, work, &daemon, &mut r, progress)?;
    daemon.stop()?;
    let ms = |v: Option<f64>| v.map_or("not within the limit".into(), |v| format!("{v:.0} ms"));
    progress(&format!(
        "run {run}: latency {}, heavy {}, release {}",
        ms(r.latency_ms),
        ms(r.heavy_ms),
        ms(r.release_ms)
    ));
    Ok((r, interval))
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => None,
        n if n % 2 == 1 => Some(xs[n / 2]),
        n => Some((xs[n / 2 - 1] + xs[n / 2]) / 2.0),
    }
}

/// The medians and goals.
pub fn goals(runs: &[Run]) -> Vec<Goal> {
    let goal = |measure: &str, f: fn(&Run) -> Option<f64>, goal_ms: f64| {
        let got: Vec<f64> = runs.iter().filter_map(f).collect();
        let missing = runs.len() - got.len();
        let median_ms = median(got);
        Goal {
            measure: measure.into(),
            median_ms,
            missing,
            goal_ms,
            met: missing == 0 && median_ms.is_some_and(|m| m <= goal_ms),
        }
    };
    vec![
        goal(
            "latency-critical and in the latency group",
            |r| r.latency_ms,
            GOAL_LATENCY_MS,
        ),
        goal("hog in a dedicated group", |r| r.heavy_ms, GOAL_HEAVY_MS),
        goal(
            "dedicated group gone after the kill",
            |r| r.release_ms,
            GOAL_RELEASE_MS,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(latency: Option<f64>, heavy: Option<f64>, release: Option<f64>) -> Run {
        Run {
            latency_ms: latency,
            heavy_ms: heavy,
            release_ms: release,
            ..Default::default()
        }
    }

    #[test]
    fn a_dedicated_group_is_told_by_its_kind() {
        // docs/api.md's example, with a second thread in the latency group.
        let s: Status = serde_json::from_str(
            r#"{
  "backend": "cgroup v1 (/sys/fs/cgroup/cpu, /sys/fs/cgroup/cpuset)",
  "interval_ms": 1000, "step": 42, "online": "0-1", "heterogeneous": false,
  "groups": [
    {"name": "dedicated-cpu1", "kind": "dedicated", "cpus": "1", "shares": 1024, "members": 1},
    {"name": "latency", "kind": "latency", "cpus": "0", "shares": 10240, "members": 1}
  ],
  "counts": {"heavy": 1, "latency-critical": 1, "light": 3, "unmanaged": 0},
  "threads": [
    {"tid": 812, "pid": 812, "comm": "bench", "class": "heavy", "group": "dedicated-cpu1", "util": 0.99, "peak": 1.0},
    {"tid": 815, "pid": 815, "comm": "audio", "class": "latency-critical", "group": "latency", "util": 0.1, "peak": 0.11},
    {"tid": 816, "pid": 816, "comm": "idle", "class": "light", "group": null, "util": 0.0, "peak": 0.0}
  ],
  "notes": [], "errors": [], "last_step_us": 480
}"#,
        )
        .unwrap();
        assert_eq!(dedicated_group(&s, 812).as_deref(), Some("dedicated-cpu1"));
        assert_eq!(dedicated_group(&s, 815), None);
        assert_eq!(dedicated_group(&s, 816), None);
        assert_eq!(dedicated_group(&s, 999), None);
        assert!(managed(&s, 816) && !managed(&s, 999));
    }

    #[test]
    fn goals_take_medians_and_need_every_run() {
        let runs = vec![
            run(Some(150.0), Some(200.0), Some(30.0)),
            run(Some(260.0), Some(250.0), None),
            run(Some(170.0), Some(400.0), Some(40.0)),
        ];
        let g = goals(&runs);
        assert_eq!(g[0].median_ms, Some(170.0));
        assert!(g[0].met);
        assert_eq!((g[1].median_ms, g[1].met), (Some(250.0), true));
        assert_eq!((g[2].median_ms, g[2].missing), (Some(35.0), 1));
        assert!(!g[2].met, "a run where it never happened fails the goal");
        let none = goals(&[run(None, None, None)]);
        assert!(none.iter().all(|g| g.median_ms.is_none() && !g.met));
    }
}
