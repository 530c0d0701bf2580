//! `corral lab heavy`: paper 000's "multiple" situation on this machine.
//!
//! One CPU-bound benchmark thread does a fixed amount of arithmetic while a
//! background mix wants about 1.1 CPUs (four threads waking every 10 ms for
//! 2, 2, 3.5 and 3.5 ms of CPU, rt-app style: a late period runs back to
//! back, so each keeps wanting its share). Measured: the benchmark alone, with the
//! background (baseline), and with the background and corral's daemon,
//! which should give the benchmark a core of its own. For each, the
//! benchmark's completion time, its CPU share while it ran (CPU time /
//! wall time), its migrations, and the CPU each background thread got: the
//! price the others pay, made visible.

use crate::daemon_thread::DaemonThread;
use crate::error::Result;
use crate::groups::{lab_config, parse_output, run_ns, LabGroups};
use crate::work::{bench_rate, BenchResult};
use corral_core::config::Config;
use corral_linux::placer::Layout;
use corral_linux::HostPaths;
use serde::Serialize;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Options {
    /// Benchmark length alone, seconds (calibrated to ops here).
    pub seconds: f64,
    /// Run per 10 ms period of each background thread, ms.
    pub background_ms: Vec<f64>,
    pub config: Config,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seconds: 10.0,
            background_ms: vec![2.0, 2.0, 3.5, 3.5],
            config: lab_config(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    pub name: String,
    pub completion_s: f64,
    /// Completion time over the benchmark alone.
    pub vs_alone: f64,
    pub cpu_share: f64,
    pub migrations: Option<u64>,
    /// CPU each background thread got while the benchmark ran (1.0 = a CPU).
    pub background_cpu: Vec<f64>,
    /// corral's class and group for the benchmark (corral variant).
    pub class: Option<String>,
    pub group: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub ops: u64,
    pub interval_ms: u64,
    pub variants: Vec<Variant>,
    /// Baseline completion over corral's.
    pub speedup_vs_baseline: f64,
}

fn bench_cmd(exe: &Path, ops: u64) -> Command {
    let mut c = Command::new(exe);
    c.args(["lab", "work", "bench", "--ops", &ops.to_string()]);
    c
}

fn background(exe: &Path, groups: &mut LabGroups, group: &Path, o: &Options) -> Result<Vec<u32>> {
    o.background_ms
        .iter()
        .map(|ms| {
            let mut c = Command::new(exe);
            c.args([
                "lab",
                "work",
                "periodic",
                "--period-ms",
                "10",
                "--run-ms",
                &ms.to_string(),
            ])
            .args(["--warmup-ms", "0", "--periods", "100000000", "--catch-up"]);
            groups.spawn(group, c)
        })
        .collect()
}

/// Runs alone, baseline and corral in one invocation.
pub fn run(
    exe: &Path,
    paths: &HostPaths,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let rate = bench_rate(Duration::from_millis(400));
    let ops = (rate * o.seconds).max(1.0) as u64;
    let mut groups = LabGroups::for_experiment(layout)?;
    let bench_group = groups.group("bench", 1024)?;
    let bg_group = groups.group("background", 1024)?;
    let mut variants = Vec::new();

    progress(&format!("alone: {ops} ops (about {:.1} s)", o.seconds));
    let pid = groups.spawn(&bench_group, bench_cmd(exe, ops))?;
    let alone: BenchResult = parse_output(&groups.wait_output(pid)?)?;
    let alone_s = alone.wall_ns as f64 / 1e9;
    variants.push(row("alone", &alone, alone_s, vec![]));

    for with_corral in [false, true] {
        let name = if with_corral { "corral" } else { "baseline" };
        let bg = background(exe, &mut groups, &bg_group, o)?;
        let daemon = if with_corral {
            Some(DaemonThread::start(
                paths.clone(),
                layout.clone(),
                vec![groups.root().to_path_buf()],
                LabGroups::daemon_group_name(),
                o.config.clone(),
                None,
            )?)
        } else {
            None
        };
        // Let the background settle (and the daemon classify it).
        std::thread::sleep(Duration::from_millis(1500));
        progress(&format!(
            "{name}: benchmark with the background{}",
            if with_corral { " and corral" } else { "" }
        ));
        let before: Vec<Option<u64>> = bg.iter().map(|&p| run_ns(p)).collect();
        let t0 = Instant::now();
        let pid = groups.spawn(&bench_group, bench_cmd(exe, ops))?;
        let mut seen = None;
        if let Some(d) = &daemon {
            // Look while it runs: the daemon forgets threads that exited.
            std::thread::sleep(Duration::from_secs_f64((o.seconds / 2.0).min(3.0)));
            seen = d.explain(pid);
        }
        let out = groups.wait_output(pid);
        let wall = t0.elapsed().as_secs_f64();
        let bg_cpu: Vec<f64> = bg
            .iter()
            .zip(before)
            .map(|(&p, b)| match (b, run_ns(p)) {
                (Some(b), Some(a)) => a.saturating_sub(b) as f64 / 1e9 / wall,
                _ => f64::NAN,
            })
            .collect();
        let stopped = daemon.map(|d| d.stop());
        for p in bg {
            groups.kill(p);
        }
        if let Some(s) = stopped {
            s?;
        }
        let r: BenchResult = parse_output(&out?)?;
        let mut v = row(name, &r, alone_s, bg_cpu);
        v.class = seen
            .as_ref()
            .and_then(|e| e.class)
            .map(|c| c.as_str().to_string());
        v.group = seen.and_then(|e| e.group);
        variants.push(v);
    }
    groups.cleanup();
    let speedup = variants[1].completion_s / variants[2].completion_s;
    Ok(Report {
        ops,
        interval_ms: o.config.daemon.interval_ms,
        variants,
        speedup_vs_baseline: speedup,
    })
}

fn row(name: &str, r: &BenchResult, alone_s: f64, background_cpu: Vec<f64>) -> Variant {
    let s = r.wall_ns as f64 / 1e9;
    Variant {
        name: name.into(),
        completion_s: s,
        vs_alone: s / alone_s,
        cpu_share: r.cpu_ns as f64 / r.wall_ns.max(1) as f64,
        migrations: r.migrations,
        background_cpu,
        class: None,
        group: None,
    }
}
