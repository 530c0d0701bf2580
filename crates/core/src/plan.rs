//! The planner: topology + classified threads → groups and placements
//! (paper 000's placement by CPU intensiveness, paper 002's protected
//! group), and the difference between two plans.
//!
//! - **heavy**: a dedicated core each (a cpuset of one CPU and a high
//!   weight), highest peak first, big cores first; never more than
//!   online − 1 of them, so the rest always keeps a CPU, and none at all
//!   when more threads want a whole CPU than there are cores to give
//!   (among equals the kernel's fair split is the fair answer). The other
//!   groups yield a dedicated CPU by weight and keep it in their cpusets,
//!   so it is never idle while they wait (`dedicated_exclusive` makes them
//!   leave it instead, as paper 000 did). A heavy thread that keeps its core is
//!   preferred over a newcomer within the hysteresis band, so two threads
//!   of equal peak do not swap cores every interval. A newcomer gets the
//!   CPU it is running on when that is among the fastest free ones: its
//!   cache stays warm and the move into the cpuset migrates nothing.
//! - **medium**: one group on the shared CPUs whose weight guarantees each
//!   member `medium_min_cpu` of a CPU ([`crate::share::medium_group_shares`]).
//! - **latency-critical**: one group with a high weight on the shared CPUs;
//!   its members use little CPU, so the weight costs the others little.
//! - everything else, and heavy threads left without a core: the shared
//!   group (little cores only, on a
//!   heterogeneous machine, when their capacity covers the demand).
//!
//! The planner is pure and deterministic: the same inputs give the same
//! plan.

use crate::classify::Class;
use crate::cpuset::CpuSet;
use crate::share::{medium_group_shares, medium_nice};
use crate::topology::{CoreType, Topology, CAPACITY_SCALE};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[plan]`: groups, weights, slices and the boost's levers (see
/// `default.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanConfig {
    pub dedicated_cores: bool,
    /// Whether the other groups leave a dedicated CPU (cpuset) or only
    /// yield it by weight (work-conserving).
    pub dedicated_exclusive: bool,
    pub dedicated_shares: u64,
    pub shared_shares: u64,
    pub latency_shares: u64,
    pub medium_min_cpu: f64,
    pub latency_slice_us: u64,
    pub boost_evict: bool,
    pub boost_nice: i32,
    pub boost_slice_us: u64,
    /// Set by `corral run` on the per-thread backend (a systemd host), not
    /// read from a file: groups have no weight there, so the medium
    /// guarantee goes by its members' nice ([`crate::share::medium_nice`]).
    #[serde(skip)]
    pub per_thread: bool,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            dedicated_cores: true,
            dedicated_exclusive: false,
            dedicated_shares: 10240,
            shared_shares: 1024,
            latency_shares: 10240,
            medium_min_cpu: 0.5,
            latency_slice_us: 300,
            boost_evict: true,
            boost_nice: -20,
            boost_slice_us: 100,
            per_thread: false,
        }
    }
}

/// Name of the group of heavy threads' cores: `dedicated-cpuN`.
pub fn dedicated_name(cpu: u32) -> String {
    format!("dedicated-cpu{cpu}")
}
pub const MEDIUM: &str = "medium";
pub const LATENCY: &str = "latency";
pub const SHARED: &str = "shared";

/// Name of a boosted thread's own group: `boost-TID`.
pub fn boost_name(tid: u32) -> String {
    format!("boost-{tid}")
}

/// Preference given to a heavy thread that already has a core.
const INCUMBENT_BONUS: f64 = 0.05;
/// Headroom the little cores must have over the shared demand.
const LITTLE_HEADROOM: f64 = 1.25;
/// A thread runnable this share of the time or more wants a whole CPU,
/// whatever its class says (four hogs on two CPUs each *get* 0.5, and
/// their peaks then say only "heavy enough").
pub const CPU_BOUND: f64 = 0.9;

/// A managed thread, as the planner sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanThread {
    pub tid: u32,
    pub pid: u32,
    pub class: Class,
    /// Decayed peak utilisation.
    pub peak: f64,
    /// Utilisation over the last interval.
    pub util: f64,
    /// Share of the last interval it was runnable (running or waiting in a
    /// run queue): what it wanted, whatever it got.
    pub runnable: f64,
    /// The CPU it last ran on.
    pub cpu: u32,
    /// Where it stands with paper 001's boost.
    pub boost: Boost,
}

/// A thread's standing with paper 001's boost.
///
/// A thread a framework has boosted keeps a group of its own between
/// boosts (`Ready`), so that raising it again changes only that group's
/// weight and CPUs and its own nice value and slice: no cgroup move, which
/// on this kernel waits for an RCU grace period (~8 ms, measured) whenever
/// no other move happened in the last few ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Boost {
    #[default]
    None,
    /// Boosted before: in its own group, with an ordinary weight.
    Ready,
    /// Boosted now.
    Active,
}

/// What a group is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupKind {
    Dedicated,
    Medium,
    Latency,
    Shared,
    /// One thread a framework boosts (paper 001), raised or at rest.
    Boost,
}

impl GroupKind {
    /// Its name as `status` and the metrics spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupKind::Dedicated => "dedicated",
            GroupKind::Medium => "medium",
            GroupKind::Latency => "latency",
            GroupKind::Shared => "shared",
            GroupKind::Boost => "boost",
        }
    }
}

/// One group corral creates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupSpec {
    pub name: String,
    pub kind: GroupKind,
    pub cpus: CpuSet,
    /// cpu.shares in v1 units (v2 backends convert).
    pub shares: u64,
    /// The EEVDF slice its members get (sched_setattr `sched_runtime`),
    /// ns; `None` leaves their slices alone.
    pub slice_ns: Option<u64>,
    /// The nice value its members get; `None` leaves it alone.
    pub nice: Option<i32>,
}

/// Groups and which thread goes where.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Plan {
    /// By name.
    pub groups: BTreeMap<String, GroupSpec>,
    /// tid → (pid, group name).
    pub placements: BTreeMap<u32, (u32, String)>,
    /// Things a person should know (a guarantee that cannot hold, …).
    pub notes: Vec<String>,
}

impl Plan {
    /// The group holding `tid`.
    pub fn group_of(&self, tid: u32) -> Option<&GroupSpec> {
        self.placements
            .get(&tid)
            .and_then(|(_, g)| self.groups.get(g))
    }

    /// The CPU dedicated to `tid`, if any.
    pub fn dedicated_cpu(&self, tid: u32) -> Option<u32> {
        self.group_of(tid)
            .filter(|g| g.kind == GroupKind::Dedicated)
            .and_then(|g| g.cpus.first())
    }
}

/// Builds the plan. `previous` (the plan in force) only breaks ties in
/// favour of keeping heavy threads where they are.
pub fn plan(
    topo: &Topology,
    threads: &[PlanThread],
    cfg: &PlanConfig,
    previous: Option<&Plan>,
) -> Plan {
    plan_around(topo, threads, cfg, previous, &Unplanned::default())
}

