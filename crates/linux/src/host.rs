//! [`LinuxHost`]: the live kernel behind corral's [`Host`] interface.

use crate::cgroup::CgroupMounts;
use crate::error::{Error, Result};
use crate::fsutil::read_cpulist;
use crate::paths::HostPaths;
use crate::placer::{Layout, Placer};
use crate::procevents::{Connector, TaskEvent};
use crate::sampler::{parse_stat, Sampler, Scope};
use crate::sysfs;
use corral_core::host::{Host, HostError, TaskEvents, ThreadProgress};
use corral_core::plan::{Change, GroupKind};
use corral_core::sample::Snapshot;
use corral_core::share::{nice_to_weight, Level, NICE_0_WEIGHT};
use corral_core::{CpuSet, Topology};
use std::path::{Path, PathBuf};

impl HostError for Error {
    fn is_gone(&self) -> bool {
        Error::is_gone(self)
    }
}

/// The live machine: sampler, placer and topology readers.
#[derive(Debug)]
pub struct LinuxHost {
    paths: HostPaths,
    sampler: Sampler,
    placer: Placer,
    dry_run: bool,
    /// The cpu controller's hierarchy (for effective shares).
    cpu_mount: Option<PathBuf>,
    version_v1: bool,
    /// The process connector, once [`LinuxHost::listen_for_tasks`] opened it.
    connector: Option<Connector>,
    events: Vec<TaskEvent>,
    /// Events a full pass took in that the daemon has not taken yet.
    pending: TaskEvents,
    /// Whether the daemon takes task events (it runs quick steps); if
    /// not, a pass uses the events and drops them.
    consumer: bool,
    /// corral's own threads and the CPU set each had, once
    /// [`LinuxHost::keep_self_off_dedicated`] asked for them to stay off the
    /// CPUs it gives threads to themselves.
    own: Option<Vec<(u32, CpuSet)>>,
    /// The CPUs of each dedicated or boost group, by name.
    taken: std::collections::BTreeMap<String, CpuSet>,
}

impl LinuxHost {
    /// A host for `scope`, placing through `layout` under `root_name`
    /// (`corral`, or a test's own). With `dry_run`, nothing is changed.
    pub fn new(
        paths: HostPaths,
        scope: Scope,
        layout: Layout,
        root_name: &str,
        dry_run: bool,
    ) -> Result<LinuxHost> {
        let online = read_cpulist(&paths.cpu_dir().join("online"))?;
        let mounts = CgroupMounts::discover(&paths)?;
        let (cpu_mount, version_v1) = match &layout {
            Layout::V1 { cpu, .. } => (Some(cpu.clone()), true),
            Layout::V2 { unified } => (Some(unified.clone()), false),
            // Units' weights still decide between cgroups: read them.
            Layout::Threads => (
                mounts
                    .v2
                    .as_ref()
                    .filter(|h| h.root == "/")
                    .map(|h| h.dir.clone()),
                false,
            ),
        };
        let mut sampler = Sampler::new(paths.clone(), scope, online, root_name);
        match &layout {
            Layout::V1 { cpuset, .. } => sampler.set_cpusets(cpuset.clone(), true),
            Layout::V2 { unified } => sampler.set_cpusets(unified.clone(), false),
            Layout::Threads => {}
        }
        Ok(LinuxHost {
            sampler,
            placer: Placer::new(layout, root_name, &paths),
            paths,
            dry_run,
            cpu_mount,
            version_v1,
            connector: None,
            events: Vec::new(),
            pending: TaskEvents::default(),
            consumer: false,
            own: None,
            taken: Default::default(),
        })
    }

    /// Keeps the daemon's own threads off every core it dedicates (or
    /// gives a boosted thread to itself): a step reading `/proc` for a
    /// hundred threads is a tenth of a CPU or more on a slow machine, and
    /// on such a core it takes that from the very thread the core was
    /// given to (the kernel wakes it there when no other CPU is idle).
    /// Their sets are put back by [`Host::restore`]. Only for the daemon's
    /// own process (`corral run`), not for one run inside a test's or the
    /// lab's process, whose other threads are not its own.
    pub fn keep_self_off_dedicated(&mut self) {
        self.own = Some(Vec::new());
    }

