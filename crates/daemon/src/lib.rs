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
//! - [`schedule`]: when that loop (and the simulator's) takes each step,
//!   quick step and look at the boosted threads.

pub mod api;
pub mod bus;
pub mod http;
pub mod metrics;
pub mod schedule;
pub mod server;

use api::{BoostRecord, BoostReply, Explain, GroupStatus, Status, ThreadStatus};
use corral_core::classify::{eligibility, Class, Classifier, Reason, Unmanaged, YOUNG_SAMPLES};
use corral_core::config::Config;
use corral_core::host::{Host, HostError};
use corral_core::plan::{self, Boost, Change, Plan, PlanThread, LATENCY, SHARED};
use corral_core::sample::{ThreadSample, ThreadStats, Tracker};
use corral_core::share::effective_share;
use corral_core::{CpuSet, Topology};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

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
    /// What the starvation guard did, in words.
    pub guard: Vec<String>,
    /// Threads sampled.
    pub threads: usize,
    /// Time the step took, ns.
    pub duration_ns: u64,
}

/// The corral group a thread sits in (by its cgroup path when first
/// read): the one it was born in, when corral did not put it there.
fn born_in(sample: &ThreadSample) -> Option<&str> {
    let c = sample.cgroup.as_deref()?;
    if !c.starts_with("/corral") {
        return None;
    }
    c.rsplit('/').next()
}

/// What becomes of a thread found in a corral group it was not put in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Born {
    /// Not in a group that says anything of it.
    Elsewhere,
    /// A process left where it was born, its affinity the same from
    /// start to end (see `plan::Unplanned::spawners`).
    Stays,
    /// To the shared group at once, before it is classified.
    Leaves,
}

/// How long a thread that forked a process is not dedicated a core.
const SPAWNER_HOLD_NS: u64 = 10_000_000_000;

/// The starvation guard reads the state of placed threads that ran at
/// most this long ago and are now below the floor (see
/// [`Daemon::check_stalled`]); threads that sleep for longer cost nothing.
const GUARD_WATCH_NS: u64 = 10_000_000_000;

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

impl Known {
    /// The thread as the planner sees it.
    fn plan_thread(&self, class: Class, boost: Boost) -> PlanThread {
        PlanThread {
            tid: self.sample.tid,
            pid: self.sample.pid,
            class,
            peak: self.peak,
            util: self.stats.map_or(0.0, |s| s.util),
            runnable: self.stats.map_or(0.0, |s| s.util + s.wait_ratio),
            cpu: self.sample.cpu,
            boost,
        }
    }
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
    /// The threads of the last classification, as the planner takes them.
    plan_threads: Vec<PlanThread>,
    boosts: BTreeMap<u32, ActiveBoost>,
    /// The configuration file and the scope, in words, for `status`.
    origin: (Option<String>, String),
    /// Threads boosted before, with when their last boost began: they keep
    /// a group of their own for `boost.keep_group_s` (see [`plan::Boost`]).
    boost_ready: BTreeMap<u32, u64>,
    rate: RateLimit,
    /// A re-plan owed after a boost was answered (eviction happens after
    /// the reply, so a boost call costs only the thread's own move).
    pending_replan: bool,
    /// Threads in their first `daemon.young_ms`, sampled every
    /// `daemon.fast_interval_ms` until they have a class.
    young: BTreeMap<u32, Young>,
    /// The last plan made while no boost was in force: boosts come and go
    /// every few hundred ms, and the planner's tie-breaks look at this one
    /// so that when a boost ends every thread goes back where it was.
    stable: Plan,
    /// CPUs that active unmanaged threads with a narrowed affinity use:
    /// never dedicated (see [`plan::Unplanned`]).
    pinned: CpuSet,
    /// Threads the starvation guard took out of corral's groups: until
    /// when (host ns) and why.
    relieved: BTreeMap<u32, (u64, String)>,
    /// Placed threads the guard saw runnable (state R): their CPU time
    /// then, and when (host ns). See [`Daemon::check_stalled`].
    stalled: BTreeMap<u32, (u64, u64)>,
    /// When each placed thread was last seen to have run (host ns).
    last_ran: BTreeMap<u32, u64>,
    /// When a step last saw the online CPUs change (host ns); see
    /// [`Daemon::hotplug_settling`].
    hotplug_at: Option<u64>,
    /// Threads that forked a process, and when they last did: never
    /// dedicated for [`SPAWNER_HOLD_NS`] after.
    spawners: BTreeMap<u32, u64>,
    /// What it counted since it started, for the metrics.
    counters: metrics::Counters,
    /// The last boosts that ended: thread, comm, start and end (host ns),
    /// newest first; at most [`BOOST_LOG`].
    boost_log: VecDeque<(u32, String, u64, u64)>,
    /// Real-time threads sent out of corral's groups ([`Change::SendHome`]),
    /// once each while they live.
    sent_home: BTreeSet<u32>,
    /// Young threads a fast sample found real-time inside corral's
    /// groups: sent out by the re-plan it asks for (tid, pid).
    home_due: Vec<(u32, u32)>,
}

/// How many ended boosts `status` lists.
const BOOST_LOG: usize = 16;

/// A young thread: its first read and the fast samples since.
#[derive(Debug, Clone)]
struct Young {
    pid: u32,
    /// When the host reported it.
    born_ns: u64,
    /// Its first read, and when.
    first: Option<(ThreadSample, u64)>,
    /// Its last read, and when.
    last: Option<(ThreadSample, u64)>,
    /// Wake-up rate and length (s) of each fast sample.
    rates: Vec<(f64, f64)>,
    /// Share of its life so far it was runnable (0 before a second read).
    runnable: f64,
}

impl Young {
    fn new(pid: u32, born_ns: u64, first: Option<(ThreadSample, u64)>) -> Young {
        Young {
            pid,
            born_ns,
            last: first.clone(),
            first,
            rates: Vec::new(),
            runnable: 0.0,
        }
    }
}

/// A boost in force.
#[derive(Debug, Clone)]
struct ActiveBoost {
    #[allow(dead_code)]
    pid: u32,
    /// The cap, on the host's clock.
    until_ns: u64,
    /// CPU time when the boost began: the thread "ran" once it is above.
    run_at_start_ns: u64,
    /// CPU time at the previous look.
    last_run_ns: u64,
    /// When the boost began (extensions are capped from here).
    started_ns: u64,
    /// The thread's name, for the boost log (it may have exited by then).
    comm: String,
}

