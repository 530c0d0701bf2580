//! `corral record`: a live run's scheduler events, turned into a workload
//! the simulator replays (`corral_sim::input::recording`), recorded through
//! a tracefs instance of our own (`corral_linux::tracefs`).

use crate::args::RecordArgs;
use anyhow::{bail, ensure, Context};
use corral_linux::tracefs::{self, Instance, Tracefs, SCHED_EVENTS};
use corral_linux::HostPaths;
use corral_sim::input::recording::{Converter, Directive, Recording, Scope};
use std::io::{BufRead, BufWriter, IsTerminal, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lines read and the first one that could not be.
#[derive(Default)]
struct Reading {
    events: u64,
    bad: u64,
    first_bad: Option<String>,
}

impl Reading {
    fn line(&mut self, conv: &mut Converter, line: &str) {
        // Comment lines (a header, corral's own directives) are no events.
        if !line.trim_start().starts_with('#') {
            self.events += 1;
        }
        if let Err(e) = conv.line(line) {
            self.bad += 1;
            self.first_bad.get_or_insert_with(|| format!("{e}: {line}"));
        }
    }

    fn warn(&self) {
        if let Some(first) = &self.first_bad {
            eprintln!(
                "corral: warning: {} trace lines could not be read (the first: {first})",
                self.bad
            );
        }
    }
}

pub fn run(paths: &HostPaths, args: &RecordArgs) -> anyhow::Result<ExitCode> {
    if let Some(s) = args.seconds {
        ensure!(s.is_finite() && s > 0.0, "--seconds must be above 0");
    }
    ensure!(
        (64..=1 << 20).contains(&args.buffer_kb),
        "--buffer-kb must be between 64 and 1048576 (1 GiB a CPU)"
    );
    if let Some(from) = &args.from {
        return convert(from, args);
    }
    if args.command.is_empty() && args.scope_pid.is_empty() {
        bail!("nothing to record: give a command after --, or --scope-pid PID");
    }
    if let Some(program) = args.command.first() {
        ensure!(
            super::findable(program),
            "cannot run {}: no such program, or not executable{}",
            program.to_string_lossy(),
            if program.to_string_lossy().contains('/') {
                ""
            } else {
                " in PATH"
            }
        );
    }
    ensure!(
        rustix::process::geteuid().is_root(),
        "recording needs root (tracefs and its instances)"
    );
    // Signals first: from here on, a stop removes the instance. A second
    // signal ends corral at once (a command that ignores SIGINT would
    // otherwise keep it waiting).
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&stop)))
            .context("cannot install signal handlers")?;
    }
    let fs = Tracefs::open().context("cannot reach tracefs")?;
    for name in tracefs::remove_stale(&fs) {
        eprintln!("corral: removed the trace instance {name}, left by a recorder that was killed");
    }
    // Before the trace and the command: the probe loads both CPUs.
    let packing = packing(paths, args);
    // Interrupted while probing: the command is not started.
    ensure!(
        !stop.load(Ordering::Relaxed),
        "interrupted before the recording began; nothing recorded"
    );
    // The recorder's own cost leaves the probe's out.
    let cpu_before = own_cpu_s();
    let mut inst = Instance::create(&fs, args.buffer_kb, SCHED_EVENTS)
        .context("cannot create corral's trace instance")?;
    let mut t0 = monotonic_ns();
    let started = Instant::now();
    let mut child = None;
    let roots: Vec<u32> = if let Some((program, rest)) = args.command.split_first() {
        // The child lists itself and turns tracing on between fork and
        // exec: its exec and everything after are recorded.
        let pid_file = inst.pid_file().context("cannot open set_event_pid")?;
        let on_file = inst.on_file().context("cannot open tracing_on")?;
        let (pfd, ofd) = (pid_file.as_raw_fd(), on_file.as_raw_fd());
        let mut cmd = std::process::Command::new(program);
        cmd.args(rest);
        // SAFETY: start_child makes only async-signal-safe calls.
        unsafe {
            cmd.pre_exec(move || tracefs::start_child(pfd, ofd));
        }
        let c = cmd
            .spawn()
            .with_context(|| format!("cannot run {}", program.to_string_lossy()))?;
        let pid = c.id();
        child = Some(c);
        vec![pid]
    } else {
        // corral itself is never recorded: `--scope-pid $$` from a shell
        // has it among the shell's descendants.
        let own = tracefs::tree_tids(&paths.procfs, std::process::id());
        let mut tids = Vec::new();
        for &pid in &args.scope_pid {
            let t = tracefs::tree_tids(&paths.procfs, pid);
            ensure!(!t.is_empty(), "no process with PID {pid}");
            tids.extend(t.into_iter().filter(|t| !own.contains(t)));
        }
        ensure!(
            !tids.is_empty(),
            "nothing to record: --scope-pid names only corral itself"
        );
        // XXX: a thread forked between the listing and this write is not
        // recorded (event-fork follows only forks of listed tasks).
        inst.follow(&tids)
            .context("cannot list the threads to record")?;
        inst.start().context("cannot start tracing")?;
        t0 = monotonic_ns();
        tids
    };
    let online = corral_linux::sysfs::read_topology(paths)
        .map(|t| t.online)
        .unwrap_or_default();
    let mut raw = match &args.raw {
        Some(p) => Some(BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => None,
    };
    let mut conv = Converter::new(Scope::All, None);
    tell(
        &mut conv,
        &mut raw,
        Directive::Start {
            t0,
            online: online.len() as usize,
            scope: roots.clone(),
        },
    );
    if let Some(util) = packing {
        tell(&mut conv, &mut raw, Directive::Packing { util });
    }
    let mut reading = Reading::default();
    let limit = args
        .seconds
        .or(child.is_none().then_some(10.0))
        .map(Duration::from_secs_f64);
    let progress = std::io::stderr().is_terminal();
    let mut next_note = Duration::from_secs(5);
    let mut status = None;
    let mut affinity = Affinity {
        autogroups: corral_linux::procfs::autogroup_enabled(paths),
        ..Affinity::default()
    };
    let mut next_check = Duration::ZERO;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        read(&mut inst, &mut conv, &mut reading, &mut raw).context("cannot read the trace")?;
        for d in affinity.read(paths, &online, &conv) {
            tell(&mut conv, &mut raw, d);
        }
        let elapsed = started.elapsed();
        if progress && elapsed >= next_note {
            eprintln!(
                "corral: recording: {:.0} s, {} events",
                elapsed.as_secs_f64(),
                reading.events
            );
            next_note += Duration::from_secs(5);
        }
        if let Some(c) = child.as_mut() {
            if let Some(s) = c.try_wait().context("cannot wait for the command")? {
                status = Some(s);
                break;
            }
        }
        if stop.load(Ordering::Relaxed) || limit.is_some_and(|l| elapsed >= l) {
            break;
        }
        // --scope-pid: once every process named and every thread seen in
        // scope is gone there is nothing left to record. The trace is read
        // once more before it is believed: a last thread may have forked
        // and exited since the read above, its child's fork not yet seen.
        if child.is_none() && elapsed >= next_check {
            next_check = elapsed + Duration::from_secs(1);
            let all_gone = |conv: &Converter| {
                roots
                    .iter()
                    .chain(&conv.alive())
                    .all(|&t| gone(&paths.procfs, t))
            };
            if all_gone(&conv) {
                read(&mut inst, &mut conv, &mut reading, &mut raw)
                    .context("cannot read the trace")?;
                if all_gone(&conv) {
                    eprintln!("corral: every thread in scope has exited");
                    break;
                }
            }
        }
    }
    inst.stop().context("cannot stop tracing")?;
    read(&mut inst, &mut conv, &mut reading, &mut raw).context("cannot read the trace")?;
    let dropped = inst.lost();
    drop(inst);
    let wall = started.elapsed();
    let own_cpu = own_cpu_s() - cpu_before;
    if let Some(w) = raw.as_mut() {
        w.flush().context("cannot write the raw trace")?;
    }
    reading.warn();
    let rec = conv.finish();
    let about = match args.command.split_first() {
        Some(_) => format!(
            "corral record -- {}",
            args.command
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        None => format!("corral record --scope-pid {:?}", args.scope_pid),
    };
    // A file that cannot be written still leaves the command waited for.
    let written = write(rec, args, &about, reading.events, dropped);
    println!(
        "corral's own cost: {:.2} s of CPU in {:.1} s ({:.1} % of a CPU)",
        own_cpu,
        wall.as_secs_f64(),
        100.0 * own_cpu / wall.as_secs_f64()
    );
    // The command's own exit status, as `corral exec` gives it; a command
    // still running after --seconds is waited for.
    if let Some(mut c) = child {
        let s = match status {
            Some(s) => s,
            None => {
                eprintln!(
                    "corral: recording stopped; waiting for the command (PID {})",
                    c.id()
                );
                c.wait().context("cannot wait for the command")?
            }
        };
        written?;
        let code = s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0));
        return Ok(ExitCode::from(code.clamp(0, 255) as u8));
    }
    written?;
    Ok(ExitCode::SUCCESS)
}

