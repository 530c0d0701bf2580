//! The simulated machine: CPUs with capacities, rt-app threads executing
//! their events, and a kernel model deciding who runs.
//!
//! The machine plays the kernel's core (kernel/sched/core.c): it wakes and
//! blocks tasks, calls the model's hooks at the same points `try_to_wake_up`,
//! `schedule()` and `scheduler_tick()` do, and keeps the books. A `run` of
//! `w` µs takes `w · 1024 / capacity` µs of wall time on a CPU (rt-app's
//! `run` scales with capacity; `runtime` does not).
//!
//! The kernel model decides: the fair class (CFS or EEVDF, groups, CFS
//! bandwidth, balancing; [`crate::sched::fair`]) under the RT class
//! ([`crate::sched::classes`]). Hot-plug and NOHZ idle are the machine's.

use crate::engine::{FastMap, Ns, Queue, Rng};
use crate::error::Error;
use crate::input::rtapp::{Event, Name, TimerMode, Workload};
use crate::out::hist::{Histogram, SignedHistogram};
use crate::sched::kernel::{allows, SchedClass, TaskId, WakeCtx};
use crate::sched::pelt::{Pelt, SchedAvg};
use corral_core::share::nice_to_weight;
use std::collections::VecDeque;
use std::rc::Rc;

/// The CPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    /// Capacity of each CPU, 1–1024.
    pub capacities: Vec<u32>,
    /// Timer interrupts per second (CONFIG_HZ).
    pub hz: u32,
    /// Where the tick grid lies against the workload's start: ticks at
    /// `tick_phase + k·(1 s / hz)`, the same instants on every CPU (the
    /// kernel's default, `skew_tick=0`). A live workload starts at an
    /// arbitrary point of a tick; 0 puts its start on a tick, so timers
    /// whose period is a multiple of the tick expire on ticks (platform
    /// files default to half a tick, `input::platform`).
    pub tick_phase: Ns,
    /// CPU hot-plug: at (ns), CPU, online or not.
    pub hotplug: Vec<(Ns, usize, bool)>,
    /// CPUs offline when the machine starts (a phone at rest).
    pub offline: Vec<usize>,
    /// A hot-plug governor, as phones run (paper 003).
    pub governor: Option<Governor>,
    /// What the scheduler's own work costs (all nil unless a platform
    /// file's `[costs]` gives them, as `corral lab costs` measures them).
    pub costs: Costs,
    /// The slack of a normal task's timed sleeps, ns: `timer_slack_ns`,
    /// [`TIMER_SLACK_NS`] unless a platform file's `timer_slack` says
    /// otherwise (`corral lab validate` gives the 1 ns its live rt-app
    /// runs with). See [`Machine::hrtimer_sleep`].
    ///
    /// The older models (`SchedClass::timer_slack` false) sleep without
    /// it. XXX: their kernels (2.4, O(1)) slept on jiffies, with no
    /// hrtimer (2.6.16): their sleeps here end on time.
    pub timer_slack: Ns,
    /// A guest kernel that packs work onto busy vCPUs: a CPU whose
    /// utilization with the woken task's stays under this keeps the
    /// wake-ups it makes, and idle CPUs do not pull from it (`None`,
    /// upstream Linux, by default; `corral lab placement` measures it).
    /// See [`SchedClass::set_vcpu_pack_util`].
    pub vcpu_pack_util: Option<u64>,
    /// How an rt-app `run` of fixed work varies live, by the run's
    /// length: for each length measured (ns, ascending), factors of a
    /// run's length, each as likely, as many at every length (see
    /// [`Machine::run_length`]). One entry holds for runs of every
    /// length; none: every run takes exactly its length.
    pub run_spread: Vec<(Ns, Vec<f64>)>,
    /// How a timer's wake-up onto an idle CPU varies live: factors of
    /// [`Costs::timer_wakeup`], each as likely, one drawn for each such
    /// wake-up (none: every one costs exactly that). See
    /// [`Machine::timer_wakeup_cost`].
    pub timer_wakeup_spread: Vec<f64>,
    /// The seed of the kernel model's random draws (EEVDF's NI_RANDOM);
    /// `corral sim --seed`, 0 by default. See [`SchedClass::set_seed`].
    pub seed: u64,
}

/// Sets [`Machine::run_length`]'s draws apart from the kernel model's
/// (NI_RANDOM's), which start from the same seed.
const SPREAD_STREAM: u64 = 0x5EED_2E1A_0000_0001;
/// Sets [`Machine::timer_wakeup_cost`]'s draws apart from the others.
const TIMER_STREAM: u64 = 0x5EED_7117_0000_0002;

/// `init_task.timer_slack_ns`: every process inherits it over fork
/// unless it sets its own (`prctl(PR_SET_TIMERSLACK)`).
pub const TIMER_SLACK_NS: Ns = 50_000;

/// The scheduler's own work, ns, taken from the tasks it serves:
///
/// - `context_switch`: a task put on a CPU after another task ran there
///   pays it before its work goes on (`__schedule`, `switch_to`);
/// - `migration`: a task running on another CPU than it last ran on pays
///   its cache's refill there: `refill = min(migration, ran there)`,
///   the whole figure (`corral lab costs`' refill of an L2-sized working
///   set) at most, and at most the CPU time it ran on the CPU it left
///   since it came there, the refill it paid on arriving included: what
///   it had in that cache came in while it ran there, no faster than a
///   cold pass brings data in, and a refill costs only the cold pass's
///   excess over a warm one (a compiler's coordinator thread of 35 µs
///   runs, replayed from a build recording, paid 237 µs at each of its
///   66 moves). XXX: an upper bound — a task that reads the same data
///   again has a smaller footprint (work alone would bound a light
///   task's better, but not a memory-bound one's, whose refill exceeds
///   its warm work); data a sibling thread brought into the cache it
///   shares is not counted;
/// - `tick`: the task a tick interrupts pays it (`scheduler_tick` and the
///   timer interrupt around it);
/// - `wakeup`: a task woken by another onto an idle CPU runs that much
///   later (the IPI, the idle exit, the switch from idle);
/// - `timer_wakeup`: a task whose timed sleep ends onto an idle CPU runs
///   that much later (the timer interrupt, the idle exit, the switch
///   from idle; on a virtual machine the host's timer too), times a
///   factor drawn from the platform's `timer_wakeup_spread` when it has
///   one ([`Machine::timer_wakeup_cost`]);
/// - `timer_preempt`: a task whose timed sleep ends onto a busy CPU and
///   preempts the task running there runs that much later (the timer
///   interrupt, the resched at its exit, the switch).
///
/// - `waker`: a task that wakes another onto another CPU that idles, or
///   whose task the wake-up preempts, pays it, as CPU time, before its
///   next step that is not work (a run's time includes it): the
///   `futex`/`write` system call's `try_to_wake_up`, with the IPI (on a
///   virtual machine, an exit to the host) it sends; `corral lab costs`
///   measures it onto an idle CPU;
/// - `waker_local`: the same for any other wake-up (onto the waker's own
///   CPU, or onto another busy one it does not preempt: no IPI).
///
/// A recording's thread (`corral_moves`) ran its runs live, and what
/// they measured already holds the costs it paid there: its ticks and
/// its wake-ups of others (the same ones recur in the replay) are not
/// charged again, nor the refills of as many moves as it made live; a
/// move beyond those pays its refill as above. XXX: its context
/// switches are charged again (part of each is already in the recorded
/// runs); a wake-up that sent an IPI live and none in the replay is not
/// credited; the live moves are `sched_migrate_task`'s, which also
/// counts a queued task moved on before it ran, so a few replayed moves
/// may go free that live cost a refill; `lab validate` does not trace
/// the machine's other threads' moves and gives them none (each of
/// their replayed moves pays).
///
/// XXX: a broadcast pays one system call per task it wakes, and a
/// resched IPI to a busy CPU costs what one to an idle CPU does.
///
/// XXX: a wake-up by a task that preempts costs the woken task nothing
/// here (the IPI to a busy CPU, or the waker's own next preemption
/// point, is not modelled).
///
/// XXX: a timed sleep that ends onto another idle CPU than its timer's
/// pays `timer_wakeup` alone, not the timer's interrupt and an IPI.
///
/// XXX: a recording's sleeps end at the live `sched_wakeup`, which comes
/// after the timer's interrupt began, yet pay the whole expiry-to-running
/// cost again (`corral lab costs` does not split it at the wake-up).
/// Paying only `wakeup` instead was tried on a build recording: the
/// threads whose p50 came within 25 % of the live one fell from 30 to 24
/// of 140 (live, a preempting wake-up takes 15–20 µs from `sched_wakeup`
/// to the switch; here it costs nothing, see above).
///
/// XXX: the kernel splits a switch's cost between the task leaving and
/// the one arriving, and a refill's with the time the data would have
/// taken anyway; here each is charged whole to the arriving task, as CPU
/// time before it goes on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Costs {
    pub context_switch: Ns,
    pub wakeup: Ns,
    pub timer_wakeup: Ns,
    pub timer_preempt: Ns,
    pub migration: Ns,
    pub tick: Ns,
    pub waker: Ns,
    pub waker_local: Ns,
}

/// What ends a task's sleep ([`Costs`] differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waker {
    /// Another task (or the task's start).
    Task,
    /// Its timed sleep's hrtimer.
    Timer,
}

/// A load-driven CPU hot-plug governor, after the phone governors of
/// paper 003's era (Exynos `pegasusq`, Tegra `auto-hotplug`): every
/// `period`, it looks at the online CPUs' busy fraction over the period
/// and the runnable threads now. A CPU comes online (the lowest offline
/// one) after `up_samples` periods in a row with busy ≥ `up_util` *and*
/// more runnable threads than online CPUs — load the online CPUs cannot
/// take; the highest online CPU (never CPU 0) goes offline after
/// `down_samples` periods in a row with busy < `down_util`.
#[derive(Debug, Clone, PartialEq)]
pub struct Governor {
    pub period: Ns,
    pub up_util: f64,
    pub up_samples: u32,
    pub down_util: f64,
    pub down_samples: u32,
}

impl Platform {
    /// `n` CPUs of capacity 1024 at HZ 250, as on this machine.
    pub fn uniform(n: usize) -> Platform {
        Platform {
            capacities: vec![1024; n],
            hz: 250,
            tick_phase: 0,
            timer_slack: TIMER_SLACK_NS,
            vcpu_pack_util: None,
            run_spread: Vec::new(),
            timer_wakeup_spread: Vec::new(),
            seed: 0,
            hotplug: Vec::new(),
            offline: Vec::new(),
            governor: None,
            costs: Costs::default(),
        }
    }
}

/// What the machine measured of one thread (`repr(C)`: the counters every
/// switch adds to come first; a task keeps them among its hot fields).
/// The histograms are boxed so that those 112 bytes stay beside the
/// task's hot fields, not their 480: they are written only in batches
/// (`Machine::flush_histograms`).
#[derive(Debug, Clone, Default, PartialEq)]
#[repr(C)]
pub struct TaskStats {
    pub cpu_ns: Ns,
    pub wakeups: u64,
    pub migrations: u64,
    /// Times it was taken off its CPU while still runnable (the kernel's
    /// `nonvoluntary_ctxt_switches`).
    pub preemptions: u64,
    /// Times it was put on a CPU (`schedstat` field 3, timeslices).
    pub switches: u64,
    /// Times it blocked (`voluntary_ctxt_switches`).
    pub sleeps: u64,
    /// Time spent runnable but waiting on a run queue, ns (`schedstat`
    /// field 2, `run_delay`: added when the task reaches a CPU, as
    /// `sched_info_arrive` does).
    pub wait_ns: Ns,
    /// When its program ended.
    pub exited_at: Option<Ns>,
    /// Wake-up latency (woken → running), ns.
    pub wakeup_latency: Box<Histogram>,
    /// rt-app's slack at each timer: expiry − the moment the thread got to
    /// it (negative: it was late), ns.
    pub slack: Box<SignedHistogram>,
    pub name: String,
}

/// A stretch of time a task ran on a CPU (recorded when asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSlice {
    pub task: TaskId,
    pub cpu: usize,
    pub start: Ns,
    pub end: Ns,
}

/// One line of an rt-app log: one iteration of a phase (recorded when
/// asked). Times in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLine {
    /// The phase.
    pub idx: usize,
    /// CPU time used in the iteration.
    pub run: Ns,
    /// The iteration's length.
    pub period: Ns,
    pub start: Ns,
    pub end: Ns,
    /// Start relative to the thread's first iteration.
    pub rel_st: Ns,
    /// The last timer's slack in the iteration.
    pub slack: i64,
    /// Configured run/runtime and timer periods of the phase.
    pub c_duration: Ns,
    pub c_period: Ns,
    /// Wake-up latency after timer events in the iteration.
    pub wu_lat: Ns,
}

/// What a simulated thread is doing, as a sampler sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Runnable,
    Running,
    /// Blocked, sleeping, or not started yet.
    Sleeping,
    Exited,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Runnable,
    Running,
    Blocked,
    Exited,
}

/// What the queue holds: task and CPU numbers as `u32`, generations as
/// [`Gen`], so an event is 16 bytes and, with its time and sequence, a
/// queue entry 32 (two to a cache line; with `usize` fields, 48).
#[derive(Debug, Clone, Copy)]
enum Ev {
    Start(u32),
    Tick(u32),
    RunDone(u32, Gen),
    Wake(u32, Gen),
    Hotplug(u32, bool),
    /// The hot-plug governor samples.
    Governor,
    /// An idle CPU picks a task (after a wake-up).
    Schedule(u32),
    /// The CPU's current task yields to a woken one.
    Preempt(u32),
    /// The same, `timer_preempt` after the wake-up, if this task is still
    /// the one running there then (with the same `gen`).
    PreemptOf(u32, u32, Gen),
}

/// Factor `i` of a run spread (`Platform::run_spread`) for a run of
/// `ns`: a run's noise (an interrupt, the host taking the vCPU a while)
/// weighs less on a longer run, so the spread is measured at a few
/// lengths and taken between them in proportion to the log of the
/// length, quantile by quantile; below the shortest length measured, the
/// shortest's, above the longest, the longest's (as is a spread measured
/// at one length, for every length):
///
/// ```text
/// L_a ≤ ns ≤ L_b:  f = f_a[i] + (f_b[i] − f_a[i]) · ln(ns / L_a) / ln(L_b / L_a)
/// ```
pub fn spread_factor(spread: &[(Ns, Vec<f64>)], ns: Ns, i: usize) -> f64 {
    let b = spread.partition_point(|(l, _)| *l <= ns);
    if b == 0 {
        return spread[0].1[i];
    }
    if b == spread.len() {
        return spread[b - 1].1[i];
    }
    let ((la, fa), (lb, fb)) = (&spread[b - 1], &spread[b]);
    let w = (ns as f64 / *la as f64).ln() / (*lb as f64 / *la as f64).ln();
    fa[i] + (fb[i] - fa[i]) * w
}

/// A task's generation: bumped (wrapping) whenever a scheduled RunDone or
/// Wake becomes stale. An event pending across 2³² bumps of its task
/// would be taken for current; none is (a task bumps it a few times per
/// run, an event waits one sleep or burst).
type Gen = u32;

/// A task or CPU number as an event carries it.
fn ev_id(n: usize) -> u32 {
    debug_assert!(n <= u32::MAX as usize);
    n as u32
}

/// A simulated thread. `repr(C)`, its fields in the order written: what
/// the event loop touches for every event (state, time stamps, costs,
/// its place in its program) comes first, so a wake-up, a switch or a
/// run's end reads a few cache lines of it and not fifteen (with 10 000
/// threads, a task is rarely still in cache from its last event).
#[derive(Debug, Clone)]
#[repr(C)]
struct Task {
    cpu: usize,
    /// Work left in the current run event, ns at capacity 1024 (or CPU ns
    /// for `runtime`).
    remaining: Ns,
    run_start: Ns,
    /// Since when it is runnable and not running.
    ready_since: Ns,
    /// The scheduler's costs it owes (`Costs`), paid from its next run.
    overhead: Ns,
    /// CPU time it ran on `ran_on` since it came there, its costs
    /// included (bounds a move's refill: `Costs`).
    ran_there: Ns,
    /// Since when it runs on its CPU (for run slices).
    on_cpu_since: Ns,
    /// Bumped whenever a scheduled RunDone or Wake becomes stale.
    gen: Gen,
    /// Its nice value now.
    nice: i32,
    /// What it measured: a wake-up, a switch, a block or a charge adds to
    /// its counters.
    stats: TaskStats,
    woke_at: Option<Ns>,
    /// Woken by its timer (rt-app's `timer`): the expiry it asked for,
    /// from which rt-app counts its `wu_lat`.
    timer_due: Option<Ns>,
    /// The CPU it last ran on.
    ran_on: Option<usize>,
    /// A recording's thread: the moves whose refills its recorded runs
    /// still hold (`Costs`); `None` for a workload's own task, whose
    /// runs are work alone.
    live_moves: Option<u64>,
    /// Its own stream of [`Machine::run_length`]'s draws.
    spread: Rng,
    /// Its own stream of [`Machine::timer_wakeup_cost`]'s draws.
    timer_draws: Rng,
    state: State,
    scaled: bool,
    /// A recorded fork not yet forked (`corral_forked`).
    unborn: bool,
    /// Placed on a CPU once: its first wake-up (its start, or its birth)
    /// is `wake_up_new_task`'s placement, not a migration.
    placed: bool,
    /// `allowed` is every CPU of the platform (the common case, answered
    /// without a scan of the list on every wake-up).
    all_cpus: bool,
    /// A mutex to take before going on: after a `wait` was signalled, or
    /// woken by an unlock to try again.
    relock: Option<u32>,
    /// In `pthread_cond_wait` between letting the mutex go and sleeping
    /// ([`Machine::cond_sleep`]): a signal meanwhile finds it awake.
    wait_pending: bool,
    /// A barrier to arrive at once it holds the barrier's mutex (it
    /// waited for the mutex on its way in).
    arrive: Option<u32>,
    /// A mutex to let go before going on, once the costs it owes are paid
    /// (rt-app's `pthread_mutex_unlock` at a barrier's end).
    unlock_then: Option<u32>,
    /// A barrier whose count of waiting threads it rejoins once it holds
    /// the barrier's mutex again (`waiting += 1` after the wait).
    rejoin: Option<u32>,
    /// A `resume` or a `suspend` to do once it holds the mutex of the
    /// same name (it waited for the mutex on its way in; true: resume).
    wait_after: Option<(u32, bool)>,
    iter_wu_lat: Ns,
    spec: usize,
    phase: usize,
    event: usize,
    /// Loops of the whole program left (−1: for ever).
    loops_left: i64,
    phase_loops_left: i64,
    /// Its own EEVDF slice (`sched_attr.sched_runtime`), if set.
    slice: Option<Ns>,
    /// Its timed sleeps' slack (`timer_slack_ns`), ns: the platform's for
    /// a normal task, none for an RT one (`Machine::hrtimer_sleep`).
    timer_slack: Ns,
    /// The current phase iteration (for log lines): start, CPU time at
    /// its start, slack, wake-up latency after timers; first start.
    iter_start: Option<Ns>,
    iter_cpu: Ns,
    iter_slack: i64,
    /// rt-app's `t_first`: when the thread starts (the use case's start
    /// plus its `delay`), where its timers count from. XXX: rt-app sleeps
    /// until then (`clock_nanosleep`, a timed wake-up with its slack);
    /// here the thread starts then, as a new task.
    t_first: Ns,
    first_start: Option<Ns>,
    /// The CPUs it may use: its affinity within its cpuset.
    allowed: Vec<usize>,
    /// Its own affinity (the rt-app phase's `cpus`, else all).
    affinity: Vec<usize>,
    /// The cpuset it is confined to, if any (set while running).
    cpuset: Option<Vec<usize>>,
    /// Its cgroup in the cpu controller (`/` the root).
    cgroup: Rc<str>,
    log: Vec<LogLine>,
    /// Its own ("unique…") timers: name, next expiry.
    own_timers: Vec<(Name, Ns)>,
}

