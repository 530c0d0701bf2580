//! [`SimHost`]: the simulated machine behind corral's [`Host`] interface,
//! so that the daemon's own loop (`corral_daemon::Daemon`) manages a
//! simulation exactly as it manages the live kernel.
//!
//! Each rt-app thread is a thread of one process (rt-app runs its tasks as
//! threads): pid [`SIM_PID`], tid `SIM_PID + 1 + index`. A sample gives the
//! counters the live sampler reads from procfs, with the same meaning:
//!
//! | `ThreadSample` | live source | simulated |
//! |---|---|---|
//! | `run_ns` | schedstat 1 | CPU time charged so far |
//! | `wait_ns` | schedstat 2 (`run_delay`) | runnable-not-running time, added when the thread reaches a CPU |
//! | `timeslices` | schedstat 3 | times put on a CPU |
//! | `voluntary_switches` | status | times it blocked |
//! | `involuntary_switches` | status | times preempted |
//! | `nr_migrations` | sched | migrations |
//! | `util_avg` | sched (PELT) | the task's PELT `util_avg` as of its last update (`sched::pelt`), on a kernel that keeps it (EEVDF era); `None` for an RT thread or on an older kernel |
//!
//! Changes map onto the machine's runtime controls as the live placer's
//! cgroup writes do: a group is `/corral/NAME` in the cpu controller (its
//! `cpu.shares`) plus a cpuset (each member's allowed CPUs); a move is
//! `sched_move_task`; a group's nice and slice go to its members, and a
//! release gives back the thread's cgroup, nice and slice.

use crate::sched::kernel::{SchedClass, TaskId};
use crate::sched::machine::{Machine, TaskState};
use corral_core::host::{Host, HostError, ThreadProgress};
use corral_core::plan::{Change, GroupSpec};
use corral_core::sample::{Snapshot, ThreadSample};
use corral_core::share::{nice_to_weight, Level};
use corral_core::topology::RawTopology;
use corral_core::{CpuSet, Topology};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The simulated rt-app process's pid.
pub const SIM_PID: u32 = 1000;

/// corral's root in the simulated cpu hierarchy (as `LinuxHost` makes
/// `/sys/fs/cgroup/cpu/corral`).
const ROOT: &str = "/corral";

