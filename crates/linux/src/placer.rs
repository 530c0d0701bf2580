//! The applier: corral's groups in cgroupfs, and moving threads in and
//! back out of them.
//!
//! Three backends behind one type, [`Placer`]:
//!
//! - **v1**: a `corral/` group in the `cpu` hierarchy (`cpu.shares`) and
//!   one in the `cpuset` hierarchy (`cpuset.cpus`, `cpuset.mems`), a child
//!   per planned group in each; a thread moves by writing its TID to the
//!   `tasks` file of both.
//! - **v2**: a `corral/` domain under the unified mount with `+cpu +cpuset`
//!   in its `cgroup.subtree_control` and one *threaded* child per planned
//!   group (`cpuset.cpus`, `cpu.weight`). v2 lets the threads of a process
//!   sit in different groups only inside one threaded subtree, so the
//!   process first moves into `corral/` (`cgroup.procs`), then each
//!   managed thread into its group (`cgroup.threads`). corral never
//!   changes anything above its own group: when the unified root does not
//!   delegate `cpu` and `cpuset`, it says so and stops.
//! - **threads**: no cgroup at all, for a host whose cgroup tree systemd
//!   owns (ARCHITECTURE.md, "On a systemd host"). A group is a CPU set,
//!   a nice value and a slice that its members get through their own
//!   levers (`sched_setaffinity`, `sched_setattr`); every thread stays in
//!   its unit. A group's weight has no lever here and is not applied.
//!
//! The placer remembers where every thread (v2: every process) was before
//! its first move and puts it back on [`Placer::release`] and
//! [`Placer::restore_all`], which also moves out threads that were born
//! inside corral's groups, and removes every group it made. A thread born
//! inside (a command a managed shell started) was never anywhere else: its
//! origin is its process's, or its nearest recorded ancestor process's,
//! else the hierarchy's root — never a group of corral's own.

use crate::cgroup::CgroupMounts;
use crate::error::{Error, Result};
use crate::paths::HostPaths;
use corral_core::config::CgroupChoice;
use corral_core::plan::{GroupKind, GroupSpec};
use corral_core::share::shares_to_weight;
use corral_core::CpuSet;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Where corral's groups live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    V1 {
        /// The cpu hierarchy's mount directory.
        cpu: PathBuf,
        /// The cpuset hierarchy's mount directory.
        cpuset: PathBuf,
    },
    V2 {
        /// The unified hierarchy's mount directory.
        unified: PathBuf,
    },
    /// Per-thread levers only; nothing is written to cgroupfs.
    Threads,
}

impl Layout {
    /// Picks the backend: v1 when both `cpu` and `cpuset` are bound to v1
    /// hierarchies (a controller bound to v1 is unavailable to v2), else v2.
    pub fn choose(mounts: &CgroupMounts, choice: CgroupChoice) -> Result<Layout, String> {
        let v1 = match (mounts.v1_with("cpu"), mounts.v1_with("cpuset")) {
            (Some(cpu), Some(cpuset)) if cpu.root == "/" && cpuset.root == "/" => {
                Some(Layout::V1 {
                    cpu: cpu.dir.clone(),
                    cpuset: cpuset.dir.clone(),
                })
            }
            _ => None,
        };
        let v2 = mounts
            .v2
            .as_ref()
            .filter(|h| h.root == "/")
            .map(|h| Layout::V2 {
                unified: h.dir.clone(),
            });
        match choice {
            CgroupChoice::V1 => v1.ok_or_else(|| {
                "no cgroup v1 hierarchies with the cpu and cpuset controllers are mounted".into()
            }),
            CgroupChoice::V2 => v2.ok_or_else(|| "no cgroup v2 hierarchy is mounted".into()),
            CgroupChoice::Auto => v1.or(v2).ok_or_else(|| {
                "no cgroup hierarchy with the cpu and cpuset controllers is mounted".into()
            }),
            CgroupChoice::Threads => Ok(Layout::Threads),
        }
    }

    /// The record's name of the layout.
    pub fn name(&self) -> &'static str {
        match self {
            Layout::V1 { .. } => "v1",
            Layout::V2 { .. } => "v2",
            Layout::Threads => "threads",
        }
    }

    /// Checks that the backend can work, without changing anything: on v2
    /// the unified root must offer and delegate `cpu` and `cpuset`.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Layout::V1 { .. } | Layout::Threads => Ok(()),
            Layout::V2 { unified } => {
                let read = |f: &str| std::fs::read_to_string(unified.join(f)).unwrap_or_default();
                let controllers = read("cgroup.controllers");
                let delegated = read("cgroup.subtree_control");
                let has = |list: &str, c: &str| list.split_whitespace().any(|x| x == c);
                for c in ["cpu", "cpuset"] {
                    if !has(&controllers, c) {
                        return Err(format!(
                            "the cgroup v2 hierarchy at {} has no {c} controller (cgroup.controllers: {:?}); \
                             it is bound to a v1 hierarchy or not built in. Use --cgroup v1, or boot with \
                             the controllers on v2",
                            unified.display(),
                            controllers.trim()
                        ));
                    }
                    if !has(&delegated, c) {
                        return Err(format!(
                            "{} does not enable {c} ({:?}); corral does not change the \
                             host's hierarchy above its own group: enable it (echo +{c} > {}) \
                             or use --cgroup v1",
                            unified.join("cgroup.subtree_control").display(),
                            delegated.trim(),
                            unified.join("cgroup.subtree_control").display()
                        ));
                    }
                }
                Ok(())
            }
        }
    }
}

/// Where a thread (v1, threads) or a process (v2) was before corral
/// moved it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    pid: u32,
    /// Start time of the keyed task (TID on v1 and threads, PID on v2).
    start: Option<u64>,
    /// v1: the cpu and cpuset paths; v2: the unified path (in `cpu`);
    /// threads: the affinity's CPU list in `cpuset`, `cpu` empty.
    cpu: String,
    cpuset: Option<String>,
}

/// A thread's nice value and `sched_runtime` before corral changed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OldAttrs {
    pid: u32,
    start: Option<u64>,
    nice: i32,
    slice_ns: u64,
}

/// What [`Placer::reconcile`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    /// A record was found, written by this daemon PID.
    pub record_of: Option<u32>,
    /// Threads (v1) or processes (v2) moved out of corral's groups.
    pub moved: usize,
    /// … of which went back to a recorded origin (the rest to the root).
    pub to_origin: usize,
    /// Threads whose nice value and slice were given back.
    pub attrs_restored: usize,
    /// threads: threads whose affinity was given back (recorded ones, and
    /// those born to them with a group's CPU set).
    pub affinities_restored: usize,
    /// threads: units whose `CPUWeight` was given back.
    pub units_restored: usize,
    /// Group directories removed (roots included).
    pub groups_removed: usize,
}

impl Reconciled {
    /// Whether anything was left behind.
    pub fn found_anything(&self) -> bool {
        self.record_of.is_some()
            || self.moved > 0
            || self.groups_removed > 0
            || self.affinities_restored > 0
            || self.units_restored > 0
    }
}

/// Creates corral's groups, moves threads, and puts everything back.
#[derive(Debug)]
pub struct Placer {
    layout: Layout,
    /// corral's group name under each mount: `corral` or a test's own.
    root_name: String,
    created_root: bool,
    /// v1 with real-time group scheduling: the real-time runtime (µs a
    /// period) each new group of corral's asks for ([`rt_budget`]).
    rt_child_us: Option<u64>,
    groups: BTreeSet<String>,
    /// The slice each group gives its members (ns), when it sets one.
    attrs: HashMap<String, (Option<i32>, Option<u64>)>,
    /// Threads whose nice value or slice corral changed: what they had.
    old_attrs: HashMap<u32, OldAttrs>,
    /// The crash-safe record ([`crate::state`]), when kept.
    state_file: Option<PathBuf>,
    /// Groups the plan dropped that still hold tasks corral did not put
    /// there (processes born inside): removed once empty, or at restore.
    lingering: BTreeSet<String>,
    /// The slice a thread has when nobody set one (read from corral's own
    /// thread at start), so a default slice is restored as "default" (0)
    /// rather than pinned at today's value.
    default_slice_ns: u64,
    /// v1: per thread; v2: per process (keyed by pid).
    origins: HashMap<u32, Origin>,
    /// v2: the processes moved into corral's domain, and their threads there.
    v2_members: HashMap<u32, BTreeSet<u32>>,
    /// Where each managed thread is now.
    placed: HashMap<u32, (u32, String)>,
    /// threads: each group's CPU set, given to its members as affinity.
    masks: HashMap<String, CpuSet>,
    /// threads: every set narrower than corral's own it ever gave out,
    /// with when it first did (clock ticks after boot): a thread started
    /// since, born to a member, may hold it.
    given: HashMap<CpuSet, u64>,
    /// threads: each process's affinity before corral changed any of its
    /// threads, with the process's start time; kept until restore.
    processes: HashMap<u32, (Option<u64>, CpuSet)>,
    /// threads: corral's own affinity (all CPUs it may use), what a
    /// thread born to a member gets back when its process has no record.
    own_mask: CpuSet,
    /// threads: each group's kind (a latency group's members lift a
    /// low-weight unit).
    kinds: HashMap<String, GroupKind>,
    /// threads: units whose `CPUWeight` corral raised: the property as it
    /// was, and the latency-critical threads that hold it up.
    raised: HashMap<String, (u64, BTreeSet<u32>)>,
    /// threads: systemd's D-Bus API, connected when first needed (and
    /// again after a failure, to give units back).
    systemd: Option<crate::units::Systemd>,
    /// threads: no new lifts: the host is not run by systemd (no units
    /// to lift), or a lift failed (units lifted before are still given
    /// back).
    lifts_off: bool,
    /// threads: latency-critical and boosted threads (tid → pid) placed
    /// since the last [`Placer::finish`], whose unit it may lift. Lifting
    /// costs D-Bus round trips (milliseconds): it is kept off a boost's
    /// path (the daemon answers first).
    lifts_due: BTreeMap<u32, u32>,
    procfs: PathBuf,
}

