//! The O(1) scheduler of Linux 2.6.0–2.6.22 (kernel/sched.c): a run queue
//! per CPU with two priority arrays, `active` and `expired`, each 140 lists
//! (priorities 0–99 RT, 100–139 SCHED_OTHER) and a bitmap of the non-empty
//! ones, so a pick is the first set bit's first task whatever the number
//! of tasks.
//!
//! Formulas (jiffies at the platform's HZ, times in ns otherwise):
//!
//! - Static priority `static_prio = 120 + nice`; an RT task's priority is
//!   `99 − rt_priority`.
//! - Time slice (`task_timeslice`, 2.6.8+): with `DEF = 100 ms` and
//!   `SCALE(x) = max(x · (140 − static_prio) / 20, MIN = 5 ms)`,
//!   `SCALE(4·DEF)` for nice < 0, else `SCALE(DEF)`: nice −20 → 800 ms,
//!   nice 0 → 100 ms, nice 10 → 50 ms, nice 19 → 5 ms (in whole jiffies,
//!   at least one).
//! - Interactivity: `CURRENT_BONUS = sleep_avg · 10 / MAX_SLEEP_AVG`
//!   (0–10, `MAX_SLEEP_AVG` = 1 s) and the dynamic priority
//!   `prio = static_prio − (CURRENT_BONUS − 5)`, within 100–139
//!   (`effective_prio`, recomputed at wake-up and when a slice ends): a
//!   bonus of −5 … +5. `sleep_avg` (2.6.8+'s `recalc_task_prio` and
//!   `schedule`), within `0 … MAX_SLEEP_AVG`: at wake-up it gains the time
//!   slept (at most 1 s) times `max(10 − CURRENT_BONUS, 1)`, so a task low
//!   on credit rises fast — or, after a sleep longer than
//!   `INTERACTIVE_SLEEP = MAX_SLEEP_AVG · (5 + DELTA + 1) / 10 − 1 tick`,
//!   is raised to at least `MAX_SLEEP_AVG − DEF_TIMESLICE` (900 ms: just
//!   interactive); running costs it the time run divided by
//!   `max(CURRENT_BONUS, 1)`.
//! - `TASK_INTERACTIVE`: `prio ≤ static_prio − DELTA`, `DELTA = (nice +
//!   20)·10/40 − 5 + 2` (2 at nice 0: a nice-0 task is interactive from
//!   `sleep_avg` ≥ 700 ms).
//! - Tick: the running task's slice −1 jiffy. At 0 it gets a new slice and
//!   priority and goes to the expired array — or back to the tail of the
//!   active one if it is interactive, unless the expired array starves
//!   (`EXPIRED_STARVING`: its first task has waited `≥ 1 s · nr_running +
//!   1 tick`, or curr's static priority is worse than the best expired
//!   one). SCHED_RR gets a new slice and goes to the tail of its list;
//!   SCHED_FIFO ignores the tick.
//! - Pick: the first task of the first non-empty list of the active array;
//!   when the active array is empty the two arrays swap.
//! - Wake-up: into the active array; it preempts when its priority is
//!   better (lower) than curr's (`TASK_PREEMPTS_CURR`). Placement: the
//!   previous CPU if idle, else an idle allowed CPU, else the previous
//!   CPU (XXX: 2.6's wake-affine and `sync` wake-ups are not modelled).
//! - Balancing (2.6.0's `load_balance`, kept simple): the busiest other
//!   queue by `nr_running`; `imbalance = (busiest − this) / 2`; a busy CPU
//!   acts only on an imbalance of at least a quarter of the busiest queue
//!   (`imbalance ≥ (busiest + 3) / 4`), an idle one on any; it pulls up to
//!   `imbalance` waiting tasks, from the expired array first, highest
//!   priority first, from the tail of each list, into its own array of the
//!   same kind. (XXX: not modelled: cache-hot tasks, sched domains,
//!   `TIMESLICE_GRANULARITY` round-robin of interactive equals, fork's
//!   slice split and `CHILD_PENALTY` (tasks start with no sleep credit),
//!   the credit for time spent waiting on the run queue after a wake-up
//!   (`activated`), uninterruptible sleep's smaller credit.)

