//! CFS as in Linux 2.6.32–3.0, the papers' kernels (kernel/sched_fair.c of
//! that era), behind the [`SchedClass`] hooks.
//!
//! - Load weight from nice (`prio_to_weight`); vruntime advances as
//!   `delta_exec · NICE_0_LOAD / weight` (`calc_delta_fair`).
//! - `sched_period = max(sched_latency, nr_running · min_granularity)`;
//!   an entity's ideal slice is `period · weight / cfs_rq load`
//!   (`sched_slice`, per level).
//! - Tunables scale by `1 + ilog2(min(ncpus, 8))`
//!   (`SCHED_TUNABLESCALING_LOG`): latency 6 ms, min granularity 0.75 ms,
//!   wakeup granularity 1 ms, all times that.
//! - Tick (`check_preempt_tick`, at every level): resched when the entity
//!   ran past its ideal slice, or (after min granularity) when the
//!   leftmost entity's vruntime trails it by more than that slice.
//! - Wake-up: sleeper credit (`place_entity`, GENTLE_FAIR_SLEEPERS:
//!   vruntime ≥ min_vruntime − latency/2) and `check_preempt_wakeup` on
//!   the entities that share a run queue (`find_matching_se`): preempt when
//!   curr's vruntime leads by more than the wakeup granularity in the
//!   woken entity's virtual time (`wakeup_gran`).
//! - **Group scheduling**: a task group has a run queue on every CPU and,
//!   in its parent's run queue there, an entity whose weight is the group's
//!   share of its `shares` by that CPU's load:
//!   `weight = shares · load(cpu) / Σ load(all CPUs)`, at least MIN_SHARES
//!   (XXX: 2.6.32's `tg_shares_up` aggregates periodically; this updates on
//!   every enqueue and dequeue of the group on that CPU, as 2.6.38+'s
//!   `update_cfs_shares` does with instantaneous loads). Picking descends
//!   from the root, leftmost entity at each level.
//! - `select_task_rq`: the previous CPU if idle, else an idle allowed CPU,
//!   else the allowed CPU with the least root load.

use crate::engine::Ns;
use crate::kernel::{SchedClass, TaskId};
use corral_core::share::{nice_to_weight, MIN_SHARES, NICE_0_WEIGHT};
use std::collections::{BTreeSet, HashMap};

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

type EntityId = usize;
type RqId = usize;
type GroupId = usize;

#[derive(Debug, Clone, Default)]
struct Entity {
    weight: u64,
    vruntime: u64,
    exec_start: Ns,
    sum_exec: Ns,
    prev_sum_exec: Ns,
    on_rq: bool,
    /// The run queue it is queued on.
    rq: RqId,
    /// For a group entity: the group's run queue it stands for.
    my_rq: Option<RqId>,
    /// For a task's entity: the task.
    task: Option<TaskId>,
}

#[derive(Debug, Clone, Default)]
struct CfsRq {
    tree: BTreeSet<(u64, EntityId)>,
    curr: Option<EntityId>,
    load: u64,
    nr_running: usize,
    min_vruntime: u64,
    /// The entity standing for this run queue in the parent's (None: root).
    se: Option<EntityId>,
    group: GroupId,
}

#[derive(Debug, Clone)]
struct Group {
    shares: u64,
    /// Run queue per CPU.
    rqs: Vec<RqId>,
}

/// CFS of Linux 2.6.32–3.0, with group scheduling.
#[derive(Debug, Clone)]
pub struct Cfs {
    tun: Tunables,
    ncpus: usize,
    entities: Vec<Entity>,
    rqs: Vec<CfsRq>,
    groups: Vec<Group>,
    by_path: HashMap<String, GroupId>,
    /// Task → (its entity, its group).
    tasks: Vec<(EntityId, GroupId)>,
    /// The task running on each CPU.
    running: Vec<Option<TaskId>>,
}