/// Work the plan does not place but must leave room for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unplanned {
    /// CPUs that unmanaged threads whose affinity someone narrowed use
    /// (cyclictest's measuring thread, a per-CPU worker): none of them is
    /// dedicated. Such a thread cannot leave its CPU, and a dedicated
    /// group's weight there would starve it (beside a 10240-share group a
    /// thread of a 1024-share cgroup gets 1/11 of the CPU).
    pub pinned: CpuSet,
    /// Threads not classified yet that were runnable at least
    /// [`CPU_BOUND`] of their life: they want a CPU as much as the
    /// heavy ones (in a parallel build the first compiler classified
    /// heavy would otherwise get a core the next ones take back 50 ms
    /// later).
    pub cpu_bound: usize,
    /// Threads that forked a process lately (a build's driver, a shell, a
    /// compiler calling its linker): never dedicated. A process forked by
    /// a dedicated thread starts in its one-CPU cpuset, and moving it out
    /// later changes its affinity while it runs — lld, which sizes
    /// per-thread arrays from the affinity at two moments, crashed with
    /// SIGSEGV that way in `corral lab real` (2 builds in 15).
    pub spawners: std::collections::BTreeSet<u32>,
}

/// As [`plan`], leaving room for `unplanned`, in six steps: the CPUs to
/// plan over, the CPUs raised boosts reserve, the dedicated cores, the
/// class groups on the rest, the boost groups, the eviction.
pub fn plan_around(
    topo: &Topology,
    threads: &[PlanThread],
    cfg: &PlanConfig,
    previous: Option<&Plan>,
    unplanned: &Unplanned,
) -> Plan {
    let mut out = Plan::default();
    let Some(cpus) = Cpus::usable(topo) else {
        out.notes.push("no CPU is online: nothing planned".into());
        return out;
    };
    let mut threads: Vec<&PlanThread> = threads.iter().collect();
    threads.sort_by_key(|t| t.tid);
    threads.dedup_by_key(|t| t.tid);
    let (reserved, own_cpu) = if cfg.boost_evict {
        reserve_for_boosts(&cpus, &threads)
    } else {
        Default::default()
    };
    let (boosting, threads): (Vec<&PlanThread>, Vec<&PlanThread>) =
        threads.into_iter().partition(|t| t.boost != Boost::None);
    let ded = dedicate(&cpus, &threads, &boosting, cfg, previous, unplanned);
    let resting_cpu = place_dedicated(&mut out, &ded, cfg);
    let rest = place_classes(&mut out, &cpus, &threads, &ded, cfg);
    place_boosts(
        &mut out,
        &cpus,
        &boosting,
        &own_cpu,
        &resting_cpu,
        &rest,
        cfg,
    );
    evict(&mut out, &cpus.usable, &reserved, &boosting);
    out
}

/// The CPUs a plan spreads over (online and not isolated; all online ones
/// if every one is isolated), and what the steps ask of them.
struct Cpus<'a> {
    topo: &'a Topology,
    usable: CpuSet,
}