/// Who sent a request (SO_PEERCRED).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    pub uid: u32,
    pub pid: u32,
}

/// A token bucket per user: `rate` requests per second, bursts up to `rate`.
#[derive(Debug, Default)]
struct RateLimit {
    buckets: BTreeMap<u32, (f64, u64)>,
}

impl RateLimit {
    fn allow(&mut self, uid: u32, now_ns: u64, rate: u32) -> bool {
        let rate = rate as f64;
        let (tokens, last) = self.buckets.entry(uid).or_insert((rate, now_ns));
        *tokens = (*tokens + (now_ns.saturating_sub(*last) as f64 / 1e9) * rate).min(rate);
        *last = now_ns;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
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
            plan_threads: Vec::new(),
            boosts: BTreeMap::new(),
            origin: (None, String::new()),
            boost_ready: BTreeMap::new(),
            rate: RateLimit::default(),
            pending_replan: false,
            stable: Plan::default(),
            pinned: CpuSet::new(),
            relieved: BTreeMap::new(),
            stalled: BTreeMap::new(),
            hotplug_at: None,
            last_ran: BTreeMap::new(),
            spawners: BTreeMap::new(),
            counters: metrics::Counters::default(),
            boost_log: VecDeque::new(),
            sent_home: BTreeSet::new(),
            home_due: Vec::new(),
            young: BTreeMap::new(),
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

    /// The threads the last step left alone, with why in `explain`'s
    /// words (a kernel thread, a real-time one, one whose affinity
    /// someone else narrowed, one a rule excludes).
    pub fn unmanaged(&self) -> impl Iterator<Item = (u32, String)> + '_ {
        self.known
            .iter()
            .filter_map(|(&tid, k)| k.unmanaged.as_ref().map(|u| (tid, unmanaged_text(u))))
    }

    /// One interval: sample → classify → plan → diff → apply.
    pub fn step(&mut self) -> Result<&StepReport, H::Error> {
        self.step_sampling(false)
    }

    /// A step; `whole`: its sample reads threads the host has never seen
    /// whole ([`Host::sample_whole`]), for a request naming a new thread.
    fn step_sampling(&mut self, whole: bool) -> Result<&StepReport, H::Error> {
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
            self.counters.hotplug += 1;
        }

        let sampling = self.host.now_ns();
        let snapshot = if whole {
            self.host.sample_whole()?
        } else {
            self.host.sample()?
        };
        self.counters
            .observe_sample(self.host.now_ns().saturating_sub(sampling) as f64 / 1e9);
        report.threads = snapshot.threads.len();
        self.watch_new(&snapshot);
        let (known, plan_threads) = self.classify_all(snapshot);
        self.classifier.retain(|tid| known.contains_key(&tid));
        self.pinned = known
            .values()
            .filter(|k| {
                matches!(k.unmanaged, Some(Unmanaged::AffinityNarrowed))
                    && k.stats
                        .is_some_and(|s| s.util > 0.0 || s.wakeups_per_s > 0.0)
            })
            .filter_map(|k| k.sample.allowed.clone())
            .fold(CpuSet::new(), |acc, c| acc.union(&c));
        self.known = known;
        let known = &self.known;
        self.sent_home.retain(|t| known.contains_key(t));
        let now = self.host.now_ns();
        if report.hotplug.is_some() {
            self.hotplug_at = Some(now);
        }
        self.tidy_boosts(now);

