//! A live run's scheduler events ([`super::ftrace`]) turned into a
//! workload the simulator replays: per thread, its CPU bursts and its
//! sleeps in order, who woke it, and when it was born and exited.
//!
//! The rules, each from what the kernel's events mean:
//!
//! - **A burst** is the CPU time a thread used between two blocks: the
//!   sum of its stretches on a CPU (`sched_switch` in → out), preemptions
//!   (`prev_state` R or R+) included, since the simulated scheduler decides
//!   those again. It becomes a `run` (work at capacity 1024: XXX the live
//!   CPU's capacity and frequency are not divided out). Microseconds are
//!   rounded on the running total, so no time is lost to rounding.
//! - **A block** (any other `prev_state`) ends at the thread's
//!   `sched_waking`. When the waker was a recorded thread running in
//!   process context, the waker's stream gets `corral_wake` at that point
//!   of its own CPU time (its burst is split there) and the sleeper's gets
//!   `corral_block`: in the replay it sleeps until the waker gets there,
//!   however late. Otherwise (a timer, an interrupt, a thread not
//!   recorded) it sleeps as long as it slept live (`sleep`).
//! - **A fork** is a wake-up of the child by its parent at that point of
//!   the parent's CPU time; the child's stream starts with
//!   `corral_block`. An exit ends the stream (the last burst runs up to
//!   the final `sched_switch`, so a child's exit still wakes its parent).
//! - **Priorities** from the events' `prio`: below 100 is SCHED_FIFO at
//!   99 − prio, otherwise SCHED_OTHER at nice prio − 120 (XXX: RR, BATCH
//!   and IDLE are not told apart in events; a thread's last prio is kept).
//!
//! The live figures the replay is checked against come from the same
//! events: CPU time, wake-ups, wake-up latency (`sched_waking` → on a
//! CPU), migrations.

use super::ftrace::{self, Kind, Task, TraceEvent};
use crate::engine::FastMap;
use crate::out::hist::Histogram;
use std::collections::HashSet;
use std::fmt::Write as _;

/// One step of a recorded thread's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// CPU work, µs.
    Run(u64),
    /// A timed sleep of `us` µs (woken by a timer, an interrupt, or a
    /// thread not recorded), ending `end_us` after the recording's start;
    /// `absolute` for a periodic thread's ([`periodic`]), replayed to end
    /// at that instant.
    Sleep {
        us: u64,
        end_us: u64,
        absolute: bool,
    },
    /// Wakes the thread with this index (in [`Recording::threads`]).
    Wake(usize),
    /// Waits to be woken by recorded thread `by` (an index); it slept
    /// `us` live.
    Block { us: u64, by: usize },
}

/// One recorded thread: its stream and its live figures.
#[derive(Debug, Clone)]
pub struct Thread {
    pub tid: u32,
    pub comm: String,
    /// The kernel's prio, last seen (120 if never seen).
    pub prio: i32,
    pub steps: Vec<Step>,
    pub cpu_ns: u64,
    /// Wake-ups that ended a block (a fork's first wake-up included).
    pub wakeups: u64,
    /// `sched_waking` → on a CPU, ns.
    pub latency: Histogram,
    pub migrations: u64,
    /// When it was forked, ns after the recording's start.
    pub born_ns: Option<u64>,
    /// When it exited, ns after the recording's start.
    pub exited_ns: Option<u64>,
    /// The CPUs it may use when they are not all of them (events do not
    /// say: the recorder reads it from `/proc`, [`Directive::Cpus`]).
    pub cpus: Option<Vec<u32>>,
    state: State,
    /// CPU time since the last `run` written, ns.
    pending_ns: u64,
    /// CPU time written as `run` so far, µs (rounding on the total).
    written_us: u64,
    exiting: bool,
    /// Seen on a CPU (as the current task or in a switch): only then is
    /// CPU time from the start credited to it.
    seen_on_cpu: bool,
    /// Earlier threads with its TID in this recording (a reused TID).
    reuse: u32,
    /// Its period, µs, when its timed sleeps end on a grid ([`periodic`]).
    pub period_us: Option<u64>,
    /// Its cgroup of the cpu controller when not the root
    /// ([`Directive::Cgroup`]): the replay's `taskgroup`.
    pub cgroup: Option<String>,
    /// Not in the recorded scope: what else ran on the machine
    /// ([`Background`]), replayed to its live instants and left alone by
    /// the simulated daemon.
    pub background: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not seen yet: running, runnable or blocked since the start.
    Unknown,
    Running {
        since: u64,
    },
    Runnable,
    Blocked {
        since: u64,
    },
    /// Woken at `at` (`sched_waking`; `sched_wakeup` at `queued`), not
    /// yet on a CPU.
    Woken {
        at: u64,
        queued: Option<u64>,
    },
    Dead,
}

impl Thread {
    fn new(tid: u32, comm: &str) -> Thread {
        Thread {
            tid,
            comm: comm.to_string(),
            prio: 120,
            steps: Vec::new(),
            cpu_ns: 0,
            wakeups: 0,
            latency: Histogram::default(),
            migrations: 0,
            born_ns: None,
            exited_ns: None,
            cpus: None,
            state: State::Unknown,
            pending_ns: 0,
            written_us: 0,
            exiting: false,
            seen_on_cpu: false,
            reuse: 0,
            period_us: None,
            cgroup: None,
            background: false,
        }
    }

    /// The task's name in the workload: `comm-tid`, and `comm-tid.N` for
    /// the Nth later thread of a reused TID.
    pub fn name(&self) -> String {
        let comm = plain(&self.comm);
        match self.reuse {
            0 => format!("{comm}-{}", self.tid),
            n => format!("{comm}-{}.{n}", self.tid),
        }
    }

    /// A background thread from an outsider's stretches: each starts at
    /// its live instant (`corral_until`) and runs as long; none with less
    /// than `min_ns` of CPU in all ([`Converter::keep_outsiders_from`]).
    /// Held to its CPU when it was seen on only one.
    fn outsider(pid: u32, o: Outsider, t0: u64, min_ns: u64) -> Option<Thread> {
        // In order, none overlapping the one before (out-of-order text).
        let mut runs = o.runs;
        runs.sort_unstable();
        let mut end = 0;
        for r in &mut runs {
            let start = r.0.max(end);
            r.1 = (r.0 + r.1).saturating_sub(start);
            r.0 = start;
            end = r.0 + r.1;
        }
        let total: u64 = runs.iter().map(|r| r.1).sum();
        if total == 0 || total < min_ns {
            return None;
        }
        let mut th = Thread::new(pid, &o.comm);
        th.prio = o.prio;
        th.background = true;
        th.seen_on_cpu = true;
        th.cpu_ns = total;
        let (mut at, mut sum_ns) = (t0, 0);
        for (start, len) in runs {
            th.sleep(at, start, t0);
            if let Some(Step::Sleep { absolute, .. }) = th.steps.last_mut() {
                *absolute = true;
            }
            // µs rounded on the running total, as for a recorded thread.
            sum_ns += len;
            let us = sum_ns / 1000 - th.written_us;
            if us > 0 {
                th.steps.push(Step::Run(us));
                th.written_us += us;
            }
            at = start + len;
        }
        if o.cpus.count_ones() == 1 {
            th.cpus = Some(vec![o.cpus.trailing_zeros()]);
        }
        th.cgroup = o.cgroup;
        Some(th)
    }

    /// Adds the CPU time since it went on a CPU (or since the start, for
    /// a thread first seen leaving one) to what is not yet written.
    fn account(&mut self, now: u64, t0: u64) {
        match self.state {
            State::Running { since } => self.pending_ns += now.saturating_sub(since),
            State::Unknown => self.pending_ns += now.saturating_sub(t0),
            _ => return,
        }
        self.state = State::Running { since: now };
    }

    /// A timed sleep from `since` to `until` (none under a µs).
    fn sleep(&mut self, since: u64, until: u64, t0: u64) {
        let us = until.saturating_sub(since) / 1000;
        if us > 0 {
            self.steps.push(Step::Sleep {
                us,
                end_us: until.saturating_sub(t0) / 1000,
                absolute: false,
            });
        }
    }

    /// Writes the CPU time used so far as a `run` (merged into a `run`
    /// just before it).
    fn flush(&mut self, now: u64, t0: u64) {
        self.account(now, t0);
        self.cpu_ns += self.pending_ns;
        self.pending_ns = 0;
        let us = self.cpu_ns / 1000 - self.written_us;
        if us > 0 {
            self.written_us += us;
            match self.steps.last_mut() {
                Some(Step::Run(r)) => *r += us,
                _ => self.steps.push(Step::Run(us)),
            }
        }
    }
}

