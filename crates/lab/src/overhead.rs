//! `corral lab overhead`: what the daemon itself costs. A process with
//! many sleeping threads plus CPU hogs, all in the experiment's cgroup,
//! managed by `corral run` (a separate process, exactly as deployed) for a
//! while; its CPU time and memory are read from its own procfs files.

use crate::error::{Error, Result};
use crate::groups::LabGroups;
use corral_linux::placer::Layout;
use serde::Serialize;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Options {
    pub threads: u32,
    pub hogs: u32,
    pub seconds: u64,
    pub interval_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub threads: u32,
    pub hogs: u32,
    pub seconds: f64,
    pub interval_ms: u64,
    /// The daemon's CPU time over the measurement, as a share of one CPU.
    pub daemon_cpu: f64,
    /// Its CPU time per step, µs.
    pub per_step_us: f64,
    /// Resident memory at the end, and its peak, MB.
    pub rss_mb: f64,
    pub peak_rss_mb: f64,
    /// Threads the daemon saw in its scope (from its status).
    pub threads_sampled: Option<u64>,
}

/// CPU time of every thread of a process, ns, from each thread's
/// schedstat (nanoseconds, unlike the clock ticks of /proc/PID/stat).
fn cpu_ns(pid: u32) -> Option<u64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    Some(
        dir.flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
            .filter_map(|t| {
                corral_linux::sampler::parse_schedstat(t.as_bytes()).map(|(run, _, _)| run)
            })
            .sum(),
    )
}

fn status_kb(pid: u32, key: &str) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

pub fn run(
    exe: &Path,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let mut groups = LabGroups::for_experiment(layout)?;
    let g = groups.group("work", 1024)?;
    let mut c = Command::new(exe);
    c.args([
        "lab",
        "work",
        "sleepers",
        "--threads",
        &o.threads.to_string(),
    ]);
    groups.spawn(&g, c)?;
    groups.spawn_hogs(exe, &g, o.hogs)?;
    std::thread::sleep(Duration::from_millis(500));
    let sock = std::env::temp_dir().join(format!("corral-lab-{}.sock", std::process::id()));
    let mut daemon = Command::new(exe)
        .args([
            "run",
            "--interval",
            &o.interval_ms.to_string(),
            "--scope-cgroup",
            &groups.cgroup_path("work"),
        ])
        .args(["--group-name", &LabGroups::daemon_group_name(), "--socket"])
        .arg(&sock)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(Error::spawn("the daemon"))?;
    let pid = daemon.id();
    // Start measuring after the first steps (start-up, first placement).
    std::thread::sleep(Duration::from_millis(3 * o.interval_ms + 500));
    progress(&format!(
        "measuring the daemon (PID {pid}) for {} s",
        o.seconds
    ));
    let (t0, c0) = (Instant::now(), cpu_ns(pid));
    std::thread::sleep(Duration::from_secs(o.seconds));
    let (wall, c1) = (t0.elapsed().as_secs_f64(), cpu_ns(pid));
    let rss = status_kb(pid, "VmRSS:");
    let peak = status_kb(pid, "VmHWM:");
    let sampled = corral_daemon::server::request(&sock, corral_daemon::api::Command::Status)
        .ok()
        .and_then(|r| r.result)
        .and_then(|v| {
            let counts = v.get("counts")?.as_object()?.clone();
            Some(counts.values().filter_map(|c| c.as_u64()).sum())
        });
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_child(&daemon),
        rustix::process::Signal::TERM,
    );
    let _ = daemon.wait();
    groups.cleanup();
    let cpu_s = match (c0, c1) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
        _ => {
            return Err(Error::Measurement(
                "could not read the daemon's CPU time".into(),
            ))
        }
    };
    let steps = wall * 1000.0 / o.interval_ms as f64;
    Ok(Report {
        threads: o.threads,
        hogs: o.hogs,
        seconds: wall,
        interval_ms: o.interval_ms,
        daemon_cpu: cpu_s / wall,
        per_step_us: cpu_s * 1e6 / steps,
        rss_mb: rss.unwrap_or(f64::NAN) / 1024.0,
        peak_rss_mb: peak.unwrap_or(f64::NAN) / 1024.0,
        threads_sampled: sampled,
    })
}
