//! BFS, Con Kolivas's Brain Fuck Scheduler (patches for Linux 2.6.31 on):
//! ONE run queue for all CPUs, ordered by virtual deadline, scanned in
//! full at every pick.
//!
//! - Quota: a task runs `rr_interval` (6 ms) of CPU, then gets a new
//!   quota and a new virtual deadline
//!   `deadline = now + rr_interval · prio_ratio(nice)`. The quota is used
//!   up when less than `RESCHED_US` (100 µs) is left, checked at the tick
//!   and whenever the task stops running, so at HZ 250 a quota lasts two
//!   ticks (8 ms).
//! - `prio_ratio`: ×1.1 per nice level (BFS's integer table, each entry
//!   11/10 of the one before), here 1.0 at nice 0
//!   ([`BfsTunables::base_nice`]; BFS's own table is 1.0 at nice −20,
//!   which makes a nice-0 deadline 6.7 × rr_interval away and widens the
//!   gaps between nice levels).
//! - A task keeps its deadline and what is left of its quota when it is
//!   preempted and while it sleeps: a task that sleeps a lot wakes with a
//!   deadline in the past, ahead of the CPU hogs (BFS's interactivity).
//! - Pick: RT tasks first (higher `rt_priority`, then queue order), then
//!   the earliest deadline among the tasks allowed on this CPU — a linear
//!   scan of the queue, as BFS does. The running tasks are not queued.
//! - Wake-up: an idle allowed CPU (the one it last ran on first); else the
//!   allowed CPU whose task has the latest deadline (or the lowest RT
//!   priority), which it preempts if its own deadline is earlier.
//! - SCHED_RR: a quota of `rr_interval`, then behind its equals;
//!   SCHED_FIFO: no quota.
//!
//! Not modelled (XXX): the cache-distance scaling of deadlines of tasks
//! that last ran on another CPU, SCHED_ISO and SCHED_IDLEPRIO, hrtick (the
//! quota is checked at the tick), fork's split of the quota.
//! See [`crate::legacy::runq`] for how one global queue meets the machine.

use crate::engine::Ns;
use crate::legacy::runq::ClassicPolicy as Kind;
use crate::legacy::runq::{GlobalCpus, Lists};
use crate::sched::kernel::Policy;
use crate::sched::kernel::{SchedClass, TaskId, WakeCtx, Work};

/// Less than this left of a quota counts as used up (`RESCHED_US`).
pub const RESCHED_NS: i64 = 100_000;

/// BFS's knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BfsTunables {
    /// The quota, ns (`rr_interval`, 6 ms).
    pub rr_interval_ns: Ns,
    /// The nice level whose deadline is `rr_interval` away (0 here; −20 in
    /// BFS's own table).
    pub base_nice: i32,
}

impl Default for BfsTunables {
    fn default() -> Self {
        BfsTunables {
            rr_interval_ns: 6_000_000,
            base_nice: 0,
        }
    }
}

/// BFS's `prio_ratios`: 128 at nice −20, each next entry 11/10 of the one
/// before (integer arithmetic).
fn prio_ratios() -> [u64; 40] {
    let mut r = [128u64; 40];
    for i in 1..40 {
        r[i] = r[i - 1] * 11 / 10;
    }
    r
}

#[derive(Debug, Clone, Copy)]
struct TaskBfs {
    kind: Kind,
    nice: i32,
    rt_priority: i32,
    deadline: Ns,
    /// What is left of its quota, ns.
    time_slice: i64,
    exec_start: Ns,
    /// Never queued yet: its first deadline is set when it is.
    fresh: bool,
    last_cpu: Option<usize>,
}

/// BFS.
#[derive(Debug, Clone)]
pub struct Bfs {
    /// The waiting tasks, in the order they were queued.
    queue: Lists,
    tasks: Vec<TaskBfs>,
    cpus: GlobalCpus,
    tun: BfsTunables,
    ratios: [u64; 40],
    work: Work,
}

impl Bfs {
    /// BFS on `ncpus` CPUs with the default tunables.
    pub fn new(ncpus: usize) -> Bfs {
        Bfs::with_tunables(ncpus, BfsTunables::default())
    }

    pub fn with_tunables(ncpus: usize, tun: BfsTunables) -> Bfs {
        Bfs {
            queue: Lists::new(1),
            tasks: Vec::new(),
            cpus: GlobalCpus::new(ncpus),
            tun,
            ratios: prio_ratios(),
            work: Work::default(),
        }
    }

    pub fn tunables(&self) -> BfsTunables {
        self.tun
    }

