//! The real-time class (kernel/sched/rt.c) and the class stack above the
//! fair class (kernel/sched/core.c: `pick_next_task` asks each class in
//! priority order, so a runnable RT task always runs before any fair one).
//!
//! - One FIFO list per priority (1–99, higher runs first) on every CPU
//!   (`rt_prio_array`). A task that is preempted goes back to the head of
//!   its list; one that wakes goes to the tail.
//! - SCHED_FIFO runs until it blocks or yields; SCHED_RR also gives way to
//!   its equals every `sched_rr_timeslice` (100 ms), checked at the tick
//!   (`task_tick_rt`, `RR_TIMESLICE`).
//! - Wake-up preemption: a woken RT task preempts a lower-priority RT task
//!   and any fair task (`wakeup_preempt_rt`).
//! - Placement (`select_task_rq_rt` with cpupri): the previous CPU unless
//!   it runs an RT task of equal or higher priority; then the allowed CPU
//!   running the lowest priority (idle, then fair, then the lowest RT).
//! - Pull (`pull_rt_task`): a CPU with no RT task to run takes the
//!   highest-priority waiting (queued, not running) RT task from another
//!   CPU. (XXX: push on wake-up is folded into the placement above.)
//! - RT bandwidth: the RT tasks of a CPU may use at most `runtime` of every
//!   `period` while fair tasks wait there; then the fair class runs for the
//!   rest of the period. Linux 6.18 does this with the fair server
//!   (`dl_server`, 50 ms every 1 s); 2.6.32 with RT throttling
//!   (`sched_rt_runtime_us` 950 ms of `sched_rt_period_us` 1 s), which also
//!   idles the CPU when no fair task waits (`idle_when_throttled`).
//!   (XXX: checked at the tick, as the kernel's `sched_rt_runtime_exceeded`
//!   is from `update_curr_rt`; the fair server's deferral is modelled as
//!   "RT first, fair at the end of the period".)

use crate::engine::Ns;
use crate::sched::kernel::Policy;
use crate::sched::kernel::{TaskId, Work};
use std::collections::VecDeque;

/// `sched_rr_timeslice`: 100 ms (`RR_TIMESLICE`).
pub const RR_TIMESLICE_NS: Ns = 100_000_000;

/// How much of each period RT tasks may take from waiting fair tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtBandwidth {
    pub runtime_ns: Ns,
    pub period_ns: Ns,
    /// 2.6.32's throttling idles the CPU even with no fair task waiting.
    pub idle_when_throttled: bool,
}

impl RtBandwidth {
    /// Linux 6.12+: the fair server's 50 ms per 1 s leaves RT 950 ms.
    pub fn fair_server() -> RtBandwidth {
        RtBandwidth {
            runtime_ns: 950_000_000,
            period_ns: 1_000_000_000,
            idle_when_throttled: false,
        }
    }

    /// Linux 2.6.32: `sched_rt_runtime_us` 950000 of `sched_rt_period_us` 1000000.
    pub fn throttling() -> RtBandwidth {
        RtBandwidth {
            runtime_ns: 950_000_000,
            period_ns: 1_000_000_000,
            idle_when_throttled: true,
        }
    }
}

#[derive(Debug, Clone, Default)]
struct RtRq {
    /// Index 0 is priority 99: one list per priority.
    lists: Vec<VecDeque<TaskId>>,
    /// Bit i set when list i is not empty (`rt_prio_array.bitmap`).
    bitmap: u128,
    /// Tasks waiting in the lists (curr not counted).
    waiting: usize,
    nr: usize,
    curr: Option<TaskId>,
    /// RT run time in this period, and the period's start.
    rt_time: Ns,
    period_start: Ns,
    exec_start: Ns,
    throttled: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct RtTask {
    prio: u32,
    rr: bool,
    time_slice: Ns,
    on_rq: bool,
    /// Its RR slice ran out: put it back at the tail.
    to_tail: bool,
}

impl RtRq {
    fn push(&mut self, l: usize, t: TaskId, front: bool) {
        if front {
            self.lists[l].push_front(t);
        } else {
            self.lists[l].push_back(t);
        }
        self.bitmap |= 1 << l;
        self.waiting += 1;
    }

    fn first_list(&self) -> Option<usize> {
        (self.bitmap != 0).then(|| self.bitmap.trailing_zeros() as usize)
    }