impl Cfs {
    pub fn new(ncpus: usize) -> Cfs {
        let mut cfs = Cfs {
            tun: Tunables::for_cpus(ncpus),
            ncpus,
            entities: Vec::new(),
            rqs: Vec::new(),
            groups: Vec::new(),
            by_path: HashMap::new(),
            tasks: Vec::new(),
            running: vec![None; ncpus],
        };
        let root: Vec<RqId> = (0..ncpus)
            .map(|_| {
                cfs.rqs.push(CfsRq::default());
                cfs.rqs.len() - 1
            })
            .collect();
        cfs.groups.push(Group {
            shares: NICE_0_WEIGHT,
            rqs: root,
        });
        cfs.by_path.insert("/".into(), 0);
        cfs
    }

    /// The group at `path` (`/a/b`), made with 1024 shares if new.
    fn group(&mut self, path: &str) -> GroupId {
        let path = if path.is_empty() {
            "/"
        } else {
            path.trim_end_matches('/')
        };
        let path = if path.is_empty() { "/" } else { path };
        if let Some(&g) = self.by_path.get(path) {
            return g;
        }
        let parent_path = match path.rfind('/') {
            Some(0) | None => "/".to_string(),
            Some(i) => path[..i].to_string(),
        };
        let parent = self.group(&parent_path);
        let id = self.groups.len();
        let mut rqs = Vec::new();
        for cpu in 0..self.ncpus {
            let se = self.entities.len();
            self.entities.push(Entity {
                weight: NICE_0_WEIGHT,
                rq: self.groups[parent].rqs[cpu],
                ..Default::default()
            });
            self.rqs.push(CfsRq {
                se: Some(se),
                group: id,
                ..Default::default()
            });
            let rq = self.rqs.len() - 1;
            self.entities[se].my_rq = Some(rq);
            rqs.push(rq);
        }
        self.groups.push(Group {
            shares: NICE_0_WEIGHT,
            rqs,
        });
        self.by_path.insert(path.to_string(), id);
        id
    }

    fn period(&self, nr: usize) -> Ns {
        self.tun
            .sched_latency_ns
            .max(nr as u64 * self.tun.min_granularity_ns)
    }

    fn slice(&self, e: EntityId) -> Ns {
        let rq = &self.rqs[self.entities[e].rq];
        self.period(rq.nr_running.max(1)) * self.entities[e].weight / rq.load.max(1)
    }

    fn update_min_vruntime(&mut self, rq: RqId) {
        let r = &self.rqs[rq];
        let curr = r.curr.map(|c| self.entities[c].vruntime);
        let left = r.tree.first().map(|&(v, _)| v);
        let target = match (curr, left) {
            (Some(c), Some(l)) => c.min(l),
            (Some(c), None) => c,
            (None, Some(l)) => l,
            (None, None) => r.min_vruntime,
        };
        self.rqs[rq].min_vruntime = r.min_vruntime.max(target);
    }

    /// The entities from a task up to its root-level ancestor.
    fn path_up(&self, e: EntityId) -> Vec<EntityId> {
        let mut out = vec![e];
        let mut cur = e;
        while let Some(se) = self.rqs[self.entities[cur].rq].se {
            out.push(se);
            cur = se;
        }
        out
    }

    /// Charges the running entities of `cpu`, bottom up.
    fn update_curr_cpu(&mut self, cpu: usize, now: Ns) {
        let Some(t) = self.running[cpu] else { return };
        for e in self.path_up(self.tasks[t].0) {
            let en = &mut self.entities[e];
            let delta = now.saturating_sub(en.exec_start);
            en.exec_start = now;
            en.sum_exec += delta;
            en.vruntime += delta * NICE_0_WEIGHT / en.weight.max(1);
            let rq = en.rq;
            self.update_min_vruntime(rq);
        }
    }

