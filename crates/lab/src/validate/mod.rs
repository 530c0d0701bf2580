//! `corral lab validate`: the simulator checked against this kernel.
//!
//! Each case is an rt-app workload. It runs LIVE, with the real rt-app on
//! this machine, then in the SIMULATOR (EEVDF, this machine's online CPUs
//! at capacity 1024, its `CONFIG_HZ`), and the two are compared task by
//! task. Both sides read the *same* JSON text (written to
//! `workload.json`), and both are measured the same way:
//!
//! - **Window.** The first `warmup` of the use case is left out on both
//!   sides, and so is the last quarter second (rt-app ends at its
//!   `duration`; the live side must read its threads before they go).
//!   Live, the use case starts when rt-app's threads all exist; in the
//!   simulator at 0.
//! - **CPU share** = CPU time in the window / the window's wall time.
//!   Live from `/proc/PID/task/TID/schedstat` (run ns, which excludes
//!   time stolen by the hypervisor), read at both ends of the window and
//!   every 100 ms in between (a thread that ends inside the window keeps
//!   its last reading); in the simulator from its per-thread CPU time.
//!   The simulated machine has whole CPUs; the live one had them less
//!   what the hypervisor stole (`steal` in `/proc/stat`), so live shares
//!   are of the CPU time the guest had: the wall time scaled by
//!   `(CPUs − stolen CPUs) / CPUs`, the theft taken as spread evenly.
//! - **Wake-up latency** is rt-app's own `wu_lat`: the time from a timer's
//!   expiry to the thread reading the clock after `clock_nanosleep`
//!   returns, one sample per phase iteration that slept on its timer
//!   (slack ≥ 0; a late thread does not sleep and has no wake-up). The
//!   simulator writes the same rt-app log columns (`trace::rtapp_logs`)
//!   and both sets of logs go through one parser, so the definition is the
//!   same by construction. Iterations count when they started after the
//!   warm-up and ended inside the window.
//! - **Response time** = the timer's period − slack: from the nominal
//!   release (the previous expiry) to the end of the iteration's work —
//!   paper 001's `T_S + T_P + T_E`, defined for late iterations too.
//!
//! **Runs.** Each case runs `runs` times (live, then simulated with that
//! run's tick phase and calibration), and every figure is the median over
//! the runs ([`runs`]): one live run is one draw. Kept runs (`--keep`)
//! can be simulated again by a later build ([`kept`], `--from`), so that
//! a model change is scored on the same draws.
//!
//! **Pairing.** Each live thread is compared with its simulated twin;
//! instances of one rt-app task are interchangeable (which hog shares a
//! CPU with the periodic thread is chance), so they are paired by rank of
//! CPU share.
//!
//! **Work.** rt-app's `run` executes a number of loops computed from the
//! calibration (ns per loop, an integer); the simulator treats `run` as
//! that many µs of CPU at capacity 1024. rt-app's `runtime` is not the
//! fair alternative it looks like: it spins until *wall-clock* time
//! (`CLOCK_MONOTONIC`) advanced by the value, preemption included, while
//! the simulator charges it as CPU time. So the cases use `run`, and each
//! case measures the loop on this machine right before it (rt-app with 1
//! ns per loop, seven 5 ms runs, the median) and gives rt-app that as its
//! `calibration`. What a `run` µs cost live in the window is reported
//! (`work`), since this VM's speed drifts. The same measurement then
//! times runs of fixed work at four lengths (about 0.14, 1, 5 and 20 ms),
//! each after a 100 µs sleep: how they vary (`run_spread`, percentiles
//! over the median, by length) is given to the simulated machine, which
//! draws each `run`'s length from it, as live runs of fixed work never
//! take exactly the same time, and a short one varies more in proportion
//! than a long one.
//!
//! **Groups.** The case's groups are made under a root of this run's own,
//! `<cpu mount>/corral-validate-<pid>/`, and the workload's `taskgroup`
//! keys are rewritten to point there (a task without one gets the root
//! itself), so the simulator's hierarchy is the live one. rt-app starts
//! inside the root; rt-app 1.0 (Debian's) ignores `taskgroup`, so each
//! thread is written into its group's `tasks` as soon as rt-app has
//! created it (inside the warm-up). Everything is removed at the end, on
//! error, and on Ctrl-C (the caller's `stop` flag); only the rt-app
//! processes started here are ever signalled.
//!
//! rt-app runs with a timer slack of 1 ns (`PR_SET_TIMERSLACK`, inherited
//! by its threads), and the simulated machine is given the same
//! (`timer_slack`): the default 50 µs would add up to 50 µs to every
//! wake-up on both sides and hide the scheduler's part in it.

use crate::error::{Error, Result};
use crate::groups::LabGroups;
use crate::work::percentile;
use corral_sim::input::json::{self, Kind, Value};
use corral_sim::{input::platform, input::rtapp, out::trace, sched::fair::Flavour};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod kept;
mod live;
mod log;
mod machine;
mod others;
mod prepare;
mod runs;
mod sim;
pub mod tolerance;
pub use kept::{again, Again};
use live::*;
use log::*;
use machine::*;
use prepare::*;
use sim::*;

/// Where Debian's rt-app package puts its example workloads.
pub const DEBIAN_EXAMPLES: &str = "/usr/share/doc/rt-app/examples";

/// A validation case.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub name: &'static str,
    pub paper: &'static str,
    pub about: &'static str,
    source: Source,
    /// `cpu.shares` of the case's groups, by the path its file gives.
    groups: &'static [(&'static str, u64)],
}

