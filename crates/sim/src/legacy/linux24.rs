//! Linux 2.4's scheduler (kernel/sched.c of 2.4.x): ONE run queue for all
//! CPUs, a list scanned in full at every `schedule()` for the task with
//! the best `goodness()`. The goodness, counter and recalculation rules
//! here are shared with paper 004's multi-level queue ([`crate::legacy::mlq`]),
//! which only changes the queue ([`RunQueue24`]).
//!
//! Time is counted in ticks (`counter`), at the platform's HZ:
//!
//! - Time slice: `NICE_TO_TICKS(nice) = TICK_SCALE(20 − nice) + 1`, with
//!   2.4's own HZ scaling `TICK_SCALE(x)` = `x >> 2` below HZ 200, `x >> 1`
//!   below 400, `x` below 800, `x << 1` below 1600, else `x << 2`, so a
//!   slice lasts about as long at any HZ. At HZ 100 (i386): nice 0 → 6
//!   ticks (60 ms), nice 10 → 3, nice 19 → 1, nice −20 → 11; at HZ 250:
//!   nice 0 → 11 ticks (44 ms).
//! - `goodness(p, cpu)`: SCHED_FIFO/RR `1000 + rt_priority`; SCHED_OTHER 0
//!   when `counter == 0`, else `counter + 20 − nice`, plus
//!   PROC_CHANGE_PENALTY (15 on i386) when `p` last ran on `cpu`. A task
//!   that called `sched_yield` counts −1 at the next pick. (The +1 for a
//!   task sharing the previous task's address space is not modelled:
//!   simulated threads have none.)
//! - Tick: the running task's counter −1; at 0 it is rescheduled.
//!   SCHED_FIFO ignores its counter; SCHED_RR at 0 gets a new counter
//!   `NICE_TO_TICKS(nice)` and goes to the tail of the queue.
//! - Pick: the best goodness among the tasks allowed on the CPU and not
//!   running on another; the first in list order wins a tie (a woken task
//!   goes to the head, `add_to_runqueue`).
//! - Recalculation: when the best goodness is 0 (every runnable SCHED_OTHER
//!   task this CPU may run has used its counter, and no RT task waits),
//!   every task's counter, sleeping ones too, becomes
//!   `counter / 2 + NICE_TO_TICKS(nice)`, and the CPU picks again. A
//!   sleeper keeps half of what it did not use, so it comes back with more
//!   than a hog (at most `2·NICE_TO_TICKS − 1`): 2.4's interactivity boost.
//! - Wake-up (`reschedule_idle`): the CPU the task last ran on if idle,
//!   else the CPU idle longest; else the CPU where it gains most,
//!   `preemption_goodness = goodness(p, cpu) − goodness(curr, cpu)`, which
//!   it preempts when that exceeds [`Tunables24::preempt_margin`] (1, as
//!   2.4.0–2.4.3 had it; later 2.4 kernels preempt at > 0).
//!
//! The queue holds every runnable task, the running ones too (as 2.4's
//! list does): a scan looks at them and skips those running elsewhere.
//! See [`crate::legacy::runq`] for how one global queue meets the machine's
//! per-CPU questions.

use crate::engine::Ns;
use crate::legacy::runq::{GlobalCpus, Lists};
use crate::sched::kernel::Policy;
use crate::sched::kernel::{SchedClass, TaskId, WakeCtx, Work};

/// The knobs of 2.4's scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tunables24 {
    /// Timer interrupts per second: counters are in ticks.
    pub hz: u32,
    /// Goodness bonus for the CPU a task last ran on (i386: 15).
    pub proc_change_penalty: i32,
    /// A woken task preempts when its goodness beats curr's by more than
    /// this (2.4.0–2.4.3: 1; later 2.4: 0).
    pub preempt_margin: i32,
}

impl Tunables24 {
    pub fn new(hz: u32) -> Tunables24 {
        Tunables24 {
            hz,
            proc_change_penalty: 15,
            preempt_margin: 1,
        }
    }

