//! `corral lab real`: a real workload, the kernel alone against corral.
//!
//! Each variant compiles this workspace's simulator (`cargo build -j J
//! --offline --locked -p corral-sim`, debug, into a fresh target
//! directory) and measures its wall time, while two probes run for the
//! whole build: cyclictest (one SCHED_OTHER thread waking every 10 ms; its
//! histogram gives each wake-up's latency to the µs) and a 60 Hz frame loop
//! (`corral lab work frame`: 4 ms of CPU per 16.667 ms frame, a frame
//! missed when its work ends after its deadline). With `--stress`,
//! `stress-ng --cpu N --cpu-ops K` then runs for N = 1 … 2 × the online
//! CPUs, K calibrated once so that one worker takes about three seconds.
//!
//! The corral variant runs the daemon as a user does: `corral run
//! --scope-pid <this process>` (see [`crate::daemon_process`]), so the
//! experiment's own process is the scope's root and an ancestor of the
//! daemon, as a user's shell is. Every workload runs in the experiment's
//! cgroup; runs alternate the order of the variants (baseline first in odd
//! runs, corral first in even ones), and the report gives the medians over
//! runs, corral over baseline, and whether each goal was met. With
//! `--bounds` each run then builds twice more with the kernel alone and
//! cyclictest at nice -20 and at SCHED_FIFO 1 ([`Probe`]): a goal on
//! cyclictest that even these miss is out of any placement's reach here.
//!
//! XXX: cyclictest (rt-tests 2.40) pins its measuring thread to one CPU
//! itself (`Cpus_allowed_list: 0` with no `-a`); corral leaves a thread
//! whose program narrowed its affinity unmanaged, so the p99 it reports
//! is an unmanaged thread's beside corral's groups, while the thread corral
//! finds latency-critical is cyclictest's main thread (it too wakes every
//! 10 ms). Unmanaged, it waits longer beside corral than without it
//! (5 runs: p99 1.2x, max 2.9x): traced (bpftrace on sched_wakeup and
//! sched_switch, each entity's vruntime and deadline read through BTF),
//! its worst waits (~4 ms) follow wake-ups onto an idle CPU where the
//! frame loop woke too; the frame loop, latency-critical, runs its 4 ms
//! first: corral's top group enters the root queue with the latency
//! group's 0.3 ms slice (the kernel carries a queue's shortest slice up
//! to its group entity) against the probe group's 1.4 ms. Managed (unpinned before the daemon started, so in the
//! latency group), it fared no better here: p99 3.1 and 6.9 ms against
//! the baseline's 4.0 and 3.5 ms; traced (sched_wakeup/sched_switch), its
//! long waits run behind the shared group's rustc with need-resched set
//! at the wake-up, most ending at a tick (HZ 250). SCHED_FIFO cyclictest
//! beside the same build: p99 152 us, max 2.7 ms, the floor this VM
//! allows.

use crate::daemon_process::{tail, DaemonProcess};
use crate::error::{Error, Result};
use crate::groups::{parse_output, LabGroups};
use crate::work::FrameResult;
use corral_daemon::api::Status;
use corral_linux::placer::Layout;
use corral_linux::HostPaths;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The frame loop: 60 Hz, 4 ms of CPU per frame.
pub const FRAME_PERIOD_US: u64 = 16_667;
pub const FRAME_WORK_US: u64 = 4_000;
/// cyclictest's interval and the histogram's range, µs.
pub const CYCLICTEST_INTERVAL_US: u64 = 10_000;
pub const CYCLICTEST_HISTOGRAM_US: u64 = 20_000;
/// What stress-ng's one-worker run is calibrated to take.
pub const STRESS_TARGET: Duration = Duration::from_secs(3);

/// The goals: corral over baseline for the build and stress-ng, the corral
/// variant's own figures for the probes.
pub const GOAL_BUILD_RATIO: f64 = 1.02;
pub const GOAL_CYCLICTEST_P99_US: f64 = 500.0;
pub const GOAL_CYCLICTEST_MAX_US: f64 = 2000.0;
pub const GOAL_FRAMES_MISSED_PCT: f64 = 0.5;
pub const GOAL_STRESS_RATIO: f64 = 1.02;

/// How cyclictest's measuring thread is scheduled in a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// SCHED_OTHER at nice 0, as a user starts it (baseline, corral).
    Other,
    /// SCHED_OTHER at nice -20: the largest weight a fair-class thread can
    /// have (88761 against a nice-0 thread's 1024), the kernel alone.
    Nice,
    /// SCHED_FIFO priority 1, the kernel alone: it preempts every fair
    /// thread at its wake-up, so no placement of a SCHED_OTHER thread can
    /// do better; what is left is the kernel's and the machine's own
    /// latency (non-preemptible sections, the hypervisor).
    Fifo,
}

impl Probe {
    /// The variant's name in the report.
    pub fn variant(self) -> &'static str {
        match self {
            Probe::Other => "baseline",
            Probe::Nice => "nice-20",
            Probe::Fifo => "fifo",
        }
    }
}

/// The variants [`Options::bounds`] adds, in the order they run (after
/// baseline and corral in each run).
pub const BOUNDS: [Probe; 2] = [Probe::Nice, Probe::Fifo];

