//! Building blocks of the older run-queue models ([`crate::legacy::linux24`],
//! [`crate::legacy::mlq`], [`crate::legacy::o1`], [`crate::legacy::bfs`]):
//!
//! - [`Lists`]: doubly linked lists of task ids, the kernel's `list_head`
//!   threaded through `task_struct`: add at either end and unlink in O(1),
//!   one link per task, so a task is on at most one of a [`Lists`]' lists.
//! - [`GlobalCpus`]: what a model with ONE run queue for every CPU keeps
//!   so that the machine's per-CPU questions still have answers.
//!
//! A global queue meets a machine built for per-CPU queues like this:
//!
//! - Each runnable task has a *home* CPU: the one the machine enqueued it
//!   on (the CPU `select_task_rq` returned) or the one it last ran on.
//!   `nr_running(cpu)` counts the runnable tasks whose home is `cpu` and
//!   `queued(cpu)` lists them, so the counts add up to every runnable
//!   task once, NOHZ keeps a tick where tasks wait, and hot-plug hands a
//!   departing CPU's tasks to the others.
//! - Any CPU may pick any waiting task it is allowed to run; the machine
//!   books the move when it dispatches.
//! - `select_task_rq` claims an idle CPU for a woken task; the claim
//!   ([`GlobalCpus::claim_idle`]) holds until that CPU picks, so two
//!   wake-ups at one instant go to two idle CPUs, not both to the first.
//! - A waiting task can still end up beside an idle CPU it may use (an
//!   idle CPU picked a better task than the one it was claimed for, a
//!   preempted task could run on an idle CPU, a CPU came online): the
//!   busy CPU's tick kicks idle CPUs to balance (the machine's NOHZ kick),
//!   and the model's `balance` for an idle CPU hands it a waiting task it
//!   may run ([`GlobalCpus::rehome`]). (XXX: Linux 2.4's `schedule_tail`
//!   calls `reschedule_idle` for a preempted task, at once; here it waits
//!   for the next tick of its CPU.)

use crate::engine::Ns;
use crate::sched::kernel::Policy;
use crate::sched::kernel::TaskId;

/// A task's policy in the older models (2.4, the multi-level queue, O(1),
/// BFS): SCHED_OTHER, SCHED_FIFO or SCHED_RR; SCHED_BATCH and SCHED_IDLE
/// came later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicPolicy {
    Other,
    Fifo,
    Rr,
}

impl ClassicPolicy {
    pub fn is_rt(self) -> bool {
        self != ClassicPolicy::Other
    }

    /// `policy` as model `model` sees it; the error names the model.
    pub fn from_policy(model: &str, policy: Policy) -> Result<ClassicPolicy, crate::error::Error> {
        match policy {
            Policy::Other => Ok(ClassicPolicy::Other),
            Policy::Fifo => Ok(ClassicPolicy::Fifo),
            Policy::Rr => Ok(ClassicPolicy::Rr),
            Policy::Batch | Policy::Idle => Err(crate::error::Error::unsupported(
                model,
                format!("{policy:?} is not modelled (SCHED_OTHER, SCHED_FIFO, SCHED_RR only)"),
            )),
        }
    }

    /// Whether task `t` of this policy may take RT priority `prio`.
    pub fn check_rt_priority(self, t: TaskId, prio: i32) -> Result<(), crate::error::Error> {
        if !self.is_rt() {
            return Err(crate::error::Error::Invalid(format!(
                "task {t} is not SCHED_FIFO or SCHED_RR"
            )));
        }
        if !(1..=99).contains(&prio) {
            return Err(crate::error::Error::Invalid(format!(
                "RT priority must be 1 to 99, not {prio}"
            )));
        }
        Ok(())
    }
}

const NIL: u32 = u32::MAX;

/// Doubly linked lists of task ids with O(1) add and unlink (a task is on
/// at most one list of the set).
#[derive(Debug, Clone, Default)]
pub struct Lists {
    /// (first, last) of each list.
    heads: Vec<(u32, u32)>,
    lens: Vec<usize>,
    /// (prev, next) of each task.
    links: Vec<(u32, u32)>,
    /// The list each task is on (NIL: none).
    on: Vec<u32>,
}

impl Lists {
    /// `n` empty lists.
    pub fn new(n: usize) -> Lists {
        Lists {
            heads: vec![(NIL, NIL); n],
            lens: vec![0; n],
            links: Vec::new(),
            on: Vec::new(),
        }
    }

