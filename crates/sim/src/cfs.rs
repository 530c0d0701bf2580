//! CFS as in Linux 2.6.32–3.0, the papers' kernels (kernel/sched_fair.c of
//! that era), behind the [`SchedClass`] hooks. So far: one flat run queue
//! per CPU (no group scheduling, bandwidth or periodic balancing yet).
//!
//! - Load weight from nice (`prio_to_weight`), vruntime advances as
//!   `delta_exec · NICE_0_LOAD / weight` (`calc_delta_fair`).
//! - `sched_period = max(sched_latency, nr_running · min_granularity)`;
//!   a task's ideal slice is `period · weight / rq_load` (`sched_slice`).
//! - Tunables scale by `1 + ilog2(min(ncpus, 8))`
//!   (`SCHED_TUNABLESCALING_LOG`, `update_sysctl`): latency 6 ms,
//!   min granularity 0.75 ms, wakeup granularity 1 ms, all times that.
//! - Tick (`check_preempt_tick`): resched when curr ran past its ideal
//!   slice, or (after min granularity) when the leftmost task's vruntime
//!   trails curr's by more than that slice.
//! - Wake-up: sleeper credit (`place_entity` with GENTLE_FAIR_SLEEPERS:
//!   vruntime ≥ min_vruntime − latency/2) and `check_preempt_wakeup`:
//!   preempt when curr's vruntime leads the woken one's by more than the
//!   wakeup granularity converted to the woken task's virtual time
//!   (`wakeup_gran`).
//! - `select_task_rq`: the previous CPU if idle, else an idle allowed CPU,
//!   else the allowed CPU with the least load.

use crate::engine::Ns;
use crate::kernel::{SchedClass, TaskId};
use corral_core::share::{nice_to_weight, NICE_0_WEIGHT};
use std::collections::BTreeSet;

/// Tunables of the era, before scaling (kernel/sched_fair.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tunables {
    pub sched_latency_ns: Ns,
    pub min_granularity_ns: Ns,
    pub wakeup_granularity_ns: Ns,
}

