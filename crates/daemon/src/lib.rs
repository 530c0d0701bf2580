//! corral's control loop, generic over the machine it manages.
//!
//! Every interval: **sample** the threads in scope, turn two reads into
//! rates, **classify** each thread, **plan** groups and placements,
//! **diff** against the plan in force, and **apply** the difference. The
//! same [`Daemon`] drives the live kernel (`corral-linux`'s `LinuxHost`)
//! and the simulator: it only knows the [`Host`] trait.
//!
//! ```text
//!   Host::online ─► (hot-plug? Host::topology)
//!   Host::sample ─► Tracker ─► Classifier ─► plan::plan ─► plan::diff ─► Host::apply
//! ```
//!
//! - [`Daemon`]: one step at a time, plus status and explain.
//! - [`api`]: the versioned JSON-lines protocol of the socket.
//! - [`server`]: the Unix-socket listener and client, and [`server::run`],
//!   the loop that interleaves steps with requests until told to stop.

pub mod api;
pub mod server;

use api::{Explain, GroupStatus, Status, ThreadStatus};
use corral_core::classify::{eligibility, Class, Classifier, Reason, Unmanaged};
use corral_core::config::Config;
use corral_core::host::{Host, HostError};
use corral_core::plan::{self, Change, Plan, PlanThread};
use corral_core::sample::{ThreadSample, ThreadStats, Tracker};
use corral_core::share::effective_share;
use corral_core::{CpuSet, Topology};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// What one step did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StepReport {
    pub step: u64,
    /// The online CPUs before and after, when hot-plug changed them.
    pub hotplug: Option<(CpuSet, CpuSet)>,
    /// The changes applied (or, in a dry run, that would be).
    pub changes: Vec<Change>,
    /// Changes that failed, with the reason.
    pub errors: Vec<String>,
    pub notes: Vec<String>,
    /// Threads sampled.
    pub threads: usize,
    /// Time the step took, ns.
    pub duration_ns: u64,
}

/// Everything the daemon knows of one thread.
#[derive(Debug, Clone, Serialize)]
struct Known {
    sample: ThreadSample,
    stats: Option<ThreadStats>,
    class: Option<Class>,
    reason: Option<Reason>,
    peak: f64,
    unmanaged: Option<Unmanaged>,
}

/// The control loop's state.
pub struct Daemon<H: Host> {
    host: H,
    config: Config,
    tracker: Tracker,
    classifier: Classifier,
    topology: Topology,
    applied: Plan,
    known: BTreeMap<u32, Known>,
    step: u64,
    last: StepReport,
}

impl<H: Host> Daemon<H> {
    /// A daemon managing `host` with `config`; reads the topology.
    pub fn new(mut host: H, config: Config) -> Result<Daemon<H>, H::Error> {
        let topology = host.topology()?;
        Ok(Daemon {
            host,
            classifier: Classifier::new(config.classify.clone()),
            config,
            tracker: Tracker::new(),
            topology,
            applied: Plan::default(),
            known: BTreeMap::new(),
            step: 0,
            last: StepReport::default(),
        })
    }

    pub fn host(&self) -> &H {
        &self.host
    }