/// How this kernel places wake-ups, for the recording: this boot's
/// figure if measured, else measured now (about 3 s) when corral starts
/// the command and `--no-probe` is not given; `None`, not known.
fn packing(paths: &HostPaths, args: &RecordArgs) -> Option<Option<u32>> {
    use super::packing::Measured;
    let known = |m: Measured| {
        if m == Measured::Unknown {
            eprintln!("corral: this boot's wake-up placement probe could not tell (most wake-ups stayed beside their waker, no utilization splits them): the replay places wake-ups as upstream Linux does");
        }
        m.packing()
    };
    if let Some(m) = super::packing::load(paths) {
        return known(m);
    }
    if args.no_probe || args.command.is_empty() {
        eprintln!(
            "corral: this boot's wake-up placement is not known: the replay places wake-ups as upstream Linux does ({}; `corral lab placement`, as root, measures it in about 9 s, and later recordings carry it)",
            if args.no_probe {
                "--no-probe"
            } else {
                "--scope-pid does not measure it: its workload already runs"
            }
        );
        return None;
    }
    // One probe at a time: another recorder may be measuring; then its
    // figure is read.
    let _lock = super::packing::lock(paths, "corral");
    if let Some(m) = super::packing::load(paths) {
        return known(m);
    }
    let (a, b) = match super::lab::two_cpus(paths, None) {
        Ok(cpus) => cpus,
        Err(e) => {
            eprintln!("corral: wake-up placement not measured ({e:#}): the replay places wake-ups as upstream Linux does");
            return None;
        }
    };
    eprintln!("corral: measuring where this kernel places wake-ups on CPUs {a} and {b} first (about 3 s, once per boot; --no-probe skips it)");
    let p = match corral_lab::placement::measure(a, b, corral_lab::placement::SPIN_LEVELS_MS, false)
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("corral: warning: the wake-up placement probe failed ({e}): the replay places wake-ups as upstream Linux does");
            return None;
        }
    };
    let m = super::packing::verdict(&p);
    match m {
        Measured::Packs(u) => eprintln!("corral: this kernel keeps a woken thread beside its busy waker while their utilizations sum under {u}; the recording says so"),
        Measured::Upstream => eprintln!("corral: this kernel puts a woken thread on its idle previous CPU, as upstream Linux does"),
        Measured::Unknown => {}
    }
    super::packing::keep(paths, &p, "corral");
    known(m)
}