/// How often the daemon's status is read during the build.
const STATUS_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct Options {
    pub runs: u32,
    /// cargo's `-j`.
    pub jobs: u32,
    pub stress: bool,
    /// Also run the kernel alone with cyclictest at the strongest
    /// per-thread levers ([`Probe::Nice`], [`Probe::Fifo`]): the bounds of
    /// what any placement could give it beside the same build.
    pub bounds: bool,
    /// The daemon's `--interval` (its configured default when `None`).
    pub interval_ms: Option<u64>,
    /// The daemon's configuration file (default: its built-in one).
    pub config: Option<PathBuf>,
    /// Keep the logs, histograms and status snapshots here.
    pub keep: Option<PathBuf>,
    /// The workspace to build.
    pub source: PathBuf,
    pub cargo: PathBuf,
    /// Set (by a signal handler) to stop early and clean up.
    pub stop: Arc<AtomicBool>,
}

/// This workspace, as it was when corral was compiled.
pub fn default_source() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.canonicalize().unwrap_or(dir)
}

/// cargo: `$CARGO` (set under `cargo run`), else the first on `PATH`, else
/// rustup's `~/.cargo/bin/cargo`.
pub fn find_cargo() -> Result<PathBuf> {
    let from_env = std::env::var_os("CARGO").map(PathBuf::from);
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("cargo"));
    let rustup = std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo/bin/cargo"));
    from_env
        .into_iter()
        .chain(on_path)
        .chain(rustup)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::Environment(
                "cannot find cargo: put it on PATH (scripts/run does) or set CARGO".into(),
            )
        })
}

/// cyclictest's figures, from its histogram.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cyclictest {
    /// Wake-ups measured (in the histogram and beyond it).
    pub samples: u64,
    /// Wake-ups later than the histogram's range.
    pub overflows: u64,
    /// The histogram's range: a percentile among the overflows is
    /// reported as this (a lower bound).
    pub histogram_us: u64,
    pub min_us: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// Parses cyclictest's histogram (`-h US`, `--histfile`): one line per µs
/// (`latency count…`, a count per thread), then `# Total:`, `# Min
/// Latencies:`, `# Max Latencies:` and `# Histogram Overflows:` with one
/// value per thread. Errors name `file`, the histogram's.
pub fn parse_cyclictest(text: &str, file: &Path) -> Result<Cyclictest> {
    let mut buckets: Vec<(u64, u64)> = Vec::new();
    let mut total = None;
    let mut min = None;
    let mut max = None;
    let mut overflows = None;
    let bad = |why: String| Error::Parse {
        what: file.display().to_string(),
        why,
    };
    let numbers = |s: &str, line: usize| -> Result<Vec<u64>> {
        s.split_whitespace()
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| bad(format!("line {line}: {v:?} is not a number")))
            })
            .collect()
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let Some((key, values)) = rest.split_once(':') else {
                continue;
            };
            let slot = match key.trim() {
                "Total" => &mut total,
                "Min Latencies" => &mut min,
                "Max Latencies" => &mut max,
                "Histogram Overflows" => &mut overflows,
                _ => continue,
            };
            let v = numbers(values, n)?;
            if v.is_empty() {
                return Err(bad(format!("line {n}: {:?} has no value", key.trim())));
            }
            *slot = Some(v);
            continue;
        }
        let v = numbers(line, n)?;
        if v.len() < 2 {
            return Err(bad(format!(
                "line {n}: expected `latency count…`, found {line:?}"
            )));
        }
        buckets.push((v[0], v[1..].iter().sum()));
    }
    let (Some(total), Some(min), Some(max)) = (total, min, max) else {
        return Err(bad("no `# Total`, `# Min Latencies` and `# Max Latencies` lines: not cyclictest's histogram".into()));
    };
    let in_histogram: u64 = buckets.iter().map(|b| b.1).sum();
    if total.iter().sum::<u64>() != in_histogram {
        return Err(bad(format!(
            "the histogram holds {in_histogram} wake-ups but `# Total` says {}",
            total.iter().sum::<u64>()
        )));
    }
    let overflows: u64 = overflows.unwrap_or_default().iter().sum();
    let samples = in_histogram + overflows;
    if samples == 0 {
        return Err(bad("cyclictest measured no wake-up".into()));
    }
    let histogram_us = buckets.iter().map(|b| b.0 + 1).max().unwrap_or(0);
    let percentile = |p: f64| {
        let rank = ((p / 100.0) * samples as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for &(us, count) in &buckets {
            seen += count;
            if seen >= rank {
                return us;
            }
        }
        histogram_us
    };
    Ok(Cyclictest {
        samples,
        overflows,
        histogram_us,
        min_us: min.iter().copied().min().unwrap_or(0),
        p50_us: percentile(50.0),
        p99_us: percentile(99.0),
        max_us: max.iter().copied().max().unwrap_or(0),
    })
}

/// One stress-ng run.
#[derive(Debug, Clone, Serialize)]
pub struct StressRun {
    pub workers: u32,
    pub wall_s: f64,
}

/// What the daemon said about itself during the build (polled every second).
#[derive(Debug, Clone, Default, Serialize)]
pub struct DaemonSeen {
    pub pid: u32,
    pub polls: u32,
    /// The most threads it managed at once, and placed in a group of its.
    pub max_managed: usize,
    pub max_placed: usize,
    /// The most threads of each class at once.
    pub classes: BTreeMap<String, usize>,
    /// Every group it had.
    pub groups: BTreeSet<String>,
    /// Errors it reported (the first few).
    pub errors: Vec<String>,
}

impl DaemonSeen {
    fn record(&mut self, s: &Status) {
        self.polls += 1;
        self.max_managed = self.max_managed.max(s.threads.len());
        let placed = s.threads.iter().filter(|t| t.group.is_some()).count();
        self.max_placed = self.max_placed.max(placed);
        for (class, &n) in &s.counts {
            let m = self.classes.entry(class.clone()).or_default();
            *m = (*m).max(n);
        }
        self.groups.extend(s.groups.iter().map(|g| g.name.clone()));
        for e in &s.errors {
            if self.errors.len() < 5 && !self.errors.contains(e) {
                self.errors.push(e.clone());
            }
        }
    }
}