#[derive(Debug, Clone, Copy)]
enum Source {
    /// A file of corral's own, built into the binary.
    Embedded(&'static str),
    /// One of Debian's rt-app examples, read at run time.
    Debian(&'static str),
}

/// The cases, in the order they run. (Debian's video-short.json and
/// video-long.json are not among them: rt-app 1.0 itself refuses them, "Error
/// while parsing input JSON", for their bare `"suspend",` keys.)
pub const CASES: &[Case] = &[
    Case {
        name: "periodic-low-share",
        paper: "002",
        about: "1 ms every 10 ms in a 52-share group beside 2 hogs in a 1024-share group",
        source: Source::Embedded(include_str!(
            "../../workloads/validate/periodic-low-share.json"
        )),
        groups: &[("/low", 52), ("/high", 1024)],
    },
    Case {
        name: "periodic-beside-groups",
        paper: "-",
        about: "30 us every 10 ms pinned to CPU 0 in a group of its own, beside 2 hogs in another group",
        source: Source::Embedded(include_str!(
            "../../workloads/validate/periodic-beside-groups.json"
        )),
        groups: &[("/own", 1024), ("/shared", 1024)],
    },
    Case {
        name: "periodic-among-hogs",
        paper: "-",
        about: "30 us every 10 ms pinned to CPU 0 beside 2 hogs, all in one group",
        source: Source::Embedded(include_str!(
            "../../workloads/validate/periodic-among-hogs.json"
        )),
        groups: &[],
    },
    Case {
        name: "handler-hogs",
        paper: "001",
        about: "a 50 ms handler every 200 ms beside 4 nice-0 hogs",
        source: Source::Embedded(include_str!("../../workloads/validate/handler-hogs.json")),
        groups: &[],
    },
    Case {
        name: "mp3-short",
        paper: "-",
        about: "Debian's rt-app example mp3-short.json",
        source: Source::Debian("mp3-short.json"),
        groups: &[],
    },
    Case {
        name: "browser-short",
        paper: "-",
        about: "Debian's rt-app example browser-short.json",
        source: Source::Debian("browser-short.json"),
        groups: &[],
    },
    Case {
        name: "spreading-tasks",
        paper: "-",
        about: "Debian's rt-app example spreading-tasks.json (light and heavy phases)",
        source: Source::Debian("spreading-tasks.json"),
        groups: &[],
    },
    Case {
        name: "schbench-fanout",
        paper: "-",
        about:
            "schbench-shaped: a message thread wakes 6 workers at once every 20 ms, beside a hog",
        source: Source::Embedded(include_str!(
            "../../workloads/validate/schbench-fanout.json"
        )),
        groups: &[],
    },
    Case {
        name: "hackbench-groups",
        paper: "-",
        about: "hackbench-shaped: 4 groups of 4 threads, 100 us bursts ended at a group barrier",
        source: Source::Embedded(include_str!(
            "../../workloads/validate/hackbench-groups.json"
        )),
        groups: &[],
    },
];

/// What the experiment needs of this machine.
#[derive(Debug, Clone)]
pub struct Env {
    /// The rt-app binary.
    pub rtapp: PathBuf,
    /// Where the cgroup v1 `cpu` controller is mounted.
    pub cpu_mount: PathBuf,
}

/// Checks for root, rt-app and a cgroup v1 `cpu` hierarchy; the error
/// says which is missing.
pub fn check_environment(paths: &corral_linux::HostPaths) -> Result<Env> {
    let lacks = |what: &str| Error::Environment(what.into());
    if !rustix::process::geteuid().is_root() {
        return Err(lacks(
            "corral lab validate needs root: it creates cgroups and moves rt-app's threads into them",
        ));
    }
    let rtapp = find_rtapp().ok_or_else(|| {
        lacks(
        "corral lab validate needs rt-app (apt-get install rt-app): not found in PATH or /usr/bin",
    )
    })?;
    let mounts = corral_linux::cgroup::CgroupMounts::discover(paths)
        .map_err(Error::host("cannot read the cgroup mounts"))?;
    let cpu = mounts
        .v1_with("cpu")
        .filter(|h| h.root == "/")
        .ok_or_else(|| lacks("corral lab validate needs the cgroup v1 cpu controller mounted (e.g. at /sys/fs/cgroup/cpu); it is not"))?;
    Ok(Env {
        rtapp,
        cpu_mount: cpu.dir.clone(),
    })
}

fn find_rtapp() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join("rt-app"))
        .find(|p| p.is_file())
}

/// Options of the experiment.
#[derive(Debug, Clone)]
pub struct Options {
    /// Length of each use case (rt-app's `duration`, whole seconds).
    pub seconds: u64,
    /// Left out at the start, on both sides.
    pub warmup: Duration,
    /// Only the cases whose name contains this.
    pub case: Option<String>,
    /// Keep workload, platform and both sides' logs here.
    pub keep: Option<PathBuf>,
    pub env: Env,
    pub procfs: PathBuf,
    /// Set (by a signal handler) to stop early and clean up.
    pub stop: Arc<AtomicBool>,
    /// Costs for the simulated machine, measured here (unless
    /// `--no-costs`).
    pub costs: Option<crate::costs::Costs>,
    /// This kernel's wake-up packing ([`crate::placement`]), measured
    /// here unless `--no-pack`: the simulated machine's `vcpu_pack_util`.
    pub vcpu_pack_util: Option<u64>,
    /// Runs of each case; its figures are their medians.
    pub runs: usize,
    /// Trace the machine's other threads during each live run and replay
    /// them in the simulation ([`others`]).
    pub others: bool,
    /// The simulation's seed ([`SimInfo::seed`]).
    pub seed: u64,
}

/// Left out at the end: the live side reads the threads before rt-app
/// stops them.
const TAIL: Duration = Duration::from_millis(250);

/// The machine the live side ran on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MachineInfo {
    pub kernel: String,
    /// Where the kernel configuration was read.
    pub config: String,
    pub hz: Option<u32>,
    /// The preemption model and how it was found.
    pub preempt: String,
    pub cpus: usize,
    pub rtapp: String,
    /// Timer slack given to rt-app, ns.
    pub timer_slack_ns: u64,
}

/// The simulator's settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SimInfo {
    pub kernel: String,
    pub cpus: usize,
    pub capacity: u32,
    pub hz: u32,
    /// This machine's scheduling costs (`corral lab costs`), when the
    /// simulated machine is given them.
    pub costs: Option<crate::costs::Costs>,
    /// The slack of the simulated threads' timed sleeps, ns: the live
    /// rt-app's ([`MachineInfo::timer_slack_ns`]); none for RT threads,
    /// on both sides.
    pub timer_slack_ns: u64,
    /// The platform's `vcpu_pack_util`: measured here, this kernel packs
    /// wake-ups onto busy CPUs under it ([`crate::placement`]).
    pub vcpu_pack_util: Option<u64>,
    /// The seed of the model's random draws (`corral sim --seed`: EEVDF's
    /// NI_RANDOM); 0 in what an older build kept.
    #[serde(default)]
    pub seed: u64,
}

/// The loop speed measured before a case and the calibration rt-app got.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub samples: usize,
    pub ns_per_loop_min: f64,
    pub ns_per_loop_median: f64,
    pub ns_per_loop_max: f64,
    /// rt-app's `calibration` (integer ns per loop).
    pub used: u32,
    /// How a run of fixed work varies: the 5th, 10th, … 95th percentiles
    /// of a short run's wall time over its median; empty in what an older
    /// build kept.
    #[serde(default)]
    pub run_spread: Vec<f64>,
    /// The same at each length measured, the shortest first (the
    /// simulated platform's `run_spread`, by length); empty in what an
    /// older build kept, which gives the simulator `run_spread` for runs
    /// of every length.
    #[serde(default)]
    pub run_spreads: Vec<RunSpread>,
    /// How a timer's wake-up onto an idle CPU varies: rt-app's own wake-up
    /// latencies after 5 ms asleep, sorted, over their median (the
    /// simulated platform's `timer_wakeup_spread`); empty in what an older
    /// build kept, whose timer wake-ups all cost the median.
    #[serde(default)]
    pub timer_spread: Vec<f64>,
}