use crate::engine::Ns;
use crate::legacy::runq::ClassicPolicy as Kind;
use crate::legacy::runq::Lists;
use crate::sched::kernel::Policy;
use crate::sched::kernel::{SchedClass, TaskId, WakeCtx, Work};

/// Priorities 0–99 are RT.
pub const MAX_RT_PRIO: usize = 100;
/// 140 priorities.
pub const MAX_PRIO: usize = 140;
const MAX_BONUS: i64 = 10;
/// `MAX_SLEEP_AVG = DEF_TIMESLICE · MAX_BONUS` = 1 s.
pub const MAX_SLEEP_AVG_NS: Ns = 1_000_000_000;
/// `DEF_TIMESLICE`: 100 ms.
const DEF_TIMESLICE_NS: Ns = 100_000_000;
/// `STARVATION_LIMIT = MAX_SLEEP_AVG`.
const STARVATION_LIMIT_NS: Ns = MAX_SLEEP_AVG_NS;

/// A priority array (`prio_array_t`): a list per priority and a bitmap of
/// the non-empty ones.
#[derive(Debug, Clone)]
pub struct PrioArray {
    lists: Lists,
    bitmap: [u64; 3],
    nr: usize,
}

impl Default for PrioArray {
    fn default() -> Self {
        PrioArray {
            lists: Lists::new(MAX_PRIO),
            bitmap: [0; 3],
            nr: 0,
        }
    }
}

impl PrioArray {
    /// Adds `t` at the tail of list `prio` (`enqueue_task`).
    pub fn insert(&mut self, prio: usize, t: TaskId) {
        self.lists.push_back(prio, t);
        self.bitmap[prio / 64] |= 1 << (prio % 64);
        self.nr += 1;
    }

    /// Takes `t` off (`dequeue_task`); false if it was not here.
    pub fn remove(&mut self, t: TaskId) -> bool {
        let Some(prio) = self.lists.unlink(t) else {
            return false;
        };
        if self.lists.is_empty(prio) {
            self.bitmap[prio / 64] &= !(1 << (prio % 64));
        }
        self.nr -= 1;
        true
    }

    /// The first non-empty priority (`sched_find_first_bit`).
    pub fn first_prio(&self) -> Option<usize> {
        self.bitmap
            .iter()
            .enumerate()
            .find(|(_, &w)| w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    /// The task a pick takes: the head of the first non-empty list.
    pub fn first(&self) -> Option<(usize, TaskId)> {
        let p = self.first_prio()?;
        Some((p, self.lists.first(p)?))
    }

    pub fn prio_of(&self, t: TaskId) -> Option<usize> {
        self.lists.list_of(t)
    }

    pub fn len(&self) -> usize {
        self.nr
    }

    pub fn is_empty(&self) -> bool {
        self.nr == 0
    }

    /// Every task, highest priority first, each list from head to tail.
    pub fn iter(&self) -> impl Iterator<Item = TaskId> + '_ {
        (0..MAX_PRIO)
            .filter(|&p| self.bitmap[p / 64] & (1 << (p % 64)) != 0)
            .flat_map(move |p| self.lists.iter(p))
    }

    /// List `prio` from tail to head.
    fn iter_prio(&self, prio: usize) -> Vec<TaskId> {
        let mut v: Vec<TaskId> = self.lists.iter(prio).collect();
        v.reverse();
        v
    }
}

#[derive(Debug, Clone, Copy)]
struct TaskO1 {
    kind: Kind,
    nice: i32,
    rt_priority: i32,
    static_prio: usize,
    prio: usize,
    /// Jiffies left of its slice.
    time_slice: u32,
    sleep_avg: Ns,
    exec_start: Ns,
    sleep_start: Ns,
    /// (CPU, array 0/1) it is queued on.
    loc: Option<(usize, usize)>,
    fresh: bool,
}

#[derive(Debug, Clone, Default)]
struct Rq {
    arrays: [PrioArray; 2],
    active: usize,
    curr: Option<TaskId>,
    /// When the first task went to the expired array since the last swap.
    expired_ts: Option<Ns>,
    /// The best static priority in the expired array (MAX_PRIO: none).
    best_expired_prio: usize,
}

impl Rq {
    fn nr(&self) -> usize {
        self.arrays[0].len() + self.arrays[1].len()
    }
}

/// The O(1) scheduler.
#[derive(Debug, Clone)]
pub struct O1 {
    rqs: Vec<Rq>,
    tasks: Vec<TaskO1>,
    hz: u32,
    tick_ns: Ns,
    work: Work,
}

impl O1 {
    /// The O(1) scheduler on `ncpus` CPUs at `hz`.
    pub fn new(ncpus: usize, hz: u32) -> O1 {
        O1 {
            rqs: (0..ncpus)
                .map(|_| Rq {
                    best_expired_prio: MAX_PRIO,
                    ..Default::default()
                })
                .collect(),
            tasks: Vec::new(),
            hz: hz.max(1),
            tick_ns: 1_000_000_000 / hz.max(1) as u64,
            work: Work::default(),
        }
    }