/// Whether thread `tid` has exited: no `/proc/TID`, or a zombie (state
/// `Z` or `X` in `/proc/TID/stat`) waiting for its parent.
fn gone(procfs: &std::path::Path, tid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(procfs.join(tid.to_string()).join("stat")) else {
        return true;
    };
    // The state follows the command's closing parenthesis.
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].trim_start().chars().next())
        .is_none_or(|c| c == 'Z' || c == 'X')
}

/// Each recorded thread's CPUs and cgroup, which events do not carry:
/// read from `/proc/TID/status` and `/proc/TID/cgroup` when a thread is
/// first seen (within a poll of its birth); its CPUs again every second
/// while it lives, so a thread that pins itself after it starts
/// (cyclictest's measuring thread) is caught. A thread that lives less
/// than a poll inherits its parent's (`Kind::Fork` in the converter).
#[derive(Default)]
struct Affinity {
    /// What each thread was last told: `None` for all online CPUs.
    last: std::collections::HashMap<u32, Option<Vec<u32>>>,
    /// Each thread's cgroup, as told (once: where it started).
    cgroup: std::collections::HashMap<u32, String>,
    /// The outsiders (threads seen running beside the scope) whose task
    /// group was read: once each, when first seen.
    outsiders: std::collections::HashSet<u32>,
    /// Whether the kernel runs autogroups: a thread in the root cgroup is
    /// then told as in its session's group (`/autogroup-N`).
    autogroups: bool,
    polls: u64,
}