impl Tunables {
    /// The defaults scaled for `ncpus` as the kernel does at boot.
    pub fn for_cpus(ncpus: usize) -> Tunables {
        let factor = 1 + (ncpus.clamp(1, 8) as u64).ilog2() as u64;
        Tunables {
            sched_latency_ns: 6_000_000 * factor,
            min_granularity_ns: 750_000 * factor,
            wakeup_granularity_ns: 1_000_000 * factor,
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Entity {
    weight: u64,
    vruntime: u64,
    /// When it last started running (or was last accounted).
    exec_start: Ns,
    sum_exec: Ns,
    /// `sum_exec` when it was last picked.
    prev_sum_exec: Ns,
    on_rq: bool,
    cpu: usize,
}

#[derive(Debug, Clone, Default)]
struct RunQueue {
    /// Waiting entities by (vruntime, id); curr is not in it.
    tree: BTreeSet<(u64, TaskId)>,
    curr: Option<TaskId>,
    /// Sum of the weights of the queued entities, curr included.
    load: u64,
    nr_running: usize,
    min_vruntime: u64,
}

/// CFS of Linux 2.6.32–3.0.
#[derive(Debug, Clone)]
pub struct Cfs {
    tun: Tunables,
    rqs: Vec<RunQueue>,
    se: Vec<Entity>,
}

impl Cfs {
    pub fn new(ncpus: usize) -> Cfs {
        Cfs {
            tun: Tunables::for_cpus(ncpus),
            rqs: vec![RunQueue::default(); ncpus],
            se: Vec::new(),
        }
    }

    fn entity(&mut self, t: TaskId) -> &mut Entity {
        if self.se.len() <= t {
            self.se.resize(t + 1, Entity::default());
        }
        &mut self.se[t]
    }

    fn period(&self, nr: usize) -> Ns {
        self.tun
            .sched_latency_ns
            .max(nr as u64 * self.tun.min_granularity_ns)
    }

    /// `sched_slice`: the wall time `t` should get in one period.
    fn slice(&self, cpu: usize, t: TaskId) -> Ns {
        let rq = &self.rqs[cpu];
        let load = rq.load.max(1);
        self.period(rq.nr_running.max(1)) * self.se[t].weight / load
    }

    fn update_min_vruntime(&mut self, cpu: usize) {
        let rq = &self.rqs[cpu];
        let mut v = rq.min_vruntime;
        let curr = rq.curr.map(|c| self.se[c].vruntime);
        let left = rq.tree.first().map(|&(v, _)| v);
        let target = match (curr, left) {
            (Some(c), Some(l)) => c.min(l),
            (Some(c), None) => c,
            (None, Some(l)) => l,
            (None, None) => v,
        };
        v = v.max(target);
        self.rqs[cpu].min_vruntime = v;
    }
}

impl SchedClass for Cfs {
    fn name(&self) -> &'static str {
        "cfs-2.6.32"
    }

    fn set_nice(&mut self, t: TaskId, nice: i32) {
        self.entity(t).weight = nice_to_weight(nice);
    }

    fn update_curr(&mut self, cpu: usize, now: Ns) {
        let Some(c) = self.rqs[cpu].curr else { return };
        let se = &mut self.se[c];
        let delta = now.saturating_sub(se.exec_start);
        se.exec_start = now;
        se.sum_exec += delta;
        // calc_delta_fair: delta · NICE_0_LOAD / weight.
        se.vruntime += delta * NICE_0_WEIGHT / se.weight.max(1);
        self.update_min_vruntime(cpu);
    }

    fn enqueue(&mut self, cpu: usize, t: TaskId, wakeup: bool, now: Ns) {
        let min_v = self.rqs[cpu].min_vruntime;
        let half_latency = self.tun.sched_latency_ns / 2;
        let se = self.entity(t);
        if se.weight == 0 {
            se.weight = NICE_0_WEIGHT;
        }
        if wakeup {
            // place_entity with GENTLE_FAIR_SLEEPERS: a sleeper is credited
            // at most half a latency period.
            se.vruntime = se.vruntime.max(min_v.saturating_sub(half_latency));
        } else {
            se.vruntime = se.vruntime.max(min_v);
        }
        se.on_rq = true;
        se.cpu = cpu;
        se.exec_start = now;
        let (v, w) = (se.vruntime, se.weight);
        let rq = &mut self.rqs[cpu];
        rq.tree.insert((v, t));
        rq.load += w;
        rq.nr_running += 1;
    }

    fn dequeue(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.rqs[cpu].curr == Some(t) {
            self.update_curr(cpu, now);
            self.rqs[cpu].curr = None;
        } else {
            let v = self.se[t].vruntime;
            self.rqs[cpu].tree.remove(&(v, t));
        }
        let se = &mut self.se[t];
        se.on_rq = false;
        let w = se.weight;
        let rq = &mut self.rqs[cpu];
        rq.load -= w;
        rq.nr_running -= 1;
        self.update_min_vruntime(cpu);
    }

    fn pick_next(&mut self, cpu: usize, now: Ns) -> Option<TaskId> {
        let &(v, t) = self.rqs[cpu].tree.first()?;
        self.rqs[cpu].tree.remove(&(v, t));
        self.rqs[cpu].curr = Some(t);
        let se = &mut self.se[t];
        se.exec_start = now;
        se.prev_sum_exec = se.sum_exec;
        Some(t)
    }

    fn put_prev(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.rqs[cpu].curr != Some(t) {
            return;
        }
        self.update_curr(cpu, now);
        self.rqs[cpu].curr = None;
        let v = self.se[t].vruntime;
        self.rqs[cpu].tree.insert((v, t));
    }

    fn tick(&mut self, cpu: usize, now: Ns) -> bool {
        self.update_curr(cpu, now);
        let Some(c) = self.rqs[cpu].curr else {
            return false;
        };
        if self.rqs[cpu].nr_running <= 1 {
            return false;
        }
        // check_preempt_tick (2.6.32).
        let ideal = self.slice(cpu, c);
        let se = &self.se[c];
        let ran = se.sum_exec - se.prev_sum_exec;
        if ran > ideal {
            return true;
        }
        if ran < self.tun.min_granularity_ns {
            return false;
        }
        match self.rqs[cpu].tree.first() {
            Some(&(lv, _)) => se.vruntime.saturating_sub(lv) > ideal,
            None => false,
        }
    }

    fn check_preempt_wakeup(&mut self, cpu: usize, woken: TaskId, now: Ns) -> bool {
        self.update_curr(cpu, now);
        let Some(c) = self.rqs[cpu].curr else {
            return true;
        };
        let w = &self.se[woken];
        // wakeup_gran: the granularity in the woken entity's virtual time.
        let gran = self.tun.wakeup_granularity_ns * NICE_0_WEIGHT / w.weight.max(1);
        let vdiff = self.se[c].vruntime as i128 - w.vruntime as i128;
        vdiff > gran as i128
    }

    fn select_task_rq(&mut self, _t: TaskId, prev: usize, allowed: &[usize]) -> usize {
        if allowed.contains(&prev) && self.rqs[prev].nr_running == 0 {
            return prev;
        }
        if let Some(&idle) = allowed.iter().find(|&&c| self.rqs[c].nr_running == 0) {
            return idle;
        }
        *allowed
            .iter()
            .min_by_key(|&&c| (self.rqs[c].load, c != prev, c))
            .unwrap_or(&prev)
    }

    fn nr_running(&self, cpu: usize) -> usize {
        self.rqs[cpu].nr_running
    }

    fn curr(&self, cpu: usize) -> Option<TaskId> {
        self.rqs[cpu].curr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunables_scale_with_cpus() {
        assert_eq!(Tunables::for_cpus(1).sched_latency_ns, 6_000_000);
        assert_eq!(Tunables::for_cpus(2).sched_latency_ns, 12_000_000);
        assert_eq!(Tunables::for_cpus(4).min_granularity_ns, 2_250_000);
        assert_eq!(Tunables::for_cpus(64).wakeup_granularity_ns, 4_000_000);
    }

    #[test]
    fn vruntime_advances_inversely_to_weight() {
        let mut cfs = Cfs::new(1);
        cfs.set_nice(0, 0);
        cfs.set_nice(1, 5);
        cfs.enqueue(0, 0, false, 0);
        assert_eq!(cfs.pick_next(0, 0), Some(0));
        cfs.update_curr(0, 1_000_000);
        assert_eq!(cfs.se[0].vruntime, 1_000_000);
        cfs.put_prev(0, 0, 1_000_000);
        cfs.dequeue(0, 0, 1_000_000);
        cfs.enqueue(0, 1, false, 1_000_000);
        cfs.pick_next(0, 1_000_000);
        let v0 = cfs.se[1].vruntime;
        cfs.update_curr(0, 2_000_000);
        // 1 ms at weight 335 is 1024/335 ms of vruntime.
        assert_eq!(cfs.se[1].vruntime - v0, 1_000_000 * 1024 / 335);
    }
}