    /// `task_timeslice(static_prio)` in jiffies (see the module doc).
    pub fn timeslice_ticks(&self, static_prio: usize) -> u32 {
        let jiffies = |ms: u64| (ms * self.hz as u64 / 1000).max(1);
        let (def, min) = (jiffies(100), jiffies(5));
        let scale = |x: u64| (x * (MAX_PRIO - static_prio) as u64 / 20).max(min);
        let t = if static_prio < 120 {
            scale(4 * def)
        } else {
            scale(def)
        };
        t as u32
    }

    /// `effective_prio`: the static priority less the sleep bonus.
    fn effective_prio(&self, t: TaskId) -> usize {
        let task = &self.tasks[t];
        if task.kind != Kind::Other {
            return MAX_RT_PRIO - 1 - task.rt_priority as usize;
        }
        let bonus = (task.sleep_avg as i64 * MAX_BONUS / MAX_SLEEP_AVG_NS as i64) - MAX_BONUS / 2;
        (task.static_prio as i64 - bonus).clamp(MAX_RT_PRIO as i64, MAX_PRIO as i64 - 1) as usize
    }

    /// `TASK_INTERACTIVE`.
    fn interactive(&self, t: TaskId) -> bool {
        let task = &self.tasks[t];
        task.prio as i64 <= task.static_prio as i64 - self.delta(t)
    }

    /// `EXPIRED_STARVING(rq)`.
    fn starving(&self, cpu: usize, now: Ns) -> bool {
        let rq = &self.rqs[cpu];
        let waited = rq
            .expired_ts
            .is_some_and(|ts| now - ts >= STARVATION_LIMIT_NS * rq.nr() as Ns + self.tick_ns);
        let curr_worse = rq
            .curr
            .is_some_and(|c| self.tasks[c].static_prio > rq.best_expired_prio);
        waited || curr_worse
    }

    /// `CURRENT_BONUS`: 0–10.
    fn current_bonus(&self, t: TaskId) -> u64 {
        self.tasks[t].sleep_avg * MAX_BONUS as u64 / MAX_SLEEP_AVG_NS
    }

    /// `DELTA(p)`: how far below its static priority a task must be to
    /// count as interactive.
    fn delta(&self, t: TaskId) -> i64 {
        (self.tasks[t].nice as i64 + 20) * MAX_BONUS / 40 - MAX_BONUS / 2 + 2
    }

    /// The running task's sleep credit pays for the time it ran, less at a
    /// high bonus (`run_time /= CURRENT_BONUS`).
    fn charge(&mut self, t: TaskId, now: Ns) {
        let bonus = self.current_bonus(t).max(1);
        let task = &mut self.tasks[t];
        let ran = now.saturating_sub(task.exec_start).min(MAX_SLEEP_AVG_NS);
        task.sleep_avg = task.sleep_avg.saturating_sub(ran / bonus);
        task.exec_start = now;
    }