    fn pop_first(&mut self) -> Option<TaskId> {
        let l = self.first_list()?;
        let t = self.lists[l].pop_front()?;
        self.took(l);
        Some(t)
    }

    fn remove(&mut self, l: usize, t: TaskId) -> bool {
        let Some(i) = self.lists[l].iter().position(|&x| x == t) else {
            return false;
        };
        self.lists[l].remove(i);
        self.took(l);
        true
    }

    fn took(&mut self, l: usize) {
        self.waiting -= 1;
        if self.lists[l].is_empty() {
            self.bitmap &= !(1 << l);
        }
    }
}

/// The RT class.
#[derive(Debug, Clone)]
pub struct Rt {
    rqs: Vec<RtRq>,
    /// RT tasks waiting on any CPU (none: nothing to pull).
    waiting: usize,
    tasks: Vec<RtTask>,
    bw: RtBandwidth,
    /// Picks (one task looked at: the first list's head), queue operations.
    work: Work,
}

impl Rt {
    pub fn new(ncpus: usize, bw: RtBandwidth) -> Rt {
        Rt {
            rqs: vec![
                RtRq {
                    lists: vec![VecDeque::new(); 99],
                    ..Default::default()
                };
                ncpus
            ],
            tasks: Vec::new(),
            waiting: 0,
            bw,
            work: Work::default(),
        }
    }

    fn ensure(&mut self, t: TaskId) {
        if self.tasks.len() <= t {
            self.tasks.resize(t + 1, RtTask::default());
        }
    }

    fn list(&self, t: TaskId) -> usize {
        99 - self.tasks[t].prio.clamp(1, 99) as usize
    }

    pub fn set_task(
        &mut self,
        t: TaskId,
        policy: Policy,
        prio: i32,
    ) -> Result<(), crate::error::Error> {
        if !(1..=99).contains(&prio) {
            return Err(crate::error::Error::Invalid(format!(
                "RT priority must be 1 to 99 for {policy:?}, not {prio}"
            )));
        }
        self.ensure(t);
        self.tasks[t] = RtTask {
            prio: prio as u32,
            rr: policy == Policy::Rr,
            time_slice: RR_TIMESLICE_NS,
            ..Default::default()
        };
        Ok(())
    }

    pub fn prio(&self, t: TaskId) -> u32 {
        self.tasks[t].prio
    }

    /// The highest priority waiting or running on `cpu` (0: none).
    pub fn top_prio(&self, cpu: usize) -> u32 {
        let rq = &self.rqs[cpu];
        rq.curr
            .map(|c| self.tasks[c].prio)
            .into_iter()
            .chain(rq.first_list().map(|i| 99 - i as u32))
            .max()
            .unwrap_or(0)
    }

    pub fn enqueue(&mut self, cpu: usize, t: TaskId, head: bool) {
        self.work.enqueues += 1;
        let l = self.list(t);
        let rq = &mut self.rqs[cpu];
        rq.push(l, t, head);
        self.waiting += 1;
        rq.nr += 1;
        self.tasks[t].on_rq = true;
    }

    fn charge(&mut self, cpu: usize, now: Ns) {
        let rq = &mut self.rqs[cpu];
        if rq.curr.is_some() {
            rq.rt_time += now.saturating_sub(rq.exec_start);
        }
        rq.exec_start = now;
    }

    pub fn dequeue(&mut self, cpu: usize, t: TaskId, now: Ns) {
        self.work.dequeues += 1;
        if self.rqs[cpu].curr == Some(t) {
            self.charge(cpu, now);
            self.rqs[cpu].curr = None;
        } else {
            let l = self.list(t);
            if self.rqs[cpu].remove(l, t) {
                self.waiting -= 1;
            }
        }
        self.rqs[cpu].nr -= 1;
        self.tasks[t].on_rq = false;
    }

    /// Starts a new bandwidth period when due; true if RT may run.
    fn refresh(&mut self, cpu: usize, now: Ns) -> bool {
        let period = self.bw.period_ns.max(1);
        let rq = &mut self.rqs[cpu];
        if now >= rq.period_start + period {
            rq.period_start = now - (now - rq.period_start) % period;
            rq.rt_time = 0;
            rq.throttled = false;
        }
        !rq.throttled
    }

