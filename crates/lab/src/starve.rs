//! `corral lab starve`: the starvation guard's experiment (issue 14).
//!
//! A plan that starves someone: the background group at 2 shares (an
//! administrator who wants background work to get "nothing", the way
//! Android's `bg_non_interactive` group did until it was removed for
//! starving threads for seconds). Beside it two CPU hogs that a rule
//! makes latency-critical (a rule written for a media thread that turned
//! CPU-bound; the latency group weighs 10240) keep both CPUs busy; a light
//! thread (40 ms every 200 ms) lands in the shared group and, without the
//! guard, gets almost nothing although it waits all the time.
//!
//! Two variants, the guard off and on, each `corral run --scope-pid <this
//! process>` with that configuration. Every workload thread's CPU time,
//! run-queue wait and state are read every 10 ms; a second in which a
//! thread waited at least half the time yet ran less than the floor (5 %
//! of a CPU) is a violation. Its wait in a second is the larger of
//! schedstat's run-queue delay and the time it was seen runnable (R) at
//! both ends of a 10 ms look with no CPU time between: the kernel adds a
//! wait to schedstat only when the waiting task gets a CPU, so a thread
//! that gets none shows no wait there at all. The first seconds, while
//! the daemon places the threads and the guard sees one interval, are
//! counted apart.

use crate::daemon_process::DaemonProcess;
use crate::error::{Error, Result};
use crate::groups::LabGroups;
use corral_linux::placer::Layout;
use serde::Serialize;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub struct Options<'a> {
    /// Seconds per variant.
    pub seconds: u32,
    /// Seconds at the start of each variant not held to the floor.
    pub settle_s: u32,
    pub stop: &'a AtomicBool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ThreadWindows {
    pub name: String,
    pub pid: u32,
    /// Its class and corral group at the end (from `status`).
    pub class: Option<String>,
    pub group: Option<String>,
    /// CPU share per second (1.0 = a CPU).
    pub run: Vec<f64>,
    /// Run-queue wait per second.
    pub wait: Vec<f64>,
    /// Seconds after the settling time below the floor while waiting.
    pub violations: u32,
    /// Lowest CPU share in a second it waited at least half of, after
    /// settling (`None`: it never waited that much).
    pub min_run_waiting: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Variant {
    pub guard: bool,
    pub threads: Vec<ThreadWindows>,
    pub violations: u32,
    /// The guard's own log lines.
    pub guard_log: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub floor: f64,
    pub seconds: u32,
    pub settle_s: u32,
    pub variants: Vec<Variant>,
}

fn schedstat(pid: u32) -> Option<(u64, u64)> {
    let t = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    corral_linux::sampler::parse_schedstat(t.as_bytes()).map(|(run, wait, _)| (run, wait))
}

/// Whether the thread is runnable or running (state R).
fn runnable(pid: u32) -> Option<bool> {
    let t = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    corral_linux::sampler::parse_stat(&t).map(|s| s.state == 'R')
}

/// How often the threads are looked at.
const LOOK: Duration = Duration::from_millis(10);