/// Which threads a recording keeps.
#[derive(Debug, Clone)]
pub enum Scope {
    /// Every task but the idle ones (a trace someone else made).
    All,
    /// These threads and every thread they fork.
    Tree(HashSet<u32>),
}

/// Turns events into a [`Recording`], one at a time (bounded by the
/// recording's own size, not the trace's).
#[derive(Debug)]
pub struct Converter {
    scope: Scope,
    threads: Vec<Thread>,
    /// The index of each live TID's thread.
    by_tid: FastMap<u32, usize>,
    t0: Option<u64>,
    last: u64,
    lost: u64,
    /// Events that did not fit the thread's state (a lost event's trace).
    odd: u64,
    /// Switches onto a CPU the trace did not show, inferred.
    inferred: u64,
    /// The highest CPU an event came from.
    max_cpu: u32,
    /// The CPUs online when recorded live.
    online: usize,
    /// Tasks outside the scope seen on a CPU, in a live (PID-filtered)
    /// recording.
    background: Option<Background>,
    /// The replay's time 0 on CLOCK_MONOTONIC, when corral's recorder
    /// (whose trace clock is `mono`) said when it started.
    start_mono: Option<u64>,
    /// How the recorded kernel places wake-ups, when the recorder knew
    /// ([`Directive::Packing`]).
    packing: Option<Option<u32>>,
    /// The least CPU time an outsider must have used to be replayed.
    min_outsider_ns: u64,
}

/// An outsider of a recording is replayed when it used at least this
/// much CPU ([`Converter::keep_outsiders_from`]): a user's recording of
/// minutes keeps the threads that compete, not every kernel thread that
/// woke once.
pub const MIN_OUTSIDER_NS: u64 = 1_000_000;

/// What else ran on the CPUs during a live recording: tasks outside the
/// scope (kernel threads, other programs, the recorder itself) compete
/// with the workload, and their long bursts are much of its wake-up
/// latency's tail (a kernel thread running 3–8 ms at a time here). The
/// PID filter shows a switch when either side is in scope, so an
/// outsider's stretch on a CPU is known when both its switch in and its
/// switch out were shown; others are not counted. XXX: a stretch that
/// starts or ends at a switch between two outsiders, or to or from idle,
/// is missed; and one whose hidden switch out (to idle or another
/// outsider) is followed by a hidden switch back in before a shown
/// switch out is counted whole, the time off the CPU included.
#[derive(Debug, Default)]
struct Background {
    tasks: FastMap<u32, Outsider>,
    /// Per CPU, the outsider put on it by the last switch shown.
    on: Vec<Option<(u32, u64)>>,
}

#[derive(Debug)]
struct Outsider {
    comm: String,
    prio: i32,
    /// (start, length) of each stretch on a CPU, ns on the trace clock.
    runs: Vec<(u64, u64)>,
    /// The CPUs it was seen on (a bit each, the first 64).
    cpus: u64,
    /// Its task group, when the recorder read it ([`Directive::Cgroup`]):
    /// a thread outside the scope may share one with the workload (the
    /// recorder started from the same shell shares its autogroup).
    cgroup: Option<String>,
}

impl Background {
    /// A switch on `cpu` at `ts` from `prev` to `next`, either an
    /// outsider (`out_*`: whether it is one).
    fn switch(
        &mut self,
        cpu: u32,
        ts: u64,
        prev: &Task,
        out_prev: bool,
        next: &Task,
        out_next: bool,
    ) {
        let c = cpu as usize;
        if self.on.len() <= c {
            self.on.resize(c + 1, None);
        }
        if let Some((pid, since)) = self.on[c].take() {
            if out_prev && pid == prev.pid {
                let o = self.tasks.get_mut(&pid).expect("seen going on");
                o.runs.push((since, ts.saturating_sub(since)));
                if cpu < 64 {
                    o.cpus |= 1 << cpu;
                }
            }
        }
        if out_next {
            let o = self.tasks.entry(next.pid).or_insert_with(|| Outsider {
                comm: next.comm.clone(),
                prio: 120,
                runs: Vec::new(),
                cpus: 0,
                cgroup: None,
            });
            if let Some(p) = next.prio {
                o.prio = p;
            }
            // On one CPU at a time: a stretch elsewhere whose end was not
            // shown is not known.
            for slot in self.on.iter_mut() {
                if slot.is_some_and(|(pid, _)| pid == next.pid) {
                    *slot = None;
                }
            }
            self.on[c] = Some((next.pid, ts));
        }
    }
}

/// A converted recording.
#[derive(Debug, Clone)]
pub struct Recording {
    pub threads: Vec<Thread>,
    /// From the start to the last event, ns.
    pub span_ns: u64,
    /// Events the kernel dropped (`[LOST n EVENTS]`).
    pub lost_events: u64,
    /// Events that did not fit a thread's state.
    pub odd_events: u64,
    /// Switches onto a CPU the trace lacked, inferred from the thread
    /// acting on a CPU (their wake-up latency is not known).
    pub inferred_switches: u64,
    /// The machine's CPUs: the online ones when recorded live, else one
    /// more than the highest CPU in the trace. The replay's default.
    pub cpus: usize,
    /// The replay's time 0 on CLOCK_MONOTONIC, ns, when recorded by
    /// corral (a trace read `--from` elsewhere may use another clock):
    /// the tick grid lies on that clock, so the replay puts its ticks
    /// where the live ones were ([`crate::sched::machine::tick_phase_after`]).
    pub start_mono_ns: Option<u64>,
    /// How the recorded kernel places a woken thread whose previous CPU
    /// idles, when measured (`corral lab placement`): `Some(Some(u))`, it
    /// keeps it beside its busy waker while their utilizations sum under
    /// `u` (a platform's `vcpu_pack_util`); `Some(None)`, on the idle CPU
    /// as upstream Linux; `None`, not measured.
    pub packing: Option<Option<u32>>,
}

impl Converter {
    /// `t0`: when recording started, on the trace's clock (else the first
    /// event's time).
    pub fn new(scope: Scope, t0: Option<u64>) -> Converter {
        Converter {
            scope,
            threads: Vec::new(),
            by_tid: FastMap::default(),
            t0,
            last: 0,
            lost: 0,
            odd: 0,
            inferred: 0,
            max_cpu: 0,
            online: 0,
            background: None,
            start_mono: None,
            packing: None,
            min_outsider_ns: MIN_OUTSIDER_NS,
        }
    }

    /// Replays every outsider that used at least `min_ns` of CPU
    /// ([`MIN_OUTSIDER_NS`] unless told; 0: every one that ran, a whole µs
    /// at least: a thread is replayed in µs).
    pub fn keep_outsiders_from(&mut self, min_ns: u64) {
        self.min_outsider_ns = min_ns;
    }

    /// One line of text: an event, a lost-events note, one of
    /// [`Directive`]'s lines, or nothing.
    pub fn line(&mut self, line: &str) -> Result<(), String> {
        if let Some(n) = lost_events(line) {
            self.lost += n;
            return Ok(());
        }
        if let Some(d) = Directive::parse(line)? {
            self.directive(d);
            return Ok(());
        }
        if let Some(e) = ftrace::parse_line(line)? {
            self.event(&e);
        }
        Ok(())
    }

    fn in_scope(&self, pid: u32) -> bool {
        pid != 0
            && match &self.scope {
                Scope::All => true,
                Scope::Tree(set) => set.contains(&pid),
            }
    }

    /// The thread of `task`, created on first sight; `None` when out of
    /// scope.
    fn thread(&mut self, task: &Task) -> Option<usize> {
        if !self.in_scope(task.pid) {
            return None;
        }
        let i = match self.by_tid.get(&task.pid) {
            Some(&i) => i,
            None => {
                self.threads.push(Thread::new(task.pid, &task.comm));
                self.by_tid.insert(task.pid, self.threads.len() - 1);
                self.threads.len() - 1
            }
        };
        let th = &mut self.threads[i];
        if th.comm != task.comm && !task.comm.starts_with('<') {
            th.comm.clone_from(&task.comm);
        }
        if let Some(p) = task.prio {
            th.prio = p;
        }
        Some(i)
    }

    /// The thread of the event's current task, created on first sight.
    fn current(&mut self, e: &TraceEvent) -> Option<usize> {
        if !self.in_scope(e.current) {
            return None;
        }
        self.thread(&Task {
            comm: e.comm.clone(),
            pid: e.current,
            prio: None,
        })
    }