    /// The next RT task for `cpu`; `fair_waiting` says whether the fair
    /// class has something to run (throttling only holds RT back for it,
    /// unless `idle_when_throttled`).
    pub fn pick_next(&mut self, cpu: usize, now: Ns, fair_waiting: bool) -> Option<TaskId> {
        self.work.picks += 1;
        if !self.refresh(cpu, now) && (fair_waiting || self.bw.idle_when_throttled) {
            return None;
        }
        let rq = &mut self.rqs[cpu];
        let t = rq.pop_first()?;
        self.work.examined += 1;
        self.waiting -= 1;
        rq.curr = Some(t);
        rq.exec_start = now;
        Some(t)
    }

    /// Curr stops running but stays first in its list.
    pub fn put_prev(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.rqs[cpu].curr != Some(t) {
            return;
        }
        self.charge(cpu, now);
        self.rqs[cpu].curr = None;
        let l = self.list(t);
        let front = !std::mem::take(&mut self.tasks[t].to_tail);
        self.rqs[cpu].push(l, t, front);
        self.waiting += 1;
    }

    /// `task_tick_rt`: RR rotation and the bandwidth check; true to resched.
    pub fn tick(&mut self, cpu: usize, now: Ns, tick_ns: Ns, fair_waiting: bool) -> bool {
        self.charge(cpu, now);
        let Some(c) = self.rqs[cpu].curr else {
            return false;
        };
        self.refresh(cpu, now);
        let rq = &mut self.rqs[cpu];
        if rq.rt_time > self.bw.runtime_ns && !rq.throttled {
            rq.throttled = true;
        }
        if rq.throttled && (fair_waiting || self.bw.idle_when_throttled) {
            return true;
        }
        let task = &mut self.tasks[c];
        if !task.rr {
            return false;
        }
        task.time_slice = task.time_slice.saturating_sub(tick_ns);
        if task.time_slice > 0 {
            return false;
        }
        task.time_slice = RR_TIMESLICE_NS;
        // Give way to an equal, if there is one: back to the tail
        // (`requeue_task_rt`), done when curr is put back.
        if rq.lists[99 - task.prio as usize].is_empty() {
            return false;
        }
        task.to_tail = true;
        true
    }

    /// `yield_task_rt`: curr goes to the tail of its list when put back.
    pub fn yield_curr(&mut self, cpu: usize, t: TaskId) {
        if self.rqs[cpu].curr == Some(t) {
            self.tasks[t].to_tail = true;
        }
    }

    /// Whether an RT task waits on `cpu` and may run now (a new period
    /// lifted the throttle).
    pub fn may_run(&mut self, cpu: usize, now: Ns) -> bool {
        self.rqs[cpu].waiting > 0 && self.refresh(cpu, now)
    }

    pub fn curr(&self, cpu: usize) -> Option<TaskId> {
        self.rqs[cpu].curr
    }

    /// The class's scheduling work so far.
    pub fn work(&self) -> Work {
        self.work
    }

    pub fn nr_running(&self, cpu: usize) -> usize {
        self.rqs[cpu].nr
    }

    pub fn queued(&self, cpu: usize) -> Vec<TaskId> {
        let rq = &self.rqs[cpu];
        rq.curr
            .into_iter()
            .chain(rq.lists.iter().flatten().copied())
            .collect()
    }

    /// `pull_rt_task`: `cpu` takes the best waiting RT task from elsewhere
    /// if it beats what `cpu` has.
    pub fn pull(
        &mut self,
        cpu: usize,
        allowed: &dyn Fn(TaskId, usize) -> bool,
    ) -> Option<(TaskId, usize)> {
        if self.waiting == 0 {
            return None;
        }
        let mine = self.top_prio(cpu);
        let mut best: Option<(u32, TaskId, usize)> = None;
        for (src, rq) in self.rqs.iter().enumerate() {
            if src == cpu || rq.waiting == 0 {
                continue;
            }
            for &t in rq.lists.iter().flatten() {
                let p = self.tasks[t].prio;
                if p > mine && allowed(t, cpu) && best.is_none_or(|(bp, _, _)| p > bp) {
                    best = Some((p, t, src));
                }
            }
        }
        let (_, t, src) = best?;
        self.dequeue(src, t, 0);
        self.enqueue(cpu, t, false);
        Some((t, src))
    }
}