impl Placer {
    /// A placer whose groups live under `root_name` (created on first use).
    pub fn new(layout: Layout, root_name: &str, paths: &HostPaths) -> Placer {
        Placer {
            layout,
            root_name: root_name.to_string(),
            created_root: false,
            rt_child_us: None,
            groups: BTreeSet::new(),
            attrs: HashMap::new(),
            old_attrs: HashMap::new(),
            state_file: None,
            lingering: BTreeSet::new(),
            default_slice_ns: crate::sched::sched_getattr(0).map_or(0, |a| a.sched_runtime),
            origins: HashMap::new(),
            v2_members: HashMap::new(),
            placed: HashMap::new(),
            masks: HashMap::new(),
            given: HashMap::new(),
            processes: HashMap::new(),
            own_mask: crate::procfs::cpus_allowed(paths, None)
                .ok()
                .flatten()
                .unwrap_or_default(),
            kinds: HashMap::new(),
            raised: HashMap::new(),
            systemd: None,
            lifts_off: !crate::system::systemd_booted(&paths.run),
            lifts_due: BTreeMap::new(),
            procfs: paths.procfs.clone(),
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// corral's root directories (one per hierarchy).
    pub fn root_dirs(&self) -> Vec<PathBuf> {
        match &self.layout {
            Layout::V1 { cpu, cpuset } => {
                vec![cpu.join(&self.root_name), cpuset.join(&self.root_name)]
            }
            Layout::V2 { unified } => vec![unified.join(&self.root_name)],
            Layout::Threads => Vec::new(),
        }
    }

    /// The group `tid` was placed in.
    pub fn placement(&self, tid: u32) -> Option<&str> {
        self.placed.get(&tid).map(|(_, g)| g.as_str())
    }

    /// Keeps the crash-safe record ([`crate::state`]) in `path`.
    pub fn set_state_file(&mut self, path: PathBuf) {
        self.state_file = Some(path);
    }

    /// The record's file, when one is kept.
    pub fn state_file(&self) -> Option<&Path> {
        self.state_file.as_deref()
    }

    /// Writes the record of every origin and attribute corral must undo.
    pub fn persist(&self) -> Result<()> {
        let Some(path) = &self.state_file else {
            return Ok(());
        };
        let me = std::process::id();
        let mut origins: Vec<crate::state::OriginRecord> = self
            .origins
            .iter()
            .map(|(&key, o)| crate::state::OriginRecord {
                key,
                pid: o.pid,
                start: o.start,
                cpu: o.cpu.clone(),
                cpuset: o.cpuset.clone(),
            })
            .collect();
        origins.sort_by_key(|o| o.key);
        let mut attrs: Vec<crate::state::AttrRecord> = self
            .old_attrs
            .iter()
            .map(|(&tid, a)| crate::state::AttrRecord {
                tid,
                pid: a.pid,
                start: a.start,
                nice: a.nice,
                slice_ns: a.slice_ns,
            })
            .collect();
        attrs.sort_by_key(|a| a.tid);
        crate::state::store(
            path,
            &crate::state::State {
                version: crate::state::VERSION,
                daemon_pid: me,
                daemon_start: crate::state::start_time(Path::new("/proc"), me, me),
                layout: self.layout.name().into(),
                root_name: self.root_name.clone(),
                origins,
                attrs,
                masks: {
                    let mut m: Vec<crate::state::MaskRecord> = self
                        .given
                        .iter()
                        .map(|(cpus, &since)| crate::state::MaskRecord {
                            cpus: cpus.to_string(),
                            since,
                        })
                        .collect();
                    m.sort_by(|a, b| a.cpus.cmp(&b.cpus));
                    m
                },
                processes: {
                    let mut p: Vec<crate::state::ProcessRecord> = self
                        .processes
                        .iter()
                        .map(|(&pid, (start, cpus))| crate::state::ProcessRecord {
                            pid,
                            start: *start,
                            cpus: cpus.to_string(),
                        })
                        .collect();
                    p.sort_by_key(|r| r.pid);
                    p
                },
                units: {
                    let mut u: Vec<crate::state::UnitRecord> = self
                        .raised
                        .iter()
                        .map(|(unit, (w, _))| crate::state::UnitRecord {
                            unit: unit.clone(),
                            cpu_weight: *w,
                        })
                        .collect();
                    u.sort_by(|a, b| a.unit.cmp(&b.unit));
                    u
                },
            },
        )
    }

    /// Records where the threads about to move are, in one write of the
    /// record, before any of them moves (a batch of moves then costs one
    /// `fsync`, not one each). Threads that exited are skipped.
    pub fn prepare(&mut self, moves: &[(u32, u32)]) -> Result<()> {
        self.tidy();
        let mut added = Vec::new();
        for &(tid, pid) in moves {
            let key = match self.layout {
                Layout::V1 { .. } | Layout::Threads => tid,
                Layout::V2 { .. } => pid,
            };
            if self.origins.contains_key(&key) || !self.alive(pid, tid) {
                continue;
            }
            // A thread that exits meanwhile is skipped (its move will
            // find it gone), not an error.
            match self.read_origin(pid, tid) {
                Ok(Some(o)) => {
                    self.note_process(pid, &o);
                    self.origins.insert(key, o);
                    added.push(key);
                }
                Ok(None) => {}
                Err(e) if e.is_gone() => {}
                Err(e) => return Err(e),
            }
        }
        if added.is_empty() {
            return Ok(());
        }
        self.persist().inspect_err(|_| {
            for key in added {
                self.origins.remove(&key);
            }
        })
    }

    /// Undoes whatever an earlier corral with this group root left behind
    /// (it was killed, crashed, or lost its machine's power to a
    /// container restart): every thread found in corral's groups goes back
    /// to its recorded origin, or to the hierarchy's root (the parent of
    /// corral's root) when none was recorded; recorded nice values and
    /// slices are given back; the groups are removed. Refuses while the
    /// record's writer still runs. Afterwards a fresh record names this
    /// process, so a second daemon on the same root is refused.
    pub fn reconcile(&mut self) -> Result<Reconciled> {
        let mut out = Reconciled::default();
        let record = self.load_record(&mut out)?;
        self.remove_temporary_records();
        self.remove_groups(&mut out)?;
        if let (true, Some(s)) = (matches!(self.layout, Layout::Threads), &record) {
            self.restore_threads(s, &mut out);
        }
        if let Some(s) = &record {
            self.restore_recorded_attrs(s, &mut out);
        }
        self.origins.clear();
        self.old_attrs.clear();
        self.groups.clear();
        self.placed.clear();
        self.v2_members.clear();
        self.masks.clear();
        self.given.clear();
        self.processes.clear();
        self.created_root = false;
        self.persist()?;
        Ok(out)
    }

    /// The record of an earlier daemon, if any (an error if that daemon
    /// still runs), with the origins whose task is still the one recorded.
    fn load_record(&mut self, out: &mut Reconciled) -> Result<Option<crate::state::State>> {
        let me = std::process::id();
        let record = match &self.state_file {
            Some(path) => crate::state::load(path)?,
            None => None,
        };
        if let Some(s) = &record {
            if s.daemon_pid != me
                && crate::state::daemon_alive(&self.procfs, s.daemon_pid, s.daemon_start)
            {
                return Err(Error::Syscall {
                    call: "reconcile",
                    error: std::io::Error::other(format!(
                        "corral (PID {}) already manages group {:?} ({}); stop it first or use another --group-name",
                        s.daemon_pid,
                        self.root_name,
                        self.state_file.as_deref().unwrap_or(Path::new("")).display()
                    )),
                });
            }
            out.record_of = Some(s.daemon_pid);
            // Origins whose task is still the one recorded.
            for o in &s.origins {
                let (pid, tid) = (o.pid, o.key);
                let now = match self.layout {
                    Layout::V1 { .. } | Layout::Threads => {
                        crate::state::start_time(&self.procfs, pid, tid)
                    }
                    Layout::V2 { .. } => crate::state::start_time(&self.procfs, pid, pid),
                };
                if now.is_some() && now == o.start {
                    self.origins.entry(o.key).or_insert(Origin {
                        pid: o.pid,
                        start: o.start,
                        cpu: o.cpu.clone(),
                        cpuset: o.cpuset.clone(),
                    });
                }
            }
        }
        Ok(record)
    }

    /// Temporary files of records whose writer was killed mid-write.
    fn remove_temporary_records(&self) {
        if let Some(path) = &self.state_file {
            if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
                let prefix = format!("{}.", name.to_string_lossy());
                for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if n.starts_with(&prefix) && n.ends_with(".tmp") {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
        }
    }

    /// corral's groups drained (each task back to its origin, or the
    /// root's) and removed: children first, then the roots.
    fn remove_groups(&mut self, out: &mut Reconciled) -> Result<()> {
        for root in self.root_dirs() {
            let Ok(entries) = std::fs::read_dir(&root) else {
                continue;
            };
            let mut children: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            children.sort();
            for dir in children {
                let (m, o) = self.drain_and_remove(&dir)?;
                out.moved += m;
                out.to_origin += o;
                out.groups_removed += 1;
            }
        }
        for root in self.root_dirs() {
            if root.is_dir() {
                let (m, o) = self.drain_and_remove(&root)?;
                out.moved += m;
                out.to_origin += o;
                out.groups_removed += 1;
            }
        }
        Ok(())
    }

    /// The per-thread backend's record: every recorded thread gets its
    /// affinity back, and so does a thread born to one of them with a
    /// group's CPU set; units get their weight back.
    fn restore_threads(&mut self, s: &crate::state::State, out: &mut Reconciled) {
        for m in &s.masks {
            if let Ok(cpus) = m.cpus.parse::<CpuSet>() {
                self.given.insert(cpus, m.since);
            }
        }
        for r in &s.processes {
            if let Ok(cpus) = r.cpus.parse::<CpuSet>() {
                self.processes.insert(r.pid, (r.start, cpus));
            }
        }
        let tids: Vec<u32> = self.origins.keys().copied().collect();
        for tid in tids {
            let o = self.origins[&tid].clone();
            if self.put_back_affinity(o.pid, tid, &o) {
                out.affinities_restored += 1;
            }
        }
        out.affinities_restored += self.widen_inherited();
        for u in &s.units {
            if self.give_back(&u.unit, u.cpu_weight).is_ok() {
                out.units_restored += 1;
            } else {
                // Kept in the fresh record: a later restore tries again.
                self.raised
                    .insert(u.unit.clone(), (u.cpu_weight, BTreeSet::new()));
            }
        }
    }

    /// Each recorded thread's nice and slice, if it is still the one
    /// recorded.
    fn restore_recorded_attrs(&self, s: &crate::state::State, out: &mut Reconciled) {
        for a in &s.attrs {
            let now = crate::state::start_time(&self.procfs, a.pid, a.tid);
            if now.is_some() && now == a.start {
                let slice = if a.slice_ns == self.default_slice_ns {
                    0
                } else {
                    a.slice_ns
                };
                if crate::sched::set_fair_attr(a.tid, a.nice, slice).is_ok() {
                    out.attrs_restored += 1;
                }
            }
        }
    }

    /// Forgets the record (a dry run, or a `corral restore` that is done).
    pub fn drop_state_file(&mut self) -> Result<()> {
        match self.state_file.take() {
            Some(path) => crate::state::remove(&path),
            None => Ok(()),
        }
    }

    fn ensure_root(&mut self) -> Result<()> {
        if self.created_root {
            return Ok(());
        }
        match self.layout.clone() {
            Layout::V1 { cpu, cpuset } => {
                let croot = cpu.join(&self.root_name);
                mkdir(&croot)?;
                // A tenth of the root group's real-time time for corral's
                // tree; for each of its groups, that over as many groups
                // as a plan makes (a dedicated one per CPU, the shared,
                // latency and medium ones) and a few boosts' (8).
                let ncpus = crate::fsutil::read_cpulist_opt(&cpuset.join("cpuset.cpus"))
                    .ok()
                    .flatten()
                    .map_or(1, |c| c.len() as u64);
                self.rt_child_us = rt_share(&cpu, &croot, 10)
                    .and_then(|want| rt_budget(&croot, want))
                    .map(|got| got / (ncpus + 3 + 8));
                let root = cpuset.join(&self.root_name);
                mkdir(&root)?;
                // A v1 cpuset needs CPUs and memory nodes before it takes
                // tasks: inherit the parent's.
                copy_file(&cpuset.join("cpuset.mems"), &root.join("cpuset.mems"))?;
                copy_file(&cpuset.join("cpuset.cpus"), &root.join("cpuset.cpus"))?;
            }
            Layout::V2 { unified } => {
                self.layout.check().map_err(|msg| Error::Syscall {
                    call: "cgroup v2",
                    error: std::io::Error::other(msg),
                })?;
                let root = unified.join(&self.root_name);
                mkdir(&root)?;
                write(&root.join("cgroup.subtree_control"), "+cpu +cpuset")?;
            }
            Layout::Threads => {}
        }
        self.created_root = true;
        Ok(())
    }

    /// Creates group `spec.name` or updates its CPUs, weight, and its
    /// members' nice value and slice. The members' own levers come first (on
    /// a boost they are the priority change; a sched_setattr takes
    /// microseconds); a file is written only when its value differs (a
    /// cgroup write costs ~100 µs here when the machine was idle).
    pub fn set_group(&mut self, spec: &GroupSpec) -> Result<()> {
        self.ensure_root()?;
        let attrs = (spec.nice, spec.slice_ns);
        let had = self.attrs.get(&spec.name).copied().unwrap_or((None, None));
        if spec.slice_ns.is_some() || spec.nice.is_some() {
            self.attrs.insert(spec.name.clone(), attrs);
        } else {
            self.attrs.remove(&spec.name);
        }
        // Every member is tried; the first failure fails the change (after
        // the group's files), so the step reports it and the next retries.
        let mut failed = None;
        if had != attrs {
            for (pid, tid) in self.members(&spec.name) {
                if attrs == (None, None) {
                    self.restore_attrs(pid, tid);
                } else if let Err(e) = self.set_attrs(pid, tid, spec.nice, spec.slice_ns) {
                    failed.get_or_insert(e);
                }
            }
            if failed.is_some() {
                // Forgotten, so the retry sets them again.
                self.attrs.remove(&spec.name);
            }
        }
        match self.layout.clone() {
            Layout::V1 { cpu, cpuset } => {
                // With real-time group scheduling a new group gets no
                // real-time time, and a thread in it cannot switch itself
                // to SCHED_FIFO/RR (`__sched_setscheduler`: EPERM;
                // cyclictest started in a managed shell: "Unable to change
                // scheduling policy!"): each group gets a little
                // ([`rt_budget`]); the daemon then sends a thread that
                // turned real-time out of corral's groups
                // ([`Placer::send_home`]).
                let cdir = cpu.join(&self.root_name).join(&spec.name);
                if mkdir(&cdir)? {
                    if let Some(want) = self.rt_child_us {
                        rt_budget(&cdir, want);
                    }
                }
                write_if_differs(&cdir.join("cpu.shares"), &spec.shares.to_string())?;
                let root = cpuset.join(&self.root_name);
                // After hot-plug v1 drops CPUs from every cpuset and never
                // gives them back: widen corral's root to the parent's
                // CPUs before narrowing a child.
                let parent_file = cpuset.join("cpuset.cpus");
                let parent = std::fs::read_to_string(&parent_file)
                    .map_err(|e| Error::io(&parent_file, e))?;
                write_if_differs(&root.join("cpuset.cpus"), parent.trim())?;
                let sdir = root.join(&spec.name);
                if mkdir(&sdir)? {
                    copy_file(&root.join("cpuset.mems"), &sdir.join("cpuset.mems"))?;
                }
                write_cpus_if_differ(&sdir.join("cpuset.cpus"), &spec.cpus)?;
            }
            Layout::V2 { unified } => {
                let dir = unified.join(&self.root_name).join(&spec.name);
                if mkdir(&dir)? {
                    write(&dir.join("cgroup.type"), "threaded")?;
                }
                write_cpus_if_differ(&dir.join("cpuset.cpus"), &spec.cpus)?;
                write_if_differs(
                    &dir.join("cpu.weight"),
                    &shares_to_weight(spec.shares).to_string(),
                )?;
            }
            Layout::Threads => {
                // XXX: no lever for the group's weight (`spec.shares`); a
                // latency group's members lift a low-weight unit instead.
                self.kinds.insert(spec.name.clone(), spec.kind);
                if self.masks.get(&spec.name) != Some(&spec.cpus) {
                    self.masks.insert(spec.name.clone(), spec.cpus.clone());
                    if spec.cpus != self.own_mask && !self.given.contains_key(&spec.cpus) {
                        let now = crate::state::now_ticks(&self.procfs).unwrap_or(0);
                        self.given.insert(spec.cpus.clone(), now);
                    }
                    // Recorded before any member gets the new set.
                    self.persist()?;
                    for (pid, tid) in self.members(&spec.name) {
                        self.set_affinity(pid, tid, &spec.cpus);
                    }
                }
            }
        }
        self.groups.insert(spec.name.clone());
        self.lingering.remove(&spec.name);
        failed.map_or(Ok(()), Err)
    }

    /// The (pid, tid) of group `name`'s members.
    fn members(&self, name: &str) -> Vec<(u32, u32)> {
        self.placed
            .iter()
            .filter(|(_, (_, g))| g == name)
            .map(|(&tid, &(pid, _))| (pid, tid))
            .collect()
    }

    /// Moves a thread into a group. Returns `false` when the thread is gone.
    pub fn move_thread(&mut self, tid: u32, pid: u32, group: &str) -> Result<bool> {
        if !self.groups.contains(group) {
            return Err(Error::Syscall {
                call: "move thread",
                error: std::io::Error::other(format!("group {group} was never created")),
            });
        }
        if !self.alive(pid, tid) {
            return Ok(false);
        }
        match self.layout.clone() {
            Layout::V1 { cpu, cpuset } => {
                if !self.origins.contains_key(&tid) {
                    let Some(origin) = self.read_origin(pid, tid)? else {
                        return Ok(false);
                    };
                    self.origins.insert(tid, origin);
                    if let Err(e) = self.persist() {
                        self.origins.remove(&tid);
                        return Err(e);
                    }
                }
                let id = tid.to_string();
                for dir in [
                    cpuset.join(&self.root_name).join(group),
                    cpu.join(&self.root_name).join(group),
                ] {
                    if !write_task(&dir.join("tasks"), &id)? {
                        return Ok(false);
                    }
                }
            }
            Layout::V2 { unified } => {
                let root = unified.join(&self.root_name);
                if !self.origins.contains_key(&pid) {
                    let Some(origin) = self.read_origin(pid, tid)? else {
                        return Ok(false);
                    };
                    self.origins.insert(pid, origin);
                    if let Err(e) = self.persist() {
                        self.origins.remove(&pid);
                        return Err(e);
                    }
                }
                // The process enters corral's domain with its first managed
                // thread. Not "when its origin is first recorded": `prepare`
                // records origins before any move, and a thread cannot
                // cross into another domain's threaded child (EOPNOTSUPP).
                // Never again once a thread is placed: a `cgroup.procs`
                // write would pull its placed threads back to the domain.
                if !self.v2_members.contains_key(&pid)
                    && !write_task(&root.join("cgroup.procs"), &pid.to_string())?
                {
                    return Ok(false);
                }
                if !write_task(&root.join(group).join("cgroup.threads"), &tid.to_string())? {
                    return Ok(false);
                }
                self.v2_members.entry(pid).or_default().insert(tid);
            }
            Layout::Threads => {
                if !self.origins.contains_key(&tid) {
                    let Some(origin) = self.read_origin(pid, tid)? else {
                        return Ok(false);
                    };
                    self.note_process(pid, &origin);
                    self.origins.insert(tid, origin);
                    if let Err(e) = self.persist() {
                        self.origins.remove(&tid);
                        return Err(e);
                    }
                }
                let cpus = self.masks.get(group).cloned().unwrap_or_default();
                if !self.set_affinity(pid, tid, &cpus) {
                    return Ok(false);
                }
            }
        }
        self.placed.insert(tid, (pid, group.to_string()));
        match self.attrs.get(group).copied() {
            // A placed thread without its group's nice is a half-done
            // move (a boost answered but not in force): the move fails,
            // and the next step tries again.
            Some((nice, slice)) => self.set_attrs(pid, tid, nice, slice)?,
            None => self.restore_attrs(pid, tid),
        }
        if matches!(self.layout, Layout::Threads) {
            // Placed first; the lift comes at `finish` (a failed one
            // leaves a placed thread, never a lifted unit nobody holds).
            match self.kinds.get(group) {
                Some(GroupKind::Latency | GroupKind::Boost) => {
                    self.lifts_due.insert(tid, pid);
                }
                _ => {
                    self.lifts_due.remove(&tid);
                    self.drop_lift(tid);
                }
            }
        }
        Ok(true)
    }

    /// Gives `tid` a group's nice value and EEVDF slice, remembering its
    /// own the first time. Best effort: a kernel before 6.12 ignores the
    /// slice of a fair thread, and a thread that exited or left the fair
    /// class keeps what it has.
    fn set_attrs(
        &mut self,
        pid: u32,
        tid: u32,
        nice: Option<i32>,
        slice_ns: Option<u64>,
    ) -> Result<()> {
        if !self.alive(pid, tid) {
            return Ok(());
        }
        let old = match crate::sched::sched_getattr(tid) {
            Ok(old) => old,
            Err(e) if e.is_gone() => return Ok(()),
            Err(e) => return Err(e),
        };
        let original = match self.old_attrs.get(&tid) {
            Some(o) => *o,
            None => {
                let o = OldAttrs {
                    pid,
                    start: crate::state::start_time(&self.procfs, pid, tid),
                    nice: old.sched_nice,
                    slice_ns: old.sched_runtime,
                };
                self.old_attrs.insert(tid, o);
                // Recorded before the change, or not changed at all.
                if let Err(e) = self.persist() {
                    self.old_attrs.remove(&tid);
                    return Err(e);
                }
                o
            }
        };
        let own_slice = if original.slice_ns == self.default_slice_ns {
            0
        } else {
            original.slice_ns
        };
        // The medium guarantee's nice (per-thread backend) is a floor, never
        // a demotion: a thread keeps a lower nice of its own, and one its
        // owner niced above 0 (`nice make`: a stated wish for less) keeps
        // that. A boost's nice is asked for, and holds either way.
        let medium = self
            .placed
            .get(&tid)
            .and_then(|(_, g)| self.kinds.get(g))
            .is_some_and(|k| *k == GroupKind::Medium);
        let nice = match nice {
            Some(_) if medium && original.nice > 0 => original.nice,
            Some(n) if medium => n.min(original.nice),
            Some(n) => n,
            None => original.nice,
        };
        match crate::sched::set_fair_attr(tid, nice, slice_ns.unwrap_or(own_slice)) {
            Ok(_) => Ok(()),
            // Gone, or it left the fair class meanwhile: it keeps what it has.
            Err(e) if e.is_gone() || !crate::sched::is_fair(tid) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Gives `tid` back the nice value and slice it had before corral
    /// changed them.
    fn restore_attrs(&mut self, pid: u32, tid: u32) {
        if let Some(OldAttrs {
            nice,
            slice_ns: slice,
            ..
        }) = self.old_attrs.remove(&tid)
        {
            if !self.alive(pid, tid) {
                return;
            }
            let slice = if slice == self.default_slice_ns {
                0
            } else {
                slice
            };
            let _ = crate::sched::set_fair_attr(tid, nice, slice);
        }
    }

    /// Puts a thread back where it was. A thread that is gone is fine.
    pub fn release(&mut self, tid: u32) -> Result<()> {
        let Some((pid, _)) = self.placed.remove(&tid) else {
            return Ok(());
        };
        self.restore_attrs(pid, tid);
        // A thread that exited is gone from the groups already; and its TID
        // may since name someone else's thread, which corral must not move.
        let tid_alive = self.alive(pid, tid);
        let pid_alive = self.procfs.join(pid.to_string()).is_dir();
        match self.layout.clone() {
            Layout::V1 { cpu, cpuset } => {
                if let Some(origin) = self.origins.remove(&tid) {
                    if tid_alive {
                        self.put_back_v1(&cpu, &cpuset, tid, &origin)?;
                    }
                }
            }
            Layout::V2 { unified } => {
                let root = unified.join(&self.root_name);
                let members = self.v2_members.entry(pid).or_default();
                members.remove(&tid);
                if members.is_empty() {
                    // The process's last managed thread: the whole process
                    // goes back to its own domain.
                    self.v2_members.remove(&pid);
                    if let Some(origin) = self.origins.remove(&pid) {
                        if pid_alive {
                            let dir = self.home_dir(&unified, &origin.cpu);
                            write_task(&dir.join("cgroup.procs"), &pid.to_string())?;
                        }
                    }
                } else if tid_alive {
                    // Others of its threads stay managed: back to the domain.
                    write_task(&root.join("cgroup.threads"), &tid.to_string())?;
                }
            }
            Layout::Threads => {
                self.lifts_due.remove(&tid);
                self.drop_lift(tid);
                if let Some(origin) = self.origins.remove(&tid) {
                    if tid_alive {
                        self.put_back_affinity(pid, tid, &origin);
                    }
                }
            }
        }
        Ok(())
    }

    /// Sends a thread corral does not manage (one born to a member that
    /// turned real-time) out of corral's cpu groups, to where its process
    /// came from ([`Placer::home_of`]), else the root: there it runs on
    /// that group's real-time time, not on the sliver a group of corral's
    /// has. v1 only ([`Placer::limits_real_time`]). Its cpuset follows
    /// when its affinity is still the one it inherited there (corral's
    /// CPUs, not the program's choice); a thread that narrowed its own
    /// affinity keeps the cpuset, since moving a task to another cpuset
    /// rewrites its affinity, and the group lingers until it exits
    /// ([`Placer::remove_group`]).
    pub fn send_home(&mut self, tid: u32, pid: u32) -> Result<()> {
        let Layout::V1 { cpu, cpuset } = self.layout.clone() else {
            return Ok(());
        };
        if self.placed.contains_key(&tid) {
            // corral's own: put back through the plan (`release`).
            return Ok(());
        }
        let dir = self
            .procfs
            .join(pid.to_string())
            .join("task")
            .join(tid.to_string());
        // Its cpuset now, before `read_origin` maps corral's to its home.
        let in_cpuset = crate::fsutil::read_opt(&dir.join("cgroup"))
            .ok()
            .flatten()
            .and_then(|text| crate::procfs::parse_cgroups(&text, &dir.join("cgroup")).ok())
            .and_then(|e| e.into_iter().find(|e| e.has_controller("cpuset")))
            .map(|e| e.path);
        let Some(origin) = self.read_origin(pid, tid)? else {
            return Ok(());
        };
        let id = tid.to_string();
        write_task_up(&cpu, &self.home_dir(&cpu, &origin.cpu), &id)?;
        if let (Some(group), Some(home)) = (in_cpuset.filter(|p| self.ours(p)), &origin.cpuset) {
            let file = cpuset
                .join(group.trim_start_matches('/'))
                .join("cpuset.cpus");
            let cpus = crate::fsutil::read_cpulist_opt(&file).ok().flatten();
            let own = crate::sampler::read_cpus_allowed(&dir).ok().flatten();
            if cpus.is_some() && cpus == own {
                write_task_up(&cpuset, &self.home_dir(&cpuset, home), &id)?;
            }
        }
        Ok(())
    }

    /// Whether corral's groups limit a thread's real-time time (v1 with
    /// real-time group scheduling, where each has only a little): then a
    /// real-time thread found inside is sent out ([`Placer::send_home`]).
    pub fn limits_real_time(&self) -> bool {
        match &self.layout {
            Layout::V1 { cpu, .. } => cpu.join("cpu.rt_runtime_us").exists(),
            _ => false,
        }
    }

    /// threads: the first recorded thread of a process gives the process
    /// its recorded affinity (what threads born to it get back).
    fn note_process(&mut self, pid: u32, origin: &Origin) {
        if !matches!(self.layout, Layout::Threads) || self.processes.contains_key(&pid) {
            return;
        }
        if let Some(cpus) = origin
            .cpuset
            .as_deref()
            .and_then(|c| c.parse::<CpuSet>().ok())
        {
            let start = crate::state::start_time(&self.procfs, pid, pid);
            self.processes.insert(pid, (start, cpus));
        }
    }

    /// threads: systemd's D-Bus API, connected on first use and again
    /// after a failure.
    fn systemd(&mut self) -> Result<&crate::units::Systemd> {
        if self.systemd.is_none() {
            self.systemd = Some(crate::units::Systemd::connect()?);
        }
        Ok(self.systemd.as_ref().expect("connected above"))
    }

    /// threads: gives `unit` its `CPUWeight` back; a unit systemd no
    /// longer has is done. On an error the connection is dropped (the
    /// next try connects again).
    fn give_back(&mut self, unit: &str, weight: u64) -> Result<()> {
        let r = self
            .systemd()
            .and_then(|sd| sd.set_cpu_weight(unit, weight));
        if r.is_err() {
            self.systemd = None;
        }
        r
    }

    /// threads: the lifts due since the last call (latency-critical and
    /// boosted threads placed meanwhile, still in their group); the
    /// daemon calls it after a step's changes and after answering a
    /// boost. The first failure stops lifting (said once, as the error).
    pub fn finish(&mut self) -> Result<()> {
        let due = std::mem::take(&mut self.lifts_due);
        if self.lifts_off {
            return Ok(());
        }
        let mut first = Ok(());
        for (tid, pid) in due {
            let held = self.placed.get(&tid).is_some_and(|(p, g)| {
                *p == pid
                    && matches!(
                        self.kinds.get(g),
                        Some(GroupKind::Latency | GroupKind::Boost)
                    )
            });
            if held {
                if let Err(e) = self.lift_unit(pid, tid) {
                    first = first.and(Err(e));
                }
            }
        }
        first
    }

    /// threads: paper 002's rescue. A latency-critical thread in a unit
    /// whose weight is below the default (a low `CPUWeight`) starves
    /// beside hogs in other units however short its slice: its unit is
    /// given the default weight (`SetUnitProperties`, runtime) while it
    /// holds a latency-critical thread, and its own value back after.
    /// Raising it lifts the unit's other threads too (ARCHITECTURE.md).
    fn lift_unit(&mut self, pid: u32, tid: u32) -> Result<()> {
        if self.lifts_off || self.raised.values().any(|(_, m)| m.contains(&tid)) {
            return Ok(());
        }
        let found = self.systemd().and_then(|sd| {
            let Some(unit) = sd.unit_of_pid(pid)? else {
                return Ok(None);
            };
            // A unit type without a weight (a target, a device): nothing
            // to lift.
            Ok(sd.cpu_weight(&unit).ok().map(|w| (unit, w)))
        });
        let (unit, before) = match found {
            Ok(Some(x)) => x,
            Ok(None) => return Ok(()),
            Err(e) => return Err(self.lifts_failed(e)),
        };
        if let Some((_, members)) = self.raised.get_mut(&unit) {
            members.insert(tid);
            return Ok(());
        }
        if crate::units::effective_weight(before) >= crate::units::WEIGHT_DEFAULT {
            return Ok(());
        }
        self.raised
            .insert(unit.clone(), (before, BTreeSet::from([tid])));
        // Recorded before systemd changes it.
        if let Err(e) = self.persist() {
            self.raised.remove(&unit);
            return Err(e);
        }
        let set = self
            .systemd()
            .and_then(|sd| sd.set_cpu_weight(&unit, crate::units::WEIGHT_DEFAULT));
        if let Err(e) = set {
            self.raised.remove(&unit);
            let _ = self.persist();
            return Err(self.lifts_failed(e));
        }
        Ok(())
    }

    /// threads: a lift failed: no more lifts (said once, by this error);
    /// the connection is dropped for the give-backs to connect again.
    fn lifts_failed(&mut self, e: Error) -> Error {
        self.lifts_off = true;
        self.systemd = None;
        Error::Syscall {
            call: "unit weight",
            error: std::io::Error::other(format!(
                "{e} (corral lifts no more units' CPUWeight; those lifted are given back)"
            )),
        }
    }

    /// threads: `tid` no longer holds its unit up; the last one out gives
    /// the unit its own weight back (kept in the record until that worked:
    /// the restore at exit, or `corral restore`, tries again).
    fn drop_lift(&mut self, tid: u32) {
        let Some(unit) = self
            .raised
            .iter()
            .find(|(_, (_, m))| m.contains(&tid))
            .map(|(u, _)| u.clone())
        else {
            return;
        };
        let (before, members) = self.raised.get_mut(&unit).expect("found above");
        members.remove(&tid);
        if !members.is_empty() {
            return;
        }
        let before = *before;
        if self.give_back(&unit, before).is_ok() {
            self.raised.remove(&unit);
            let _ = self.persist();
        }
    }

    /// threads: gives `tid` the CPU set `cpus` unless it has it; `false`
    /// when the thread is gone. A set the kernel refuses (no online CPU
    /// after a hot-plug) leaves the thread as it is.
    fn set_affinity(&self, pid: u32, tid: u32, cpus: &CpuSet) -> bool {
        if cpus.is_empty() || !self.alive(pid, tid) {
            return self.alive(pid, tid);
        }
        if self.thread_mask(pid, tid).as_ref() == Some(cpus) {
            return true;
        }
        match crate::sched::sched_setaffinity(tid, cpus) {
            Ok(()) => true,
            Err(e) if e.is_gone() => false,
            Err(_) => true,
        }
    }

    /// threads: puts back the affinity a thread had; whether it was set.
    fn put_back_affinity(&self, pid: u32, tid: u32, origin: &Origin) -> bool {
        let Some(cpus) = origin
            .cpuset
            .as_deref()
            .and_then(|c| c.parse::<CpuSet>().ok())
        else {
            return false;
        };
        self.alive(pid, tid) && self.set_back(tid, &cpus)
    }

    /// A thread's affinity as `/proc` shows it (offline CPUs included).
    fn thread_mask(&self, pid: u32, tid: u32) -> Option<CpuSet> {
        let dir = self
            .procfs
            .join(pid.to_string())
            .join("task")
            .join(tid.to_string());
        crate::sampler::read_cpus_allowed(&dir).ok().flatten()
    }

    /// threads: every CPU set narrower than corral's own it gave out,
    /// which a thread born to a member inherits.
    pub fn narrow_masks(&self) -> Vec<CpuSet> {
        let mut v: Vec<CpuSet> = self.given.keys().cloned().collect();
        v.sort_by_key(|m| m.to_string());
        v
    }

    /// threads: every thread that holds a set corral gave out, started
    /// after corral first gave it, in a process that is recorded or
    /// descends from one (the start times must match: a PID may be
    /// reused) — born to a member, it inherited the set — gets that
    /// process's recorded affinity. XXX: a process reparented away from
    /// the recorded one (a double fork, a daemon a member started) is not
    /// found; the kernel's fork events would name it (not used yet).
    /// Returns how many threads changed.
    fn widen_inherited(&self) -> usize {
        if self.given.is_empty() || self.processes.is_empty() {
            return 0;
        }
        let mut changed = 0;
        let Ok(entries) = std::fs::read_dir(&self.procfs) else {
            return 0;
        };
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            // The process, then its ancestors: the first recorded one.
            let mut at = Some(pid);
            let mut target = None;
            for _ in 0..32 {
                let Some(p) = at.filter(|&p| p > 1) else {
                    break;
                };
                if let Some((start, cpus)) = self.processes.get(&p) {
                    if crate::state::start_time(&self.procfs, p, p) == *start {
                        target = Some(cpus.clone());
                    }
                    break;
                }
                at = tgid_parent(&self.procfs, p);
            }
            let Some(target) = target else { continue };
            let Ok(tasks) = std::fs::read_dir(e.path().join("task")) else {
                continue;
            };
            for t in tasks.flatten() {
                let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                if self.placed.contains_key(&tid) {
                    continue;
                }
                let Some(now) = self.thread_mask(pid, tid) else {
                    continue;
                };
                let Some(&since) = self.given.get(&now) else {
                    continue;
                };
                let born_since =
                    crate::state::start_time(&self.procfs, pid, tid).is_some_and(|st| st >= since);
                if born_since && now != target && self.set_back(tid, &target) {
                    changed += 1;
                }
            }
        }
        changed
    }

    /// threads: gives `tid` the affinity `cpus`; when the kernel refuses
    /// it (none of them online now), the part corral may use, else all of
    /// that. Whether one was set.
    fn set_back(&self, tid: u32, cpus: &CpuSet) -> bool {
        let part = cpus.intersection(&self.own_mask);
        let try_set = |c: &CpuSet| !c.is_empty() && crate::sched::sched_setaffinity(tid, c).is_ok();
        try_set(cpus) || try_set(&part) || try_set(&self.own_mask)
    }

    fn put_back_v1(&self, cpu: &Path, cpuset: &Path, tid: u32, origin: &Origin) -> Result<()> {
        let id = tid.to_string();
        write_task_up(cpu, &self.home_dir(cpu, &origin.cpu), &id)?;
        if let Some(path) = &origin.cpuset {
            write_task_up(cpuset, &self.home_dir(cpuset, path), &id)?;
        }
        Ok(())
    }

    /// `mount/path` if that directory exists and is not corral's (an
    /// older build's record may name one), else the mount's root.
    fn home_dir(&self, mount: &Path, path: &str) -> PathBuf {
        if self.ours(path) {
            return mount.to_path_buf();
        }
        existing_or_root(mount, path)
    }

    /// Removes a group (its members were moved or released first). Tasks
    /// born inside it stay where they are and the group lingers until they
    /// are gone: moving a running process to another cpuset changes its
    /// affinity under it (lld crashed that way). The group's weight falls
    /// to an ordinary one meanwhile.
    pub fn remove_group(&mut self, name: &str) -> Result<()> {
        if matches!(self.layout, Layout::Threads) {
            // Nothing on disk; a thread born to a member keeps the set
            // until the daemon places it or restores.
            self.groups.remove(name);
            self.attrs.remove(name);
            self.masks.remove(name);
            return Ok(());
        }
        if self.born_inside(name) {
            self.groups.remove(name);
            self.attrs.remove(name);
            self.lingering.insert(name.to_string());
            let (file, value) = match &self.layout {
                Layout::V1 { cpu, .. } => (
                    cpu.join(&self.root_name).join(name).join("cpu.shares"),
                    "1024",
                ),
                Layout::V2 { unified } => (
                    unified.join(&self.root_name).join(name).join("cpu.weight"),
                    "100",
                ),
                Layout::Threads => return Ok(()),
            };
            let _ = write_if_differs(&file, value);
            return Ok(());
        }
        self.lingering.remove(name);
        self.force_remove(name)
    }

    /// Whether group `name` holds a task corral did not place there.
    fn born_inside(&self, name: &str) -> bool {
        let dirs: Vec<PathBuf> = match &self.layout {
            Layout::V1 { cpu, cpuset } => vec![
                cpu.join(&self.root_name).join(name).join("tasks"),
                cpuset.join(&self.root_name).join(name).join("tasks"),
            ],
            Layout::V2 { unified } => {
                vec![unified
                    .join(&self.root_name)
                    .join(name)
                    .join("cgroup.threads")]
            }
            Layout::Threads => return false,
        };
        dirs.iter().any(|f| {
            std::fs::read_to_string(f).is_ok_and(|t| {
                t.split_whitespace()
                    .filter_map(|x| x.parse::<u32>().ok())
                    .any(|tid| !self.placed.contains_key(&tid))
            })
        })
    }

    /// Removes the lingering groups that have emptied (and forgets those
    /// a plan took up again).
    pub fn tidy(&mut self) {
        let names: Vec<String> = self.lingering.iter().cloned().collect();
        for name in names {
            // Taken up again by a plan, or emptied and removed.
            if self.groups.contains(&name)
                || (!self.born_inside(&name) && self.force_remove(&name).is_ok())
            {
                self.lingering.remove(&name);
            }
        }
    }

    /// Drains (whatever is inside goes home) and removes group `name`.
    fn force_remove(&mut self, name: &str) -> Result<()> {
        for root in self.root_dirs() {
            self.drain_and_remove(&root.join(name))?;
        }
        self.groups.remove(name);
        Ok(())
    }

    /// Puts every thread back, moves out threads born inside corral's
    /// groups, and removes every group and corral's roots.
    pub fn restore_all(&mut self) -> Result<()> {
        let mut first_error = None;
        if matches!(self.layout, Layout::Threads) {
            // Threads born to members first, while their processes'
            // origins are known (a release forgets its own).
            self.widen_inherited();
            self.masks.clear();
            let units: Vec<(String, u64)> = self
                .raised
                .iter()
                .map(|(u, (w, _))| (u.clone(), *w))
                .collect();
            for (unit, w) in units {
                match self.give_back(&unit, w) {
                    Ok(()) => {
                        self.raised.remove(&unit);
                    }
                    // Kept: the record stays for `corral restore`.
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        let tids: Vec<u32> = self.placed.keys().copied().collect();
        for tid in tids {
            if let Err(e) = self.release(tid) {
                first_error.get_or_insert(e);
            }
        }
        let groups: Vec<String> = self.groups.union(&self.lingering).cloned().collect();
        for g in groups {
            if let Err(e) = self.force_remove(&g) {
                first_error.get_or_insert(e);
            }
        }
        self.lingering.clear();
        if self.created_root {
            for root in self.root_dirs() {
                if let Err(e) = self.drain_and_remove(&root) {
                    first_error.get_or_insert(e);
                }
            }
            self.created_root = false;
        }
        // Everything is back: the record has nothing left to undo.
        if first_error.is_none() {
            self.origins.clear();
            self.old_attrs.clear();
            self.given.clear();
            self.processes.clear();
            if let Some(path) = &self.state_file {
                if let Err(e) = crate::state::remove(path) {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Moves whatever is still in `dir` to where it belongs: a thread born
    /// in a corral group goes where a recorded thread of its process, or
    /// of its nearest recorded ancestor process, came from, or to the
    /// hierarchy's root ([`Placer::home_of`]); never into corral's tree.
    fn drain(&self, dir: &Path) -> Result<(usize, usize)> {
        let (mut moved, mut to_origin) = (0, 0);
        match &self.layout {
            Layout::Threads => {}
            Layout::V1 { cpu, cpuset } => {
                let Some(text) = crate::fsutil::read_opt(&dir.join("tasks"))? else {
                    return Ok((0, 0));
                };
                let mount = if dir.starts_with(cpuset) { cpuset } else { cpu };
                // Each process's home once a pass (a fork storm lists many
                // threads of few processes).
                let mut homes: HashMap<u32, Option<Origin>> = HashMap::new();
                for tid in text
                    .split_whitespace()
                    .filter_map(|t| t.parse::<u32>().ok())
                {
                    let origin = self.origins.get(&tid).cloned().or_else(|| {
                        let pid = tgid(&self.procfs, tid)?;
                        homes
                            .entry(pid)
                            .or_insert_with(|| self.home_of(pid).cloned())
                            .clone()
                    });
                    let path = match (&origin, mount == cpuset) {
                        (Some(o), true) => o.cpuset.clone().unwrap_or_else(|| "/".into()),
                        (Some(o), false) => o.cpu.clone(),
                        (None, _) => "/".into(),
                    };
                    // Never back into corral's tree (a record an older
                    // build wrote may say so): that group is going away.
                    let path = if self.ours(&path) { "/".into() } else { path };
                    if write_task_up(mount, &existing_or_root(mount, &path), &tid.to_string())? {
                        moved += 1;
                        to_origin += origin.is_some() as usize;
                    }
                }
            }
            Layout::V2 { unified } => {
                let root = unified.join(&self.root_name);
                if dir != root {
                    // A threaded child: the kernel refuses to list its
                    // cgroup.procs (EOPNOTSUPP). Its threads go back to the
                    // domain root; draining the root then moves the
                    // processes home.
                    let Some(text) = crate::fsutil::read_opt(&dir.join("cgroup.threads"))? else {
                        return Ok((0, 0));
                    };
                    for tid in text
                        .split_whitespace()
                        .filter_map(|t| t.parse::<u32>().ok())
                    {
                        write_task(&root.join("cgroup.threads"), &tid.to_string())?;
                    }
                    return Ok((0, 0));
                }
                let Some(text) = crate::fsutil::read_opt(&dir.join("cgroup.procs"))? else {
                    return Ok((0, 0));
                };
                for pid in text
                    .split_whitespace()
                    .filter_map(|t| t.parse::<u32>().ok())
                {
                    let origin = self.origins.get(&pid).or_else(|| self.home_of(pid));
                    let path = origin
                        .map(|o| o.cpu.clone())
                        .filter(|p| !self.ours(p))
                        .unwrap_or_else(|| "/".into());
                    if write_task(
                        &existing_or_root(unified, &path).join("cgroup.procs"),
                        &pid.to_string(),
                    )? {
                        moved += 1;
                        to_origin += origin.is_some() as usize;
                    }
                }
            }
        }
        Ok((moved, to_origin))
    }

    /// Drains `dir` and removes it, draining again while it is busy:
    /// a process that forks inside the group while it is drained leaves a
    /// new task there, and `rmdir` then fails with EBUSY. Under a fork
    /// storm each pass moves what was born since the last.
    fn drain_and_remove(&self, dir: &Path) -> Result<(usize, usize)> {
        // Until the group is gone or this long has passed (a fork storm
        // inside can keep it busy for a while: 200 passes, ~1 s, were not
        // always enough beside `stress-ng --fork`).
        const DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);
        let t0 = std::time::Instant::now();
        let (mut moved, mut to_origin) = (0, 0);
        let mut pass = 0u32;
        while pass < 3 || t0.elapsed() < DEADLINE {
            pass += 1;
            if !dir.is_dir() {
                return Ok((moved, to_origin));
            }
            let (m, o) = self.drain(dir)?;
            moved += m;
            to_origin += o;
            match std::fs::remove_dir(dir) {
                Ok(()) => return Ok((moved, to_origin)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok((moved, to_origin))
                }
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    if pass > 2 {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
                Err(e) => return Err(Error::io(dir, e)),
            }
        }
        Err(Error::Busy {
            path: dir.to_path_buf(),
            secs: DEADLINE.as_secs(),
            held: self.holders(dir),
        })
    }

    /// What keeps `dir` busy, for the error that gives up on it: its
    /// first tasks with their state and name from `/proc`, and any child
    /// group (a group with children cannot be removed either).
    fn holders(&self, dir: &Path) -> String {
        let list = ["tasks", "cgroup.threads"]
            .iter()
            .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
            .unwrap_or_default();
        let tids: Vec<&str> = list.split_whitespace().collect();
        let mut parts: Vec<String> = tids
            .iter()
            .take(8)
            .map(|tid| {
                // `/proc/TID/stat`: "TID (comm) S ..."; comm may hold ") ".
                let stat =
                    std::fs::read_to_string(self.procfs.join(tid).join("stat")).unwrap_or_default();
                let comm = stat
                    .find('(')
                    .zip(stat.rfind(')'))
                    .map(|(a, b)| &stat[a + 1..b])
                    .unwrap_or("?");
                // After the comm: state, then (7 fields on) the flags.
                let rest: Vec<&str> = stat
                    .rfind(')')
                    .map(|b| stat[b + 1..].split_whitespace().collect())
                    .unwrap_or_default();
                let state = rest.first().copied().unwrap_or("gone");
                let flags = rest
                    .get(6)
                    .and_then(|f| f.parse::<u64>().ok())
                    .map(|f| format!(", flags {f:#x}"))
                    .unwrap_or_default();
                let file = self.procfs.join(tid).join("cgroup");
                let groups = std::fs::read_to_string(&file)
                    .ok()
                    .and_then(|text| crate::procfs::parse_cgroups(&text, &file).ok())
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|e| e.has_controller("cpu") || e.has_controller("cpuset"))
                    .map(|e| format!("{}:{}", e.controllers.join(","), e.path))
                    .collect::<Vec<_>>()
                    .join(" ");
                format!("{tid} ({comm}, {state}{flags}; {groups})")
            })
            .collect();
        if tids.len() > 8 {
            parts.push(format!("and {} more", tids.len() - 8));
        }
        if tids.is_empty() {
            parts.push("no task".into());
        }
        let children = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .count()
            })
            .unwrap_or(0);
        if children > 0 {
            parts.push(format!("{children} child group(s)"));
        }
        parts.join(", ")
    }

    /// Where the thread is now, from `/proc/PID/task/TID/cgroup`.
    fn read_origin(&self, pid: u32, tid: u32) -> Result<Option<Origin>> {
        if matches!(self.layout, Layout::Threads) {
            let Some(now) = self.thread_mask(pid, tid) else {
                return Ok(None);
            };
            // A set corral gave a member, inherited at birth: the thread
            // goes back to what its process's recorded threads had.
            let mask = if self.given.contains_key(&now) {
                self.processes
                    .get(&pid)
                    .map(|(_, c)| c.to_string())
                    .unwrap_or_else(|| self.own_mask.to_string())
            } else {
                now.to_string()
            };
            return Ok(Some(Origin {
                pid,
                start: crate::state::start_time(&self.procfs, pid, tid),
                cpu: String::new(),
                cpuset: Some(mask),
            }));
        }
        let path = self
            .procfs
            .join(pid.to_string())
            .join("task")
            .join(tid.to_string())
            .join("cgroup");
        let text = match crate::fsutil::read_opt(&path)? {
            Some(t) => t,
            None => return Ok(None),
        };
        let mut cpu = None;
        let mut cpuset = None;
        let mut v2 = None;
        for line in text.lines() {
            let mut f = line.splitn(3, ':');
            let (Some(id), Some(ctrl), Some(p)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let ctrls: Vec<&str> = ctrl.split(',').collect();
            if ctrls.contains(&"cpu") {
                cpu = Some(p.to_string());
            }
            if ctrls.contains(&"cpuset") {
                cpuset = Some(p.to_string());
            }
            if id == "0" && ctrl.is_empty() {
                v2 = Some(p.to_string());
            }
        }
        // Born inside one of corral's groups (a managed thread forked it):
        // where its process, or the nearest recorded ancestor, came from,
        // else the hierarchy's root — never corral's group, which goes
        // away (a thread put back there kept it busy: rmdir EBUSY).
        let born_inside = [&cpu, &cpuset, &v2]
            .into_iter()
            .flatten()
            .any(|p| self.ours(p));
        let home = if born_inside { self.home_of(pid) } else { None };
        let outside = |path: Option<String>, field: fn(&Origin) -> Option<String>| match path {
            Some(p) if self.ours(&p) => Some(home.and_then(field).unwrap_or_else(|| "/".into())),
            other => other,
        };
        Ok(Some(match self.layout {
            Layout::V1 { .. } | Layout::Threads => Origin {
                pid,
                start: crate::state::start_time(&self.procfs, pid, tid),
                cpu: outside(cpu, |o| Some(o.cpu.clone())).unwrap_or_else(|| "/".into()),
                cpuset: outside(cpuset, |o| o.cpuset.clone()),
            },
            Layout::V2 { .. } => Origin {
                pid,
                start: crate::state::start_time(&self.procfs, pid, pid),
                cpu: outside(v2, |o| Some(o.cpu.clone())).unwrap_or_else(|| "/".into()),
                cpuset: None,
            },
        }))
    }

    /// Whether a cgroup path (as `/proc/PID/cgroup` gives it) lies in
    /// corral's own tree.
    fn ours(&self, path: &str) -> bool {
        path.strip_prefix('/')
            .and_then(|p| p.strip_prefix(self.root_name.as_str()))
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }

    /// Where a task of process `pid` not recorded itself belongs: the
    /// origin recorded for its process's main thread, else for another of
    /// its threads, else for its nearest recorded ancestor process (a
    /// command a managed shell started is born in the shell's group);
    /// only an origin outside corral's tree whose task is still the one
    /// recorded (its start time: a PID may have been reused). `None`: the
    /// hierarchy's root.
    fn home_of(&self, pid: u32) -> Option<&Origin> {
        let usable = |key: u32, o: &Origin| {
            !self.ours(&o.cpu)
                && !o.cpuset.as_deref().is_some_and(|c| self.ours(c))
                && crate::state::start_time(&self.procfs, o.pid, key) == o.start
        };
        let mut at = Some(pid);
        for _ in 0..32 {
            let p = at.filter(|&p| p > 1)?;
            let main = self.origins.get(&p).filter(|o| o.pid == p && usable(p, o));
            let found = main.or_else(|| {
                self.origins
                    .iter()
                    .find(|(&key, o)| o.pid == p && usable(key, o))
                    .map(|(_, o)| o)
            });
            if found.is_some() {
                return found;
            }
            at = tgid_parent(&self.procfs, p);
        }
        None
    }

    /// Whether `tid` is still a thread of `pid` (a TID of an exited
    /// thread may be reused by any new thread).
    fn alive(&self, pid: u32, tid: u32) -> bool {
        self.procfs
            .join(pid.to_string())
            .join("task")
            .join(tid.to_string())
            .is_dir()
    }

    /// The CPUs of corral's shared parent: what a plan may use.
    pub fn parent_cpus(&self) -> Option<CpuSet> {
        let file = match &self.layout {
            Layout::V1 { cpuset, .. } => cpuset.join("cpuset.cpus"),
            Layout::V2 { unified } => unified.join("cpuset.cpus.effective"),
            Layout::Threads => return crate::sched::sched_getaffinity(None).ok(),
        };
        std::fs::read_to_string(file)
            .ok()
            .and_then(|t| CpuSet::parse(&t).ok())
    }
}

/// `mount/path` if that directory still exists, else the mount's root.
fn existing_or_root(mount: &Path, path: &str) -> PathBuf {
    let dir = mount.join(path.trim_start_matches('/'));
    if dir.is_dir() {
        dir
    } else {
        mount.to_path_buf()
    }
}

/// A numeric field of `/proc/ID/status` (`Tgid:`, `PPid:`).
fn status_field(procfs: &Path, id: u32, key: &str) -> Option<u32> {
    let text = std::fs::read_to_string(procfs.join(id.to_string()).join("status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
}

/// The process of thread `tid`.
fn tgid(procfs: &Path, tid: u32) -> Option<u32> {
    status_field(procfs, tid, "Tgid:")
}

/// The parent process of process `pid`.
fn tgid_parent(procfs: &Path, pid: u32) -> Option<u32> {
    status_field(procfs, pid, "PPid:")
}

/// Creates a directory; `true` when it did not exist.
fn mkdir(dir: &Path) -> Result<bool> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// [`write_task`] into `dir`'s `tasks`, else into the nearest ancestor
/// up to `mount` that takes it: a cpu group without real-time time
/// refuses a real-time task (`sched_rt_can_attach`: EINVAL), as a
/// systemd slice on v1 does; the root always takes it.
fn write_task_up(mount: &Path, dir: &Path, id: &str) -> Result<bool> {
    let mut at = dir.to_path_buf();
    loop {
        match write_task(&at.join("tasks"), id) {
            Err(Error::Io { ref error, .. })
                if error.raw_os_error() == Some(libc::EINVAL)
                    && at != mount
                    && at.starts_with(mount) =>
            {
                at.pop();
            }
            other => return other,
        }
    }
}

/// `1/part` of the real-time time of the hierarchy's root (`mount`),
/// in `dir`'s period: `None` without real-time group scheduling (no
/// `cpu.rt_runtime_us`).
///
/// ```text
/// want = root.rt_runtime_us · dir.rt_period_us / root.rt_period_us / part
/// ```
fn rt_share(mount: &Path, dir: &Path, part: u64) -> Option<u64> {
    let read = |p: PathBuf| crate::fsutil::read_u64_opt(&p).ok().flatten();
    let runtime = read(mount.join("cpu.rt_runtime_us"))?;
    let period = read(mount.join("cpu.rt_period_us"))?.max(1);
    let own = read(dir.join("cpu.rt_period_us")).unwrap_or(period);
    Some(runtime.saturating_mul(own) / period / part.max(1))
}

/// Gives group `dir` `want` µs of real-time runtime a period, halving
/// while the kernel refuses (`tg_rt_schedulable`: the groups under a
/// parent may not hold more than it, EINVAL), down to 100 µs; what it
/// got, `None` for nothing (a group keeps 0 µs, as the kernel made it,
/// and a thread in it cannot make itself real-time).
fn rt_budget(dir: &Path, want: u64) -> Option<u64> {
    let file = dir.join("cpu.rt_runtime_us");
    if !file.exists() {
        return None;
    }
    let mut us = want;
    while us >= 100 {
        if std::fs::write(&file, us.to_string()).is_ok() {
            return Some(us);
        }
        us /= 2;
    }
    None
}

/// Writes a control file in one `write(2)`, as cgroupfs wants.
fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| Error::io(path, e))
}

/// Writes `value` unless the file holds it already.
fn write_if_differs(path: &Path, value: &str) -> Result<()> {
    match std::fs::read_to_string(path) {
        Ok(now) if now.trim() == value => Ok(()),
        _ => write(path, value),
    }
}

/// Writes a CPU list unless the file holds the same set already.
fn write_cpus_if_differ(path: &Path, cpus: &CpuSet) -> Result<()> {
    let same = std::fs::read_to_string(path)
        .ok()
        .and_then(|now| CpuSet::parse(now.trim()).ok())
        .is_some_and(|now| now == *cpus);
    if same {
        Ok(())
    } else {
        write(path, &cpus.to_string())
    }
}

/// Writes a TID/PID into `tasks`/`cgroup.procs`/`cgroup.threads`;
/// `false` when the thread is gone (ESRCH).
fn write_task(path: &Path, id: &str) -> Result<bool> {
    match std::fs::write(path, id) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error()) => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    }
}

fn copy_file(from: &Path, to: &Path) -> Result<()> {
    let value = crate::fsutil::read(from)?;
    let value = value.trim();
    if value.is_empty() {
        return Ok(());
    }
    write(to, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_core::plan::GroupKind;

    fn spec(name: &str, cpus: &str, shares: u64) -> GroupSpec {
        GroupSpec {
            name: name.into(),
            kind: GroupKind::Shared,
            cpus: CpuSet::parse(cpus).unwrap(),
            shares,
            slice_ns: None,
            nice: None,
        }
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap()
    }

    /// A fake task whose cgroup file says where it is.
    fn fake_task(procfs: &Path, pid: u32, tid: u32, cgroup: &str) {
        let dir = procfs
            .join(pid.to_string())
            .join("task")
            .join(tid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cgroup"), cgroup).unwrap();
    }

    /// A fake v1 tree: `cpu` (with a group `apps`), `cpuset` (CPUs 0-3,
    /// node 0) and `proc`, under a temporary directory.
    fn v1_tree() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let (cpu, cpuset, procfs) = (
            tmp.path().join("cpu"),
            tmp.path().join("cpuset"),
            tmp.path().join("proc"),
        );
        for d in [&cpu, &cpuset, &procfs] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(cpuset.join("cpuset.cpus"), "0-3\n").unwrap();
        std::fs::write(cpuset.join("cpuset.mems"), "0\n").unwrap();
        std::fs::create_dir_all(cpu.join("apps")).unwrap();
        (tmp, cpu, cpuset, procfs)
    }

    /// A v1 placer named `corral` on [`v1_tree`]'s tree.
    fn v1_placer(tmp: &tempfile::TempDir) -> Placer {
        let paths = HostPaths {
            procfs: tmp.path().join("proc"),
            ..Default::default()
        };
        Placer::new(
            Layout::V1 {
                cpu: tmp.path().join("cpu"),
                cpuset: tmp.path().join("cpuset"),
            },
            "corral",
            &paths,
        )
    }

    #[test]
    fn v1_creates_moves_and_restores() {
        let (tmp, cpu, cpuset, procfs) = v1_tree();
        fake_task(&procfs, 10, 11, "3:cpuset:/\n1:cpu:/apps\n0::/\n");
        let mut p = v1_placer(&tmp);
        p.set_group(&spec("dedicated-cpu3", "3", 1024)).unwrap();
        assert_eq!(read(&cpuset.join("corral/dedicated-cpu3/cpuset.cpus")), "3");
        assert_eq!(read(&cpuset.join("corral/dedicated-cpu3/cpuset.mems")), "0");
        assert_eq!(read(&cpu.join("corral/dedicated-cpu3/cpu.shares")), "1024");
        assert!(p.move_thread(11, 10, "dedicated-cpu3").unwrap());
        assert_eq!(read(&cpu.join("corral/dedicated-cpu3/tasks")), "11");
        assert_eq!(read(&cpuset.join("corral/dedicated-cpu3/tasks")), "11");
        assert!(p.move_thread(11, 10, "nope").is_err());
        // Restore: back to /apps (cpu) and the root cpuset. A plain
        // directory stands in for cgroupfs, so the group files remain and
        // rmdir fails; check the writes instead.
        let _ = p.restore_all();
        assert_eq!(read(&cpu.join("apps/tasks")), "11");
        assert_eq!(read(&cpuset.join("tasks")), "11");
    }

    /// `Placer::send_home`: a thread born inside corral's cpu group goes to
    /// where its process came from; its cpuset follows unless it narrowed
    /// its own affinity.
    #[test]
    fn v1_send_home_moves_the_cpu_group_and_an_inherited_cpuset_only() {
        let (tmp, cpu, cpuset, procfs) = v1_tree();
        fake_task(&procfs, 10, 10, "3:cpuset:/\n1:cpu:/apps\n");
        let mut p = v1_placer(&tmp);
        assert!(!p.limits_real_time(), "no cpu.rt_runtime_us");
        p.set_group(&spec("shared", "0-3", 1024)).unwrap();
        p.prepare(&[(10, 10)]).unwrap();
        assert!(p.move_thread(10, 10, "shared").unwrap());
        // Threads 12 and 13, born to 10 inside the group, turned
        // real-time; 13 pinned itself to CPU 1.
        let status = |tid: u32, cpus: &str| {
            std::fs::write(
                procfs.join(format!("10/task/{tid}/status")),
                format!("Name:\tx\nCpus_allowed_list:\t{cpus}\n"),
            )
            .unwrap();
        };
        let inside = "3:cpuset:/corral/shared\n1:cpu:/corral/shared\n";
        fake_task(&procfs, 10, 12, inside);
        status(12, "0-3");
        fake_task(&procfs, 10, 13, inside);
        status(13, "1");
        std::fs::write(cpuset.join("tasks"), "").unwrap();
        p.send_home(12, 10).unwrap();
        assert_eq!(
            read(&cpu.join("apps/tasks")),
            "12",
            "where process 10 came from"
        );
        assert_eq!(
            read(&cpuset.join("tasks")),
            "12",
            "its inherited cpuset follows"
        );
        std::fs::write(cpuset.join("tasks"), "").unwrap();
        p.send_home(13, 10).unwrap();
        assert_eq!(read(&cpu.join("apps/tasks")), "13");
        assert_eq!(
            read(&cpuset.join("tasks")),
            "",
            "a pinned thread keeps its cpuset"
        );
        // A placed thread is put back through the plan, not here.
        std::fs::write(cpu.join("apps/tasks"), "").unwrap();
        p.send_home(10, 10).unwrap();
        assert_eq!(read(&cpu.join("apps/tasks")), "");
    }

    /// Real-time time for corral's groups: a share of the root's in the
    /// group's own period; none without the file or when every write is
    /// refused.
    #[test]
    fn rt_budget_asks_a_share_of_the_root_and_gives_up_below_a_millisecond() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, g) = (tmp.path(), tmp.path().join("corral"));
        std::fs::create_dir_all(&g).unwrap();
        assert_eq!(
            rt_share(root, &g, 10),
            None,
            "no real-time group scheduling"
        );
        std::fs::write(root.join("cpu.rt_runtime_us"), "950000\n").unwrap();
        std::fs::write(root.join("cpu.rt_period_us"), "1000000\n").unwrap();
        assert_eq!(rt_share(root, &g, 10), Some(95_000));
        std::fs::write(g.join("cpu.rt_period_us"), "500000\n").unwrap();
        assert_eq!(
            rt_share(root, &g, 10),
            Some(47_500),
            "in the group's period"
        );
        assert_eq!(rt_budget(&g, 95_000), None, "no file: nothing written");
        std::fs::write(g.join("cpu.rt_runtime_us"), "0\n").unwrap();
        assert_eq!(rt_budget(&g, 95_000), Some(95_000));
        assert_eq!(rt_budget(&g, 99), None, "below 100 µs: not asked");
        assert_eq!(read(&g.join("cpu.rt_runtime_us")), "95000");
        // Every write refused (a directory cannot be written): nothing.
        let refusing = tmp.path().join("refusing");
        std::fs::create_dir_all(refusing.join("cpu.rt_runtime_us")).unwrap();
        assert_eq!(rt_budget(&refusing, 95_000), None);
    }

    #[test]
    fn v2_moves_the_process_then_the_thread_and_converts_weight() {
        let tmp = tempfile::tempdir().unwrap();
        let (unified, procfs) = (tmp.path().join("unified"), tmp.path().join("proc"));
        std::fs::create_dir_all(unified.join("app.slice")).unwrap();
        std::fs::create_dir_all(&procfs).unwrap();
        std::fs::write(
            unified.join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        )
        .unwrap();
        std::fs::write(unified.join("cgroup.subtree_control"), "cpuset cpu\n").unwrap();
        fake_task(&procfs, 20, 21, "0::/app.slice\n");
        let paths = HostPaths {
            procfs,
            ..Default::default()
        };
        let layout = Layout::V2 {
            unified: unified.clone(),
        };
        assert_eq!(layout.check(), Ok(()));
        let mut p = Placer::new(layout, "corral", &paths);
        p.set_group(&spec("latency", "0-1", 10240)).unwrap();
        let g = unified.join("corral/latency");
        assert_eq!(
            read(&unified.join("corral/cgroup.subtree_control")),
            "+cpu +cpuset"
        );
        assert_eq!(read(&g.join("cgroup.type")), "threaded");
        assert_eq!(read(&g.join("cpu.weight")), "1000");
        assert_eq!(read(&g.join("cpuset.cpus")), "0-1");
        // As the daemon does: origins recorded for the batch first.
        p.prepare(&[(21, 20)]).unwrap();
        assert!(p.move_thread(21, 20, "latency").unwrap());
        assert_eq!(read(&unified.join("corral/cgroup.procs")), "20");
        assert_eq!(read(&g.join("cgroup.threads")), "21");
        p.release(21).unwrap();
        assert_eq!(read(&unified.join("app.slice/cgroup.procs")), "20");
        // A task corral did not put there (born inside) keeps the group:
        // it lingers rather than move the task under it.
        std::fs::write(g.join("cgroup.threads"), "21\n").unwrap();
        std::fs::write(g.join("cgroup.procs"), "not readable on a threaded cgroup").unwrap();
        p.remove_group("latency").unwrap();
        assert!(g.exists());
        // Restoring drains a threaded group through cgroup.threads (the
        // kernel refuses cgroup.procs there).
        let _ = p.restore_all();
        assert_eq!(read(&unified.join("corral/cgroup.threads")), "21");
    }

    /// A process born inside corral's tree (its parent was placed) and
    /// then placed itself goes back where its parent came from, never
    /// into corral's group it was born in (which is being removed).
    #[test]
    fn v2_a_process_born_inside_goes_home_with_its_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let (unified, procfs) = (tmp.path().join("unified"), tmp.path().join("proc"));
        std::fs::create_dir_all(unified.join("app.slice")).unwrap();
        std::fs::write(unified.join("cgroup.controllers"), "cpuset cpu\n").unwrap();
        std::fs::write(unified.join("cgroup.subtree_control"), "cpuset cpu\n").unwrap();
        fake_task(&procfs, 20, 20, "0::/app.slice\n");
        fake_task(&procfs, 30, 30, "0::/corral/latency\n");
        std::fs::write(procfs.join("30/status"), "Tgid:\t30\nPPid:\t20\n").unwrap();
        fake_task(&procfs, 40, 40, "0::/corral-other\n");
        let paths = HostPaths {
            procfs,
            ..Default::default()
        };
        let mut p = Placer::new(
            Layout::V2 {
                unified: unified.clone(),
            },
            "corral",
            &paths,
        );
        p.set_group(&spec("latency", "0-1", 10240)).unwrap();
        p.set_group(&spec("heavy", "1", 2048)).unwrap();
        p.prepare(&[(20, 20)]).unwrap();
        assert!(p.move_thread(20, 20, "latency").unwrap());
        p.prepare(&[(30, 30), (40, 40)]).unwrap();
        assert_eq!(p.origins[&30].cpu, "/app.slice", "its parent's origin");
        assert_eq!(
            p.origins[&40].cpu, "/corral-other",
            "a name that only starts alike"
        );
        assert!(p.move_thread(30, 30, "heavy").unwrap());
        p.release(30).unwrap();
        assert_eq!(read(&unified.join("app.slice/cgroup.procs")), "30");
    }

    #[test]
    fn v2_without_delegated_controllers_is_refused_clearly() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("cgroup.controllers"), "\n").unwrap();
        std::fs::write(tmp.path().join("cgroup.subtree_control"), "\n").unwrap();
        let err = Layout::V2 {
            unified: tmp.path().into(),
        }
        .check()
        .unwrap_err();
        assert!(err.contains("no cpu controller"), "{err}");
        std::fs::write(tmp.path().join("cgroup.controllers"), "cpu cpuset\n").unwrap();
        let err = Layout::V2 {
            unified: tmp.path().into(),
        }
        .check()
        .unwrap_err();
        assert!(err.contains("does not enable cpu"), "{err}");
        assert!(
            err.contains("does not change the host's hierarchy"),
            "{err}"
        );
    }
}