    /// After a group's change: corral's threads onto the online CPUs no
    /// one has to itself, each one's set remembered the first time it is
    /// seen; back on their own sets when every CPU is someone's. A thread
    /// that has exited meanwhile is skipped; a set the kernel refuses
    /// (hot-plug) leaves a thread where it is.
    fn confine_self(&mut self, change: &Change) {
        match change {
            // A boost group on one CPU is a boost's CPU to itself or a
            // heavy thread's core; on more, the shared or latency CPUs.
            Change::SetGroup(g)
                if g.kind == GroupKind::Dedicated
                    || (g.kind == GroupKind::Boost && g.cpus.len() == 1) =>
            {
                self.taken.insert(g.name.clone(), g.cpus.clone());
            }
            Change::SetGroup(g) => {
                self.taken.remove(&g.name);
            }
            Change::RemoveGroup { name } => {
                self.taken.remove(name);
            }
            _ => return,
        }
        if self.own.is_none() {
            return;
        }
        let Ok(online) = read_cpulist(&self.paths.cpu_dir().join("online")) else {
            return;
        };
        let taken = self
            .taken
            .values()
            .fold(CpuSet::default(), |all, c| all.union(c));
        let free = online.difference(&taken);
        let Some(own) = self.own.as_mut() else {
            return;
        };
        let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
            return;
        };
        for tid in dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        {
            let known = own.iter().find(|(t, _)| *t == tid).map(|(_, m)| m.clone());
            let before = match known {
                Some(m) => m,
                None => match crate::sched::sched_getaffinity(Some(tid)) {
                    Ok(m) => {
                        own.push((tid, m.clone()));
                        m
                    }
                    Err(_) => continue,
                },
            };
            let to = if free.is_empty() { &before } else { &free };
            let _ = crate::sched::sched_setaffinity(tid, to);
        }
    }

    /// corral's threads back on the sets they had.
    fn release_self(&mut self) {
        for (tid, mask) in self.own.as_mut().map(std::mem::take).unwrap_or_default() {
            let _ = crate::sched::sched_setaffinity(tid, &mask);
        }
    }

    /// Takes in the process connector's events: threads born in scope are
    /// adopted by the sampler, and the events kept for the daemon's next
    /// [`Host::task_events`].
    fn take_in_events(&mut self) {
        let Some(c) = self.connector.as_mut() else {
            return;
        };
        self.events.clear();
        c.drain(&mut self.events);
        for e in &self.events {
            match *e {
                TaskEvent::Fork {
                    tid,
                    pid,
                    parent_pid,
                    parent_tid,
                } => {
                    if self.sampler.adopt(tid, pid, parent_pid) {
                        self.pending.born.push((tid, pid));
                        if tid == pid {
                            self.pending.spawners.push(parent_tid);
                        }
                    }
                }
                // A new program is a new thread to classify.
                TaskEvent::Exec { tid, pid } => {
                    if self.sampler.adopt(tid, pid, pid) {
                        self.pending.born.push((tid, pid));
                    }
                }
                TaskEvent::Exit { tid, .. } => self.pending.exited.push(tid),
            }
        }
        if !self.consumer {
            self.pending = TaskEvents::default();
        }
    }

    /// A full pass of the sampler (`whole`: threads it has never seen are
    /// read whole at once).
    fn pass(&mut self, whole: bool) -> Result<Snapshot> {
        let now = self.now_ns();
        // Every fork until now reaches the sampler (`adopt`) first, so the
        // pass need not read `children` files, unless events were lost.
        self.take_in_events();
        let reported = self.connector.as_ref().is_some_and(|c| !c.lost);
        self.sampler.set_forks_reported(reported);
        let snap = if whole {
            self.sampler.sample_whole(now)
        } else {
            self.sampler.sample(now)
        };
        if let Some(c) = self.connector.as_mut() {
            c.lost = false;
        }
        snap
    }

    /// Subscribes to the kernel's process connector, so that new threads
    /// are sampled from birth and placed threads that exit leave the plan
    /// at once ([`Host::task_events`]). Needs CAP_NET_ADMIN.
    pub fn listen_for_tasks(&mut self) -> std::io::Result<()> {
        self.connector = Some(Connector::open()?);
        Ok(())
    }

    /// Checks the scope's roots: an error for one that cannot be used,
    /// notes for one that is never managed itself ([`Sampler::check_scope`]).
    pub fn check_scope(&self) -> std::result::Result<Vec<String>, String> {
        self.sampler.check_scope()
    }

    /// Read each process's executable (for `exe` rules).
    pub fn want_exe(&mut self, yes: bool) {
        self.sampler.want_exe(yes);
    }

    /// corral's root directories in cgroupfs.
    /// The placer (the crash-safe record, reconciling at start).
    pub fn placer_mut(&mut self) -> &mut Placer {
        &mut self.placer
    }

    pub fn root_dirs(&self) -> Vec<PathBuf> {
        self.placer.root_dirs()
    }

    /// Files the sampler keeps open.
    pub fn open_files(&self) -> usize {
        self.sampler.open_files
    }
}

impl Host for LinuxHost {
    type Error = Error;

