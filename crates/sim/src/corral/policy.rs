//! corral's daemon managing a simulated machine, in simulated time.
//!
//! [`run`] is `corral_daemon::server::run` with the simulator's clock in
//! place of the wall clock and a script in place of the socket. Both take
//! their steps, quick steps and boost looks from the same
//! `corral_daemon::schedule::Schedule`: a step at the start and every
//! `daemon.interval_ms`, quick steps every `daemon.fast_interval_ms`
//! between them, a look at the boosted threads every millisecond while a
//! boost is in force. Scripted boosts (standing in
//! for the framework's input dispatcher) reach `Daemon::boost` at their
//! time, and the owed eviction (`Daemon::settle`) follows at once, as
//! after a reply. The policy itself is the daemon's: nothing here decides.
//!
//! The daemon's own CPU time is a thread of the workload when asked
//! ([`with_daemon`]: a burst at each step and quick step, as `corral lab
//! overhead` or a recording measures them); otherwise it costs nothing.
//! Not modelled: the ~0.3 ms a boost request takes live (`corral lab
//! boost-latency`).

use crate::corral::host::SimHost;
use crate::engine::Ns;
use crate::error::Error;
use crate::sched::kernel::SchedClass;
use corral_core::config::Config;
use corral_core::host::Host;
use corral_core::plan::Change;
use corral_daemon::schedule::{Due, Schedule};
use corral_daemon::{Caller, Daemon, StepReport};
use std::collections::BTreeMap;

/// A boost the framework asks for, by task name: at `at`, and then every
/// `every` (if set), or from `at` on at each of the task's wake-ups (when
/// `on_wake`: the dispatcher hands it an event, which wakes it), until
/// `until` (if set).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoostScript {
    pub task: String,
    pub at: Ns,
    pub every: Option<Ns>,
    pub on_wake: bool,
    pub until: Option<Ns>,
    /// The request's cap (`max_ms`); the configuration's default when unset.
    pub max_ms: Option<u64>,
}

/// The daemon's own CPU time: each full step's and each quick step's, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DaemonCost {
    pub step_ns: Ns,
    pub quick_ns: Ns,
}

/// The name of the thread [`with_daemon`] adds.
pub const DAEMON_TASK: &str = "corral-daemon";

/// `work` with the daemon's own thread added ([`DAEMON_TASK`]): at nice 0
/// in the group of the workload's first thread that is neither background
/// nor forked (a recording's scope root: a daemon started from the shell
/// that ran the workload lives in that shell's cgroup or autogroup, beside
/// the threads it leaves alone there; XXX a daemon run as a service sits
/// in its unit's group instead), any CPU, left alone by the daemon (background), it
/// wakes at each instant `config`'s schedule steps (the loop's
/// [`Schedule`], as [`run`] keeps it, steps taking no time) before `end`
/// and runs `cost.step_ns` at a full step, `cost.quick_ns` at a quick one.
/// XXX: every quick step costs the same, whether it found new threads or
/// nothing; the live daemon's work grows with what it reads.
pub fn with_daemon(
    work: &crate::input::rtapp::Workload,
    config: &Config,
    cost: DaemonCost,
    end: Ns,
) -> crate::input::rtapp::Workload {
    use crate::input::rtapp::{Event, Phase, Task};
    let interval = config.daemon.interval_ms.max(1) * 1_000_000;
    let fast =
        (config.daemon.fast_interval_ms > 0).then_some(config.daemon.fast_interval_ms * 1_000_000);
    let mut schedule = Schedule::new(interval, fast, 0);
    let mut events = Vec::new();
    let mut now = 0;
    while now < end {
        let ns = match schedule.due(now) {
            Due::Step => {
                schedule.stepped(now);
                cost.step_ns
            }
            Due::Quick => {
                schedule.quick_stepped(now);
                cost.quick_ns
            }
            Due::Wait => {
                now = schedule.wake_at(now, false);
                continue;
            }
        };
        if ns > 0 {
            events.push(Event::Until(now / 1000));
            events.push(Event::Runtime((ns / 1000).max(1)));
        }
    }
    let mut w = work.clone();
    let home = work
        .tasks
        .iter()
        .find(|t| !t.background && !t.forked)
        .and_then(|t| t.taskgroup.clone());
    if !events.is_empty() {
        w.tasks.push(Task {
            name: DAEMON_TASK.into(),
            instances: 1,
            policy: crate::sched::kernel::Policy::Other,
            priority: 0,
            cpus: None,
            taskgroup: home,
            loops: 1,
            phases: vec![Phase {
                name: "steps".into(),
                loops: 1,
                cpus: None,
                events,
            }],
            delay_us: 0,
            forked: false,
            background: true,
            live_moves: None,
        });
    }
    w
}

