//! The interface a kernel model implements, shaped like the kernel's
//! `struct sched_class` (kernel/sched/sched.h) so that a reader of
//! kernel/sched/ recognises each hook. The machine ([`crate::sched::machine`])
//! calls them exactly where the kernel's core would.

use crate::engine::Ns;

/// A task's scheduling policy (`SCHED_*`, include/uapi/linux/sched.h),
/// those a workload can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
}

impl Policy {
    /// The kernel's name (`SCHED_OTHER`, …), as rt-app spells it too.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Fifo => "SCHED_FIFO",
            Policy::Rr => "SCHED_RR",
        }
    }

    /// The policy called `name`.
    pub fn parse(name: &str) -> Option<Policy> {
        [
            Policy::Other,
            Policy::Batch,
            Policy::Idle,
            Policy::Fifo,
            Policy::Rr,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }

    pub fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
}

/// As the daemon's sampler reads it from `/proc/PID/sched`.
impl From<Policy> for corral_core::sample::Policy {
    fn from(p: Policy) -> Self {
        use corral_core::sample::Policy as P;
        match p {
            Policy::Other => P::Other,
            Policy::Batch => P::Batch,
            Policy::Idle => P::Idle,
            Policy::Fifo => P::Fifo,
            Policy::Rr => P::Rr,
        }
    }
}

/// A simulated thread's index.
pub type TaskId = usize;

/// Whether CPU list `allowed` holds `cpu`: at once when the list is every
/// CPU from 0 in order (most tasks'), else by a scan.
pub fn allows(allowed: &[usize], cpu: usize) -> bool {
    allowed.get(cpu) == Some(&cpu) || allowed.contains(&cpu)
}

/// Scheduling work a model has done so far: how often it picked, how many
/// tasks (or entities) it looked at to pick, and its queue operations.
/// Plain counters, so a model pays an add per event for them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// `pick_next` calls.
    pub picks: u64,
    /// Tasks or entities `pick_next` looked at (a goodness scan counts
    /// every task on the list it walks; a tree's leftmost or a bitmap's
    /// first list counts one per level).
    pub examined: u64,
    /// `enqueue` calls.
    pub enqueues: u64,
    /// `dequeue` calls.
    pub dequeues: u64,
    /// Linux 2.4 / multi-level queue: counter recalculations (every
    /// runnable task's counter was 0).
    pub recalcs: u64,
    /// Linux 2.4 / multi-level queue: tasks whose counter the
    /// recalculations rewrote (`for_each_task`: sleeping ones too).
    pub recalc_touched: u64,
    /// Tasks looked at to find the one being dequeued (the multi-level
    /// queue searches its levels; 0 where removal unlinks directly).
    pub removal_scanned: u64,
}

impl std::ops::Add for Work {
    type Output = Work;
    fn add(self, o: Work) -> Work {
        Work {
            picks: self.picks + o.picks,
            examined: self.examined + o.examined,
            enqueues: self.enqueues + o.enqueues,
            dequeues: self.dequeues + o.dequeues,
            recalcs: self.recalcs + o.recalcs,
            recalc_touched: self.recalc_touched + o.recalc_touched,
            removal_scanned: self.removal_scanned + o.removal_scanned,
        }
    }
}

impl std::ops::Sub for Work {
    type Output = Work;
    /// The work done between two readings (`later - earlier`).
    fn sub(self, o: Work) -> Work {
        Work {
            picks: self.picks - o.picks,
            examined: self.examined - o.examined,
            enqueues: self.enqueues - o.enqueues,
            dequeues: self.dequeues - o.dequeues,
            recalcs: self.recalcs - o.recalcs,
            recalc_touched: self.recalc_touched - o.recalc_touched,
            removal_scanned: self.removal_scanned - o.removal_scanned,
        }
    }
}

impl Work {
    /// Tasks looked at per pick (0 before the first pick).
    pub fn examined_per_pick(&self) -> f64 {
        if self.picks == 0 {
            0.0
        } else {
            self.examined as f64 / self.picks as f64
        }
    }
}