    /// `recalc_task_prio`'s credit for a sleep of `slept` ns.
    fn credit_sleep(&mut self, t: TaskId, slept: Ns) {
        let slept = slept.min(MAX_SLEEP_AVG_NS);
        if slept == 0 {
            return;
        }
        let interactive_sleep = (MAX_SLEEP_AVG_NS as i64 * (MAX_BONUS / 2 + self.delta(t) + 1)
            / MAX_BONUS) as Ns
            - self.tick_ns;
        let factor = (MAX_BONUS as u64 - self.current_bonus(t)).max(1);
        let task = &mut self.tasks[t];
        if slept > interactive_sleep {
            // A long sleeper is made just interactive, not more.
            task.sleep_avg = task.sleep_avg.max(MAX_SLEEP_AVG_NS - DEF_TIMESLICE_NS);
        } else {
            task.sleep_avg = (task.sleep_avg + slept * factor).min(MAX_SLEEP_AVG_NS);
        }
    }

    fn ensure(&mut self, t: TaskId) {
        if self.tasks.len() <= t {
            let fresh = TaskO1 {
                kind: Kind::Other,
                nice: 0,
                rt_priority: 0,
                static_prio: 120,
                prio: 125,
                time_slice: self.timeslice_ticks(120),
                sleep_avg: 0,
                exec_start: 0,
                sleep_start: 0,
                loc: None,
                fresh: true,
            };
            self.tasks.resize(t + 1, fresh);
        }
    }

    fn put(&mut self, cpu: usize, array: usize, t: TaskId) {
        let prio = self.tasks[t].prio;
        self.rqs[cpu].arrays[array].insert(prio, t);
        self.tasks[t].loc = Some((cpu, array));
    }

    fn take(&mut self, t: TaskId) {
        if let Some((cpu, array)) = self.tasks[t].loc.take() {
            self.rqs[cpu].arrays[array].remove(t);
        }
    }

    /// Task `t`'s dynamic priority (0–139, lower is better).
    pub fn prio(&self, t: TaskId) -> usize {
        self.tasks[t].prio
    }

    /// Task `t`'s sleep average, ns.
    pub fn sleep_avg(&self, t: TaskId) -> Ns {
        self.tasks[t].sleep_avg
    }
}

impl SchedClass for O1 {
    fn name(&self) -> &'static str {
        "o1"
    }

    fn set_nice(&mut self, t: TaskId, nice: i32) {
        self.ensure(t);
        let nice = nice.clamp(-20, 19);
        let sp = (120 + nice) as usize;
        let slice = self.timeslice_ticks(sp);
        let task = &mut self.tasks[t];
        task.nice = nice;
        task.static_prio = sp;
        if task.fresh {
            task.time_slice = slice;
        }
        let prio = self.effective_prio(t);
        // A queued task moves to its new list (`set_user_nice`).
        match self.tasks[t].loc {
            Some((cpu, array)) if self.tasks[t].prio != prio => {
                self.take(t);
                self.tasks[t].prio = prio;
                self.put(cpu, array, t);
            }
            _ => self.tasks[t].prio = prio,
        }
    }

    fn set_policy(&mut self, t: TaskId, policy: Policy) -> Result<(), crate::error::Error> {
        self.ensure(t);
        self.tasks[t].kind = Kind::from_policy("o1", policy)?;
        Ok(())
    }

    fn set_rt_priority(&mut self, t: TaskId, prio: i32) -> Result<(), crate::error::Error> {
        self.ensure(t);
        self.tasks[t].kind.check_rt_priority(t, prio)?;
        self.tasks[t].rt_priority = prio;
        self.tasks[t].prio = self.effective_prio(t);
        Ok(())
    }

    /// The O(1) scheduler charges slices by the tick.
    fn update_curr(&mut self, _: usize, _: Ns) {}

    fn enqueue(&mut self, cpu: usize, t: TaskId, wakeup: bool, now: Ns) {
        self.ensure(t);
        self.work.enqueues += 1;
        let task = &mut self.tasks[t];
        task.fresh = false;
        if wakeup {
            // recalc_task_prio: the sleep is credited, the priority redone.
            let slept = now.saturating_sub(task.sleep_start);
            self.credit_sleep(t, slept);
            self.tasks[t].prio = self.effective_prio(t);
        }
        let active = self.rqs[cpu].active;
        self.put(cpu, active, t);
    }