    pub fn event(&mut self, e: &TraceEvent) {
        let t0 = *self.t0.get_or_insert(e.ts);
        let ts = e.ts.max(t0);
        if ts < self.last {
            // Out of order (text merged from per-CPU buffers between two
            // reads, or a hand-edited file): applied at the last time seen.
            self.odd += 1;
        }
        let ts = ts.max(self.last);
        self.last = ts;
        self.max_cpu = self.max_cpu.max(e.cpu);
        // A thread acting on a CPU is on it, whether or not the trace
        // showed its switch in. (This machine's kernel, 6.18 with the
        // host's own patches, never reported CPU 1 leaving idle: 0 of 37
        // in a test; a per-task `perf record` sees no other task's
        // context.)
        if e.current != 0 && !e.irq {
            if let Some(&i) = self.by_tid.get(&e.current) {
                if self.in_scope(e.current) {
                    self.switched_in_unseen(i, ts);
                }
            }
        }
        match &e.kind {
            Kind::Switch {
                prev,
                prev_runnable,
                next,
            } => {
                let (out_prev, out_next) = (
                    prev.pid != 0 && !self.in_scope(prev.pid),
                    next.pid != 0 && !self.in_scope(next.pid),
                );
                if let Some(bg) = self.background.as_mut() {
                    bg.switch(e.cpu, ts, prev, out_prev, next, out_next);
                }
                if let Some(i) = self.thread(prev) {
                    let th = &mut self.threads[i];
                    th.seen_on_cpu = true;
                    match th.state {
                        State::Running { .. } | State::Unknown => {}
                        _ => self.odd += 1,
                    }
                    if *prev_runnable {
                        th.account(ts, t0);
                        th.state = State::Runnable;
                    } else {
                        th.flush(ts, t0);
                        th.state = if th.exiting {
                            State::Dead
                        } else {
                            State::Blocked { since: ts }
                        };
                    }
                }
                if let Some(i) = self.thread(next) {
                    let th = &mut self.threads[i];
                    th.seen_on_cpu = true;
                    match th.state {
                        State::Woken { at, .. } => th.latency.record(ts.saturating_sub(at)),
                        State::Runnable | State::Unknown => {}
                        State::Blocked { since } => {
                            // Its wake-up was not in the trace: it slept
                            // until now.
                            th.sleep(since, ts, t0);
                            th.wakeups += 1;
                            self.odd += 1;
                        }
                        _ => self.odd += 1,
                    }
                    th.state = State::Running { since: ts };
                }
            }
            Kind::Waking { task, .. } | Kind::Wakeup { task, .. } => {
                let Some(w) = self.thread(task) else { return };
                let since = match self.threads[w].state {
                    State::Blocked { since } => since,
                    // Present at the start and not seen yet: blocked
                    // since then (XXX: or woken before it switched out).
                    State::Unknown => t0,
                    State::Woken { at, queued: None } if matches!(e.kind, Kind::Wakeup { .. }) => {
                        self.threads[w].state = State::Woken {
                            at,
                            queued: Some(ts),
                        };
                        return;
                    }
                    // Woken before it left the CPU, or the sched_wakeup
                    // after its sched_waking: no block ended.
                    _ => return,
                };
                let waker = (!e.irq && e.current != task.pid)
                    .then(|| self.current(e))
                    .flatten()
                    .filter(|&k| {
                        matches!(
                            self.threads[k].state,
                            State::Running { .. } | State::Unknown
                        )
                    });
                match waker {
                    Some(k) => {
                        self.threads[k].flush(ts, t0);
                        self.threads[k].seen_on_cpu = true;
                        self.threads[k].steps.push(Step::Wake(w));
                        self.threads[w].steps.push(Step::Block {
                            us: ts.saturating_sub(since) / 1000,
                            by: k,
                        });
                    }
                    None => self.threads[w].sleep(since, ts, t0),
                }
                let th = &mut self.threads[w];
                th.wakeups += 1;
                th.state = State::Woken {
                    at: ts,
                    queued: matches!(e.kind, Kind::Wakeup { .. }).then_some(ts),
                };
            }
            Kind::WakeupNew { task, .. } => {
                let Some(i) = self.thread(task) else { return };
                let th = &mut self.threads[i];
                if th.state == State::Unknown {
                    // Its fork was not seen: born at its first wake-up.
                    th.sleep(t0, ts, t0);
                    th.born_ns = Some(ts - t0);
                }
                th.wakeups += 1;
                th.state = State::Woken {
                    at: ts,
                    queued: Some(ts),
                };
            }
            Kind::Fork { parent, child } => {
                let Some(p) = self.thread(parent) else { return };
                if let Scope::Tree(set) = &mut self.scope {
                    set.insert(child.pid);
                }
                // A reused TID starts a new thread, named apart.
                let reuse = self
                    .by_tid
                    .remove(&child.pid)
                    .map(|old| self.threads[old].reuse + 1);
                let Some(c) = self.thread(child) else { return };
                self.threads[p].flush(ts, t0);
                self.threads[p].seen_on_cpu = true;
                self.threads[p].steps.push(Step::Wake(c));
                // Inherited at fork (`dup_task_struct`, `cgroup_fork`):
                // a child that ends before the recorder reads /proc keeps
                // its parent's.
                let prio = self.threads[p].prio;
                let (cpus, cgroup) = (self.threads[p].cpus.clone(), self.threads[p].cgroup.clone());
                let th = &mut self.threads[c];
                th.prio = prio;
                th.cpus = cpus;
                th.cgroup = cgroup;
                th.reuse = reuse.unwrap_or(0);
                th.steps.push(Step::Block {
                    us: (ts - t0) / 1000,
                    by: p,
                });
                th.born_ns = Some(ts - t0);
                th.state = State::Blocked { since: ts };
            }
            Kind::Exec { pid, filename } => {
                if let Some(i) = self
                    .by_tid
                    .get(pid)
                    .copied()
                    .filter(|_| self.in_scope(*pid))
                {
                    let base = filename.rsplit('/').next().unwrap_or(filename);
                    // The kernel keeps 15 bytes of it (TASK_COMM_LEN).
                    let mut end = base.len().min(15);
                    while !base.is_char_boundary(end) {
                        end -= 1;
                    }
                    self.threads[i].comm = base[..end].to_string();
                }
            }
            Kind::Exit { task } => {
                if let Some(i) = self.thread(task) {
                    let th = &mut self.threads[i];
                    th.exiting = true;
                    th.exited_ns = Some(ts - t0);
                }
            }
            Kind::Migrate { task, .. } => {
                if let Some(i) = self.thread(task) {
                    self.threads[i].migrations += 1;
                }
            }
        }
    }

    /// Thread `i` acts on a CPU at `ts`: if the trace left it off one,
    /// it was switched in unseen.
    fn switched_in_unseen(&mut self, i: usize, ts: u64) {
        let t0 = self.t0.unwrap_or(0);
        let th = &mut self.threads[i];
        th.seen_on_cpu = true;
        th.state = match th.state {
            // From its wake-up's enqueue at the latest.
            State::Woken { at, queued } => State::Running {
                since: queued.unwrap_or(at),
            },
            // Preempted, back on a CPU: XXX from now (when it came back
            // is not known; the CPU time in between is lost).
            State::Runnable => State::Running { since: ts },
            // Woken unseen: it slept until now (XXX: and ran from now).
            State::Blocked { since } => {
                th.sleep(since, ts, t0);
                th.wakeups += 1;
                State::Running { since: ts }
            }
            _ => return,
        };
        self.inferred += 1;
    }

    /// The TIDs of the threads seen that have not exited.
    pub fn alive(&self) -> Vec<u32> {
        self.by_tid
            .iter()
            .filter(|(_, &i)| !self.threads[i].exiting && self.threads[i].state != State::Dead)
            .map(|(&tid, _)| tid)
            .collect()
    }

    /// The PIDs of the tasks seen running beside the scope so far (the
    /// background), whose task group the recorder reads once.
    pub fn outsiders(&self) -> Vec<u32> {
        self.background
            .as_ref()
            .map(|b| b.tasks.keys().copied().collect())
            .unwrap_or_default()
    }

    /// What the recorder knew beside the events (also read back from a
    /// raw trace's lines).
    pub fn directive(&mut self, d: Directive) {
        match d {
            Directive::Start { t0, online, scope } => {
                self.start_mono = Some(*self.t0.get_or_insert(t0));
                self.online = online;
                self.background = Some(Background::default());
                // A scope given for the conversion wins.
                if matches!(self.scope, Scope::All) {
                    self.scope = Scope::Tree(scope.into_iter().collect());
                }
            }
            // The CPUs thread `tid` may use (`None`: all of them), as
            // last read.
            Directive::Cpus { tid, cpus } => {
                if let Some(&i) = self.by_tid.get(&tid) {
                    self.threads[i].cpus = cpus;
                }
            }
            // Its cgroup, as last read (the root: none); a thread of the
            // background's too.
            Directive::Cgroup { tid, path } => {
                let path = (path != "/").then_some(path);
                if let Some(&i) = self.by_tid.get(&tid) {
                    self.threads[i].cgroup = path;
                } else if let Some(o) = self.background.as_mut().and_then(|b| b.tasks.get_mut(&tid))
                {
                    o.cgroup = path;
                }
            }
            Directive::Packing { util } => self.packing = Some(util),
        }
    }