impl<'a> Cpus<'a> {
    fn usable(topo: &'a Topology) -> Option<Cpus<'a>> {
        let mut usable = topo.online.difference(&topo.isolated);
        if usable.is_empty() {
            usable = topo.online.clone();
        }
        (!usable.is_empty()).then_some(Cpus { topo, usable })
    }

    fn capacity(&self, cpu: u32) -> u32 {
        self.topo.cpu(cpu).map_or(CAPACITY_SCALE, |c| c.capacity)
    }

    /// The usable CPUs of `cpu`'s physical core (`topology/core_cpus_list`),
    /// `cpu` alone if the topology does not say.
    fn siblings(&self, cpu: u32) -> CpuSet {
        let core = self
            .topo
            .cpu(cpu)
            .and_then(|c| c.core_cpus.clone())
            .unwrap_or_default()
            .intersection(&self.usable);
        if core.contains(cpu) {
            core
        } else {
            std::iter::once(cpu).collect()
        }
    }

    /// Physical cores among the usable CPUs.
    fn cores(&self) -> usize {
        let mut seen: Vec<CpuSet> = Vec::new();
        for cpu in self.usable.iter() {
            let core = self.siblings(cpu);
            if !seen.contains(&core) {
                seen.push(core);
            }
        }
        seen.len()
    }

    /// Usable CPUs fastest first; among equals the highest id, leaving CPU
    /// 0 (where housekeeping and IRQs tend to land) to the shared group.
    fn by_preference(&self, cpus: impl Iterator<Item = u32>) -> Vec<u32> {
        let mut v: Vec<u32> = cpus.collect();
        v.sort_by(|&a, &b| self.capacity(b).cmp(&self.capacity(a)).then(b.cmp(&a)));
        v
    }
}

/// Paper 001's boost, with the userspace form of its balancing rule (pull
/// the largest-vruntime task off the boosted thread's run queue): with
/// `boost_evict`, the CPU each raised boost runs on (else the fastest
/// free one, lowest id first) is reserved for it — every other group
/// leaves that CPU, heaviest threads included — while at least one CPU
/// stays for everyone else. Memberships never change for a boost, only
/// CPUs and weights (see [`Boost`]). Returns the reserved CPUs and each
/// boosted thread's.
fn reserve_for_boosts(cpus: &Cpus, threads: &[&PlanThread]) -> (CpuSet, BTreeMap<u32, u32>) {
    let mut reserved = CpuSet::new();
    let mut own_cpu = BTreeMap::new();
    let room = (cpus.usable.len() as usize).saturating_sub(1);
    for t in threads.iter().filter(|t| t.boost == Boost::Active) {
        if reserved.len() as usize >= room {
            break;
        }
        let own = Some(t.cpu).filter(|&c| cpus.usable.contains(c) && !reserved.contains(c));
        let pick = own.or_else(|| {
            let mut free: Vec<u32> = cpus.usable.difference(&reserved).iter().collect();
            free.sort_by(|&a, &b| cpus.capacity(b).cmp(&cpus.capacity(a)).then(a.cmp(&b)));
            free.first().copied()
        });
        if let Some(cpu) = pick {
            reserved.insert(cpu);
            own_cpu.insert(t.tid, cpu);
        }
    }
    (reserved, own_cpu)
}

/// Paper 000's dedicated cores: which heavy threads get one, and where.
struct Dedication<'a> {
    /// (CPU, owner), in the order they were given.
    dedicated: Vec<(u32, &'a PlanThread)>,
    /// The dedicated CPUs and their siblings (whole cores).
    taken: CpuSet,
    /// Whether any core was dedicated in the plan in force.
    dedicating: bool,
    /// Threads wanting a whole CPU, cores that could be given, heavy
    /// threads: for the notes.
    wanting: usize,
    slots: usize,
    heavy: usize,
}

/// Heavy threads by peak (incumbents favoured), then tid, get the cores a
/// plan may give (all but one); a thread boosted before keeps its own group
/// (see [`Boost`]), yet a heavy one still competes for a core like the
/// others, and its group at rest gets the CPU.
///
/// A dedicated core is a whole physical core: on an SMT machine the
/// owner's siblings leave every other group, since a thread on a sibling
/// shares the core's pipelines and caches with the owner; so the slots
/// are counted in cores. A CPU is a candidate when no CPU of its core
/// runs pinned work; incumbents keep their CPU if it is still usable,
/// newcomers take the CPU they run on if it is as fast as the best free
/// one (first come by rank), then the rest in preference order.
///
/// Among equals no one is dedicated: when more threads want a whole CPU
/// (heavy, or runnable nearly all the time) than there are cores to give,
/// a dedicated core would give one of them a CPU and squeeze the rest onto
/// what is left (paper 000's rule picks one winner; with four identical
/// hogs on two CPUs that is 1.0 / 0.33 / 0.33 / 0.33 instead of the
/// kernel's 0.5 each, for no gain in throughput), and every exit of a
/// short-lived winner (a compiler in a parallel build) re-plans. Once
/// cores are dedicated, the threads squeezed onto the others are runnable
/// nearly all the time because of that plan (a periodic thread that wants
/// 0.35 of a CPU and gets 0.3 never sleeps): then only the heavy class
/// counts, or the plan would undo itself every other step. Young CPU-bound
/// threads are not squeezed by a plan (they were not classified when it
/// was made): they always count, so a parallel build's compilers end a
/// dedication instead of queueing beside it.
fn dedicate<'a>(
    cpus: &Cpus,
    threads: &[&'a PlanThread],
    boosting: &[&'a PlanThread],
    cfg: &PlanConfig,
    previous: Option<&Plan>,
    unplanned: &Unplanned,
) -> Dedication<'a> {
    let prev_cpu = |tid: u32| previous.and_then(|p| p.dedicated_cpu(tid));
    let mut heavy: Vec<&PlanThread> = threads
        .iter()
        .chain(boosting)
        .copied()
        .filter(|t| t.class == Class::Heavy && !unplanned.spawners.contains(&t.tid))
        .collect();
    let rank = |t: &PlanThread| {
        t.peak
            + if prev_cpu(t.tid).is_some() {
                INCUMBENT_BONUS
            } else {
                0.0
            }
    };
    heavy.sort_by(|a, b| rank(b).total_cmp(&rank(a)).then(a.tid.cmp(&b.tid)));
    let slots = if cfg.dedicated_cores {
        cpus.cores().saturating_sub(1)
    } else {
        0
    };
    let dedicating =
        previous.is_some_and(|p| p.groups.values().any(|g| g.kind == GroupKind::Dedicated));
    let wanting = threads
        .iter()
        .chain(boosting)
        .filter(|t| t.class == Class::Heavy || (!dedicating && t.runnable >= CPU_BOUND))
        .count()
        + unplanned.cpu_bound;
    let winners = if wanting > slots {
        &heavy[..0]
    } else {
        &heavy[..heavy.len().min(slots)]
    };
    let candidates = cpus.by_preference(
        cpus.usable
            .iter()
            .filter(|&c| cpus.siblings(c).intersection(&unplanned.pinned).is_empty()),
    );
    let mut d = Dedication {
        dedicated: Vec::new(),
        taken: CpuSet::new(),
        dedicating,
        wanting,
        slots,
        heavy: heavy.len(),
    };
    let give = |d: &mut Dedication<'a>, cpu: u32, t: &'a PlanThread| {
        d.taken = d.taken.union(&cpus.siblings(cpu));
        d.dedicated.push((cpu, t));
    };
    let free = |d: &Dedication, c: u32| candidates.contains(&c) && !d.taken.contains(c);
    for &t in winners {
        if let Some(cpu) = prev_cpu(t.tid).filter(|&c| free(&d, c)) {
            give(&mut d, cpu, t);
        }
    }
    // A kept core slower than a free one (a big core back online, or
    // freed by a thread that left): the slowest kept core's thread moves
    // to the fastest free core, until no free core is faster than any
    // kept one. Each move raises the dedicated capacity, so this ends.
    loop {
        let best_free = candidates.iter().copied().find(|&c| !d.taken.contains(c));
        let slowest = d
            .dedicated
            .iter()
            .enumerate()
            .min_by_key(|(_, (c, _))| (cpus.capacity(*c), std::cmp::Reverse(*c)))
            .map(|(i, (c, _))| (i, *c));
        match (best_free, slowest) {
            (Some(to), Some((i, from))) if cpus.capacity(to) > cpus.capacity(from) => {
                let (_, t) = d.dedicated.remove(i);
                d.taken = d
                    .dedicated
                    .iter()
                    .fold(CpuSet::new(), |acc, (c, _)| acc.union(&cpus.siblings(*c)));
                give(&mut d, to, t);
            }
            _ => break,
        }
    }
    for &t in winners {
        let best_free = candidates
            .iter()
            .find(|&&c| !d.taken.contains(c))
            .map(|&c| cpus.capacity(c));
        if d.dedicated.iter().all(|(_, o)| o.tid != t.tid)
            && free(&d, t.cpu)
            && best_free.is_some_and(|best| cpus.capacity(t.cpu) >= best)
        {
            give(&mut d, t.cpu, t);
        }
    }
    for &t in winners {
        if d.dedicated.iter().any(|(_, o)| o.tid == t.tid) {
            continue;
        }
        if let Some(&cpu) = candidates.iter().find(|&&c| !d.taken.contains(c)) {
            give(&mut d, cpu, t);
        }
    }
    d
}

/// A dedicated core's weight: with an exclusive cpuset nobody else is
/// there to yield to it.
fn dedicated_weight(cfg: &PlanConfig) -> u64 {
    if cfg.dedicated_exclusive {
        cfg.shared_shares
    } else {
        cfg.dedicated_shares
    }
}

/// The latency group's EEVDF slice (ns), if any: an earlier virtual
/// deadline, and (PREEMPT_SHORT) preemption of a running thread with a
/// longer slice on wake-up instead of a wait for its protected slice.
fn latency_slice_ns(cfg: &PlanConfig) -> Option<u64> {
    (cfg.latency_slice_us > 0).then_some(cfg.latency_slice_us * 1000)
}

/// One group per dedicated core, with its notes; returns the boosted
/// owners' cores (their own groups take them, [`place_boosts`]).
fn place_dedicated(out: &mut Plan, d: &Dedication, cfg: &PlanConfig) -> BTreeMap<u32, u32> {
    let mut resting_cpu = BTreeMap::new();
    for (cpu, t) in &d.dedicated {
        if t.boost != Boost::None {
            resting_cpu.insert(t.tid, *cpu);
            continue;
        }
        let name = dedicated_name(*cpu);
        out.groups.insert(
            name.clone(),
            GroupSpec {
                name: name.clone(),
                kind: GroupKind::Dedicated,
                cpus: std::iter::once(*cpu).collect(),
                shares: dedicated_weight(cfg),
                slice_ns: None,
                nice: None,
            },
        );
        out.placements.insert(t.tid, (t.pid, name));
    }
    if d.wanting > d.slots && d.slots > 0 {
        out.notes.push(format!(
            "{} threads want a whole CPU and at most {} can have one: none is dedicated, they share",
            d.wanting, d.slots
        ));
    } else if d.heavy > d.dedicated.len() {
        out.notes.push(format!(
            "{}, {} (at most online CPUs - 1): the rest share",
            crate::words::count(d.heavy, "heavy thread", "heavy threads"),
            crate::words::count(d.dedicated.len(), "dedicated core", "dedicated cores")
        ));
    }
    resting_cpu
}

/// The CPUs the class groups got, which boost groups at rest take too.
struct Rest {
    latency: CpuSet,
    shared: CpuSet,
}

/// The medium, latency and shared groups on the CPUs no heavy thread
/// owns.
///
/// Those CPUs count for the guarantees (the medium group's weight); the
/// groups' cpusets keep the dedicated CPUs unless `dedicated_exclusive`:
/// a dedicated group's weight already keeps its CPU for its owner while
/// the owner is runnable, and the load balancer moves the others off it,
/// yet when the owner blocks or exits the CPU is used at once
/// (work-conserving). An exclusive cpuset leaves it idle until the next
/// plan. (Their SMT siblings are left by everyone: a sibling's work would
/// slow the owner down, and no weight keeps it off.)
///
/// A medium thread runnable nearly all the time, with no core dedicated,
/// is a CPU-bound one squeezed to 30-50 % (it counts among those wanting
/// a whole CPU), not one that wants half a CPU: it shares. In a unit of
/// sixteen hogs on 4 CPUs, the ones the load balancer happened to leave
/// 30-42 % read as medium, took the guarantee, and a periodic thread
/// wanting 0.35 of a CPU got 0.12 (the systemd guest). Once cores are
/// dedicated, squeezed periodic threads never sleep either and keep it.
fn place_classes(
    out: &mut Plan,
    cpus: &Cpus,
    threads: &[&PlanThread],
    d: &Dedication,
    cfg: &PlanConfig,
) -> Rest {
    let rest = cpus.usable.difference(&d.taken);
    let owned: CpuSet = d.dedicated.iter().map(|(cpu, _)| *cpu).collect();
    let rest_cpus = if cfg.dedicated_exclusive || rest.is_empty() {
        rest.clone()
    } else {
        rest.union(&owned)
    };
    let others: Vec<&PlanThread> = threads
        .iter()
        .copied()
        .filter(|t| !out.placements.contains_key(&t.tid))
        .collect();
    let squeezed = |t: &PlanThread| !d.dedicating && t.runnable >= CPU_BOUND;
    let of = |keep: &dyn Fn(&PlanThread) -> bool| -> Vec<&PlanThread> {
        others.iter().copied().filter(|t| keep(t)).collect()
    };
    let medium = of(&|t| t.class == Class::Medium && !squeezed(t));
    let latency = of(&|t| t.class == Class::LatencyCritical);
    let shared = of(&|t| {
        matches!(t.class, Class::Light | Class::Heavy) || (t.class == Class::Medium && squeezed(t))
    });
    let shared_cpus = shared_cpus(cpus, &rest, &rest_cpus, &shared);
    // Parity is with the shared threads that compete like a medium one
    // (runnable at least `medium_min_cpu`), not the sleepers.
    let competing = shared
        .iter()
        .filter(|t| t.runnable >= cfg.medium_min_cpu)
        .count() as u32;
    let (medium_shares, guaranteed) = medium_group_shares(
        medium.len() as u32,
        cfg.medium_min_cpu,
        rest.len(),
        cfg.shared_shares,
        competing,
    );
    add_group(
        out,
        MEDIUM,
        GroupKind::Medium,
        &rest_cpus,
        medium_shares,
        None,
        &medium,
    );
    // The latency group never spans a dedicated CPU: its weight there
    // would take the owner's CPU whenever a member wakes (both groups are
    // high-weight), and its members need short waits, not a whole CPU.
    let latency_cpus = if rest.is_empty() {
        rest_cpus.clone()
    } else {
        rest.clone()
    };
    let slice = latency_slice_ns(cfg);
    add_group(
        out,
        LATENCY,
        GroupKind::Latency,
        &latency_cpus,
        cfg.latency_shares,
        slice,
        &latency,
    );
    add_group(
        out,
        SHARED,
        GroupKind::Shared,
        &shared_cpus,
        cfg.shared_shares,
        None,
        &shared,
    );
    if cfg.per_thread {
        // No group weight on the per-thread backend: its members' nice.
        if let Some(g) = out.groups.get_mut(MEDIUM) {
            g.nice = medium_nice(
                medium.len() as u32,
                cfg.medium_min_cpu,
                rest.len(),
                competing,
            );
        }
    }
    if !medium.is_empty() && !guaranteed {
        out.notes.push(format!(
            "{} medium threads cannot each be guaranteed {} of a CPU on {} shared CPUs",
            medium.len(),
            cfg.medium_min_cpu,
            rest.len()
        ));
    }
    Rest {
        latency: latency_cpus,
        shared: shared_cpus,
    }
}

/// The shared group's CPUs: on a heterogeneous machine its little cores
/// when they hold the shared threads' demand with headroom — the little
/// cores nobody owns if they do, so that a light thread never queues
/// behind a heavy one on a little core dedicated to it (a big core gone
/// offline leaves a heavy thread there) — else every CPU the class groups
/// have. `rest` is the CPUs no dedicated core takes, `rest_cpus` those
/// the class groups may use.
fn shared_cpus(cpus: &Cpus, rest: &CpuSet, rest_cpus: &CpuSet, shared: &[&PlanThread]) -> CpuSet {
    if !cpus.topo.performance.heterogeneous {
        return rest_cpus.clone();
    }
    let demand: f64 = shared.iter().map(|t| t.util).sum();
    let holds = |set: &CpuSet| {
        let room: f64 = set
            .iter()
            .map(|c| cpus.capacity(c) as f64 / CAPACITY_SCALE as f64)
            .sum();
        !set.is_empty() && room >= demand * LITTLE_HEADROOM
    };
    let little = cpus.topo.of_type(CoreType::Little);
    [rest.intersection(&little), rest_cpus.intersection(&little)]
        .into_iter()
        .find(holds)
        .unwrap_or_else(|| rest_cpus.clone())
}

/// A class group with its members, if it has any.
fn add_group(
    out: &mut Plan,
    name: &str,
    kind: GroupKind,
    cpus: &CpuSet,
    shares: u64,
    slice_ns: Option<u64>,
    members: &[&PlanThread],
) {
    if members.is_empty() {
        return;
    }
    out.groups.insert(
        name.to_string(),
        GroupSpec {
            name: name.to_string(),
            kind,
            cpus: cpus.clone(),
            shares,
            slice_ns,
            nice: None,
        },
    );
    for t in members {
        out.placements.insert(t.tid, (t.pid, name.to_string()));
    }
}

/// Boost groups: at rest, a thread's own group is like the group its
/// class would give it (its dedicated core, latency-critical or shared);
/// raised, it has the highest weight, the boost's nice and slice, and its
/// reserved CPU.
fn place_boosts(
    out: &mut Plan,
    cpus: &Cpus,
    boosting: &[&PlanThread],
    own_cpu: &BTreeMap<u32, u32>,
    resting_cpu: &BTreeMap<u32, u32>,
    rest: &Rest,
    cfg: &PlanConfig,
) {
    for t in boosting {
        let name = boost_name(t.tid);
        let spec = if t.boost == Boost::Active {
            GroupSpec {
                name: name.clone(),
                kind: GroupKind::Boost,
                cpus: own_cpu
                    .get(&t.tid)
                    .map_or_else(|| cpus.usable.clone(), |&c| std::iter::once(c).collect()),
                shares: crate::share::MAX_SHARES,
                slice_ns: (cfg.boost_slice_us > 0).then_some(cfg.boost_slice_us * 1000),
                nice: Some(cfg.boost_nice),
            }
        } else if let Some(&cpu) = resting_cpu.get(&t.tid) {
            // A heavy thread's core, as its dedicated group would have it.
            GroupSpec {
                name: name.clone(),
                kind: GroupKind::Boost,
                cpus: std::iter::once(cpu).collect(),
                shares: dedicated_weight(cfg),
                slice_ns: None,
                nice: None,
            }
        } else {
            let latency = t.class == Class::LatencyCritical;
            GroupSpec {
                name: name.clone(),
                kind: GroupKind::Boost,
                cpus: if latency {
                    rest.latency.clone()
                } else {
                    rest.shared.clone()
                },
                shares: if latency {
                    cfg.latency_shares
                } else {
                    cfg.shared_shares
                },
                slice_ns: latency.then(|| latency_slice_ns(cfg)).flatten(),
                nice: None,
            }
        };
        out.groups.insert(name.clone(), spec);
        out.placements.insert(t.tid, (t.pid, name));
    }
}

/// Eviction: every group that is not a raised boost group leaves the
/// reserved CPUs; one left with none (a dedicated core that is reserved)
/// shares the CPUs still free for the boost's duration.
fn evict(out: &mut Plan, usable: &CpuSet, reserved: &CpuSet, boosting: &[&PlanThread]) {
    if reserved.is_empty() {
        return;
    }
    let free = usable.difference(reserved);
    let raised: Vec<String> = boosting
        .iter()
        .filter(|t| t.boost == Boost::Active)
        .map(|t| boost_name(t.tid))
        .collect();
    for g in out.groups.values_mut() {
        if !raised.contains(&g.name) {
            let left = g.cpus.difference(reserved);
            g.cpus = if left.is_empty() { free.clone() } else { left };
        }
    }
}

/// One step from the plan in force to a new one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "op")]
pub enum Change {
    /// Create a group, or set its CPUs and shares.
    SetGroup(GroupSpec),
    /// Move a thread into a group.
    Move { tid: u32, pid: u32, group: String },
    /// Put a thread back where it was before corral moved it.
    Release { tid: u32 },
    /// Remove an empty group.
    RemoveGroup { name: String },
    /// Send a thread corral does not manage out of corral's cpu groups,
    /// to where its process came from: a thread that turned real-time
    /// inside one (born to a member) would run on the group's real-time
    /// budget there (cgroup v1 with real-time group scheduling).
    SendHome { tid: u32, pid: u32 },
}

/// A change in words, as the log and a dry run print it.
impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::SetGroup(g) => {
                write!(
                    f,
                    "set group {} cpus {} shares {}",
                    g.name, g.cpus, g.shares
                )
            }
            Change::Move { tid, pid, group } => {
                write!(f, "move thread {tid} (process {pid}) to {group}")
            }
            Change::Release { tid } => write!(f, "put thread {tid} back"),
            Change::RemoveGroup { name } => write!(f, "remove group {name}"),
            Change::SendHome { tid, pid } => write!(
                f,
                "send real-time thread {tid} (process {pid}) out of corral's groups"
            ),
        }
    }
}

