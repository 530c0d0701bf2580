//! `corral lab boost-latency`: how fast a boost takes effect. A client
//! sends boost requests for a sleeping thread to the daemon, one at a time,
//! and times each from the request to the reply, which the daemon sends
//! only after the thread has its new nice value and slice and its group
//! its new weight and CPU; the client then checks the nice value itself,
//! and unboosts
//! (untimed) and waits `gap_ms` before the next request. The first
//! request moves the thread into a group of its own (a cgroup move, which
//! waits for an RCU grace period); every later one changes only that
//! group and the thread's own nice value and slice.

use crate::daemon_thread::DaemonThread;
use crate::error::Result;
use crate::groups::{lab_config, LabGroups};
use crate::work::percentile;
use corral_linux::placer::Layout;
use corral_linux::HostPaths;
use serde::Serialize;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub requests: usize,
    pub gap_ms: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// The first request, which also moves the thread into its own group.
    pub first_us: f64,
    /// Replies after which the thread's nice value was not the boost's.
    pub not_applied: usize,
    pub errors: usize,
}

pub fn run(
    exe: &Path,
    paths: &HostPaths,
    layout: &Layout,
    requests: usize,
    gap_ms: u64,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let mut groups = LabGroups::for_experiment(layout)?;
    let g = groups.group("work", 1024)?;
    let mut c = Command::new(exe);
    c.args(["lab", "work", "sleepers", "--threads", "0"]);
    let pid = groups.spawn(&g, c)?;
    let socket = std::env::temp_dir().join(format!("corral-lab-{}-bench.sock", std::process::id()));
    let mut config = lab_config();
    config.boost.rate_per_s = 1_000_000;
    let nice_boost = config.plan.boost_nice;
    let daemon = DaemonThread::start(
        paths.clone(),
        layout.clone(),
        vec![groups.root().to_path_buf()],
        LabGroups::daemon_group_name(),
        config.clone(),
        Some(&socket),
    )?;
    std::thread::sleep(Duration::from_millis(3 * config.daemon.interval_ms));
    progress(&format!("{requests} boost requests for thread {pid}"));
    let mut times = Vec::with_capacity(requests);
    let (mut not_applied, mut errors) = (0, 0);
    for _ in 0..requests {
        let t0 = Instant::now();
        let r = corral_daemon::server::boost(&socket, pid, Some(5000));
        let dt = t0.elapsed();
        match r {
            Ok(()) => {
                times.push(dt.as_nanos() as u64);
                if corral_linux::sched::sched_getattr(pid)
                    .ok()
                    .map(|a| a.sched_nice)
                    != Some(nice_boost)
                {
                    not_applied += 1;
                }
            }
            Err(_) => errors += 1,
        }
        let _ = corral_daemon::server::request(
            &socket,
            corral_daemon::api::Command::Unboost { tid: pid },
        );
        std::thread::sleep(Duration::from_millis(gap_ms));
    }
    let stopped = daemon.stop();
    groups.cleanup();
    stopped?;
    let first = times.first().copied().unwrap_or(0);
    times.sort_unstable();
    let us = |ns: u64| ns as f64 / 1000.0;
    Ok(Report {
        requests,
        gap_ms,
        p50_us: us(percentile(&times, 50.0)),
        p90_us: us(percentile(&times, 90.0)),
        p99_us: us(percentile(&times, 99.0)),
        max_us: us(times.last().copied().unwrap_or(0)),
        first_us: us(first),
        not_applied,
        errors,
    })
}