    /// 2.4's `TICK_SCALE`: the slice in ticks at this HZ.
    pub fn tick_scale(&self, x: i32) -> i32 {
        match self.hz {
            0..200 => x >> 2,
            200..400 => x >> 1,
            400..800 => x,
            800..1600 => x << 1,
            _ => x << 2,
        }
    }

    /// `NICE_TO_TICKS(nice) = TICK_SCALE(20 − nice) + 1`.
    pub fn nice_to_ticks(&self, nice: i32) -> i32 {
        self.tick_scale(20 - nice.clamp(-20, 19)) + 1
    }
}

/// A task's scheduling policy under 2.4.
pub use crate::legacy::runq::ClassicPolicy as Policy24;

/// Not run yet: no CPU earns the PROC_CHANGE_PENALTY bonus.
pub const NO_CPU: usize = usize::MAX;

/// What 2.4 keeps per task for scheduling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task24 {
    pub policy: Policy24,
    pub nice: i32,
    /// 1–99 for SCHED_FIFO/RR.
    pub rt_priority: i32,
    /// Ticks left of its slice.
    pub counter: i32,
    /// The CPU it last ran on ([`NO_CPU`] before it ran).
    pub processor: usize,
    /// It called `sched_yield`: −1 at the next pick.
    pub yielded: bool,
    /// Never queued yet: its counter follows its nice value.
    fresh: bool,
    /// Known and not exited (recalculation touches these).
    present: bool,
}

impl Task24 {
    /// A SCHED_OTHER task with `counter` ticks left, last run on `processor`.
    pub fn other(nice: i32, counter: i32, processor: usize) -> Task24 {
        Task24 {
            policy: Policy24::Other,
            nice,
            rt_priority: 0,
            counter,
            processor,
            yielded: false,
            fresh: false,
            present: true,
        }
    }

    /// 2.4's `goodness(p, this_cpu)` (see the module doc).
    pub fn goodness(&self, cpu: usize, tun: &Tunables24) -> i32 {
        if self.yielded {
            return -1;
        }
        if self.policy.is_rt() {
            return 1000 + self.rt_priority;
        }
        if self.counter == 0 {
            return 0;
        }
        let affine = if self.processor == cpu {
            tun.proc_change_penalty
        } else {
            0
        };
        self.counter + 20 - self.nice + affine
    }
}

/// The outcome of a scan: the best task, its goodness, tasks looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub task: Option<TaskId>,
    pub goodness: i32,
    pub examined: u64,
}

/// 2.4's scan: the first task of the best goodness among those `can_run`
/// on `cpu`, looking at every task `queue` yields.
pub fn scan<F: Fn(TaskId) -> bool>(
    queue: impl Iterator<Item = TaskId>,
    cpu: usize,
    tasks: &[Task24],
    tun: &Tunables24,
    can_run: &F,
) -> Pick {
    let mut p = Pick {
        task: None,
        goodness: -1000,
        examined: 0,
    };
    for t in queue {
        p.examined += 1;
        if !can_run(t) {
            continue;
        }
        let w = tasks[t].goodness(cpu, tun);
        if w > p.goodness {
            p.goodness = w;
            p.task = Some(t);
        }
    }
    p
}

/// The run queue of a 2.4-style scheduler: what differs between 2.4's one
/// list and paper 004's levels. It holds every runnable task.
pub trait RunQueue24 {
    fn name(&self) -> &'static str;
    /// Adds runnable `t` at the head (`front`) or the tail.
    fn insert(&mut self, t: TaskId, tasks: &[Task24], front: bool);
    /// Takes `t` off; the tasks looked at to find it.
    fn remove(&mut self, t: TaskId, tasks: &[Task24]) -> u64;
    /// Moves `t` to the tail (`move_last_runqueue`).
    fn move_last(&mut self, t: TaskId, tasks: &[Task24]);
    /// `t`'s counter changed (tick): move it if its place depends on it.
    fn counter_changed(&mut self, t: TaskId, tasks: &[Task24]);
    /// Every counter was recalculated.
    fn recalculated(&mut self, tasks: &[Task24]);
    /// The best task for `cpu` among those `can_run`.
    fn pick<F: Fn(TaskId) -> bool>(
        &self,
        cpu: usize,
        tasks: &[Task24],
        tun: &Tunables24,
        can_run: &F,
    ) -> Pick;
    /// Every queued task.
    fn iter(&self) -> impl Iterator<Item = TaskId> + '_;
}

