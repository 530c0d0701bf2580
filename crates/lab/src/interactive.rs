//! `corral lab interactive`: paper 001's situation on this machine.
//!
//! An input-handler thread does T_E of CPU work per event; a dispatcher
//! thread delivers an event every 200 ms; four nice-0 hogs share the two
//! CPUs. Response time RT = T_S + T_P + T_E runs from the event's arrival
//! at the dispatcher to the end of its work. In the boosted variants the
//! dispatcher calls corral's socket right before it delivers the event
//! (framework-assisted), as the paper's input dispatcher passes the
//! handler's TID to the kernel; the call's time is part of RT.
//! Variants: alone (no hogs), baseline (hogs, no corral), boost only
//! (corral without eviction), boost + eviction.

use crate::daemon_thread::DaemonThread;
use crate::error::Result;
use crate::groups::{lab_config, parse_output, LabGroups};
use crate::work::{percentile, InteractiveResult};
use corral_core::config::Config;
use corral_linux::placer::Layout;
use corral_linux::HostPaths;
use serde::Serialize;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Options {
    pub te_ms: f64,
    pub period_ms: u64,
    pub events: usize,
    pub hogs: u32,
    pub config: Config,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            te_ms: 50.0,
            period_ms: 200,
            events: 30,
            hogs: 4,
            config: lab_config(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    pub name: String,
    pub events: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// p50 over T_E.
    pub p50_over_te: f64,
    pub p99_over_te: f64,
    /// Boost calls (dispatcher's view: call → reply), p50 and max, ms.
    pub boost_call_p50_ms: Option<f64>,
    pub boost_call_max_ms: Option<f64>,
    pub boost_errors: usize,
    pub first_boost_error: Option<String>,
    /// Every event's response time, in order, ms.
    pub responses_ms: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub te_ms: f64,
    pub period_ms: u64,
    pub hogs: u32,
    pub interval_ms: u64,
    pub variants: Vec<Variant>,
}

impl Report {
    /// A variant's p50 change against the baseline (negative = faster).
    pub fn change_vs_baseline(&self, name: &str) -> Option<f64> {
        let base = self.variants.iter().find(|v| v.name == "baseline")?.p50_ms;
        let v = self.variants.iter().find(|v| v.name == name)?.p50_ms;
        Some(v / base - 1.0)
    }
}

fn variant(name: &str, r: &InteractiveResult, te_ms: f64, boosted: bool) -> Variant {
    let mut rt = r.response_ns.clone();
    rt.sort_unstable();
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut calls = r.boost_call_ns.clone();
    calls.sort_unstable();
    Variant {
        name: name.into(),
        events: rt.len(),
        p50_ms: ms(percentile(&rt, 50.0)),
        p90_ms: ms(percentile(&rt, 90.0)),
        p99_ms: ms(percentile(&rt, 99.0)),
        max_ms: ms(rt.last().copied().unwrap_or(0)),
        p50_over_te: ms(percentile(&rt, 50.0)) / te_ms,
        p99_over_te: ms(percentile(&rt, 99.0)) / te_ms,
        boost_call_p50_ms: boosted.then(|| ms(percentile(&calls, 50.0))),
        boost_call_max_ms: boosted.then(|| ms(calls.last().copied().unwrap_or(0))),
        boost_errors: r.boost_errors,
        first_boost_error: r.first_boost_error.clone(),
        responses_ms: r.response_ns.iter().map(|&n| ms(n)).collect(),
    }
}

/// Runs the four variants in one invocation.
pub fn run(
    exe: &Path,
    paths: &HostPaths,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let mut groups = LabGroups::for_experiment(layout)?;
    let work = groups.group("work", 1024)?;
    let socket = std::env::temp_dir().join(format!("corral-lab-{}-boost.sock", std::process::id()));
    let handler = |boost: bool| {
        let mut c = Command::new(exe);
        c.args(["lab", "work", "interactive"])
            .args(["--te-ms", &o.te_ms.to_string()])
            .args(["--period-ms", &o.period_ms.to_string()])
            .args(["--events", &o.events.to_string()]);
        if boost {
            c.arg("--boost-socket").arg(&socket);
        }
        c
    };
    let mut variants = Vec::new();

    progress("alone: the handler with no hogs");
    let pid = groups.spawn(&work, handler(false))?;
    let r: InteractiveResult = parse_output(&groups.wait_output(pid)?)?;
    variants.push(variant("alone", &r, o.te_ms, false));

    groups.spawn_hogs(exe, &work, o.hogs)?;
    std::thread::sleep(Duration::from_millis(500));
    progress(&format!(
        "baseline: the handler beside {} nice-0 hogs",
        o.hogs
    ));
    let pid = groups.spawn(&work, handler(false))?;
    let r: InteractiveResult = parse_output(&groups.wait_output(pid)?)?;
    variants.push(variant("baseline", &r, o.te_ms, false));

    for (name, evict) in [("boost", false), ("boost+evict", true)] {
        progress(&format!(
            "{name}: the dispatcher asks corral to boost the handler before each event"
        ));
        let mut config = o.config.clone();
        config.plan.boost_evict = evict;
        let daemon = DaemonThread::start(
            paths.clone(),
            layout.clone(),
            vec![groups.root().to_path_buf()],
            LabGroups::daemon_group_name(),
            config,
            Some(&socket),
        )?;
        // Let the daemon see and place the hogs first.
        std::thread::sleep(Duration::from_millis(4 * o.config.daemon.interval_ms));
        let pid = groups.spawn(&work, handler(true))?;
        let out = groups.wait_output(pid);
        let stopped = daemon.stop();
        let r: InteractiveResult = parse_output(&out?)?;
        stopped?;
        variants.push(variant(name, &r, o.te_ms, true));
    }
    groups.cleanup();
    Ok(Report {
        te_ms: o.te_ms,
        period_ms: o.period_ms,
        hogs: o.hogs,
        interval_ms: o.config.daemon.interval_ms,
        variants,
    })
}