/// One variant of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    pub name: String,
    pub build_s: f64,
    pub cyclictest: Cyclictest,
    pub frames: FrameResult,
    pub stress: Vec<StressRun>,
    /// The corral variant's daemon.
    pub daemon: Option<DaemonSeen>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub run: u32,
    /// In the order they ran.
    pub variants: Vec<Variant>,
}

/// A median figure of both variants, and its goal.
#[derive(Debug, Clone, Serialize)]
pub struct Goal {
    pub measure: String,
    pub baseline: f64,
    pub corral: f64,
    /// Corral's median over the baseline's.
    pub ratio: f64,
    /// The median over runs of corral's figure over the baseline's in
    /// the same run: the two ran back to back, so a run's ratio is free
    /// of the drift between runs (builds here took 15 to 18.6 s over one
    /// experiment), which the ratio of medians is not. Shown beside it;
    /// the goals keep the ratio of medians.
    pub paired_ratio: f64,
    /// The kernel alone with cyclictest at the strongest levers (`--bounds`:
    /// "nice-20", "fifo"), medians, for cyclictest's rows.
    pub bounds: BTreeMap<String, f64>,
    /// The goal, in words (`None`: shown for context).
    pub goal: Option<String>,
    pub met: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub build: String,
    pub source: PathBuf,
    pub online_cpus: u32,
    pub frame_period_us: u64,
    pub frame_work_us: u64,
    pub cyclictest_interval_us: u64,
    /// stress-ng's `--cpu-ops`, when `--stress`.
    pub stress_ops: Option<u64>,
    pub interval_ms: Option<u64>,
    pub runs: Vec<Run>,
    /// Medians over runs.
    pub goals: Vec<Goal>,
    pub warnings: Vec<String>,
    /// Where logs, histograms and status snapshots were kept.
    pub kept: Option<PathBuf>,
}

/// The experiment's cgroup, processes and files; all of it goes when dropped.
struct Lab {
    groups: LabGroups,
    work: PathBuf,
    /// Leaders of process groups started here (cargo, stress-ng) that
    /// have not been reaped: while one is not, its PID is its group's and
    /// nobody else's, and the whole group is killed on the way out, so no
    /// compiler or stress worker outlives the experiment.
    leaders: Vec<u32>,
    /// Every process started here.
    pids: Vec<u32>,
    /// A build's target directory, removed afterwards.
    target: Option<PathBuf>,
}

impl Lab {
    /// Starts `cmd` in the work group with the streams it was given.
    fn start(&mut self, cmd: Command) -> Result<u32> {
        let pid = self.groups.start(&self.work, cmd)?;
        self.pids.push(pid);
        Ok(pid)
    }

    /// Starts `cmd` in the work group, its stdout piped.
    fn spawn(&mut self, cmd: Command) -> Result<u32> {
        let pid = self.groups.spawn(&self.work, cmd)?;
        self.pids.push(pid);
        Ok(pid)
    }

    /// Starts `cmd` in the work group, as the leader of a process group of
    /// its own.
    fn start_tree(&mut self, mut cmd: Command) -> Result<u32> {
        cmd.process_group(0);
        let pid = self.start(cmd)?;
        self.leaders.push(pid);
        Ok(pid)
    }

    /// Waits for a process group's leader, calling `meanwhile` between
    /// looks; its exit status and the wall time since `t0`. When `stop` is
    /// set first, the group is left running for [`Lab`]'s drop to kill.
    fn wait_tree(
        &mut self,
        pid: u32,
        t0: Instant,
        stop: &AtomicBool,
        mut meanwhile: impl FnMut() -> Result<()>,
    ) -> Result<(std::process::ExitStatus, f64)> {
        loop {
            if let Some(s) = self.groups.try_wait(pid)? {
                let wall = t0.elapsed().as_secs_f64();
                self.leaders.retain(|&p| p != pid);
                return Ok((s, wall));
            }
            if stop.load(Ordering::SeqCst) {
                return Err(Error::Interrupted);
            }
            meanwhile()?;
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn kill_trees(&mut self) {
        for pid in self.leaders.drain(..) {
            if let Some(pgid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
            }
            self.groups.kill(pid);
        }
    }

    fn remove_target(&mut self) {
        if let Some(t) = self.target.take() {
            if let Err(e) = std::fs::remove_dir_all(&t) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    eprintln!("corral lab: could not remove {}: {e}", t.display());
                }
            }
        }
    }

    /// Waits (a few seconds at most) until no process is left in the work
    /// group, so that it can be removed.
    fn wait_empty(&self) {
        let procs = self.work.join("cgroup.procs");
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            match std::fs::read_to_string(&procs) {
                Ok(s) if !s.trim().is_empty() => std::thread::sleep(Duration::from_millis(20)),
                _ => return,
            }
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.kill_trees();
        for pid in std::mem::take(&mut self.pids) {
            // Nothing for one already reaped.
            self.groups.kill(pid);
        }
        self.wait_empty();
        self.groups.cleanup();
        self.remove_target();
    }
}