/// What `try_to_wake_up` knows besides the task when it calls
/// `select_task_rq`.
#[derive(Debug, Clone, Copy, Default)]
pub struct WakeCtx<'a> {
    /// `smp_processor_id()`: the CPU the wake-up runs on — the waker's, or
    /// for a timer the CPU it was armed on (the sleeper's own). `None`
    /// for a new task (`wake_up_new_task`) or one put off its CPU.
    pub this_cpu: Option<usize>,
    /// The waking task (`current`), when a task wakes it.
    pub waker: Option<TaskId>,
    /// WF_SYNC: the waker is about to sleep.
    pub sync: bool,
    /// The machine's PELT averages, when its kernel keeps them.
    pub pelt: Option<&'a crate::sched::pelt::Pelt>,
    pub now: Ns,
}

pub trait SchedClass {
    /// The model's name, for reports.
    fn name(&self) -> &'static str;
    /// Whether its kernel keeps PELT averages (Linux 3.8+): the machine
    /// then tracks each task's ([`crate::sched::pelt`]).
    fn tracks_pelt(&self) -> bool {
        false
    }
    /// Whether its kernel's timed sleeps are hrtimers armed with a normal
    /// task's `timer_slack_ns` (Linux 2.6.28+): the machine then ends
    /// them as `Machine::hrtimer_sleep` says, else on time.
    fn timer_slack(&self) -> bool {
        false
    }
    /// Sets a task's nice value (its load weight).
    fn set_nice(&mut self, t: TaskId, nice: i32);
    /// Sets a task's policy (before it first runs); a class refuses the
    /// policies it does not schedule.
    fn set_policy(&mut self, t: TaskId, policy: Policy) -> Result<(), crate::error::Error>;
    /// Sets an RT task's priority, 1–99 (after [`SchedClass::set_policy`]).
    fn set_rt_priority(&mut self, t: TaskId, prio: i32) -> Result<(), crate::error::Error> {
        let _ = (t, prio);
        Err(crate::error::Error::unsupported(self.name(), "no RT class"))
    }
    /// Sets (Some) or clears (None) a task's own slice, ns
    /// (`sched_attr.sched_runtime` for SCHED_OTHER since Linux 6.12).
    fn set_slice(&mut self, t: TaskId, slice_ns: Option<Ns>) -> Result<(), crate::error::Error> {
        let _ = (t, slice_ns);
        Err(crate::error::Error::unsupported(
            self.name(),
            "no per-task slice",
        ))
    }
    /// Puts a task in a cgroup of the cpu controller (`/a/b`), before it
    /// first runs. Models without group scheduling refuse.
    fn set_task_group(&mut self, t: TaskId, path: &str) -> Result<(), crate::error::Error> {
        let _ = t;
        Err(crate::error::Error::unsupported(
            self.name(),
            format!("no group scheduling (taskgroup {path:?})"),
        ))
    }
    /// Sets a group's `cpu.shares`.
    fn set_group_shares(&mut self, path: &str, shares: u64) -> Result<(), crate::error::Error> {
        let _ = shares;
        Err(crate::error::Error::unsupported(
            self.name(),
            format!("no group scheduling (group {path:?})"),
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
    ) -> Result<(), crate::error::Error> {
        let _ = (quota_ns, period_ns);
        Err(crate::error::Error::unsupported(
            self.name(),
            format!("no CPU bandwidth control (group {path:?})"),
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
    /// `cpu` comes back online (models with one queue for all CPUs must
    /// know where they may pick; per-CPU queues need nothing).
    fn cpu_online(&mut self, cpu: usize) {
        let _ = cpu;
    }
    /// The CPUs task `t` may use now (its affinity within its cpuset), set
    /// when the machine is built and whenever they change. Models that
    /// pick from one global queue need them; per-CPU models are told
    /// through [`SchedClass::balance`]'s `allowed` and ignore this.
    fn set_allowed(&mut self, t: TaskId, cpus: &[usize]) {
        let _ = (t, cpus);
    }
    /// The scheduling work done so far (zeros for a model that keeps no
    /// count).
    fn work(&self) -> Work {
        Work::default()
    }
    /// The periodic tick (`task_tick`); true when curr must be preempted.
    fn tick(&mut self, cpu: usize, now: Ns) -> bool;
    /// A task woke on `cpu`: should it preempt curr (`check_preempt_curr`)?
    fn check_preempt_wakeup(&mut self, cpu: usize, woken: TaskId, now: Ns) -> bool;
    /// Where a waking task goes (`select_task_rq`), among `allowed` CPUs;
    /// `wake` says who wakes it and from where.
    fn select_task_rq(
        &mut self,
        t: TaskId,
        prev: usize,
        allowed: &[usize],
        wake: &WakeCtx,
    ) -> usize;
    /// The fair class's root `cfs_rq` on `cpu`, as PELT accrues from it:
    /// its load weight, its runnable tasks (`h_nr_runnable`) and whether
    /// one of them runs. Zero for models without PELT.
    fn fair_rq(&self, cpu: usize) -> (u64, u64, bool) {
        let _ = cpu;
        (0, 0, false)
    }
    /// The next entity of a root `cfs_rq` re-weighed since the last
    /// call (a group entity: `reweight_entity`), oldest first, for the
    /// machine's PELT to apply ([`crate::sched::pelt::Pelt::reweigh`]).
    fn take_root_reweigh(&mut self) -> Option<crate::sched::pelt::Reweigh> {
        None
    }
    /// `cpu` ran something of no fair class: the idle task (it stays
    /// idle after a pick and a new-idle balance found nothing), the
    /// stopper (moving its running task away) or a class above (an RT
    /// task, in a [`crate::sched::classes::Classes`] stack). Its next
    /// pick then follows no fair task (`pick_next_task_fair`'s `simple:`).
    fn ran_other_than_fair(&mut self, cpu: usize) {
        let _ = cpu;
    }
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
        pelt: Option<&crate::sched::pelt::Pelt>,
    ) -> Vec<(TaskId, usize)> {
        let _ = (cpu, now, idle, allowed, pelt);
        Vec::new()
    }
    /// A guest kernel that packs work onto busy vCPUs (the platform's
    /// `vcpu_pack_util`): models of kernels that cannot have it ignore it.
    fn set_vcpu_pack_util(&mut self, limit: Option<u64>) {
        let _ = limit;
    }
    /// The seed of the model's random draws (the platform's `seed`):
    /// models that draw none ignore it.
    fn set_seed(&mut self, seed: u64) {
        let _ = seed;
    }
    /// The active balance the last [`SchedClass::balance`] asked for, if
    /// any: (running task, its CPU, the CPU to push it to) — the
    /// balancer could not detach a running task and the kernel's stopper
    /// moves it (`active_load_balance_cpu_fn`). Taken once.
    fn take_active_balance(&mut self) -> Option<(TaskId, usize, usize)> {
        None
    }
    /// `update_misfit_status` of the task running on `cpu`, at each tick
    /// and pick: whether it is a misfit there (a bigger CPU should take
    /// it; the nohz kick's `check_misfit_status`), kept for the balancer.
    fn update_misfit_status(
        &mut self,
        cpu: usize,
        allowed: &dyn Fn(TaskId, usize) -> bool,
        pelt: Option<&crate::sched::pelt::Pelt>,
    ) -> bool {
        let _ = (cpu, allowed, pelt);
        false
    }
}

/// A boxed model is a model: every hook goes to the box's content, so the
/// machine can run a model chosen by name at run time
/// (`Machine<Box<dyn SchedClass>>`).
impl<K: SchedClass + ?Sized> SchedClass for Box<K> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn tracks_pelt(&self) -> bool {
        (**self).tracks_pelt()
    }
    fn timer_slack(&self) -> bool {
        (**self).timer_slack()
    }
    fn set_nice(&mut self, t: TaskId, nice: i32) {
        (**self).set_nice(t, nice)
    }
    fn set_policy(&mut self, t: TaskId, policy: Policy) -> Result<(), crate::error::Error> {
        (**self).set_policy(t, policy)
    }
    fn set_rt_priority(&mut self, t: TaskId, prio: i32) -> Result<(), crate::error::Error> {
        (**self).set_rt_priority(t, prio)
    }
    fn set_slice(&mut self, t: TaskId, slice_ns: Option<Ns>) -> Result<(), crate::error::Error> {
        (**self).set_slice(t, slice_ns)
    }
    fn set_task_group(&mut self, t: TaskId, path: &str) -> Result<(), crate::error::Error> {
        (**self).set_task_group(t, path)
    }
    fn set_group_shares(&mut self, path: &str, shares: u64) -> Result<(), crate::error::Error> {
        (**self).set_group_shares(path, shares)
    }
    fn set_group_quota(
        &mut self,
        path: &str,
        quota_ns: Option<Ns>,
        period_ns: Ns,
    ) -> Result<(), crate::error::Error> {
        (**self).set_group_quota(path, quota_ns, period_ns)
    }
    fn update_curr(&mut self, cpu: usize, now: Ns) {
        (**self).update_curr(cpu, now)
    }
    fn enqueue(&mut self, cpu: usize, t: TaskId, wakeup: bool, now: Ns) {
        (**self).enqueue(cpu, t, wakeup, now)
    }
    fn dequeue(&mut self, cpu: usize, t: TaskId, sleep: bool, now: Ns) {
        (**self).dequeue(cpu, t, sleep, now)
    }
    fn pick_next(&mut self, cpu: usize, now: Ns) -> Option<TaskId> {
        (**self).pick_next(cpu, now)
    }
    fn put_prev(&mut self, cpu: usize, t: TaskId, now: Ns) {
        (**self).put_prev(cpu, t, now)
    }
    fn yield_task(&mut self, cpu: usize, t: TaskId, now: Ns) {
        (**self).yield_task(cpu, t, now)
    }
    fn cpu_offline(&mut self, cpu: usize) {
        (**self).cpu_offline(cpu)
    }
    fn cpu_online(&mut self, cpu: usize) {
        (**self).cpu_online(cpu)
    }
    fn set_allowed(&mut self, t: TaskId, cpus: &[usize]) {
        (**self).set_allowed(t, cpus)
    }
    fn work(&self) -> Work {
        (**self).work()
    }
    fn tick(&mut self, cpu: usize, now: Ns) -> bool {
        (**self).tick(cpu, now)
    }
    fn check_preempt_wakeup(&mut self, cpu: usize, woken: TaskId, now: Ns) -> bool {
        (**self).check_preempt_wakeup(cpu, woken, now)
    }
    fn select_task_rq(
        &mut self,
        t: TaskId,
        prev: usize,
        allowed: &[usize],
        wake: &WakeCtx,
    ) -> usize {
        (**self).select_task_rq(t, prev, allowed, wake)
    }
    fn fair_rq(&self, cpu: usize) -> (u64, u64, bool) {
        (**self).fair_rq(cpu)
    }
    fn take_root_reweigh(&mut self) -> Option<crate::sched::pelt::Reweigh> {
        (**self).take_root_reweigh()
    }
    fn ran_other_than_fair(&mut self, cpu: usize) {
        (**self).ran_other_than_fair(cpu)
    }
    fn nr_running(&self, cpu: usize) -> usize {
        (**self).nr_running(cpu)
    }
    fn curr(&self, cpu: usize) -> Option<TaskId> {
        (**self).curr(cpu)
    }
    fn queued(&self, cpu: usize) -> Vec<TaskId> {
        (**self).queued(cpu)
    }
    fn balance(
        &mut self,
        cpu: usize,
        now: Ns,
        idle: bool,
        allowed: &dyn Fn(TaskId, usize) -> bool,
        pelt: Option<&crate::sched::pelt::Pelt>,
    ) -> Vec<(TaskId, usize)> {
        (**self).balance(cpu, now, idle, allowed, pelt)
    }
    fn take_active_balance(&mut self) -> Option<(TaskId, usize, usize)> {
        (**self).take_active_balance()
    }
    fn set_vcpu_pack_util(&mut self, limit: Option<u64>) {
        (**self).set_vcpu_pack_util(limit)
    }
    fn set_seed(&mut self, seed: u64) {
        (**self).set_seed(seed)
    }
    fn update_misfit_status(
        &mut self,
        cpu: usize,
        allowed: &dyn Fn(TaskId, usize) -> bool,
        pelt: Option<&crate::sched::pelt::Pelt>,
    ) -> bool {
        (**self).update_misfit_status(cpu, allowed, pelt)
    }
}