/// The changes that turn `applied` into `next`, in an order that is
/// always valid: groups are created or updated first (so a thread never
/// enters a group that does not exist), then threads move, then threads
/// leave, then groups that lost every member are removed.
pub fn diff(applied: &Plan, next: &Plan) -> Vec<Change> {
    let mut out = Vec::new();
    for (name, g) in &next.groups {
        if applied.groups.get(name) != Some(g) {
            out.push(Change::SetGroup(g.clone()));
        }
    }
    for (tid, (pid, group)) in &next.placements {
        if applied.placements.get(tid).map(|(_, g)| g) != Some(group) {
            out.push(Change::Move {
                tid: *tid,
                pid: *pid,
                group: group.clone(),
            });
        }
    }
    for tid in applied.placements.keys() {
        if !next.placements.contains_key(tid) {
            out.push(Change::Release { tid: *tid });
        }
    }
    for name in applied.groups.keys() {
        if !next.groups.contains_key(name) {
            out.push(Change::RemoveGroup { name: name.clone() });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{PerfReadings, RawCpu, RawTopology};
    use proptest::prelude::*;

    fn topo(online: &str, possible: u32, caps: &[u64]) -> Topology {
        let all = CpuSet::first_n(possible);
        Topology::from_raw(RawTopology {
            possible: all.clone(),
            present: all.clone(),
            online: CpuSet::parse(online).unwrap(),
            cpus: (0..possible)
                .map(|id| RawCpu {
                    id,
                    perf: PerfReadings {
                        cpu_capacity: caps.get(id as usize).copied(),
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }

    fn t(tid: u32, class: Class, peak: f64) -> PlanThread {
        PlanThread {
            tid,
            pid: tid,
            class,
            peak,
            util: peak,
            runnable: peak,
            // On no usable CPU unless a test says otherwise, so the
            // preference order alone decides.
            cpu: u32::MAX,
            boost: Boost::None,
        }
    }

    #[test]
    fn heavy_gets_a_core_and_the_rest_share_the_others() {
        let p = plan(
            &topo("0-1", 2, &[]),
            &[
                t(1, Class::Heavy, 0.9),
                t(2, Class::Light, 0.1),
                t(3, Class::Medium, 0.4),
                t(4, Class::LatencyCritical, 0.1),
            ],
            &PlanConfig::default(),
            None,
        );
        assert_eq!(p.dedicated_cpu(1), Some(1));
        assert_eq!(p.group_of(1).unwrap().shares, 10240);
        // Work-conserving: the others yield CPU 1 by weight, not by cpuset.
        assert_eq!(p.group_of(2).unwrap().cpus.to_string(), "0-1");
        assert_eq!(p.group_of(2).unwrap().slice_ns, None);
        assert_eq!(p.group_of(3).unwrap().name, MEDIUM);
        assert_eq!(p.group_of(4).unwrap().shares, 10240);
        assert_eq!(p.group_of(4).unwrap().slice_ns, Some(300_000));
        // The latency group never spans a dedicated CPU.
        assert_eq!(p.group_of(4).unwrap().cpus.to_string(), "0");
        // One medium thread on one shared CPU against 1024: 1024 guarantees 0.5.
        assert_eq!(p.group_of(3).unwrap().shares, 1024);
        // Exclusive: the others leave the dedicated CPU (paper 000's form).
        let exclusive = PlanConfig {
            dedicated_exclusive: true,
            ..Default::default()
        };
        let p = plan(
            &topo("0-1", 2, &[]),
            &[t(1, Class::Heavy, 0.9), t(2, Class::Light, 0.1)],
            &exclusive,
            None,
        );
        assert_eq!(p.dedicated_cpu(1), Some(1));
        assert_eq!(p.group_of(1).unwrap().shares, 1024);
        assert_eq!(p.group_of(2).unwrap().cpus.to_string(), "0");
    }

    /// The per-thread backend: one medium thread beside six CPU-bound
    /// shared threads on 2 CPUs gets nice -5 (share::medium_nice), where the
    /// cgroup backends give its group a weight and leave nice alone.
    #[test]
    fn per_thread_medium_guarantee_is_a_nice_value() {
        let mut threads = vec![t(1, Class::Medium, 0.4)];
        // Light by class, yet runnable all the time: they compete.
        threads.extend((2..8).map(|tid| PlanThread {
            runnable: 1.0,
            ..t(tid, Class::Light, 0.25)
        }));
        let cfg = PlanConfig {
            dedicated_exclusive: true,
            per_thread: true,
            ..Default::default()
        };
        let p = plan(&topo("0-1", 2, &[]), &threads, &cfg, None);
        assert_eq!(p.group_of(1).unwrap().kind, GroupKind::Medium);
        assert_eq!(p.group_of(1).unwrap().nice, Some(-5));
        assert_eq!(p.group_of(2).unwrap().nice, None);
        let p = plan(&topo("0-1", 2, &[]), &threads, &PlanConfig::default(), None);
        assert_eq!(p.group_of(1).unwrap().nice, None);
        // Nothing competing: nice 0 suffices, left alone.
        let p = plan(&topo("0-1", 2, &[]), &threads[..2], &cfg, None);
        assert_eq!(p.group_of(1).unwrap().nice, None);
    }

    /// A medium thread runnable all the time with no core dedicated is a
    /// squeezed CPU-bound one: it shares, and counts among the competing.
    #[test]
    fn a_squeezed_cpu_bound_thread_is_not_guaranteed_half_a_cpu() {
        let hog = |tid, util| PlanThread {
            runnable: 1.0,
            ..t(tid, Class::Medium, util)
        };
        let threads = [
            t(1, Class::Medium, 0.35),
            hog(2, 0.42),
            hog(3, 0.32),
            hog(4, 0.31),
            PlanThread {
                runnable: 1.0,
                ..t(5, Class::Light, 0.2)
            },
        ];
        let cfg = PlanConfig {
            per_thread: true,
            ..Default::default()
        };
        let p = plan(&topo("0-1", 2, &[]), &threads, &cfg, None);
        assert_eq!(p.group_of(1).unwrap().kind, GroupKind::Medium);
        for tid in 2..=5 {
            assert_eq!(p.group_of(tid).unwrap().kind, GroupKind::Shared, "{tid}");
        }
        // 1 member, 4 competing on 2 CPUs: 2 on its run queue, 2048, nice -4.
        assert_eq!(p.group_of(1).unwrap().nice, Some(-4));
    }

    /// Issue 16: a heavy thread whose boost ended keeps its own group, on
    /// its dedicated core, not on every CPU until the group is dropped.
    #[test]
    fn a_heavy_thread_at_rest_after_a_boost_gets_its_core_back() {
        let threads = [
            PlanThread {
                boost: Boost::Ready,
                cpu: 1,
                ..t(1, Class::Heavy, 0.99)
            },
            t(2, Class::Light, 0.1),
        ];
        let cfg = PlanConfig {
            dedicated_exclusive: true,
            ..Default::default()
        };
        let p = plan(&topo("0-1", 2, &[]), &threads, &cfg, None);
        let g = p.group_of(1).unwrap();
        assert_eq!(g.kind, GroupKind::Boost);
        assert_eq!(g.cpus.to_string(), "1");
        assert_eq!(p.group_of(2).unwrap().cpus.to_string(), "0");
        // No empty dedicated group beside it.
        assert!(p.groups.values().all(|g| g.kind != GroupKind::Dedicated));
    }

    /// Issue 13: four identical hogs on two CPUs. Paper 000's rule gave one
    /// a core and squeezed three onto the other (1.0 / 0.33 × 3), and the
    /// three were then classified medium; among equals none is dedicated.
    #[test]
    fn among_equals_none_is_dedicated() {
        let p = plan(
            &topo("0-1", 2, &[]),
            &[t(1, Class::Heavy, 0.6), t(2, Class::Heavy, 0.9)],
            &PlanConfig::default(),
            None,
        );
        assert_eq!(p.dedicated_cpu(2), None);
        assert_eq!(p.group_of(1).unwrap().name, SHARED);
        assert_eq!(p.group_of(2).unwrap().name, SHARED);
        assert_eq!(p.notes.len(), 1);
        assert!(p.notes[0].contains("want a whole CPU"), "{:?}", p.notes);
        // What the old rule's losers look like: classified medium at 0.33,
        // but runnable all the time. They still count as wanting a CPU.
        let squeezed = |tid| PlanThread {
            runnable: 1.0,
            ..t(tid, Class::Medium, 0.33)
        };
        let p = plan(
            &topo("0-1", 2, &[]),
            &[
                t(1, Class::Heavy, 1.0),
                squeezed(2),
                squeezed(3),
                squeezed(4),
            ],
            &PlanConfig::default(),
            None,
        );
        assert_eq!(p.dedicated_cpu(1), None);
        // Enough cores for every one that wants one: highest peak first.
        let p = plan(
            &topo("0-2", 3, &[]),
            &[t(1, Class::Heavy, 0.6), t(2, Class::Heavy, 0.9)],
            &PlanConfig::default(),
            None,
        );
        assert_eq!(p.dedicated_cpu(2), Some(2));
        assert_eq!(p.dedicated_cpu(1), Some(1));
        // One CPU: nothing dedicated.
        let p = plan(
            &topo("0", 1, &[]),
            &[t(1, Class::Heavy, 0.9)],
            &PlanConfig::default(),
            None,
        );
        assert_eq!(p.group_of(1).unwrap().name, SHARED);
    }

    /// Issue 13: on an SMT machine a dedicated core is a whole core. Two
    /// cores of two threads each (CPUs 0,2 and 1,3, as x86 numbers them):
    /// one slot; the owner's sibling leaves every other group.
    #[test]
    fn a_dedicated_core_is_a_whole_smt_core() {
        let mut tp = topo("0-3", 4, &[]);
        for c in &mut tp.cpus {
            c.core_cpus = Some(CpuSet::parse(if c.id % 2 == 0 { "0,2" } else { "1,3" }).unwrap());
        }
        let p = plan(
            &tp,
            &[
                t(1, Class::Heavy, 0.9),
                t(2, Class::Light, 0.1),
                t(3, Class::LatencyCritical, 0.1),
            ],
            &PlanConfig::default(),
            None,
        );
        let cpu = p.dedicated_cpu(1).unwrap();
        let sibling = if cpu.is_multiple_of(2) {
            cpu ^ 2
        } else {
            4 - cpu
        };
        let shared = &p.group_of(2).unwrap().cpus;
        assert!(
            !shared.contains(sibling),
            "{shared} holds sibling {sibling}"
        );
        assert!(shared.contains(cpu), "work-conserving on the owner's CPU");
        assert_eq!(shared.len(), 3);
        assert_eq!(p.group_of(3).unwrap().cpus.len(), 2);
        // Two heavy threads: one slot, two wanting → none dedicated.
        let p = plan(
            &tp,
            &[t(1, Class::Heavy, 0.9), t(2, Class::Heavy, 0.9)],
            &PlanConfig::default(),
            None,
        );
        assert_eq!(p.dedicated_cpu(1), None);
        assert_eq!(p.dedicated_cpu(2), None);
    }

    /// A thread that forks processes (a build driver) is never dedicated:
    /// its children would start on its one CPU.
    #[test]
    fn a_spawner_gets_no_dedicated_core() {
        let tp = topo("0-2", 3, &[]);
        let unplanned = Unplanned {
            spawners: [1].into_iter().collect(),
            ..Default::default()
        };
        let p = plan_around(
            &tp,
            &[t(1, Class::Heavy, 0.9), t(2, Class::Heavy, 0.8)],
            &PlanConfig::default(),
            None,
            &unplanned,
        );
        assert_eq!(p.dedicated_cpu(1), None);
        assert_eq!(p.group_of(1).unwrap().name, SHARED);
        assert!(p.dedicated_cpu(2).is_some());
    }

    /// Young CPU-bound threads (a build's compilers) end a dedication.
    #[test]
    fn young_cpu_bound_threads_end_a_dedication() {
        let tp = topo("0-2", 3, &[]);
        let first = plan(
            &tp,
            &[t(1, Class::Heavy, 0.9)],
            &PlanConfig::default(),
            None,
        );
        assert!(first.dedicated_cpu(1).is_some());
        let unplanned = Unplanned {
            cpu_bound: 2,
            ..Default::default()
        };
        let next = plan_around(
            &tp,
            &[t(1, Class::Heavy, 0.9)],
            &PlanConfig::default(),
            Some(&first),
            &unplanned,
        );
        assert_eq!(next.dedicated_cpu(1), None);
    }

    #[test]
    fn incumbents_keep_their_core() {
        let cfg = PlanConfig::default();
        let tp = topo("0-3", 4, &[]);
        let first = plan(&tp, &[t(1, Class::Heavy, 0.8)], &cfg, None);
        assert_eq!(first.dedicated_cpu(1), Some(3));
        let second = plan(
            &tp,
            &[t(1, Class::Heavy, 0.8), t(2, Class::Heavy, 0.82)],
            &cfg,
            Some(&first),
        );
        assert_eq!(second.dedicated_cpu(1), Some(3), "kept its core");
        assert_eq!(second.dedicated_cpu(2), Some(2));
        // With only one slot and two wanting it, the incumbent gives it up.
        let tp = topo("0-1", 2, &[]);
        let first = plan(&tp, &[t(1, Class::Heavy, 0.8)], &cfg, None);
        let second = plan(
            &tp,
            &[t(1, Class::Heavy, 0.8), t(2, Class::Heavy, 0.82)],
            &cfg,
            Some(&first),
        );
        assert_eq!(second.dedicated_cpu(1), None);
    }

    #[test]
    fn big_cores_dedicated_first_little_cores_shared() {
        let tp = topo("0-7", 8, &[1024, 1024, 1024, 1024, 446, 446, 446, 446]);
        let p = plan(
            &tp,
            &[
                t(1, Class::Heavy, 0.9),
                t(2, Class::Light, 0.2),
                t(3, Class::Light, 0.2),
            ],
            &PlanConfig::default(),
            None,
        );
        assert_eq!(p.dedicated_cpu(1), Some(3));
        assert_eq!(p.group_of(2).unwrap().cpus.to_string(), "4-7");
        // Too much light demand for the little cores: all remaining CPUs.
        let many: Vec<PlanThread> = (10..30).map(|i| t(i, Class::Light, 0.25)).collect();
        let p = plan(&tp, &many, &PlanConfig::default(), None);
        assert_eq!(p.group_of(10).unwrap().cpus.to_string(), "0-7");
    }

    #[test]
    fn a_heavy_thread_on_a_little_core_takes_a_big_core_that_comes_back() {
        // Big CPU 1 offline: the second hog's dedicated core is little.
        let cfg = PlanConfig::default();
        let caps = [1024, 1024, 446, 446];
        let hogs = [t(1, Class::Heavy, 0.9), t(2, Class::Heavy, 0.9)];
        let first = plan(&topo("0,2-3", 4, &caps), &hogs, &cfg, None);
        assert_eq!(first.dedicated_cpu(1), Some(0));
        assert_eq!(first.dedicated_cpu(2), Some(3));
        // The light threads keep off the little core dedicated to it.
        let with_light = [hogs[0].clone(), hogs[1].clone(), t(3, Class::Light, 0.05)];
        let p = plan(&topo("0,2-3", 4, &caps), &with_light, &cfg, Some(&first));
        assert_eq!(p.group_of(3).unwrap().cpus.to_string(), "2");
        // CPU 1 returns: the hog on the little core moves to it; the one
        // on CPU 0 stays.
        let back = plan(&topo("0-3", 4, &caps), &hogs, &cfg, Some(&first));
        assert_eq!(back.dedicated_cpu(1), Some(0));
        assert_eq!(back.dedicated_cpu(2), Some(1));
        // With equal cores, a kept core is never traded for another.
        let flat = topo("0-3", 4, &[]);
        let mut hog = t(1, Class::Heavy, 0.9);
        hog.cpu = 2;
        let one = plan(&flat, &[hog.clone()], &cfg, None);
        assert_eq!(one.dedicated_cpu(1), Some(2));
        let again = plan(&flat, &[hog], &cfg, Some(&one));
        assert_eq!(again.dedicated_cpu(1), Some(2));
    }

    #[test]
    fn a_heavy_thread_keeps_the_cpu_it_runs_on() {
        let tp = topo("0-3", 4, &[]);
        let mut hog = t(1, Class::Heavy, 0.9);
        hog.cpu = 1;
        let p = plan(
            &tp,
            &[hog.clone(), t(2, Class::Light, 0.1)],
            &PlanConfig::default(),
            None,
        );
        assert_eq!(p.dedicated_cpu(1), Some(1));
        assert_eq!(p.group_of(2).unwrap().cpus.to_string(), "0-3");
        // Not when a faster core is free.
        let tp = topo("0-3", 4, &[1024, 446, 1024, 1024]);
        let p = plan(&tp, &[hog], &PlanConfig::default(), None);
        assert_eq!(p.dedicated_cpu(1), Some(3));
    }

    #[test]
    fn a_cpu_pinned_work_needs_is_never_dedicated() {
        let pinned = |cpus: &str| Unplanned {
            pinned: cpus.parse().unwrap(),
            ..Default::default()
        };
        let tp = topo("0-1", 2, &[]);
        let mut hog = t(1, Class::Heavy, 0.9);
        hog.cpu = 0;
        let cfg = PlanConfig::default();
        // The hog would keep the CPU it runs on; pinned work there sends
        // it to the other.
        let p = plan(&tp, &[hog.clone()], &cfg, None);
        assert_eq!(p.dedicated_cpu(1), Some(0));
        let p = plan_around(&tp, &[hog.clone()], &cfg, None, &pinned("0"));
        assert_eq!(p.dedicated_cpu(1), Some(1));
        // An incumbent gives up a CPU that became pinned.
        let before = plan(&tp, &[hog.clone()], &cfg, None);
        let p = plan_around(&tp, &[hog.clone()], &cfg, Some(&before), &pinned("0"));
        assert_eq!(p.dedicated_cpu(1), Some(1));
        let p = plan_around(&tp, &[hog.clone()], &cfg, None, &pinned("0-1"));
        assert!(p.groups.values().all(|g| g.kind != GroupKind::Dedicated));
        // Unclassified CPU-bound threads outnumber the free cores: none.
        let young = Unplanned {
            cpu_bound: 1,
            ..Default::default()
        };
        let p = plan_around(&tp, &[hog], &cfg, None, &young);
        assert!(p.groups.values().all(|g| g.kind != GroupKind::Dedicated));
    }

    #[test]
    fn plans_only_over_online_cpus() {
        let p = plan(
            &topo("0,2", 4, &[]),
            &[t(1, Class::Heavy, 0.9), t(2, Class::Light, 0.1)],
            &PlanConfig::default(),
            None,
        );
        assert_eq!(p.dedicated_cpu(1), Some(2));
        assert_eq!(p.group_of(2).unwrap().cpus.to_string(), "0,2");
        let exclusive = PlanConfig {
            dedicated_exclusive: true,
            ..Default::default()
        };
        let p = plan(
            &topo("0,2", 4, &[]),
            &[t(1, Class::Heavy, 0.9), t(2, Class::Light, 0.1)],
            &exclusive,
            None,
        );
        assert_eq!(p.group_of(2).unwrap().cpus.to_string(), "0");
    }

    #[test]
    fn diff_orders_changes() {
        let tp = topo("0-1", 2, &[]);
        let cfg = PlanConfig::default();
        let a = plan(
            &tp,
            &[t(1, Class::Heavy, 0.9), t(2, Class::Light, 0.1)],
            &cfg,
            None,
        );
        let b = plan(
            &tp,
            &[t(2, Class::Light, 0.1), t(3, Class::LatencyCritical, 0.1)],
            &cfg,
            Some(&a),
        );
        let d = diff(&a, &b);
        assert_eq!(
            d,
            vec![
                Change::SetGroup(b.groups[LATENCY].clone()),
                Change::Move {
                    tid: 3,
                    pid: 3,
                    group: LATENCY.into()
                },
                Change::Release { tid: 1 },
                Change::RemoveGroup {
                    name: dedicated_name(1)
                },
            ]
        );
        assert!(diff(&b, &b).is_empty());
        assert_eq!(diff(&Plan::default(), &Plan::default()), vec![]);
    }

    fn class() -> impl Strategy<Value = Class> {
        prop_oneof![
            Just(Class::Light),
            Just(Class::Medium),
            Just(Class::Heavy),
            Just(Class::LatencyCritical)
        ]
    }

    proptest! {
        #[test]
        fn planner_invariants(
            possible in 1u32..12,
            online_bits in any::<u16>(),
            caps in proptest::collection::vec(prop_oneof![Just(1024u64), Just(446u64)], 12),
            threads in proptest::collection::vec((1u32..60, class(), 0.0f64..1.0), 0..40),
            dedicated_cores in any::<bool>(),
            dedicated_exclusive in any::<bool>(),
        ) {
            let online: CpuSet = (0..possible).filter(|c| online_bits & (1 << c) != 0).collect();
            let online = if online.is_empty() { CpuSet::first_n(1) } else { online };
            let tp = topo(&online.to_string(), possible, &caps[..possible as usize]);
            let threads: Vec<PlanThread> = threads.into_iter().map(|(tid, c, p)| t(tid, c, p)).collect();
            let cfg = PlanConfig { dedicated_cores, dedicated_exclusive, ..Default::default() };
            let p = plan(&tp, &threads, &cfg, None);

            // No group has an empty CPU set; every CPU is online.
            for g in p.groups.values() {
                prop_assert!(!g.cpus.is_empty(), "{} empty", g.name);
                prop_assert!(g.cpus.is_subset(&tp.online), "{} = {} not online", g.name, g.cpus);
            }
            // Dedicated cores are one CPU each, never shared by two heavy
            // threads, fewer than the online CPUs, and none while more
            // threads want a CPU than can have one. Exclusive: no other
            // group has them; otherwise every other group does
            // (work-conserving).
            let dedicated: Vec<&GroupSpec> = p.groups.values().filter(|g| g.kind == GroupKind::Dedicated).collect();
            prop_assert!(dedicated.len() < tp.online.len().max(2) as usize);
            let mut uniq = threads.clone();
            uniq.sort_by_key(|t| t.tid);
            uniq.dedup_by_key(|t| t.tid);
            let wanting = uniq.iter().filter(|t| t.class == Class::Heavy || t.runnable >= CPU_BOUND).count();
            if wanting >= tp.online.len() as usize {
                prop_assert!(dedicated.is_empty());
            }
            for d in &dedicated {
                prop_assert_eq!(d.cpus.len(), 1);
                for g in p.groups.values().filter(|g| g.name != d.name) {
                    let overlap = !d.cpus.intersection(&g.cpus).is_empty();
                    if g.kind == GroupKind::Dedicated || g.kind == GroupKind::Latency || dedicated_exclusive {
                        prop_assert!(!overlap, "{} overlaps {}", d.name, g.name);
                    } else if !(g.kind == GroupKind::Shared && tp.performance.heterogeneous) {
                        // (Shared work may be kept on little cores.)
                        prop_assert!(overlap, "{} leaves {}", g.name, d.name);
                    }
                }
            }
            // Each managed thread is in exactly one existing group.
            let mut tids: Vec<u32> = threads.iter().map(|t| t.tid).collect();
            tids.sort_unstable();
            tids.dedup();
            prop_assert_eq!(p.placements.keys().copied().collect::<Vec<_>>(), tids);
            for (_, g) in p.placements.values() {
                prop_assert!(p.groups.contains_key(g));
            }
            // Same input, same plan (and order of input does not matter).
            let mut rev = threads.clone();
            rev.reverse();
            prop_assert_eq!(&plan(&tp, &threads, &cfg, None), &p);
            if threads.iter().map(|t| t.tid).collect::<std::collections::BTreeSet<_>>().len() == threads.len() {
                prop_assert_eq!(&plan(&tp, &rev, &cfg, None), &p);
            }
            // Applying the diff from nothing yields the plan.
            let d = diff(&Plan::default(), &p);
            prop_assert_eq!(d.len(), p.groups.len() + p.placements.len());
        }

        #[test]
        fn a_boost_changes_groups_never_placements(
            online_n in 1u32..9,
            threads in proptest::collection::vec((1u32..40, class(), 0.0f64..1.0, 0u32..8), 1..30),
            boosted in proptest::collection::vec(any::<bool>(), 30),
            evict in any::<bool>(),
        ) {
            let tp = topo(&CpuSet::first_n(online_n).to_string(), online_n, &[]);
            let mut threads: Vec<PlanThread> = threads
                .into_iter()
                .map(|(tid, c, p, cpu)| PlanThread { cpu, ..t(tid, c, p) })
                .collect();
            threads.sort_by_key(|t| t.tid);
            threads.dedup_by_key(|t| t.tid);
            let cfg = PlanConfig { boost_evict: evict, ..Default::default() };
            let pick = |i: usize| boosted[i % boosted.len()];
            let at_rest: Vec<PlanThread> = threads.iter().enumerate()
                .map(|(i, t)| PlanThread { boost: if pick(i) { Boost::Ready } else { Boost::None }, ..t.clone() })
                .collect();
            let raised: Vec<PlanThread> = at_rest.iter()
                .map(|t| PlanThread { boost: if t.boost == Boost::Ready { Boost::Active } else { Boost::None }, ..t.clone() })
                .collect();
            let calm = plan(&tp, &at_rest, &cfg, None);
            let hot = plan(&tp, &raised, &cfg, None);
            // Same members everywhere: a boost moves no thread.
            prop_assert_eq!(&calm.placements, &hot.placements);
            prop_assert_eq!(calm.groups.keys().collect::<Vec<_>>(), hot.groups.keys().collect::<Vec<_>>());
            // Raised groups: the highest weight and the boost's nice.
            let raised_names: Vec<String> = raised.iter().filter(|t| t.boost == Boost::Active).map(|t| boost_name(t.tid)).collect();
            let mut reserved = CpuSet::new();
            for name in &raised_names {
                let g = &hot.groups[name];
                prop_assert_eq!(g.shares, crate::share::MAX_SHARES);
                prop_assert_eq!(g.nice, Some(cfg.boost_nice));
                if g.cpus.len() < tp.online.len() {
                    prop_assert!(evict && g.cpus.len() == 1);
                    reserved = reserved.union(&g.cpus);
                }
            }
            // At least one CPU stays for everyone else, and nobody else is
            // on a reserved CPU; no group is ever empty.
            prop_assert!(reserved.len() < tp.online.len());
            for g in hot.groups.values() {
                prop_assert!(!g.cpus.is_empty(), "{} empty", g.name);
                if !raised_names.contains(&g.name) {
                    prop_assert!(g.cpus.intersection(&reserved).is_empty(), "{} on a reserved CPU", g.name);
                }
            }
            // Groups at rest are as if no boost had ever been asked for.
            for (name, g) in &calm.groups {
                if !raised_names.contains(name) && reserved.is_empty() {
                    prop_assert_eq!(&hot.groups[name], g);
                }
            }
        }
    }
}