/// glibc's default mutex: its word is 0 free, 1 taken, 2 taken with
/// waiters maybe (`contended`).
#[derive(Debug, Default)]
struct Mutex {
    owner: Option<TaskId>,
    waiters: VecDeque<TaskId>,
    contended: bool,
}

/// An rt-app barrier (`init_barrier_resource`, `run_event`).
#[derive(Debug)]
struct Barrier {
    /// How many of its threads have still to arrive before one goes
    /// through: rt-app's `waiting`, which a waiter takes 1 off before it
    /// waits and puts back once woken and holding the mutex again.
    waiting: i64,
    /// The threads waiting on its condition.
    sleepers: Vec<TaskId>,
}

/// A machine running a workload under kernel model `K`.
pub struct Machine<K: SchedClass> {
    q: Queue<Ev>,
    k: K,
    platform: Platform,
    work: Rc<Workload>,
    tasks: Vec<Task>,
    /// Shared timers by name; "unique" ones live in each task.
    timers: Vec<Option<Ns>>,
    /// Every resource name of the workload as an index, per event:
    /// `ids[spec][phase][event]` = (name, second name: a wait's mutex).
    ids: Vec<Vec<Vec<(u32, u32)>>>,
    mutexes: Vec<Mutex>,
    conds: Vec<VecDeque<(TaskId, u32)>>,
    suspended: Vec<Vec<TaskId>>,
    /// Wake-ups posted to each semaphore (`corral_wake`) not yet taken.
    tokens: Vec<u32>,
    barriers: Vec<Barrier>,
    /// Ticks seen per CPU (for the balancing interval).
    ticks: Vec<u64>,
    /// Whether each CPU's tick runs (it stops while the CPU idles).
    ticking: Vec<bool>,
    /// How many CPUs' ticks are stopped (`ticking` false).
    tickless: usize,
    /// When each tickless idle CPU may next be balanced for a kick
    /// (`rq->next_balance`).
    next_idle_balance: Vec<Ns>,
    online: Vec<bool>,
    /// The online CPUs in ascending order (what a task allowed on every
    /// CPU may use).
    online_list: Vec<usize>,
    /// Busy time per CPU.
    cpu_busy: Vec<Ns>,
    /// Threads whose program has ended.
    exited: usize,
    /// A buffer for the CPUs a waking task may use.
    scratch: Vec<usize>,
    /// Record run slices, wake-ups and log lines (for traces and logs).
    record: bool,
    slices: Vec<RunSlice>,
    wake_marks: Vec<(Ns, TaskId, usize)>,
    /// Time each pair of tasks spent queued on the same CPU, when tracked.
    sharing: Option<Sharing>,
    /// Tasks whose wake-ups stop `run_until`, and whether one woke.
    watched: Vec<bool>,
    watched_woke: Option<TaskId>,
    /// The hot-plug governor's state.
    gov: GovState,
    /// Paper 001's boost per task: (nice while awake, own nice).
    wake_boost: Vec<Option<(i32, i32)>>,
    /// Each task's PELT averages, when the kernel keeps them.
    pelt: Option<Pelt>,
    /// The task whose events the machine is executing (`current` of a
    /// wake-up it makes).
    stepping: Option<TaskId>,
    /// The task each CPU ran last (for `Costs::context_switch`).
    last_ran: Vec<Option<TaskId>>,
    /// Values on their way to the tasks' histograms
    /// ([`Machine::flush_histograms`]).
    hist_log: Vec<HistEntry>,
}

/// A value for a task's histogram: (task, which, value).
type HistEntry = (u32, HistKind, i64);

#[derive(Debug, Clone, Copy)]
enum HistKind {
    WakeupLatency,
    Slack,
}

/// [`Machine::hist_log`]'s length at which it is put in the histograms:
/// 64 KiB, well inside the L2 cache.
const HIST_LOG_LEN: usize = 4096;

#[derive(Debug, Default)]
struct GovState {
    busy_at: Vec<Ns>,
    up: u32,
    down: u32,
}

impl Machine<crate::sched::classes::Classes<crate::sched::fair::Fair>> {
    /// Marks `t` as an input-handling task for paper 001's balancing
    /// ([`crate::sched::fair::Fair::set_interactive`]).
    pub fn set_interactive(&mut self, t: TaskId, on: bool) -> Result<(), Error> {
        if t >= self.tasks.len() {
            return Err(Error::Invalid(format!("no task {t}")));
        }
        self.k.fair.set_interactive(t, on);
        Ok(())
    }
}

/// Who shares each CPU's run queue, and for how long pairs did.
///
/// A pair's time is the overlap of the two tasks' stays on a CPU's queue:
/// when one of them leaves at `now`, `now − max(joined_a, joined_b,
/// counted)` is added, `counted` being the last time the CPU's open pairs
/// were charged (the end of a run). A change costs one pass over that
/// CPU's members, not over its pairs.
#[derive(Debug, Default)]
struct Sharing {
    /// Each CPU's members and when each joined.
    members: Vec<Vec<(TaskId, Ns)>>,
    /// The last change on each CPU (a join, a leave, a settle).
    since: Vec<Ns>,
    /// Up to when each CPU's open pairs are charged.
    counted: Vec<Ns>,
    pairs: FastMap<(TaskId, TaskId), Ns>,
}

impl Sharing {
    fn charge(&mut self, a: (TaskId, Ns), b: (TaskId, Ns), cpu: usize, now: Ns) {
        let from = a.1.max(b.1).max(self.counted[cpu]);
        if now > from {
            *self.pairs.entry((a.0.min(b.0), a.0.max(b.0))).or_default() += now - from;
        }
    }

    /// Charges every pair still on `cpu`'s queue up to `now`.
    fn settle(&mut self, cpu: usize, now: Ns) {
        let m = std::mem::take(&mut self.members[cpu]);
        for (i, &a) in m.iter().enumerate() {
            for &b in &m[i + 1..] {
                self.charge(a, b, cpu, now);
            }
        }
        self.members[cpu] = m;
        self.counted[cpu] = now;
        self.since[cpu] = now;
    }

    fn join(&mut self, cpu: usize, t: TaskId, now: Ns) {
        self.since[cpu] = now;
        self.members[cpu].push((t, now));
    }

    fn leave(&mut self, cpu: usize, t: TaskId, now: Ns) {
        self.since[cpu] = now;
        let Some(i) = self.members[cpu].iter().position(|&(x, _)| x == t) else {
            return;
        };
        let me = self.members[cpu].remove(i);
        let m = std::mem::take(&mut self.members[cpu]);
        for &b in &m {
            self.charge(me, b, cpu, now);
        }
        self.members[cpu] = m;
    }
}