    /// Recomputes a group entity's weight from its run queue's share of
    /// the group's load over all CPUs.
    fn update_shares(&mut self, rq: RqId) {
        let Some(se) = self.rqs[rq].se else { return };
        let g = &self.groups[self.rqs[rq].group];
        let total: u64 = g.rqs.iter().map(|&r| self.rqs[r].load).sum();
        let local = self.rqs[rq].load;
        // An idle group keeps its full shares (it is not queued anyway).
        let w = (g.shares * local)
            .checked_div(total)
            .map_or(g.shares, |w| w.clamp(MIN_SHARES, g.shares.max(MIN_SHARES)));
        let old = self.entities[se].weight;
        if old != w {
            self.entities[se].weight = w;
            if self.entities[se].on_rq {
                let parent = self.entities[se].rq;
                self.rqs[parent].load = self.rqs[parent].load + w - old;
            }
        }
    }

    fn enqueue_entity(&mut self, rq: RqId, e: EntityId, wakeup: bool, now: Ns) {
        let min_v = self.rqs[rq].min_vruntime;
        let half_latency = self.tun.sched_latency_ns / 2;
        let en = &mut self.entities[e];
        en.vruntime = if wakeup {
            en.vruntime.max(min_v.saturating_sub(half_latency))
        } else {
            en.vruntime.max(min_v)
        };
        en.on_rq = true;
        en.rq = rq;
        en.exec_start = now;
        let (v, w) = (en.vruntime, en.weight);
        let r = &mut self.rqs[rq];
        r.tree.insert((v, e));
        r.load += w;
        r.nr_running += 1;
    }

    fn dequeue_entity(&mut self, rq: RqId, e: EntityId) {
        let r = &mut self.rqs[rq];
        if r.curr == Some(e) {
            r.curr = None;
        } else {
            r.tree.remove(&(self.entities[e].vruntime, e));
        }
        r.load -= self.entities[e].weight;
        r.nr_running -= 1;
        self.entities[e].on_rq = false;
        self.update_min_vruntime(rq);
    }

    /// Puts the task into group `path` (before it first runs).
    fn assign(&mut self, t: TaskId, path: &str) {
        let g = self.group(path);
        self.ensure_task(t);
        self.tasks[t].1 = g;
    }

    fn ensure_task(&mut self, t: TaskId) {
        while self.tasks.len() <= t {
            let e = self.entities.len();
            self.entities.push(Entity {
                weight: NICE_0_WEIGHT,
                task: Some(self.tasks.len()),
                ..Default::default()
            });
            self.tasks.push((e, 0));
        }
    }
}

