//! The scheduling classes in priority order, as kernel/sched/core.c walks
//! them: RT ([`crate::sched::rt`]) above a fair class ([`crate::sched::fair`]). Every
//! hook goes to the class of the task it is about; `pick_next_task` asks
//! RT first.

use crate::engine::Ns;
use crate::sched::kernel::Policy;
use crate::sched::kernel::{allows, SchedClass, TaskId, WakeCtx, Work};
use crate::sched::rt::{Rt, RtBandwidth};

/// RT above fair class `F`.
pub struct Classes<F: SchedClass> {
    pub rt: Rt,
    pub fair: F,
    is_rt: Vec<bool>,
    policy: Vec<Policy>,
    tick_ns: Ns,
}

impl<F: SchedClass> Classes<F> {
    pub fn new(ncpus: usize, fair: F, bw: RtBandwidth, hz: u32) -> Classes<F> {
        Classes {
            rt: Rt::new(ncpus, bw),
            fair,
            is_rt: Vec::new(),
            policy: Vec::new(),
            tick_ns: 1_000_000_000 / hz.max(1) as u64,
        }
    }

    fn rt_task(&self, t: TaskId) -> bool {
        self.is_rt.get(t).copied().unwrap_or(false)
    }
}

impl<F: SchedClass> SchedClass for Classes<F> {
    fn name(&self) -> &'static str {
        self.fair.name()
    }

    fn tracks_pelt(&self) -> bool {
        self.fair.tracks_pelt()
    }

    fn timer_slack(&self) -> bool {
        self.fair.timer_slack()
    }

    fn set_nice(&mut self, t: TaskId, nice: i32) {
        if !self.rt_task(t) {
            self.fair.set_nice(t, nice);
        }
    }

    fn set_policy(&mut self, t: TaskId, policy: Policy) -> Result<(), crate::error::Error> {
        if self.is_rt.len() <= t {
            self.is_rt.resize(t + 1, false);
            self.policy.resize(t + 1, Policy::Other);
        }
        self.is_rt[t] = policy.is_rt();
        self.policy[t] = policy;
        if policy.is_rt() {
            self.rt.set_task(t, policy, 10)
        } else {
            self.fair.set_policy(t, policy)
        }
    }

    fn set_rt_priority(&mut self, t: TaskId, prio: i32) -> Result<(), crate::error::Error> {
        if !self.rt_task(t) {
            return Err(crate::error::Error::Invalid(format!(
                "task {t} is not SCHED_FIFO or SCHED_RR"
            )));
        }
        self.rt.set_task(t, self.policy[t], prio)
    }

    fn set_slice(&mut self, t: TaskId, slice_ns: Option<Ns>) -> Result<(), crate::error::Error> {
        self.fair.set_slice(t, slice_ns)
    }

    fn set_task_group(&mut self, t: TaskId, path: &str) -> Result<(), crate::error::Error> {
        if self.rt_task(t) {
            // XXX: RT group scheduling (CONFIG_RT_GROUP_SCHED) is not
            // modelled; the group only matters to the fair class.
            return Ok(());
        }
        self.fair.set_task_group(t, path)
    }

    fn set_group_shares(&mut self, path: &str, shares: u64) -> Result<(), crate::error::Error> {
        self.fair.set_group_shares(path, shares)
    }

    fn set_group_quota(
        &mut self,
        path: &str,
        quota_ns: Option<Ns>,
        period_ns: Ns,
    ) -> Result<(), crate::error::Error> {
        self.fair.set_group_quota(path, quota_ns, period_ns)
    }

    fn update_curr(&mut self, cpu: usize, now: Ns) {
        self.fair.update_curr(cpu, now);
    }

    fn enqueue(&mut self, cpu: usize, t: TaskId, wakeup: bool, now: Ns) {
        if self.rt_task(t) {
            self.rt.enqueue(cpu, t, false);
        } else {
            self.fair.enqueue(cpu, t, wakeup, now);
        }
    }

    fn dequeue(&mut self, cpu: usize, t: TaskId, sleep: bool, now: Ns) {
        if self.rt_task(t) {
            self.rt.dequeue(cpu, t, now);
        } else {
            self.fair.dequeue(cpu, t, sleep, now);
        }
    }

    fn pick_next(&mut self, cpu: usize, now: Ns) -> Option<TaskId> {
        let fair_waiting = self.fair.nr_running(cpu) > 0;
        match self.rt.pick_next(cpu, now, fair_waiting) {
            Some(t) => {
                self.fair.ran_other_than_fair(cpu);
                Some(t)
            }
            None => self.fair.pick_next(cpu, now),
        }
    }

    fn put_prev(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.rt_task(t) {
            self.rt.put_prev(cpu, t, now);
        } else {
            self.fair.put_prev(cpu, t, now);
        }
    }

    fn yield_task(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.rt_task(t) {
            // sched_yield of an RT task: to the tail of its list.
            self.rt.yield_curr(cpu, t);
        } else {
            self.fair.yield_task(cpu, t, now);
        }
    }

    fn ran_other_than_fair(&mut self, cpu: usize) {
        self.fair.ran_other_than_fair(cpu);
    }

    fn cpu_offline(&mut self, cpu: usize) {
        self.fair.cpu_offline(cpu);
    }

    fn cpu_online(&mut self, cpu: usize) {
        self.fair.cpu_online(cpu);
    }

    fn set_allowed(&mut self, t: TaskId, cpus: &[usize]) {
        self.fair.set_allowed(t, cpus);
    }

    /// Both classes' work added up (a pick that RT passes on to the fair
    /// class counts in both).
    fn work(&self) -> Work {
        self.rt.work() + self.fair.work()
    }

    fn tick(&mut self, cpu: usize, now: Ns) -> bool {
        match self.rt.curr(cpu) {
            Some(_) => {
                let fair_waiting = self.fair.nr_running(cpu) > 0;
                self.rt.tick(cpu, now, self.tick_ns, fair_waiting)
            }
            None => {
                // A fair task runs (or none): RT may have been let back in.
                let resched = self.fair.tick(cpu, now);
                resched || self.rt.may_run(cpu, now)
            }
        }
    }

    fn check_preempt_wakeup(&mut self, cpu: usize, woken: TaskId, now: Ns) -> bool {
        match (self.rt.curr(cpu), self.rt_task(woken)) {
            (Some(c), true) => self.rt.prio(woken) > self.rt.prio(c),
            (Some(_), false) => false,
            (None, true) => {
                self.fair.update_curr(cpu, now);
                self.rt.may_run(cpu, now) || self.fair.curr(cpu).is_none()
            }
            (None, false) => self.fair.check_preempt_wakeup(cpu, woken, now),
        }
    }

    fn select_task_rq(
        &mut self,
        t: TaskId,
        prev: usize,
        allowed: &[usize],
        wake: &WakeCtx,
    ) -> usize {
        if !self.rt_task(t) {
            return self.fair.select_task_rq(t, prev, allowed, wake);
        }
        // cpupri: prev unless an equal or higher RT task holds it; then the
        // CPU running the lowest priority (idle below fair below RT).
        let p = self.rt.prio(t);
        let level = |s: &Self, c: usize| -> i64 {
            if let Some(r) = s.rt.curr(c) {
                s.rt.prio(r) as i64
            } else if s.fair.curr(c).is_some() {
                0
            } else {
                -1
            }
        };
        if allows(allowed, prev) && level(self, prev) < p as i64 {
            return prev;
        }
        *allowed
            .iter()
            .min_by_key(|&&c| (level(self, c), self.rt.nr_running(c), c != prev, c))
            .unwrap_or(&prev)
    }

    fn nr_running(&self, cpu: usize) -> usize {
        self.rt.nr_running(cpu) + self.fair.nr_running(cpu)
    }

    fn curr(&self, cpu: usize) -> Option<TaskId> {
        self.rt.curr(cpu).or_else(|| self.fair.curr(cpu))
    }

    fn queued(&self, cpu: usize) -> Vec<TaskId> {
        let mut q = self.rt.queued(cpu);
        q.extend(self.fair.queued(cpu));
        q
    }

    fn fair_rq(&self, cpu: usize) -> (u64, u64, bool) {
        self.fair.fair_rq(cpu)
    }

    fn take_root_reweigh(&mut self) -> Option<crate::sched::pelt::Reweigh> {
        self.fair.take_root_reweigh()
    }

    fn balance(
        &mut self,
        cpu: usize,
        now: Ns,
        idle: bool,
        allowed: &dyn Fn(TaskId, usize) -> bool,
        pelt: Option<&crate::sched::pelt::Pelt>,
    ) -> Vec<(TaskId, usize)> {
        let mut moved = Vec::new();
        if self.rt.curr(cpu).is_none() {
            moved.extend(self.rt.pull(cpu, allowed));
        }
        moved.extend(self.fair.balance(cpu, now, idle, allowed, pelt));
        moved
    }

    fn set_vcpu_pack_util(&mut self, limit: Option<u64>) {
        self.fair.set_vcpu_pack_util(limit)
    }
    fn set_seed(&mut self, seed: u64) {
        self.fair.set_seed(seed)
    }
    fn take_active_balance(&mut self) -> Option<(TaskId, usize, usize)> {
        self.fair.take_active_balance()
    }

    /// The fair task's, while no RT task runs above it.
    fn update_misfit_status(
        &mut self,
        cpu: usize,
        allowed: &dyn Fn(TaskId, usize) -> bool,
        pelt: Option<&crate::sched::pelt::Pelt>,
    ) -> bool {
        let misfit = self.fair.update_misfit_status(cpu, allowed, pelt);
        misfit && self.rt.curr(cpu).is_none()
    }
}