/// 2.4's run queue: one list (`runqueue_head`).
#[derive(Debug, Clone)]
pub struct OneList {
    list: Lists,
}

impl Default for OneList {
    fn default() -> Self {
        OneList {
            list: Lists::new(1),
        }
    }
}

impl OneList {
    pub fn len(&self) -> usize {
        self.list.len(0)
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty(0)
    }
}

impl RunQueue24 for OneList {
    fn name(&self) -> &'static str {
        "linux24"
    }

    fn insert(&mut self, t: TaskId, _: &[Task24], front: bool) {
        if front {
            self.list.push_front(0, t);
        } else {
            self.list.push_back(0, t);
        }
    }

    /// `list_del`: no search.
    fn remove(&mut self, t: TaskId, _: &[Task24]) -> u64 {
        self.list.unlink(t);
        0
    }

    fn move_last(&mut self, t: TaskId, _: &[Task24]) {
        if self.list.unlink(t).is_some() {
            self.list.push_back(0, t);
        }
    }

    fn counter_changed(&mut self, _: TaskId, _: &[Task24]) {}

    fn recalculated(&mut self, _: &[Task24]) {}

    fn pick<F: Fn(TaskId) -> bool>(
        &self,
        cpu: usize,
        tasks: &[Task24],
        tun: &Tunables24,
        can_run: &F,
    ) -> Pick {
        scan(self.list.iter(0), cpu, tasks, tun, can_run)
    }

    fn iter(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.list.iter(0)
    }
}

/// A 2.4-style scheduler over run queue `Q`: [`Linux24`] or
/// [`crate::legacy::mlq::Mlq`].
#[derive(Debug, Clone)]
pub struct Sched24<Q: RunQueue24> {
    q: Q,
    tasks: Vec<Task24>,
    cpus: GlobalCpus,
    tun: Tunables24,
    work: Work,
    /// The task that yielded on each CPU: its flag goes after that CPU's
    /// next pick (2.4 clears SCHED_YIELD in `__schedule_tail`).
    yielder: Vec<Option<TaskId>>,
}

/// Linux 2.4: one list.
pub type Linux24 = Sched24<OneList>;

impl Sched24<OneList> {
    /// Linux 2.4 on `ncpus` CPUs at `hz`.
    pub fn new(ncpus: usize, hz: u32) -> Linux24 {
        Sched24::with_queue(OneList::default(), ncpus, Tunables24::new(hz))
    }
}

impl<Q: RunQueue24> Sched24<Q> {
    pub fn with_queue(q: Q, ncpus: usize, tun: Tunables24) -> Sched24<Q> {
        Sched24 {
            q,
            tasks: Vec::new(),
            cpus: GlobalCpus::new(ncpus),
            tun,
            work: Work::default(),
            yielder: vec![None; ncpus],
        }
    }

    pub fn tunables(&self) -> Tunables24 {
        self.tun
    }

    /// The run queue.
    pub fn queue(&self) -> &Q {
        &self.q
    }

    /// Task `t` as the scheduler sees it.
    pub fn task(&self, t: TaskId) -> &Task24 {
        &self.tasks[t]
    }

    fn ensure(&mut self, t: TaskId) {
        if self.tasks.len() <= t {
            let fresh = Task24 {
                policy: Policy24::Other,
                nice: 0,
                rt_priority: 0,
                counter: self.tun.nice_to_ticks(0),
                processor: NO_CPU,
                yielded: false,
                fresh: true,
                present: true,
            };
            self.tasks.resize(t + 1, fresh);
        }
    }

    /// Every counter: `counter / 2 + NICE_TO_TICKS(nice)`.
    fn recalculate(&mut self) {
        self.work.recalcs += 1;
        for task in self.tasks.iter_mut().filter(|t| t.present) {
            task.counter = task.counter / 2 + self.tun.nice_to_ticks(task.nice);
            self.work.recalc_touched += 1;
        }
        self.q.recalculated(&self.tasks);
    }

