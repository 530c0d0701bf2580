//! `corral lab latency-critical`: paper 002's situation on this machine.
//!
//! A thread that wakes every 10 ms for 1 ms of CPU sits in a 52-share group
//! (Android's old `background`); four nice-0 CPU hogs sit in a 1024-share
//! sibling group. Baseline: the wake-up latency of the periodic thread as
//! the kernel schedules it. Then the same workload with corral's daemon
//! running, scoped to the experiment's cgroup: it should spot the periodic
//! thread as latency-critical by its behaviour and move it out of the
//! low-share group into its protected group (paper 002's fix).

use crate::daemon_thread::DaemonThread;
use crate::error::{Error, Result};
use crate::groups::{lab_config, parse_output, LabGroups};
use crate::work::{percentile, PeriodicResult};
use corral_core::config::Config;
use corral_linux::placer::Layout;
use corral_linux::HostPaths;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Options of the experiment.
#[derive(Debug, Clone)]
pub struct Options {
    pub period_ms: f64,
    pub run_ms: f64,
    pub periods: usize,
    pub hogs: u32,
    pub low_shares: u64,
    pub high_shares: u64,
    /// The daemon's configuration (interval and all).
    pub config: Config,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            period_ms: 10.0,
            run_ms: 1.0,
            periods: 400,
            hogs: 4,
            low_shares: 52,
            high_shares: 1024,
            config: lab_config(),
        }
    }
}

/// One variant's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    pub name: String,
    pub periods: usize,
    /// Periods missed (the work of one ran past the next).
    pub missed: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// CPU the periodic thread got over wall time.
    pub cpu_share: f64,
    /// corral's class and group for the thread at the end (corral variant).
    pub class: Option<String>,
    pub group: Option<String>,
}

/// The experiment's report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub period_ms: f64,
    pub run_ms: f64,
    pub hogs: u32,
    pub low_shares: u64,
    pub high_shares: u64,
    pub interval_ms: u64,
    pub variants: Vec<Variant>,
    /// Baseline p99 over corral's p99.
    pub p99_improvement: f64,
}

fn variant(name: &str, r: &PeriodicResult) -> Variant {
    let mut lat = r.latency_ns.clone();
    lat.sort_unstable();
    let us = |ns: u64| ns as f64 / 1000.0;
    Variant {
        name: name.into(),
        periods: r.periods,
        missed: r.missed,
        p50_us: us(percentile(&lat, 50.0)),
        p90_us: us(percentile(&lat, 90.0)),
        p99_us: us(percentile(&lat, 99.0)),
        max_us: us(lat.last().copied().unwrap_or(0)),
        cpu_share: if r.wall_ns == 0 {
            0.0
        } else {
            r.cpu_ns as f64 / r.wall_ns as f64
        },
        class: None,
        group: None,
    }
}

fn periodic_cmd(exe: &Path, o: &Options, warmup: Duration) -> Command {
    let mut c = Command::new(exe);
    c.args(["lab", "work", "periodic"])
        .args(["--period-ms", &o.period_ms.to_string()])
        .args(["--run-ms", &o.run_ms.to_string()])
        .args(["--warmup-ms", &warmup.as_millis().to_string()])
        .args(["--periods", &o.periods.to_string()]);
    c
}

/// Runs the baseline, then the corral variant, in one invocation.
pub fn run(
    exe: &Path,
    paths: &HostPaths,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let mut groups = LabGroups::for_experiment(layout)?;
    let low = groups.group("low", o.low_shares)?;
    let high = groups.group("high", o.high_shares)?;
    groups.spawn_hogs(exe, &high, o.hogs)?;
    std::thread::sleep(Duration::from_millis(500));

    progress(&format!(
        "baseline: {} periods of {} ms / {} ms in a {}-share group beside {} hogs in a {}-share group",
        o.periods, o.period_ms, o.run_ms, o.low_shares, o.hogs, o.high_shares
    ));
    let pid = groups.spawn(&low, periodic_cmd(exe, o, Duration::from_millis(500)))?;
    let base: PeriodicResult = parse_output(&groups.wait_output(pid)?)?;
    let baseline = variant("baseline", &base);

    // The daemon needs two samples for rates and `intervals` more to call
    // the thread latency-critical; give it twice that before measuring.
    let interval = Duration::from_millis(o.config.daemon.interval_ms);
    let warmup = interval * (2 * (o.config.classify.latency_critical.intervals + 2)).max(8);
    progress(&format!(
        "corral: daemon every {} ms, measuring after {:.1} s",
        interval.as_millis(),
        warmup.as_secs_f64()
    ));
    let daemon = DaemonThread::start(
        paths.clone(),
        layout.clone(),
        vec![groups.root().to_path_buf()],
        LabGroups::daemon_group_name(),
        o.config.clone(),
        None,
    )?;
    let pid = groups.spawn(&low, periodic_cmd(exe, o, warmup))?;
    // Ask the daemon about the thread while it still runs.
    std::thread::sleep(warmup + Duration::from_millis(200));
    let seen = daemon.explain(pid);
    let out = groups.wait_output(pid);
    let stopped = daemon.stop();
    let with: PeriodicResult = parse_output(&out?)?;
    stopped?;
    let mut corral = variant("corral", &with);
    corral.class = seen
        .as_ref()
        .and_then(|e| e.class)
        .map(|c| c.as_str().to_string());
    corral.group = seen.and_then(|e| e.group);
    groups.cleanup();
    Ok(Report {
        period_ms: o.period_ms,
        run_ms: o.run_ms,
        hogs: o.hogs,
        low_shares: o.low_shares,
        high_shares: o.high_shares,
        interval_ms: o.config.daemon.interval_ms,
        p99_improvement: baseline.p99_us / corral.p99_us.max(1e-3),
        variants: vec![baseline, corral],
    })
}

/// The path of the running corral binary, to start workloads with.
pub fn self_exe() -> Result<PathBuf> {
    std::env::current_exe()
        .map_err(|e| Error::Environment(format!("cannot find the corral binary: {e}")))
}