        self.guard_starvation(&mut report, now);
        self.counters.guard_actions += report.guard.len() as u64;
        let relieved = &self.relieved;
        self.plan_threads = plan_threads
            .into_iter()
            .filter(|t| !relieved.contains_key(&t.tid))
            .collect();
        self.replan(&mut report);
        self.finish_host(&mut report);
        report.duration_ns = self.host.now_ns().saturating_sub(started);
        self.counters.observe_step(report.duration_ns as f64 / 1e9);
        self.last = report;
        Ok(&self.last)
    }

    /// Threads seen for the first time are young: quick steps watch them
    /// (the host's task events usually named them already). Not at the
    /// first step: what runs when corral starts is not new, and quick
    /// reads of every thread for `young_ms` would cost what a full pass
    /// per fast interval costs.
    fn watch_new(&mut self, snapshot: &corral_core::sample::Snapshot) {
        if self.fast_interval_ns().is_some() && self.step > 1 {
            let at = snapshot.at_ns;
            let max = self.config.daemon.young_max;
            for t in &snapshot.threads {
                if self.young.len() >= max {
                    break;
                }
                if !self.tracker.knows(t.tid) && !self.applied.placements.contains_key(&t.tid) {
                    self.young
                        .entry(t.tid)
                        .or_insert_with(|| Young::new(t.pid, at, Some((t.clone(), at))));
                }
            }
        }
    }

    /// Every sampled thread's rates, eligibility and class (a rule's, or
    /// the classifier's; a boosted thread's interval held), and the
    /// threads the plan places: those ready (seen for a second interval,
    /// placed, boosted, or decided by a rule), and those that leave the
    /// group they were born in.
    fn classify_all(
        &mut self,
        snapshot: corral_core::sample::Snapshot,
    ) -> (BTreeMap<u32, Known>, Vec<PlanThread>) {
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
                    // A boosted thread's interval is not folded in: what it
                    // uses while boosted says nothing of its own needs.
                    let verdict = if self.boosts.contains_key(&tid) {
                        self.classifier.hold(tid)
                    } else {
                        self.classifier.update(tid, k.stats.as_ref())
                    };
                    k.peak = verdict.peak;
                    let (class, reason) = match forced {
                        Some((rule, class)) => (class, Reason::Rule { rule }),
                        None => (verdict.class, verdict.reason),
                    };
                    // A thread seen for the first time has no rates yet;
                    // it is placed from its second interval on (unless a
                    // rule decides, or it is already placed).
                    let ready = !matches!(reason, Reason::New)
                        || self.applied.placements.contains_key(&tid)
                        || self.boosts.contains_key(&tid);
                    k.class = Some(class);
                    k.reason = Some(reason);
                    match self.born(&k.sample) {
                        Born::Stays => {}
                        // Not ready: first seen by a full pass (no process
                        // connector, or more young threads than
                        // `young_max`), yet out of the group it was born
                        // in at once, as a quick step does.
                        Born::Leaves if !ready => {
                            plan_threads.push(k.plan_thread(Class::Light, Boost::None));
                        }
                        _ if ready => {
                            plan_threads.push(k.plan_thread(class, self.boost_state(tid)));
                        }
                        _ => {}
                    }
                }
            }
            known.insert(tid, k);
        }
        (known, plan_threads)
    }

    /// A boosted thread that vanished from the scope ends its boost; one
    /// not boosted for `keep_group_s` gives its own group up.
    fn tidy_boosts(&mut self, now: u64) {
        let gone: Vec<u32> = self
            .boosts
            .keys()
            .filter(|tid| !self.known.contains_key(tid))
            .copied()
            .collect();
        for tid in gone {
            self.end_boost(tid);
        }
        let known = &self.known;
        let keep_ns = self.config.boost.keep_group_s * 1_000_000_000;
        let boosts = &self.boosts;
        self.boost_ready.retain(|tid, last| {
            known.contains_key(tid)
                && (boosts.contains_key(tid) || now.saturating_sub(*last) < keep_ns)
        });
    }

    /// The starvation guard (issue 14). A placed thread that wants a CPU
    /// yet ran less than `guard.floor` of one over the interval is
    /// starved, and while it sits in corral's groups that is corral's
    /// doing: it goes back where it came from for `guard.hold_s` (the plan
    /// releases it), and the log and `explain` say so. It wants a CPU when
    ///
    /// - schedstat's run-queue delay covers at least `guard.min_wait` of
    ///   the interval, or
    /// - it was seen runnable twice, `guard.min_wait` of an interval
    ///   apart, with the same CPU time ([`Daemon::check_stalled`]).
    ///
    /// The second is needed because the kernel adds a wait to
    /// `sched_info.run_delay` only when the waiting task gets a CPU
    /// (`sched_info_arrive`): a thread that gets none shows no wait at all
    /// (`lab starve` saw 0 % of a CPU for 8 s with no wait in schedstat).
    ///
    /// starved ⇔ run / interval < floor ∧ (run-queue wait / interval ≥ min_wait
    ///                                    ∨ runnable, not run, for ≥ min_wait × interval)
    ///
    /// XXX: the floor is checked over one interval (1 s by default), not a
    /// sliding second.
    fn guard_starvation(&mut self, report: &mut StepReport, now: u64) {
        self.relieved.retain(|_, (until, _)| *until > now);
        let g = self.config.guard.clone();
        if g.enabled && self.hotplug_settling(now) {
            // Judged again once the hot-plug has settled: a thread that
            // ran before it stays watched, though it may not run during.
            self.stalled.clear();
            for t in self.last_ran.values_mut() {
                *t = now;
            }
            return;
        }
        if !g.enabled {
            self.stalled.clear();
            self.last_ran.clear();
            return;
        }
        let placements = &self.applied.placements;
        self.last_ran.retain(|t, _| placements.contains_key(t));
        self.stalled.retain(|t, _| placements.contains_key(t));
        let mut watch = Vec::new();
        for (tid, k) in &self.known {
            let Some(s) = k.stats else { continue };
            let placed = self.applied.placements.get(tid);
            if placed.is_none()
                || self.boosts.contains_key(tid)
                || self.relieved.contains_key(tid)
                || s.interval_ns == 0
            {
                self.stalled.remove(tid);
                continue;
            }
            if s.util > 0.0 {
                self.last_ran.insert(*tid, now);
            }
            if s.util >= g.floor {
                self.stalled.remove(tid);
                continue;
            }
            if s.wait_ratio >= g.min_wait {
                let group = placed.map_or("", |(_, g)| g.as_str());
                let why = format!(
                    "starvation guard: thread {tid} ({}) ran {:.1} % of a CPU while waiting {:.0} % of {:.0} ms in group {group} (floor {:.0} %): put back where it came from for {} s",
                    k.sample.comm,
                    s.util * 100.0,
                    s.wait_ratio * 100.0,
                    s.interval_ns as f64 / 1e6,
                    g.floor * 100.0,
                    g.hold_s
                );
                watch.push((*tid, Some(why)));
            } else if self.stalled.contains_key(tid)
                || self
                    .last_ran
                    .get(tid)
                    .is_some_and(|&t| now.saturating_sub(t) < GUARD_WATCH_NS)
            {
                watch.push((*tid, None));
            }
        }
        for (tid, starved) in watch {
            let why = match starved {
                Some(why) => {
                    self.relieve(tid, why.clone(), now);
                    Some(why)
                }
                None => self.check_stalled(tid, now),
            };
            report.guard.extend(why);
        }
    }

    /// Takes a starved thread out of corral's groups for `guard.hold_s`.
    fn relieve(&mut self, tid: u32, why: String, now: u64) {
        self.stalled.remove(&tid);
        let until = now + self.config.guard.hold_s * 1_000_000_000;
        self.relieved.insert(tid, (until, why));
    }

    /// How long the guard watches a runnable thread that does not run
    /// before it is starved: `guard.min_wait` of an interval.
    fn stall_due_ns(&self) -> u64 {
        (self.config.guard.min_wait * (self.config.daemon.interval_ms * 1_000_000) as f64) as u64
    }

    /// Whether a CPU hot-plug is recent enough that the starvation guard
    /// must not judge: taking a CPU down or bringing one up stops every
    /// CPU for a while (stop_machine; long in a VM), during which runnable
    /// threads queue, and the re-plan that follows moves threads between
    /// groups. Waits over the interval in which a step saw the change and
    /// over the next one (after the re-plan) are the hot-plug's, not the
    /// plan's: the guard judges again from the second step after it.
    fn hotplug_settling(&self, now: u64) -> bool {
        let interval = self.config.daemon.interval_ms * 1_000_000;
        self.hotplug_at
            .is_some_and(|at| now < at.saturating_add(2 * interval))
    }

    /// Reads a placed thread's state. Seen runnable (R) with the CPU time
    /// it had when last seen runnable, it waited in a run queue all the
    /// time between — a task cannot block without running — and when that
    /// is at least `guard.min_wait` of an interval it is relieved (the
    /// reason is returned). Otherwise it is remembered when runnable and
    /// forgotten when not.
    fn check_stalled(&mut self, tid: u32, now: u64) -> Option<String> {
        let progress = match self.host.thread_progress(tid) {
            Ok(Some(p)) if !p.sleeping => p,
            // Sleeping, gone, or unreadable: not waiting.
            _ => {
                self.stalled.remove(&tid);
                return None;
            }
        };
        match self.stalled.get(&tid).copied() {
            Some((run_ns, seen)) if run_ns == progress.run_ns => {
                let waited = now.saturating_sub(seen);
                if waited < self.stall_due_ns().max(1) {
                    return None;
                }
                let g = &self.config.guard;
                let comm = self
                    .known
                    .get(&tid)
                    .map_or_else(String::new, |k| k.sample.comm.to_string());
                let group = self
                    .applied
                    .placements
                    .get(&tid)
                    .map_or("", |(_, g)| g.as_str());
                let why = format!(
                    "starvation guard: thread {tid} ({comm}) was runnable for {:.0} ms without running, in group {group} (floor {:.0} % of a CPU): put back where it came from for {} s",
                    waited as f64 / 1e6,
                    g.floor * 100.0,
                    g.hold_s
                );
                self.relieve(tid, why.clone(), now);
                Some(why)
            }
            _ => {
                self.stalled.insert(tid, (progress.run_ns, now));
                None
            }
        }
    }

    /// What becomes of a thread found in one of corral's groups that
    /// corral did not put it in (it was born there; see `quick_step`).
    fn born(&self, sample: &ThreadSample) -> Born {
        // Every thread of every full pass comes here: most are in no corral
        // group, and the cgroup path says so first.
        let Some(group) = born_in(sample) else {
            return Born::Elsewhere;
        };
        if self.applied.placements.contains_key(&sample.tid) {
            return Born::Elsewhere;
        }
        let process = sample.tid == sample.pid;
        let same_cpus = || {
            let groups = &self.applied.groups;
            groups
                .get(LATENCY)
                .zip(groups.get(SHARED))
                .is_some_and(|(l, s)| l.cpus == s.cpus)
        };
        match group {
            n if n.starts_with("dedicated-cpu") && process => Born::Stays,
            n if n.starts_with("dedicated-cpu") => Born::Leaves,
            LATENCY if process && !same_cpus() => Born::Stays,
            LATENCY => Born::Leaves,
            _ => Born::Elsewhere,
        }
    }

    /// How often [`Daemon::quick_step`] should run; `None` when never.
    pub fn fast_interval_ns(&self) -> Option<u64> {
        (self.config.daemon.fast_interval_ms > 0)
            .then_some(self.config.daemon.fast_interval_ms * 1_000_000)
    }

    /// Between two steps: takes in the host's task events (threads born in
    /// scope, threads that exited), samples the young threads, and gives
    /// each a class as soon as its first `classify.young_min_ms` show one
    /// (heavy, medium, latency-critical); re-plans when a class was decided
    /// or a placed thread exited. Returns the re-plan's report, if any.
    ///
    /// This is what makes corral react in a few hundred ms instead of a
    /// few intervals: a full step reads every thread in scope, a quick step
    /// only the new ones.
    pub fn quick_step(&mut self) -> Result<Option<StepReport>, H::Error> {
        let now = self.host.now_ns();
        let mut replan = self.take_events(now);
        // The starvation guard's suspects, confirmed between steps (half an
        // interval after they were seen runnable, by default).
        let guard = self.confirm_stalls(now);
        replan |= !guard.is_empty();
        replan |= self.sample_young(now)?;
        if !replan {
            return Ok(None);
        }
        let mut report = StepReport {
            step: self.step,
            threads: self.known.len(),
            guard,
            ..Default::default()
        };
        self.counters.quick_steps += 1;
        self.counters.guard_actions += report.guard.len() as u64;
        self.replan(&mut report);
        self.finish_host(&mut report);
        report.duration_ns = self.host.now_ns().saturating_sub(now);
        Ok(Some(report))
    }

    /// The host's task events since the last look: forks (a dedicated
    /// thread that forks ends its dedication), births (young threads to
    /// watch) and exits. True when the plan must change.
    fn take_events(&mut self, now: u64) -> bool {
        let events = self.host.task_events();
        let mut replan = false;
        for tid in events.spawners {
            // A dedicated thread that forks ends its dedication.
            replan |= self.spawners.insert(tid, now).is_none()
                && self.applied.dedicated_cpu(tid).is_some();
        }
        self.spawners
            .retain(|_, at| now.saturating_sub(*at) < SPAWNER_HOLD_NS);
        let max = self.config.daemon.young_max;
        for (tid, pid) in events.born {
            if self.young.len() < max {
                self.young.insert(tid, Young::new(pid, now, None));
            }
        }
        for tid in events.exited {
            self.young.remove(&tid);
            self.sent_home.remove(&tid);
            self.end_boost(tid);
            if self.known.remove(&tid).is_some() {
                self.classifier.retain(|t| t != tid);
            }
            let before = self.plan_threads.len();
            self.plan_threads.retain(|t| t.tid != tid);
            replan |=
                self.plan_threads.len() != before || self.applied.placements.contains_key(&tid);
        }
        replan
    }

    /// The starvation guard's suspects seen at least [`Daemon::stall_due_ns`]
    /// ago, checked again: those still starved leave the plan, with why.
    fn confirm_stalls(&mut self, now: u64) -> Vec<String> {
        let mut guard = Vec::new();
        if self.hotplug_settling(now) {
            self.stalled.clear();
        }
        if self.config.guard.enabled && !self.stalled.is_empty() {
            let due = self.stall_due_ns();
            let suspects: Vec<u32> = self
                .stalled
                .iter()
                .filter(|(_, (_, seen))| now.saturating_sub(*seen) >= due)
                .map(|(&tid, _)| tid)
                .collect();
            for tid in suspects {
                if let Some(why) = self.check_stalled(tid, now) {
                    self.plan_threads.retain(|t| t.tid != tid);
                    guard.push(why);
                }
            }
        }
        guard
    }

    /// One read of the young threads; each one decided (its class told,
    /// a rule's or a boost's, gone) leaves them. True when the plan must
    /// change.
    fn sample_young(&mut self, now: u64) -> Result<bool, H::Error> {
        let young_ns = self.config.daemon.young_ms * 1_000_000;
        self.young
            .retain(|_, y| now.saturating_sub(y.born_ns) < young_ns);
        if self.young.is_empty() {
            return Ok(false);
        }
        let which: Vec<(u32, u32)> = self.young.iter().map(|(&t, y)| (t, y.pid)).collect();
        let snap = self.host.sample_threads(&which)?;
        let at = snap.at_ns;
        let read: HashSet<u32> = snap.threads.iter().map(|t| t.tid).collect();
        // Gone, or not in scope after all.
        self.young.retain(|tid, _| read.contains(tid));
        let mut replan = false;
        for sample in snap.threads {
            replan |= self.young_sample(sample, at);
        }
        Ok(replan)
    }

    /// One young thread's fast sample at `at`: its first (a thread born in
    /// a dedicated or the latency group leaves it at once), or one more,
    /// classified once the window is long enough. True when the plan must
    /// change.
    fn young_sample(&mut self, sample: ThreadSample, at: u64) -> bool {
        let min_ns = self.config.classify.young_min_ms * 1_000_000;
        let slack_ns = self.fast_interval_ns().unwrap_or(0) / 10;
        let mut replan = false;
        let tid = sample.tid;
        let born = self.born(&sample);
        if !self.young.contains_key(&tid) {
            return replan;
        }
        // Real-time inside corral's groups (born to a member, it made
        // itself so): out at once, before its first interval there uses
        // up the group's small real-time budget and stalls it (cyclictest
        // at 1 kHz beside a 1 s interval: a 416 ms worst case).
        if !sample.policy.is_fair() && sample.in_own_group && self.host.limits_real_time() {
            self.young.remove(&tid);
            if !self.sent_home.contains(&tid) {
                self.home_due.push((tid, sample.pid));
                return true;
            }
            return replan;
        }
        let Some(y) = self.young.get_mut(&tid) else {
            return replan;
        };
        let Some((first, first_at)) = y.first.clone() else {
            // A thread born inside a dedicated group (a heavy
            // thread's new worker, a compiler's codegen thread)
            // inherited that group's one CPU: corral's doing, not
            // the program's. It goes to the shared group at once,
            // before it is classified; left there, a multi-threaded
            // compiler ran on one CPU (`lab real`).
            //
            // So does one born inside the latency group (a codegen
            // worker of a compiler thread that woke like a latency-
            // critical one): it inherited a weight ten times the
            // others' and a short slice, and ran 4 ms at a time
            // ahead of everyone on the latency group's CPU
            // (cyclictest's worst wait beside a build: 8.4 ms,
            // traced).
            //
            // Processes stay where they were born, but for one born
            // in the latency group when that group and the shared
            // one have the same CPUs (`Daemon::born`).
            if born == Born::Leaves && self.plan_threads.iter().all(|t| t.tid != tid) {
                self.plan_threads.push(PlanThread {
                    tid,
                    pid: sample.pid,
                    class: Class::Light,
                    peak: 0.0,
                    util: 0.0,
                    runnable: 0.0,
                    cpu: sample.cpu,
                    boost: Boost::None,
                });
                replan = true;
            }
            y.first = Some((sample.clone(), at));
            y.last = Some((sample, at));
            return replan;
        };
        if let Some((last, last_at)) = &y.last {
            let d = at.saturating_sub(*last_at) as f64 / 1e9;
            let woke = sample
                .voluntary_switches
                .saturating_sub(last.voluntary_switches);
            if d > 0.0 {
                y.rates.push((woke as f64 / d, d));
            }
        }
        y.last = Some((sample.clone(), at));
        let Some(window) = ThreadStats::between(&first, &sample, at.saturating_sub(first_at))
        else {
            return replan;
        };
        y.runnable = window.util + window.wait_ratio;
        // Latency-critical can be told from three fast samples,
        // heavy and medium only from `young_min_ms` (see
        // `Classifier::young`). Quick steps run on a timer, so a
        // window ends a little either side of `young_min_ms`; one a
        // hair short waited a whole further sample (lab reaction:
        // 205 ms when the window reached it, 253-265 when it did
        // not). Within a tenth of a fast interval counts.
        let full = window.interval_ns + slack_ns >= min_ns;
        if !full && y.rates.len() < YOUNG_SAMPLES {
            return replan;
        }
        let forced = match eligibility(&self.config.rules, &sample) {
            Err(_) => {
                self.young.remove(&tid);
                return replan;
            }
            Ok(f) => f,
        };
        if forced.is_some() || self.boosts.contains_key(&tid) {
            // A rule or a boost decides; the intervals will do.
            self.young.remove(&tid);
            return replan;
        }
        let rates = std::mem::take(&mut y.rates);
        let verdict = self.classifier.young(tid, &window, &rates, full);
        if let Some(y) = self.young.get_mut(&tid) {
            y.rates = rates;
        }
        let Some(v) = verdict else { return replan };
        // Decided: the intervals take it from here.
        self.young.remove(&tid);
        if born == Born::Stays {
            return replan;
        }
        let k = Known {
            sample,
            stats: Some(window),
            class: Some(v.class),
            reason: Some(v.reason),
            peak: v.peak,
            unmanaged: None,
        };
        let pt = k.plan_thread(v.class, self.boost_state(tid));
        match self.plan_threads.iter_mut().find(|t| t.tid == tid) {
            Some(t) if t.class == v.class => {}
            Some(t) => {
                *t = pt;
                replan = true;
            }
            None => {
                self.plan_threads.push(pt);
                replan = true;
            }
        }
        self.known.insert(tid, k);
        replan
    }

    /// Plans from the last classification and the boosts in force, and
    /// applies the difference.
    fn replan(&mut self, report: &mut StepReport) {
        self.replan_first(report, &[]);
    }

    /// Where `tid` stands with the boost.
    fn boost_state(&self, tid: u32) -> Boost {
        if self.boosts.contains_key(&tid) {
            Boost::Active
        } else if self.boost_ready.contains_key(&tid) {
            Boost::Ready
        } else {
            Boost::None
        }
    }

    /// The plan for the last classification and the boosts in force.
    fn next_plan(&mut self) -> Plan {
        let states: Vec<Boost> = self
            .plan_threads
            .iter()
            .map(|t| self.boost_state(t.tid))
            .collect();
        for (t, b) in self.plan_threads.iter_mut().zip(states) {
            t.boost = b;
        }
        let unplanned = plan::Unplanned {
            spawners: self.spawners.keys().copied().collect(),
            pinned: self.pinned.clone(),
            cpu_bound: self
                .young
                .iter()
                .filter(|(tid, y)| {
                    y.runnable >= plan::CPU_BOUND
                        && self.plan_threads.iter().all(|t| t.tid != **tid)
                })
                .count(),
        };
        let next = plan::plan_around(
            &self.topology,
            &self.plan_threads,
            &self.config.plan,
            Some(&self.stable),
            &unplanned,
        );
        if self.boosts.is_empty() {
            self.stable = next.clone();
        }
        next
    }

    /// As `replan`, but the own groups of the threads in `first` change
    /// before anything else: a thread whose boost ended is lowered at once,
    /// and the other groups' cpusets follow.
    fn replan_first(&mut self, report: &mut StepReport, first: &[u32]) {
        let mut next = self.next_plan();
        report.notes = next.notes.clone();
        let mut changes = plan::diff(&self.applied, &next);
        // A thread that turned real-time inside corral's groups (born to
        // a member: corral never places one) goes out of them, once: one
        // a quick step's fast sample found young, or a full step's.
        // (One corral placed is put back by the plan.)
        let due = std::mem::take(&mut self.home_due);
        let limits = self.host.limits_real_time();
        let found = self
            .known
            .iter()
            .take_while(|_| limits)
            .filter(|(_, k)| k.unmanaged == Some(Unmanaged::RealTime) && k.sample.in_own_group)
            .map(|(&tid, k)| (tid, k.sample.pid));
        for (tid, pid) in due.into_iter().chain(found) {
            if !next.placements.contains_key(&tid)
                && !self.applied.placements.contains_key(&tid)
                && self.sent_home.insert(tid)
            {
                changes.push(Change::SendHome { tid, pid });
            }
        }
        if !first.is_empty() {
            let own: Vec<String> = first.iter().map(|&t| plan::boost_name(t)).collect();
            let ready = |c: &Change| match c {
                Change::SetGroup(g) => own.contains(&g.name),
                Change::Move { tid, group, .. } => {
                    first.contains(tid) && self.applied.groups.get(group) == next.groups.get(group)
                }
                Change::Release { tid } => first.contains(tid),
                _ => false,
            };
            let (mut head, tail): (Vec<Change>, Vec<Change>) =
                changes.into_iter().partition(|c| ready(c));
            head.extend(tail);
            changes = head;
        }
        // Where every moving thread is goes on record first; without the
        // record no thread moves (a crash could not be undone).
        if let Err(e) = self.host.prepare(&changes) {
            report
                .errors
                .push(format!("cannot record where threads are, none moved: {e}"));
            // Groups stay too (a thread kept in one may be its member).
            changes.retain(|c| !matches!(c, Change::Move { .. } | Change::RemoveGroup { .. }));
            for (name, g) in &self.applied.groups {
                next.groups.entry(name.clone()).or_insert_with(|| g.clone());
            }
            for (tid, _) in next.placements.clone() {
                if self.applied.placements.get(&tid) != next.placements.get(&tid) {
                    match self.applied.placements.get(&tid) {
                        Some(p) => {
                            next.placements.insert(tid, p.clone());
                        }
                        None => {
                            next.placements.remove(&tid);
                        }
                    }
                }
            }
        }
        let mut failed_groups = HashSet::new();
        for change in &changes {
            if let Change::Move { group, tid, .. } = change {
                if failed_groups.contains(group) {
                    next.placements.remove(tid);
                    continue;
                }
            }
            match self.host.apply(change) {
                Ok(()) => {
                    let kind = match change {
                        Change::SetGroup(_) => 0,
                        Change::Move { .. } => 1,
                        Change::Release { .. } | Change::SendHome { .. } => 2,
                        Change::RemoveGroup { .. } => 3,
                    };
                    self.counters.changes[kind] += 1;
                }
                Err(e) if e.is_gone() => {
                    if let Change::Move { tid, .. } = change {
                        next.placements.remove(tid);
                    }
                }
                Err(e) => {
                    self.counters.errors += 1;
                    report.errors.push(format!("{change}: {e}"));
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
                        // Tried again at the next step.
                        Change::SendHome { tid, .. } => {
                            self.sent_home.remove(tid);
                        }
                    }
                }
            }
        }
        // Groups whose creation failed take their members with them.
        next.placements
            .retain(|_, (_, g)| next.groups.contains_key(g));
        report.changes.extend(changes);
        self.applied = next;
    }

    /// Whether any boost is in force (the loop then checks them every ms).
    pub fn has_boosts(&self) -> bool {
        !self.boosts.is_empty()
    }

    /// Paper 001's boost, asked for by `caller`: checks, records (or
    /// extends) it, and re-plans at once.
    pub fn boost(
        &mut self,
        tid: u32,
        max_ms: Option<u64>,
        caller: Caller,
    ) -> Result<BoostReply, String> {
        self.counters.boosts_requested += 1;
        let reply = self.try_boost(tid, max_ms, caller);
        match reply {
            Ok(_) => self.counters.boosts_granted += 1,
            Err(_) => self.counters.boosts_refused += 1,
        }
        reply
    }

    /// Ends the boost of `tid`, if any, counting how long it lasted.
    fn end_boost(&mut self, tid: u32) -> bool {
        let Some(b) = self.boosts.remove(&tid) else {
            return false;
        };
        let now = self.host.now_ns();
        let lasted = now.saturating_sub(b.started_ns);
        self.counters.observe_boost(lasted as f64 / 1e9);
        self.boost_log.push_front((tid, b.comm, b.started_ns, now));
        self.boost_log.truncate(BOOST_LOG);
        true
    }

    /// Takes back a boost that could not be put in force: one that was
    /// already in force (`extended`) ends and is counted; a new one never
    /// began.
    fn drop_boost(&mut self, tid: u32, extended: bool) {
        if extended {
            self.end_boost(tid);
        } else {
            self.boosts.remove(&tid);
        }
    }

    /// The Prometheus text exposition of the counters and the state.
    pub fn metrics(&self) -> String {
        metrics::render(&self.counters, &self.status())
    }

    /// The loop's own CPU time in a full step (`quick`: a quick step),
    /// as the live loop measured it.
    pub fn observe_cpu(&mut self, quick: bool, ns: u64) {
        let c = &mut self.counters;
        if quick {
            c.quick_looks += 1;
            c.quick_cpu_ns += ns;
        } else {
            c.step_cpu_ns += ns;
        }
    }

    /// What the loop's steps cost it so far: the mean CPU time of a full
    /// step and of a quick step, µs (`corral sim --daemon-cost`'s
    /// STEP_US,QUICK_US), and how many of each ran. `None` before a step.
    pub fn own_cost(&self) -> Option<OwnCost> {
        let c = &self.counters;
        (c.steps > 0).then(|| OwnCost {
            steps: c.steps,
            step_us: c.step_cpu_ns as f64 / c.steps as f64 / 1e3,
            quick_looks: c.quick_looks,
            quick_us: if c.quick_looks == 0 {
                0.0
            } else {
                c.quick_cpu_ns as f64 / c.quick_looks as f64 / 1e3
            },
        })
    }

    fn try_boost(
        &mut self,
        tid: u32,
        max_ms: Option<u64>,
        caller: Caller,
    ) -> Result<BoostReply, String> {
        let max_ms = self.admit_boost(tid, max_ms, caller)?;
        let (now, extended) = self.record_boost(tid, max_ms)?;
        self.boost_ready.insert(tid, now);
        if let Some(cpu) = self.raise_own_group(tid, extended)? {
            return Ok(BoostReply {
                tid,
                max_ms,
                extended,
                cpu,
            });
        }
        // Elsewhere: a re-plan moves it to its own group, raised.
        let own = plan::boost_name(tid);
        self.ensure_plan_thread(tid);
        let mut report = StepReport::default();
        self.replan(&mut report);
        self.last.errors.extend(report.errors.iter().cloned());
        if self.applied.group_of(tid).is_none_or(|g| g.name != own) {
            self.drop_boost(tid, extended);
            return Err(format!(
                "could not boost thread {tid}: {}",
                report.errors.join("; ")
            ));
        }
        let cpu = self
            .applied
            .group_of(tid)
            .filter(|g| g.cpus.len() < self.topology.online.len())
            .and_then(|g| g.cpus.first());
        Ok(BoostReply {
            tid,
            max_ms,
            extended,
            cpu,
        })
    }

    /// Whether a boost of `tid` for `max_ms` (the default if none) may be
    /// granted to `caller`: the rate limit first (every request counts,
    /// and a request for an unknown thread may cost a whole step), a thread
    /// in scope and managed, the caller's own (or root), a length in
    /// range. The length granted.
    fn admit_boost(
        &mut self,
        tid: u32,
        max_ms: Option<u64>,
        caller: Caller,
    ) -> Result<u64, String> {
        let now = self.host.now_ns();
        let rate = self.config.boost.rate_per_s;
        if !self.rate.allow(caller.uid, now, rate) {
            return Err(format!(
                "rate limit: at most {rate} boosts per second per user"
            ));
        }
        if !self.known.contains_key(&tid) {
            // A thread newer than the last sample: sample now rather than
            // refuse (a framework boosts a fresh thread on its first
            // event), reading new threads whole (a plain pass leaves a
            // thread it sees first out until its second).
            self.step_sampling(true)
                .map_err(|e| format!("cannot sample: {e}"))?;
        }
        let k = self
            .known
            .get(&tid)
            .ok_or_else(|| format!("thread {tid} is not in corral's scope (or has exited)"))?;
        match &k.unmanaged {
            Some(Unmanaged::KernelThread) => {
                return Err(format!("thread {tid} is a kernel thread: never boosted"))
            }
            Some(Unmanaged::RealTime) => {
                return Err(format!(
                    "thread {tid} is a real-time or deadline thread: never boosted"
                ))
            }
            Some(u) => {
                return Err(format!(
                    "thread {tid} is not managed: {}",
                    unmanaged_text(u)
                ))
            }
            None => {}
        }
        if caller.uid != 0 && caller.uid != k.sample.uid {
            return Err(format!(
                "permission denied: thread {tid} belongs to uid {}, the caller is uid {}; only root may boost other users' threads",
                k.sample.uid, caller.uid
            ));
        }
        let cfg = &self.config.boost;
        let max_ms = max_ms.unwrap_or(cfg.default_max_ms);
        if max_ms == 0 || max_ms > cfg.max_ms_limit {
            return Err(format!(
                "max_ms must be between 1 and {}, not {max_ms}",
                cfg.max_ms_limit
            ));
        }
        Ok(max_ms)
    }

    /// A new boost of `tid` until `max_ms` from now, or an existing one
    /// extended (never past `max_ms_limit` from when it began). When, and
    /// whether it was extended.
    fn record_boost(&mut self, tid: u32, max_ms: u64) -> Result<(u64, bool), String> {
        let cfg = &self.config.boost;
        let k = &self.known[&tid];
        let now = self.host.now_ns();
        let progress = self
            .host
            .thread_progress(tid)
            .map_err(|e| format!("cannot read thread {tid}: {e}"))?
            .ok_or_else(|| format!("thread {tid} has exited"))?;
        let until_ns = now + max_ms * 1_000_000;
        let extended = match self.boosts.get_mut(&tid) {
            Some(b) => {
                // Extending never carries a boost past max_ms_limit from
                // when it began: re-boosting cannot hold a thread up for ever.
                let limit = b.started_ns + cfg.max_ms_limit * 1_000_000;
                b.until_ns = b.until_ns.max(until_ns).min(limit);
                true
            }
            None => {
                self.boosts.insert(
                    tid,
                    ActiveBoost {
                        pid: k.sample.pid,
                        until_ns,
                        run_at_start_ns: progress.run_ns,
                        last_run_ns: progress.run_ns,
                        started_ns: now,
                        comm: k.sample.comm.to_string(),
                    },
                );
                false
            }
        };
        Ok((now, extended))
    }

    /// Fast path: the thread sits in its own group since an earlier boost,
    /// so raising it is that group's change alone — its members' nice and
    /// slice, its weight and CPU; no cgroup move. The eviction (the other
    /// groups' cpusets) runs right after the reply (`settle`). `None` when
    /// the thread is elsewhere; else the CPU reserved for it, if any.
    #[allow(clippy::option_option)]
    fn raise_own_group(&mut self, tid: u32, extended: bool) -> Result<Option<Option<u32>>, String> {
        let own = plan::boost_name(tid);
        if self
            .applied
            .placements
            .get(&tid)
            .is_none_or(|(_, g)| *g != own)
        {
            return Ok(None);
        }
        self.ensure_plan_thread(tid);
        let next = self.next_plan();
        let Some(spec) = next.groups.get(&own).cloned() else {
            self.drop_boost(tid, extended);
            return Err(format!("could not boost thread {tid}: no group planned"));
        };
        if self.applied.groups.get(&own) != Some(&spec) {
            let change = Change::SetGroup(spec.clone());
            if let Err(e) = self.host.apply(&change) {
                self.counters.errors += 1;
                self.drop_boost(tid, extended);
                return Err(format!("could not boost thread {tid}: {e}"));
            }
            self.counters.changes[0] += 1;
            self.applied.groups.insert(own.clone(), spec.clone());
        }
        self.pending_replan = true;
        let cpu = Some(&spec)
            .filter(|g| g.cpus.len() < self.topology.online.len())
            .and_then(|g| g.cpus.first());
        Ok(Some(cpu))
    }

    /// Runs the re-plan a fast boost left owed (eviction). The loop calls
    /// it right after answering.
    pub fn settle(&mut self) {
        let mut report = StepReport::default();
        if std::mem::take(&mut self.pending_replan) {
            self.replan(&mut report);
        }
        self.finish_host(&mut report);
        self.last.errors.extend(report.errors);
    }

    /// What the host keeps off a boost's path ([`Host::finish`]).
    fn finish_host(&mut self, report: &mut StepReport) {
        if let Err(e) = self.host.finish() {
            report.errors.push(e.to_string());
        }
    }

    /// Makes sure a boosted thread is among the threads the planner sees.
    fn ensure_plan_thread(&mut self, tid: u32) {
        let Some(k) = self.known.get(&tid) else {
            return;
        };
        if !self.plan_threads.iter().any(|t| t.tid == tid) {
            self.plan_threads
                .push(k.plan_thread(k.class.unwrap_or(Class::Light), Boost::Active));
        }
    }

    /// Ends a boost on request.
    pub fn unboost(&mut self, tid: u32, caller: Caller) -> Result<(), String> {
        let k = self.known.get(&tid);
        if caller.uid != 0 && k.is_some_and(|k| k.sample.uid != caller.uid) {
            return Err(format!(
                "permission denied: thread {tid} belongs to another user"
            ));
        }
        if !self.end_boost(tid) {
            return Err(format!("thread {tid} is not boosted"));
        }
        let mut report = StepReport::default();
        self.replan_first(&mut report, &[tid]);
        Ok(())
    }

    /// Ends the boosts whose thread blocked after running, exited, or ran
    /// past its cap; returns how many ended. Called every millisecond
    /// while boosts are in force.
    ///
    /// "Blocked" needs two looks: the thread is not runnable *and* its CPU
    /// time has not moved since the previous look (a millisecond before).
    /// A single look is not enough: measured here, a running handler was
    /// once reported not runnable for an instant, which ended its boost
    /// 4 ms into a 50 ms event (that event took 193 ms).
    pub fn check_boosts(&mut self) -> usize {
        let now = self.host.now_ns();
        let mut ended = Vec::new();
        let tids: Vec<u32> = self.boosts.keys().copied().collect();
        for tid in tids {
            let progress = self.host.thread_progress(tid);
            let b = self.boosts.get_mut(&tid).expect("listed above");
            let done = match progress {
                Ok(None) => true,
                Ok(Some(p)) => {
                    let ran = p.run_ns > b.run_at_start_ns;
                    let still = p.run_ns == b.last_run_ns;
                    b.last_run_ns = p.run_ns;
                    now >= b.until_ns || (p.sleeping && ran && still)
                }
                Err(e) => e.is_gone() || now >= b.until_ns,
            };
            if done {
                ended.push(tid);
            }
        }
        for &tid in &ended {
            self.end_boost(tid);
        }
        if !ended.is_empty() {
            let mut report = StepReport::default();
            self.replan_first(&mut report, &ended);
            self.last.errors.extend(report.errors);
        }
        ended.len()
    }

    /// Puts every thread back and removes corral's groups.
    pub fn shutdown(&mut self) -> Result<(), H::Error> {
        self.boosts.clear();
        self.applied = Plan::default();
        self.host.restore()
    }

    /// The daemon's state, for `corral status`.
    /// Why thread `tid` has its class, in words (for the log line of a
    /// move); `None` for a thread not known.
    pub fn why(&self, tid: u32) -> Option<String> {
        let k = self.known.get(&tid)?;
        Some(match (&k.unmanaged, &k.reason) {
            (Some(u), _) => format!("not managed: {}", unmanaged_text(u)),
            (None, Some(r)) => reason_text(r, &self.config),
            (None, None) => "not classified yet".into(),
        })
    }

    /// Says where the configuration came from (`None`: the built-in
    /// defaults) and what is managed, for `status`.
    pub fn set_origin(&mut self, config_file: Option<String>, scope: String) {
        self.origin = (config_file, scope);
    }

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
                delay_ms: k.stats.map(|s| s.wait_per_slice_ns / 1e6),
                cpu: k.sample.cpu,
            })
            .collect();
        let now = self.host.now_ns();
        let mut boost_log: Vec<BoostRecord> = self
            .boosts
            .iter()
            .map(|(tid, b)| BoostRecord {
                tid: *tid,
                comm: b.comm.clone(),
                ago_ms: now.saturating_sub(b.started_ns) / 1_000_000,
                lasted_ms: None,
            })
            .collect();
        boost_log.sort_by_key(|r| r.ago_ms);
        boost_log.extend(
            self.boost_log
                .iter()
                .map(|(tid, comm, start, end)| BoostRecord {
                    tid: *tid,
                    comm: comm.clone(),
                    ago_ms: now.saturating_sub(*start) / 1_000_000,
                    lasted_ms: Some(end.saturating_sub(*start) / 1_000_000),
                }),
        );
        Status {
            config: self.origin.0.clone(),
            scope: self.origin.1.clone(),
            backend: self.host.describe(),
            interval_ms: self.config.daemon.interval_ms,
            step: self.step,
            online: self.topology.online.clone(),
            heterogeneous: self.topology.performance.heterogeneous,
            groups,
            boosted: self.boosts.keys().copied().collect(),
            counts,
            threads,
            notes: self.last.notes.clone(),
            errors: self.last.errors.clone(),
            last_step_us: self.last.duration_ns / 1000,
            boost_log,
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
        let why = match self.relieved.get(&tid) {
            Some((_, guard)) => format!("{why}; {guard}"),
            None => why,
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

/// The loop's own CPU time per step ([`Daemon::own_cost`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OwnCost {
    pub steps: u64,
    /// Mean CPU time of a full step, µs.
    pub step_us: f64,
    pub quick_looks: u64,
    /// Mean CPU time of a quick step, µs.
    pub quick_us: f64,
}