/// How runs of one length of fixed work vary ([`Calibration`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpread {
    /// Their median wall time, µs.
    pub median_us: f64,
    /// Their 5th, 10th, … 95th percentiles over the median.
    pub factors: Vec<f64>,
}

impl Calibration {
    /// The spread the simulated platform gets: by length when measured
    /// so, else one for every length (none before either was kept).
    pub fn platform_spread(&self) -> Vec<(u64, Vec<f64>)> {
        if self.run_spreads.is_empty() {
            if self.run_spread.is_empty() {
                return Vec::new();
            }
            return vec![(0, self.run_spread.clone())];
        }
        self.run_spreads
            .iter()
            .map(|s| ((s.median_us * 1000.0).round() as u64, s.factors.clone()))
            .collect()
    }
}

/// One side's figures for a task.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Side {
    /// CPU time / wall time in the window (1.0 = a whole CPU).
    pub share: f64,
    /// Phase iterations started and ended in the window.
    pub iterations: usize,
    /// Iterations that reached their timer late (no wake-up).
    pub late: usize,
    /// wu_lat samples and their percentiles, µs.
    pub wakeups: usize,
    pub wu_lat_p50_us: Option<f64>,
    pub wu_lat_p99_us: Option<f64>,
    /// Response time (period − slack) percentiles, µs.
    pub resp_p50_us: Option<f64>,
    pub resp_p99_us: Option<f64>,
    /// Run-queue wait per time slice (schedstat run_delay / pcount), µs.
    pub wait_per_slice_us: Option<f64>,
    /// Moves to another CPU (`se.nr_migrations`).
    pub migrations: u64,
    /// Times taken off the CPU while runnable (`nr_involuntary_switches`).
    pub preemptions: u64,
    /// CPU time per µs of `run`/`runtime` of the window's iterations.
    pub work: Option<f64>,
}

/// A task's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct TaskRow {
    /// The simulator's name (rt-app's task name, `-N` per instance).
    pub name: String,
    /// Its cgroup, relative to this run's root.
    pub group: String,
    pub live: Side,
    pub sim: Side,
    /// sim − live, percentage points of a CPU.
    pub share_diff_pp: f64,
    /// (sim − live) / live.
    pub wu_lat_p50_rel: Option<f64>,
    pub wu_lat_p99_rel: Option<f64>,
    pub resp_p50_rel: Option<f64>,
    pub resp_p99_rel: Option<f64>,
}

/// A case's report.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    pub name: String,
    pub paper: String,
    pub about: String,
    /// Why the case did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub calibration: Option<Calibration>,
    /// The live run's first tick after the use case's start, µs; the
    /// simulator's ticks are put there too.
    pub tick_phase_us: u64,
    /// Where the live rt-app's timers counted from, µs after the use
    /// case's start (`log::timer_origin`); the simulated threads start
    /// there. None without timers.
    pub timer_origin_us: Option<u64>,
    /// Per rt-app task (file order): the factor its `run` values were
    /// multiplied by for the simulator, the CPU a `run` µs cost live.
    pub work_scale: Vec<(String, f64)>,
    /// The measured window, s from the use case's start.
    pub window_s: (f64, f64),
    /// The live window's wall time, s.
    pub live_window_s: f64,
    /// CPU used by everything else on the machine in the live window, CPUs.
    pub others_cpu: f64,
    /// CPU time the hypervisor stole in the live window, CPUs.
    pub steal_cpu: f64,
    pub tasks: Vec<TaskRow>,
    /// When each side's threads last finished an iteration, s from the
    /// use case's start.
    pub live_last_s: Option<f64>,
    pub sim_last_s: Option<f64>,
    /// Set when the two runs took different paths through the workload
    /// (one stalled, the other did not): their figures describe
    /// different executions and are not compared.
    pub diverged: Option<String>,
    pub notes: Vec<String>,
    /// How many runs the figures summarise (their medians, [`runs`]).
    pub runs: usize,
    /// Each run's own report, when there were several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub per_run: Vec<CaseReport>,
    /// The measures outside the simulator's targets ([`tolerance`]), of
    /// the figures above (the medians), and how many were compared.
    pub misses: Vec<tolerance::Miss>,
    pub compared: usize,
}

/// The experiment's report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub machine: MachineInfo,
    pub sim: SimInfo,
    pub seconds: u64,
    pub warmup_s: f64,
    pub latency: &'static str,
    pub cases: Vec<CaseReport>,
    /// Where the files were kept.
    pub kept: Option<PathBuf>,
    /// Whether the live side is kept runs simulated again (`--from`,
    /// [`again`]): the live figures are as measured then, `kept` is where.
    pub again: bool,
}

/// The latency definition, for the report.
pub const LATENCY: &str = "rt-app's wu_lat: timer expiry -> thread back from clock_nanosleep (iterations that slept on their timer)";

