//! `corral lab medium`: the medium guarantee (a thread wanting 30–50 % of
//! a CPU counts on half a CPU) on this machine's kernel, through cgroup
//! weights and through each thread's own levers (the per-thread backend
//! of a systemd host: its nice, `share::medium_nice`).
//!
//! A periodic thread wants `run_ms` of every 10 ms; a period it cannot
//! finish in time is skipped and counted missed (as cyclictest does). It
//! runs alone for `alone_s` seconds (long enough to be classified medium),
//! then its program's tree starts `hogs_per_cpu` CPU hogs per online CPU
//! in its cgroup (a build started in the same session), and from 2 s
//! later it is measured for `seconds`. Three variants: no daemon;
//! `corral run --scope-pid` on cgroups (the medium group's weight); the
//! same with `cgroup = "threads"` (no cgroup written: the medium thread's
//! nice). For each: its CPU share while measured (CPU time / wall time),
//! the periods it missed, and its class, group and nice as the daemon
//! last saw them.

use crate::daemon_process::DaemonProcess;
use crate::error::{Error, Result};
use crate::groups::{parse_output, LabGroups};
use crate::work::PeriodicResult;
use corral_linux::placer::Layout;
use serde::Serialize;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub struct Options<'a> {
    /// Seconds measured per variant.
    pub seconds: u32,
    /// The medium thread's CPU per 10 ms period, ms.
    pub run_ms: f64,
    /// Seconds it runs alone first.
    pub alone_s: u32,
    /// CPU hogs per online CPU started beside it.
    pub hogs_per_cpu: u32,
    pub stop: &'a AtomicBool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    /// `baseline`, `cgroups` or `threads`.
    pub name: String,
    /// CPU time over wall time while measured (1.0 = a CPU).
    pub share: f64,
    /// Periods skipped over all periods.
    pub missed: f64,
    /// What the daemon last said of the medium thread.
    pub class: Option<String>,
    pub group: Option<String>,
    pub nice: Option<i32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// What the thread wants, of a CPU.
    pub demand: f64,
    pub hogs: u32,
    pub cpus: u32,
    pub seconds: u32,
    pub variants: Vec<Variant>,
}

/// Runs the variants; `layout` is the host's cgroup layout for the
/// experiment's own group and the `cgroups` variant.
pub fn run(
    exe: &Path,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let cpus = corral_linux::sched::sched_getaffinity(None)
        .map_err(Error::host("cannot read this process's affinity"))?
        .len();
    let hogs = o.hogs_per_cpu * cpus;
    let mut report = Report {
        demand: o.run_ms / 10.0,
        hogs,
        cpus,
        seconds: o.seconds,
        variants: Vec::new(),
    };
    let me = std::process::id();
    let dir = crate::groups::scratch_dir("medium")?;
    for name in ["baseline", "cgroups", "threads"] {
        if o.stop.load(Ordering::SeqCst) {
            break;
        }
        progress(&format!(
            "{name}: the thread alone for {} s, then beside {hogs} hogs for {} s",
            o.alone_s,
            o.seconds + 2
        ));
        let mut groups = LabGroups::for_experiment(layout)?;
        let work = groups.group("work", 1024)?;
        let daemon = match name {
            "baseline" => None,
            _ => {
                let config = dir.join(format!("{name}.toml"));
                let cgroup = if name == "threads" { "threads" } else { "auto" };
                std::fs::write(
                    &config,
                    format!("[daemon]\ninterval_ms = 250\ncgroup = \"{cgroup}\"\n"),
                )
                .map_err(Error::io(&config))?;
                let socket = dir.join(format!("{name}.sock"));
                let log = dir.join(format!("{name}-daemon.log"));
                Some(DaemonProcess::start(
                    exe,
                    me,
                    &socket,
                    None,
                    Some(&config),
                    &log,
                    o.stop,
                )?)
            }
        };
        let mut c = Command::new(exe);
        c.args(["lab", "work", "periodic", "--period-ms", "10", "--run-ms"])
            .arg(o.run_ms.to_string())
            .args(["--warmup-ms", &((o.alone_s + 2) * 1000).to_string()])
            .args(["--periods", &(o.seconds * 100).to_string()]);
        let pid = groups.spawn(&work, c)?;
        let mut slept = Duration::ZERO;
        while slept < Duration::from_secs(o.alone_s as u64) && !o.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
            slept += Duration::from_millis(100);
        }
        groups.spawn_hogs(exe, &work, hogs)?;
        // The daemon's view while the hogs run, a second before the end.
        std::thread::sleep(Duration::from_secs(o.seconds as u64 + 1));
        let seen = daemon.as_ref().and_then(|d| d.explain(pid).ok());
        let out = groups.wait_output(pid);
        groups.cleanup();
        if let Some(d) = daemon {
            d.stop()?;
        }
        let r: PeriodicResult = parse_output(&out?)?;
        report.variants.push(Variant {
            name: name.into(),
            share: r.cpu_ns as f64 / r.wall_ns.max(1) as f64,
            missed: r.missed as f64 / (r.periods as f64 + r.missed as f64).max(1.0),
            class: seen
                .as_ref()
                .and_then(|e| e.class.map(|c| c.as_str().to_string())),
            group: seen.as_ref().and_then(|e| e.group.clone()),
            nice: seen.as_ref().map(|e| e.nice),
        });
    }
    // The daemons' configurations and logs; kept only when a step failed
    // (the `?` above returns before this).
    let _ = std::fs::remove_dir_all(&dir);
    Ok(report)
}