    fn now_ns(&self) -> u64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }

    fn topology(&mut self) -> Result<Topology> {
        let t = sysfs::read_topology(&self.paths)?;
        self.sampler.set_online(t.online.clone());
        Ok(t)
    }

    fn online(&mut self) -> Result<CpuSet> {
        read_cpulist(&self.paths.cpu_dir().join("online"))
    }

    fn sample(&mut self) -> Result<Snapshot> {
        self.pass(false)
    }

    fn sample_whole(&mut self) -> Result<Snapshot> {
        self.pass(true)
    }

    fn task_events(&mut self) -> TaskEvents {
        self.consumer = true;
        self.take_in_events();
        std::mem::take(&mut self.pending)
    }

    fn sample_threads(&mut self, which: &[(u32, u32)]) -> Result<Snapshot> {
        let now = self.now_ns();
        self.sampler.sample_threads(which, now)
    }

    fn apply(&mut self, change: &Change) -> Result<()> {
        if self.dry_run {
            return Ok(());
        }
        match change {
            Change::SetGroup(spec) => {
                self.placer.set_group(spec)?;
                self.sampler.set_own_masks(self.placer.narrow_masks());
                self.confine_self(change);
                Ok(())
            }
            Change::Move { tid, pid, group } => {
                if self.placer.move_thread(*tid, *pid, group)? {
                    self.sampler.pin(*tid, *pid);
                }
                Ok(())
            }
            Change::Release { tid } => self.placer.release(*tid),
            Change::SendHome { tid, pid } => self.placer.send_home(*tid, *pid),
            Change::RemoveGroup { name } => {
                self.placer.remove_group(name)?;
                self.confine_self(change);
                self.sampler.set_own_masks(self.placer.narrow_masks());
                Ok(())
            }
        }
    }

    fn limits_real_time(&self) -> bool {
        self.placer.limits_real_time()
    }

    fn prepare(&mut self, changes: &[Change]) -> Result<()> {
        if self.dry_run {
            return Ok(());
        }
        let moves: Vec<(u32, u32)> = changes
            .iter()
            .filter_map(|c| match c {
                Change::Move { tid, pid, .. } => Some((*tid, *pid)),
                _ => None,
            })
            .collect();
        self.placer.prepare(&moves)
    }

    fn finish(&mut self) -> Result<()> {
        if self.dry_run {
            return Ok(());
        }
        self.placer.finish()
    }

    fn restore(&mut self) -> Result<()> {
        if self.dry_run {
            return Ok(());
        }
        self.release_self();
        self.placer.restore_all()
    }

    fn share_levels(&mut self, tid: u32) -> Result<Option<(Vec<Level>, u32)>> {
        let Some(mount) = self.cpu_mount.clone() else {
            return Ok(None);
        };
        share_levels(&self.paths, &mount, self.version_v1, tid)
    }

    fn thread_progress(&mut self, tid: u32) -> Result<Option<ThreadProgress>> {
        let dir = self.paths.procfs.join(tid.to_string());
        let Some(stat) = crate::fsutil::read_opt(&dir.join("stat"))? else {
            return Ok(None);
        };
        let Some(st) = parse_stat(&stat) else {
            return Ok(None);
        };
        let Some(sched) = crate::fsutil::read_opt(&dir.join("schedstat"))? else {
            return Ok(None);
        };
        let run_ns = crate::sampler::parse_schedstat(sched.as_bytes()).map_or(0, |(r, _, _)| r);
        // R is runnable or running; anything else (S, D, I, T, …) is not.
        Ok(Some(ThreadProgress {
            sleeping: st.state != 'R',
            run_ns,
        }))
    }

    fn describe(&self) -> String {
        let backend = match self.placer.layout() {
            Layout::V1 { cpu, cpuset } => {
                format!("cgroup v1 ({}, {})", cpu.display(), cpuset.display())
            }
            Layout::V2 { unified } => format!("cgroup v2 ({})", unified.display()),
            Layout::Threads => "per-thread levers (affinity, nice, slice; no cgroup)".into(),
        };
        if self.dry_run {
            format!("{backend}, dry run")
        } else {
            backend
        }
    }
}