    /// `rr_interval · prio_ratio(nice)`: how far a new deadline is, ns.
    pub fn deadline_offset(&self, nice: i32) -> Ns {
        let idx = |n: i32| (n.clamp(-20, 19) + 20) as usize;
        let (r, base) = (self.ratios[idx(nice)], self.ratios[idx(self.tun.base_nice)]);
        (self.tun.rr_interval_ns as u128 * r as u128 / base as u128) as Ns
    }

    /// Task `t`'s virtual deadline, ns.
    pub fn deadline(&self, t: TaskId) -> Ns {
        self.tasks[t].deadline
    }

    fn ensure(&mut self, t: TaskId) {
        if self.tasks.len() <= t {
            let fresh = TaskBfs {
                kind: Kind::Other,
                nice: 0,
                rt_priority: 0,
                deadline: 0,
                time_slice: self.tun.rr_interval_ns as i64,
                exec_start: 0,
                fresh: true,
                last_cpu: None,
            };
            self.tasks.resize(t + 1, fresh);
        }
    }

    /// The order of the pick: RT by priority, then by deadline (smaller
    /// runs first).
    fn key(&self, t: TaskId) -> (u8, i32, Ns) {
        let task = &self.tasks[t];
        match task.kind {
            Kind::Other => (1, 0, task.deadline),
            Kind::Fifo | Kind::Rr => (0, -task.rt_priority, 0),
        }
    }

    fn charge(&mut self, t: TaskId, now: Ns) {
        let task = &mut self.tasks[t];
        task.time_slice -= now.saturating_sub(task.exec_start) as i64;
        task.exec_start = now;
    }

    /// `time_slice_expired`: a used-up quota is renewed, with a new deadline.
    fn check_deadline(&mut self, t: TaskId, now: Ns) {
        if self.tasks[t].time_slice < RESCHED_NS {
            let offset = self.deadline_offset(self.tasks[t].nice);
            let task = &mut self.tasks[t];
            task.time_slice = self.tun.rr_interval_ns as i64;
            task.deadline = now + offset;
        }
    }
}