/// Runs the selected cases.
pub fn run(o: &Options, mut progress: impl FnMut(&str)) -> Result<Report> {
    let selected: Vec<&Case> = CASES
        .iter()
        .filter(|c| o.case.as_deref().is_none_or(|n| c.name.contains(n)))
        .collect();
    if selected.is_empty() {
        let names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
        return Err(Error::Invalid(format!(
            "no case matches {:?} (cases: {})",
            o.case.as_deref().unwrap_or(""),
            names.join(", ")
        )));
    }
    let min = o.warmup + TAIL + Duration::from_secs(1);
    if Duration::from_secs(o.seconds) < min {
        return Err(Error::Invalid(format!(
            "--seconds must be at least {:.0} (warm-up {:.1} s, tail {:.2} s)",
            min.as_secs_f64().ceil(),
            o.warmup.as_secs_f64(),
            TAIL.as_secs_f64()
        )));
    }
    let machine = machine_info(&o.procfs, &o.env.rtapp);
    let sim = SimInfo {
        kernel: "eevdf".into(),
        cpus: machine.cpus,
        capacity: 1024,
        hz: machine.hz.unwrap_or(250),
        costs: o.costs,
        timer_slack_ns: machine.timer_slack_ns,
        vcpu_pack_util: o.vcpu_pack_util,
        seed: o.seed,
    };
    let (base, temporary) = match &o.keep {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("corral-validate-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&base).map_err(Error::io(&base))?;
    let runs = o.runs.max(1);
    // This invocation's mark in the files it keeps ([`kept`]).
    let keep_id = match o.keep {
        Some(_) => {
            let settings = kept::Settings::new(machine.clone(), sim.clone(), o, TAIL, &selected);
            kept::write_settings(&base, &settings)?;
            Some(settings.invocation)
        }
        None => None,
    };
    let mut cases = Vec::new();
    let mut result = Ok(());
    'cases: for case in selected {
        let mut reps = Vec::new();
        let mut failed = Vec::new();
        for r in 1..=runs {
            if o.stop.load(Ordering::SeqCst) {
                result = Err(Error::Interrupted);
                break 'cases;
            }
            if runs > 1 {
                progress(&format!("{}: run {r} of {runs}", case.name));
            }
            let dir = base.join(run_dir(case, runs, r));
            match run_case(o, case, &sim, &dir, keep_id.as_deref(), &mut progress) {
                Ok(rep) => {
                    let skip = rep.skipped.is_some();
                    reps.push(rep);
                    if skip {
                        break;
                    }
                }
                // One live run that went wrong (rt-app ended early, its
                // threads not found) is one draw: left out, as a
                // diverged run is, and said so. Every run of a case
                // failing ends the experiment, as any other error does.
                Err(e) if e.is_one_draw() && (r < runs || !reps.is_empty()) => {
                    progress(&format!("{}: run {r} failed, left out: {e}", case.name));
                    failed.push(format!("run {r} failed and is left out: {e}"));
                }
                Err(e) => {
                    result = Err(e.within(case.name));
                    break 'cases;
                }
            }
        }
        if reps.is_empty() {
            continue;
        }
        cases.push(summarise(reps, failed));
    }
    if temporary {
        let _ = std::fs::remove_dir_all(&base);
    }
    result?;
    Ok(Report {
        machine,
        sim,
        seconds: o.seconds,
        warmup_s: o.warmup.as_secs_f64(),
        latency: LATENCY,
        cases,
        kept: o.keep.clone(),
        again: false,
    })
}

/// A case's runs as one report: their medians, the runs left out, and
/// the measures outside the targets.
fn summarise(reps: Vec<CaseReport>, failed: Vec<String>) -> CaseReport {
    let mut case = runs::medians(reps);
    case.notes.extend(failed);
    if case.diverged.is_none() {
        case.misses = tolerance::misses(&case.tasks);
        case.compared = tolerance::compared(&case.tasks);
    }
    case
}

fn skipped(case: &Case, why: String) -> CaseReport {
    CaseReport {
        name: case.name.into(),
        paper: case.paper.into(),
        about: case.about.into(),
        skipped: Some(why),
        calibration: None,
        tick_phase_us: 0,
        timer_origin_us: None,
        work_scale: Vec::new(),
        window_s: (0.0, 0.0),
        live_window_s: 0.0,
        others_cpu: 0.0,
        steal_cpu: 0.0,
        tasks: Vec::new(),
        live_last_s: None,
        sim_last_s: None,
        diverged: None,
        notes: Vec::new(),
        runs: 1,
        per_run: Vec::new(),
        misses: Vec::new(),
        compared: 0,
    }
}

/// One thread of the workload: rt-app's index order (tasks in file order,
/// instances together), as rt-app and the simulator both number them.
#[derive(Debug, Clone)]
struct Thread {
    /// rt-app's task name (its log file and `comm`).
    task: String,
    /// The simulator's name.
    name: String,
    /// Its group, relative to the run's root ("" for the root itself).
    group: String,
}

fn threads_of(work: &rtapp::Workload, root: &str) -> Vec<Thread> {
    let mut v = Vec::new();
    for t in &work.tasks {
        for i in 0..t.instances {
            let g = t.taskgroup.as_deref().unwrap_or("/");
            v.push(Thread {
                task: t.name.clone(),
                name: if t.instances > 1 {
                    format!("{}-{i}", t.name)
                } else {
                    t.name.clone()
                },
                group: g
                    .strip_prefix(root)
                    .unwrap_or(g)
                    .trim_matches('/')
                    .to_string(),
            });
        }
    }
    v
}

/// Per thread (instances together, tasks in file order, as
/// `threads_of`): its task's `delay` when its log shows its timer grid,
/// that is when every phase ends with a timer of its own (a `unique` ref,
/// or one no other thread uses), else None: a timer followed by work in
/// its iteration, or shared, puts `rel_st` off the grid.
fn grid_threads(work: &rtapp::Workload) -> Vec<Option<u64>> {
    let mut users: std::collections::HashMap<&str, u32> = Default::default();
    for t in &work.tasks {
        let mut named: Vec<&str> = Vec::new();
        for e in t.phases.iter().flat_map(|p| p.events.iter()) {
            if let rtapp::Event::Timer { name, .. } = e {
                if !name.starts_with("unique") && !named.contains(&&**name) {
                    named.push(name);
                }
            }
        }
        for n in named {
            *users.entry(n).or_default() += t.instances;
        }
    }
    let mut out = Vec::new();
    for t in &work.tasks {
        let own = t.phases.iter().all(|p| match p.events.last() {
            Some(rtapp::Event::Timer { name, .. }) => {
                name.starts_with("unique") || users.get(&**name) == Some(&1)
            }
            _ => false,
        });
        for _ in 0..t.instances {
            out.push(own.then_some(t.delay_us));
        }
    }
    out
}

/// Iterations an instance must have in the window for its `work` to be
/// taken: fewer are too few to say what a `run` costs.
const WORK_MIN_ITERATIONS: usize = 10;

/// Per rt-app task, the CPU time a `run` µs cost live: the mean of its
/// instances' `work` over those with [`WORK_MIN_ITERATIONS`] in the
/// window, 1 where none has. It may be well above 1: a short run pays
/// rt-app's own work each iteration (the timer, the log line, the
/// switches in and out), 30 µs costing 60-90 µs here, and the lag a
/// periodic thread spends each period, which decides when it next waits
/// for the tick, follows what it really ran.
///
/// XXX: with costs (the default), the switch the simulator charges is
/// paid twice (it is in the live figure too).
fn work_scale(work: &rtapp::Workload, live: &[Side]) -> Vec<(String, f64)> {
    let mut i = 0;
    let mut out = Vec::new();
    for t in &work.tasks {
        let n = t.instances as usize;
        let seen: Vec<f64> = live[i..i + n]
            .iter()
            .filter(|s| s.iterations >= WORK_MIN_ITERATIONS)
            .filter_map(|s| s.work)
            .filter(|k| k.is_finite() && *k > 0.0)
            .collect();
        i += n;
        let k = if seen.is_empty() {
            1.0
        } else {
            seen.iter().sum::<f64>() / seen.len() as f64
        };
        out.push((t.name.clone(), k));
    }
    out
}

/// Multiplies every `run` of a task by `k` (rounded µs, at least 1).
fn scale_run(task: &mut rtapp::Task, k: f64) {
    for ev in task.phases.iter_mut().flat_map(|p| p.events.iter_mut()) {
        if let rtapp::Event::Run(us) = ev {
            *us = ((*us as f64 * k).round() as u64).max(1);
        }
    }
}

/// A case's workload text and the name its errors use; why not, when
/// Debian's example is missing.
fn case_text(case: &Case) -> std::result::Result<(String, String), String> {
    match case.source {
        Source::Embedded(t) => Ok((t.to_string(), format!("{}.json", case.name))),
        Source::Debian(f) => {
            let p = Path::new(DEBIAN_EXAMPLES).join(f);
            std::fs::read_to_string(&p)
                .map(|t| (t, p.display().to_string()))
                .map_err(|e| format!("{}: {e} (Debian's rt-app package ships it)", p.display()))
        }
    }
}

/// One row per live thread beside its simulated partner (instances of a
/// task paired by rank of CPU share), with the relative differences.
fn task_rows(
    threads: &[Thread],
    live_sides: Vec<Side>,
    mut sim_sides: Vec<Option<Side>>,
) -> Vec<TaskRow> {
    let mut tasks = Vec::new();
    let partner = pair_instances(threads, &live_sides, &sim_sides);
    for (i, (th, live_side)) in threads.iter().zip(live_sides).enumerate() {
        let sim_side = sim_sides[partner[i]].take().expect("a permutation");
        tasks.push(TaskRow {
            name: th.name.clone(),
            group: if th.group.is_empty() {
                "/".into()
            } else {
                format!("/{}", th.group)
            },
            share_diff_pp: (sim_side.share - live_side.share) * 100.0,
            wu_lat_p50_rel: rel(live_side.wu_lat_p50_us, sim_side.wu_lat_p50_us),
            wu_lat_p99_rel: rel(live_side.wu_lat_p99_us, sim_side.wu_lat_p99_us),
            resp_p50_rel: rel(live_side.resp_p50_us, sim_side.resp_p50_us),
            resp_p99_rel: rel(live_side.resp_p99_us, sim_side.resp_p99_us),
            live: live_side,
            sim: sim_side,
        });
    }
    tasks
}

/// Each live thread's figures over the window; its CPU time counts
/// against the CPU the VM had (less what the host stole).
fn live_sides(live: &Live, sim: &SimInfo, n: usize, window: (Duration, Duration)) -> Vec<Side> {
    let ncpus = sim.cpus as f64;
    let had = if live.steal_cpu.is_finite() {
        ((ncpus - live.steal_cpu) / ncpus).clamp(0.5, 1.0)
    } else {
        1.0
    };
    (0..n)
        .map(|i| {
            side(
                &live.counters[i],
                (live.wall.as_nanos() as f64 * had) as u64,
                &live.logs[i],
                window,
            )
        })
        .collect()
}

/// Where run `r` of `runs` of `case` keeps its files, under the
/// experiment's directory.
fn run_dir(case: &Case, runs: usize, r: usize) -> PathBuf {
    if runs == 1 {
        PathBuf::from(case.name)
    } else {
        Path::new(case.name).join(format!("run-{r}"))
    }
}

/// One run of `case`, live then simulated; kept for `--from` with the
/// invocation's mark `keep_id` when keeping.
fn run_case(
    o: &Options,
    case: &Case,
    sim: &SimInfo,
    dir: &Path,
    keep_id: Option<&str>,
    progress: &mut impl FnMut(&str),
) -> Result<CaseReport> {
    let (text, label) = match case_text(case) {
        Ok(t) => t,
        Err(why) => {
            progress(&format!("{}: skipped: {why}", case.name));
            return Ok(skipped(case, why));
        }
    };
    let live_dir = dir.join("live");
    let sim_dir = dir.join("sim");
    for d in [&live_dir, &sim_dir] {
        // Logs of an earlier run kept in the same place would be read as ours.
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).map_err(Error::io(d))?;
    }
    let root_name = format!("corral-validate-{}", std::process::id());
    let root = format!("/{root_name}");
    let mut groups = LabGroups::create_at(&o.env.cpu_mount, true, &root_name)
        .map_err(|e| e.within("cannot create this run's cgroup"))?;
    for (g, shares) in case.groups {
        groups.group(g.trim_start_matches('/'), *shares)?;
    }

    progress(&format!("{}: measuring rt-app's loop", case.name));
    let cal = calibrate(o, &mut groups, &dir.join("calibration"))?;
    let json = prepare(
        &text,
        &label,
        &root,
        o.seconds,
        cal.used,
        &live_dir,
        case.groups,
    )?;
    let workload_path = dir.join("workload.json");
    std::fs::write(&workload_path, &json).map_err(Error::io(&workload_path))?;
    // The simulator must accept the workload before anything runs live.
    let work = rtapp::parse(&json, &workload_path.display().to_string())?;
    let threads = threads_of(&work, &root);

    progress(&format!(
        "{}: live, {} s with rt-app ({} threads, {} ns per loop)",
        case.name,
        o.seconds,
        threads.len(),
        cal.used
    ));
    let live = run_live(o, &mut groups, &threads, &workload_path, &live_dir)?;
    groups.cleanup();
    if let Some(id) = keep_id {
        kept::write_live(&live_dir, id, &live, &cal, &root, case.groups)?;
    }
    let run = Window {
        warmup: o.warmup,
        seconds: o.seconds,
        tail: TAIL,
    };
    compare(
        run,
        case,
        case.groups,
        sim,
        dir,
        &work,
        &threads,
        live,
        cal,
        &root,
        progress,
    )
}