/// Runs the experiment: `runs` × (baseline, corral), alternating the order.
pub fn run(
    exe: &Path,
    paths: &HostPaths,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    if !o.source.join("Cargo.lock").is_file() || !o.source.join("crates/sim").is_dir() {
        return Err(Error::Invalid(format!(
            "{} is not corral's workspace (no Cargo.lock or crates/sim): give --source DIR",
            o.source.display()
        )));
    }
    let online = corral_linux::sysfs::read_topology(paths)
        .map_err(Error::host("cannot read the CPUs"))?
        .online
        .len();
    let (dir, temporary) = match &o.keep {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("corral-lab-real-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    let mut groups = LabGroups::for_experiment(layout)?;
    let work = groups.group("work", 1024)?;
    for dir in [groups.root(), work.as_path()] {
        allow_rt_check(dir)?;
    }
    let mut lab = Lab {
        groups,
        work,
        leaders: Vec::new(),
        pids: Vec::new(),
        target: None,
    };
    let result = runs(exe, o, online, &dir, &mut lab, &mut progress);
    drop(lab);
    match result {
        Ok(mut r) => {
            if temporary {
                let _ = std::fs::remove_dir_all(&dir);
            } else {
                r.kept = Some(dir);
            }
            Ok(r)
        }
        Err(e) => Err(e.logs_kept(dir)),
    }
}

fn runs(
    exe: &Path,
    o: &Options,
    online: u32,
    dir: &Path,
    lab: &mut Lab,
    progress: &mut impl FnMut(&str),
) -> Result<Report> {
    let stress_ops = if o.stress {
        progress("stress-ng: calibrating --cpu-ops for one worker (kernel alone)");
        let ops = calibrate_stress(lab, o, dir)?;
        progress(&format!(
            "stress-ng: --cpu-ops {ops} (about {:.0} s for one worker)",
            STRESS_TARGET.as_secs_f64()
        ));
        Some(ops)
    } else {
        None
    };
    let setup = Setup {
        exe,
        o,
        online,
        stress_ops,
        dir,
    };
    let mut report = Report {
        build: build_command(o.jobs),
        source: o.source.clone(),
        online_cpus: online,
        frame_period_us: FRAME_PERIOD_US,
        frame_work_us: FRAME_WORK_US,
        cyclictest_interval_us: CYCLICTEST_INTERVAL_US,
        stress_ops,
        interval_ms: o.interval_ms,
        runs: Vec::new(),
        goals: Vec::new(),
        warnings: Vec::new(),
        kept: None,
    };
    for run in 1..=o.runs {
        let order = if run % 2 == 1 {
            [false, true]
        } else {
            [true, false]
        };
        let mut variants = Vec::new();
        for with_corral in order {
            let name = if with_corral { "corral" } else { "baseline" };
            progress(&format!("run {run} of {}: {name}", o.runs));
            let v = variant(&setup, lab, run, with_corral, progress)?;
            if let Some(d) = &v.daemon {
                if d.max_managed == 0 {
                    let w = format!(
                        "run {run}: the daemon (corral run --scope-pid {}) managed no thread in {} status polls: the corral variant ran unmanaged",
                        std::process::id(),
                        d.polls
                    );
                    progress(&format!("WARNING: {w}"));
                    report.warnings.push(w);
                }
            }
            variants.push(v);
        }
        if o.bounds {
            for probe in BOUNDS {
                progress(&format!("run {run} of {}: {}", o.runs, probe.variant()));
                variants.push(variant_with(&setup, lab, run, None, probe, progress)?);
            }
        }
        report.runs.push(Run { run, variants });
    }
    report.goals = goals(&report.runs, online);
    Ok(report)
}

/// With RT group scheduling (cgroup v1), a new group may run no real-time
/// task at all, and cyclictest refuses to start there: before measuring
/// (even with `--policy=other`) it checks its privileges by switching
/// itself to SCHED_FIFO priority 1 and back. The experiment's own groups
/// get [`RT_RUNTIME_US`] per period for that switch.
fn allow_rt_check(dir: &Path) -> Result<()> {
    let file = dir.join("cpu.rt_runtime_us");
    if !file.exists() {
        return Ok(());
    }
    std::fs::write(&file, RT_RUNTIME_US.to_string()).map_err(|e| {
        Error::Environment(format!(
            "{}: {e} (cyclictest needs a little real-time time in the experiment's group)",
            file.display()
        ))
    })
}

/// What [`allow_rt_check`] gives each of the experiment's groups, µs per period.
const RT_RUNTIME_US: u64 = 10_000;

fn build_command(jobs: u32) -> String {
    format!("cargo build -j {jobs} --offline --locked -p corral-sim")
}

fn stress_cmd(workers: u32, ops: u64, log: &Path) -> Result<Command> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(Error::io(log))?;
    let mut c = Command::new("stress-ng");
    c.args(["--cpu", &workers.to_string(), "--cpu-ops", &ops.to_string()])
        .stdout(file.try_clone().map_err(Error::io(log))?)
        .stderr(file);
    Ok(c)
}

/// One stress-ng run to its end; its wall time, s.
fn stress_once(lab: &mut Lab, o: &Options, workers: u32, ops: u64, log: &Path) -> Result<f64> {
    let t0 = Instant::now();
    let pid = lab
        .start_tree(stress_cmd(workers, ops, log)?)
        .map_err(|e| not_installed(e, "stress-ng (is it installed?)"))?;
    let (status, wall) = lab.wait_tree(pid, t0, &o.stop, || Ok(()))?;
    if !status.success() {
        return Err(Error::Command {
            program: format!("stress-ng --cpu {workers} --cpu-ops {ops}"),
            why: format!(
                "failed ({status}); its log, {}:\n{}",
                log.display(),
                tail(log, 10)
            ),
        });
    }
    Ok(wall)
}

/// A program that could not start because it is not there is a tool this
/// machine lacks: `what` names it and says where it comes from.
fn not_installed(e: Error, what: &str) -> Error {
    match e {
        Error::Spawn { error, .. } if error.kind() == std::io::ErrorKind::NotFound => {
            Error::Environment(format!("cannot start {what}: {error}"))
        }
        e => e,
    }
}

/// `--cpu-ops` for one worker to take about [`STRESS_TARGET`], measured
/// with the kernel alone (ops double until a run takes half a second).
fn calibrate_stress(lab: &mut Lab, o: &Options, dir: &Path) -> Result<u64> {
    let log = dir.join("stress-calibration.log");
    let mut ops = 64u64;
    loop {
        let wall = stress_once(lab, o, 1, ops, &log)?;
        if wall >= 0.5 {
            return Ok(((ops as f64 * STRESS_TARGET.as_secs_f64() / wall).round() as u64).max(1));
        }
        ops *= 2;
    }
}

/// cyclictest and the frame loop, running beside a build.
struct Probes {
    cyclictest: u32,
    frame: u32,
    hist: PathBuf,
    log: PathBuf,
}

impl Probes {
    /// Starts both in the work group, cyclictest scheduled as `probe`;
    /// `file` names the files they write.
    fn start(
        lab: &mut Lab,
        exe: &Path,
        probe: Probe,
        file: &dyn Fn(&str) -> PathBuf,
    ) -> Result<Probes> {
        let (hist, log) = (file("cyclictest.hist"), file("cyclictest.log"));
        let mut ct = Command::new("cyclictest");
        match probe {
            Probe::Other | Probe::Nice => ct.arg("--policy=other"),
            Probe::Fifo => ct.args(["--policy=fifo", "-p", "1"]),
        };
        if probe == Probe::Nice {
            // Inherited by the measuring thread cyclictest starts.
            // SAFETY: setpriority is async-signal-safe; nothing else runs
            // between fork and exec.
            unsafe {
                ct.pre_exec(|| {
                    rustix::process::setpriority_process(None, -20).map_err(std::io::Error::from)
                })
            };
        }
        ct.args(["-q", "--default-system"])
            .arg(format!("-i{CYCLICTEST_INTERVAL_US}"))
            .arg(format!("-h{CYCLICTEST_HISTOGRAM_US}"))
            .arg(format!("--histfile={}", hist.display()))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).map_err(Error::io(&log))?);
        let cyclictest = lab
            .start(ct)
            .map_err(|e| not_installed(e, "cyclictest (is rt-tests installed?)"))?;
        let mut c = Command::new(exe);
        c.args(["lab", "work", "frame"])
            .args(["--period-us", &FRAME_PERIOD_US.to_string()])
            .args(["--work-us", &FRAME_WORK_US.to_string()]);
        let frame = lab.spawn(c)?;
        Ok(Probes {
            cyclictest,
            frame,
            hist,
            log,
        })
    }

    /// Stops both (SIGINT to cyclictest, which then writes its histogram;
    /// SIGTERM to the frame loop, which prints its figures) and reads them.
    fn finish(self, lab: &mut Lab) -> Result<(Cyclictest, FrameResult)> {
        use rustix::process::Signal;
        lab.groups
            .signal(self.cyclictest, Signal::INT)
            .map_err(|e| e.within("cannot stop cyclictest"))?;
        lab.groups
            .signal(self.frame, Signal::TERM)
            .map_err(|e| e.within("cannot stop the frame loop"))?;
        lab.groups
            .wait_output(self.cyclictest)
            .map_err(|e| Error::Command {
                program: "cyclictest".into(),
                why: format!(
                    "did not end cleanly ({e}); its log, {}:\n{}",
                    self.log.display(),
                    tail(&self.log, 10)
                ),
            })?;
        let out = lab
            .groups
            .wait_output(self.frame)
            .map_err(|e| e.within("the frame loop"))?;
        let frames: FrameResult = parse_output(&out)?;
        let text = std::fs::read_to_string(&self.hist).map_err(Error::io(&self.hist))?;
        let cyclictest = parse_cyclictest(&text, &self.hist)?;
        Ok((cyclictest, frames))
    }
}