impl SchedClass for Cfs {
    fn name(&self) -> &'static str {
        "cfs-2.6.32"
    }

    fn set_nice(&mut self, t: TaskId, nice: i32) {
        self.ensure_task(t);
        let e = self.tasks[t].0;
        self.entities[e].weight = nice_to_weight(nice);
    }

    fn set_task_group(&mut self, t: TaskId, path: &str) -> Result<(), String> {
        self.assign(t, path);
        Ok(())
    }

    fn set_group_shares(&mut self, path: &str, shares: u64) -> Result<(), String> {
        let g = self.group(path);
        self.groups[g].shares = shares.max(MIN_SHARES);
        Ok(())
    }

    fn update_curr(&mut self, cpu: usize, now: Ns) {
        self.update_curr_cpu(cpu, now);
    }

    fn enqueue(&mut self, cpu: usize, t: TaskId, wakeup: bool, now: Ns) {
        self.ensure_task(t);
        let (mut e, g) = self.tasks[t];
        let first = self.groups[g].rqs[cpu];
        let mut rq = first;
        // Queue the task, then each group entity that was not queued yet.
        loop {
            self.enqueue_entity(rq, e, wakeup, now);
            match self.rqs[rq].se {
                Some(se) if !self.entities[se].on_rq => {
                    e = se;
                    rq = self.entities[se].rq;
                }
                _ => break,
            }
        }
        self.update_shares_up(first);
    }

    fn dequeue(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.running[cpu] == Some(t) {
            self.update_curr_cpu(cpu, now);
            self.running[cpu] = None;
            // Curr entities above it stay curr until put back; clear them.
            for e in self.path_up(self.tasks[t].0).into_iter().skip(1) {
                let rq = self.entities[e].rq;
                if self.rqs[rq].curr == Some(e) {
                    self.rqs[rq].curr = None;
                    let v = self.entities[e].vruntime;
                    self.rqs[rq].tree.insert((v, e));
                }
            }
        }
        let mut e = self.tasks[t].0;
        let first = self.entities[e].rq;
        loop {
            let rq = self.entities[e].rq;
            self.dequeue_entity(rq, e);
            match self.rqs[rq].se {
                Some(se) if self.rqs[rq].nr_running == 0 && self.entities[se].on_rq => e = se,
                _ => break,
            }
        }
        self.update_shares_up(first);
    }

    fn pick_next(&mut self, cpu: usize, now: Ns) -> Option<TaskId> {
        let mut rq = self.groups[0].rqs[cpu];
        loop {
            let &(v, e) = self.rqs[rq].tree.first()?;
            self.rqs[rq].tree.remove(&(v, e));
            self.rqs[rq].curr = Some(e);
            let en = &mut self.entities[e];
            en.exec_start = now;
            en.prev_sum_exec = en.sum_exec;
            match en.my_rq {
                Some(child) => rq = child,
                None => break,
            }
        }
        let e = self.rqs[rq].curr?;
        let t = self.entities[e].task?;
        self.running[cpu] = Some(t);
        Some(t)
    }

    fn put_prev(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.running[cpu] != Some(t) {
            return;
        }
        self.update_curr_cpu(cpu, now);
        self.running[cpu] = None;
        for e in self.path_up(self.tasks[t].0) {
            let rq = self.entities[e].rq;
            if self.rqs[rq].curr == Some(e) {
                self.rqs[rq].curr = None;
                let v = self.entities[e].vruntime;
                self.rqs[rq].tree.insert((v, e));
            }
        }
    }

    fn tick(&mut self, cpu: usize, now: Ns) -> bool {
        self.update_curr_cpu(cpu, now);
        let Some(t) = self.running[cpu] else {
            return false;
        };
        // entity_tick re-weighs the running task's groups on this CPU.
        let rq = self.entities[self.tasks[t].0].rq;
        self.update_shares_up(rq);
        for e in self.path_up(self.tasks[t].0) {
            let rq = &self.rqs[self.entities[e].rq];
            if rq.nr_running <= 1 {
                continue;
            }
            let ideal = self.slice(e);
            let en = &self.entities[e];
            let ran = en.sum_exec - en.prev_sum_exec;
            if ran > ideal {
                return true;
            }
            if ran < self.tun.min_granularity_ns {
                continue;
            }
            if let Some(&(lv, _)) = rq.tree.first() {
                if en.vruntime.saturating_sub(lv) > ideal {
                    return true;
                }
            }
        }
        false
    }

    fn check_preempt_wakeup(&mut self, cpu: usize, woken: TaskId, now: Ns) -> bool {
        self.update_curr_cpu(cpu, now);
        let Some(c) = self.running[cpu] else {
            return true;
        };
        // find_matching_se: climb both until they share a run queue.
        let (up_c, up_w) = (
            self.path_up(self.tasks[c].0),
            self.path_up(self.tasks[woken].0),
        );
        for &ce in &up_c {
            if let Some(&we) = up_w
                .iter()
                .find(|&&we| self.entities[we].rq == self.entities[ce].rq)
            {
                if we == ce {
                    return false;
                }
                let gran = self.tun.wakeup_granularity_ns * NICE_0_WEIGHT
                    / self.entities[we].weight.max(1);
                let vdiff = self.entities[ce].vruntime as i128 - self.entities[we].vruntime as i128;
                return vdiff > gran as i128;
            }
        }
        false
    }

    fn select_task_rq(&mut self, _t: TaskId, prev: usize, allowed: &[usize]) -> usize {
        let root = |c: usize| &self.rqs[self.groups[0].rqs[c]];
        if allowed.contains(&prev) && root(prev).nr_running == 0 {
            return prev;
        }
        if let Some(&idle) = allowed.iter().find(|&&c| root(c).nr_running == 0) {
            return idle;
        }
        *allowed
            .iter()
            .min_by_key(|&&c| (root(c).load, c != prev, c))
            .unwrap_or(&prev)
    }

    fn nr_running(&self, cpu: usize) -> usize {
        self.rqs[self.groups[0].rqs[cpu]].nr_running
    }

    fn curr(&self, cpu: usize) -> Option<TaskId> {
        self.running[cpu]
    }

    fn queued(&self, cpu: usize) -> Vec<TaskId> {
        self.tasks_on(cpu)
    }

    /// Paper 000's model of 2.6.32's `load_balance`, pair-wise: `cpu` pulls
    /// from the busiest queue.
    ///
    /// ```text
    ///   L_k        = Σ W(t) over queue k (the root run queue's load)
    ///   L_avg      = Σ_k L_k / ncpus
    ///   L_imbal    = min(L_busiest − L_avg, L_busiest − L_busiest / nr_busiest, L_avg − L_cpu)
    ///   move t while L_imbal ≥ W(t)/2, L_imbal −= W(t)
    /// ```
    ///
    /// A task moves only if it is not running, may run on `cpu`, and is not
    /// cache-hot (ran within `sysctl_sched_migration_cost`, 0.5 ms). Tasks
    /// are tried in the busiest queue's order, leftmost first (XXX: the
    /// kernel walks its task list tail first; for these rules the order
    /// only decides which of equal tasks moves). With groups, a task's W is
    /// its share of its groups' entity weight at the root, so it is
    /// `W(task) · Π level weight / level load`.
    fn balance(
        &mut self,
        cpu: usize,
        now: Ns,
        idle: bool,
        allowed: &dyn Fn(TaskId, usize) -> bool,
    ) -> Vec<(TaskId, usize)> {
        let root = |c: usize| self.groups[0].rqs[c];
        let load = |s: &Self, c: usize| s.rqs[root(c)].load;
        let n = self.ncpus as u64;
        let total: u64 = (0..self.ncpus).map(|c| load(self, c)).sum();
        let avg = total / n.max(1);
        let Some(busiest) = (0..self.ncpus)
            .filter(|&c| c != cpu && self.rqs[root(c)].nr_running > 1)
            .max_by_key(|&c| (load(self, c), std::cmp::Reverse(c)))
        else {
            return Vec::new();
        };
        let lb = load(self, busiest);
        let nr_b = self.tasks_on(busiest).len().max(1) as u64;
        let lk = load(self, cpu);
        if lb <= avg || lk >= avg {
            return Vec::new();
        }
        let mut imbal = (lb - avg).min(lb - lb / nr_b).min(avg - lk) as i64;
        if idle && imbal == 0 {
            imbal = (lb / nr_b) as i64;
        }
        let mut moved = Vec::new();
        let candidates: Vec<TaskId> = self
            .tasks_on(busiest)
            .into_iter()
            .filter(|&t| self.running[busiest] != Some(t))
            .collect();
        for t in candidates {
            let w = self.root_weight(t) as i64;
            if imbal < w / 2 || w == 0 {
                continue;
            }
            let e = self.tasks[t].0;
            let hot = now.saturating_sub(self.entities[e].exec_start) < MIGRATION_COST_NS
                && self.entities[e].sum_exec > 0;
            if !allowed(t, cpu) || hot {
                continue;
            }
            // set_task_cpu (2.6.32) carries vruntime across queues relative
            // to each queue's min_vruntime.
            let g = self.tasks[t].1;
            let src_min = self.rqs[self.groups[g].rqs[busiest]].min_vruntime;
            self.dequeue(busiest, t, now);
            let dst_min = self.rqs[self.groups[g].rqs[cpu]].min_vruntime;
            let v = &mut self.entities[e].vruntime;
            *v = v.saturating_sub(src_min) + dst_min;
            self.enqueue(cpu, t, false, now);
            imbal -= w;
            moved.push((t, busiest));
            if imbal <= 0 {
                break;
            }
        }
        moved
    }
}