    /// The recording, ending at the last event (threads still on a CPU
    /// get their CPU time up to it).
    pub fn finish(mut self) -> Recording {
        let t0 = self.t0.unwrap_or(0);
        let end = self.last;
        for th in &mut self.threads {
            // A thread never seen on a CPU (only woken, or moved by the
            // balancer) is not credited the whole recording.
            if th.state != State::Unknown || th.seen_on_cpu {
                th.flush(end, t0);
            }
            th.period_us = periodic(th.steps.iter().filter_map(|s| match *s {
                Step::Sleep { end_us, .. } => Some(end_us),
                _ => None,
            }));
            if th.period_us.is_some() {
                for s in &mut th.steps {
                    if let Step::Sleep { absolute, .. } = s {
                        *absolute = true;
                    }
                }
            }
        }
        let mut outsiders: Vec<(u32, Outsider)> = self
            .background
            .take()
            .map(|b| b.tasks.into_iter().collect())
            .unwrap_or_default();
        outsiders.sort_by_key(|(pid, _)| *pid);
        for (pid, o) in outsiders {
            if let Some(th) = Thread::outsider(pid, o, t0, self.min_outsider_ns) {
                self.threads.push(th);
            }
        }
        Recording {
            threads: self.threads,
            span_ns: end - t0.min(end),
            lost_events: self.lost,
            odd_events: self.odd,
            inferred_switches: self.inferred,
            cpus: (self.max_cpu as usize + 1).max(self.online),
            start_mono_ns: self.start_mono,
            packing: self.packing,
        }
    }
}

/// What a live recorder knows that the events do not say, written into
/// its raw trace as comment lines (`# corral …`, which other readers skip)
/// so that `--from` converts that file into the same recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `# corral start t0=NS online=N scope=TID,TID…`: when recording
    /// started (trace clock), the CPUs online, the threads recorded.
    Start {
        t0: u64,
        online: usize,
        scope: Vec<u32>,
    },
    /// `# corral cpus TID LIST|all`: the CPUs a thread may use, read from
    /// `/proc` (events do not carry them).
    Cpus { tid: u32, cpus: Option<Vec<u32>> },
    /// `# corral cgroup TID PATH`: the thread's cgroup of the cpu
    /// controller (v1's `cpu`, else v2's), read from `/proc`; for a thread
    /// of the root cgroup on a kernel with autogroups, its session's task
    /// group, `/autogroup-N` (`/proc/PID/autogroup`), a group of 1024
    /// shares in the replay as in the kernel.
    Cgroup { tid: u32, path: String },
    /// `# corral packing util=N|none`: how the kernel places a woken
    /// thread whose previous CPU idles, as `corral lab placement`
    /// measured it on this boot ([`Recording::packing`]).
    Packing { util: Option<u32> },
}

impl Directive {
    const PREFIX: &'static str = "# corral ";

    /// The line it is written as (no newline).
    pub fn line(&self) -> String {
        let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        match self {
            Directive::Start { t0, online, scope } => format!(
                "{}start t0={t0} online={online} scope={}",
                Self::PREFIX,
                list(scope)
            ),
            Directive::Cpus { tid, cpus } => format!(
                "{}cpus {tid} {}",
                Self::PREFIX,
                cpus.as_deref().map_or("all".into(), list)
            ),
            Directive::Cgroup { tid, path } => {
                format!("{}cgroup {tid} {}", Self::PREFIX, plain(path))
            }
            Directive::Packing { util } => format!(
                "{}packing util={}",
                Self::PREFIX,
                util.map_or("none".into(), |u| u.to_string())
            ),
        }
    }

    /// The directive on `line`, if it is one.
    pub fn parse(line: &str) -> Result<Option<Directive>, String> {
        let Some(rest) = line.strip_prefix(Self::PREFIX) else {
            return Ok(None);
        };
        let bad = || format!("not a corral directive ({line:?})");
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        let list = |s: &str| -> Result<Vec<u32>, String> {
            s.split(',')
                .filter(|x| !x.is_empty())
                .map(|x| x.parse().map_err(|_| bad()))
                .collect()
        };
        let mut words = rest.split_whitespace();
        let d = match words.next() {
            Some("start") => {
                let (mut t0, mut online, mut scope) = (None, 0, Vec::new());
                for w in words {
                    match w.split_once('=').ok_or_else(bad)? {
                        ("t0", v) => t0 = Some(num(v)?),
                        ("online", v) => online = num(v)? as usize,
                        ("scope", v) => scope = list(v)?,
                        _ => return Err(bad()),
                    }
                }
                Directive::Start {
                    t0: t0.ok_or_else(bad)?,
                    online,
                    scope,
                }
            }
            Some("cpus") => {
                let tid = num(words.next().ok_or_else(bad)?)? as u32;
                let cpus = match words.next().ok_or_else(bad)? {
                    "all" => None,
                    v => Some(list(v)?),
                };
                Directive::Cpus { tid, cpus }
            }
            Some("cgroup") => {
                let tid = num(words.next().ok_or_else(bad)?)? as u32;
                // The path is the rest of the line (it may hold spaces).
                let path = rest
                    .split_once(char::is_whitespace)
                    .and_then(|(_, r)| r.trim_start().split_once(char::is_whitespace))
                    .map(|(_, p)| p.trim().to_string())
                    .filter(|p| p.starts_with('/'))
                    .ok_or_else(bad)?;
                Directive::Cgroup { tid, path }
            }
            Some("packing") => match words.next().and_then(|w| w.strip_prefix("util=")) {
                Some("none") => Directive::Packing { util: None },
                // A utilization: 1024 at most.
                Some(v) => match num(v)? {
                    u @ 0..=1024 => Directive::Packing {
                        util: Some(u as u32),
                    },
                    _ => return Err(bad()),
                },
                None => return Err(bad()),
            },
            _ => return Err(bad()),
        };
        Ok(Some(d))
    }
}