/// The task group a thread in the root cpu cgroup runs in when the
/// kernel has autogroups on: its session's, `/autogroup-N` (see
/// [`corral_linux::procfs::autogroup`]); the root for a kernel thread.
///
/// XXX: the autogroup's nice is not carried: the replay gives every
/// autogroup 1024 shares, the weight of nice 0, which is what a session
/// has unless its nice was written to `/proc/PID/autogroup`.
fn autogroup_of(paths: &HostPaths, tid: u32) -> Option<String> {
    corral_linux::procfs::autogroup(paths, tid)
        .ok()
        .flatten()
        .map(|(name, _nice)| name)
}

/// A thread's cgroup of the cpu controller: v1's `cpu`; else, on v2, the
/// deepest of its groups whose `cgroup.controllers` lists `cpu` (the cpu
/// controller weighs a v2 group only where its parent enabled it; above
/// that the thread competes as part of the nearest such group, or the
/// root).
fn cpu_cgroup(paths: &HostPaths, tid: u32) -> Option<String> {
    let entries = corral_linux::procfs::cgroups(paths, Some(tid)).ok()?;
    if let Some(v1) = entries.iter().find(|e| e.has_controller("cpu")) {
        return Some(v1.path.clone());
    }
    let mut path = entries.iter().find(|e| e.is_v2())?.path.as_str();
    while path != "/" && !path.is_empty() {
        let file = paths
            .cgroup
            .join(path.trim_start_matches('/'))
            .join("cgroup.controllers");
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.split_whitespace().any(|c| c == "cpu") {
            return Some(path.to_string());
        }
        path = path.rsplit_once('/').map_or("/", |(up, _)| up);
    }
    Some("/".into())
}

impl Affinity {
    /// The threads whose CPUs or cgroup changed since the last read (or
    /// were not read yet).
    fn read(
        &mut self,
        paths: &HostPaths,
        online: &corral_core::CpuSet,
        conv: &Converter,
    ) -> Vec<Directive> {
        self.polls += 1;
        let all = self.polls.is_multiple_of(10);
        let mut changed = Vec::new();
        let alive = conv.alive();
        // A TID that comes back is a new thread, read afresh.
        let live: std::collections::HashSet<u32> = alive.iter().copied().collect();
        self.last.retain(|t, _| live.contains(t));
        self.cgroup.retain(|t, _| live.contains(t));
        for tid in alive {
            if self.last.contains_key(&tid) && !all {
                continue;
            }
            // A thread that exited meanwhile keeps what was read before.
            let Ok(Some(set)) = corral_linux::procfs::cpus_allowed(paths, Some(tid)) else {
                continue;
            };
            let narrowed = online.iter().any(|c| !set.contains(c));
            let cpus = narrowed.then(|| set.iter().collect::<Vec<u32>>());
            if self.last.get(&tid) != Some(&cpus) {
                self.last.insert(tid, cpus.clone());
                changed.push(Directive::Cpus { tid, cpus });
            }
            // Where it started, as its program put it: a resource manager
            // (corral itself) may move it later, which is what the replay
            // decides again.
            if !self.cgroup.contains_key(&tid) {
                if let Some(path) = self.task_group(paths, tid) {
                    self.cgroup.insert(tid, path.clone());
                    changed.push(Directive::Cgroup { tid, path });
                }
            }
        }
        // The background's task groups, for the replay to compete as
        // live: the recorder itself, started from the workload's shell,
        // runs in its autogroup. XXX: a PID reused by another outsider
        // keeps the first one's group; one gone before its first read
        // stays in the root.
        for tid in conv.outsiders() {
            if self.outsiders.insert(tid) {
                if let Some(path) = self.task_group(paths, tid) {
                    changed.push(Directive::Cgroup { tid, path });
                }
            }
        }
        changed
    }