/// What the daemon did over a run.
#[derive(Debug, Clone, Default)]
pub struct PolicyReport {
    pub steps: u64,
    /// Changes applied (group settings, moves, releases, removals).
    pub changes: usize,
    /// Errors from steps and boosts, with their simulated time.
    pub errors: Vec<(Ns, String)>,
    pub boosts: u64,
    /// Boosts ended by the daemon (their thread blocked after running, or
    /// they reached their cap).
    pub boosts_ended: u64,
    /// Each managed task's last class (by task name).
    pub classes: BTreeMap<String, String>,
    /// Each task's corral group at the end (by task name).
    pub groups: BTreeMap<String, String>,
    /// The CPUs of each of those groups at the end (by group name).
    pub group_cpus: BTreeMap<String, String>,
    /// Where the daemon last had each task at a step (by task name),
    /// exited ones too: in a group, or left alone and why.
    pub places: BTreeMap<String, Place>,
    /// The last step's report.
    pub last: Option<StepReport>,
    /// Every change applied, with its simulated time, in words (threads
    /// by task name): the Perfetto trace's `corral` track.
    pub log: Vec<(Ns, String)>,
}

/// What corral's daemon did with one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In this corral group.
    Group(String),
    /// Left alone, for this reason (`corral explain`'s words): such a
    /// thread changes only by what the daemon does to the others.
    Unmanaged(String),
}

/// Notes where the plan in force has each task, and which tasks the last
/// step left alone.
fn record_places<K: SchedClass>(daemon: &Daemon<SimHost<K>>, report: &mut PolicyReport) {
    let host = daemon.host();
    let name = |tid: u32| {
        host.task_of(tid)
            .map(|t| host.machine().task_stats(t).name.as_str())
    };
    // (Strings are cloned only when a place changes: steps are many.)
    for (&tid, (_, group)) in &daemon.plan().placements {
        let Some(n) = name(tid) else { continue };
        if !matches!(report.places.get(n), Some(Place::Group(g)) if g == group) {
            report
                .places
                .insert(n.to_string(), Place::Group(group.clone()));
        }
    }
    for (tid, why) in daemon.unmanaged() {
        let Some(n) = name(tid) else { continue };
        if !matches!(report.places.get(n), Some(Place::Unmanaged(w)) if *w == why) {
            report.places.insert(n.to_string(), Place::Unmanaged(why));
        }
    }
}

/// The host's changes in words, a thread named by its task.
fn change_log<K: SchedClass>(host: &SimHost<K>) -> Vec<(Ns, String)> {
    let name = |tid: u32| {
        host.task_of(tid).map_or_else(
            || tid.to_string(),
            |t| host.machine().task_stats(t).name.clone(),
        )
    };
    host.changes()
        .iter()
        .map(|(at, c)| {
            let text = match c {
                Change::Move { tid, group, .. } => format!("move {} to {group}", name(*tid)),
                Change::Release { tid } => format!("put {} back", name(*tid)),
                other => other.to_string(),
            };
            (*at, text)
        })
        .collect()
}

/// Each task's class and group in the plan in force, by name.
fn record_classes<K: SchedClass>(daemon: &Daemon<SimHost<K>>, report: &mut PolicyReport) {
    let known: Vec<(String, u32)> = {
        let m = daemon.host().machine();
        (0..m.ntasks())
            .map(|t| (m.task_stats(t).name.clone(), SimHost::<K>::tid_of(t)))
            .collect()
    };
    for (name, tid) in known {
        if let Some(c) = daemon.class_of(tid) {
            report.classes.insert(name.clone(), c.as_str().to_string());
        }
        if let Some(g) = daemon.plan().group_of(tid) {
            report.groups.insert(name, g.name.clone());
            report.group_cpus.insert(g.name.clone(), g.cpus.to_string());
        }
    }
}