impl SchedClass for Bfs {
    fn name(&self) -> &'static str {
        "bfs"
    }

    fn set_nice(&mut self, t: TaskId, nice: i32) {
        self.ensure(t);
        self.tasks[t].nice = nice.clamp(-20, 19);
    }

    fn set_policy(&mut self, t: TaskId, policy: Policy) -> Result<(), crate::error::Error> {
        self.ensure(t);
        self.tasks[t].kind = Kind::from_policy("bfs", policy)?;
        Ok(())
    }

    fn set_rt_priority(&mut self, t: TaskId, prio: i32) -> Result<(), crate::error::Error> {
        self.ensure(t);
        self.tasks[t].kind.check_rt_priority(t, prio)?;
        self.tasks[t].rt_priority = prio;
        Ok(())
    }

    fn update_curr(&mut self, cpu: usize, now: Ns) {
        if let Some(c) = self.cpus.curr(cpu) {
            self.charge(c, now);
        }
    }

    fn enqueue(&mut self, cpu: usize, t: TaskId, _wakeup: bool, now: Ns) {
        self.ensure(t);
        self.work.enqueues += 1;
        if self.tasks[t].fresh {
            let offset = self.deadline_offset(self.tasks[t].nice);
            let task = &mut self.tasks[t];
            task.fresh = false;
            task.deadline = now + offset;
        }
        self.cpus.enqueue(cpu, t);
        self.queue.push_back(0, t);
    }

    fn dequeue(&mut self, _: usize, t: TaskId, _sleep: bool, now: Ns) {
        self.work.dequeues += 1;
        if self.cpus.on_cpu(t).is_some() {
            self.charge(t, now);
            self.check_deadline(t, now);
        }
        self.queue.unlink(t);
        self.cpus.dequeue(t, now);
    }

    fn pick_next(&mut self, cpu: usize, now: Ns) -> Option<TaskId> {
        self.work.picks += 1;
        self.cpus.picking(cpu);
        if !self.cpus.is_online(cpu) {
            return None;
        }
        let mut best: Option<(TaskId, (u8, i32, Ns))> = None;
        for t in self.queue.iter(0) {
            self.work.examined += 1;
            if !self.cpus.may_run(t, cpu) {
                continue;
            }
            let k = self.key(t);
            if best.is_none_or(|(_, bk)| k < bk) {
                best = Some((t, k));
            }
        }
        let (t, _) = best?;
        self.queue.unlink(t);
        self.cpus.start(cpu, t);
        let task = &mut self.tasks[t];
        task.exec_start = now;
        task.last_cpu = Some(cpu);
        Some(t)
    }

    fn put_prev(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.cpus.curr(cpu) != Some(t) {
            return;
        }
        self.charge(t, now);
        self.check_deadline(t, now);
        self.cpus.stop(cpu, now);
        self.queue.push_back(0, t);
    }

    fn cpu_offline(&mut self, cpu: usize) {
        self.cpus.set_online(cpu, false);
    }

    fn cpu_online(&mut self, cpu: usize) {
        self.cpus.set_online(cpu, true);
    }

    fn set_allowed(&mut self, t: TaskId, cpus: &[usize]) {
        self.ensure(t);
        self.cpus.set_allowed(t, cpus);
    }

    fn work(&self) -> Work {
        self.work
    }

    fn tick(&mut self, cpu: usize, now: Ns) -> bool {
        let Some(c) = self.cpus.curr(cpu) else {
            // An idle CPU with tasks at home: pick if one may run here.
            return self.queue.iter(0).any(|t| self.cpus.may_run(t, cpu));
        };
        self.charge(c, now);
        self.tasks[c].kind != Kind::Fifo && self.tasks[c].time_slice < RESCHED_NS
    }

    fn check_preempt_wakeup(&mut self, cpu: usize, woken: TaskId, _: Ns) -> bool {
        self.cpus
            .curr(cpu)
            .is_some_and(|c| self.cpus.may_run(woken, cpu) && self.key(woken) < self.key(c))
    }

    fn select_task_rq(&mut self, t: TaskId, prev: usize, allowed: &[usize], _: &WakeCtx) -> usize {
        self.ensure(t);
        let last = self.tasks[t].last_cpu.unwrap_or(prev);
        if let Some(idle) = self.cpus.claim_idle(last, allowed) {
            return idle;
        }
        // The CPU running the latest deadline, if the woken task beats it.
        let latest = allowed
            .iter()
            .filter_map(|&c| Some((self.key(self.cpus.curr(c)?), c)))
            .max_by_key(|&(k, c)| (k, std::cmp::Reverse(c)));
        match latest {
            Some((k, c)) if self.key(t) < k => c,
            _ if allowed.contains(&prev) || allowed.is_empty() => prev,
            _ => allowed[0],
        }
    }

    fn nr_running(&self, cpu: usize) -> usize {
        self.cpus.nr_running(cpu)
    }

    fn curr(&self, cpu: usize) -> Option<TaskId> {
        self.cpus.curr(cpu)
    }

    fn queued(&self, cpu: usize) -> Vec<TaskId> {
        self.cpus.queued(cpu)
    }

    /// One queue: nothing to balance, but an idle CPU kicked by a busy
    /// one's tick takes home a waiting task it may run.
    fn balance(
        &mut self,
        cpu: usize,
        _: Ns,
        newidle: bool,
        allowed: &dyn Fn(TaskId, usize) -> bool,
        _pelt: Option<&crate::sched::pelt::Pelt>,
    ) -> Vec<(TaskId, usize)> {
        self.cpus
            .hand_over(cpu, newidle, self.queue.iter(0), allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_grow_10_percent_per_nice_level() {
        let b = Bfs::new(1);
        assert_eq!(b.deadline_offset(0), 6_000_000);
        let r = b.deadline_offset(10) as f64 / b.deadline_offset(0) as f64;
        // 1.1^10 = 2.594, less the table's integer truncation.
        assert!((r - 1.1f64.powi(10)).abs() < 0.02, "{r}");
        assert!(b.deadline_offset(-1) < b.deadline_offset(0));
        let native = Bfs::with_tunables(
            1,
            BfsTunables {
                base_nice: -20,
                ..Default::default()
            },
        );
        assert_eq!(native.deadline_offset(-20), 6_000_000);
    }

    #[test]
    fn pick_takes_the_earliest_deadline_it_may_run() {
        let mut b = Bfs::new(2);
        for t in 0..3 {
            b.set_policy(t, Policy::Other).unwrap();
            b.set_nice(t, 0);
        }
        b.set_allowed(0, &[1]);
        b.enqueue(0, 0, true, 0); // deadline 6 ms, CPU 1 only
        b.enqueue(0, 1, true, 1_000_000); // 7 ms
        b.enqueue(0, 2, true, 500_000); // 6.5 ms
        assert_eq!(b.pick_next(0, 2_000_000), Some(2));
        assert_eq!(b.work().examined, 3);
        assert_eq!(b.pick_next(1, 2_000_000), Some(0));
        // Task 1 (7 ms) preempts neither 6.5 ms nor 6 ms.
        assert!(!b.check_preempt_wakeup(0, 1, 2_000_000));
    }
}