    /// The task group `tid` runs in: its cpu cgroup, or with autogroups
    /// on and that cgroup the root, its session's autogroup (none for a
    /// kernel thread: the root). `None` when it is gone.
    fn task_group(&self, paths: &HostPaths, tid: u32) -> Option<String> {
        let path = cpu_cgroup(paths, tid)?;
        if path == "/" && self.autogroups {
            if let Some(group) = autogroup_of(paths, tid) {
                return Some(group);
            }
        }
        Some(path)
    }
}

/// What the events do not say, to the converter and, as a comment line,
/// into the raw trace, so that `--from` makes the same recording.
fn tell(conv: &mut Converter, raw: &mut Option<BufWriter<std::fs::File>>, d: Directive) {
    if let Some(w) = raw.as_mut() {
        let _ = writeln!(w, "{}", d.line());
    }
    conv.directive(d);
}

/// Reads what the trace has now, into the converter and the raw file.
fn read(
    inst: &mut Instance,
    conv: &mut Converter,
    reading: &mut Reading,
    raw: &mut Option<BufWriter<std::fs::File>>,
) -> corral_linux::Result<usize> {
    inst.drain(|l| {
        if let Some(w) = raw.as_mut() {
            let _ = writeln!(w, "{l}");
        }
        reading.line(conv, l);
    })
}

/// `--from FILE`: a text trace someone made.
fn convert(from: &std::path::Path, args: &RecordArgs) -> anyhow::Result<ExitCode> {
    let scope = if args.scope_pid.is_empty() {
        Scope::All
    } else {
        Scope::Tree(args.scope_pid.iter().copied().collect())
    };
    let f = std::fs::File::open(from).with_context(|| format!("cannot open {}", from.display()))?;
    let mut conv = Converter::new(scope, None);
    let mut reading = Reading::default();
    for line in std::io::BufReader::new(f).lines() {
        let line = line.with_context(|| format!("cannot read {}", from.display()))?;
        reading.line(&mut conv, &line);
    }
    reading.warn();
    let rec = conv.finish();
    write(
        rec,
        args,
        &format!("converted from {}", from.display()),
        reading.events,
        0,
    )?;
    Ok(ExitCode::SUCCESS)
}

fn write(
    mut rec: Recording,
    args: &RecordArgs,
    about: &str,
    events: u64,
    dropped: u64,
) -> anyhow::Result<()> {
    let kept = rec
        .threads
        .iter()
        .zip(rec.kept())
        .filter(|(t, k)| *k && !t.background)
        .count();
    ensure!(
        kept > 0,
        "{}: no thread ran in it ({}); nothing written",
        args.from
            .as_ref()
            .map_or("the recording".into(), |f| f.display().to_string()),
        if args.from.is_some() {
            "is it a trace of the sched events?"
        } else {
            "did the command or the processes run?"
        }
    );
    rec.lost_events = rec.lost_events.max(dropped);
    std::fs::write(&args.output, rec.to_json(args.rtapp, about))
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    let (mut n, mut cpu, mut bg_n, mut bg_cpu) = (0, 0u64, 0, 0u64);
    for (t, k) in rec.threads.iter().zip(rec.kept()) {
        match (k, t.background) {
            (true, false) => (n, cpu) = (n + 1, cpu + t.cpu_ns),
            (true, true) => (bg_n, bg_cpu) = (bg_n + 1, bg_cpu + t.cpu_ns),
            _ => {}
        }
    }
    let bg = if bg_n > 0 && !args.rtapp {
        format!(
            "; beside it, {bg_n} threads outside the scope ({:.2} CPU seconds)",
            bg_cpu as f64 / 1e9
        )
    } else {
        String::new()
    };
    println!(
        "recorded {:.1} s: {n} threads ran ({:.2} CPU seconds), {} events, {} lost{bg}",
        rec.span_ns as f64 / 1e9,
        cpu as f64 / 1e9,
        events,
        rec.lost_events
    );
    if rec.lost_events > 0 {
        eprintln!(
            "corral: warning: the kernel dropped {} events: the replay misses what they said (a larger --buffer-kb helps)",
            rec.lost_events
        );
    }
    println!(
        "wrote {}; replay it: corral sim {} [--policy corral]",
        args.output.display(),
        args.output.display()
    );
    Ok(())
}

fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// This process's CPU time so far (user + system, every thread),
/// seconds; reading trace_pipe is system time, the kernel formatting text.
fn own_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}