/// `sysctl_sched_migration_cost`: a task that ran this recently is
/// cache-hot and stays (kernel/sched.c, 2.6.32).
const MIGRATION_COST_NS: Ns = 500_000;

impl Cfs {
    /// The tasks queued on `cpu`, running one included, in queue order.
    fn tasks_on(&self, cpu: usize) -> Vec<TaskId> {
        let mut out = Vec::new();
        let mut stack = vec![self.groups[0].rqs[cpu]];
        while let Some(rq) = stack.pop() {
            let r = &self.rqs[rq];
            let mut ents: Vec<EntityId> = r
                .curr
                .into_iter()
                .chain(r.tree.iter().map(|&(_, e)| e))
                .collect();
            ents.sort_by_key(|&e| self.entities[e].vruntime);
            for e in ents {
                match self.entities[e].my_rq {
                    Some(child) => stack.push(child),
                    None => out.extend(self.entities[e].task),
                }
            }
        }
        out
    }

    /// A task's weight seen from the root: its share of each level.
    fn root_weight(&self, t: TaskId) -> u64 {
        let mut w = self.entities[self.tasks[t].0].weight as u128;
        for e in self.path_up(self.tasks[t].0) {
            let rq = &self.rqs[self.entities[e].rq];
            if let Some(se) = rq.se {
                w = w * self.entities[se].weight as u128 / rq.load.max(1) as u128;
            }
        }
        w as u64
    }
}