    fn ensure(&mut self, t: TaskId) {
        if self.links.len() <= t {
            self.links.resize(t + 1, (NIL, NIL));
            self.on.resize(t + 1, NIL);
        }
    }

    /// Adds `t` at the head of list `l` (`list_add`).
    pub fn push_front(&mut self, l: usize, t: TaskId) {
        self.ensure(t);
        debug_assert_eq!(self.on[t], NIL, "task {t} is on a list already");
        let first = self.heads[l].0;
        self.links[t] = (NIL, first);
        if first == NIL {
            self.heads[l].1 = t as u32;
        } else {
            self.links[first as usize].0 = t as u32;
        }
        self.heads[l].0 = t as u32;
        self.on[t] = l as u32;
        self.lens[l] += 1;
    }

    /// Adds `t` at the tail of list `l` (`list_add_tail`).
    pub fn push_back(&mut self, l: usize, t: TaskId) {
        self.ensure(t);
        debug_assert_eq!(self.on[t], NIL, "task {t} is on a list already");
        let last = self.heads[l].1;
        self.links[t] = (last, NIL);
        if last == NIL {
            self.heads[l].0 = t as u32;
        } else {
            self.links[last as usize].1 = t as u32;
        }
        self.heads[l].1 = t as u32;
        self.on[t] = l as u32;
        self.lens[l] += 1;
    }

    /// Takes `t` off its list (`list_del`); the list it was on, if any.
    pub fn unlink(&mut self, t: TaskId) -> Option<usize> {
        let l = *self.on.get(t)?;
        if l == NIL {
            return None;
        }
        let l = l as usize;
        let (prev, next) = self.links[t];
        if prev == NIL {
            self.heads[l].0 = next;
        } else {
            self.links[prev as usize].1 = next;
        }
        if next == NIL {
            self.heads[l].1 = prev;
        } else {
            self.links[next as usize].0 = prev;
        }
        self.links[t] = (NIL, NIL);
        self.on[t] = NIL;
        self.lens[l] -= 1;
        Some(l)
    }

    /// The list `t` is on.
    pub fn list_of(&self, t: TaskId) -> Option<usize> {
        match self.on.get(t) {
            Some(&l) if l != NIL => Some(l as usize),
            _ => None,
        }
    }

    pub fn first(&self, l: usize) -> Option<TaskId> {
        let f = self.heads[l].0;
        (f != NIL).then_some(f as TaskId)
    }

    pub fn len(&self, l: usize) -> usize {
        self.lens[l]
    }

    pub fn is_empty(&self, l: usize) -> bool {
        self.lens[l] == 0
    }

    /// Number of lists.
    pub fn lists(&self) -> usize {
        self.heads.len()
    }

    /// List `l` from head to tail.
    pub fn iter(&self, l: usize) -> ListIter<'_> {
        ListIter {
            lists: self,
            at: self.heads[l].0,
        }
    }
}

/// [`Lists::iter`].
pub struct ListIter<'a> {
    lists: &'a Lists,
    at: u32,
}

impl Iterator for ListIter<'_> {
    type Item = TaskId;
    fn next(&mut self) -> Option<TaskId> {
        if self.at == NIL {
            return None;
        }
        let t = self.at as usize;
        self.at = self.lists.links[t].1;
        Some(t)
    }
}

/// The per-CPU side of a model with one global run queue (see the module
/// doc): who runs where, each runnable task's home CPU, affinity, online
/// CPUs, and idle CPUs claimed by a wake-up.
#[derive(Debug, Clone)]
pub struct GlobalCpus {
    curr: Vec<Option<TaskId>>,
    online: Vec<bool>,
    /// An idle CPU a wake-up chose, until it picks.
    claimed: Vec<bool>,
    /// Since when each CPU is idle (the least recently busy is chosen
    /// first, as 2.4's `reschedule_idle` does).
    idle_since: Vec<Ns>,
    /// Runnable tasks whose home is each CPU, its running one included.
    nr: Vec<usize>,
    /// Per task: home CPU, runnable, the CPU it runs on, its CPUs (empty:
    /// all).
    home: Vec<usize>,
    runnable: Vec<bool>,
    on_cpu: Vec<Option<usize>>,
    allowed: Vec<Vec<usize>>,
}