    fn dequeue(&mut self, cpu: usize, t: TaskId, sleep: bool, now: Ns) {
        self.work.dequeues += 1;
        if self.rqs[cpu].curr == Some(t) {
            self.charge(t, now);
            self.rqs[cpu].curr = None;
        }
        self.take(t);
        if sleep {
            self.tasks[t].sleep_start = now;
        }
    }

    fn pick_next(&mut self, cpu: usize, now: Ns) -> Option<TaskId> {
        self.work.picks += 1;
        let rq = &mut self.rqs[cpu];
        if rq.arrays[rq.active].is_empty() && !rq.arrays[1 - rq.active].is_empty() {
            // The active array is spent: swap.
            rq.active = 1 - rq.active;
            rq.expired_ts = None;
            rq.best_expired_prio = MAX_PRIO;
        }
        let (_, t) = rq.arrays[rq.active].first()?;
        self.work.examined += 1;
        rq.curr = Some(t);
        self.tasks[t].exec_start = now;
        Some(t)
    }

    /// Curr stays where it is in its list (2.6 leaves it queued).
    fn put_prev(&mut self, cpu: usize, t: TaskId, now: Ns) {
        if self.rqs[cpu].curr == Some(t) {
            self.charge(t, now);
            self.rqs[cpu].curr = None;
        }
    }

    /// `sched_yield`: an RT task to the tail of its list, any other to the
    /// expired array.
    fn yield_task(&mut self, cpu: usize, t: TaskId, now: Ns) {
        let Some((c, _)) = self.tasks[t].loc else {
            return;
        };
        debug_assert_eq!(c, cpu);
        self.take(t);
        let rq = &mut self.rqs[cpu];
        let array = if self.tasks[t].kind == Kind::Other {
            rq.expired_ts.get_or_insert(now);
            rq.best_expired_prio = rq.best_expired_prio.min(self.tasks[t].static_prio);
            1 - rq.active
        } else {
            rq.active
        };
        self.put(cpu, array, t);
    }

    fn work(&self) -> Work {
        self.work
    }

    fn tick(&mut self, cpu: usize, now: Ns) -> bool {
        let Some(c) = self.rqs[cpu].curr else {
            return false;
        };
        self.charge(c, now);
        let active = self.rqs[cpu].active;
        if self.tasks[c].loc != Some((cpu, active)) {
            // It sits in the expired array (it yielded): give way.
            return true;
        }
        let slice = self.timeslice_ticks(self.tasks[c].static_prio);
        let task = &mut self.tasks[c];
        if task.kind == Kind::Fifo {
            return false;
        }
        task.time_slice = task.time_slice.saturating_sub(1);
        if task.time_slice > 0 {
            return false;
        }
        task.time_slice = slice;
        let kind = task.kind;
        self.take(c);
        if kind == Kind::Rr {
            // Behind its equals.
            self.put(cpu, active, c);
            return true;
        }
        self.tasks[c].prio = self.effective_prio(c);
        self.rqs[cpu].expired_ts.get_or_insert(now);
        if !self.interactive(c) || self.starving(cpu, now) {
            let rq = &mut self.rqs[cpu];
            rq.best_expired_prio = rq.best_expired_prio.min(self.tasks[c].static_prio);
            self.put(cpu, 1 - active, c);
        } else {
            self.put(cpu, active, c);
        }
        true
    }

    fn check_preempt_wakeup(&mut self, cpu: usize, woken: TaskId, _: Ns) -> bool {
        self.rqs[cpu]
            .curr
            .is_some_and(|c| self.tasks[woken].prio < self.tasks[c].prio)
    }

    fn select_task_rq(&mut self, _: TaskId, prev: usize, allowed: &[usize], _: &WakeCtx) -> usize {
        let idle = |c: usize| self.rqs[c].nr() == 0;
        let has_prev = allowed.contains(&prev);
        if has_prev && idle(prev) {
            return prev;
        }
        if let Some(&c) = allowed.iter().find(|&&c| idle(c)) {
            return c;
        }
        if has_prev || allowed.is_empty() {
            return prev;
        }
        *allowed
            .iter()
            .min_by_key(|&&c| (self.rqs[c].nr(), c))
            .unwrap_or(&prev)
    }

    fn nr_running(&self, cpu: usize) -> usize {
        self.rqs[cpu].nr()
    }