/// The build, into a fresh target directory removed afterwards; its wall
/// time, s. Meanwhile the daemon, if any, is asked for its status every
/// [`STATUS_EVERY`]: what it managed goes into `seen`, its busiest status
/// into `busiest`.
fn build(
    lab: &mut Lab,
    o: &Options,
    target: &Path,
    log: &Path,
    daemon: Option<&DaemonProcess>,
    seen: &mut DaemonSeen,
    busiest: &mut Option<Status>,
) -> Result<f64> {
    if target.exists() {
        std::fs::remove_dir_all(target).map_err(Error::io(target))?;
    }
    lab.target = Some(target.to_path_buf());
    let mut cargo = Command::new(&o.cargo);
    cargo
        .args(["build", "-j", &o.jobs.to_string()])
        .args(["--offline", "--locked", "-p", "corral-sim"])
        .current_dir(&o.source)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_TERM_COLOR", "never")
        .env("CARGO_TERM_PROGRESS_WHEN", "never")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).map_err(Error::io(log))?);
    let t0 = Instant::now();
    let pid = lab.start_tree(cargo)?;
    let mut next_poll = t0 + STATUS_EVERY / 2;
    let (status, wall) = lab.wait_tree(pid, t0, &o.stop, || {
        let Some(d) = daemon else {
            return Ok(());
        };
        if Instant::now() < next_poll {
            return Ok(());
        }
        next_poll += STATUS_EVERY;
        let s = d.status().map_err(|e| {
            Error::Daemon(format!(
                "the daemon stopped answering during the build ({e}); its log, {}:\n{}",
                d.log().display(),
                tail(d.log(), 10)
            ))
        })?;
        seen.record(&s);
        if busiest
            .as_ref()
            .is_none_or(|b| s.threads.len() > b.threads.len())
        {
            *busiest = Some(s);
        }
        Ok(())
    })?;
    lab.remove_target();
    if !status.success() {
        return Err(Error::Command {
            program: build_command(o.jobs),
            why: format!(
                "failed ({status}) in {}: with --offline every dependency in Cargo.lock must already be in ~/.cargo/registry (run scripts/setup and one build with network access first); the last lines of its log, {}:\n{}",
                o.source.display(),
                log.display(),
                tail(log, 15)
            ),
        });
    }
    Ok(wall)
}