impl GlobalCpus {
    pub fn new(ncpus: usize) -> GlobalCpus {
        GlobalCpus {
            curr: vec![None; ncpus],
            online: vec![true; ncpus],
            claimed: vec![false; ncpus],
            idle_since: vec![0; ncpus],
            nr: vec![0; ncpus],
            home: Vec::new(),
            runnable: Vec::new(),
            on_cpu: Vec::new(),
            allowed: Vec::new(),
        }
    }

    pub fn ncpus(&self) -> usize {
        self.curr.len()
    }

    fn ensure(&mut self, t: TaskId) {
        if self.home.len() <= t {
            self.home.resize(t + 1, 0);
            self.runnable.resize(t + 1, false);
            self.on_cpu.resize(t + 1, None);
            self.allowed.resize(t + 1, Vec::new());
        }
    }

    pub fn set_allowed(&mut self, t: TaskId, cpus: &[usize]) {
        self.ensure(t);
        self.allowed[t] = cpus.to_vec();
    }

    pub fn set_online(&mut self, cpu: usize, on: bool) {
        self.online[cpu] = on;
        if !on {
            self.claimed[cpu] = false;
        }
    }

    pub fn is_online(&self, cpu: usize) -> bool {
        self.online[cpu]
    }

    /// Whether `t` may run on `cpu`: an online CPU among its own, or any
    /// online CPU when none of its own is (the machine breaks affinity the
    /// same way, as `select_fallback_rq` does).
    pub fn may_run(&self, t: TaskId, cpu: usize) -> bool {
        if !self.online[cpu] {
            return false;
        }
        match self.allowed.get(t) {
            None => true,
            Some(a) if a.is_empty() => true,
            Some(a) => a.contains(&cpu) || !a.iter().any(|&c| self.online[c]),
        }
    }

    /// `t` is runnable, at home on `cpu`.
    pub fn enqueue(&mut self, cpu: usize, t: TaskId) {
        self.ensure(t);
        debug_assert!(!self.runnable[t], "task {t} enqueued twice");
        self.runnable[t] = true;
        self.home[t] = cpu;
        self.nr[cpu] += 1;
    }

    /// `t` is no longer runnable; the CPU it ran on, if it ran.
    pub fn dequeue(&mut self, t: TaskId, now: Ns) -> Option<usize> {
        debug_assert!(self.runnable[t], "task {t} dequeued twice");
        self.runnable[t] = false;
        self.nr[self.home[t]] -= 1;
        let cpu = self.on_cpu[t].take();
        if let Some(c) = cpu {
            self.curr[c] = None;
            self.idle_since[c] = now;
        }
        cpu
    }

    /// `cpu` picks: whatever claim it had is over.
    pub fn picking(&mut self, cpu: usize) {
        self.claimed[cpu] = false;
    }

    /// `t` runs on `cpu` now; its home moves there.
    pub fn start(&mut self, cpu: usize, t: TaskId) {
        debug_assert!(self.curr[cpu].is_none() && self.on_cpu[t].is_none());
        self.rehome(t, cpu);
        self.curr[cpu] = Some(t);
        self.on_cpu[t] = Some(cpu);
    }

    /// The running task of `cpu` stops (still runnable).
    pub fn stop(&mut self, cpu: usize, now: Ns) -> Option<TaskId> {
        let t = self.curr[cpu].take()?;
        self.on_cpu[t] = None;
        self.idle_since[cpu] = now;
        Some(t)
    }

    /// Moves runnable `t`'s home to `cpu`; the old home.
    pub fn rehome(&mut self, t: TaskId, cpu: usize) -> usize {
        let from = self.home[t];
        self.nr[from] -= 1;
        self.nr[cpu] += 1;
        self.home[t] = cpu;
        from
    }

    pub fn curr(&self, cpu: usize) -> Option<TaskId> {
        self.curr[cpu]
    }

    /// The CPU `t` runs on.
    pub fn on_cpu(&self, t: TaskId) -> Option<usize> {
        self.on_cpu.get(t).copied().flatten()
    }

    /// Runnable and not running anywhere.
    pub fn waiting(&self, t: TaskId) -> bool {
        self.runnable.get(t).copied().unwrap_or(false) && self.on_cpu[t].is_none()
    }

    pub fn home(&self, t: TaskId) -> usize {
        self.home[t]
    }

    pub fn nr_running(&self, cpu: usize) -> usize {
        self.nr[cpu]
    }