/// Resource names (timers, mutexes, conditions, suspend queues,
/// barriers) as indices, once: per task, phase and event, the event's one
/// or two resources.
#[allow(clippy::type_complexity)]
fn resource_ids(work: &Workload) -> (Vec<Vec<Vec<(u32, u32)>>>, FastMap<Name, u32>) {
    let mut names: FastMap<Name, u32> = FastMap::default();
    let mut id_of = |n: &Name| -> u32 {
        let next = names.len() as u32;
        *names.entry(n.clone()).or_insert(next)
    };
    let ids = work
        .tasks
        .iter()
        .map(|t| {
            t.phases
                .iter()
                .map(|p| {
                    p.events
                        .iter()
                        .map(|e| {
                            let (a, b) = e.resources();
                            (a.map_or(0, &mut id_of), b.map_or(0, &mut id_of))
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    (ids, names)
}

/// Where the first tick after `start_ns` (CLOCK_MONOTONIC) lies, ns
/// after it: a [`Platform::tick_phase`] for a workload that began then.
///
/// first tick = (TICK_NSEC − start mod TICK_NSEC) mod TICK_NSEC
///
/// The kernel aligns the tick to multiples of `TICK_NSEC` on
/// CLOCK_MONOTONIC (`tick_init_jiffy_update`, `tick_setup_device`;
/// "tick/common: Align tick period with the HZ tick", Linux 6.4, also in
/// stable kernels), on every CPU alike (`skew_tick=0`; XXX: `skew_tick=1`
/// staggers them). The phase matters: periodic timers keep it for the
/// whole run, and whether a wake-up lands inside or after the running
/// task's protected slice decides if it preempts at once or waits for the
/// next tick.
pub fn tick_phase_after(start_ns: u64, hz: u32) -> Ns {
    let tick = 1_000_000_000 / u64::from(hz.max(1));
    (tick - start_ns % tick) % tick
}

/// Which CPUs are online at the start; at least one must be.
fn online_at_start(platform: &Platform) -> Result<Vec<bool>, Error> {
    let ncpus = platform.capacities.len();
    let mut online = vec![true; ncpus];
    for &cpu in &platform.offline {
        if cpu >= ncpus {
            return Err(Error::Invalid(format!(
                "CPU {cpu} offline, but there are {ncpus} CPUs"
            )));
        }
        online[cpu] = false;
    }
    if !online.iter().any(|&o| o) {
        return Err(Error::Invalid(
            "at least one CPU must be online at the start".into(),
        ));
    }
    Ok(online)
}

/// The first events: every thread's start (at its `delay`), the
/// platform's hot-plug and governor, and each CPU's first tick (at the
/// tick phase).
fn first_events(platform: &Platform, starts: &[Ns]) -> Result<Queue<Ev>, Error> {
    let ncpus = platform.capacities.len();
    let mut q = Queue::new();
    for (id, &at) in starts.iter().enumerate() {
        q.at(at, Ev::Start(ev_id(id)));
    }
    for &(at, cpu, on) in &platform.hotplug {
        if cpu >= ncpus {
            return Err(Error::Invalid(format!(
                "hot-plug of CPU {cpu}, but there are {ncpus} CPUs"
            )));
        }
        q.at(at, Ev::Hotplug(ev_id(cpu), on));
    }
    if let Some(g) = &platform.governor {
        if g.period == 0 {
            return Err(Error::Invalid(
                "the hot-plug governor's period must be above 0".into(),
            ));
        }
        q.at(g.period, Ev::Governor);
    }
    let tick = 1_000_000_000 / platform.hz.max(1) as u64;
    let first = match platform.tick_phase % tick {
        0 => tick,
        phase => phase,
    };
    for cpu in 0..ncpus {
        q.at(first, Ev::Tick(ev_id(cpu)));
    }
    Ok(q)
}

impl Task {
    /// Instance `instance` of workload task `t` (index `spec`), blocked
    /// until its start, on `cpu` of `allowed`.
    fn new(
        spec: usize,
        t: &crate::input::rtapp::Task,
        instance: u32,
        cpu: usize,
        allowed: &[usize],
    ) -> Task {
        Task {
            spec,
            state: State::Blocked,
            cpu,
            allowed: allowed.to_vec(),
            all_cpus: false,
            affinity: allowed.to_vec(),
            cpuset: None,
            cgroup: Rc::from(t.taskgroup.as_deref().unwrap_or("/")),
            slice: None,
            loops_left: t.loops,
            phase: 0,
            phase_loops_left: t.phases[0].loops,
            event: 0,
            remaining: 0,
            scaled: true,
            run_start: 0,
            gen: 0,
            woke_at: None,
            ready_since: 0,
            nice: if t.policy.is_rt() { 0 } else { t.priority },
            relock: None,
            wait_pending: false,
            arrive: None,
            unlock_then: None,
            rejoin: None,
            wait_after: None,
            unborn: false,
            placed: false,
            on_cpu_since: 0,
            iter_start: None,
            iter_cpu: 0,
            iter_slack: 0,
            iter_wu_lat: 0,
            first_start: None,
            timer_due: None,
            timer_slack: 0,
            overhead: 0,
            ran_there: 0,
            live_moves: t.live_moves,
            spread: Rng::new(0),
            timer_draws: Rng::new(0),
            ran_on: None,
            log: Vec::new(),
            own_timers: Vec::new(),
            t_first: t.delay_us * 1000,
            stats: TaskStats {
                name: if t.instances > 1 {
                    format!("{}-{instance}", t.name)
                } else {
                    t.name.clone()
                },
                ..Default::default()
            },
        }
    }
}

impl<K: SchedClass> Machine<K> {
    /// Builds the machine; refuses what is not modelled yet.
    pub fn new(platform: Platform, work: Workload, mut k: K) -> Result<Machine<K>, Error> {
        let ncpus = platform.capacities.len();
        if ncpus == 0 {
            return Err(Error::Invalid("a platform needs at least one CPU".into()));
        }
        k.set_vcpu_pack_util(platform.vcpu_pack_util);
        k.set_seed(platform.seed);
        let (ids, names) = resource_ids(&work);
        let nnames = names.len().max(1);
        let (mut tasks, barrier_users) = Self::tasks(&work, &mut k, ncpus, &names, nnames)?;
        // Each task's stream of run lengths: the seed, apart from
        // NI_RANDOM's, and the task (its k-th draw mixes seed + task·C +
        // k·γ, γ the generator's step).
        for (i, t) in tasks.iter_mut().enumerate() {
            let stream = |s: u64| {
                Rng::new(
                    (platform.seed ^ s)
                        .wrapping_add((i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03))
                        .wrapping_sub(0x9E37_79B9_7F4A_7C15),
                )
            };
            t.spread = stream(SPREAD_STREAM);
            t.timer_draws = stream(TIMER_STREAM);
        }
        // Each thread's `timer_slack_ns`, as the kernel keeps it per task.
        let slack = if k.timer_slack() {
            platform.timer_slack
        } else {
            0
        };
        for t in tasks.iter_mut() {
            if !work.tasks[t.spec].policy.is_rt() {
                t.timer_slack = slack;
            }
        }
        let online = online_at_start(&platform)?;
        // Tasks start on an online CPU they may use (any online CPU when
        // none of theirs is, as select_fallback_rq does).
        for t in tasks.iter_mut() {
            if !online[t.cpu] {
                t.cpu = t
                    .allowed
                    .iter()
                    .copied()
                    .find(|&c| online[c])
                    .or_else(|| online.iter().position(|&o| o))
                    .expect("a CPU is online");
            }
        }
        let starts: Vec<Ns> = tasks.iter().map(|t| t.t_first).collect();
        let q = first_events(&platform, &starts)?;
        let barriers = barrier_users
            .into_iter()
            .map(|n| Barrier {
                waiting: n.max(1) as i64 - 1,
                sleepers: Vec::new(),
            })
            .collect();
        let ntasks = tasks.len();
        let pelt = k
            .tracks_pelt()
            .then(|| Pelt::new(ntasks, &platform.capacities));
        Ok(Machine {
            pelt,
            stepping: None,
            last_ran: vec![None; ncpus],
            hist_log: Vec::with_capacity(HIST_LOG_LEN),
            q,
            k,
            platform,
            work: Rc::new(work),
            tasks,
            timers: vec![None; nnames],
            ids,
            mutexes: (0..nnames).map(|_| Mutex::default()).collect(),
            conds: vec![VecDeque::new(); nnames],
            suspended: vec![Vec::new(); nnames],
            tokens: vec![0; nnames],
            barriers,
            ticks: vec![0; ncpus],
            ticking: vec![true; ncpus],
            tickless: 0,
            next_idle_balance: vec![0; ncpus],
            online_list: online_list(&online),
            online,
            cpu_busy: vec![0; ncpus],
            exited: 0,
            scratch: Vec::new(),
            record: false,
            slices: Vec::new(),
            wake_marks: Vec::new(),
            sharing: None,
            watched: vec![false; ntasks],
            watched_woke: None,
            wake_boost: vec![None; ntasks],
            gov: GovState {
                busy_at: vec![0; ncpus],
                ..Default::default()
            },
        })
    }

    /// The workload's threads (each task's instances), told to the kernel
    /// model (policy, priority or nice, group, CPUs), and how many threads
    /// wait at each barrier.
    fn tasks(
        work: &Workload,
        k: &mut K,
        ncpus: usize,
        names: &FastMap<Name, u32>,
        nnames: usize,
    ) -> Result<(Vec<Task>, Vec<usize>), Error> {
        let mut tasks = Vec::new();
        let mut barrier_users = vec![0usize; nnames];
        for (spec, t) in work.tasks.iter().enumerate() {
            // The first phase's CPUs, else the task's.
            let allowed = cpus_of(t, 0, ncpus);
            if allowed.is_empty() {
                return Err(Error::Invalid(format!(
                    "task {:?}: none of its CPUs exist",
                    t.name
                )));
            }
            for p in &t.phases {
                for e in &p.events {
                    if let Event::Barrier(b) = e {
                        barrier_users[names[b] as usize] += t.instances as usize;
                    }
                }
            }
            let refused = |e| Error::Task {
                task: t.name.to_string(),
                error: Box::new(e),
            };
            for instance in 0..t.instances {
                let id = tasks.len();
                k.set_policy(id, t.policy).map_err(refused)?;
                if t.policy.is_rt() {
                    k.set_rt_priority(id, t.priority).map_err(refused)?;
                } else {
                    k.set_nice(id, t.priority);
                }
                if let Some(g) = &t.taskgroup {
                    k.set_task_group(id, g).map_err(refused)?;
                }
                k.set_allowed(id, &allowed);
                let mut task = Task::new(spec, t, instance, allowed[id % allowed.len()], &allowed);
                task.all_cpus = covers_all(&allowed, ncpus);
                tasks.push(task);
            }
        }
        Ok((tasks, barrier_users))
    }

    /// Records run slices, wake-ups and rt-app log lines from now on.
    pub fn record(&mut self) {
        self.record = true;
    }

    /// Tracks how long each pair of tasks shares a CPU's run queue (cost:
    /// the CPU's members at every change, its pairs at the end of a run).
    pub fn track_sharing(&mut self) {
        let n = self.platform.capacities.len();
        self.sharing = Some(Sharing {
            members: vec![Vec::new(); n],
            since: vec![self.q.now(); n],
            counted: vec![self.q.now(); n],
            pairs: FastMap::default(),
        });
    }

    /// Run slices recorded so far.
    pub fn slices(&self) -> &[RunSlice] {
        &self.slices
    }

    /// Wake-ups recorded so far: (when, task, CPU).
    pub fn wake_marks(&self) -> &[(Ns, TaskId, usize)] {
        &self.wake_marks
    }

    /// rt-app log lines of task `t`.
    pub fn log(&self, t: TaskId) -> &[LogLine] {
        &self.tasks[t].log
    }

    /// The rt-app task spec index and policy/priority of task `t`.
    pub fn spec_of(&self, t: TaskId) -> &crate::input::rtapp::Task {
        &self.work.tasks[self.tasks[t].spec]
    }

    /// Time each pair of tasks spent queued on the same CPU, if tracked:
    /// ((a, b), ns) with a < b.
    pub fn sharing(&self) -> Option<Vec<((TaskId, TaskId), Ns)>> {
        let s = self.sharing.as_ref()?;
        let mut v: Vec<_> = s.pairs.iter().map(|(&k, &v)| (k, v)).collect();
        v.sort_unstable();
        Some(v)
    }

    /// Closes the run slice of `t` on `cpu` at now.
    fn end_run(&mut self, t: TaskId, cpu: usize) {
        self.end_run_at(t, cpu, self.q.now());
    }

    /// Closes the run slice of `t` on `cpu` at `now` (a new one starts).
    fn end_run_at(&mut self, t: TaskId, cpu: usize, now: Ns) {
        if !self.record {
            return;
        }
        let start = std::mem::replace(&mut self.tasks[t].on_cpu_since, now);
        if now > start {
            self.slices.push(RunSlice {
                task: t,
                cpu,
                start,
                end: now,
            });
        }
    }

    fn join(&mut self, cpu: usize, t: TaskId) {
        let now = self.q.now();
        if let Some(s) = self.sharing.as_mut() {
            s.join(cpu, t, now);
        }
    }

    fn leave(&mut self, cpu: usize, t: TaskId) {
        let now = self.q.now();
        if let Some(s) = self.sharing.as_mut() {
            s.leave(cpu, t, now);
        }
    }

    /// Sets a cgroup's `cpu.shares`, before running or now (the running
    /// tasks are charged at their old weights first).
    pub fn set_group_shares(&mut self, path: &str, shares: u64) -> Result<(), Error> {
        let now = self.now();
        for cpu in 0..self.online.len() {
            if self.k.curr(cpu).is_some() {
                self.k.update_curr(cpu, now);
            }
        }
        self.k.set_group_shares(path, shares)
    }

    /// Sets (Some) or clears a task's own EEVDF slice, ns.
    pub fn set_slice(&mut self, t: TaskId, slice_ns: Option<Ns>) -> Result<(), Error> {
        self.k.set_slice(t, slice_ns)?;
        self.tasks[t].slice = slice_ns;
        Ok(())
    }

    /// Task `t`'s cgroup in the cpu controller now (`/` the root).
    pub fn task_cgroup(&self, t: TaskId) -> &Rc<str> {
        &self.tasks[t].cgroup
    }

    /// Moves task `t` into cgroup `path` of the cpu controller, now
    /// (`sched_move_task`: off its queue, into the group, back on; a
    /// running task is put back and the CPU picks again).
    pub fn move_task(&mut self, t: TaskId, path: &str) -> Result<(), Error> {
        let now = self.now();
        let cpu = self.tasks[t].cpu;
        match self.tasks[t].state {
            State::Running => {
                self.stop_running(t, cpu);
                self.k.dequeue(cpu, t, false, now);
                self.k.set_task_group(t, path)?;
                self.k.enqueue(cpu, t, false, now);
                self.rq_sync(cpu);
                self.q.after(0, Ev::Schedule(ev_id(cpu)));
            }
            State::Runnable => {
                self.k.dequeue(cpu, t, false, now);
                self.k.set_task_group(t, path)?;
                self.k.enqueue(cpu, t, false, now);
                self.rq_sync(cpu);
            }
            State::Blocked | State::Exited => self.k.set_task_group(t, path)?,
        }
        self.tasks[t].cgroup = Rc::from(path);
        Ok(())
    }

    /// Sets task `t`'s nice value now (`set_user_nice`: reweighted in place).
    pub fn renice(&mut self, t: TaskId, nice: i32) {
        let now = self.now();
        let cpu = self.tasks[t].cpu;
        self.k.update_curr(cpu, now);
        self.k.set_nice(t, nice);
        self.tasks[t].nice = nice;
        self.rq_sync(cpu);
    }

    /// Confines task `t` to `cpus` (its cpuset; `None` lifts it), now. A
    /// task on a CPU it may no longer use moves to one it may
    /// (`__set_cpus_allowed_ptr` → `migration_cpu_stop`).
    pub fn set_cpuset(&mut self, t: TaskId, cpus: Option<Vec<usize>>) -> Result<(), Error> {
        let n = self.platform.capacities.len();
        if let Some(c) = cpus.as_ref().and_then(|c| c.iter().find(|&&c| c >= n)) {
            return Err(Error::Invalid(format!("CPU {c} does not exist ({n} CPUs)")));
        }
        if cpus.as_ref().is_some_and(|c| c.is_empty()) {
            return Err(Error::Invalid("an empty cpuset".into()));
        }
        let task = &mut self.tasks[t];
        task.cpuset = cpus;
        task.allowed = effective(&task.affinity, task.cpuset.as_deref());
        task.all_cpus = covers_all(&task.allowed, n);
        self.k.set_allowed(t, &task.allowed);
        let cpu = task.cpu;
        if self.may_use(t, cpu) {
            return Ok(());
        }
        let now = self.now();
        match self.tasks[t].state {
            State::Running => {
                self.stop_running(t, cpu);
                self.k.dequeue(cpu, t, false, now);
                // (The stopper moves it: `migration_cpu_stop`.)
                self.k.ran_other_than_fair(cpu);
                self.leave(cpu, t);
                self.q.after(0, Ev::Schedule(ev_id(cpu)));
                self.requeue_elsewhere(t, cpu);
            }
            State::Runnable => {
                self.k.dequeue(cpu, t, false, now);
                self.leave(cpu, t);
                self.requeue_elsewhere(t, cpu);
            }
            // It wakes on a CPU it may use.
            State::Blocked | State::Exited => {}
        }
        Ok(())
    }

    /// The running task `t` stops where it is and goes back to its queue,
    /// runnable, its work so far charged (its pending run end dropped).
    fn stop_running(&mut self, t: TaskId, cpu: usize) {
        let now = self.now();
        self.charge(t);
        self.end_run(t, cpu);
        self.tasks[t].gen = self.tasks[t].gen.wrapping_add(1);
        self.tasks[t].state = State::Runnable;
        self.tasks[t].ready_since = now;
        self.pelt_stop(t, cpu, false);
        self.k.put_prev(cpu, t, now);
        self.rq_sync(cpu);
    }

    /// Puts runnable task `t`, just taken off `from`, on a CPU it may use.
    fn requeue_elsewhere(&mut self, t: TaskId, from: usize) {
        let cpu = self.select_cpu(t, from, None);
        self.requeue_on(t, from, cpu);
    }

    /// Puts runnable task `t`, just taken off `from`, on `cpu`: it runs
    /// there if the CPU idles, else it is weighed as a wake-up would be.
    fn requeue_on(&mut self, t: TaskId, from: usize, cpu: usize) {
        let now = self.now();
        let task = &mut self.tasks[t];
        task.cpu = cpu;
        task.stats.migrations += 1;
        if let Some(p) = self.pelt.as_mut() {
            p.migrate(t, from, cpu, nice_to_weight(self.tasks[t].nice), now);
        }
        self.k.enqueue(cpu, t, false, now);
        self.rq_sync(from);
        self.rq_sync(cpu);
        self.join(cpu, t);
        match self.k.curr(cpu) {
            None => self.q.after(0, Ev::Schedule(ev_id(cpu))),
            Some(_) => {
                let preempts = self.k.check_preempt_wakeup(cpu, t, now);
                // (Its pick may have let a delayed sleeper leave.)
                self.rq_sync(cpu);
                if preempts {
                    self.q.after(0, Ev::Preempt(ev_id(cpu)));
                }
            }
        }
    }

    /// Sets a cgroup's CPU bandwidth limit (before running).
    pub fn set_group_quota(
        &mut self,
        path: &str,
        quota_ns: Option<Ns>,
        period_ns: Ns,
    ) -> Result<(), Error> {
        self.k.set_group_quota(path, quota_ns, period_ns)
    }

    /// Runs until `end` (simulated ns) or until nothing is left to happen;
    /// true when it got there, false when it stopped early because a
    /// watched task woke ([`Machine::watch_wakeups`]; the clock is then at
    /// the wake-up, and what the wake-up set in motion at that instant —
    /// a preemption, a pick — is still to come).
    pub fn run_until(&mut self, end: Ns) -> bool {
        // What a resource manager changed meanwhile (shares, groups,
        // nice values) may have re-weighed root-level group entities.
        self.reweigh_roots();
        let mut stopped = false;
        while let Some((_, ev)) = self.q.pop_until(end) {
            match ev {
                Ev::Start(t) => self.start(t as usize),
                Ev::Tick(cpu) => self.tick(cpu as usize),
                Ev::RunDone(t, gen) if gen == self.tasks[t as usize].gen => {
                    let t = t as usize;
                    self.charge(t);
                    self.tasks[t].remaining = 0;
                    self.tasks[t].overhead = 0;
                    self.step_task(t);
                }
                Ev::Wake(t, gen) if gen == self.tasks[t as usize].gen => {
                    self.wake_by(t as usize, Waker::Timer)
                }
                Ev::Hotplug(cpu, on) => self.hotplug(cpu as usize, on),
                Ev::Governor => self.governor(),
                Ev::Schedule(cpu) => self.schedule(cpu as usize),
                Ev::Preempt(cpu) => self.preempt(cpu as usize),
                // Meanwhile it may have blocked, or been preempted already.
                Ev::PreemptOf(cpu, c, gen)
                    if self.k.curr(cpu as usize) == Some(c as usize)
                        && self.tasks[c as usize].gen == gen =>
                {
                    self.preempt(cpu as usize)
                }
                _ => {}
            }
            #[cfg(debug_assertions)]
            self.check_invariants();
            if self.exited == self.tasks.len() {
                break;
            }
            if self.watched_woke.is_some() {
                stopped = true;
                break;
            }
        }
        self.flush_histograms();
        // Charge what is running up to the end (or the stop).
        let end = if stopped { self.q.now() } else { end };
        for cpu in 0..self.platform.capacities.len() {
            if let Some(s) = self.sharing.as_mut() {
                s.settle(cpu, end.max(s.since[cpu]));
            }
            if let Some(c) = self.k.curr(cpu) {
                let now = end.max(self.q.now());
                self.end_run_at(c, cpu, now);
                self.charge_at(c, now);
            }
        }
        !stopped
    }

    /// Records a value in a task's histogram, soon: values wait in
    /// [`Machine::hist_log`] and are put in their histograms together,
    /// when it fills and when `run_until` returns.
    ///
    /// With thousands of tasks, each histogram is out of the caches when
    /// its task next records (its header and its bucket lines, two or
    /// three misses on the event's path); put together, the histograms'
    /// misses do not wait on each other (on 256 CPUs × 10 000 tasks,
    /// recording in place took a quarter of the run).
    fn record_hist(&mut self, t: TaskId, kind: HistKind, v: i64) {
        self.hist_log.push((ev_id(t), kind, v));
        if self.hist_log.len() >= HIST_LOG_LEN {
            self.flush_histograms();
        }
    }

    /// Puts [`Machine::hist_log`]'s values in their histograms.
    fn flush_histograms(&mut self) {
        for &(t, kind, v) in &self.hist_log {
            let stats = &mut self.tasks[t as usize].stats;
            match kind {
                HistKind::WakeupLatency => stats.wakeup_latency.record(v as u64),
                HistKind::Slack => stats.slack.record(v),
            }
        }
        self.hist_log.clear();
    }

    /// Makes [`Machine::run_until`] stop whenever task `t` wakes up (a
    /// resource manager acts on it at that instant: a boost from the
    /// framework that delivered the event waking it).
    pub fn watch_wakeups(&mut self, t: TaskId) {
        self.watched[t] = true;
    }

    /// Paper 001's kernel boost: from now on `t` takes nice `boost` each
    /// time it wakes and gets its own nice value back when it blocks (the
    /// framework named it through a new system call; the scheduler raises
    /// it for the duration of each event). `None` ends it.
    pub fn boost_on_wake(&mut self, t: TaskId, boost: Option<i32>) {
        self.wake_boost[t] = boost.map(|b| (b, self.tasks[t].nice));
    }

    /// The watched task whose wake-up stopped the last `run_until`.
    pub fn take_watched_wakeup(&mut self) -> Option<TaskId> {
        self.watched_woke.take()
    }

    /// Runs until `end` as [`Machine::run_until`] does, then sets the
    /// clock to `end`, so that what a resource manager does next happens
    /// at `end` (the clock stays behind only when every task has exited
    /// with events still pending).
    /// Returns false when a watched task woke first (the clock is then at
    /// the wake-up).
    pub fn advance_to(&mut self, end: Ns) -> bool {
        if !self.run_until(end) {
            return false;
        }
        self.q.advance_to(end);
        true
    }

    /// Whether every task has exited.
    pub fn all_exited(&self) -> bool {
        self.exited == self.tasks.len()
    }

    /// Number of simulated threads.
    pub fn ntasks(&self) -> usize {
        self.tasks.len()
    }

    /// What `t` is doing now.
    pub fn task_state(&self, t: TaskId) -> TaskState {
        match self.tasks[t].state {
            State::Runnable => TaskState::Runnable,
            State::Running => TaskState::Running,
            State::Blocked => TaskState::Sleeping,
            State::Exited => TaskState::Exited,
        }
    }

    /// Whether `t` exists: not a recorded fork still waiting for it
    /// (`corral_forked`).
    pub fn task_born(&self, t: TaskId) -> bool {
        !self.tasks[t].unborn
    }

    /// The CPU `t` runs on, or last ran on.
    pub fn task_cpu(&self, t: TaskId) -> usize {
        self.tasks[t].cpu
    }

    /// `t`'s nice value now.
    pub fn task_nice(&self, t: TaskId) -> i32 {
        self.tasks[t].nice
    }

    /// `t`'s own affinity (its rt-app `cpus`, else every CPU), before any
    /// cpuset.
    pub fn task_affinity(&self, t: TaskId) -> &[usize] {
        &self.tasks[t].affinity
    }

    /// The CPUs `t` may use: its affinity within its cpuset.
    pub fn task_allowed(&self, t: TaskId) -> &[usize] {
        &self.tasks[t].allowed
    }

    /// `t`'s figures so far (CPU time charged up to the last event, or to
    /// the end of the last [`Machine::run_until`]).
    pub fn task_stats(&self, t: TaskId) -> &TaskStats {
        debug_assert!(self.hist_log.is_empty(), "histogram values not yet put in");
        &self.tasks[t].stats
    }

    /// Which CPUs are online.
    pub fn online(&self) -> &[bool] {
        &self.online
    }

    /// The platform the machine was built with.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// The workload.
    pub fn workload(&self) -> &Workload {
        &self.work
    }

    /// Busy time of each CPU so far.
    pub fn cpu_busy(&self) -> &[Ns] {
        &self.cpu_busy
    }

    /// Simulated time now.
    pub fn time(&self) -> Ns {
        self.q.now()
    }

    /// Events handled so far.
    pub fn events(&self) -> u64 {
        self.q.fired
    }

    /// Per-thread figures.
    pub fn stats(&self) -> Vec<TaskStats> {
        debug_assert!(self.hist_log.is_empty(), "histogram values not yet put in");
        self.tasks.iter().map(|t| t.stats.clone()).collect()
    }

    /// The kernel model.
    pub fn kernel(&self) -> &K {
        &self.k
    }

    /// The model's scheduling work so far (picks, tasks examined, queue
    /// operations).
    pub fn work(&self) -> crate::sched::kernel::Work {
        self.k.work()
    }

    fn now(&self) -> Ns {
        self.q.now()
    }

    fn wall_for(&self, t: TaskId, cpu: usize) -> Ns {
        let task = &self.tasks[t];
        let work = if task.scaled {
            let cap = self.platform.capacities[cpu].max(1) as u128;
            ((task.remaining as u128 * 1024).div_ceil(cap)) as Ns
        } else {
            task.remaining
        };
        task.overhead + work
    }

    /// PELT: running task `t` stops on `cpu` (preempted, or it sleeps).
    fn pelt_stop(&mut self, t: TaskId, cpu: usize, sleeps: bool) {
        let now = self.now();
        if let Some(p) = self.pelt.as_mut() {
            p.stop(t, cpu, nice_to_weight(self.tasks[t].nice), sleeps, now);
        }
    }

    /// `update_cfs_rq_load_avg` of `cpu`'s root queue: its PELT averages
    /// brought up to now, accruing from here on with the queue as it is
    /// now. Called after every change of the queue's weight, runnable
    /// tasks or curr.
    fn rq_sync(&mut self, cpu: usize) {
        if let Some(p) = self.pelt.as_mut() {
            let (weight, nr, running) = self.k.fair_rq(cpu);
            p.rq_sync(cpu, self.q.now(), weight, nr, running);
        }
        self.reweigh_roots();
    }

    /// Applies the root-level entities re-weighed meanwhile, on any CPU
    /// (`reweight_entity`): each root average first accrues up to now with
    /// its queue's state until now, as `update_load_avg` brings it up to
    /// date before `update_cfs_group`.
    fn reweigh_roots(&mut self) {
        let Some(p) = self.pelt.as_mut() else { return };
        while let Some(r) = self.k.take_root_reweigh() {
            let (weight, nr, running) = self.k.fair_rq(r.cpu);
            p.rq_sync(r.cpu, self.q.now(), weight, nr, running);
            p.reweigh(&r);
        }
    }

    /// Task `t`'s PELT averages as of their last update (what
    /// `/proc/PID/sched` shows), when the kernel keeps them.
    pub fn task_pelt(&self, t: TaskId) -> Option<&SchedAvg> {
        self.pelt.as_ref().map(|p| p.avg(t))
    }

    /// Charges a running task's progress since it started running.
    fn charge(&mut self, t: TaskId) {
        self.charge_at(t, self.now());
    }

    /// [`Machine::charge`] up to `now`.
    fn charge_at(&mut self, t: TaskId, now: Ns) {
        let cpu = self.tasks[t].cpu;
        let cap = self.platform.capacities[cpu] as u64;
        let task = &mut self.tasks[t];
        let ran = now.saturating_sub(task.run_start);
        task.stats.cpu_ns += ran;
        task.ran_there += ran;
        // The scheduler's costs it owes come first (`Costs`).
        let paid = ran.min(task.overhead);
        task.overhead -= paid;
        let ran_work = ran - paid;
        let done = if task.scaled {
            ran_work * cap / 1024
        } else {
            ran_work
        };
        task.remaining = task.remaining.saturating_sub(done);
        task.run_start = now;
        self.cpu_busy[cpu] += ran;
    }

    /// The periodic tick. An idle CPU with nothing queued stops its tick
    /// (NOHZ idle, in both eras' kernels) and starts it again when it next
    /// runs a task.
    fn tick(&mut self, cpu: usize) {
        debug_assert!(self.ticking[cpu], "a tick on a CPU whose tick is stopped");
        let idle = self.k.curr(cpu).is_none();
        if !self.online[cpu] || (idle && self.k.nr_running(cpu) == 0) {
            self.ticking[cpu] = false;
            self.tickless += 1;
            return;
        }
        let now = self.now();
        if self.platform.costs.tick > 0 {
            self.charge_tick(cpu);
        }
        // entity_tick: curr's PELT averages brought up to now.
        if let Some(c) = self.k.curr(cpu) {
            let w = nice_to_weight(self.tasks[c].nice);
            if let Some(p) = self.pelt.as_mut() {
                p.tick(c, cpu, w, now);
            }
        }
        let resched = self.k.tick(cpu, now);
        self.rq_sync(cpu);
        if resched {
            self.preempt(cpu);
        }
        // Periodic balancing (rebalance_domains): 2.6.32's MC domain has a
        // 1 ms minimum interval, so every tick while idle, and busy_factor
        // 64 stretches it to 64 ms while busy.
        self.ticks[cpu] += 1;
        let idle = self.k.curr(cpu).is_none();
        let every = if idle {
            1
        } else {
            (64_000_000 / self.tick_ns()).max(1)
        };
        if self.ticks[cpu].is_multiple_of(every) {
            self.balance(cpu, false);
        }
        // nohz_balancer_kick: a CPU with two or more runnable tasks has a
        // tickless idle CPU balance (`nohz_idle_balance`).
        // On an asymmetric-capacity platform a misfit task running here
        // kicks too (`check_misfit_status`), until it has been moved.
        // (Only tickless CPUs are looked at: none, no scan.)
        let misfit = self.update_misfit(cpu).then(|| self.k.curr(cpu)).flatten();
        if self.tickless > 0 && (self.k.nr_running(cpu) >= 2 || misfit.is_some()) {
            for c in 0..self.online.len() {
                if self.k.nr_running(cpu) < 2 && (misfit.is_none() || self.k.curr(cpu) != misfit) {
                    break;
                }
                if c != cpu
                    && self.online[c]
                    && !self.ticking[c]
                    && self.k.curr(c).is_none()
                    && now >= self.next_idle_balance[c]
                {
                    self.next_idle_balance[c] = now + self.idle_balance_interval();
                    self.balance(c, false);
                }
            }
        }
        self.q.after(self.tick_ns(), Ev::Tick(ev_id(cpu)));
    }

    /// The tick's cost, taken from the task it interrupts: its run ends
    /// that much later.
    fn charge_tick(&mut self, cpu: usize) {
        let Some(t) = self.k.curr(cpu) else {
            return;
        };
        // (A recorded run holds its ticks: `Costs`.)
        let task = &self.tasks[t];
        if task.state != State::Running || task.remaining == 0 || task.live_moves.is_some() {
            return;
        }
        self.charge(t);
        let task = &mut self.tasks[t];
        task.overhead += self.platform.costs.tick;
        task.gen = task.gen.wrapping_add(1);
        let (wall, gen) = (self.wall_for(t, cpu), self.tasks[t].gen);
        self.q.after(wall, Ev::RunDone(ev_id(t), gen));
    }

    /// Starts `cpu`'s tick again, on the tick grid (jiffies).
    fn restart_tick(&mut self, cpu: usize) {
        if !self.ticking[cpu] {
            self.ticking[cpu] = true;
            self.tickless -= 1;
            let next = self.tick_at_or_after(self.now() + 1);
            self.q.at(next, Ev::Tick(ev_id(cpu)));
        }
    }

    /// try_to_wake_up, from another task (or the task's start).
    fn wake(&mut self, t: TaskId) {
        self.wake_by(t, Waker::Task)
    }

    /// try_to_wake_up, from `by`.
    fn wake_by(&mut self, t: TaskId, by: Waker) {
        if self.tasks[t].state != State::Blocked {
            return;
        }
        if let (true, Waker::Task, Some(parent)) = (self.tasks[t].unborn, by, self.stepping) {
            self.inherit(t, parent);
        }
        let now = self.now();
        let prev = self.tasks[t].cpu;
        // `smp_processor_id()`: the waker's CPU, or for a timer the one
        // it was armed on (the sleeper's, which it left on).
        let this = match by {
            Waker::Task => self.stepping.map(|w| (self.tasks[w].cpu, Some(w))),
            Waker::Timer => Some((prev, None)),
        };
        let cpu = self.select_cpu(t, prev, this);
        if let Some((boost, _)) = self.wake_boost[t] {
            self.k.set_nice(t, boost);
            self.tasks[t].nice = boost;
        }
        let task = &mut self.tasks[t];
        task.state = State::Runnable;
        task.ready_since = now;
        task.woke_at = Some(now);
        if task.unborn {
            // Born now: its first iteration (rt-app's log) starts here,
            // not at the start of the run.
            task.unborn = false;
            task.iter_start = Some(now);
            task.first_start = Some(now);
        }
        if self.watched[t] {
            self.watched_woke = Some(t);
        }
        let task = &mut self.tasks[t];
        task.stats.wakeups += 1;
        // A thread's first CPU is no move: `wake_up_new_task` places it
        // with `__set_task_cpu`, which (unlike `set_task_cpu`) neither
        // counts `nr_migrations` nor fires `sched_migrate_task`, the
        // event a recording counts its live moves by.
        if cpu != prev && task.placed {
            task.stats.migrations += 1;
        }
        task.placed = true;
        task.cpu = cpu;
        if let Some(p) = self.pelt.as_mut() {
            p.wake(t, prev, cpu, nice_to_weight(self.tasks[t].nice), now);
        }
        self.k.enqueue(cpu, t, true, now);
        self.rq_sync(cpu);
        self.join(cpu, t);
        if self.record {
            self.wake_marks.push((now, t, cpu));
        }
        // The reschedule happens at this same instant but from the event
        // queue (as the kernel's resched IPI / need_resched does), so a
        // chain of wake-ups never deepens the stack.
        let preempts = match self.k.curr(cpu) {
            None => {
                let cost = match by {
                    Waker::Task => self.platform.costs.wakeup,
                    Waker::Timer => self.timer_wakeup_cost(t),
                };
                self.q.after(cost, Ev::Schedule(ev_id(cpu)));
                true
            }
            Some(c) => {
                let preempts = self.k.check_preempt_wakeup(cpu, t, now);
                // (Its pick may have let a delayed sleeper leave.)
                self.rq_sync(cpu);
                if preempts {
                    match by {
                        Waker::Timer if self.platform.costs.timer_preempt > 0 => {
                            let gen = self.tasks[c].gen;
                            self.q.after(
                                self.platform.costs.timer_preempt,
                                Ev::PreemptOf(ev_id(cpu), ev_id(c), gen),
                            );
                        }
                        _ => self.q.after(0, Ev::Preempt(ev_id(cpu))),
                    }
                }
                preempts
            }
        };
        // The waker's own cost (`Costs`), paid from its run: an IPI goes
        // to another CPU that idles (`ttwu_queue_wakelist`) or whose task
        // the wake-up preempts (`resched_curr`); else the wake-up is done
        // under the run queue's lock alone, as on the waker's own CPU.
        // (A recorded run holds its wake-ups' cost: `Costs`.)
        if let Some((here, Some(w))) =
            this.filter(|&(_, w)| w.is_some_and(|w| self.tasks[w].live_moves.is_none()))
        {
            let c = &self.platform.costs;
            let ipi = here != cpu && preempts;
            self.tasks[w].overhead += if ipi { c.waker } else { c.waker_local };
        }
    }

    /// A recorded fork's child takes what its parent has now, as the
    /// kernel's fork does: its cgroup (`cgroup_fork`, `sched_fork` →
    /// `__set_task_cpu`'s task group), its cpuset, its nice and its own
    /// slice (`dup_task_struct` copies `static_prio` and `se`; only
    /// `sched_reset_on_fork` resets them). A recording knows where each
    /// thread was live; where the child was recorded as its parent was
    /// (same cgroup, same nice), what the parent has in the replay wins,
    /// so a child of a thread a simulated corral moved is born in
    /// corral's group, as it is live; where they differ (something moved
    /// the child), the recorded value stays.
    fn inherit(&mut self, t: TaskId, parent: TaskId) {
        let (cs, ps) = (
            &self.work.tasks[self.tasks[t].spec],
            &self.work.tasks[self.tasks[parent].spec],
        );
        let same_group = cs.taskgroup == ps.taskgroup;
        let same_nice = cs.policy == ps.policy && cs.priority == ps.priority && !cs.policy.is_rt();
        let (group, cpuset, nice, slice) = {
            let p = &self.tasks[parent];
            (p.cgroup.clone(), p.cpuset.clone(), p.nice, p.slice)
        };
        if same_group && self.tasks[t].cgroup != group {
            // Unborn, so blocked: off every queue.
            if self.k.set_task_group(t, &group).is_ok() {
                self.tasks[t].cgroup = group;
            }
        }
        if same_nice {
            if self.tasks[t].nice != nice {
                self.k.set_nice(t, nice);
                self.tasks[t].nice = nice;
            }
            if self.tasks[t].slice != slice && self.k.set_slice(t, slice).is_ok() {
                self.tasks[t].slice = slice;
            }
        }
        if self.tasks[t].cpuset != cpuset {
            let n = self.platform.capacities.len();
            let task = &mut self.tasks[t];
            task.allowed = effective(&task.affinity, cpuset.as_deref());
            task.cpuset = cpuset;
            task.all_cpus = covers_all(&task.allowed, n);
            self.k.set_allowed(t, &task.allowed);
        }
    }

    /// The running task of `cpu` goes back to the run queue and the kernel
    /// picks again.
    fn preempt(&mut self, cpu: usize) {
        let now = self.now();
        if let Some(c) = self.k.curr(cpu) {
            self.charge(c);
            self.end_run(c, cpu);
            let task = &mut self.tasks[c];
            task.gen = task.gen.wrapping_add(1);
            task.state = State::Runnable;
            task.ready_since = now;
            self.pelt_stop(c, cpu, false);
            self.k.put_prev(cpu, c, now);
            let next = self.k.pick_next(cpu, now);
            if next != Some(c) {
                self.tasks[c].stats.preemptions += 1;
            }
            if let Some(n) = next {
                self.dispatch(n, cpu);
            }
        } else {
            self.schedule(cpu);
        }
    }

    /// An idle CPU (or one whose task blocked) picks.
    fn schedule(&mut self, cpu: usize) {
        let now = self.now();
        if self.k.curr(cpu).is_none() {
            let mut next = self.k.pick_next(cpu, now);
            if next.is_none() {
                // New-idle balancing: a CPU with nothing to run pulls.
                if !self.balance(cpu, true).is_empty() {
                    next = self.k.pick_next(cpu, now);
                }
            }
            match next {
                Some(n) => self.dispatch(n, cpu),
                None => self.k.ran_other_than_fair(cpu),
            }
        }
    }

    /// The CPUs `t` may use now: its allowed CPUs that are online, or,
    /// when none is (its CPUs were all unplugged), every online CPU — the
    /// kernel's `select_fallback_rq` breaks the affinity the same way.
    #[cfg(debug_assertions)]
    fn usable(&self, t: TaskId) -> Vec<usize> {
        let mut a = Vec::new();
        self.usable_into(t, &mut a);
        a
    }

    /// The class's `select_task_rq` among the CPUs `t` may use now; a task
    /// allowed everywhere is given the online list as it is.
    fn select_cpu(
        &mut self,
        t: TaskId,
        prev: usize,
        this: Option<(usize, Option<TaskId>)>,
    ) -> usize {
        let wake = WakeCtx {
            this_cpu: this.map(|(c, _)| c),
            waker: this.and_then(|(_, w)| w),
            sync: false,
            pelt: self.pelt.as_ref(),
            now: self.q.now(),
        };
        if self.tasks[t].all_cpus {
            return self.k.select_task_rq(t, prev, &self.online_list, &wake);
        }
        let mut allowed = std::mem::take(&mut self.scratch);
        self.usable_into(t, &mut allowed);
        let cpu = self.k.select_task_rq(t, prev, &allowed, &wake);
        self.scratch = allowed;
        cpu
    }

    /// [`Machine::usable`] into a buffer the caller keeps.
    fn usable_into(&self, t: TaskId, out: &mut Vec<usize>) {
        out.clear();
        if self.tasks[t].all_cpus {
            out.extend_from_slice(&self.online_list);
            return;
        }
        out.extend(
            self.tasks[t]
                .allowed
                .iter()
                .copied()
                .filter(|&c| self.online[c]),
        );
        if out.is_empty() {
            out.extend((0..self.online.len()).filter(|&c| self.online[c]));
        }
    }

    /// Whether `t` may use `cpu` now ([`Machine::usable`] without the list).
    fn may_use(&self, t: TaskId, cpu: usize) -> bool {
        if !self.online[cpu] {
            return false;
        }
        if self.tasks[t].all_cpus {
            return true;
        }
        let a = &self.tasks[t].allowed;
        allows(a, cpu) || !a.iter().any(|&c| self.online[c])
    }

    /// CPU hot-plug. Going offline, the CPU's tasks move to other CPUs
    /// (`migrate_tasks` in the CPU-down path); coming online, it starts
    /// empty and takes load by balancing.
    fn hotplug(&mut self, cpu: usize, on: bool) {
        if self.online[cpu] == on {
            return;
        }
        if on {
            self.online[cpu] = true;
            self.online_list = online_list(&self.online);
            self.k.cpu_online(cpu);
            return;
        }
        if self.online.iter().filter(|&&o| o).count() == 1 {
            return; // the last CPU never goes (the kernel refuses too)
        }
        self.online[cpu] = false;
        self.online_list = online_list(&self.online);
        let now = self.now();
        if let Some(c) = self.k.curr(cpu) {
            self.charge(c);
            self.end_run(c, cpu);
            self.tasks[c].gen = self.tasks[c].gen.wrapping_add(1);
            self.k.put_prev(cpu, c, now);
            self.tasks[c].state = State::Runnable;
            self.tasks[c].ready_since = now;
        }
        self.k.cpu_offline(cpu);
        for t in self.k.queued(cpu) {
            self.k.dequeue(cpu, t, false, now);
            self.leave(cpu, t);
            let task = &mut self.tasks[t];
            task.state = State::Blocked;
            task.woke_at = None;
            self.wake(t);
            self.tasks[t].stats.wakeups -= 1;
        }
        self.rq_sync(cpu);
    }

    /// One look of the hot-plug governor ([`Governor`]).
    fn governor(&mut self) {
        let Some(g) = self.platform.governor.clone() else {
            return;
        };
        let now = self.now();
        // Busy time up to now, running tasks included.
        for cpu in 0..self.online.len() {
            if let Some(c) = self.k.curr(cpu) {
                self.charge(c);
            }
        }
        let online: Vec<usize> = (0..self.online.len()).filter(|&c| self.online[c]).collect();
        let busy: Ns = online
            .iter()
            .map(|&c| self.cpu_busy[c] - self.gov.busy_at[c])
            .sum();
        let util = busy as f64 / (g.period as f64 * online.len() as f64);
        let runnable: usize = online.iter().map(|&c| self.k.nr_running(c)).sum();
        self.gov.busy_at.clone_from(&self.cpu_busy);
        let up = util >= g.up_util && runnable > online.len();
        let down = util < g.down_util;
        self.gov.up = if up { self.gov.up + 1 } else { 0 };
        self.gov.down = if down { self.gov.down + 1 } else { 0 };
        if self.gov.up >= g.up_samples {
            if let Some(c) = (0..self.online.len()).find(|&c| !self.online[c]) {
                self.hotplug(c, true);
                self.gov.up = 0;
            }
        } else if self.gov.down >= g.down_samples && online.len() > 1 {
            if let Some(&c) = online.iter().rev().find(|&&c| c != 0) {
                self.hotplug(c, false);
                self.gov.down = 0;
            }
        }
        self.q.at(now + g.period, Ev::Governor);
    }

    /// What must hold after every event (test builds): no task runs on an
    /// offline CPU or one it may not use, no task runs on two CPUs, and the
    /// CPU time handed out fits in the time that passed.
    #[cfg(debug_assertions)]
    fn check_invariants(&self) {
        let mut running = 0;
        for cpu in 0..self.online.len() {
            if let Some(t) = self.k.curr(cpu) {
                running += 1;
                let task = &self.tasks[t];
                assert!(self.online[cpu], "task {t} runs on offline CPU {cpu}");
                assert_eq!(
                    task.state,
                    State::Running,
                    "curr {t} of CPU {cpu} is not running"
                );
                assert_eq!(
                    task.cpu, cpu,
                    "task {t} runs on {cpu} but thinks it is on {}",
                    task.cpu
                );
                assert!(
                    self.usable(t).contains(&cpu),
                    "task {t} runs on CPU {cpu}, outside its CPUs"
                );
            }
        }
        let states = self
            .tasks
            .iter()
            .filter(|t| t.state == State::Running)
            .count();
        assert_eq!(running, states, "running tasks and busy CPUs disagree");
        assert_eq!(
            self.tickless,
            self.ticking.iter().filter(|&&t| !t).count(),
            "the count of stopped ticks is off"
        );
        let used: Ns = self.tasks.iter().map(|t| t.stats.cpu_ns).sum();
        assert!(
            used <= self.now() * self.online.len() as Ns,
            "more CPU time than time passed"
        );
    }

    fn tick_ns(&self) -> Ns {
        1_000_000_000 / self.platform.hz.max(1) as u64
    }

    /// Runs the model's balancer for `cpu` and books the moves.
    fn balance(&mut self, cpu: usize, newidle: bool) -> Vec<(TaskId, usize)> {
        let now = self.now();
        if !self.online[cpu] {
            return Vec::new();
        }
        // update_blocked_averages: the balancing CPU's own, brought up
        // to date (the others are read as they last were).
        self.rq_sync(cpu);
        let (tasks, online) = (&self.tasks, &self.online);
        let moved = self.k.balance(
            cpu,
            now,
            newidle,
            &|t, c| online[c] && allows(&tasks[t].allowed, c),
            self.pelt.as_ref(),
        );
        for &(t, from) in &moved {
            if let Some(p) = self.pelt.as_mut() {
                p.migrate(t, from, cpu, nice_to_weight(self.tasks[t].nice), now);
            }
            self.rq_sync(from);
            let task = &mut self.tasks[t];
            task.cpu = cpu;
            task.stats.migrations += 1;
            self.leave(from, t);
            self.join(cpu, t);
        }
        if !moved.is_empty() {
            self.rq_sync(cpu);
        }
        if !newidle && !moved.is_empty() && self.k.curr(cpu).is_none() {
            self.schedule(cpu);
        }
        if let Some((t, from, to)) = self.k.take_active_balance() {
            self.active_balance(t, from, to);
        }
        moved
    }

    /// How often a tickless idle CPU is balanced on a kick, at most: the
    /// domain's `min_interval` in ms — 6.x `sd_init`: the domain's
    /// weight (the online CPUs here); 2.6.32's MC domain: 1. XXX: its
    /// `balance_interval` doubling (to `max_interval`) while balanced is
    /// not modelled, nor `nohz.next_balance`.
    fn idle_balance_interval(&self) -> Ns {
        let ms = if self.k.tracks_pelt() {
            self.online_list.len() as Ns
        } else {
            1
        };
        ms * 1_000_000
    }

    /// [`SchedClass::update_misfit_status`] of `cpu`: whether the task
    /// running there is a misfit.
    fn update_misfit(&mut self, cpu: usize) -> bool {
        let (tasks, online) = (&self.tasks, &self.online);
        self.k.update_misfit_status(
            cpu,
            &|t, c| online[c] && allows(&tasks[t].allowed, c),
            self.pelt.as_ref(),
        )
    }

    /// `active_load_balance_cpu_fn`: the stopper on `from` takes its
    /// running task `t` off and queues it on `to` (`attach_one_task`),
    /// which runs it if idle, or weighs it as a wake-up would. XXX: at
    /// once; the kernel's stopper runs when `from` next schedules, a
    /// few µs later.
    fn active_balance(&mut self, t: TaskId, from: usize, to: usize) {
        if self.k.curr(from) != Some(t) || !self.may_use(t, to) {
            return;
        }
        let now = self.now();
        self.stop_running(t, from);
        self.k.dequeue(from, t, false, now);
        // (The stopper moves it: `active_load_balance_cpu_stop`.)
        self.k.ran_other_than_fair(from);
        self.leave(from, t);
        self.q.after(0, Ev::Schedule(ev_id(from)));
        self.requeue_on(t, from, to);
    }

    fn dispatch(&mut self, t: TaskId, cpu: usize) {
        let now = self.now();
        let from = self.tasks[t].cpu;
        if from != cpu {
            self.leave(from, t);
            self.join(cpu, t);
        }
        if let Some(p) = self.pelt.as_mut() {
            let w = nice_to_weight(self.tasks[t].nice);
            if from != cpu {
                p.migrate(t, from, cpu, w, now);
            }
            p.run(t, cpu, w, now);
        }
        if from != cpu {
            self.rq_sync(from);
        }
        self.rq_sync(cpu);
        let task = &mut self.tasks[t];
        if task.cpu != cpu {
            task.stats.migrations += 1;
            task.cpu = cpu;
        }
        task.state = State::Running;
        task.stats.switches += 1;
        task.stats.wait_ns += now - task.ready_since;
        let costs = self.platform.costs;
        if costs != Costs::default() {
            let task = &mut self.tasks[t];
            if task.ran_on.is_some_and(|c| c != cpu) {
                match &mut task.live_moves {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => task.overhead += costs.migration.min(task.ran_there),
                }
                task.ran_there = 0;
            }
            task.ran_on = Some(cpu);
            if self.last_ran[cpu] != Some(t) {
                self.tasks[t].overhead += costs.context_switch;
            }
            self.last_ran[cpu] = Some(t);
        }
        self.restart_tick(cpu);
        // pick_next_task_fair: the misfit status of what runs now.
        self.update_misfit(cpu);
        let task = &mut self.tasks[t];
        task.run_start = now;
        task.on_cpu_since = now;
        if let Some(w) = task.woke_at.take() {
            if let Some(due) = task.timer_due.take() {
                task.iter_wu_lat += now.saturating_sub(due);
            }
            self.record_hist(t, HistKind::WakeupLatency, (now - w) as i64);
        }
        // Work left, or costs owed (`Costs`: its switch, its move), run
        // first; then its next events.
        if self.tasks[t].remaining > 0 || self.tasks[t].overhead > 0 {
            let wall = self.wall_for(t, cpu);
            let gen = self.tasks[t].gen;
            self.q.after(wall, Ev::RunDone(ev_id(t), gen));
        } else {
            self.step_task(t);
        }
    }

    /// Running task `t` runs the costs it owes (`Costs`) as CPU time, then
    /// steps on (`Ev::RunDone`).
    fn pay(&mut self, t: TaskId) {
        let now = self.now();
        let task = &mut self.tasks[t];
        task.remaining = 0;
        task.scaled = false;
        task.run_start = now;
        let (wall, gen) = (task.overhead, task.gen);
        self.q.after(wall, Ev::RunDone(ev_id(t), gen));
    }

    /// The running task stops: it sleeps, waits or exits.
    fn block(&mut self, t: TaskId, exited: bool) {
        let now = self.now();
        let cpu = self.tasks[t].cpu;
        self.charge_at(t, now);
        let task = &mut self.tasks[t];
        task.gen = task.gen.wrapping_add(1);
        self.exited += exited as usize;
        task.stats.sleeps += !exited as u64;
        if exited {
            task.stats.exited_at = Some(now);
        }
        task.state = if exited {
            State::Exited
        } else {
            State::Blocked
        };
        self.end_run(t, cpu);
        self.pelt_stop(t, cpu, !exited);
        self.k.dequeue(cpu, t, !exited, now);
        if let Some(p) = self.pelt.as_mut() {
            p.dequeue(t, cpu, nice_to_weight(self.tasks[t].nice), exited);
        }
        self.rq_sync(cpu);
        if let Some((_, own)) = self.wake_boost[t] {
            self.k.set_nice(t, own);
            self.tasks[t].nice = own;
        }
        self.leave(cpu, t);
        self.schedule(cpu);
    }

    /// What task `t`'s timed sleep ending onto an idle CPU costs this
    /// time: the platform's `timer_wakeup`, or with its
    /// `timer_wakeup_spread`, that times one of the spread's factors,
    /// each as likely:
    ///
    /// ```text
    /// cost = timer_wakeup × factor[⌊u · n⌋],  u uniform in [0, 1): the
    ///        task's own stream (as run_length's), seeded with --seed
    /// ```
    ///
    /// Live, most such wake-ups cost about the median and a few percent
    /// several times it (on this VM the vCPU's host wakes it late: rt-app's
    /// own 5 ms sleeps, alone, p50 51-64 µs and p99 79-227 µs in three
    /// calibrations two minutes apart), and the tail of a thread's wake-up
    /// latency is theirs. Factors kept each as likely, as many as
    /// measured, keep the tail's shape: a thread's p99 is the spread's
    /// p99, not one factor standing for the slowest percent.
    ///
    /// XXX: measured on a machine otherwise idle (`corral lab validate`'s
    /// calibration, before each case run), whatever the sleep's length
    /// and the other CPUs' state; the tail varies from hour to hour with
    /// the host.
    fn timer_wakeup_cost(&mut self, t: TaskId) -> Ns {
        let spread = &self.platform.timer_wakeup_spread;
        let base = self.platform.costs.timer_wakeup;
        if spread.is_empty() || base == 0 {
            return base;
        }
        let i = self.tasks[t].timer_draws.below(spread.len() as u64) as usize;
        (base as f64 * spread[i]).round() as Ns
    }

    /// How long a `run` of `ns` takes this time: exactly `ns`, or with the
    /// platform's `run_spread`, `ns` times one of its factors, each as
    /// likely, at the run's length ([`spread_factor`]):
    ///
    /// ```text
    /// length = ns × factor(ns, ⌊u · n⌋),  u uniform in [0, 1): the task's
    ///          own SplitMix64 stream (engine::Rng), seeded with --seed
    /// ```
    ///
    /// Each task draws from a stream of its own (the seed is `--seed`), so
    /// a thread's k-th run takes the same length whatever else the machine
    /// runs: both sides of `--compare` draw alike. Live, rt-app's fixed
    /// work takes a little more or less each time (interrupts, the vCPU's
    /// host); exact lengths make runs that end together queue in the same
    /// order cycle after cycle. A recorded thread's runs (`live_moves`)
    /// are live CPU times that vary already: played as they are.
    ///
    /// XXX: measured alone on a CPU after a 100 µs sleep (`corral lab
    /// validate`'s calibration); among busy threads a run may vary more.
    fn run_length(&mut self, t: TaskId, ns: Ns) -> Ns {
        let spread = &self.platform.run_spread;
        let n = spread.first().map_or(0, |(_, f)| f.len());
        if n == 0 || ns == 0 || self.tasks[t].live_moves.is_some() {
            return ns;
        }
        let i = self.tasks[t].spread.below(n as u64) as usize;
        let f = spread_factor(&self.platform.run_spread, ns, i);
        ((ns as f64 * f).round() as Ns).max(1)
    }

    /// A timed sleep of `t` until `soft` (rt-app's `timer` and `sleep`:
    /// `clock_nanosleep`, `nanosleep`). `hrtimer_nanosleep` arms the
    /// timer for the range [soft, soft + slack]
    /// (`hrtimer_set_expires_range_ns`), the slack being the task's
    /// `timer_slack_ns`, none for an RT or deadline task. The clock event
    /// device is programmed for the range's end, and an interrupt that
    /// comes within the range expires the timer early
    /// (`__hrtimer_run_queues` expires every timer whose soft expiry has
    /// passed): a sleep ends at
    ///
    ///   min(soft + slack, first interrupt on its CPU at or after soft).
    ///
    /// XXX: the only such interrupt modelled is the CPU's tick, taken to
    /// run when the CPU has a task to run as the timer is armed (the
    /// kernel: at expiry); other timers' interrupts are not modelled.
    fn hrtimer_sleep(&mut self, t: TaskId, soft: Ns) {
        let (cpu, slack) = (self.tasks[t].cpu, self.tasks[t].timer_slack);
        self.block(t, false);
        let hard = soft + slack;
        let at = if slack > 0 && self.k.curr(cpu).is_some() {
            self.tick_at_or_after(soft).min(hard)
        } else {
            hard
        };
        let gen = self.tasks[t].gen;
        self.q.at(at, Ev::Wake(ev_id(t), gen));
    }

    /// The first instant of the tick grid (jiffies) at or after `at`.
    fn tick_at_or_after(&self, at: Ns) -> Ns {
        let tick = self.tick_ns();
        let phase = self.platform.tick_phase % tick;
        if at <= phase {
            phase
        } else {
            (at - phase).div_ceil(tick) * tick + phase
        }
    }

    /// The next event of `t`'s program, moving through loops and phases;
    /// `None` when the program is over.
    fn next_event(&mut self, t: TaskId) -> Option<(usize, usize)> {
        let spec = &self.work.tasks[self.tasks[t].spec];
        let (now, record) = (self.q.now(), self.record);
        loop {
            let task = &mut self.tasks[t];
            let phase = &spec.phases[task.phase];
            let cpu_now = task.stats.cpu_ns
                + if task.state == State::Running {
                    now - task.run_start
                } else {
                    0
                };
            if task.event < phase.events.len() {
                if task.event == 0 && task.iter_start.is_none() {
                    task.iter_start = Some(now);
                    task.iter_cpu = cpu_now;
                    task.iter_slack = 0;
                    task.iter_wu_lat = 0;
                    task.first_start.get_or_insert(now);
                }
                task.event += 1;
                return Some((task.phase, task.event - 1));
            }
            // One iteration of the phase is over: rt-app logs a line.
            if let Some(start) = task.iter_start.take() {
                if record {
                    let (mut c_duration, mut c_period) = (0, 0);
                    for e in &phase.events {
                        match e {
                            Event::Run(us) | Event::Runtime(us) => c_duration += us * 1000,
                            Event::Timer { period_us, .. } => c_period += period_us * 1000,
                            _ => {}
                        }
                    }
                    task.log.push(LogLine {
                        idx: task.phase,
                        run: cpu_now - task.iter_cpu,
                        period: now - start,
                        start,
                        end: now,
                        rel_st: start - task.first_start.unwrap_or(start),
                        slack: task.iter_slack,
                        c_duration,
                        c_period,
                        wu_lat: task.iter_wu_lat,
                    });
                }
            }
            task.event = 0;
            if task.phase_loops_left > 0 {
                task.phase_loops_left -= 1;
            }
            if task.phase_loops_left != 0 {
                continue;
            }
            let last_phase = task.phase;
            task.phase += 1;
            if task.phase == spec.phases.len() {
                task.phase = 0;
                if task.loops_left > 0 {
                    task.loops_left -= 1;
                }
                if task.loops_left == 0 {
                    return None;
                }
            }
            task.phase_loops_left = spec.phases[task.phase].loops;
            // A phase may narrow (or widen) the CPUs the thread may use;
            // one with the same `cpus` as the last leaves them as they
            // are (a one-phase task wraps to the same phase every loop).
            if spec.phases[task.phase].cpus == spec.phases[last_phase].cpus {
                continue;
            }
            let ncpus = self.platform.capacities.len();
            task.affinity = cpus_of(spec, task.phase, ncpus);
            if task.affinity.is_empty() {
                task.affinity = (0..ncpus).collect();
            }
            task.allowed = effective(&task.affinity, task.cpuset.as_deref());
            task.all_cpus = covers_all(&task.allowed, ncpus);
            self.k.set_allowed(t, &task.allowed);
        }
    }

    /// `pthread_mutex_lock`: a free mutex is taken (the fast path, 0 to
    /// 1); a taken one marks itself contended (2) and the caller waits,
    /// last. `retry`: a thread woken to try again, or coming back from a
    /// condition wait, takes it the slow way (`__lll_lock_wait`,
    /// `lll_cond_lock`), marking it contended all the same.
    fn lock(&mut self, t: TaskId, m: u32, retry: bool) -> bool {
        let mx = &mut self.mutexes[m as usize];
        if mx.owner.is_none() {
            mx.owner = Some(t);
            mx.contended = retry;
            true
        } else {
            mx.waiters.push_back(t);
            mx.contended = true;
            false
        }
    }

    /// `pthread_mutex_unlock` of glibc's default mutex (`lll_unlock`):
    /// the mutex is let go and, if it was contended, one waiter is woken
    /// to try again. Nothing is handed over: a thread that takes it
    /// first, the unlocker itself or another, has it, and the woken one
    /// waits again, last. One taken by the fast path meanwhile wakes
    /// nobody at its unlock.
    fn unlock(&mut self, m: u32) {
        let mx = &mut self.mutexes[m as usize];
        mx.owner = None;
        if !std::mem::take(&mut mx.contended) {
            return;
        }
        if let Some(next) = mx.waiters.pop_front() {
            self.tasks[next].relock = Some(m);
            self.wake(next);
        }
    }

    fn signal(&mut self, cond: u32, all: bool) {
        if !all {
            if let Some((w, mutex)) = self.conds[cond as usize].pop_front() {
                self.tasks[w].relock = Some(mutex);
                self.wake(w);
            }
            return;
        }
        // (The queue is put back empty, to be reused.)
        let mut waiters = std::mem::take(&mut self.conds[cond as usize]);
        for &(w, mutex) in &waiters {
            self.tasks[w].relock = Some(mutex);
            self.wake(w);
        }
        waiters.clear();
        let q = &mut self.conds[cond as usize];
        if q.is_empty() {
            *q = waiters;
        }
    }

    /// rt-app's `timer`: the next expiry of timer `name` (id `id`; a
    /// `unique…` timer is the thread's own), `period` after the last, the
    /// first a period after the `t_first` of the thread that used it first
    /// (rt-app's `t_next = *t_first` at the timer's initialisation, not
    /// the time of that use); records the slack (negative when the thread
    /// came late). In relative mode a missed expiry re-bases the timer on
    /// now. The time to sleep until, if the expiry is ahead.
    fn timer(
        &mut self,
        t: TaskId,
        name: &Name,
        id: u32,
        period: Ns,
        mode: TimerMode,
        now: Ns,
    ) -> Option<Ns> {
        let t_first = self.tasks[t].t_first;
        let slot = if name.starts_with("unique") {
            let own = &mut self.tasks[t].own_timers;
            let i = match own.iter().position(|(n, _)| n == name) {
                Some(i) => i,
                None => {
                    own.push((name.clone(), t_first));
                    own.len() - 1
                }
            };
            &mut own[i].1
        } else {
            self.timers[id as usize].get_or_insert(t_first)
        };
        let next = *slot + period;
        let slack = next as i64 - now as i64;
        let next = if mode == TimerMode::Relative && next < now {
            now
        } else {
            next
        };
        *slot = next;
        self.record_hist(t, HistKind::Slack, slack);
        let task = &mut self.tasks[t];
        task.iter_slack = slack;
        (next > now).then(|| {
            task.timer_due = Some(next);
            next
        })
    }

    /// rt-app's `resume` and `suspend` (`run_event`, `src/rt-app.c`), a
    /// condition and the mutex of the same name:
    ///
    /// ```text
    /// resume:  pthread_mutex_lock(m); pthread_cond_broadcast(c); pthread_mutex_unlock(m)
    /// suspend: pthread_mutex_lock(m); pthread_cond_wait(c, m);   pthread_mutex_unlock(m)
    /// ```
    ///
    /// `t`, holding mutex `id`, wakes every thread suspended on `id` (a
    /// resume with none waiting is lost, as a condition variable's
    /// broadcast is) and lets the mutex go once it has
    /// paid for the wake-ups (`Costs::waker`). Each woken thread takes the
    /// mutex again before it goes on (glibc's condition wakes it, then it
    /// waits on the mutex): one that preempts its waker on the waker's CPU
    /// finds the mutex still held, blocks on it, and is woken a second time
    /// by the unlock (traced on mp3-short: AudioOut preempted twice by
    /// AudioTrack per resume, 2-16 µs and then its 300 µs run).
    fn resume_locked(&mut self, t: TaskId, id: u32) {
        // (The list is put back empty, to be reused.)
        let mut ws = std::mem::take(&mut self.suspended[id as usize]);
        for &w in &ws {
            self.wake_to_relock(w, id);
        }
        ws.clear();
        let list = &mut self.suspended[id as usize];
        if list.is_empty() {
            *list = ws;
        }
        self.tasks[t].unlock_then = Some(id);
    }

    /// Wakes `w` from `pthread_cond_wait` on a condition whose mutex is
    /// `m`: before it goes on it takes `m` again (waiting for it if held)
    /// and lets it go once the costs it owes are paid.
    fn wake_to_relock(&mut self, w: TaskId, m: u32) {
        self.tasks[w].relock = Some(m);
        self.tasks[w].unlock_then = Some(m);
        self.wake(w);
    }

    /// [`Machine::resume_locked`]'s `suspend`: `t`, holding mutex `id`,
    /// waits on condition `id`, letting the mutex go as it sleeps.
    fn suspend_locked(&mut self, t: TaskId, id: u32) {
        self.suspended[id as usize].push(t);
        self.unlock(id);
        self.cond_sleep(t)
    }

    /// `pthread_cond_wait`'s sleep, once it has let the mutex go. glibc
    /// unlocks (`futex_wake` if a thread waits for the mutex) and only then
    /// sleeps (`futex_wait` on the condition's sequence). If the unlock
    /// woke someone, the waiter first pays for that wake-up (`Costs`), and
    /// meanwhile it is still runnable: the woken thread may preempt it
    /// (on return from the syscall, the kernel's preemption point), and a
    /// signal that comes before it sleeps wakes no one and lets it go on
    /// (the sequence changed, so `futex_wait` returns at once). Traced on
    /// mp3-short: mp3.decoder, preempted there by OMXCall, was still
    /// runnable when OMXCall signalled and waited, so OMXCall slept beside
    /// it with positive lag and preempted it again at the next cycle.
    fn cond_sleep(&mut self, t: TaskId) {
        if self.tasks[t].overhead > 0 {
            self.tasks[t].wait_pending = true;
            return self.pay(t);
        }
        self.block(t, false)
    }

    /// A task's start: woken as a new task, or, for a recorded fork
    /// (`corral_forked`), left unborn, waiting on its first `corral_block`
    /// for the fork's `corral_wake`.
    fn start(&mut self, t: TaskId) {
        let spec = self.tasks[t].spec;
        if !self.work.tasks[spec].forked {
            return self.wake(t);
        }
        let (phase, index) = self.next_event(t).expect("a forked task has events");
        let (id, _) = self.ids[spec][phase][index];
        self.tasks[t].unborn = true;
        if self.take_post(t, id) {
            // Forked already, at this same instant.
            self.wake(t);
        }
    }

    /// corral's `corral_block`: takes a wake-up posted to semaphore `id`
    /// (true), or puts `t` on its waiters (false: the caller blocks it).
    fn take_post(&mut self, t: TaskId, id: u32) -> bool {
        let id = id as usize;
        if self.tokens[id] > 0 {
            self.tokens[id] -= 1;
            return true;
        }
        self.suspended[id].push(t);
        false
    }

    /// corral's `corral_wake`: one wake-up posted to semaphore `id` wakes
    /// the first thread blocked on it, or is kept for the next
    /// `corral_block` (unlike `resume`, never lost).
    fn post(&mut self, id: u32) {
        let waiters = &mut self.suspended[id as usize];
        if waiters.is_empty() {
            self.tokens[id as usize] += 1;
        } else {
            let w = waiters.remove(0);
            self.wake(w);
        }
    }

    /// rt-app's `barrier`, as `run_event` (`src/rt-app.c`) does it:
    ///
    /// ```text
    /// pthread_mutex_lock(m)
    /// if waiting == 0: pthread_cond_broadcast(c)        (the last to arrive)
    /// else: waiting -= 1; pthread_cond_wait(c, m); waiting += 1
    /// pthread_mutex_unlock(m)
    /// ```
    ///
    /// `t`, holding the barrier's mutex (the mutex of the same name),
    /// arrives at barrier `id`. `waiting` starts at the number of the
    /// barrier's events less one, one per thread instance naming it
    /// (rt-app counts them as it parses). One that finds it at 0 wakes
    /// every thread waiting and goes on (true), letting the mutex go
    /// once it has paid for the wake-ups (`Costs::waker`); the others
    /// count themselves out, let it go and wait (false). Each woken one takes the mutex again, counts itself
    /// back in, then lets it go: one woken onto the waker's CPU that
    /// preempts it while it still holds the mutex blocks on it, and the
    /// mutex wakes the waiters one by one. So the count is back only
    /// once the woken ones have run: a thread that arrives again before
    /// them finds it at 0 and goes straight through (on a busy CPU the
    /// last to arrive may run many loops while the ones it woke wait,
    /// not eligible yet, and their lag grows meanwhile).
    fn arrive(&mut self, t: TaskId, id: u32) -> bool {
        let b = &mut self.barriers[id as usize];
        if b.waiting > 0 {
            b.waiting -= 1;
            b.sleepers.push(t);
            // XXX: the caller sleeps at once (not `cond_sleep`), carrying
            // the unlock's wake-up cost across the sleep.
            self.unlock(id);
            return false;
        }
        // (The list is put back empty, to be reused, as `resume` does.)
        let mut all = std::mem::take(&mut b.sleepers);
        for &w in &all {
            self.tasks[w].rejoin = Some(id);
            self.wake_to_relock(w, id);
        }
        all.clear();
        self.barriers[id as usize].sleepers = all;
        self.tasks[t].unlock_then = Some(id);
        true
    }

    /// Executes the running task's events until it needs CPU, blocks or ends.
    fn step_task(&mut self, t: TaskId) {
        let outer = self.stepping.replace(t);
        self.step_task_events(t);
        self.stepping = outer;
    }

    /// [`Machine::step_task`]'s work, with `t` as the waker of whatever
    /// it wakes.
    fn step_task_events(&mut self, t: TaskId) {
        // Back from the syscalls of `pthread_cond_wait`'s unlock: it sleeps
        // now, unless signalled meanwhile (then it takes the mutex again).
        if std::mem::take(&mut self.tasks[t].wait_pending) && self.tasks[t].relock.is_none() {
            return self.block(t, false);
        }
        if let Some(m) = self.tasks[t].relock {
            if !self.lock(t, m, true) {
                return self.block(t, false);
            }
            self.tasks[t].relock = None;
        }
        // It holds the barrier's mutex again.
        if let Some(b) = self.tasks[t].rejoin.take() {
            self.barriers[b as usize].waiting += 1;
        }
        if let Some(b) = self.tasks[t].arrive.take() {
            if !self.arrive(t, b) {
                return self.block(t, false);
            }
        }
        match self.tasks[t].wait_after.take() {
            Some((id, true)) => self.resume_locked(t, id),
            Some((id, false)) => return self.suspend_locked(t, id),
            None => {}
        }
        let work = Rc::clone(&self.work);
        let spec = &work.tasks[self.tasks[t].spec];
        loop {
            // Costs owed (`Costs`: the wake-ups it made, its switch) are
            // run before a mutex it holds is let go, and before any event
            // but a run (whose time includes them).
            if let Some(m) = self.tasks[t].unlock_then {
                if self.tasks[t].overhead > 0 {
                    return self.pay(t);
                }
                self.tasks[t].unlock_then = None;
                self.unlock(m);
            }
            let now = self.now();
            let Some((phase, index)) = self.next_event(t) else {
                return self.block(t, true);
            };
            let ev = &spec.phases[phase].events[index];
            if self.tasks[t].overhead > 0 && !matches!(ev, Event::Run(_) | Event::Runtime(_)) {
                self.tasks[t].event -= 1;
                return self.pay(t);
            }
            let (id, id2) = self.ids[self.tasks[t].spec][phase][index];
            // A new phase may forbid the CPU it runs on: move, then go on.
            if !self.may_use(t, self.tasks[t].cpu) {
                self.tasks[t].event -= 1;
                self.block(t, false);
                return self.wake(t);
            }
            match ev {
                &Event::Run(us) | &Event::Runtime(us) => {
                    let scaled = matches!(ev, Event::Run(_));
                    let ns = if scaled {
                        self.run_length(t, us * 1000)
                    } else {
                        us * 1000
                    };
                    let task = &mut self.tasks[t];
                    task.remaining = ns;
                    task.scaled = scaled;
                    task.run_start = now;
                    if task.remaining == 0 {
                        continue;
                    }
                    let wall = self.wall_for(t, self.tasks[t].cpu);
                    let gen = self.tasks[t].gen;
                    self.q.after(wall, Ev::RunDone(ev_id(t), gen));
                    return;
                }
                &Event::Sleep(us) => return self.hrtimer_sleep(t, now + us * 1000),
                // A recorded wake-up's instant: the live one already
                // carried its timer slack, so none is added.
                &Event::Until(us) if us * 1000 > now => {
                    self.block(t, false);
                    let gen = self.tasks[t].gen;
                    self.q.at(us * 1000, Ev::Wake(ev_id(t), gen));
                    return;
                }
                Event::Until(_) => {}
                Event::Timer {
                    name,
                    period_us,
                    mode,
                } => {
                    if let Some(next) = self.timer(t, name, id, period_us * 1000, *mode, now) {
                        return self.hrtimer_sleep(t, next);
                    }
                }
                Event::Suspend(_) => {
                    if !self.lock(t, id, false) {
                        self.tasks[t].wait_after = Some((id, false));
                        return self.block(t, false);
                    }
                    return self.suspend_locked(t, id);
                }
                Event::Resume(_) => {
                    if !self.lock(t, id, false) {
                        self.tasks[t].wait_after = Some((id, true));
                        return self.block(t, false);
                    }
                    self.resume_locked(t, id);
                }
                Event::Wake(_) => self.post(id),
                Event::Block(_) => {
                    if !self.take_post(t, id) {
                        return self.block(t, false);
                    }
                }
                Event::Lock(_) => {
                    if !self.lock(t, id, false) {
                        return self.block(t, false);
                    }
                }
                Event::Unlock(_) => self.unlock(id),
                Event::Signal(_) => self.signal(id, false),
                Event::Broad(_) => self.signal(id, true),
                Event::Wait { .. } => {
                    self.conds[id as usize].push_back((t, id2));
                    self.unlock(id2);
                    return self.cond_sleep(t);
                }
                Event::Sync { .. } => {
                    // rt-app's sig_and_wait: the caller holds the mutex
                    // (its JSON locks first); signal, then wait, which
                    // lets the mutex go until the wake-up.
                    // XXX: it sleeps at once (not `cond_sleep`), carrying
                    // its signal's cost across the sleep: here that cost is
                    // owed before the unlock, and paying it there would
                    // keep it runnable even when the unlock woke no one.
                    self.signal(id, false);
                    self.conds[id as usize].push_back((t, id2));
                    self.unlock(id2);
                    return self.block(t, false);
                }
                Event::Barrier(_) => {
                    if !self.lock(t, id, false) {
                        self.tasks[t].arrive = Some(id);
                        return self.block(t, false);
                    }
                    if !self.arrive(t, id) {
                        return self.block(t, false);
                    }
                }
                Event::Yield => {
                    // sched_yield: back to the queue, from the event loop.
                    let cpu = self.tasks[t].cpu;
                    self.k.yield_task(cpu, t, now);
                    self.q.after(0, Ev::Preempt(ev_id(cpu)));
                    return;
                }
            }
        }
    }
}

/// The online CPUs, in ascending order.
fn online_list(online: &[bool]) -> Vec<usize> {
    (0..online.len()).filter(|&c| online[c]).collect()
}

/// Whether `cpus` is every one of `ncpus` CPUs: as `cpus_of` and
/// `effective` build their lists, in ascending order without repeats.
fn covers_all(cpus: &[usize], ncpus: usize) -> bool {
    cpus.len() == ncpus && cpus.iter().enumerate().all(|(i, &c)| i == c)
}

/// A task's CPUs: its affinity within its cpuset, or the whole cpuset
/// when they do not meet (the cpuset wins, as `cpuset_cpus_allowed` does).
fn effective(affinity: &[usize], cpuset: Option<&[usize]>) -> Vec<usize> {
    match cpuset {
        None => affinity.to_vec(),
        Some(set) => {
            let both: Vec<usize> = affinity
                .iter()
                .copied()
                .filter(|c| set.contains(c))
                .collect();
            if both.is_empty() {
                set.to_vec()
            } else {
                both
            }
        }
    }
}

/// The CPUs phase `phase` of `task` may use: the phase's `cpus`, else the
/// task's, else all; CPUs the platform lacks are dropped.
fn cpus_of(task: &crate::input::rtapp::Task, phase: usize, ncpus: usize) -> Vec<usize> {
    match task.phases[phase].cpus.as_ref().or(task.cpus.as_ref()) {
        Some(c) => c
            .iter()
            .map(|&c| c as usize)
            .filter(|&c| c < ncpus)
            .collect(),
        None => (0..ncpus).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::rtapp::parse;
    use crate::sched::fair::Fair;

    fn run(json: &str, cpus: usize, secs: f64) -> Vec<TaskStats> {
        let w = parse(json, "test").unwrap();
        let mut m = Machine::new(Platform::uniform(cpus), w, Fair::cfs(cpus)).unwrap();
        m.run_until((secs * 1e9) as Ns);
        m.stats()
    }

    /// One simulated second of `json` on `cpus` equal CPUs under EEVDF
    /// with the RT class above it (and its fair server).
    fn run_with_rt(json: &str, cpus: usize) -> Vec<TaskStats> {
        let k = crate::sched::classes::Classes::new(
            cpus,
            Fair::eevdf(cpus),
            crate::sched::rt::RtBandwidth::fair_server(),
            250,
        );
        let mut m = Machine::new(Platform::uniform(cpus), parse(json, "test").unwrap(), k).unwrap();
        m.run_until(1_000_000_000);
        m.stats()
    }

    #[test]
    fn covers_all_is_exactly_every_cpu_in_order() {
        assert!(covers_all(&[0, 1, 2], 3));
        assert!(!covers_all(&[0, 2], 3));
        assert!(!covers_all(&[0, 0, 1], 3), "a repeat is not every CPU");
        assert!(
            !covers_all(&[1, 0, 2], 3),
            "nor a list out of order (the slow path then)"
        );
        assert!(!covers_all(&[0, 1, 2], 4));
    }

    /// One hog that never sleeps, on `caps`, under the class `k`.
    fn hog_on<K: SchedClass>(caps: &[u32], k: K) -> Machine<K> {
        let w = parse(
            r#"{"tasks": {"hog": {"loop": -1, "run": 1000000}}}"#,
            "test",
        )
        .unwrap();
        let mut p = Platform::uniform(caps.len());
        p.capacities = caps.to_vec();
        Machine::new(p, w, k).unwrap()
    }

    #[test]
    fn the_tick_brings_the_running_task_s_pelt_up_to_date() {
        // A hog that never sleeps: only the tick updates its averages
        // (`entity_tick`). It starts at half the idle CPU's capacity
        // (`post_init_entity_util_avg`); 100 ms of running is then
        // util ≈ 1024 − 512 · 2^(−100/32) ≈ 965.
        let mut m = hog_on(&[1024], Fair::eevdf(1));
        m.run_until(100_000_000);
        let util = m.task_pelt(0).unwrap().util_avg;
        assert!((940..=990).contains(&util), "util_avg {util}");
    }

    #[test]
    fn a_misfit_hog_on_a_little_cpu_is_pushed_to_an_idle_big_one() {
        // CPU 0 big (1024), CPU 1 little (446). The hog starts held to
        // CPU 1; once free, the tick on CPU 1 sees a misfit, kicks the
        // idle big CPU's balance, and the stopper pushes the hog there.
        // The same through the class stack `corral sim` runs (RT above
        // fair).
        fn held_then_free<K: SchedClass>(mut m: Machine<K>) -> Machine<K> {
            m.set_cpuset(0, Some(vec![1])).unwrap();
            m.run_until(200_000_000);
            assert_eq!(m.task_cpu(0), 1);
            m.set_cpuset(0, None).unwrap();
            m.run_until(220_000_000);
            m
        }
        let m = held_then_free(hog_on(&[1024, 446], Fair::eevdf(2)));
        assert_eq!(m.task_cpu(0), 0, "pushed to the big CPU");
        // Started on CPU 1, its cpuset's (a placement, no move: the
        // cpuset was set before its start), then pushed: one move.
        assert_eq!(m.task_stats(0).migrations, 1);
        let k = crate::sched::classes::Classes::new(
            2,
            Fair::eevdf(2),
            crate::sched::rt::RtBandwidth::fair_server(),
            250,
        );
        let m = held_then_free(hog_on(&[1024, 446], k));
        assert_eq!(m.task_cpu(0), 0, "pushed to the big CPU (class stack)");
        // Where capacities are equal it stays.
        let mut m = held_then_free(hog_on(&[1024, 1024], Fair::eevdf(2)));
        m.run_until(400_000_000);
        assert_eq!(m.task_cpu(0), 1);
    }

    #[test]
    fn a_corral_wake_posted_before_the_block_is_kept_not_lost() {
        // "a" wakes "b" after 1 ms of CPU; "b" blocks after 2 ms, so on
        // 2 CPUs the wake-up comes first: kept, "b" goes on at once and
        // ends. rt-app's resume/suspend would lose it and hang "b".
        let json = |wake, block| {
            format!(
                r#"{{"tasks": {{
                "a": {{"loop": 1, "run": 1000, "{wake}": "b", "run1": 1000}},
                "b": {{"loop": 1, "run": 2000, "{block}": "b", "run1": 500}}
            }}}}"#
            )
        };
        let s = run(&json("corral_wake", "corral_block"), 2, 0.1);
        assert_eq!(s[1].cpu_ns, 2_500_000, "b ran to its end");
        assert!(s[1].exited_at.is_some());
        let s = run(&json("resume", "suspend"), 2, 0.1);
        assert_eq!(s[1].cpu_ns, 2_000_000, "a resume nobody waits for is lost");
        assert!(s[1].exited_at.is_none());
        // Blocked first: woken by the post, after it. b blocks at 2 ms,
        // a posts at 4 ms (3 ms of CPU before it).
        let s = run(
            r#"{"tasks": {
                "a": {"loop": 1, "run": 3000, "corral_wake": "b"},
                "b": {"loop": 1, "run": 2000, "corral_block": "b", "run1": 500}
            }}"#,
            2,
            0.1,
        );
        assert_eq!(s[1].wakeups, 2, "its start and the post");
        assert!(s[1].exited_at.unwrap() >= 3_500_000, "{:?}", s[1].exited_at);
    }

    #[test]
    fn corral_until_wakes_at_the_instant_not_after_a_late_start() {
        // "p" sleeps until 10 ms after the start, however long its first
        // 1 ms of work took sharing one CPU with a 6 ms hog; it wakes at
        // 10 ms, runs 1 ms, and its second instant (5 ms) is past, so it
        // goes on at once: it ends at 12 ms. Relative sleeps of the same
        // lengths end at 19 ms.
        let json = r#"{"tasks": {
            "hog": {"loop": 1, "run": 6000},
            "p": {"loop": 1, "run": 1000, "corral_until": 10000, "run1": 1000,
                  "corral_until1": 5000, "run2": 1000}
        }}"#;
        let s = run(json, 1, 0.1);
        let end = s[1].exited_at.expect("p ended");
        // Its start, the one wake-up at 10 ms; then 2 ms of work.
        assert_eq!(s[1].wakeups, 2);
        assert!((12_000_000..12_100_000).contains(&end), "{end}");
        // The same with relative sleeps ends at least 5 ms later.
        let s = run(&json.replace("corral_until", "sleep"), 1, 0.1);
        assert!(s[1].exited_at.unwrap() > 17_000_000, "{:?}", s[1].exited_at);
    }

    #[test]
    fn a_thread_s_first_cpu_is_a_placement_not_a_move() {
        // The parent runs on CPU 0; its child, not yet born, was put on
        // CPU 0 too (the third task of two CPUs). Born while the parent
        // still runs, it goes to the idle CPU 1: `wake_up_new_task`'s
        // placement, no `sched_migrate_task`. A later wake-up onto
        // another CPU than its last is a move.
        let w = parse(
            r#"{"tasks": {
                "parent": {"loop": 1, "run": 1000, "corral_wake": "child", "run1": 4000},
                "idle": {"loop": 1, "sleep": 100000},
                "child": {"loop": 1, "corral_forked": true, "corral_block": "child", "run": 1000,
                          "sleep": 1000, "run1": 1000}
            }}"#,
            "test",
        )
        .unwrap();
        let mut m = Machine::new(Platform::uniform(2), w, Fair::eevdf(2)).unwrap();
        m.run_until(500_000);
        assert!(!m.task_born(2));
        assert_eq!((m.task_cpu(0), m.task_cpu(2)), (0, 0));
        m.run_until(1_500_000);
        assert_eq!(m.task_cpu(2), 1, "born on the idle CPU");
        assert_eq!(m.task_stats(2).migrations, 0, "its birth is no move");
        m.run_until(20_000_000);
        let s = m.stats();
        assert_eq!(s[2].wakeups, 2);
        assert_eq!(s[2].migrations as usize, usize::from(m.task_cpu(2) != 1));
    }

    #[test]
    fn a_recorded_fork_is_born_at_its_parent_s_wake_up() {
        let w = parse(
            r#"{"tasks": {
                "parent": {"loop": 1, "run": 5000, "corral_wake": "child", "run1": 1000},
                "child": {"loop": 1, "corral_forked": true, "corral_block": "child", "run": 2000}
            }}"#,
            "test",
        )
        .unwrap();
        let mut m = Machine::new(Platform::uniform(2), w, Fair::eevdf(2)).unwrap();
        m.run_until(4_000_000);
        assert!(!m.task_born(1), "not forked yet");
        assert_eq!(m.task_stats(1).wakeups, 0);
        m.run_until(20_000_000);
        assert!(m.task_born(1));
        let s = m.stats();
        // Its one wake-up is its birth (wake_up_new_task), as recorded.
        assert_eq!((s[1].wakeups, s[1].cpu_ns), (1, 2_000_000));
        assert!(s[1].exited_at.unwrap() >= 7_000_000);
        // corral_forked needs the block to wait on.
        let e = parse(
            r#"{"tasks": {"c": {"corral_forked": true, "run": 1}}}"#,
            "test",
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("corral_forked"), "{e}");
    }

    /// `cgroup_fork`, `dup_task_struct`: a recorded fork's child is born
    /// with what its parent has at the fork in the replay (a simulated
    /// corral moved the parent), unless the recording had the child
    /// somewhere else than its parent (then it was moved live, and stays
    /// where it was recorded).
    #[test]
    fn a_recorded_fork_is_born_in_its_parent_s_group_cpuset_nice_and_slice() {
        let json = r#"{"tasks": {
            "parent": {"loop": 1, "taskgroup": "/work", "run": 5000, "corral_wake": "child", "corral_wake1": "moved", "run1": 1000},
            "child": {"loop": 1, "taskgroup": "/work", "corral_forked": true, "corral_block": "child", "run": 2000},
            "moved": {"loop": 1, "taskgroup": "/elsewhere", "priority": 5, "corral_forked": true, "corral_block": "moved", "run": 2000}
        }}"#;
        let fresh = || {
            Machine::new(
                Platform::uniform(2),
                parse(json, "test").unwrap(),
                Fair::eevdf(2),
            )
            .unwrap()
        };
        let mut m = fresh();
        m.run_until(1_000_000);
        // What a simulated corral does to the parent before the fork.
        m.advance_to(1_000_000);
        m.move_task(0, "/corral/latency").unwrap();
        m.set_cpuset(0, Some(vec![1])).unwrap();
        m.renice(0, -5);
        m.set_slice(0, Some(300_000)).unwrap();
        m.run_until(20_000_000);
        assert!(m.task_born(1) && m.task_born(2));
        assert_eq!(&**m.task_cgroup(1), "/corral/latency");
        assert_eq!(m.task_allowed(1), &[1]);
        assert_eq!(m.task_nice(1), -5);
        assert_eq!(m.tasks[1].slice, Some(300_000));
        // Recorded apart from its parent: its own group and nice stay;
        // the cpuset is the parent's cgroup's, inherited all the same.
        assert_eq!(&**m.task_cgroup(2), "/elsewhere");
        assert_eq!(m.task_nice(2), 5);
        assert_eq!(m.tasks[2].slice, None);
        assert_eq!(m.task_allowed(2), &[1]);
        // Without a corral, each child is born where it was recorded.
        let mut m = fresh();
        m.run_until(20_000_000);
        assert_eq!(&**m.task_cgroup(1), "/work");
        assert_eq!(m.task_allowed(1), &[0, 1]);
    }

    #[test]
    fn a_task_on_every_cpu_never_wakes_on_one_unplugged() {
        // 4 CPUs, 2 of them unplugged: a sleeper allowed everywhere wakes
        // only on the online ones (the list the wake-up path takes).
        let w = parse(
            r#"{"tasks": {"p": {"instance": 6, "loop": -1, "run": 500, "sleep": 500}}}"#,
            "test",
        )
        .unwrap();
        let mut m = Machine::new(Platform::uniform(4), w, Fair::eevdf(4)).unwrap();
        m.run_until(50_000_000);
        m.hotplug(1, false);
        m.hotplug(3, false);
        let t0 = m.now();
        m.record();
        m.run_until(t0 + 50_000_000);
        assert!(!m.wake_marks.is_empty());
        assert!(
            m.wake_marks.iter().all(|&(_, _, cpu)| cpu == 0 || cpu == 2),
            "{:?}",
            m.wake_marks
                .iter()
                .filter(|w| w.2 % 2 == 1)
                .take(3)
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn sync_signals_then_waits_with_the_mutex_held() {
        // The browser-short.json pattern: one side syncs holding the mutex,
        // the other waits and signals back; both go round for ever.
        let s = run(
            r#"{"tasks": {
                "display": {"loop": -1, "run": 300, "lock": "m",
                    "sync": {"ref": "q", "mutex": "m"}, "unlock": "m"},
                "binder": {"loop": -1, "lock": "m",
                    "wait": {"ref": "q", "mutex": "m"}, "unlock": "m", "run": 200,
                    "lock": "m", "signal": "q", "unlock": "m"}
            }}"#,
            2,
            0.1,
        );
        assert!(s[0].wakeups > 100 && s[1].wakeups > 100, "{s:?}");
    }

    /// `Costs`: a 100 ms run alone pays one switch and its ticks'
    /// interruptions; two tasks that alternate on one CPU pay a switch at
    /// each turn; a task woken onto an idle CPU runs the wake-up's cost
    /// later. With no costs, none of it.
    #[test]
    fn the_scheduler_s_costs_are_paid_by_the_tasks_it_serves() {
        let once = r#"{"tasks": {"t": {"loop": 1, "run": 100000}}}"#;
        let run_with = |json: &str, costs: Costs| {
            let mut p = Platform::uniform(1);
            p.costs = costs;
            let mut m = Machine::new(p, parse(json, "test").unwrap(), Fair::cfs(1)).unwrap();
            m.run_until(1_000_000_000);
            m.stats()
        };
        let free = run_with(once, Costs::default());
        assert_eq!(free[0].exited_at, Some(100_000_000));
        let costly = run_with(
            once,
            Costs {
                context_switch: 5_000,
                tick: 10_000,
                ..Default::default()
            },
        );
        // 25 ticks (HZ 250) fall in its 100 ms, each 10 µs, and one switch.
        let end = costly[0].exited_at.unwrap();
        assert_eq!(end, 100_000_000 + 5_000 + 25 * 10_000, "{end}");
        assert_eq!(costly[0].cpu_ns, end);
        // A periodic task on an idle CPU: every wake-up by its timer 80 µs
        // late; the thread it resumes on the other idle CPU, 30 µs.
        let periodic = r#"{"tasks": {
            "p": {"loop": -1, "cpus": [0], "run": 1000, "resume": "q",
                "timer": {"ref": "t", "period": 10000}},
            "q": {"loop": -1, "cpus": [1], "suspend": "q", "run": 100}}}"#;
        let mut p = Platform::uniform(2);
        p.costs = Costs {
            wakeup: 30_000,
            timer_wakeup: 80_000,
            ..Default::default()
        };
        let mut m = Machine::new(p, parse(periodic, "test").unwrap(), Fair::cfs(2)).unwrap();
        m.run_until(1_000_000_000);
        let s = m.stats();
        let (p, q) = (&s[0].wakeup_latency, &s[1].wakeup_latency);
        assert!(p.count > 90 && q.count > 90, "{p:?} {q:?}");
        // (p's start is a wake-up by no timer: 30 µs. The histogram's
        // percentiles are to within a bucket.)
        assert_eq!((p.max, p.min), (80_000, 30_000), "{p:?}");
        assert!(p.percentile(50.0).abs_diff(80_000) < 800, "{p:?}");
        assert_eq!((q.max, q.min), (30_000, 30_000), "{q:?}");
        // On a CPU busy with a SCHED_IDLE hog, which every wake-up
        // preempts: each timed wake-up runs `timer_preempt` later (its
        // start, a wake-up onto a CPU the hog may not have yet, aside).
        // (Its timer counts from its start, 100 µs in: no expiry falls on
        // a tick.)
        let busy = r#"{"tasks": {
            "hog": {"loop": 1, "cpus": [0], "policy": "SCHED_IDLE", "run": 2000000},
            "p": {"loop": 100, "cpus": [0], "run": 100, "delay": 100,
                "timer": {"ref": "t", "period": 10000, "mode": "absolute"}}}}"#;
        let mut p = Platform::uniform(1);
        p.costs = Costs {
            timer_preempt: 20_000,
            ..Default::default()
        };
        let mut m = Machine::new(p, parse(busy, "test").unwrap(), Fair::eevdf(1)).unwrap();
        m.run_until(1_200_000_000);
        let l = &m.stats()[1].wakeup_latency;
        assert!(l.count >= 99, "{l:?}");
        assert!(l.percentile(50.0).abs_diff(20_000) < 200, "{l:?}");
        assert_eq!(l.max, 20_000, "{l:?}");
    }

    #[test]
    fn a_timer_wake_up_onto_an_idle_cpu_costs_one_of_the_spread_s_factors() {
        // A periodic thread alone on its CPU: each wake-up by its timer
        // costs 50 µs times 1, 1 or 4 (`timer_wakeup_cost`), drawn from
        // the thread's own stream: about a third at 200 µs; the same
        // draws again with the same seed, others with another; a thread
        // woken by another task pays `wakeup` whatever the spread.
        let json = r#"{"tasks": {
            "p": {"loop": -1, "cpus": [0], "run": 100, "resume": "q",
                "timer": {"ref": "t", "period": 10000}},
            "q": {"loop": -1, "cpus": [1], "suspend": "q", "run": 100}}}"#;
        let run = |spread: &[f64], seed: u64| {
            let mut p = Platform::uniform(2);
            p.costs = Costs {
                wakeup: 30_000,
                timer_wakeup: 50_000,
                ..Default::default()
            };
            p.timer_wakeup_spread = spread.to_vec();
            p.seed = seed;
            let mut m = Machine::new(p, parse(json, "test").unwrap(), Fair::eevdf(2)).unwrap();
            m.record();
            m.run_until(2_000_000_000);
            // Each of p's wake-ups' latency, in order (the start aside).
            let lat: Vec<Ns> = m
                .wake_marks
                .iter()
                .filter(|w| w.1 == 0)
                .skip(1)
                .filter_map(|&(at, t, _)| {
                    m.slices
                        .iter()
                        .find(|s| s.task == t && s.start >= at)
                        .map(|s| s.start - at)
                })
                .collect();
            (lat, m.stats()[1].wakeup_latency.clone())
        };
        let (exact, _) = run(&[], 0);
        assert!(
            exact.len() > 190 && exact.iter().all(|&l| l == 50_000),
            "{exact:?}"
        );
        let (drawn, q) = run(&[1.0, 1.0, 4.0], 0);
        let slow = drawn.iter().filter(|&&l| l == 200_000).count();
        assert!(
            drawn.iter().all(|&l| l == 50_000 || l == 200_000),
            "{drawn:?}"
        );
        assert!((50..85).contains(&slow), "{slow} of {}", drawn.len());
        assert_eq!((q.min, q.max), (30_000, 30_000), "{q:?}");
        assert_eq!(run(&[1.0, 1.0, 4.0], 0).0, drawn);
        assert_ne!(run(&[1.0, 1.0, 4.0], 1).0, drawn);
    }

    /// A workload run for 1 s on `cpus` EEVDF CPUs with `costs`.
    fn costed(cpus: usize, json: &str, costs: Costs) -> Vec<TaskStats> {
        let mut p = Platform::uniform(cpus);
        p.costs = costs;
        let mut m = Machine::new(p, parse(json, "test").unwrap(), Fair::eevdf(cpus)).unwrap();
        m.run_until(1_000_000_000);
        m.stats()
    }

    /// A task on CPU 0 that wakes one on CPU `wakee_cpu` every 10 ms;
    /// `extra`: more keys of the waker's.
    fn waker_json(wakee_cpu: u32, extra: &str) -> String {
        format!(
            r#"{{"tasks": {{
            "m": {{"loop": 50, "cpus": [0], {extra}"run": 100, "resume": "q",
                "timer": {{"ref": "t", "period": 10000}}}},
            "w": {{"loop": -1, "cpus": [{wakee_cpu}], "policy": "SCHED_IDLE",
                "suspend": "q", "run": 100}}}}}}"#
        )
    }

    /// A task moved between CPUs 0 and 1 at each of its 20 runs of `run`
    /// µs (19 moves); `extra`: more keys of its.
    fn mover_json(run: u32, extra: &str) -> String {
        format!(
            r#"{{"tasks": {{"t": {{"loop": 10, {extra}"phases": {{
            "a": {{"cpus": [0], "run": {run}, "sleep": 1000}},
            "b": {{"cpus": [1], "run": {run}, "sleep": 1000}}}}}}}}}}"#
        )
    }

    /// `Costs::waker` / `waker_local`: a task that wakes another pays,
    /// as CPU time of its own, the wake-up's cost: `waker` onto another
    /// CPU, `waker_local` onto its own; the woken task pays none of it.
    /// rt-app's `resume` holds the mutex of the same name while it wakes
    /// (`resume_locked`): woken onto the other, idle CPU, w runs at once,
    /// finds the mutex held while m pays for the wake-up, and is woken a
    /// second time by the unlock (two wake-ups a resume, both paid by m);
    /// a SCHED_IDLE w on m's own CPU runs only once m sleeps, the mutex
    /// free by then (one).
    #[test]
    fn a_waker_pays_for_the_wake_ups_it_makes() {
        let costs = Costs {
            waker: 20_000,
            waker_local: 3_000,
            ..Default::default()
        };
        for (cpu, each, per_resume) in [(1, 20_000, 2), (0, 3_000, 1)] {
            let s = costed(2, &waker_json(cpu, ""), costs);
            // w's wake-ups by m (its start is by none), and its runs (the
            // last may fall past the end).
            let woken = s[1].wakeups - 1;
            let runs = s[1].cpu_ns / 100_000;
            assert!(runs >= 49, "{:?}", s[1]);
            assert_eq!(s[1].cpu_ns, runs * 100_000, "wakee on CPU {cpu}");
            assert_eq!(woken, runs * per_resume, "wakee on CPU {cpu}");
            assert_eq!(
                s[0].cpu_ns,
                50 * 100_000 + woken * each,
                "wakee on CPU {cpu}"
            );
        }
        let free = costed(2, &waker_json(1, ""), Costs::default());
        assert_eq!(free[0].cpu_ns, 50 * 100_000);
    }

    /// `pthread_cond_wait` lets the mutex go before it sleeps
    /// (`cond_sleep`). d (SCHED_IDLE, so any wake-up preempts it) and o
    /// share CPU 0 and a condition with its mutex, as mp3-short's decoder
    /// and OMXCall do. d's signal wakes o, which preempts d while d pays
    /// for the wake-up and blocks on the mutex d holds; d's wait lets the
    /// mutex go, waking o, which preempts d again before d sleeps; o's
    /// signal then finds d awake (no wake-up), and d goes on without
    /// sleeping: two preemptions and no wake-up per cycle. With the
    /// wake-ups free, d sleeps at once in its wait and o's signal wakes it.
    #[test]
    fn a_cond_waiter_preempted_before_it_sleeps_is_signalled_awake() {
        let json = r#"{"tasks": {
            "d": {"loop": 20, "cpus": [0], "policy": "SCHED_IDLE", "run": 100,
                "lock": "m", "signal": "q", "wait": {"ref": "q", "mutex": "m"},
                "unlock": "m"},
            "o": {"loop": -1, "cpus": [0], "lock": "m",
                "wait": {"ref": "q", "mutex": "m"}, "unlock": "m", "run": 50,
                "lock": "m", "signal": "q", "unlock": "m"}}}"#;
        let costs = Costs {
            waker_local: 3_000,
            ..Default::default()
        };
        let s = costed(1, json, costs);
        assert!(s[0].exited_at.is_some(), "{:?}", s[0]);
        // Its start only.
        assert_eq!(s[0].wakeups, 1, "{:?}", s[0]);
        assert_eq!(s[0].preemptions, 40, "{:?}", s[0]);
        // o: woken by d's signal and by d's unlock, each cycle.
        assert!(s[1].wakeups >= 40, "{:?}", s[1]);
        let free = costed(1, json, Costs::default());
        assert_eq!(free[0].wakeups, 1 + 20, "{:?}", free[0]);
    }

    /// `Costs::migration`: a move's refill is at most the CPU time the
    /// task ran on the CPU it left since it came there. Moved at each of
    /// its runs, a task running 50 µs at a time refills what 50, 100 and
    /// 150 µs there brought in (each stay includes the refill paid on
    /// arriving), then the whole 200 µs at each of its other 16 moves; one
    /// running 1 ms at a time pays 200 µs a move.
    #[test]
    fn a_move_s_refill_is_at_most_what_the_task_ran_where_it_left() {
        let costs = Costs {
            migration: 200_000,
            ..Default::default()
        };
        let cpu_ns = |run: u32, costs: Costs| {
            let s = costed(2, &mover_json(run, ""), costs);
            assert_eq!(s[0].migrations, 19, "{:?}", s[0]);
            s[0].cpu_ns
        };
        assert_eq!(cpu_ns(50, Costs::default()), 20 * 50_000);
        let refills = 50_000 + 100_000 + 150_000 + 16 * 200_000;
        assert_eq!(cpu_ns(50, costs), 20 * 50_000 + refills);
        assert_eq!(cpu_ns(1000, costs), 20 * 1_000_000 + 19 * 200_000);
    }

    /// A recording's thread (`corral_moves`): its recorded runs hold its
    /// ticks, the wake-ups it made and the refills of its live moves, so
    /// the replay charges only the moves beyond those. The mover above,
    /// recorded with 10 moves live, pays the last 9 of its 19; a
    /// recorded 100 ms run ends at 100 ms, ticks and all, and a recorded
    /// waker pays nothing for its wake-ups.
    #[test]
    fn a_recorded_thread_pays_only_the_moves_beyond_its_live_ones() {
        let s = costed(
            2,
            &mover_json(1000, r#""corral_moves": 10, "#),
            Costs {
                migration: 200_000,
                ..Default::default()
            },
        );
        assert_eq!(s[0].migrations, 19, "{:?}", s[0]);
        assert_eq!(s[0].cpu_ns, 20 * 1_000_000 + 9 * 200_000);
        let ticks = r#"{"tasks": {"t": {"loop": 1, "corral_moves": 0, "run": 100000}}}"#;
        let s = costed(
            1,
            ticks,
            Costs {
                tick: 10_000,
                ..Default::default()
            },
        );
        assert_eq!(s[0].exited_at, Some(100_000_000));
        let s = costed(
            2,
            &waker_json(1, r#""corral_moves": 0, "#),
            Costs {
                waker: 20_000,
                waker_local: 3_000,
                ..Default::default()
            },
        );
        assert!(s[1].wakeups >= 50, "{:?}", s[1]);
        assert_eq!(s[0].cpu_ns, 50 * 100_000);
    }

    /// rt-app's `barrier` is a mutex and a condition (`Machine::arrive`):
    /// the last to arrive broadcasts holding the mutex and lets it go only
    /// after paying for its wake-ups. A woken thread that runs meanwhile
    /// (here on the other, idle CPU) blocks on the mutex and is woken
    /// again when it is let go: two wake-ups per barrier, and its run
    /// starts the waker's cost later. Free, one wake-up each, at once.
    #[test]
    fn a_barrier_wakes_its_waiters_through_its_mutex() {
        let json = r#"{"tasks": {
            "m": {"loop": 100, "cpus": [0], "barrier": "b",
                "timer": {"ref": "t", "period": 10000}},
            "w": {"loop": -1, "cpus": [1], "barrier": "b", "run": 1000}}}"#;
        let run_with = |costs: Costs| {
            let mut p = Platform::uniform(2);
            p.costs = costs;
            let mut m = Machine::new(p, parse(json, "test").unwrap(), Fair::eevdf(2)).unwrap();
            m.record();
            m.run_until(1_000_000_000);
            let starts: Vec<Ns> = m
                .slices()
                .iter()
                .filter(|r| r.task == 1 && r.start > 0 && r.end - r.start >= 1_000_000)
                .map(|r| r.start)
                .collect();
            (m.stats(), starts)
        };
        let (free, free_starts) = run_with(Costs::default());
        let (m, w) = (&free[0], &free[1]);
        assert!(w.wakeups >= 100 && w.wakeups <= 102, "{w:?}");
        assert_eq!(m.cpu_ns, 0, "{m:?}");
        let (costly, starts) = run_with(Costs {
            waker: 20_000,
            ..Default::default()
        });
        let (m, w) = (&costly[0], &costly[1]);
        assert!(w.wakeups >= 199 && w.wakeups <= 202, "{w:?}");
        // m pays for both of w's wake-ups: the broadcast and the mutex's
        // wake-up (w's start is by none).
        assert_eq!(m.cpu_ns, (w.wakeups - 1) * 20_000, "{m:?}");
        assert!(
            starts.len() >= 98 && starts.len() == free_starts.len(),
            "{starts:?}"
        );
        assert!(
            starts
                .iter()
                .zip(&free_starts)
                .all(|(c, f)| c - f == 20_000),
            "{starts:?} {free_starts:?}"
        );
    }

    /// rt-app's barrier counts its waiters back in only once they hold
    /// its mutex again (`waiting += 1` after `pthread_cond_wait`): x,
    /// woken onto a CPU a FIFO hog holds, has not, so y finds the count
    /// at 0 at each of its arrivals and runs its three loops through,
    /// and x, back at last, waits for ever. A barrier that let y through
    /// once per x's arrival would hold y at its second arrival until x
    /// arrives, and x would run all three loops (30 µs).
    #[test]
    fn a_barrier_lets_through_while_the_woken_have_not_run() {
        let json = r#"{"tasks": {
            "x": {"loop": 3, "cpus": [1], "barrier": "bar", "run": 10},
            "y": {"loop": 3, "cpus": [0], "delay": 2000, "barrier": "bar", "run": 10},
            "h": {"loop": 1, "cpus": [1], "delay": 1000, "policy": "SCHED_FIFO",
                "priority": 10, "run": 5000}
        }}"#;
        let s = run_with_rt(json, 2);
        assert_eq!(s[1].cpu_ns, 30_000, "{:?}", s[1]);
        assert_eq!(s[0].cpu_ns, 10_000, "{:?}", s[0]);
        assert_eq!(s[1].switches, 1, "y never waited: {:?}", s[1]);
    }

    /// glibc's mutex hands nothing over. b, on CPU 1, waits for the
    /// mutex a holds; a FIFO hog then takes CPU 1, so b, woken at a's
    /// unlock, cannot run: a takes the mutex again at its next lock and
    /// runs its five loops through. A mutex handed to b at a's unlock
    /// would stop a at its second lock until the hog is done (5 ms).
    #[test]
    fn an_unlocked_mutex_goes_to_whoever_takes_it_first() {
        let json = r#"{"tasks": {
            "a": {"loop": 5, "cpus": [0], "lock": "m", "run": 100, "unlock": "m"},
            "b": {"loop": 1, "cpus": [1], "delay": 50, "lock": "m", "run": 100, "unlock": "m"},
            "h": {"loop": 1, "cpus": [1], "delay": 60, "policy": "SCHED_FIFO",
                "priority": 10, "run": 5000}
        }}"#;
        let s = run_with_rt(json, 2);
        assert_eq!(s[0].exited_at, Some(500_000), "{:?}", s[0]);
        assert_eq!(s[0].switches, 1, "a never waited: {:?}", s[0]);
        assert_eq!(s[1].cpu_ns, 100_000, "{:?}", s[1]);
    }

    /// glibc's unlock wakes a waiter only when the mutex was contended.
    /// b and c wait for the mutex a holds, on CPU 1, where a FIFO hog then
    /// runs 5 ms: a's first unlock wakes b (who cannot run yet); a takes
    /// the mutex again by the fast path, so its later unlocks wake
    /// nobody, and c is woken only by b's unlock once the hog is done,
    /// and runs at once. An unlock that woke a waiter whenever one was
    /// queued would wake c at a's second unlock, 5 ms before it runs.
    #[test]
    fn an_uncontended_unlock_wakes_nobody() {
        let json = r#"{"tasks": {
            "a": {"loop": 5, "cpus": [0], "lock": "m", "run": 100, "unlock": "m"},
            "b": {"loop": 1, "cpus": [1], "delay": 20, "lock": "m", "run": 100, "unlock": "m"},
            "c": {"loop": 1, "cpus": [1], "delay": 30, "lock": "m", "run": 100, "unlock": "m"},
            "h": {"loop": 1, "cpus": [1], "delay": 40, "policy": "SCHED_FIFO",
                "priority": 10, "run": 5000}
        }}"#;
        let s = run_with_rt(json, 2);
        assert_eq!(s[0].exited_at, Some(500_000), "{:?}", s[0]);
        assert!(s[1].wakeup_latency.max > 4_000_000, "{:?}", s[1]);
        assert!(s[2].wakeup_latency.max < 1_000_000, "{:?}", s[2]);
        assert_eq!(s[2].cpu_ns, 100_000, "{:?}", s[2]);
    }

    /// `run_length`: with a spread, each `run` takes its length times one
    /// of the factors, as the platform's seed draws them; without one,
    /// exactly its length; a recorded thread's runs as they are.
    #[test]
    fn a_run_takes_its_length_times_a_factor_of_the_spread() {
        let run = |spread: &[f64], seed: u64, recorded: bool, other: bool| -> Vec<Ns> {
            let mut p = Platform::uniform(2);
            p.run_spread = vec![(100_000, spread.to_vec())];
            p.seed = seed;
            let moves = if recorded {
                r#", "corral_moves": 0"#
            } else {
                ""
            };
            // Another thread on the other CPU, drawing too.
            let other = if other {
                r#", "u": {"loop": 40, "cpus": [1], "run": 700, "sleep": 300}"#
            } else {
                ""
            };
            let json = format!(
                r#"{{"tasks": {{"t": {{"loop": 40, "cpus": [0], "run": 1000, "sleep": 1000{moves}}}{other}}}}}"#
            );
            let mut m = Machine::new(p, parse(&json, "test").unwrap(), Fair::eevdf(2)).unwrap();
            m.record();
            m.run_until(200_000_000);
            let l: Vec<Ns> = m
                .slices()
                .iter()
                .filter(|s| s.task == 0)
                .map(|s| s.end - s.start)
                .collect();
            assert_eq!(l.len(), 40, "{l:?}");
            l
        };
        let lengths =
            |spread: &[f64], seed: u64, recorded: bool| run(spread, seed, recorded, false);
        assert!(lengths(&[], 0, false).iter().all(|&l| l == 1_000_000));
        let a = lengths(&[0.9, 1.1], 0, false);
        assert!(a.iter().all(|&l| l == 900_000 || l == 1_100_000), "{a:?}");
        let short = a.iter().filter(|&&l| l == 900_000).count();
        assert!((10..=30).contains(&short), "each factor as likely: {a:?}");
        assert_eq!(
            lengths(&[0.9, 1.1], 0, false),
            a,
            "the same seed, the same draws"
        );
        assert_ne!(lengths(&[0.9, 1.1], 1, false), a, "another seed, others");
        assert!(lengths(&[0.9, 1.1], 0, true)
            .iter()
            .all(|&l| l == 1_000_000));
        assert_eq!(
            run(&[0.9, 1.1], 0, false, true),
            a,
            "a thread's draws are its own, whatever else draws"
        );
    }

    /// `spread_factor`: a spread measured at one length holds for every
    /// length; measured at several, a run between two lengths takes the
    /// same quantile between theirs, in proportion to the log of its
    /// length, and one outside them the nearest length's.
    #[test]
    fn a_run_between_two_measured_lengths_varies_between_their_spreads() {
        let one = [(140_000, vec![0.9, 1.0, 1.2])];
        for ns in [1_000, 140_000, 50_000_000] {
            assert_eq!(spread_factor(&one, ns, 2), 1.2);
        }
        let two = [
            (100_000, vec![0.9, 1.0, 1.2]),
            (10_000_000, vec![0.99, 1.0, 1.02]),
        ];
        assert_eq!(spread_factor(&two, 50_000, 0), 0.9);
        assert_eq!(spread_factor(&two, 100_000, 2), 1.2);
        // Half way in log(length): half way between.
        let f = spread_factor(&two, 1_000_000, 2);
        assert!((f - (1.2 + (1.02 - 1.2) * 0.5)).abs() < 1e-9, "{f}");
        assert_eq!(spread_factor(&two, 1_000_000, 1), 1.0);
        assert_eq!(spread_factor(&two, 10_000_000, 0), 0.99);
        assert_eq!(spread_factor(&two, 90_000_000, 2), 1.02);
        // Three lengths: a run between the second and third takes theirs.
        let three = [
            (100_000, vec![0.9, 1.0, 1.2]),
            (1_000_000, vec![0.95, 1.0, 1.1]),
            (10_000_000, vec![0.99, 1.0, 1.02]),
        ];
        let f = spread_factor(&three, 3_162_278, 2);
        assert!((f - (1.1 + (1.02 - 1.1) * 0.5)).abs() < 1e-6, "{f}");
        assert_eq!(spread_factor(&three, 1_000_000, 0), 0.95);
    }

    /// `hrtimer_sleep`: a timer whose expiries fall 20 µs before ticks
    /// (the first event is the timer, so its base is the start, 0; its
    /// start is a wake-up too, and left out). A
    /// normal task's sleep ends its 50 µs slack late on an idle CPU, early
    /// at the tick where a hog keeps the tick running, and an RT task's
    /// on time.
    #[test]
    fn a_timed_sleep_ends_at_its_slack_or_at_a_tick_within_it() {
        let wakes = |json: &str| {
            let mut p = Platform::uniform(1);
            p.tick_phase = 20_000;
            let k = crate::sched::classes::Classes::new(
                1,
                Fair::eevdf(1),
                crate::sched::rt::RtBandwidth::fair_server(),
                250,
            );
            let mut m = Machine::new(p, parse(json, "test").unwrap(), k).unwrap();
            m.record();
            m.run_until(100_000_000);
            let at: Vec<Ns> = m
                .wake_marks
                .iter()
                .filter(|w| w.1 == 0 && w.0 > 0)
                .map(|w| w.0 % 4_000_000)
                .collect();
            assert!(at.len() > 20, "{at:?}");
            at
        };
        let p = r#""p": {"loop": -1, "timer": {"ref": "t", "period": 4000}, "run": 100}"#;
        let fifo = r#""p": {"loop": -1, "policy": "SCHED_FIFO", "priority": 10,
            "timer": {"ref": "t", "period": 4000}, "run": 100}"#;
        // (At nice 19 its deadlines lie far out: the sleeper preempts it
        // at each wake-up and is asleep again at its next expiry.)
        let hog = r#""q": {"loop": -1, "priority": 19, "run": 1000000}"#;
        let idle = wakes(&format!(r#"{{"tasks": {{{p}}}}}"#));
        assert!(idle.iter().all(|&w| w == TIMER_SLACK_NS), "{idle:?}");
        let busy = wakes(&format!(r#"{{"tasks": {{{p}, {hog}}}}}"#));
        assert!(busy.iter().all(|&w| w == 20_000), "{busy:?}");
        let rt = wakes(&format!(r#"{{"tasks": {{{fifo}, {hog}}}}}"#));
        assert!(rt.iter().all(|&w| w == 0), "{rt:?}");
    }

    /// rt-app's timers count from the thread's `t_first` (the use case's
    /// start plus its `delay`), not from their first use: a 2 ms run then
    /// a 10 ms timer wakes at 10, 20, … ms, not 12, 22, …; with a 300 µs
    /// delay, 300 µs later.
    #[test]
    fn a_timer_counts_from_the_thread_s_start_and_delay() {
        let wakes = |extra: &str| {
            let json = format!(
                r#"{{"tasks": {{"p": {{"loop": 5{extra}, "run": 2000,
                    "timer": {{"ref": "unique", "period": 10000}}}}}}}}"#
            );
            let mut m = Machine::new(
                Platform::uniform(1),
                parse(&json, "test").unwrap(),
                Fair::eevdf(1),
            )
            .unwrap();
            m.record();
            m.run_until(100_000_000);
            m.wake_marks
                .iter()
                .filter(|w| w.1 == 0)
                .map(|w| w.0)
                .collect::<Vec<Ns>>()
        };
        let at = |delay: Ns| -> Vec<Ns> {
            // The start, then each expiry (its slack late, on an idle CPU).
            let mut v = vec![delay];
            v.extend((1..=5).map(|k| k * 10_000_000 + delay + TIMER_SLACK_NS));
            v
        };
        assert_eq!(wakes(""), at(0));
        assert_eq!(wakes(r#", "delay": 300"#), at(300_000));
    }

    #[test]
    fn periodic_task_uses_its_share() {
        // 1 ms every 10 ms on an idle CPU: 10 % and no latency.
        let s = run(
            r#"{"tasks": {"p": {"loop": -1, "run": 1000, "timer": {"ref": "t", "period": 10000}}}}"#,
            1,
            1.0,
        );
        let share = s[0].cpu_ns as f64 / 1e9;
        assert!((share - 0.1).abs() < 0.002, "{share}");
        assert_eq!(s[0].wakeup_latency.max, 0);
        assert!(s[0].wakeup_latency.count > 90);
    }

    #[test]
    fn program_ends_and_sync_primitives_do_not_deadlock() {
        let s = run(
            r#"{"tasks": {
                "a": {"loop": 3, "lock": "m", "run": 100, "signal": "c", "unlock": "m", "sleep": 1000},
                "b": {"loop": 3, "lock": "m", "wait": {"ref": "c", "mutex": "m"}, "unlock": "m", "run": 50},
                "x": {"loop": 1, "barrier": "bar", "run": 10},
                "y": {"loop": 1, "barrier": "bar", "run": 10}
            }}"#,
            2,
            1.0,
        );
        assert_eq!(s[2].cpu_ns, 10_000);
        assert_eq!(s[3].cpu_ns, 10_000);
        assert_eq!(s[0].cpu_ns, 300_000);
    }
}