/// The length of a case's runs, the part left out at the start and the
/// part left out at the end ([`TAIL`] when live now).
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    pub(super) warmup: Duration,
    pub(super) seconds: u64,
    pub(super) tail: Duration,
}

/// The simulated half of a case's run, and the comparison: `live` is
/// what the live run of `work` measured (just now, or kept by `--keep`),
/// with the case's `groups`; the simulated side's files go to `dir`.
#[allow(clippy::too_many_arguments)]
fn compare(
    run: Window,
    case: &Case,
    groups: &[(&str, u64)],
    sim: &SimInfo,
    dir: &Path,
    work: &rtapp::Workload,
    threads: &[Thread],
    live: Live,
    cal: Calibration,
    root: &str,
    progress: &mut impl FnMut(&str),
) -> Result<CaseReport> {
    let window = (run.warmup, Duration::from_secs(run.seconds) - run.tail);
    let live_sides = live_sides(&live, sim, threads.len(), window);
    // Both sides ask for the same CPU: each task's `run` costs in the
    // simulator what it cost live (the loop's speed drifts on this VM,
    // and a thread near its fair share is late or not by a few percent).
    let work_scale = work_scale(work, &live_sides);
    let mut scaled = work.clone();
    for (task, (_, k)) in scaled.tasks.iter_mut().zip(&work_scale) {
        scale_run(task, *k);
    }
    // rt-app's timers count from its `t_zero` (plus a task's `delay`),
    // which its first thread takes as it starts; the simulated threads
    // start there (live, they begin their first iteration a little later,
    // at rt-app's barrier): where a periodic wake-up falls between the
    // ticks decides whether it preempts or waits for the next one.
    let timer_origin_us = log::timer_origin(&live.logs, &grid_threads(work));
    for task in &mut scaled.tasks {
        task.delay_us += timer_origin_us.unwrap_or(0);
    }

    progress(&format!("{}: simulated", case.name));
    let tick_phase_us = tick_phase(live.t0_us, sim.hz);
    let simulated = run_sim(
        run,
        sim,
        tick_phase_us,
        &cal.platform_spread(),
        &cal.timer_spread,
        scaled,
        live.others.clone(),
        groups,
        root,
        dir,
    )?;

    // Both sides number the threads alike (tasks in file order, instances
    // together); a mismatch would pair the wrong threads.
    let names: Vec<&str> = threads.iter().map(|t| t.name.as_str()).collect();
    if simulated.names != names {
        return Err(Error::Measurement(format!(
            "the simulator's threads {:?} are not rt-app's {names:?}",
            simulated.names
        )));
    }
    let sim_sides: Vec<Option<Side>> = (0..threads.len())
        .map(|i| {
            Some(side(
                &simulated.counters[i],
                (window.1 - window.0).as_nanos() as u64,
                &simulated.logs[i],
                window,
            ))
        })
        .collect();
    let tasks = task_rows(threads, live_sides, sim_sides);
    let last = |logs: &[Vec<LogLine>]| {
        logs.iter()
            .flatten()
            .map(|l| l.end_us)
            .max()
            .map(|us| us as f64 / 1e6)
    };
    let (live_last_s, sim_last_s) = (last(&live.logs), last(&simulated.logs));
    let diverged = diverged(live_last_s, sim_last_s, window.1.as_secs_f64());
    Ok(CaseReport {
        name: case.name.into(),
        paper: case.paper.into(),
        about: case.about.into(),
        skipped: None,
        calibration: Some(cal),
        tick_phase_us,
        timer_origin_us,
        work_scale,
        window_s: (window.0.as_secs_f64(), window.1.as_secs_f64()),
        live_window_s: live.wall.as_secs_f64(),
        others_cpu: live.others_cpu,
        steal_cpu: live.steal_cpu,
        tasks,
        live_last_s,
        sim_last_s,
        diverged,
        notes: live.notes,
        runs: 1,
        per_run: Vec::new(),
        misses: Vec::new(),
        compared: 0,
    })
}