    /// The runnable tasks at home on `cpu`, its running one first.
    pub fn queued(&self, cpu: usize) -> Vec<TaskId> {
        let mut q: Vec<TaskId> = self.curr[cpu].into_iter().collect();
        q.extend(
            (0..self.home.len())
                .filter(|&t| self.runnable[t] && self.home[t] == cpu && self.on_cpu[t].is_none()),
        );
        q
    }

    /// `balance` for a model with one queue: an idle `cpu` kicked by a
    /// busy one (not new-idle: its pick already saw every task) takes home
    /// the first waiting task of `queue` it may run; (task, old home).
    pub fn hand_over(
        &mut self,
        cpu: usize,
        newidle: bool,
        mut queue: impl Iterator<Item = TaskId>,
        allowed: &dyn Fn(TaskId, usize) -> bool,
    ) -> Vec<(TaskId, usize)> {
        if newidle || self.curr[cpu].is_some() || !self.online[cpu] {
            return Vec::new();
        }
        let found = queue.find(|&t| {
            self.waiting(t) && self.home[t] != cpu && self.may_run(t, cpu) && allowed(t, cpu)
        });
        match found {
            Some(t) => vec![(t, self.rehome(t, cpu))],
            None => Vec::new(),
        }
    }

    /// Whether `cpu` is idle and no wake-up has claimed it.
    pub fn free(&self, cpu: usize) -> bool {
        self.online[cpu] && self.curr[cpu].is_none() && !self.claimed[cpu]
    }

    /// An idle, unclaimed CPU among `allowed` for a woken task: `prefer`
    /// (the CPU it last ran on) if it is one, else the one idle longest.
    /// The CPU is claimed until it picks.
    pub fn claim_idle(&mut self, prefer: usize, allowed: &[usize]) -> Option<usize> {
        let cpu = if allowed.contains(&prefer) && self.free(prefer) {
            Some(prefer)
        } else {
            allowed
                .iter()
                .copied()
                .filter(|&c| self.free(c))
                .min_by_key(|&c| (self.idle_since[c], c))
        }?;
        self.claimed[cpu] = true;
        Some(cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_order_and_unlink_anywhere() {
        let mut l = Lists::new(2);
        l.push_back(0, 1);
        l.push_back(0, 2);
        l.push_front(0, 3);
        l.push_back(1, 4);
        assert_eq!(l.iter(0).collect::<Vec<_>>(), vec![3, 1, 2]);
        assert_eq!(l.unlink(1), Some(0));
        assert_eq!(l.iter(0).collect::<Vec<_>>(), vec![3, 2]);
        assert_eq!(l.unlink(3), Some(0));
        assert_eq!(l.unlink(2), Some(0));
        assert!(l.is_empty(0) && l.first(0).is_none());
        assert_eq!(l.unlink(2), None);
        assert_eq!(l.list_of(4), Some(1));
        l.push_front(0, 2);
        assert_eq!(l.iter(0).collect::<Vec<_>>(), vec![2]);
        assert_eq!((l.len(0), l.len(1)), (1, 1));
    }

    #[test]
    fn two_wakeups_at_once_claim_two_idle_cpus() {
        let mut c = GlobalCpus::new(3);
        assert_eq!(c.claim_idle(0, &[0, 1, 2]), Some(0));
        assert_eq!(c.claim_idle(0, &[0, 1, 2]), Some(1));
        assert_eq!(c.claim_idle(0, &[0, 1]), None);
        c.picking(0);
        assert_eq!(c.claim_idle(0, &[0, 1]), Some(0));
    }

    #[test]
    fn home_counts_follow_the_task() {
        let mut c = GlobalCpus::new(2);
        c.set_allowed(7, &[1]);
        c.enqueue(0, 7);
        assert_eq!((c.nr_running(0), c.nr_running(1)), (1, 0));
        assert!(!c.may_run(7, 0) && c.may_run(7, 1));
        c.start(1, 7);
        assert_eq!((c.nr_running(0), c.nr_running(1)), (0, 1));
        assert_eq!(c.queued(1), vec![7]);
        // Its only CPU goes: it may run anywhere online.
        c.set_online(1, false);
        assert!(c.may_run(7, 0));
        assert_eq!(c.dequeue(7, 10), Some(1));
        assert_eq!(c.nr_running(1), 0);
    }
}