    pub fn host_mut(&mut self) -> &mut H {
        &mut self.host
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The plan in force.
    pub fn plan(&self) -> &Plan {
        &self.applied
    }

    /// The last step's report.
    pub fn last_step(&self) -> &StepReport {
        &self.last
    }

    /// The class of `tid` as of the last step.
    pub fn class_of(&self, tid: u32) -> Option<Class> {
        self.known.get(&tid).and_then(|k| k.class)
    }

    /// One interval: sample → classify → plan → diff → apply.
    pub fn step(&mut self) -> Result<&StepReport, H::Error> {
        let started = self.host.now_ns();
        self.step += 1;
        let mut report = StepReport {
            step: self.step,
            ..Default::default()
        };

        let online = self.host.online()?;
        if online != self.topology.online {
            let before = self.topology.online.clone();
            self.topology = self.host.topology()?;
            report.hotplug = Some((before, self.topology.online.clone()));
        }

        let snapshot = self.host.sample()?;
        report.threads = snapshot.threads.len();
        let stats = self.tracker.update(&snapshot);
        let mut known = BTreeMap::new();
        let mut plan_threads = Vec::new();
        for (sample, stats) in snapshot.threads.into_iter().zip(stats) {
            let tid = sample.tid;
            let mut k = Known {
                stats,
                class: None,
                reason: None,
                peak: 0.0,
                unmanaged: None,
                sample,
            };
            match eligibility(&self.config.rules, &k.sample) {
                Err(why) => k.unmanaged = Some(why),
                Ok(forced) => {
                    let verdict = self.classifier.update(tid, k.stats.as_ref());
                    k.peak = verdict.peak;
                    let (class, reason) = match forced {
                        Some((rule, class)) => (class, Reason::Rule { rule }),
                        None => (verdict.class, verdict.reason),
                    };
                    // A thread seen for the first time has no rates yet;
                    // it is placed from its second interval on (unless a
                    // rule decides, or it is already placed).
                    let ready = !matches!(reason, Reason::New)
                        || self.applied.placements.contains_key(&tid);
                    k.class = Some(class);
                    k.reason = Some(reason);
                    if ready {
                        plan_threads.push(PlanThread {
                            tid,
                            pid: k.sample.pid,
                            class,
                            peak: k.peak,
                            util: k.stats.map_or(0.0, |s| s.util),
                            cpu: k.sample.cpu,
                        });
                    }
                }
            }
            known.insert(tid, k);
        }
        self.classifier.retain(|tid| known.contains_key(&tid));
        self.known = known;

        let mut next = plan::plan(
            &self.topology,
            &plan_threads,
            &self.config.plan,
            Some(&self.applied),
        );
        report.notes = next.notes.clone();
        let changes = plan::diff(&self.applied, &next);
        let mut failed_groups = HashSet::new();
        for change in &changes {
            if let Change::Move { group, tid, .. } = change {
                if failed_groups.contains(group) {
                    next.placements.remove(tid);
                    continue;
                }
            }
            match self.host.apply(change) {
                Ok(()) => {}
                Err(e) if e.is_gone() => {
                    if let Change::Move { tid, .. } = change {
                        next.placements.remove(tid);
                    }
                }
                Err(e) => {
                    report.errors.push(format!("{}: {e}", describe(change)));
                    match change {
                        Change::SetGroup(g) => {
                            failed_groups.insert(g.name.clone());
                            next.groups.remove(&g.name);
                        }
                        Change::Move { tid, .. } => {
                            // Keep what is in force, so the next step retries.
                            match self.applied.placements.get(tid) {
                                Some(p) => {
                                    next.placements.insert(*tid, p.clone());
                                }
                                None => {
                                    next.placements.remove(tid);
                                }
                            }
                        }
                        Change::RemoveGroup { name } => {
                            if let Some(g) = self.applied.groups.get(name) {
                                next.groups.insert(name.clone(), g.clone());
                            }
                        }
                        Change::Release { .. } => {}
                    }
                }
            }
        }
        // Groups whose creation failed take their members with them.
        next.placements
            .retain(|_, (_, g)| next.groups.contains_key(g));
        report.changes = changes;
        self.applied = next;
        report.duration_ns = self.host.now_ns().saturating_sub(started);
        self.last = report;
        Ok(&self.last)
    }

    /// Puts every thread back and removes corral's groups.
    pub fn shutdown(&mut self) -> Result<(), H::Error> {
        self.applied = Plan::default();
        self.host.restore()
    }

    /// The daemon's state, for `corral status`.
    pub fn status(&self) -> Status {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for k in self.known.values() {
            let key = match (&k.unmanaged, k.class) {
                (Some(_), _) => "unmanaged",
                (None, Some(c)) => c.as_str(),
                (None, None) => "new",
            };
            *counts.entry(key.to_string()).or_default() += 1;
        }
        let groups = self
            .applied
            .groups
            .values()
            .map(|g| GroupStatus {
                name: g.name.clone(),
                kind: g.kind,
                cpus: g.cpus.clone(),
                shares: g.shares,
                members: self
                    .applied
                    .placements
                    .values()
                    .filter(|(_, n)| *n == g.name)
                    .count(),
            })
            .collect();
        let threads = self
            .known
            .values()
            .filter(|k| k.unmanaged.is_none())
            .map(|k| ThreadStatus {
                tid: k.sample.tid,
                pid: k.sample.pid,
                comm: k.sample.comm.to_string(),
                class: k.class,
                group: self
                    .applied
                    .placements
                    .get(&k.sample.tid)
                    .map(|(_, g)| g.clone()),
                util: k.stats.map(|s| s.util),
                peak: k.peak,
            })
            .collect();
        Status {
            backend: self.host.describe(),
            interval_ms: self.config.daemon.interval_ms,
            step: self.step,
            online: self.topology.online.clone(),
            heterogeneous: self.topology.performance.heterogeneous,
            groups,
            counts,
            threads,
            notes: self.last.notes.clone(),
            errors: self.last.errors.clone(),
            last_step_us: self.last.duration_ns / 1000,
        }
    }

    /// Everything about one thread, for `corral explain`.
    pub fn explain(&mut self, tid: u32) -> Result<Explain, String> {
        let k = self
            .known
            .get(&tid)
            .cloned()
            .ok_or_else(|| format!("thread {tid} is not in corral's scope (or has exited)"))?;
        let levels = self
            .host
            .share_levels(tid)
            .map_err(|e| format!("cannot read thread {tid}'s groups: {e}"))?;
        let (levels, cpus) = levels.unwrap_or_default();
        let why = match (&k.unmanaged, &k.reason) {
            (Some(u), _) => format!("not managed: {}", unmanaged_text(u)),
            (None, Some(r)) => reason_text(r, &self.config),
            (None, None) => "not classified yet".into(),
        };
        Ok(Explain {
            tid,
            pid: k.sample.pid,
            comm: k.sample.comm.to_string(),
            class: k.class,
            why,
            peak: k.peak,
            stats: k.stats,
            nice: k.sample.nice,
            cpu: k.sample.cpu,
            cgroup: k.sample.cgroup.as_deref().map(String::from),
            group: self.applied.placements.get(&tid).map(|(_, g)| g.clone()),
            effective_share: effective_share(&levels, cpus.max(1)),
            share_levels: levels,
            share_cpus: cpus,
        })
    }
}

fn describe(change: &Change) -> String {
    match change {
        Change::SetGroup(g) => format!(
            "set group {} (cpus {}, shares {})",
            g.name, g.cpus, g.shares
        ),
        Change::Move { tid, group, .. } => format!("move thread {tid} to {group}"),
        Change::Release { tid } => format!("release thread {tid}"),
        Change::RemoveGroup { name } => format!("remove group {name}"),
    }
}

fn unmanaged_text(u: &Unmanaged) -> String {
    match u {
        Unmanaged::KernelThread => "a kernel thread".into(),
        Unmanaged::RealTime => "a real-time or deadline thread".into(),
        Unmanaged::AffinityNarrowed => "its affinity was narrowed by someone else".into(),
        Unmanaged::Excluded { rule } => format!("excluded by rule {}", rule + 1),
    }
}

fn reason_text(r: &Reason, cfg: &Config) -> String {
    let c = &cfg.classify;
    match r {
        Reason::New => "first seen this interval: no rates yet".into(),
        Reason::Peak { peak } => format!(
            "peak utilisation {:.0} % (heavy >= {:.0} %, medium >= {:.0} %, leaving a class {:.0} points below)",
            peak * 100.0,
            c.heavy * 100.0,
            c.medium * 100.0,
            c.hysteresis * 100.0
        ),
        Reason::Behaviour {
            wakeups_per_s,
            run_per_wakeup_ms,
            rate_cv,
        } => format!(
            "wakes {wakeups_per_s:.0}/s (>= {:.0}), runs {run_per_wakeup_ms:.2} ms per wake-up (<= {:.1}), \
             rate variation {rate_cv:.2} (<= {:.2}), at low utilisation",
            c.latency_critical.min_wakeups_per_s, c.latency_critical.max_run_per_wakeup_ms, c.latency_critical.max_rate_cv
        ),
        Reason::Rule { rule } => format!("set by rule {}", rule + 1),
    }
}

#[cfg(test)]
mod tests;
