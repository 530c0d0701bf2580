//! The interface a kernel model implements, shaped like the kernel's
//! `struct sched_class` (kernel/sched/sched.h) so that a reader of
//! kernel/sched/ recognises each hook. The machine ([`crate::machine`])
//! calls them exactly where the kernel's core would.

use crate::engine::Ns;
use crate::rtapp::Policy;

/// A simulated thread's index.
pub type TaskId = usize;

pub trait SchedClass {
    /// The model's name, for reports.
    fn name(&self) -> &'static str;
    /// Sets a task's nice value (its load weight).
    fn set_nice(&mut self, t: TaskId, nice: i32);
    /// Sets a task's policy (before it first runs); a class refuses the
    /// policies it does not schedule.
    fn set_policy(&mut self, t: TaskId, policy: Policy) -> Result<(), String>;
    /// Sets an RT task's priority, 1–99 (after [`SchedClass::set_policy`]).
    fn set_rt_priority(&mut self, t: TaskId, prio: i32) -> Result<(), String> {
        let _ = (t, prio);
        Err(format!("{}: no RT class", self.name()))
    }
    /// Sets (Some) or clears (None) a task's own slice, ns
    /// (`sched_attr.sched_runtime` for SCHED_OTHER since Linux 6.12).
    fn set_slice(&mut self, t: TaskId, slice_ns: Option<Ns>) -> Result<(), String> {
        let _ = (t, slice_ns);
        Err(format!("{}: no per-task slice", self.name()))
    }
    /// Puts a task in a cgroup of the cpu controller (`/a/b`), before it
    /// first runs. Models without group scheduling refuse.
    fn set_task_group(&mut self, t: TaskId, path: &str) -> Result<(), String> {
        let _ = t;
        Err(format!(
            "{}: no group scheduling (taskgroup {path:?})",
            self.name()
        ))
    }
    /// Sets a group's `cpu.shares`.
    fn set_group_shares(&mut self, path: &str, shares: u64) -> Result<(), String> {
        let _ = shares;
        Err(format!(
            "{}: no group scheduling (group {path:?})",
            self.name()
        ))
    }
    /// Sets (Some) or lifts (None) a group's CPU bandwidth limit:
    /// `quota_ns` of CPU time every `period_ns` (`cpu.cfs_quota_us` /
    /// `cpu.cfs_period_us`, v2 `cpu.max`).
    fn set_group_quota(
        &mut self,
        path: &str,
        quota_ns: Option<Ns>,
        period_ns: Ns,
    ) -> Result<(), String> {
        let _ = (quota_ns, period_ns);
        Err(format!(
            "{}: no CPU bandwidth control (group {path:?})",
            self.name()
        ))
    }
    /// Charges the running task of `cpu` for the time since it was last
    /// accounted (`update_curr`).
    fn update_curr(&mut self, cpu: usize, now: Ns);
    /// Puts a runnable task on `cpu`'s run queue (`enqueue_task`);
    /// `wakeup` when it comes back from sleeping.
    fn enqueue(&mut self, cpu: usize, t: TaskId, wakeup: bool, now: Ns);
    /// Takes a task off `cpu`'s run queue, running or not (`dequeue_task`);
    /// `sleep` when it blocks (DEQUEUE_SLEEP), not when it migrates or exits.
    fn dequeue(&mut self, cpu: usize, t: TaskId, sleep: bool, now: Ns);
    /// Chooses the next task to run on `cpu` and makes it current
    /// (`pick_next_task`).
    fn pick_next(&mut self, cpu: usize, now: Ns) -> Option<TaskId>;
    /// The current task stops running but stays runnable (`put_prev_task`).
    fn put_prev(&mut self, cpu: usize, t: TaskId, now: Ns);
    /// The running task calls `sched_yield` (`yield_task`); a resched follows.
    fn yield_task(&mut self, cpu: usize, t: TaskId, now: Ns) {
        let _ = (cpu, t, now);
    }
    /// `cpu` goes offline: the class lets go of what it keeps there besides
    /// the queued tasks the machine moves.
    fn cpu_offline(&mut self, cpu: usize) {
        let _ = cpu;
    }
    /// The periodic tick (`task_tick`); true when curr must be preempted.
    fn tick(&mut self, cpu: usize, now: Ns) -> bool;
    /// A task woke on `cpu`: should it preempt curr (`check_preempt_curr`)?
    fn check_preempt_wakeup(&mut self, cpu: usize, woken: TaskId, now: Ns) -> bool;
    /// Where a waking task goes (`select_task_rq`), among `allowed` CPUs.
    fn select_task_rq(&mut self, t: TaskId, prev: usize, allowed: &[usize]) -> usize;
    /// Tasks on `cpu`'s run queue, curr included.
    fn nr_running(&self, cpu: usize) -> usize;
    /// The task running on `cpu`.
    fn curr(&self, cpu: usize) -> Option<TaskId>;
    /// The tasks queued on `cpu`, the running one included.
    fn queued(&self, cpu: usize) -> Vec<TaskId>;
    /// Load balancing for `cpu` (`load_balance` from the periodic or the
    /// new-idle path): moves queued tasks from other CPUs to it and says
    /// which (task, from). `allowed(t, cpu)` tells whether `t` may run on
    /// `cpu`. Models with one global queue have nothing to do.
    fn balance(
        &mut self,
        cpu: usize,
        now: Ns,
        idle: bool,
        allowed: &dyn Fn(TaskId, usize) -> bool,
    ) -> Vec<(TaskId, usize)> {
        let _ = (cpu, now, idle, allowed);
        Vec::new()
    }
}