/// The levels above `tid` in the cpu hierarchy mounted at `mount`,
/// counting as competitors the entities that have a runnable (`R`) task
/// now — those that would take CPU from it now — plus the thread itself.
pub fn share_levels(
    paths: &HostPaths,
    mount: &Path,
    v1: bool,
    tid: u32,
) -> Result<Option<(Vec<Level>, u32)>> {
    let proc_tid = paths.procfs.join(tid.to_string());
    let Some(cgroup_text) = crate::fsutil::read_opt(&proc_tid.join("cgroup"))? else {
        return Ok(None);
    };
    let path = cgroup_text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, ctrl, p) = (f.next()?, f.next()?, f.next()?);
        let hit = if v1 {
            ctrl.split(',').any(|c| c == "cpu")
        } else {
            id == "0" && ctrl.is_empty()
        };
        hit.then(|| p.to_string())
    });
    let Some(path) = path else { return Ok(None) };
    let Some(stat) = crate::fsutil::read_opt(&proc_tid.join("stat"))? else {
        return Ok(None);
    };
    let me = parse_stat(&stat)
        .ok_or_else(|| Error::parse(&proc_tid.join("stat"), &stat, "a stat line"))?;
    let mine = crate::procfs::cpus_allowed(paths, Some(tid))?;
    let cpus = mine.as_ref().map_or(1, |c| c.len());
    // A runnable task competes only where it may run: one whose affinity
    // (its cpuset's CPUs included) shares no CPU with this thread's takes
    // nothing from it (a hog alone on its dedicated CPU has it all).
    let may_compete = |t: u32| -> bool {
        let Some(mine) = &mine else { return true };
        match crate::procfs::cpus_allowed(paths, Some(t)) {
            Ok(Some(theirs)) => !theirs.intersection(mine).is_empty(),
            _ => false,
        }
    };

    let tasks_file = if v1 { "tasks" } else { "cgroup.threads" };
    let weight_of_group = |dir: &Path| -> u64 {
        if v1 {
            read_u64(&dir.join("cpu.shares")).unwrap_or(NICE_0_WEIGHT)
        } else {
            read_u64(&dir.join("cpu.weight"))
                .map_or(NICE_0_WEIGHT, corral_core::share::weight_to_shares)
        }
    };
    // Runnable tasks directly in `dir` (excluding `tid`), by nice weight.
    let runnable_tasks = |dir: &Path| -> u64 {
        let text = std::fs::read_to_string(dir.join(tasks_file)).unwrap_or_default();
        text.split_whitespace()
            .filter_map(|t| t.parse::<u32>().ok())
            .filter(|&t| t != tid)
            .filter_map(|t| {
                std::fs::read_to_string(paths.procfs.join(t.to_string()).join("stat"))
                    .ok()
                    .map(|s| (t, s))
            })
            .filter_map(|(t, s)| Some((t, parse_stat(&s)?)))
            .filter(|(t, s)| s.state == 'R' && may_compete(*t))
            .map(|(_, s)| nice_to_weight(s.nice))
            .sum()
    };
    let has_runnable =
        |dir: &Path| -> bool { subtree_has_runnable(paths, dir, tasks_file, &may_compete) };

    // XXX: with autogroups on, the root's tasks compete as their
    // sessions' groups (`procfs::autogroup`), not one by one as counted
    // here.
    let mut levels = Vec::new();
    let mut dir = mount.join(path.trim_start_matches('/'));
    // The thread among the tasks and child groups of its own cgroup.
    let own = nice_to_weight(me.nice);
    let mut total = own + runnable_tasks(&dir);
    total += child_dirs(&dir)
        .filter(|c| has_runnable(c))
        .map(|c| weight_of_group(&c))
        .sum::<u64>();
    levels.push(Level { weight: own, total });
    // Each group on the way up among its siblings.
    while dir != mount {
        let Some(parent) = dir.parent().map(Path::to_path_buf) else {
            break;
        };
        let own = weight_of_group(&dir);
        let mut total = own + runnable_tasks(&parent);
        total += child_dirs(&parent)
            .filter(|c| *c != dir && has_runnable(c))
            .map(|c| weight_of_group(&c))
            .sum::<u64>();
        levels.push(Level { weight: own, total });
        dir = parent;
    }
    levels.reverse();
    Ok(Some((levels, cpus)))
}

/// The daemon's own threads are runnable while they read: not competitors.
fn is_own_thread(paths: &HostPaths, tid: u32) -> bool {
    paths
        .procfs
        .join("self/task")
        .join(tid.to_string())
        .exists()
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn child_dirs(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
}

/// Whether a task under `dir` is runnable and passes `may_compete`.
fn subtree_has_runnable(
    paths: &HostPaths,
    dir: &Path,
    tasks_file: &str,
    may_compete: &dyn Fn(u32) -> bool,
) -> bool {
    let text = std::fs::read_to_string(dir.join(tasks_file)).unwrap_or_default();
    let here = text
        .split_whitespace()
        .filter_map(|t| t.parse::<u32>().ok())
        .filter(|&t| !is_own_thread(paths, t))
        .any(|t| {
            std::fs::read_to_string(paths.procfs.join(t.to_string()).join("stat"))
                .ok()
                .and_then(|s| parse_stat(&s))
                .is_some_and(|s| s.state == 'R')
                && may_compete(t)
        });
    here || child_dirs(dir).any(|c| subtree_has_runnable(paths, &c, tasks_file, may_compete))
}