/// `s` with what a JSON string would need escaped (quotes, backslashes,
/// control characters) replaced by `_`: names and notes only.
fn plain(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '"' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// Periodicity by behaviour: a thread whose timed sleeps (those no
/// recorded thread ended) end on a period's grid sleeps to absolute
/// deadlines, as a frame loop or cyclictest does, and replayed with
/// relative sleeps it would run its periods back to back after a delay
/// (its peak use, and its class, would change). The period is the median
/// interval between the sleeps' ends, µs; periodic when there are at
/// least [`PERIODIC_MIN`] of them, the period is at least 100 µs, and at
/// least 80 % of the intervals are within 10 % of a whole number of
/// periods (a late thread skips periods).
pub fn periodic(ends: impl Iterator<Item = u64>) -> Option<u64> {
    let ends: Vec<u64> = ends.collect();
    if ends.len() < PERIODIC_MIN {
        return None;
    }
    let mut d: Vec<u64> = ends.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    d.sort_unstable();
    let m = d[d.len() / 2];
    if m < 100 {
        return None;
    }
    let on_grid = d
        .iter()
        .filter(|&&x| {
            let k = ((x + m / 2) / m).max(1);
            x.abs_diff(k * m) * 10 <= m
        })
        .count();
    (on_grid * 5 >= d.len() * 4).then_some(m)
}

/// The fewest timed sleeps [`periodic`] judges.
pub const PERIODIC_MIN: usize = 20;

/// `CPU:1 [LOST 42 EVENTS]`, trace_pipe's note of dropped events.
pub fn lost_events(line: &str) -> Option<u64> {
    let i = line.find("[LOST ")?;
    line[i + 6..].split_whitespace().next()?.parse().ok()
}

/// The policy and rt-app priority for a kernel prio.
fn policy(prio: i32) -> (&'static str, i32) {
    match prio {
        // XXX: a deadline task (−1) replays as the highest FIFO priority.
        i32::MIN..=-1 => ("SCHED_FIFO", 99),
        0..=98 => ("SCHED_FIFO", 99 - prio),
        _ => ("SCHED_OTHER", (prio - 120).clamp(-20, 19)),
    }
}

impl Recording {
    /// The threads kept in a workload: those with something to replay.
    pub fn kept(&self) -> Vec<bool> {
        self.threads
            .iter()
            .map(|t| t.steps.iter().any(|s| matches!(s, Step::Run(_))))
            .collect()
    }

    /// The recording as an rt-app JSON workload: with `corral_wake` and
    /// `corral_block` (replayed in the simulator, wake-ups kept), or
    /// `portable`, only what rt-app runs (each wake-up a sleep as long as
    /// the live one). `about` is put in `corral_recording` with each
    /// thread's live figures.
    pub fn to_json(&self, portable: bool, about: &str) -> String {
        let kept = self.kept();
        let names: Vec<String> = self.threads.iter().map(Thread::name).collect();
        let mut s = String::from("{\n  \"tasks\": {\n");
        let mut first = true;
        for (i, th) in self.threads.iter().enumerate() {
            // rt-app would run the background on top of the machine's own.
            if !kept[i] || (portable && th.background) {
                continue;
            }
            if !first {
                s.push_str(",\n");
            }
            first = false;
            let (policy, priority) = policy(th.prio);
            let _ = write!(
                s,
                "    \"{}\": {{\"loop\": 1, \"policy\": \"{policy}\", \"priority\": {priority}",
                names[i]
            );
            if th.born_ns.is_some()
                && !portable
                && matches!(th.steps.first(), Some(&Step::Block { by, .. }) if kept[by])
            {
                s.push_str(", \"corral_forked\": true");
            }
            if th.background && !portable {
                s.push_str(", \"corral_background\": true");
            }
            // Its runs are what it ran live, the scheduler's costs in
            // them: the replay charges only moves beyond its live ones.
            if !portable {
                let _ = write!(s, ", \"corral_moves\": {}", th.migrations);
            }
            if let Some(cpus) = &th.cpus {
                let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
                let _ = write!(s, ", \"cpus\": [{}]", list.join(", "));
            }
            // (rt-app would make the group on the machine it runs on: the
            // portable form leaves it out.)
            if let Some(g) = th.cgroup.as_ref().filter(|_| !portable) {
                let _ = write!(s, ", \"taskgroup\": \"{}\"", plain(g));
            }
            for (n, step) in th.steps.iter().enumerate() {
                let _ = match *step {
                    Step::Run(us) => write!(s, ", \"run{n}\": {us}"),
                    Step::Sleep {
                        end_us,
                        absolute: true,
                        ..
                    } if !portable => write!(s, ", \"corral_until{n}\": {end_us}"),
                    Step::Sleep { us, .. } => write!(s, ", \"sleep{n}\": {us}"),
                    Step::Wake(w) if portable || !kept[w] => Ok(()),
                    Step::Wake(w) => write!(s, ", \"corral_wake{n}\": \"{}\"", names[w]),
                    // Its waker is not replayed (or rt-app has no
                    // semaphore): a sleep as long as the live one, so the
                    // block can never wait for ever.
                    Step::Block { us, by } if portable || !kept[by] => {
                        write!(s, ", \"sleep{n}\": {us}")
                    }
                    Step::Block { .. } => write!(s, ", \"corral_block{n}\": \"{}\"", names[i]),
                };
            }
            s.push('}');
        }
        // rt-app with duration −1 waits for a signal once its threads
        // end; the portable form stops a second after the recording's
        // length (whole seconds: rt-app's duration is an integer).
        let duration = if portable {
            self.span_ns.div_ceil(1_000_000_000) as i64 + 1
        } else {
            -1
        };
        let _ = write!(
            s,
            "\n  }},\n  \"global\": {{\"duration\": {duration}, \"default_policy\": \"SCHED_OTHER\"}},\n"
        );
        // The live figures: order does not matter here, so serde writes
        // them (and escapes the note).
        let threads: serde_json::Map<String, serde_json::Value> = self
            .threads
            .iter()
            .zip(&names)
            .zip(&kept)
            .filter(|(_, &k)| k)
            .map(|((th, name), _)| {
                let s = |ns: Option<u64>| ns.map(|n| n as f64 / 1e9);
                let figures = serde_json::json!({
                    "cpu_ms": th.cpu_ns as f64 / 1e6,
                    "wakeups": th.wakeups,
                    "latency_p50_us": th.latency.percentile(50.0) as f64 / 1e3,
                    "latency_p99_us": th.latency.percentile(99.0) as f64 / 1e3,
                    "migrations": th.migrations,
                    "born_s": s(th.born_ns),
                    "exited_s": s(th.exited_ns),
                    "period_us": th.period_us,
                    "background": th.background,
                });
                (name.clone(), figures)
            })
            .collect();
        let by_comm: serde_json::Map<String, serde_json::Value> = self
            .by_comm()
            .iter()
            .map(|g| (g.comm.clone(), g.figures()))
            .collect();
        let recording = serde_json::json!({
            "about": about,
            "seconds": self.span_ns as f64 / 1e9,
            "lost_events": self.lost_events,
            "odd_events": self.odd_events,
            "inferred_switches": self.inferred_switches,
            "cpus": self.cpus,
            "start_mono_ns": self.start_mono_ns,
            "vcpu_pack_util": self.packing.flatten(),
            "placement_measured": self.packing.is_some(),
            "threads": threads,
            "by_comm": by_comm,
        });
        let _ = writeln!(s, "  \"corral_recording\": {recording}\n}}");
        s
    }

    /// The kept threads pooled by program (comm), the most CPU first:
    /// per-thread percentiles over a few dozen wake-ups are one draw
    /// each; a program's thousands of wake-ups compare robustly.
    pub fn by_comm(&self) -> Vec<CommGroup> {
        let kept = self.kept();
        let names: Vec<String> = self.threads.iter().map(Thread::name).collect();
        let mut groups = pool(
            self.threads
                .iter()
                .zip(&names)
                .zip(kept)
                .filter(|((th, _), k)| *k && !th.background)
                .map(|((th, name), _)| (comm_of(name), th.cpu_ns, th.wakeups, &th.latency)),
        );
        groups.sort_by_key(|g| std::cmp::Reverse(g.cpu_ns));
        groups
    }
}

/// Threads pooled by program: (comm, CPU ns, wake-ups, wake-up
/// latencies) each, in order of first appearance.
pub fn pool<'a>(
    threads: impl IntoIterator<Item = (&'a str, u64, u64, &'a Histogram)>,
) -> Vec<CommGroup> {
    let mut groups: Vec<CommGroup> = Vec::new();
    for (comm, cpu_ns, wakeups, latency) in threads {
        let at = match groups.iter().position(|g| g.comm == comm) {
            Some(at) => at,
            None => {
                groups.push(CommGroup {
                    comm: comm.to_string(),
                    ..CommGroup::default()
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[at];
        g.threads += 1;
        g.cpu_ns += cpu_ns;
        g.wakeups += wakeups;
        g.latency.merge(latency);
    }
    groups
}

/// A program's threads pooled: [`Recording::by_comm`].
#[derive(Debug, Clone, Default)]
pub struct CommGroup {
    pub comm: String,
    pub threads: usize,
    pub cpu_ns: u64,
    pub wakeups: u64,
    /// Every wake-up latency of its threads, ns.
    pub latency: Histogram,
}

impl CommGroup {
    /// Its figures as a recording's `by_comm` holds them (and `corral
    /// sim --json` the simulated ones).
    pub fn figures(&self) -> serde_json::Value {
        serde_json::json!({
            "threads": self.threads,
            "cpu_ms": self.cpu_ns as f64 / 1e6,
            "wakeups": self.wakeups,
            "latency_p50_us": self.latency.percentile(50.0) as f64 / 1e3,
            "latency_p99_us": self.latency.percentile(99.0) as f64 / 1e3,
        })
    }
}

/// A task name of a recording (`comm-tid`) → its comm.
pub fn comm_of(name: &str) -> &str {
    match name.rsplit_once('-') {
        Some((comm, tid)) if tid.bytes().all(|b| b.is_ascii_digit()) => comm,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::rtapp::{self, Event};

    fn convert(trace: &str, roots: &[u32]) -> Recording {
        let mut c = Converter::new(Scope::Tree(roots.iter().copied().collect()), None);
        for l in trace.lines() {
            c.line(l).unwrap();
        }
        c.finish()
    }

    // A shell (100) forks a child (101) that runs 3 ms, is preempted by
    // an outside task for 1 ms, runs 2 ms more, sleeps on a timer for
    // 10 ms, runs 1 ms and exits, waking its parent (its wait4). Times in
    // seconds; t0 is the first line.
    const FORK_WAIT: &str = "\
  sh-100 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sh next_pid=100 next_prio=120
  sh-100 [000] ..... 1.000500: sched_process_fork: comm=sh pid=100 child_comm=sh child_pid=101
  sh-100 [000] d..2. 1.000510: sched_wakeup_new: comm=sh pid=101 prio=120 target_cpu=001
  sh-100 [000] d..2. 1.000600: sched_switch: prev_comm=sh prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
  <idle>-0 [001] d..2. 1.000700: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sh next_pid=101 next_prio=120
  sh-101 [001] ..... 1.001000: sched_process_exec: filename=/usr/bin/cc1 pid=101 old_pid=101
  cc1-101 [001] d..2. 1.003700: sched_switch: prev_comm=cc1 prev_pid=101 prev_prio=120 prev_state=R+ ==> next_comm=kworker/1:1 next_pid=50 next_prio=120
  kworker/1:1-50 [001] d..2. 1.004700: sched_switch: prev_comm=kworker/1:1 prev_pid=50 prev_prio=120 prev_state=I ==> next_comm=cc1 next_pid=101 next_prio=120
  cc1-101 [001] d..2. 1.006700: sched_switch: prev_comm=cc1 prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
  <idle>-0 [001] d.h2. 1.016700: sched_waking: comm=cc1 pid=101 prio=120 target_cpu=001
  <idle>-0 [001] d..2. 1.016750: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=cc1 next_pid=101 next_prio=120
  cc1-101 [001] ..... 1.017700: sched_process_exit: comm=cc1 pid=101 prio=120 group_dead=true
  cc1-101 [001] dN.5. 1.017740: sched_waking: comm=sh pid=100 prio=120 target_cpu=000
  cc1-101 [001] d..2. 1.017750: sched_switch: prev_comm=cc1 prev_pid=101 prev_prio=120 prev_state=Z ==> next_comm=swapper/1 next_pid=0 next_prio=120
  <idle>-0 [000] d..2. 1.017800: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sh next_pid=100 next_prio=120
  sh-100 [000] d..2. 1.018000: sched_switch: prev_comm=sh prev_pid=100 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";

    #[test]
    fn bursts_sleeps_forks_and_who_wakes_whom() {
        let r = convert(FORK_WAIT, &[100]);
        assert_eq!(r.threads.len(), 2, "the kworker is not in scope");
        let (sh, cc1) = (&r.threads[0], &r.threads[1]);
        // sh: 0.5 ms, forks (wakes) cc1, 0.1 ms, blocks until cc1's exit
        // wakes it (17.14 ms after it blocked), 0.2 ms.
        assert_eq!(
            sh.steps,
            vec![
                Step::Run(500),
                Step::Wake(1),
                Step::Run(100),
                Step::Block { us: 17_140, by: 1 },
                Step::Run(200)
            ]
        );
        // cc1: born blocked; 3 ms + 2 ms (the preemption is not a block),
        // a 10 ms timer sleep (hardirq: no waker), then 1.04 ms up to
        // its waking of sh and 0.01 ms after.
        assert_eq!(
            cc1.steps,
            vec![
                Step::Block { us: 500, by: 0 },
                Step::Run(5000),
                Step::Sleep {
                    us: 10_000,
                    end_us: 16_700,
                    absolute: false
                },
                Step::Run(990),
                Step::Wake(0),
                Step::Run(10)
            ]
        );
        assert_eq!(cc1.comm, "cc1", "named after its exec");
        assert_eq!((cc1.cpu_ns, sh.cpu_ns), (6_000_000, 800_000));
        assert_eq!((cc1.wakeups, sh.wakeups), (2, 1));
        // Latencies: new 190 µs, timer 50 µs; sh 60 µs.
        assert_eq!(cc1.latency.count, 2);
        assert_eq!((cc1.latency.min, cc1.latency.max), (50_000, 190_000));
        assert_eq!(
            (cc1.born_ns, cc1.exited_ns),
            (Some(500_000), Some(17_700_000))
        );
        assert_eq!((r.span_ns, r.odd_events), (18_000_000, 0));
    }

    #[test]
    fn a_switch_in_the_trace_lacks_is_inferred_from_the_thread_acting() {
        // As this machine's kernel writes it: cc1 woken on idle CPU 1, no
        // switch onto CPU 1; cc1 then acts there (exit, waking sh). It ran
        // from its sched_wakeup (1.016720).
        let trace = FORK_WAIT
            .replace(
                "  <idle>-0 [001] d..2. 1.016750: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=cc1 next_pid=101 next_prio=120\n",
                "  <idle>-0 [001] dNh3. 1.016720: sched_wakeup: comm=cc1 pid=101 prio=120 target_cpu=001\n",
            );
        let r = convert(&trace, &[100]);
        assert_eq!((r.inferred_switches, r.odd_events), (1, 0));
        let cc1 = &r.threads[1];
        assert_eq!(cc1.steps[3..5], [Step::Run(1020), Step::Wake(0)]);
        assert_eq!(cc1.cpu_ns, 6_030_000);
        assert_eq!(
            cc1.latency.count, 1,
            "the timer wake-up's latency is not known"
        );
    }

    #[test]
    fn threads_pool_by_program() {
        let r = convert(FORK_WAIT, &[100]);
        let g = r.by_comm();
        let rows: Vec<(&str, usize, u64, u64)> = g
            .iter()
            .map(|g| (g.comm.as_str(), g.threads, g.cpu_ns, g.latency.count))
            .collect();
        assert_eq!(rows, [("cc1", 1, 6_000_000, 2), ("sh", 1, 800_000, 1)]);
        let (mut a, mut b) = (Histogram::default(), Histogram::default());
        a.record(10);
        b.record(30);
        b.record(50);
        let g = pool([("rustc", 5, 1, &a), ("cc", 1, 1, &a), ("rustc", 7, 2, &b)]);
        assert_eq!(
            (g[0].comm.as_str(), g[0].threads, g[0].cpu_ns, g[0].wakeups),
            ("rustc", 2, 12, 3)
        );
        assert_eq!((g[0].latency.count, g[0].latency.max), (3, 50));
        assert_eq!(comm_of("opt cgu.00-16778"), "opt cgu.00");
        assert_eq!(comm_of("kworker/1:1-x"), "kworker/1:1-x");
        let v: serde_json::Value = serde_json::from_str(&r.to_json(false, "t")).unwrap();
        assert_eq!(v["corral_recording"]["by_comm"]["cc1"]["threads"], 1);
    }

    #[test]
    fn what_the_trace_lacks_is_inferred_and_nothing_waits_for_ever() {
        // 300 preempted at 1.001, back on CPU 1 unseen (this kernel's idle
        // exits), acting at 1.003 and leaving at 1.004: 1 + 1 ms of CPU
        // (the time between is not known). 301 only moved by the
        // balancer: no CPU. 302 woken by 303, which never ran a µs: its
        // block replays as a sleep. 304 forked twice under one TID: two
        // threads, named apart.
        let trace = "\
  a-300 [000] d..2. 1.001000: sched_switch: prev_comm=a prev_pid=300 prev_prio=120 prev_state=R+ ==> next_comm=k next_pid=9 next_prio=120
  a-300 [001] ..... 1.003000: sched_process_fork: comm=a pid=300 child_comm=a child_pid=304
  a-300 [001] d..2. 1.004000: sched_switch: prev_comm=a prev_pid=300 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
  m-9 [000] d..3. 1.004100: sched_migrate_task: comm=b pid=301 prio=120 orig_cpu=0 dest_cpu=1
  m-9 [000] d..2. 1.004200: sched_switch: prev_comm=m prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=x next_pid=303 next_prio=120
  x-303 [000] d..3. 1.004200: sched_waking: comm=c pid=302 prio=120 target_cpu=000
  x-303 [000] d..2. 1.004200: sched_switch: prev_comm=x prev_pid=303 prev_prio=120 prev_state=S ==> next_comm=c next_pid=302 next_prio=120
  c-302 [000] d..2. 1.006200: sched_switch: prev_comm=c prev_pid=302 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
  a-304 [001] ..... 1.006300: sched_process_exit: comm=a pid=304 prio=120 group_dead=true
  a-304 [001] d..2. 1.006400: sched_switch: prev_comm=a prev_pid=304 prev_prio=120 prev_state=Z ==> next_comm=swapper/1 next_pid=0 next_prio=120
  a-300 [001] ..... 1.007000: sched_process_fork: comm=a pid=300 child_comm=a child_pid=304
";
        let mut c = Converter::new(
            Scope::Tree([300, 301, 302, 303].into()),
            Some(1_000_000_000),
        );
        for l in trace.lines() {
            c.line(l).unwrap();
        }
        let r = c.finish();
        let by = |tid: u32| r.threads.iter().find(|t| t.tid == tid).unwrap();
        assert_eq!(by(300).cpu_ns, 2_000_000, "{:?}", by(300).steps);
        assert_eq!(by(301).cpu_ns, 0, "never seen on a CPU");
        let names: Vec<String> = r
            .threads
            .iter()
            .filter(|t| t.tid == 304)
            .map(Thread::name)
            .collect();
        assert_eq!(names, ["a-304", "a-304.1"]);
        // 302's waker 303 has no run: 302 sleeps instead of waiting on it.
        let w = rtapp::parse(&r.to_json(false, "t"), "t.json").unwrap();
        let c302 = w.tasks.iter().find(|t| t.name == "c-302").unwrap();
        assert!(
            matches!(c302.phases[0].events[0], Event::Sleep(4200)),
            "{:?}",
            c302.phases[0].events
        );
        assert!(w.tasks.iter().all(|t| t.name != "x-303"));
    }

    #[test]
    fn the_json_replays_in_the_simulator_and_its_portable_form_in_rt_app_s_words() {
        let mut r = convert(FORK_WAIT, &[100]);
        r.threads[0].migrations = 3;
        let w = rtapp::parse(&r.to_json(false, "test"), "rec.json").unwrap();
        assert_eq!(w.tasks.len(), 2);
        // Its runs hold the costs of its live moves (`corral_moves`).
        assert_eq!(w.tasks[0].live_moves, Some(3));
        assert_eq!(w.tasks[0].name, "sh-100");
        assert_eq!(w.tasks[1].name, "cc1-101");
        assert_eq!(
            w.tasks[0].phases[0].events[..2],
            [Event::Run(500), Event::Wake("cc1-101".into())]
        );
        assert_eq!(
            w.tasks[1].phases[0].events[0],
            Event::Block("cc1-101".into())
        );
        let w = rtapp::parse(&r.to_json(true, "test"), "rec.json").unwrap();
        assert_eq!(w.tasks[0].live_moves, None);
        // rt-app waits for a signal after its threads when the duration is
        // −1: the portable form ends a second after the recording's 18 ms.
        assert_eq!(w.duration_s, Some(2.0));
        let words: Vec<bool> = w.tasks[1].phases[0]
            .events
            .iter()
            .map(|e| matches!(e, Event::Run(_) | Event::Sleep(_)))
            .collect();
        assert!(
            words.iter().all(|&b| b),
            "{:?}",
            w.tasks[1].phases[0].events
        );
    }

    #[test]
    fn threads_present_at_the_start_and_lost_events() {
        // 200 was running at the start, 201 blocked: 201's first event is
        // its waking by 200, so it blocked on 200 since t0.
        let trace = "\
  a-200 [000] d..3. 2.000000: sched_waking: comm=b pid=201 prio=120 target_cpu=001
CPU:1 [LOST 7 EVENTS]
  a-200 [000] d..2. 2.001000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=b next_pid=201 next_prio=19
";
        let mut c = Converter::new(Scope::Tree([200, 201].into()), Some(1_999_000_000));
        for l in trace.lines() {
            c.line(l).unwrap();
        }
        let r = c.finish();
        assert_eq!(r.lost_events, 7);
        let (b, a) = (&r.threads[0], &r.threads[1]);
        assert_eq!((a.tid, b.tid), (200, 201));
        assert_eq!(
            a.steps,
            vec![Step::Run(1000), Step::Wake(0), Step::Run(1000)]
        );
        assert_eq!(b.steps[0], Step::Block { us: 1000, by: 1 });
        assert_eq!(policy(b.prio), ("SCHED_FIFO", 80));
        assert_eq!(policy(125), ("SCHED_OTHER", 5));
    }

    #[test]
    fn periodic_sleeps_are_told_by_their_grid_not_their_lengths() {
        // A 60 Hz frame loop: ends on a 16 667 µs grid with ±150 µs of
        // jitter, two periods skipped once (a late frame): periodic.
        let grid: Vec<u64> = (0..40)
            .filter(|&k| k != 17)
            .map(|k| 5_000 + k * 16_667 + [0, 150, 40, 90][k as usize % 4])
            .collect();
        assert!(periodic(grid.iter().copied()).unwrap().abs_diff(16_667) < 200);
        // Too few to judge.
        assert_eq!(periodic(grid[..PERIODIC_MIN - 1].iter().copied()), None);
        // A relative sleeper whose work varies (1–9 ms of running between
        // 10 ms sleeps): no grid.
        let mut t = 0;
        let relative: Vec<u64> = (0..40u64)
            .map(|k| {
                t += 10_000 + (k * 7_919) % 9_000;
                t
            })
            .collect();
        assert_eq!(periodic(relative.into_iter()), None);
    }

    #[test]
    fn a_periodic_thread_s_sleeps_replay_to_their_instants() {
        // A thread woken by a timer (hardirq) every 10 ms for 30 periods,
        // running 1 ms each: its sleeps become corral_until at their live
        // ends (µs after t0), the portable form keeps rt-app's sleep.
        let mut trace = String::new();
        for k in 0..30u64 {
            let wake = 1_000_000_000 + k * 10_000_000;
            let off = wake + 1_000_000;
            let _ = writeln!(
                trace,
                "  <idle>-0 [000] dNh2. {}.{:06}: sched_waking: comm=p pid=300 prio=120 target_cpu=000",
                wake / 1_000_000_000,
                wake % 1_000_000_000 / 1000
            );
            let _ = writeln!(
                trace,
                "  <idle>-0 [000] d..2. {}.{:06}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=p next_pid=300 next_prio=120",
                wake / 1_000_000_000,
                wake % 1_000_000_000 / 1000 + 20
            );
            let _ = writeln!(
                trace,
                "  p-300 [000] d..2. {}.{:06}: sched_switch: prev_comm=p prev_pid=300 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120",
                off / 1_000_000_000,
                off % 1_000_000_000 / 1000
            );
        }
        let mut c = Converter::new(Scope::Tree([300].into()), Some(999_000_000));
        for l in trace.lines() {
            c.line(l).unwrap();
        }
        let r = c.finish();
        let p = &r.threads[0];
        assert_eq!(p.period_us, Some(10_000));
        let ends: Vec<u64> = p
            .steps
            .iter()
            .filter_map(|s| match *s {
                Step::Sleep {
                    end_us,
                    absolute: true,
                    ..
                } => Some(end_us),
                _ => None,
            })
            .collect();
        // The first wake-up ends the sleep since t0 (1 ms before it).
        assert_eq!(ends.len(), 30);
        assert_eq!((ends[0], ends[29]), (1_000, 1_000 + 29 * 10_000));
        let json = r.to_json(false, "test");
        assert!(json.contains("\"corral_until2\": 11000"), "{json}");
        let portable = r.to_json(true, "test");
        assert!(!portable.contains("corral_until"));
        assert!(portable.contains("\"sleep2\": 9000"), "{portable}");
    }

    #[test]
    fn a_raw_trace_s_directives_make_the_live_recording() {
        for d in [
            Directive::Start {
                t0: 1_999_000_000,
                online: 4,
                scope: vec![200, 201],
            },
            Directive::Cpus {
                tid: 201,
                cpus: Some(vec![0, 2]),
            },
            Directive::Cpus {
                tid: 201,
                cpus: None,
            },
            Directive::Cgroup {
                tid: 201,
                path: "/corral-lab-7/work group".into(),
            },
            Directive::Packing { util: Some(717) },
            Directive::Packing { util: None },
        ] {
            assert_eq!(
                Directive::parse(&d.line()),
                Ok(Some(d.clone())),
                "{}",
                d.line()
            );
        }
        assert!(Directive::parse("# corral cpus x all").is_err());
        assert!(
            Directive::parse("# corral start online=2").is_err(),
            "no t0"
        );
        assert!(Directive::parse("# corral packing 717").is_err());
        assert!(Directive::parse("# corral packing util=-1").is_err());
        assert!(Directive::parse("# corral packing util=1025").is_err());
        assert_eq!(Directive::parse("# tracer: nop"), Ok(None));
        // The start sets t0, the scope (202 is out) and the CPU count;
        // the CPUs follow the thread.
        let trace = "\
# corral start t0=1999000000 online=4 scope=200,201
  a-200 [000] d..3. 2.000000: sched_waking: comm=b pid=201 prio=120 target_cpu=001
  a-200 [000] d..3. 2.000000: sched_waking: comm=c pid=202 prio=120 target_cpu=001
# corral cpus 201 1
# corral cgroup 200 /lab/work
# corral cgroup 201 /
  a-200 [000] d..2. 2.001000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=b next_pid=201 next_prio=120
";
        let mut c = Converter::new(Scope::All, None);
        for l in trace.lines() {
            c.line(l).unwrap();
        }
        let r = c.finish();
        assert_eq!((r.threads.len(), r.cpus, r.span_ns), (2, 4, 2_000_000));
        // corral's recorder traces on CLOCK_MONOTONIC: the start places
        // the replay's ticks. A trace without the line has no such start.
        assert_eq!(r.start_mono_ns, Some(1_999_000_000));
        assert!(r
            .to_json(false, "t")
            .contains("\"start_mono_ns\":1999000000"));
        let mut bare = Converter::new(Scope::All, None);
        for l in trace.lines().skip(1) {
            bare.line(l).unwrap();
        }
        assert_eq!(bare.finish().start_mono_ns, None);
        assert_eq!(r.threads[0].cpus, Some(vec![1]));
        assert_eq!(r.threads[1].cgroup.as_deref(), Some("/lab/work"));
        assert_eq!(r.threads[0].cgroup, None, "the root is none");
        assert!(r
            .to_json(false, "t")
            .contains("\"taskgroup\": \"/lab/work\""));
        assert!(!r.to_json(true, "t").contains("taskgroup"));
        assert_eq!(r.threads[1].steps[0], Step::Run(1000));
        // Not measured; measured, a kernel that packs; one that does not.
        assert_eq!(r.packing, None);
        let json = r.to_json(false, "t");
        assert!(json.contains("\"placement_measured\":false"), "{json}");
        for (line, packing, util) in [
            ("# corral packing util=717", Some(717), "717"),
            ("# corral packing util=none", None, "null"),
        ] {
            let mut c = Converter::new(Scope::All, None);
            for l in std::iter::once(line).chain(trace.lines()) {
                c.line(l).unwrap();
            }
            let r = c.finish();
            assert_eq!(r.packing, Some(packing));
            let json = r.to_json(false, "t");
            assert!(
                json.contains(&format!("\"vcpu_pack_util\":{util}")),
                "{json}"
            );
            assert!(json.contains("\"placement_measured\":true"), "{json}");
        }
    }

    #[test]
    fn what_ran_beside_the_scope_replays_as_background_at_its_instants() {
        // A live recording of 200: a kernel thread (71) runs 3 ms between
        // two of 200's stretches on CPU 0; a kworker (12) goes on at
        // 10 ms, but its switch out (to idle) was not shown, so its
        // stretch is not known and not counted.
        let trace = "\
# corral start t0=1000000000 online=2 scope=200
  a-200 [000] d..2. 1.002000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=R+ ==> next_comm=kdamond.0 next_pid=71 next_prio=120
  kdamond.0-71 [000] d..2. 1.005000: sched_switch: prev_comm=kdamond.0 prev_pid=71 prev_prio=120 prev_state=I ==> next_comm=a next_pid=200 next_prio=120
  a-200 [000] d..2. 1.010000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=kworker/0:1 next_pid=12 next_prio=120
  <idle>-0 [000] d..2. 1.012000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=200 next_prio=120
";
        let mut c = Converter::new(Scope::All, None);
        for l in trace.lines() {
            c.line(l).unwrap();
        }
        let r = c.finish();
        let names: Vec<String> = r.threads.iter().map(Thread::name).collect();
        assert_eq!(names, ["a-200", "kdamond.0-71"]);
        let (a, k) = (&r.threads[0], &r.threads[1]);
        assert!(!a.background && k.background);
        assert_eq!(a.cpu_ns, 7_000_000, "2 ms + 5 ms, the outsider's 3 ms not");
        assert_eq!(k.cpu_ns, 3_000_000);
        assert_eq!(
            k.steps,
            [
                Step::Sleep {
                    us: 2_000,
                    end_us: 2_000,
                    absolute: true
                },
                Step::Run(3_000)
            ]
        );
        assert_eq!(k.cpus, Some(vec![0]));
        let json = r.to_json(false, "test");
        assert!(json.contains("\"corral_background\": true"), "{json}");
        // The programs compared leave it out.
        assert_eq!(r.by_comm().len(), 1);
    }

    #[test]
    fn an_outsider_under_the_least_cpu_is_left_out_unless_told() {
        // rcu_preempt (15) runs 20 µs twice on CPU 0, kdamond (71) 1 ms:
        // a recording keeps kdamond only; told 0 (lab validate), both.
        let trace = "\
# corral start t0=1000000000 online=2 scope=200
  a-200 [000] d..2. 1.001000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=R+ ==> next_comm=rcu_preempt next_pid=15 next_prio=120
  rcu_preempt-15 [000] d..2. 1.001020: sched_switch: prev_comm=rcu_preempt prev_pid=15 prev_prio=120 prev_state=I ==> next_comm=a next_pid=200 next_prio=120
  a-200 [000] d..2. 1.002000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=R+ ==> next_comm=kdamond.0 next_pid=71 next_prio=120
  kdamond.0-71 [000] d..2. 1.003000: sched_switch: prev_comm=kdamond.0 prev_pid=71 prev_prio=120 prev_state=I ==> next_comm=a next_pid=200 next_prio=120
  a-200 [000] d..2. 1.004000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=R+ ==> next_comm=rcu_preempt next_pid=15 next_prio=120
  rcu_preempt-15 [000] d..2. 1.004020: sched_switch: prev_comm=rcu_preempt prev_pid=15 prev_prio=120 prev_state=I ==> next_comm=a next_pid=200 next_prio=120
  a-200 [000] d..2. 1.005000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
        let names = |min: Option<u64>| {
            let mut c = Converter::new(Scope::All, None);
            if let Some(m) = min {
                c.keep_outsiders_from(m);
            }
            for l in trace.lines() {
                c.line(l).unwrap();
            }
            let r = c.finish();
            let names: Vec<String> = r.threads.iter().map(Thread::name).collect();
            (
                names,
                r.threads.iter().map(|t| t.cpu_ns).collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            names(None),
            (
                vec!["a-200".to_string(), "kdamond.0-71".into()],
                vec![3_960_000, 1_000_000]
            )
        );
        assert_eq!(
            names(Some(0)),
            (
                vec![
                    "a-200".to_string(),
                    "rcu_preempt-15".into(),
                    "kdamond.0-71".into()
                ],
                vec![3_960_000, 40_000, 1_000_000]
            )
        );
        // Told just above rcu_preempt's CPU, it is left out; at it, kept.
        assert_eq!(names(Some(40_001)).0.len(), 2);
        assert_eq!(names(Some(40_000)).0.len(), 3);
    }

    #[test]
    fn an_outsider_competes_in_the_task_group_it_was_read_in() {
        // The recorder (300), outside the scope, runs in the workload's
        // autogroup; a kernel thread's group reads as the root.
        let trace = "\
# corral start t0=1000000000 online=2 scope=200
  a-200 [000] d..2. 1.002000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=R+ ==> next_comm=corral next_pid=300 next_prio=120
  corral-300 [000] d..2. 1.004000: sched_switch: prev_comm=corral prev_pid=300 prev_prio=120 prev_state=S ==> next_comm=kdamond.0 next_pid=71 next_prio=120
  kdamond.0-71 [000] d..2. 1.006000: sched_switch: prev_comm=kdamond.0 prev_pid=71 prev_prio=120 prev_state=I ==> next_comm=a next_pid=200 next_prio=120
# corral cgroup 200 /autogroup-5
# corral cgroup 300 /autogroup-5
# corral cgroup 71 /
  a-200 [000] d..2. 1.010000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
        let mut c = Converter::new(Scope::All, None);
        for l in trace.lines() {
            c.line(l).unwrap();
        }
        let mut seen = c.outsiders();
        seen.sort_unstable();
        assert_eq!(seen, [71, 300]);
        let r = c.finish();
        let names: Vec<String> = r.threads.iter().map(Thread::name).collect();
        assert_eq!(names, ["a-200", "kdamond.0-71", "corral-300"]);
        assert_eq!(r.threads[0].cgroup.as_deref(), Some("/autogroup-5"));
        assert_eq!(r.threads[1].cgroup, None);
        assert_eq!(r.threads[2].cgroup.as_deref(), Some("/autogroup-5"));
        let json = r.to_json(false, "test");
        let line = json.lines().find(|l| l.contains("corral-300")).unwrap();
        assert!(line.contains("\"taskgroup\": \"/autogroup-5\""), "{line}");
    }

    #[test]
    fn a_fork_inherits_its_parent_s_cpus_and_cgroup() {
        // The child lives less than the recorder's poll: no directive of
        // its own, its parent's group and CPUs (`cgroup_fork`).
        let trace = "\
# corral start t0=1000000000 online=2 scope=200
  <idle>-0 [001] d..2. 1.000500: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=200 next_prio=120
# corral cpus 200 1
# corral cgroup 200 /lab/work
  a-200 [001] ..... 1.001000: sched_process_fork: comm=a pid=200 child_comm=a child_pid=205
  a-200 [001] d..2. 1.002000: sched_switch: prev_comm=a prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=a next_pid=205 next_prio=120
  a-205 [001] d..2. 1.003000: sched_switch: prev_comm=a prev_pid=205 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
        let mut c = Converter::new(Scope::All, None);
        for l in trace.lines() {
            c.line(l).unwrap();
        }
        let r = c.finish();
        let child = r.threads.iter().find(|t| t.tid == 205).unwrap();
        assert_eq!(child.cgroup.as_deref(), Some("/lab/work"));
        assert_eq!(child.cpus, Some(vec![1]));
    }
}