    fn curr(&self, cpu: usize) -> Option<TaskId> {
        self.rqs[cpu].curr
    }

    fn queued(&self, cpu: usize) -> Vec<TaskId> {
        let rq = &self.rqs[cpu];
        rq.arrays[rq.active]
            .iter()
            .chain(rq.arrays[1 - rq.active].iter())
            .collect()
    }

    fn balance(
        &mut self,
        cpu: usize,
        _: Ns,
        _newidle: bool,
        allowed: &dyn Fn(TaskId, usize) -> bool,
        _pelt: Option<&crate::sched::pelt::Pelt>,
    ) -> Vec<(TaskId, usize)> {
        let this = self.rqs[cpu].nr();
        let idle = self.rqs[cpu].curr.is_none();
        let Some((busiest, max)) = (0..self.rqs.len())
            .filter(|&c| c != cpu)
            .map(|c| (c, self.rqs[c].nr()))
            .max_by_key(|&(c, n)| (n, std::cmp::Reverse(c)))
        else {
            return Vec::new();
        };
        if max <= this {
            return Vec::new();
        }
        let imbalance = (max - this) / 2;
        // A busy CPU needs an imbalance of about a quarter.
        if imbalance == 0 || (!idle && imbalance < max.div_ceil(4)) {
            return Vec::new();
        }
        let src = &self.rqs[busiest];
        let (src_active, curr) = (src.active, src.curr);
        let mut moved = Vec::new();
        // Expired array first, then active; highest priority first; tail first.
        'pull: for array in [1 - src_active, src_active] {
            let pa = &self.rqs[busiest].arrays[array];
            let prios: Vec<usize> = (0..MAX_PRIO).filter(|&p| pa.lists.len(p) > 0).collect();
            for p in prios {
                for t in self.rqs[busiest].arrays[array].iter_prio(p) {
                    if moved.len() >= imbalance {
                        break 'pull;
                    }
                    if Some(t) == curr || !allowed(t, cpu) {
                        continue;
                    }
                    moved.push((t, array == src_active));
                }
            }
        }
        let this_active = self.rqs[cpu].active;
        moved
            .into_iter()
            .map(|(t, was_active)| {
                self.take(t);
                let to = if was_active {
                    this_active
                } else {
                    1 - this_active
                };
                self.put(cpu, to, t);
                (t, busiest)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeslices_by_static_priority() {
        let o = O1::new(1, 1000);
        // nice −20, −1, 0, 10, 19 at HZ 1000: 800, 420, 100, 50, 5 ms.
        assert_eq!(
            [100, 119, 120, 130, 139].map(|p| o.timeslice_ticks(p)),
            [800, 420, 100, 50, 5]
        );
        // HZ 250: 25 jiffies for nice 0, 12 for nice 10, one for nice 19.
        let o = O1::new(1, 250);
        assert_eq!([120, 130, 139].map(|p| o.timeslice_ticks(p)), [25, 12, 1]);
    }

    #[test]
    fn the_bitmap_finds_the_best_list() {
        let mut a = PrioArray::default();
        a.insert(125, 1);
        a.insert(64, 2);
        a.insert(125, 3);
        assert_eq!(a.first(), Some((64, 2)));
        a.remove(2);
        assert_eq!(a.first(), Some((125, 1)));
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![1, 3]);
        a.remove(1);
        a.remove(3);
        assert_eq!((a.first(), a.len()), (None, 0));
    }

    #[test]
    fn sleep_avg_gives_the_bonus_and_interactivity() {
        let mut o = O1::new(1, 250);
        o.set_policy(0, Policy::Other).unwrap();
        o.set_nice(0, 0);
        assert_eq!(o.effective_prio(0), 125);
        o.tasks[0].sleep_avg = 700_000_000;
        o.tasks[0].prio = o.effective_prio(0);
        // Bonus 7 − 5 = 2: prio 118 = 120 − DELTA, interactive.
        assert_eq!(o.prio(0), 118);
        assert!(o.interactive(0));
        o.tasks[0].sleep_avg = 699_000_000;
        o.tasks[0].prio = o.effective_prio(0);
        assert!(!o.interactive(0));
    }
}