pub fn run(
    exe: &Path,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let floor = corral_core::config::Config::default().guard.floor;
    let min_wait = corral_core::config::Config::default().guard.min_wait;
    let mut report = Report {
        floor,
        seconds: o.seconds,
        settle_s: o.settle_s,
        ..Default::default()
    };
    let me = std::process::id();
    let dir = crate::groups::scratch_dir("starve")?;
    for guard in [false, true] {
        if o.stop.load(Ordering::SeqCst) {
            break;
        }
        let config = dir.join(format!("guard-{guard}.toml"));
        std::fs::write(
            &config,
            format!(
                "[daemon]\ninterval_ms = 250\n[plan]\nshared_shares = 2\n[guard]\nenabled = {guard}\nhold_s = {}\n[[rule]]\ncgroup = \"/corral-lab-*/mid\"\nclass = \"latency-critical\"\n",
                o.seconds + 30
            ),
        )
        .map_err(Error::io(&config))?;
        let mut groups = LabGroups::for_experiment(layout)?;
        let work = groups.group("work", 1024)?;
        let mid = groups.group("mid", 1024)?;
        let mut spawn = |group: &Path, args: &[&str]| -> Result<u32> {
            let mut c = Command::new(exe);
            c.args(["lab", "work"]).args(args);
            groups.spawn(group, c)
        };
        let long = "100000000";
        // Two CPU-bound programs a rule makes latency-critical (by their
        // cgroup, as a rule for a media thread would).
        let mut names = Vec::new();
        for i in 1..=2 {
            names.push((format!("ruled-hog{i}"), spawn(&mid, &["hog"])?));
        }
        names.push((
            "light".into(),
            spawn(
                &work,
                &[
                    "periodic",
                    "--period-ms",
                    "200",
                    "--run-ms",
                    "40",
                    "--periods",
                    long,
                ],
            )?,
        ));
        let socket = dir.join("corral.sock");
        let log = dir.join(format!("guard-{guard}-daemon.log"));
        let daemon = DaemonProcess::start(exe, me, &socket, None, Some(&config), &log, o.stop)?;
        progress(&format!(
            "guard {}: two hogs made latency-critical by a rule and a light thread under corral run (PID {}), shared group at 2 shares, for {} s",
            if guard { "on" } else { "off" },
            daemon.pid().unwrap_or_default(),
            o.seconds
        ));
        let mut threads: Vec<ThreadWindows> = names
            .iter()
            .map(|(n, p)| ThreadWindows {
                name: n.clone(),
                pid: *p,
                ..Default::default()
            })
            .collect();
        watch(&mut threads, o, floor, min_wait);
        if let Ok(st) = daemon.status() {
            for t in &mut threads {
                if let Some(s) = st.threads.iter().find(|s| s.tid == t.pid) {
                    t.class = s.class.map(|c| format!("{c:?}"));
                    t.group = s.group.clone();
                }
            }
        }
        let stopped = daemon.stop();
        groups.cleanup();
        stopped?;
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        let variant = Variant {
            guard,
            violations: threads.iter().map(|t| t.violations).sum(),
            threads,
            guard_log: said
                .lines()
                .filter(|l| l.contains("starvation guard"))
                .map(String::from)
                .collect(),
        };
        progress(&format!(
            "guard {}: {} seconds below the floor while waiting; light thread's CPU per second: {:?}",
            if guard { "on" } else { "off" },
            variant.violations,
            variant
                .threads
                .iter()
                .find(|t| t.name == "light")
                .map(|t| t.run.iter().map(|r| (r * 1000.0).round() / 10.0).collect::<Vec<_>>())
                .unwrap_or_default()
        ));
        report.variants.push(variant);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(report)
}

/// Every second for `o.seconds`: each thread's CPU time and run-queue wait
/// (schedstat's, or — as the kernel adds a wait only when the waiting
/// task gets a CPU — the time it was seen runnable without running, looked
/// at every [`LOOK`]), and, after `o.settle_s`, the seconds it waited at
/// least `min_wait` yet ran less than `floor`.
fn watch(threads: &mut [ThreadWindows], o: &Options, floor: f64, min_wait: f64) {
    let mut last: Vec<Option<(u64, u64)>> = threads.iter().map(|t| schedstat(t.pid)).collect();
    // Per thread: (CPU time, runnable) at the last look, and the time
    // this second it was seen runnable without running, ns.
    let mut looked: Vec<Option<(u64, bool)>> = vec![None; threads.len()];
    let mut stalled = vec![0u64; threads.len()];
    let mut at = Instant::now();
    for s in 0..o.seconds {
        let second = at + Duration::from_secs(1);
        let mut look_at = Instant::now();
        while Instant::now() < second && !o.stop.load(Ordering::SeqCst) {
            std::thread::sleep(LOOK.min(second.saturating_duration_since(Instant::now())));
            let now = Instant::now();
            for (i, t) in threads.iter().enumerate() {
                let cur = match (schedstat(t.pid), runnable(t.pid)) {
                    (Some((run, _)), Some(r)) => Some((run, r)),
                    _ => None,
                };
                if let (Some((r0, true)), Some((r1, true))) = (looked[i], cur) {
                    if r0 == r1 {
                        stalled[i] += now.duration_since(look_at).as_nanos() as u64;
                    }
                }
                looked[i] = cur;
            }
            look_at = now;
        }
        if o.stop.load(Ordering::SeqCst) {
            break;
        }
        let now = Instant::now();
        let dt = now.duration_since(at).as_nanos() as f64;
        at = now;
        for (i, t) in threads.iter_mut().enumerate() {
            let cur = schedstat(t.pid);
            let seen = std::mem::take(&mut stalled[i]) as f64 / dt;
            if let (Some((r0, w0)), Some((r1, w1))) = (last[i], cur) {
                let run = r1.saturating_sub(r0) as f64 / dt;
                let wait = (w1.saturating_sub(w0) as f64 / dt).max(seen);
                t.run.push(run);
                t.wait.push(wait);
                if s >= o.settle_s && wait >= min_wait {
                    t.min_run_waiting = Some(t.min_run_waiting.map_or(run, |m| m.min(run)));
                    if run < floor {
                        t.violations += 1;
                    }
                }
            }
            last[i] = cur;
        }
    }
}