/// Whether the runs stalled differently. A side whose threads all stopped
/// finishing iterations more than a second before the window's end
/// `end_s` stalled: every thread waits on a suspend, a condition or a
/// lock. rt-app's `resume` and `signal` wake only threads already waiting
/// (a condition variable), so a workload whose threads resume each other
/// can lose a wake-up and stop, or not, by microseconds of timing.
fn diverged(live_last: Option<f64>, sim_last: Option<f64>, end_s: f64) -> Option<String> {
    let stalled = |t: Option<f64>| t.is_none_or(|t| t < end_s - 1.0);
    let at = |t: Option<f64>| {
        t.map_or("before its first iteration".into(), |t| {
            format!("at {t:.2} s")
        })
    };
    match (stalled(live_last), stalled(sim_last)) {
        (false, false) => None,
        (true, false) => Some(format!(
            "live, every thread stopped {} (waiting on a suspend, condition or lock that was never resumed); simulated, the workload ran on: the runs took different sides of a race in the workload, so their figures are not compared",
            at(live_last)
        )),
        (false, true) => Some(format!(
            "simulated, every thread stopped {} (waiting on a suspend, condition or lock that was never resumed); live, the workload ran on: the runs took different sides of a race in the workload, so their figures are not compared",
            at(sim_last)
        )),
        (true, true) => match (live_last, sim_last) {
            (Some(l), Some(s)) if (l - s).abs() <= 0.5 => None,
            _ => Some(format!(
                "both runs stalled, live {} and simulated {}: different executions, not compared",
                at(live_last),
                at(sim_last)
            )),
        },
    }
}

/// Where the first tick after the use case's start lies, µs after it
/// (rt-app's logs give the start on CLOCK_MONOTONIC, the tick's clock);
/// without a start, half a tick, as a platform file's default.
fn tick_phase(t0_us: Option<i64>, hz: u32) -> u64 {
    t0_us.map_or(1_000_000 / u64::from(hz.max(1)) / 2, |t0| {
        corral_sim::sched::machine::tick_phase_after(t0.max(0) as u64 * 1000, hz) / 1000
    })
}

/// Which simulated thread each live thread is compared with. Instances
/// of one rt-app task are interchangeable — which hog ends up beside the
/// periodic thread is the kernel's coin toss, not something the workload
/// names — so they are paired by rank of CPU share; every other thread
/// with itself.
fn pair_instances(threads: &[Thread], live: &[Side], sim: &[Option<Side>]) -> Vec<usize> {
    let share = |s: &Option<Side>| s.as_ref().map_or(0.0, |s| s.share);
    let mut partner: Vec<usize> = (0..threads.len()).collect();
    let mut done = vec![false; threads.len()];
    for i in 0..threads.len() {
        if done[i] {
            continue;
        }
        let same: Vec<usize> = (i..threads.len())
            .filter(|&j| threads[j].task == threads[i].task)
            .collect();
        let mut by_live = same.clone();
        by_live.sort_by(|&a, &b| live[a].share.total_cmp(&live[b].share));
        let mut by_sim = same.clone();
        by_sim.sort_by(|&a, &b| share(&sim[a]).total_cmp(&share(&sim[b])));
        for (l, s) in by_live.into_iter().zip(by_sim) {
            partner[l] = s;
            done[l] = true;
        }
    }
    partner
}

