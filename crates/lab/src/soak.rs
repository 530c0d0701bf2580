//! `corral lab soak`: issue 14's churn soak. `stress-ng --fork 1 --pthread
//! 1`, and with `--clone-max N` a clone storm (`stress-ng --clone 1
//! --clone-max N`, N live clones at most) in rounds of [`CLONE_ROUND`],
//! run for minutes
//! under `corral run --scope-pid <this process>` (its configured interval
//! unless `--interval`); every 10 s the daemon's resident memory, open
//! file descriptors and CPU time are read from /proc. At the end SIGTERM
//! must leave no group, no record and no task in corral's groups. Errors
//! in the daemon's log are counted.

use crate::daemon_process::DaemonProcess;
use crate::error::{Error, Result};
use crate::groups::LabGroups;
use corral_linux::placer::Layout;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the daemon is looked at.
pub const EVERY: Duration = Duration::from_secs(10);
/// The daemon's budget, share of one CPU (issue 14).
pub const GOAL_CPU: f64 = 0.05;
/// The clone storm runs in rounds this long, each a new stress-ng: its
/// clone stressor reaps finished clones only when it ends (~170 zombies a
/// second here, without corral), and in one run they would fill this
/// machine's `pid_max` (32 768) in about three minutes.
pub const CLONE_ROUND: Duration = Duration::from_secs(20);

/// Starts one round of the clone storm in `group`; returns its PID.
fn start_storm(groups: &mut LabGroups, group: &Path, clone_max: u32) -> Result<u32> {
    let mut c = Command::new("stress-ng");
    c.args(["--clone", "1", "--clone-max", &clone_max.to_string()])
        .args(["--timeout", &format!("{}s", CLONE_ROUND.as_secs())])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    groups.start(group, c)
}

pub struct Options<'a> {
    pub seconds: u64,
    /// The clone storm's bound (`stress-ng --clone-max`); 0: no storm.
    pub clone_max: u32,
    /// The daemon's interval (`None`: its default).
    pub interval_ms: Option<u64>,
    pub stop: &'a AtomicBool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Sample {
    pub at_s: f64,
    pub rss_kib: u64,
    pub fds: usize,
    /// The daemon's CPU over the last period, share of one CPU.
    pub cpu: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub seconds: f64,
    pub workload: String,
    pub samples: Vec<Sample>,
    /// The daemon's CPU over the whole soak, share of one CPU.
    pub cpu: f64,
    /// Error lines in its log.
    pub errors: usize,
    pub first_errors: Vec<String>,
    /// The daemon ended by itself (it must not).
    pub died: Option<String>,
    /// SIGTERM: exit 0 and nothing left.
    pub clean_stop: bool,
    pub left: Vec<String>,
    pub goal_met: bool,
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// utime + stime of the whole process, clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after ')'.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// After the stop: the errors the daemon logged, and any group, record
/// or failed stop it left behind.
fn look_after(r: &mut Report, log: &Path, layout: &Layout, stopped: &Result<()>) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let errors: Vec<&str> = text.lines().filter(|l| l.contains("error")).collect();
    r.errors = errors.len();
    r.first_errors = errors.iter().take(5).map(|l| l.to_string()).collect();
    let group = LabGroups::daemon_group_name();
    let mut leftovers: Vec<PathBuf> = match layout {
        Layout::V1 { cpu, cpuset } => vec![cpu.join(&group), cpuset.join(&group)],
        Layout::V2 { unified } => vec![unified.join(&group)],
        Layout::Threads => Vec::new(),
    };
    leftovers.push(PathBuf::from("/run/corral").join(format!("{group}.json")));
    r.left = leftovers
        .iter()
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if let Err(e) = stopped {
        r.left.push(format!("stop: {e}"));
    }
}

pub fn run(
    exe: &Path,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    if Command::new("stress-ng").arg("--version").output().is_err() {
        return Err(Error::Environment(
            "stress-ng is not installed (scripts/setup installs it)".into(),
        ));
    }
    let me = std::process::id();
    let dir = crate::groups::scratch_dir("soak")?;
    let mut groups = LabGroups::for_experiment(layout)?;
    let work = groups.group("work", 1024)?;
    let socket = dir.join("corral.sock");
    let log = dir.join("daemon.log");
    let daemon = DaemonProcess::start(exe, me, &socket, o.interval_ms, None, &log, o.stop)?;
    let pid = daemon.pid().unwrap_or_default();
    let args = ["--fork", "1", "--pthread", "1"];
    let mut workload = format!("stress-ng {}", args.join(" "));
    let mut c = Command::new("stress-ng");
    c.args(args).args(["--timeout", "0"]).stderr(Stdio::null());
    groups.start(&work, c)?;
    let mut storm = None;
    if o.clone_max > 0 {
        storm = Some(start_storm(&mut groups, &work, o.clone_max)?);
        workload += &format!(
            " and stress-ng --clone 1 --clone-max {} in {} s rounds",
            o.clone_max,
            CLONE_ROUND.as_secs()
        );
    }
    progress(&format!(
        "corral run (PID {pid}, interval {}) beside {workload} for {} s",
        o.interval_ms
            .map_or("default".to_string(), |ms| format!("{ms} ms")),
        o.seconds
    ));
    let mut r = Report {
        workload,
        ..Default::default()
    };
    let t0 = Instant::now();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let first_ticks = cpu_ticks(pid).unwrap_or(0);
    let mut last = (t0, first_ticks);
    let mut last_ticks = first_ticks;
    while t0.elapsed() < Duration::from_secs(o.seconds) {
        let wait = EVERY.min(Duration::from_secs(o.seconds).saturating_sub(t0.elapsed()));
        let until = Instant::now() + wait;
        while Instant::now() < until {
            if o.stop.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            // The next round as soon as one ends.
            if let Some(p) = storm {
                if !matches!(groups.try_wait(p), Ok(None)) {
                    storm = Some(start_storm(&mut groups, &work, o.clone_max)?);
                }
            }
        }
        if o.stop.load(Ordering::SeqCst) {
            break;
        }
        let Some(ticks) = cpu_ticks(pid) else {
            r.died = Some(format!(
                "the daemon ended during the soak; its log: {}",
                log.display()
            ));
            break;
        };
        let now = Instant::now();
        let s = Sample {
            at_s: t0.elapsed().as_secs_f64(),
            rss_kib: rss_kib(pid).unwrap_or(0),
            fds: fds(pid),
            cpu: (ticks - last.1) as f64 / hz / now.duration_since(last.0).as_secs_f64(),
        };
        progress(&format!(
            "{:.0} s: RSS {} KiB, {} fds, {:.2} % of a CPU",
            s.at_s,
            s.rss_kib,
            s.fds,
            s.cpu * 100.0
        ));
        last = (now, ticks);
        last_ticks = ticks;
        r.samples.push(s);
    }
    r.seconds = t0.elapsed().as_secs_f64();
    r.cpu =
        (last_ticks - first_ticks) as f64 / hz / last.0.duration_since(t0).as_secs_f64().max(1e-9);
    // The workload ends first (the clone storm's children with it), then
    // the daemon is stopped as a service manager stops it.
    groups.cleanup();
    let stopped = if r.died.is_some() {
        Err(Error::Daemon("it had died".into()))
    } else {
        daemon.stop()
    };
    look_after(&mut r, &log, layout, &stopped);
    r.clean_stop = stopped.is_ok() && r.left.is_empty();
    r.goal_met = r.clean_stop && r.errors == 0 && r.died.is_none() && r.cpu <= GOAL_CPU;
    if r.goal_met {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(r)
}