fn write_json(path: &Path, v: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Error::io(path)(e.into()))?;
    std::fs::write(path, text + "\n").map_err(Error::io(path))
}

/// What every variant runs with.
struct Setup<'a> {
    exe: &'a Path,
    o: &'a Options,
    online: u32,
    stress_ops: Option<u64>,
    /// Where logs and figures go.
    dir: &'a Path,
}

/// One variant: the daemon if `with_corral`, the build with the probes,
/// then stress-ng if asked.
fn variant(
    setup: &Setup,
    lab: &mut Lab,
    run: u32,
    with_corral: bool,
    progress: &mut impl FnMut(&str),
) -> Result<Variant> {
    let name = with_corral.then_some("corral");
    variant_with(setup, lab, run, name, Probe::Other, progress)
}

/// One variant named `name` (the probe's when `None`): the daemon if
/// named "corral", the build with the probes (cyclictest as `probe`),
/// then stress-ng if asked (not for the bounds).
fn variant_with(
    setup: &Setup,
    lab: &mut Lab,
    run: u32,
    name: Option<&str>,
    probe: Probe,
    progress: &mut impl FnMut(&str),
) -> Result<Variant> {
    let Setup {
        exe,
        o,
        online,
        stress_ops,
        dir,
    } = *setup;
    let me = std::process::id();
    let with_corral = name == Some("corral");
    let name = name.unwrap_or(probe.variant());
    let file = |what: &str| dir.join(format!("run{run}-{name}-{what}"));
    let daemon = if with_corral {
        let socket = std::env::temp_dir().join(format!("corral-lab-real-{me}.sock"));
        let log = file("daemon.log");
        let d = DaemonProcess::start(
            exe,
            me,
            &socket,
            o.interval_ms,
            o.config.as_deref(),
            &log,
            &o.stop,
        )?;
        progress(&format!(
            "corral run --scope-pid {me} (PID {}) answers on {}",
            d.pid().unwrap_or_default(),
            socket.display()
        ));
        Some(d)
    } else {
        None
    };

    let target = std::env::temp_dir().join(format!("corral-lab-real-{me}-target-{run}-{name}"));
    progress(&format!(
        "{name}: {} into a fresh {}, with cyclictest and the frame loop",
        build_command(o.jobs),
        target.display()
    ));
    let probes = Probes::start(lab, exe, probe, &file)?;
    let mut seen = DaemonSeen {
        pid: daemon
            .as_ref()
            .and_then(DaemonProcess::pid)
            .unwrap_or_default(),
        ..Default::default()
    };
    let mut busiest = None;
    let build_s = build(
        lab,
        o,
        &target,
        &file("cargo.log"),
        daemon.as_ref(),
        &mut seen,
        &mut busiest,
    )?;
    let (cyclictest, frames) = probes.finish(lab)?;
    write_json(&file("frames.json"), &frames)?;
    if let Some(b) = &busiest {
        write_json(&file("status.json"), b)?;
    }
    let seen = daemon.is_some().then_some(seen);
    progress(&format!(
        "{name}: build {build_s:.1} s; cyclictest p99 {} us, max {} us ({} wake-ups); frames missed {} of {}{}",
        cyclictest.p99_us,
        cyclictest.max_us,
        cyclictest.samples,
        frames.missed,
        frames.frames,
        seen.as_ref().map_or(String::new(), |s| format!(
            "; the daemon managed up to {} threads, placed up to {}",
            s.max_managed, s.max_placed
        ))
    ));

    let mut stress = Vec::new();
    if let Some(ops) = stress_ops.filter(|_| probe == Probe::Other) {
        let log = file("stress.log");
        for workers in 1..=2 * online {
            progress(&format!(
                "{name}: stress-ng --cpu {workers} --cpu-ops {ops}"
            ));
            let wall_s = stress_once(lab, o, workers, ops, &log)?;
            stress.push(StressRun { workers, wall_s });
        }
    }
    if let Some(d) = daemon {
        d.stop()?;
    }
    Ok(Variant {
        name: name.into(),
        build_s,
        cyclictest,
        frames,
        stress,
        daemon: seen,
    })
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    match xs.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => xs[n / 2],
        n => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

/// The medians over runs, corral over baseline, and the goals.
pub fn goals(runs: &[Run], online: u32) -> Vec<Goal> {
    let med = |name: &str, f: &dyn Fn(&Variant) -> Option<f64>| {
        median(
            runs.iter()
                .flat_map(|r| &r.variants)
                .filter(|v| v.name == name)
                .filter_map(f)
                .collect(),
        )
    };
    let paired = |f: &dyn Fn(&Variant) -> Option<f64>| {
        median(
            runs.iter()
                .filter_map(|r| {
                    let of = |name: &str| r.variants.iter().find(|v| v.name == name).and_then(f);
                    Some(of("corral")? / of("baseline")?)
                })
                // A baseline of 0 (no frame missed) has no ratio.
                .filter(|r| r.is_finite())
                .collect(),
        )
    };
    let row = |measure: String, f: &dyn Fn(&Variant) -> Option<f64>| {
        let (b, c) = (med("baseline", f), med("corral", f));
        Goal {
            measure,
            baseline: b,
            corral: c,
            ratio: c / b,
            paired_ratio: paired(f),
            bounds: BTreeMap::new(),
            goal: None,
            met: None,
        }
    };
    // cyclictest's rows, with the bounds' medians where they ran.
    let probe_row = |measure: &str, f: &dyn Fn(&Variant) -> Option<f64>| {
        let mut g = row(measure.into(), f);
        for probe in BOUNDS {
            let m = med(probe.variant(), f);
            if !m.is_nan() {
                g.bounds.insert(probe.variant().to_string(), m);
            }
        }
        g
    };
    let ratio_goal = |mut g: Goal, max: f64| {
        g.goal = Some(format!("corral/baseline <= {max}"));
        g.met = Some(g.ratio <= max);
        g
    };
    let corral_goal = |mut g: Goal, max: f64| {
        g.goal = Some(format!("corral <= {max}"));
        g.met = Some(g.corral <= max);
        g
    };
    let mut out = vec![
        ratio_goal(
            row("build time (s)".into(), &|v| Some(v.build_s)),
            GOAL_BUILD_RATIO,
        ),
        probe_row("cyclictest p50 (us)", &|v| Some(v.cyclictest.p50_us as f64)),
        corral_goal(
            probe_row("cyclictest p99 (us)", &|v| Some(v.cyclictest.p99_us as f64)),
            GOAL_CYCLICTEST_P99_US,
        ),
        corral_goal(
            probe_row("cyclictest max (us)", &|v| Some(v.cyclictest.max_us as f64)),
            GOAL_CYCLICTEST_MAX_US,
        ),
        corral_goal(
            row("frames missed (%)".into(), &|v| Some(v.frames.missed_pct())),
            GOAL_FRAMES_MISSED_PCT,
        ),
        row("frame lateness p99 (ms)".into(), &|v| {
            Some(v.frames.lateness_p99_us / 1000.0)
        }),
    ];
    let stressed = runs
        .iter()
        .flat_map(|r| &r.variants)
        .any(|v| !v.stress.is_empty());
    if stressed {
        for workers in 1..=2 * online {
            let wall = move |v: &Variant| {
                v.stress
                    .iter()
                    .find(|s| s.workers == workers)
                    .map(|s| s.wall_s)
            };
            out.push(ratio_goal(
                row(format!("stress-ng --cpu {workers} (s)"), &wall),
                GOAL_STRESS_RATIO,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(buckets: &[(u64, u64)], limit: u64, max: u64, overflows: u64) -> String {
        let mut s = String::from("# Histogram\n");
        let total: u64 = buckets.iter().map(|b| b.1).sum();
        for us in 0..limit {
            let n = buckets.iter().find(|b| b.0 == us).map_or(0, |b| b.1);
            s += &format!("{us:06} {n:06}\n");
        }
        s += &format!("# Total: {total:09}\n# Min Latencies: 00003\n# Avg Latencies: 00010\n# Max Latencies: {max:05}\n# Histogram Overflows: {overflows:05}\n# Histogram Overflow at cycle number:\n# Thread 0:\n");
        s
    }

    #[test]
    fn cyclictest_percentiles_come_from_the_histogram() {
        // 100 wake-ups: 90 at 5 us, 9 at 40 us, 1 at 300 us.
        let text = histogram(&[(5, 90), (40, 9), (300, 1)], 400, 300, 0);
        let c = parse_cyclictest(&text, Path::new("h")).unwrap();
        assert_eq!(
            c,
            Cyclictest {
                samples: 100,
                overflows: 0,
                histogram_us: 400,
                min_us: 3,
                p50_us: 5,
                p99_us: 40,
                max_us: 300,
            }
        );
    }

    #[test]
    fn cyclictest_overflows_count_as_samples_beyond_the_range() {
        // 98 in range, 2 beyond 100 us: p99 (rank 99) is among the overflows.
        let text = histogram(&[(7, 98)], 100, 2500, 2);
        let c = parse_cyclictest(&text, Path::new("h")).unwrap();
        assert_eq!((c.samples, c.overflows), (100, 2));
        assert_eq!((c.p50_us, c.p99_us, c.max_us), (7, 100, 2500));
    }

    #[test]
    fn cyclictest_sums_threads_and_reads_the_real_layout() {
        let text = "# Histogram\n000000 000000 000000\n000001 000002 000001\n000002 000000 000001\n# Total: 000000002 000000002\n# Min Latencies: 00001 00001\n# Avg Latencies: 00001 00001\n# Max Latencies: 00001 00002\n# Histogram Overflows: 00000 00000\n# Histogram Overflow at cycle number:\n# Thread 0:\n# Thread 1:\n";
        let c = parse_cyclictest(text, Path::new("h")).unwrap();
        assert_eq!((c.samples, c.p50_us, c.p99_us, c.max_us), (4, 1, 2, 2));
    }

    #[test]
    fn cyclictest_output_that_does_not_add_up_is_refused() {
        let mut text = histogram(&[(5, 10)], 20, 5, 0);
        text = text.replace("# Total: 000000010", "# Total: 000000011");
        let refused = |t: &str| {
            parse_cyclictest(t, Path::new("ct.hist"))
                .unwrap_err()
                .to_string()
        };
        assert!(refused(&text).starts_with("ct.hist: "));
        assert!(refused(&text).contains("says 11"));
        assert!(refused("000005\n").contains("line 1: expected `latency count"));
        assert!(refused("5 x\n").contains("\"x\" is not a number"));
        assert!(refused("# Histogram\n").contains("not cyclictest's histogram"));
        let none = histogram(&[], 20, 0, 0);
        assert!(refused(&none).contains("no wake-up"));
    }

    #[test]
    fn the_daemon_is_seen_at_its_busiest() {
        let status = |threads: &str, groups: &str| -> Status {
            serde_json::from_str(&format!(
                r#"{{"backend": "v1", "interval_ms": 1000, "step": 1, "online": "0-1",
                    "heterogeneous": false, "groups": [{groups}],
                    "counts": {{"heavy": 1, "light": 2}}, "threads": [{threads}],
                    "notes": [], "errors": ["move failed"], "last_step_us": 10}}"#
            ))
            .unwrap()
        };
        let t = |tid: u32, group: &str| {
            format!(
                r#"{{"tid": {tid}, "pid": {tid}, "comm": "x", "class": "light", "group": {group}, "util": 0.1, "peak": 0.1}}"#
            )
        };
        let shared =
            r#"{"name": "shared", "kind": "shared", "cpus": "0-1", "shares": 1024, "members": 2}"#;
        let mut seen = DaemonSeen::default();
        seen.record(&status(
            &[t(1, "\"shared\""), t(2, "\"shared\""), t(3, "null")].join(","),
            shared,
        ));
        seen.record(&status(&t(4, "null"), ""));
        assert_eq!((seen.polls, seen.max_managed, seen.max_placed), (2, 3, 2));
        assert_eq!(seen.groups.iter().collect::<Vec<_>>(), ["shared"]);
        assert_eq!(seen.classes.get("light"), Some(&2));
        assert_eq!(seen.errors, ["move failed"]);
    }

    fn variant(name: &str, build_s: f64, p99: u64, missed: u64, stress: &[f64]) -> Variant {
        Variant {
            name: name.into(),
            build_s,
            cyclictest: Cyclictest {
                samples: 100,
                p99_us: p99,
                max_us: p99 * 2,
                ..Default::default()
            },
            frames: FrameResult {
                frames: 1000,
                missed,
                ..Default::default()
            },
            stress: stress
                .iter()
                .enumerate()
                .map(|(i, &wall_s)| StressRun {
                    workers: i as u32 + 1,
                    wall_s,
                })
                .collect(),
            daemon: None,
        }
    }

    #[test]
    fn goals_compare_medians() {
        let runs = vec![
            Run {
                run: 1,
                variants: vec![
                    variant("baseline", 10.0, 900, 30, &[3.0, 1.5]),
                    variant("corral", 10.0, 400, 4, &[3.0, 1.6]),
                ],
            },
            Run {
                run: 2,
                variants: vec![
                    variant("corral", 10.2, 450, 6, &[3.0, 1.7]),
                    variant("baseline", 10.0, 1000, 20, &[3.0, 1.5]),
                ],
            },
        ];
        let g = goals(&runs, 1);
        let by = |m: &str| g.iter().find(|x| x.measure == m).unwrap();
        let build = by("build time (s)");
        assert!((build.ratio - 1.01).abs() < 1e-9);
        // Run by run: 10.0 / 10.0 and 10.2 / 10.0.
        assert!((build.paired_ratio - 1.01).abs() < 1e-9);
        let p99 = by("cyclictest p99 (us)");
        // 400 / 900 and 450 / 1000.
        assert!((p99.paired_ratio - (400.0 / 900.0 + 0.45) / 2.0).abs() < 1e-9);
        assert_eq!(build.met, Some(true));
        assert_eq!(
            (p99.baseline, p99.corral, p99.met),
            (950.0, 425.0, Some(true))
        );
        let max = by("cyclictest max (us)");
        assert_eq!(max.met, Some(true));
        let missed = by("frames missed (%)");
        assert_eq!((missed.corral, missed.met), (0.5, Some(true)));
        assert_eq!(by("cyclictest p50 (us)").met, None);
        assert_eq!(by("stress-ng --cpu 1 (s)").met, Some(true));
        let two = by("stress-ng --cpu 2 (s)");
        assert!((two.ratio - 1.65 / 1.5).abs() < 1e-9);
        assert_eq!(two.met, Some(false));
        assert_eq!(g.len(), 8);
        assert!(g.iter().all(|x| x.bounds.is_empty()));
    }

    #[test]
    fn the_bounds_go_beside_cyclictest_rows_only() {
        let runs = vec![
            Run {
                run: 1,
                variants: vec![
                    variant("baseline", 10.0, 900, 30, &[]),
                    variant("corral", 10.0, 400, 4, &[]),
                    variant("nice-20", 11.0, 700, 25, &[]),
                    variant("fifo", 12.0, 100, 20, &[]),
                ],
            },
            Run {
                run: 2,
                variants: vec![
                    variant("corral", 10.0, 500, 6, &[]),
                    variant("baseline", 10.0, 1000, 20, &[]),
                    variant("nice-20", 11.0, 900, 25, &[]),
                    variant("fifo", 12.0, 300, 20, &[]),
                ],
            },
        ];
        let g = goals(&runs, 1);
        let by = |m: &str| g.iter().find(|x| x.measure == m).unwrap();
        let p99 = by("cyclictest p99 (us)");
        // The bounds are neither baseline nor corral.
        assert_eq!((p99.baseline, p99.corral), (950.0, 450.0));
        assert_eq!(p99.bounds["nice-20"], 800.0);
        assert_eq!(p99.bounds["fifo"], 200.0);
        assert_eq!(by("cyclictest max (us)").bounds["fifo"], 400.0);
        assert_eq!(by("build time (s)").ratio, 1.0);
        assert!(by("build time (s)").bounds.is_empty());
        assert!(by("frames missed (%)").bounds.is_empty());
    }
}