/// Why a simulated change failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The thread has exited (the live `ESRCH`/`ENOENT`).
    Gone(u32),
    /// The change is invalid (the live `EINVAL`/`EBUSY`), with the reason.
    Refused(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Gone(tid) => write!(f, "thread {tid} has exited"),
            SimError::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for SimError {}

impl HostError for SimError {
    fn is_gone(&self) -> bool {
        matches!(self, SimError::Gone(_))
    }
}

/// A thread's own settings, given back on release.
#[derive(Debug, Clone)]
struct Origin {
    cgroup: Arc<str>,
    nice: i32,
}

/// The simulated machine as the daemon sees it.
pub struct SimHost<K: SchedClass> {
    m: Machine<K>,
    comm: Vec<Arc<str>>,
    origin: Vec<Origin>,
    /// corral's groups in force.
    groups: BTreeMap<String, GroupSpec>,
    /// Where corral placed each thread.
    placed: BTreeMap<TaskId, String>,
    /// Every change applied, with its simulated time (ns).
    log: Vec<(u64, Change)>,
}

impl<K: SchedClass> SimHost<K> {
    /// Wraps a machine that has not run yet (or has: counters carry on).
    pub fn new(m: Machine<K>) -> SimHost<K> {
        let n = m.ntasks();
        let comm = (0..n)
            .map(|t| {
                let name = &m.task_stats(t).name;
                // The kernel keeps 15 bytes of a thread's name (TASK_COMM_LEN).
                let mut end = name.len().min(15);
                while !name.is_char_boundary(end) {
                    end -= 1;
                }
                Arc::from(&name[..end])
            })
            .collect();
        let origin: Vec<Origin> = (0..n)
            .map(|t| Origin {
                cgroup: Arc::from(m.spec_of(t).taskgroup.as_deref().unwrap_or("/")),
                nice: m.task_nice(t),
            })
            .collect();
        SimHost {
            comm,
            origin,
            m,
            groups: BTreeMap::new(),
            placed: BTreeMap::new(),
            log: Vec::new(),
        }
    }

    /// The machine.
    pub fn machine(&self) -> &Machine<K> {
        &self.m
    }

    /// The machine, to run it.
    pub fn machine_mut(&mut self) -> &mut Machine<K> {
        &mut self.m
    }

    /// Gives the machine back.
    pub fn into_machine(self) -> Machine<K> {
        self.m
    }

    /// The tid of simulated thread `t`.
    pub fn tid_of(t: TaskId) -> u32 {
        SIM_PID + 1 + t as u32
    }

    /// The simulated thread of `tid`, if it is one.
    pub fn task_of(&self, tid: u32) -> Option<TaskId> {
        let t = tid.checked_sub(SIM_PID + 1)? as usize;
        (t < self.m.ntasks()).then_some(t)
    }

    /// The first simulated thread named `name` (rt-app's task name; an
    /// instance of a multi-instance task is `name-N`).
    pub fn task_named(&self, name: &str) -> Option<TaskId> {
        (0..self.m.ntasks()).find(|&t| self.m.task_stats(t).name == name)
    }

    /// Every change applied so far, with its simulated time.
    pub fn changes(&self) -> &[(u64, Change)] {
        &self.log
    }

    /// The corral group holding simulated thread `t`, if any.
    pub fn group_of(&self, t: TaskId) -> Option<&GroupSpec> {
        self.placed.get(&t).and_then(|g| self.groups.get(g))
    }

    fn live(&self, tid: u32) -> Result<TaskId, SimError> {
        let t = self.task_of(tid).ok_or(SimError::Gone(tid))?;
        if self.m.task_state(t) == TaskState::Exited {
            return Err(SimError::Gone(tid));
        }
        Ok(t)
    }

    fn cpus_of(&self, spec: &GroupSpec) -> Result<Vec<usize>, SimError> {
        let online = self.m.online();
        let cpus: Vec<usize> = spec.cpus.iter().map(|c| c as usize).collect();
        if cpus.is_empty() {
            return Err(SimError::Refused(format!(
                "group {}: an empty cpuset",
                spec.name
            )));
        }
        // cpuset.cpus must be within the parent's (online) CPUs.
        if let Some(c) = cpus
            .iter()
            .find(|&&c| !online.get(c).copied().unwrap_or(false))
        {
            return Err(SimError::Refused(format!(
                "group {}: CPU {c} is not online",
                spec.name
            )));
        }
        Ok(cpus)
    }

    /// Gives `t` its group's levers: cpuset, nice and slice.
    fn enforce(&mut self, t: TaskId, spec: &GroupSpec, cpus: &[usize]) -> Result<(), SimError> {
        self.m
            .set_cpuset(t, Some(cpus.to_vec()))
            .map_err(|e| SimError::Refused(e.to_string()))?;
        let nice = spec.nice.unwrap_or(self.origin[t].nice);
        if nice != self.m.task_nice(t) && self.fair(t) {
            self.m.renice(t, nice);
        }
        if self.fair(t) {
            // Models without per-task slices (CFS) refuse, as a kernel
            // before 6.12 ignores sched_runtime: not an error.
            let _ = self.m.set_slice(t, spec.slice_ns);
        }
        Ok(())
    }

    fn fair(&self, t: TaskId) -> bool {
        !self.m.spec_of(t).policy.is_rt()
    }

    fn release(&mut self, t: TaskId) -> Result<(), SimError> {
        if self.placed.remove(&t).is_none() {
            return Ok(());
        }
        self.put_back(t)
    }

    /// Gives `t` its recorded cgroup, CPUs, nice and slice again.
    fn put_back(&mut self, t: TaskId) -> Result<(), SimError> {
        if self.m.task_state(t) == TaskState::Exited {
            return Ok(());
        }
        let origin = self.origin[t].clone();
        self.m
            .move_task(t, &origin.cgroup)
            .map_err(|e| SimError::Refused(e.to_string()))?;
        self.m
            .set_cpuset(t, None)
            .map_err(|e| SimError::Refused(e.to_string()))?;
        if self.fair(t) {
            if self.m.task_nice(t) != origin.nice {
                self.m.renice(t, origin.nice);
            }
            let _ = self.m.set_slice(t, None);
        }
        Ok(())
    }

    fn sample_of(&self, t: TaskId) -> ThreadSample {
        let s = self.m.task_stats(t);
        let spec = self.m.spec_of(t);
        let online = self.m.online();
        let narrowed = online
            .iter()
            .enumerate()
            .any(|(c, &on)| on && !self.m.task_affinity(t).contains(&c));
        ThreadSample {
            tid: Self::tid_of(t),
            pid: SIM_PID,
            comm: self.comm[t].clone(),
            run_ns: s.cpu_ns,
            wait_ns: s.wait_ns,
            timeslices: s.switches,
            voluntary_switches: s.sleeps,
            involuntary_switches: s.preemptions,
            nr_migrations: Some(s.migrations),
            util_avg: self
                .m
                .task_pelt(t)
                .filter(|_| self.fair(t))
                .map(|a| a.util_avg as u32),
            cpu: self.m.task_cpu(t) as u32,
            policy: spec.policy.into(),
            nice: self.m.task_nice(t),
            kernel_thread: false,
            uid: 0,
            exe: Some("/usr/bin/rt-app".into()),
            cgroup: Some(Arc::from(seen_cgroup(self.m.task_cgroup(t)))),
            in_own_group: self.m.task_cgroup(t).starts_with(&format!("{ROOT}/")),
            affinity_narrowed: narrowed,
            allowed: narrowed.then(|| {
                self.m
                    .task_affinity(t)
                    .iter()
                    .map(|&c| c as u32)
                    .filter(|&c| online.get(c as usize).copied().unwrap_or(false))
                    .collect()
            }),
        }
    }
}

/// A task's cgroup as `/proc/PID/cgroup` shows it: an autogroup
/// (`/autogroup-N`, a recording's thread of the root cgroup on a kernel
/// with autogroups) is invisible there, and the task is in the root, as the
/// live daemon sees it (`corral_linux::host::share_levels` too).
fn seen_cgroup(path: &str) -> &str {
    if path.starts_with("/autogroup-") {
        "/"
    } else {
        path
    }
}

impl<K: SchedClass> Host for SimHost<K> {
    type Error = SimError;

    fn now_ns(&self) -> u64 {
        self.m.time()
    }

    fn topology(&mut self) -> Result<Topology, SimError> {
        let n = self.m.online().len() as u32;
        let all = CpuSet::first_n(n);
        let online: CpuSet = (0..n).filter(|&c| self.m.online()[c as usize]).collect();
        let caps = &self.m.platform().capacities;
        let cpus = (0..n)
            .map(|c| corral_core::topology::RawCpu {
                id: c,
                perf: corral_core::topology::PerfReadings {
                    cpu_capacity: Some(caps[c as usize] as u64),
                    ..Default::default()
                },
                package_id: Some(0),
                core_id: Some(c),
                core_cpus: Some(CpuSet::from_iter([c])),
                ..Default::default()
            })
            .collect();
        Ok(Topology::from_raw(RawTopology {
            possible: all.clone(),
            present: all,
            offline: None,
            online,
            cpus,
            ..Default::default()
        }))
    }

    fn online(&mut self) -> Result<CpuSet, SimError> {
        let on = self.m.online();
        Ok((0..on.len() as u32).filter(|&c| on[c as usize]).collect())
    }

    fn sample(&mut self) -> Result<Snapshot, SimError> {
        let threads = (0..self.m.ntasks())
            // A recording's background (`corral_background`) is outside
            // the daemon's scope, as on the live machine.
            .filter(|&t| {
                self.m.task_state(t) != TaskState::Exited
                    && self.m.task_born(t)
                    && !self.m.spec_of(t).background
            })
            .map(|t| self.sample_of(t))
            .collect();
        Ok(Snapshot {
            at_ns: self.m.time(),
            threads,
        })
    }

    fn apply(&mut self, change: &Change) -> Result<(), SimError> {
        let now = self.m.time();
        match change {
            Change::SetGroup(spec) => {
                let cpus = self.cpus_of(spec)?;
                let path = format!("{ROOT}/{}", spec.name);
                self.m
                    .set_group_shares(&path, spec.shares)
                    .map_err(|e| SimError::Refused(e.to_string()))?;
                self.groups.insert(spec.name.clone(), spec.clone());
                let members: Vec<TaskId> = self
                    .placed
                    .iter()
                    .filter(|(_, g)| **g == spec.name)
                    .map(|(&t, _)| t)
                    .collect();
                for t in members {
                    if self.m.task_state(t) != TaskState::Exited {
                        self.enforce(t, spec, &cpus)?;
                    }
                }
            }
            Change::Move { tid, group, .. } => {
                let t = self.live(*tid)?;
                let spec =
                    self.groups.get(group).cloned().ok_or_else(|| {
                        SimError::Refused(format!("group {group} was never created"))
                    })?;
                let cpus = self.cpus_of(&spec)?;
                let path = format!("{ROOT}/{group}");
                if **self.m.task_cgroup(t) != *path {
                    self.m
                        .move_task(t, &path)
                        .map_err(|e| SimError::Refused(e.to_string()))?;
                }
                self.placed.insert(t, group.clone());
                self.enforce(t, &spec, &cpus)?;
            }
            Change::Release { tid } => {
                let t = self.task_of(*tid).ok_or(SimError::Gone(*tid))?;
                self.release(t)?;
            }
            Change::RemoveGroup { name } => {
                // An exited thread has left its cgroup (`cgroup_exit`).
                let m = &self.m;
                self.placed
                    .retain(|&t, _| m.task_state(t) != TaskState::Exited);
                if let Some(t) = self
                    .placed
                    .iter()
                    .find(|(_, g)| *g == name)
                    .map(|(t, _)| *t)
                {
                    return Err(SimError::Refused(format!(
                        "group {name} still holds thread {} (EBUSY)",
                        Self::tid_of(t)
                    )));
                }
                self.groups.remove(name);
            }
            // XXX: the simulator has no real-time group scheduling (no
            // group's real-time budget), so where a real-time task's cpu
            // cgroup is changes nothing it models: left where it is.
            Change::SendHome { .. } => {}
        }
        self.log.push((now, change.clone()));
        Ok(())
    }

    fn restore(&mut self) -> Result<(), SimError> {
        let placed: Vec<TaskId> = self.placed.keys().copied().collect();
        for t in placed {
            self.release(t)?;
        }
        // Threads born inside corral's groups (a fork inherits its
        // parent's cgroup, cpuset, nice and slice) leave them too.
        let inside = format!("{ROOT}/");
        for t in 0..self.m.ntasks() {
            if self.m.task_cgroup(t).starts_with(&inside) {
                self.put_back(t)?;
            }
        }
        self.groups.clear();
        Ok(())
    }

    fn share_levels(&mut self, tid: u32) -> Result<Option<(Vec<Level>, u32)>, SimError> {
        let Some(t) = self.task_of(tid) else {
            return Ok(None);
        };
        if self.m.task_state(t) == TaskState::Exited {
            return Ok(None);
        }
        // Competitors now: the runnable threads (and the groups holding
        // runnable threads) beside `t` at each level of its cgroup path.
        let runnable = |u: TaskId| {
            matches!(
                self.m.task_state(u),
                TaskState::Runnable | TaskState::Running
            )
        };
        let shares_of = |path: &str| -> u64 {
            path.strip_prefix(ROOT)
                .and_then(|p| p.strip_prefix('/'))
                .and_then(|name| self.groups.get(name))
                .map_or(1024, |g| g.shares)
        };
        let path = seen_cgroup(self.m.task_cgroup(t)).to_string();
        let mut levels = Vec::new();
        let mut dir = path.trim_end_matches('/').to_string();
        let own = nice_to_weight(self.m.task_nice(t));
        let mut weight = own;
        loop {
            // Everything directly in `dir`: threads, and child groups with
            // a runnable thread inside.
            let mut total = weight;
            let mut children: Vec<String> = Vec::new();
            for u in 0..self.m.ntasks() {
                if u == t || !runnable(u) {
                    continue;
                }
                let cg = seen_cgroup(self.m.task_cgroup(u)).trim_end_matches('/');
                if cg == dir {
                    total += nice_to_weight(self.m.task_nice(u));
                } else if let Some(rest) = cg.strip_prefix(&format!("{dir}/")) {
                    let child = format!("{dir}/{}", rest.split('/').next().unwrap_or(rest));
                    if !children.contains(&child)
                        && !path.starts_with(&format!("{child}/"))
                        && path != child
                    {
                        children.push(child);
                    }
                }
            }
            total += children.iter().map(|c| shares_of(c)).sum::<u64>();
            levels.push(Level { weight, total });
            if dir.is_empty() {
                break;
            }
            weight = shares_of(&dir);
            dir = match dir.rfind('/') {
                Some(i) => dir[..i].to_string(),
                None => String::new(),
            };
        }
        levels.reverse();
        Ok(Some((levels, self.m.task_allowed(t).len() as u32)))
    }

    fn thread_progress(&mut self, tid: u32) -> Result<Option<ThreadProgress>, SimError> {
        let Some(t) = self.task_of(tid) else {
            return Ok(None);
        };
        let state = self.m.task_state(t);
        if state == TaskState::Exited {
            return Ok(None);
        }
        Ok(Some(ThreadProgress {
            sleeping: state == TaskState::Sleeping,
            run_ns: self.m.task_stats(t).cpu_ns,
        }))
    }

    fn describe(&self) -> String {
        format!(
            "simulator ({}, {} CPUs)",
            self.m.kernel().name(),
            self.m.online().len()
        )
    }
}