    /// A waiting task `cpu` may run, if any.
    fn waiting_for(&self, cpu: usize) -> Option<TaskId> {
        self.q
            .iter()
            .find(|&t| self.cpus.waiting(t) && self.cpus.may_run(t, cpu))
    }
}

impl<Q: RunQueue24> SchedClass for Sched24<Q> {
    fn name(&self) -> &'static str {
        self.q.name()
    }

    fn set_nice(&mut self, t: TaskId, nice: i32) {
        self.ensure(t);
        let task = &mut self.tasks[t];
        task.nice = nice.clamp(-20, 19);
        if task.fresh {
            task.counter = self.tun.nice_to_ticks(task.nice);
        }
    }

    fn set_policy(&mut self, t: TaskId, policy: Policy) -> Result<(), crate::error::Error> {
        self.ensure(t);
        self.tasks[t].policy = Policy24::from_policy(self.q.name(), policy)?;
        Ok(())
    }

    fn set_rt_priority(&mut self, t: TaskId, prio: i32) -> Result<(), crate::error::Error> {
        self.ensure(t);
        self.tasks[t].policy.check_rt_priority(t, prio)?;
        self.tasks[t].rt_priority = prio;
        Ok(())
    }

    /// 2.4 charges by the tick only.
    fn update_curr(&mut self, _: usize, _: Ns) {}

    fn enqueue(&mut self, cpu: usize, t: TaskId, _wakeup: bool, _: Ns) {
        self.ensure(t);
        self.work.enqueues += 1;
        let task = &mut self.tasks[t];
        task.fresh = false;
        task.present = true;
        self.cpus.enqueue(cpu, t);
        self.q.insert(t, &self.tasks, true);
    }

    fn dequeue(&mut self, _: usize, t: TaskId, sleep: bool, now: Ns) {
        self.work.dequeues += 1;
        self.work.removal_scanned += self.q.remove(t, &self.tasks);
        self.cpus.dequeue(t, now);
        // Not asleep: it exits, or comes back at once (a move), and is
        // present again then.
        self.tasks[t].present = sleep;
    }

    fn pick_next(&mut self, cpu: usize, _: Ns) -> Option<TaskId> {
        self.work.picks += 1;
        self.cpus.picking(cpu);
        let next = if self.cpus.is_online(cpu) {
            loop {
                let cpus = &self.cpus;
                let can_run = |t: TaskId| cpus.waiting(t) && cpus.may_run(t, cpu);
                let p = self.q.pick(cpu, &self.tasks, &self.tun, &can_run);
                self.work.examined += p.examined;
                if p.task.is_some() && p.goodness == 0 {
                    // Every candidate used its counter: recalculate, again.
                    self.recalculate();
                    continue;
                }
                break p.task;
            }
        } else {
            None
        };
        if let Some(y) = self.yielder[cpu].take() {
            self.tasks[y].yielded = false;
        }
        if let Some(t) = next {
            self.cpus.start(cpu, t);
            self.tasks[t].processor = cpu;
        }
        next
    }

    fn put_prev(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.cpus.curr(cpu) != Some(t) {
            return;
        }
        self.cpus.stop(cpu, now);
        let task = &mut self.tasks[t];
        if task.policy == Policy24::Rr && task.counter == 0 {
            // SCHED_RR's slice ran out: a new one, behind its equals.
            task.counter = self.tun.nice_to_ticks(task.nice);
            self.q.move_last(t, &self.tasks);
        }
    }

    fn yield_task(&mut self, cpu: usize, t: TaskId, _: Ns) {
        self.tasks[t].yielded = true;
        if let Some(y) = self.yielder[cpu].replace(t) {
            if y != t {
                self.tasks[y].yielded = false;
            }
        }
        self.q.move_last(t, &self.tasks);
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

    fn tick(&mut self, cpu: usize, _: Ns) -> bool {
        let Some(c) = self.cpus.curr(cpu) else {
            // An idle CPU with tasks at home: pick if one may run here.
            return self.waiting_for(cpu).is_some();
        };
        let task = &mut self.tasks[c];
        if task.policy == Policy24::Fifo {
            return false;
        }
        if task.counter > 0 {
            task.counter -= 1;
            self.q.counter_changed(c, &self.tasks);
        }
        self.tasks[c].counter == 0
    }

    fn check_preempt_wakeup(&mut self, cpu: usize, woken: TaskId, _: Ns) -> bool {
        let Some(c) = self.cpus.curr(cpu) else {
            return false;
        };
        self.cpus.may_run(woken, cpu)
            && self.tasks[woken].goodness(cpu, &self.tun) - self.tasks[c].goodness(cpu, &self.tun)
                > self.tun.preempt_margin
    }

    fn select_task_rq(&mut self, t: TaskId, prev: usize, allowed: &[usize], _: &WakeCtx) -> usize {
        self.ensure(t);
        let last = match self.tasks[t].processor {
            NO_CPU => prev,
            p => p,
        };
        if let Some(idle) = self.cpus.claim_idle(last, allowed) {
            return idle;
        }
        // No idle CPU: the one where it gains most, if it gains enough.
        let gain = |c: usize| -> Option<i32> {
            let curr = self.cpus.curr(c)?;
            Some(self.tasks[t].goodness(c, &self.tun) - self.tasks[curr].goodness(c, &self.tun))
        };
        let best = allowed
            .iter()
            .filter_map(|&c| Some((gain(c)?, c)))
            .max_by_key(|&(g, c)| (g, std::cmp::Reverse(c)));
        match best {
            Some((g, c)) if g > self.tun.preempt_margin => c,
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
    /// one's tick takes home a waiting task it may run (see
    /// [`crate::legacy::runq`]).
    fn balance(
        &mut self,
        cpu: usize,
        _: Ns,
        newidle: bool,
        allowed: &dyn Fn(TaskId, usize) -> bool,
        _pelt: Option<&crate::sched::pelt::Pelt>,
    ) -> Vec<(TaskId, usize)> {
        self.cpus.hand_over(cpu, newidle, self.q.iter(), allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_to_ticks_follows_2_4s_hz_scaling() {
        let t100 = Tunables24::new(100);
        assert_eq!(
            [-20, 0, 10, 19].map(|n| t100.nice_to_ticks(n)),
            [11, 6, 3, 1]
        );
        let t250 = Tunables24::new(250);
        assert_eq!(t250.nice_to_ticks(0), 11);
        assert_eq!(Tunables24::new(1000).nice_to_ticks(0), 41);
    }

    #[test]
    fn goodness_by_the_formula() {
        let tun = Tunables24::new(100);
        let t = Task24::other(0, 6, 1);
        assert_eq!(t.goodness(1, &tun), 6 + 20 + 15);
        assert_eq!(t.goodness(0, &tun), 6 + 20);
        assert_eq!(Task24::other(5, 0, 1).goodness(1, &tun), 0);
        let mut rt = Task24::other(0, 0, 0);
        rt.policy = Policy24::Fifo;
        rt.rt_priority = 10;
        assert_eq!(rt.goodness(3, &tun), 1010);
        rt.yielded = true;
        assert_eq!(rt.goodness(3, &tun), -1);
    }

    #[test]
    fn the_scan_looks_at_every_task_and_keeps_the_first_best() {
        let tun = Tunables24::new(100);
        let tasks = vec![
            Task24::other(0, 3, 0),
            Task24::other(0, 5, 1),
            Task24::other(0, 5, 1),
            Task24::other(0, 1, 0),
        ];
        let mut q = OneList::default();
        for t in 0..4 {
            q.insert(t, &tasks, false);
        }
        let p = q.pick(1, &tasks, &tun, &|_| true);
        assert_eq!((p.task, p.goodness, p.examined), (Some(1), 40, 4));
        let p = q.pick(0, &tasks, &tun, &|t| t != 1);
        // On CPU 0: task 0 has 3 + 20 + 15 = 38, task 2 has 5 + 20 = 25.
        assert_eq!((p.task, p.goodness), (Some(0), 38));
    }
}