/// (sim − live) / live.
fn rel(live: Option<f64>, sim: Option<f64>) -> Option<f64> {
    match (live, sim) {
        (Some(l), Some(s)) if l > 0.0 => Some((s - l) / l),
        _ => None,
    }
}

/// The figures of one side from its window's counters and its log.
fn side(c: &Counters, wall_ns: u64, log: &[LogLine], window: (Duration, Duration)) -> Side {
    let (from, to) = (window.0.as_micros() as i64, window.1.as_micros() as i64);
    let lines: Vec<&LogLine> = log
        .iter()
        .filter(|l| l.start_us >= from && l.end_us <= to)
        .collect();
    let mut wu: Vec<u64> = lines
        .iter()
        .filter(|l| l.c_period > 0 && l.slack >= 0)
        .map(|l| l.wu_lat.max(0) as u64)
        .collect();
    let mut resp: Vec<u64> = lines
        .iter()
        .filter(|l| l.c_period > 0)
        .map(|l| (l.c_period - l.slack).max(0) as u64)
        .collect();
    wu.sort_unstable();
    resp.sort_unstable();
    let pct = |v: &[u64], p: f64| (!v.is_empty()).then(|| percentile(v, p) as f64);
    // The work the window asked for: each iteration's run µs, prorated
    // by how much of the iteration lies in the window.
    let configured: f64 = log
        .iter()
        .map(|l| {
            let len = (l.end_us - l.start_us).max(1) as f64;
            let inside = (l.end_us.min(to) - l.start_us.max(from)).max(0) as f64;
            l.c_duration as f64 * (inside / len).min(1.0)
        })
        .sum();
    Side {
        share: if wall_ns == 0 {
            0.0
        } else {
            c.run as f64 / wall_ns as f64
        },
        iterations: lines.len(),
        late: lines
            .iter()
            .filter(|l| l.c_period > 0 && l.slack < 0)
            .count(),
        wakeups: wu.len(),
        wu_lat_p50_us: pct(&wu, 50.0),
        wu_lat_p99_us: pct(&wu, 99.0),
        resp_p50_us: pct(&resp, 50.0),
        resp_p99_us: pct(&resp, 99.0),
        wait_per_slice_us: (c.slices > 0).then(|| c.wait as f64 / c.slices as f64 / 1e3),
        migrations: c.migrations,
        preemptions: c.preemptions,
        work: (configured > 0.0).then(|| c.run as f64 / 1e3 / configured),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the calibration measured reaches the simulated platform: the
    /// spreads by length (µs, as the simulator reads them back), or a
    /// kept run's one spread for every length, or none.
    #[test]
    fn the_runs_and_timers_spreads_reach_the_simulated_platform() {
        let sim = SimInfo {
            kernel: "eevdf".into(),
            cpus: 2,
            capacity: 1024,
            hz: 250,
            costs: None,
            timer_slack_ns: 1,
            vcpu_pack_util: None,
            seed: 0,
        };
        let mut cal = Calibration {
            samples: 7,
            ns_per_loop_min: 14.0,
            ns_per_loop_median: 14.0,
            ns_per_loop_max: 14.0,
            used: 14,
            run_spread: vec![0.9, 1.0, 1.2],
            run_spreads: Vec::new(),
            timer_spread: Vec::new(),
        };
        let platform = |cal: &Calibration| {
            let toml = sim::platform_toml(
                &sim,
                100,
                &cal.platform_spread(),
                &cal.timer_spread,
                &[],
                "/r",
            );
            corral_sim::input::platform::parse(&toml, "platform.toml")
                .unwrap()
                .platform
        };
        let read = |cal: &Calibration| platform(cal).run_spread;
        assert!(
            platform(&cal).timer_wakeup_spread.is_empty(),
            "an older kept run"
        );
        cal.timer_spread = vec![0.61, 1.0, 1.0, 4.87654];
        assert_eq!(
            platform(&cal).timer_wakeup_spread,
            [0.61, 1.0, 1.0, 4.8765],
            "to four places"
        );
        assert_eq!(read(&cal), [(0, vec![0.9, 1.0, 1.2])], "an older kept run");
        cal.run_spreads = vec![
            RunSpread {
                median_us: 137.6,
                factors: vec![0.9, 1.0, 1.2],
            },
            RunSpread {
                median_us: 4_901.0,
                factors: vec![0.99, 1.0, 1.03],
            },
        ];
        assert_eq!(
            read(&cal),
            [
                (138_000, vec![0.9, 1.0, 1.2]),
                (4_901_000, vec![0.99, 1.0, 1.03])
            ],
            "to the nearest µs"
        );
        cal.run_spreads.truncate(1);
        assert_eq!(
            read(&cal),
            [(138_000, vec![0.9, 1.0, 1.2])],
            "one length measured: a table of one"
        );
        cal.run_spread.clear();
        cal.run_spreads.clear();
        assert!(read(&cal).is_empty(), "nothing measured: exact runs");
    }

    #[test]
    fn every_embedded_case_is_accepted_by_the_simulator() {
        for c in CASES {
            let Source::Embedded(text) = c.source else {
                continue;
            };
            let json = prepare(
                text,
                c.name,
                "/corral-validate-1",
                5,
                16,
                Path::new("/tmp/x"),
                c.groups,
            )
            .unwrap();
            let work = rtapp::parse(&json, c.name).unwrap();
            assert_eq!(work.duration_s, Some(5.0));
            for t in &work.tasks {
                let g = t.taskgroup.as_deref().unwrap();
                assert!(g.starts_with("/corral-validate-1"), "{g}");
            }
        }
    }

    #[test]
    fn prepare_numbers_repeated_keys_in_order_and_drops_log_size() {
        let text = r#"{ "tasks": { "a": { "loop": -1, "run": 1, "sleep": 2, "run": 3, "run1": 4, "run": 5 } },
            "global": { "log_size": "file", "calibration": "CPU0", "duration": 6 } }"#;
        let out = prepare(text, "t", "/r", 9, 17, Path::new("/logs"), &[]).unwrap();
        let v = json::parse(&out).unwrap();
        let a = v.as_object().unwrap()[0].1.as_object().unwrap()[0]
            .1
            .as_object()
            .unwrap();
        let keys: Vec<&str> = a.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            ["loop", "run", "sleep", "run2", "run1", "run3", "taskgroup"]
        );
        let values: Vec<i64> = a[1..6].iter().map(|(_, v)| v.as_i64().unwrap()).collect();
        assert_eq!(values, [1, 2, 3, 4, 5]);
        assert_eq!(a[6].1.as_str(), Some("/r"));
        // The simulator reads the same sequence of events as before.
        let w = rtapp::parse(&out, "t").unwrap();
        let w0 = rtapp::parse(text, "t").unwrap();
        assert_eq!(
            format!("{:?}", w.tasks[0].phases),
            format!("{:?}", w0.tasks[0].phases)
        );
        let g = v.as_object().unwrap()[1].1.as_object().unwrap();
        assert!(!g.iter().any(|(k, _)| k == "log_size"));
        let get = |k: &str| g.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        assert_eq!(get("duration").unwrap().as_i64(), Some(9));
        assert_eq!(get("calibration").unwrap().as_i64(), Some(17));
        assert_eq!(get("logdir").unwrap().as_str(), Some("/logs"));
    }

    #[test]
    fn the_tick_phase_is_the_distance_to_the_next_multiple_of_the_tick() {
        // HZ 250: ticks at multiples of 4000 µs.
        assert_eq!(tick_phase(Some(8_000), 250), 0);
        assert_eq!(tick_phase(Some(8_001), 250), 3_999);
        assert_eq!(tick_phase(Some(11_500), 250), 500);
        // No start known: half a tick, a platform file's default.
        assert_eq!(tick_phase(None, 250), 2_000);
        assert_eq!(tick_phase(Some(1_001), 1000), 999);
    }

    #[test]
    fn instances_pair_by_rank_of_share_and_other_threads_with_themselves() {
        let th = |task: &str| Thread {
            task: task.into(),
            name: String::new(),
            group: String::new(),
        };
        let threads = [th("periodic"), th("hog"), th("hog"), th("hog")];
        let side = |share: f64| Side {
            share,
            ..Default::default()
        };
        let live = [side(0.09), side(0.99), side(0.90), side(0.95)];
        let sim = [0.07, 0.93, 0.97, 0.96].map(|s| Some(side(s)));
        // Live, hog-0 > hog-2 > hog-1; simulated, hog-1 > hog-2 > hog-0.
        assert_eq!(pair_instances(&threads, &live, &sim), [0, 2, 1, 3]);
    }

    #[test]
    fn only_threads_whose_phases_end_with_a_timer_of_their_own_show_the_grid() {
        let text = r#"{ "tasks": {
            "own": { "run": 30, "timer": { "ref": "unique", "period": 10000 } },
            "delayed": { "instance": 2, "delay": 500, "run": 30,
                "timer": { "ref": "unique", "period": 10000 } },
            "alone": { "run": 30, "timer": { "ref": "t1", "period": 10000 } },
            "shared": { "instance": 2, "run": 30, "timer": { "ref": "t2", "period": 10000 } },
            "after": { "timer": { "ref": "unique", "period": 10000 }, "run": 2000 },
            "untimed": { "run": 100000 },
            "phased": { "phases": {
                "a": { "run": 30, "timer": { "ref": "unique", "period": 10000 } },
                "b": { "loop": 3, "run": 50 } } } } }"#;
        let work = rtapp::parse(text, "t").unwrap();
        assert_eq!(
            grid_threads(&work),
            [
                Some(0),
                Some(500),
                Some(500),
                Some(0),
                None,
                None,
                None,
                None,
                None
            ]
        );
    }

    #[test]
    fn a_run_costs_in_the_simulation_what_it_cost_live_when_measured_enough() {
        let text = r#"{ "tasks": {
            "periodic": { "run": 30, "timer": { "ref": "t", "period": 10000 } },
            "hog": { "instance": 2, "run": 100000 },
            "once": { "run": 5000000 } } }"#;
        let work = rtapp::parse(text, "t").unwrap();
        let side = |iterations, work| Side {
            iterations,
            work: Some(work),
            ..Default::default()
        };
        // 30 µs of run cost 74 µs of CPU live (rt-app's own work each
        // period); the hogs' mean; one iteration says nothing.
        let live = [side(874, 2.47), side(87, 0.9), side(86, 1.0), side(1, 3.0)];
        let k = work_scale(&work, &live);
        let names: Vec<&str> = k.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["periodic", "hog", "once"]);
        assert!((k[0].1 - 2.47).abs() < 1e-9, "{k:?}");
        assert!((k[1].1 - 0.95).abs() < 1e-9, "{k:?}");
        assert_eq!(k[2].1, 1.0);
    }

    #[test]
    fn runs_that_stall_differently_are_not_compared() {
        assert_eq!(diverged(Some(9.7), Some(9.6), 9.75), None);
        assert!(diverged(Some(1.46), Some(9.7), 9.75)
            .unwrap()
            .starts_with("live, every thread stopped at 1.46 s"));
        assert!(diverged(Some(9.7), None, 9.75)
            .unwrap()
            .starts_with("simulated, every thread stopped before"));
        assert_eq!(diverged(Some(2.0), Some(2.2), 9.75), None);
        assert!(diverged(Some(2.0), Some(5.0), 9.75).is_some());
    }

    #[test]
    fn a_taskgroup_without_shares_is_refused() {
        let text = r#"{ "tasks": { "a": { "taskgroup": "/x", "run": 1 } } }"#;
        let e = prepare(text, "t", "/r", 9, 17, Path::new("/l"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t: task \"a\": taskgroup \"/x\""), "{e}");
    }

    #[test]
    fn logs_from_both_sides_parse_to_the_same_window_times() {
        let live = "# Policy : SCHED_OTHER priority : 0\n#idx perf run period start end rel_st slack c_duration c_period wu_lat\n   0 62500 1360 10086 39619892239 39619902326 1500000 8626 1000 10000 96\n";
        let sim = "# Policy : SCHED_OTHER priority : 0\n#idx perf run period start end rel_st slack c_duration c_period wu_lat\n   0 0 1000 10086 1500000 1510086 12 8626 1000 10000 96\n";
        let a = parse_log(live, Path::new("live"), true).unwrap();
        let b = parse_log(sim, Path::new("sim"), false).unwrap();
        let relative = |v: &[LogLine]| {
            v.iter()
                .map(|l| LogLine {
                    abs_start_us: 0,
                    ..*l
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(relative(&a), relative(&b));
        assert_eq!(a[0].abs_start_us - a[0].start_us, 39619892239 - 1500000);
        let c = Counters {
            run: 1_000_000,
            slices: 1,
            ..Default::default()
        };
        let s = side(
            &c,
            10_000_000,
            &a,
            (Duration::from_secs(1), Duration::from_secs(2)),
        );
        assert_eq!(s.wakeups, 1);
        assert_eq!(s.wu_lat_p50_us, Some(96.0));
        assert_eq!(s.resp_p50_us, Some(1374.0));
        assert_eq!(s.share, 0.1);
    }
}