impl Cfs {
    /// Re-weighs the group entities from run queue `rq` up to the root: a
    /// change of load on one level changes the weight of every ancestor.
    fn update_shares_up(&mut self, rq: RqId) {
        let mut rq = rq;
        while let Some(se) = self.rqs[rq].se {
            self.update_shares(rq);
            rq = self.entities[se].rq;
        }
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
        cfs.set_nice(0, 5);
        cfs.enqueue(0, 0, false, 0);
        assert_eq!(cfs.pick_next(0, 0), Some(0));
        let v0 = cfs.entities[cfs.tasks[0].0].vruntime;
        cfs.update_curr(0, 1_000_000);
        // 1 ms at weight 335 is 1024/335 ms of vruntime.
        assert_eq!(
            cfs.entities[cfs.tasks[0].0].vruntime - v0,
            1_000_000 * 1024 / 335
        );
    }

    #[test]
    fn groups_nest_and_share_by_load() {
        let mut cfs = Cfs::new(2);
        cfs.set_group_shares("/a", 1000).unwrap();
        cfs.set_task_group(0, "/a/b").unwrap();
        cfs.set_task_group(1, "/a").unwrap();
        cfs.enqueue(0, 0, false, 0);
        cfs.enqueue(1, 1, false, 0);
        assert_eq!(cfs.pick_next(0, 0), Some(0));
        assert_eq!(cfs.pick_next(1, 0), Some(1));
        // Shares are updated lazily per CPU, and at each tick.
        cfs.tick(0, 1);
        cfs.tick(1, 1);
        // Group /a has load on both CPUs: its entity weighs half its shares on each.
        let ga = cfs.by_path["/a"];
        let w: Vec<u64> = cfs.groups[ga]
            .rqs
            .iter()
            .map(|&r| cfs.entities[cfs.rqs[r].se.unwrap()].weight)
            .collect();
        assert_eq!(w, vec![500, 500]);
        cfs.dequeue(0, 0, 10);
        assert_eq!(cfs.nr_running(0), 0, "empty groups leave the root queue");
    }
}