/// Runs the machine until `end` with the daemon managing it, and returns
/// the daemon (holding the host) with the plan still in force, so callers
/// can read both; `Daemon::shutdown` puts everything back. `observe`
/// sees the host after every step.
pub fn run<K: SchedClass>(
    host: SimHost<K>,
    config: Config,
    boosts: &[BoostScript],
    end: Ns,
    observe: &mut dyn FnMut(&SimHost<K>),
) -> Result<(Daemon<SimHost<K>>, PolicyReport), Error> {
    let interval = config.daemon.interval_ms.max(1) * 1_000_000;
    let mut daemon = Daemon::new(host, config)?;
    let mut report = PolicyReport::default();
    let tids: Vec<Option<u32>> = boosts
        .iter()
        .map(|b| daemon.host().task_named(&b.task).map(SimHost::<K>::tid_of))
        .collect();
    if let Some(i) = tids.iter().position(Option::is_none) {
        return Err(Error::Platform(format!(
            "boost script: no task named {:?} in the workload",
            boosts[i].task
        )));
    }
    let mut next_boost: Vec<Option<Ns>> = boosts
        .iter()
        .map(|b| (!b.on_wake).then_some(b.at))
        .collect();
    let tasks: Vec<usize> = tids
        .iter()
        .map(|t| {
            daemon
                .host()
                .task_of(t.expect("checked above"))
                .expect("a task")
        })
        .collect();
    for (b, &t) in boosts.iter().zip(&tasks) {
        if b.on_wake {
            daemon.host_mut().machine_mut().watch_wakeups(t);
        }
    }
    let mut woken: Option<usize> = None;
    // The live daemon's schedule (`server::run`), on the simulated clock.
    let mut schedule = Schedule::new(interval, daemon.fast_interval_ns(), daemon.host().now_ns());
    let root = Caller { uid: 0, pid: 0 };
    loop {
        let now = daemon.host().now_ns();
        match schedule.due(now) {
            Due::Step => {
                let r = daemon.step()?;
                report.steps += 1;
                report.changes += r.changes.len();
                report
                    .errors
                    .extend(r.errors.iter().map(|e| (now, e.clone())));
                schedule.stepped(now);
                observe(daemon.host());
                record_places(&daemon, &mut report);
            }
            Due::Quick => {
                if let Some(r) = daemon.quick_step()? {
                    report.changes += r.changes.len();
                    report
                        .errors
                        .extend(r.errors.iter().map(|e| (now, e.clone())));
                    observe(daemon.host());
                }
                schedule.quick_stepped(now);
            }
            Due::Wait => {}
        }
        // Boosts due now: by the clock, or because their task just woke.
        for (i, b) in boosts.iter().enumerate() {
            let due = if b.on_wake {
                woken == Some(tasks[i]) && now >= b.at && b.until.is_none_or(|u| now <= u)
            } else {
                next_boost[i].is_some_and(|at| at <= now)
            };
            if !due {
                continue;
            }
            let at = next_boost[i].unwrap_or(now);
            let tid = tids[i].expect("checked above");
            match daemon.boost(tid, b.max_ms, root) {
                Ok(_) => report.boosts += 1,
                Err(e) => report.errors.push((now, format!("boost {}: {e}", b.task))),
            }
            daemon.settle();
            next_boost[i] = (!b.on_wake)
                .then_some(())
                .and(b.every)
                .map(|e| at + e.max(1))
                .filter(|&n| b.until.is_none_or(|u| n <= u));
        }
        if now >= end || daemon.host().machine().all_exited() {
            break;
        }
        let mut next = schedule.wake_at(now, daemon.has_boosts()).min(end);
        if let Some(b) = next_boost.iter().flatten().min() {
            next = next.min(*b);
        }
        let m = daemon.host_mut().machine_mut();
        woken = if m.advance_to(next.max(now + 1)) {
            None
        } else {
            m.take_watched_wakeup()
        };
        if daemon.has_boosts() {
            report.boosts_ended += daemon.check_boosts() as u64;
        }
    }
    record_classes(&daemon, &mut report);
    report.log = change_log(daemon.host());
    report.last = Some(daemon.last_step().clone());
    Ok((daemon, report))
}
