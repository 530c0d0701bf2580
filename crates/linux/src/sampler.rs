//! The sampler: one pass over the threads in scope per interval.
//!
//! Cost is what matters here (the daemon must stay under 0.5 % of a CPU
//! with a thousand threads), so:
//!
//! - each thread's `schedstat` is opened once and re-read with `pread` at
//!   offset 0, which makes procfs generate it afresh (seq_file) without
//!   the path walk and open/close of a new read;
//! - `stat`, `status` and `sched` (policy, nice, switches, migrations,
//!   util_avg) are read only for new threads and threads that *ran* in the
//!   interval (their timeslice count moved). A thread that did not run
//!   had no context switch, migration or fork, so its previous values are
//!   still exact;
//! - with `--scope-pid`, a process's `children` are read only for threads
//!   that ran (only a running thread can fork), and, while the process
//!   connector reports every fork ([`Sampler::set_forks_reported`]), only
//!   for processes a pass sees for the first time: the kernel writes the
//!   file out whole each time, and a parent that leaves thousands of
//!   children unreaped made it the largest cost of a pass;
//! - a zombie process (its one task exited, state Z, not yet reaped by its
//!   parent) is skipped whole and its handle closed: it can never run
//!   again, and a parent that reaps late (Debian 12's stress-ng clone
//!   stressor leaves ~170 a second unreaped here) would otherwise cost a
//!   directory read and a `pread` each per pass, and a file each. A fork
//!   event that names its number again takes it off the list at once; one
//!   zombie in [`ZOMBIE_CHECK_EVERY`] is checked each pass (by PID) when
//!   the connector may have missed a reuse, one in [`ZOMBIE_PRUNE_EVERY`]
//!   otherwise (to forget the reaped).
//!
//! A thread or process that exits mid-read is dropped silently.

use crate::error::{Error, Result};
use crate::paths::HostPaths;
use corral_core::sample::{Policy, Snapshot, ThreadSample};
use corral_core::CpuSet;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which threads the daemon may look at and manage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every user thread except PID 1, corral itself and its ancestors.
    All,
    /// These processes and all their descendants.
    Pids(Vec<u32>),
    /// Threads at or under these cgroup directories (absolute paths of
    /// directories in a mounted hierarchy).
    Cgroups(Vec<PathBuf>),
}

/// `PF_KTHREAD` in include/linux/sched.h.
const PF_KTHREAD: u64 = 0x0020_0000;

#[derive(Debug)]
struct Entry {
    schedstat: Option<File>,
    sample: ThreadSample,
    generation: u64,
    /// Its details (stat, status, sched, cgroup) were read; a thread first
    /// seen by a full pass has only its counters until the next pass.
    complete: bool,
    /// Its state was Z (exited, not reaped) when its details were read.
    zombie: bool,
    /// First seen inside one of corral's cpuset groups with exactly that
    /// group's CPUs, fewer than the online ones: watched until it has left
    /// that group (`read_thread`).
    born: Option<Born>,
}

/// A thread born with its corral group's CPUs, watched for a pin of its
/// program's: the cpuset it was born in, the CPUs it had when last read,
/// and whether corral moved it since ([`Sampler::pin`]). Its CPUs come
/// with `status`, read anyway; its cpuset is read only after a move or a
/// change of its CPUs.
#[derive(Debug, Clone)]
struct Born {
    cpuset: String,
    mask: CpuSet,
    moved: bool,
}

/// Each pass checks the zombies whose PID is the pass number modulo this,
/// and forgets those no longer in state Z, when forks may have gone
/// unreported ([`Sampler::set_forks_reported`])…
pub const ZOMBIE_CHECK_EVERY: u64 = 8;
/// … and modulo this when every fork was reported (a reuse of a zombie's
/// number reached [`Sampler::adopt`]; the check only forgets the reaped).
pub const ZOMBIE_PRUNE_EVERY: u64 = 64;

/// Reads the threads in scope; keeps per-thread file handles between reads.
#[derive(Debug)]
pub struct Sampler {
    paths: HostPaths,
    scope: Scope,
    online: CpuSet,
    never: HashSet<u32>,
    threads: HashMap<u32, Entry>,
    /// Processes found in a pid or cgroup scope, with the generation last
    /// seen (or, for one the process connector reported, the pass before).
    scoped_pids: HashMap<u32, u64>,
    /// Threads kept in scope whatever the scope says (corral moved them).
    pinned: HashMap<u32, u32>,
    /// `/<corral's root>/`: cgroup paths below it are corral's groups.
    own_groups: String,
    /// Where a thread's cpuset says which CPUs it gives: the v1 cpuset
    /// hierarchy's mount (`cpuset.effective_cpus`, else `cpuset.cpus`) or
    /// the unified one (`cpuset.cpus.effective`), and whether it is v1;
    /// `None` when corral writes no cpuset ([`Sampler::set_cpusets`]).
    cpusets: Option<(PathBuf, bool)>,
    /// The CPU sets corral's per-thread backend gives its groups: a thread
    /// born to a member inherits one, and corral, not its program, narrowed it.
    own_masks: Vec<CpuSet>,
    exe_cache: HashMap<u32, Option<Arc<str>>>,
    want_exe: bool,
    generation: u64,
    /// Whether a new thread's details wait for its second pass (full
    /// passes only).
    defer_new: bool,
    buf: Vec<u8>,
    /// Files opened and kept in the last pass (for the overhead report).
    pub open_files: usize,
    /// Zombie processes: skipped by passes (see the module's notes).
    zombies: HashSet<u32>,
    /// Every fork since the last pass was reported through [`Sampler::adopt`].
    forks_reported: bool,
}

impl Sampler {
    /// A sampler for `scope`; `online` is used to tell whether a new
    /// thread's affinity was narrowed by someone, `own_root` (corral's
    /// cgroup root, e.g. `corral`) whether that someone was corral.
    pub fn new(paths: HostPaths, scope: Scope, online: CpuSet, own_root: &str) -> Sampler {
        let mut never = HashSet::from([1u32, std::process::id()]);
        // Our ancestors: moving them would move the shell that runs us.
        let mut pid = std::process::id();
        while let Some(parent) = ppid(&paths, pid).filter(|&p| p > 1) {
            never.insert(parent);
            pid = parent;
        }
        Sampler {
            paths,
            scope,
            online,
            never,
            threads: HashMap::new(),
            scoped_pids: HashMap::new(),
            pinned: HashMap::new(),
            own_groups: format!("/{own_root}/"),
            cpusets: None,
            own_masks: Vec::new(),
            exe_cache: HashMap::new(),
            want_exe: false,
            generation: 0,
            defer_new: false,
            buf: Vec::with_capacity(4096),
            open_files: 0,
            zombies: HashSet::new(),
            forks_reported: false,
        }
    }

    /// The CPU sets corral itself gives threads (the per-thread backend).
    pub fn set_own_masks(&mut self, masks: Vec<CpuSet>) {
        self.own_masks = masks;
    }

    /// Where threads' cpusets are (the cgroup backends): `mount`, the v1
    /// cpuset hierarchy's or the unified one's.
    pub fn set_cpusets(&mut self, mount: PathBuf, v1: bool) {
        self.cpusets = Some((mount, v1));
    }

    /// The thread's cpuset (its path) and the CPUs it gives, when known.
    fn cpuset_of(&self, dir: &Path) -> Option<(String, CpuSet)> {
        let (mount, v1) = self.cpusets.as_ref()?;
        let file = dir.join("cgroup");
        let text = std::fs::read_to_string(&file).ok()?;
        let path = crate::procfs::parse_cgroups(&text, &file)
            .ok()?
            .into_iter()
            .find(|e| {
                if *v1 {
                    e.has_controller("cpuset")
                } else {
                    e.hierarchy_id == 0
                }
            })?
            .path;
        // What the kernel gives its tasks: v1 mounted with
        // `cpuset_v2_mode` follows `effective_cpus` (and keeps an offline
        // CPU in `cpuset.cpus`), as v2 does.
        let names: &[&str] = if *v1 {
            &["cpuset.effective_cpus", "cpuset.cpus"]
        } else {
            &["cpuset.cpus.effective"]
        };
        let group = mount.join(path.trim_start_matches('/'));
        let cpus = names.iter().find_map(|n| {
            crate::fsutil::read_cpulist_opt(&group.join(n))
                .ok()
                .flatten()
        })?;
        Some((path, cpus))
    }

    /// A watched thread ([`Born`]) read again with CPUs `mask`; what is
    /// still watched. Once corral moved it out, the kernel gave it the new
    /// group's CPUs (v1's `cpuset_attach`; since Linux 6.2 within the mask
    /// its program asked for, `user_cpus_ptr`): fewer than those, its
    /// program pinned it (`s` says so). In a one-CPU group a pin cannot
    /// show (an empty intersection falls back to the group's CPU): still
    /// watched.
    fn born_again(&self, b: Born, mask: CpuSet, dir: &Path, s: &mut ThreadSample) -> Option<Born> {
        if self.online.is_subset(&mask) {
            return None;
        }
        if !b.moved && mask == b.mask {
            return Some(b);
        }
        match self.cpuset_of(dir) {
            Some((path, cpus)) if cpus == mask => {
                (path == b.cpuset || cpus.len() < 2).then_some(Born {
                    cpuset: b.cpuset,
                    mask,
                    moved: false,
                })
            }
            Some((_, cpus)) if mask.is_subset(&cpus) => {
                s.affinity_narrowed = true;
                s.allowed = Some(mask);
                None
            }
            _ => Some(Born { mask, ..b }),
        }
    }

    /// Checks the scope's roots before the daemon starts: a `--scope-pid`
    /// that does not exist, or that is corral itself, is an error; one that
    /// is never managed itself (PID 1, an ancestor of corral such as the
    /// shell that started it) gets a note saying that only its other
    /// descendants are managed.
    pub fn check_scope(&self) -> std::result::Result<Vec<String>, String> {
        let mut notes = Vec::new();
        if let Scope::Pids(roots) = &self.scope {
            for &pid in roots {
                if pid == 0
                    || !self
                        .paths
                        .procfs
                        .join(pid.to_string())
                        .join("task")
                        .is_dir()
                {
                    return Err(format!("--scope-pid {pid}: no such process"));
                }
                if pid == std::process::id() {
                    return Err(format!(
                        "--scope-pid {pid} is corral itself: name the process whose threads it should manage"
                    ));
                }
                if is_kernel_process(&self.paths, pid) {
                    return Err(format!(
                        "--scope-pid {pid} is a kernel thread: corral manages user threads only"
                    ));
                }
                if self.never.contains(&pid) {
                    let what = if pid == 1 {
                        "PID 1"
                    } else {
                        "an ancestor of corral (the shell or service that started it)"
                    };
                    notes.push(format!(
                        "--scope-pid {pid} is {what}: never managed itself; its other descendants are"
                    ));
                }
            }
        }
        Ok(notes)
    }

    /// Whether a thread the process connector just reported (thread `tid`
    /// of process `pid`, made by thread `parent`) is in scope: it is in
    /// the scope of its process, and a new process in that of its parent
    /// (a child inherits its parent's cgroup; a process found by a pid
    /// scope's walk stays in scope until it exits).
    pub fn adopt(&mut self, tid: u32, pid: u32, parent_pid: u32) -> bool {
        // A zombie's number taken by a new task: it was reaped.
        self.zombies.remove(&tid);
        if self.never.contains(&pid) || pid <= 2 {
            return false;
        }
        // The process it came from: its own for a thread, its parent for a
        // new process.
        let origin = if tid != pid { pid } else { parent_pid };
        let yes = match &self.scope {
            // kthreadd's children are kernel threads.
            Scope::All => origin != 2,
            Scope::Pids(roots) => [pid, origin]
                .iter()
                .any(|p| roots.contains(p) || self.scoped_pids.contains_key(p)),
            Scope::Cgroups(_) => [pid, origin]
                .iter()
                .any(|p| self.scoped_pids.contains_key(p)),
        };
        if yes && !matches!(self.scope, Scope::All) {
            self.scoped_pids.entry(pid).or_insert(self.generation);
        }
        yes
    }

    /// Reads only these threads (tid, pid), between full passes.
    pub fn sample_threads(&mut self, which: &[(u32, u32)], now_ns: u64) -> Result<Snapshot> {
        let mut out = Vec::with_capacity(which.len());
        let mut read = HashSet::new();
        for &(tid, pid) in which {
            self.read_into(pid, tid, &mut out, &mut read)?;
        }
        Ok(Snapshot {
            at_ns: now_ns,
            threads: out,
        })
    }

    /// Read each process's executable (for `exe` rules).
    pub fn want_exe(&mut self, yes: bool) {
        self.want_exe = yes;
    }

    /// The CPUs online now (after hot-plug).
    pub fn set_online(&mut self, online: CpuSet) {
        self.online = online;
    }

    /// Keeps `tid` in scope until it exits (corral moved it).
    pub fn pin(&mut self, tid: u32, pid: u32) {
        self.pinned.insert(tid, pid);
        if let Some(b) = self.threads.get_mut(&tid).and_then(|e| e.born.as_mut()) {
            b.moved = true;
        }
    }

    /// Reads every thread in scope.
    pub fn sample(&mut self, now_ns: u64) -> Result<Snapshot> {
        self.defer_new = true;
        let snap = self.full_pass(now_ns);
        self.defer_new = false;
        snap
    }

    /// Reads every thread in scope, a thread seen for the first time whole
    /// too (see [`Host::sample_whole`](corral_core::host::Host::sample_whole)).
    pub fn sample_whole(&mut self, now_ns: u64) -> Result<Snapshot> {
        self.full_pass(now_ns)
    }

    fn full_pass(&mut self, now_ns: u64) -> Result<Snapshot> {
        self.generation += 1;
        let generation = self.generation;
        let mut out: Vec<ThreadSample> = Vec::new();
        let mut read: HashSet<u32> = HashSet::new();
        match self.scope.clone() {
            Scope::All => {
                for pid in numeric_entries(&self.paths.procfs)? {
                    if !self.never.contains(&pid) && !self.zombies.contains(&pid) {
                        let tids = self.tasks_of(pid);
                        if !self.found_zombie(pid, &tids) {
                            for tid in tids {
                                self.read_into(pid, tid, &mut out, &mut read)?;
                            }
                        }
                    }
                }
            }
            Scope::Pids(roots) => {
                let mut queue: Vec<u32> = roots;
                queue.extend(self.scoped_pids.keys().copied());
                let mut seen = HashSet::new();
                while let Some(pid) = queue.pop() {
                    if !seen.insert(pid) {
                        continue;
                    }
                    if self.never.contains(&pid) {
                        // Never managed itself (PID 1, corral, the shell
                        // that started corral), but its other descendants
                        // are in scope: `corral run --scope-pid $$`. Its
                        // threads are not sampled, so whether they forked
                        // is unknown: their children are read every pass.
                        for tid in self.tasks_of(pid) {
                            let path = self.task_dir(pid, tid).join("children");
                            if let Ok(Some(text)) = crate::fsutil::read_opt(&path) {
                                queue.extend(
                                    text.split_whitespace()
                                        .filter_map(|p| p.parse::<u32>().ok()),
                                );
                            }
                        }
                        continue;
                    }
                    if self.zombies.contains(&pid) {
                        continue;
                    }
                    let tids = self.tasks_of(pid);
                    if tids.is_empty() {
                        continue; // exited
                    }
                    if self.found_zombie(pid, &tids) {
                        continue;
                    }
                    let new_process = self.scoped_pids.insert(pid, generation).is_none();
                    for tid in tids {
                        let ran = self.read_into(pid, tid, &mut out, &mut read)?;
                        // Only a thread that ran can have forked since the
                        // last pass, and the connector named its children.
                        if new_process || (ran && !self.forks_reported) {
                            let path = self.task_dir(pid, tid).join("children");
                            if let Ok(Some(text)) = crate::fsutil::read_opt(&path) {
                                queue.extend(
                                    text.split_whitespace()
                                        .filter_map(|p| p.parse::<u32>().ok()),
                                );
                            }
                        }
                    }
                }
                self.scoped_pids.retain(|_, g| *g == generation);
            }
            Scope::Cgroups(dirs) => {
                let mut found = Vec::new();
                for dir in dirs {
                    self.cgroup_tasks(&dir, &mut found)?;
                }
                for (tid, pid) in found {
                    if tid == pid && self.zombies.contains(&pid) {
                        continue;
                    }
                    self.scoped_pids.insert(pid, generation);
                    self.read_into(pid, tid, &mut out, &mut read)?;
                }
                self.scoped_pids.retain(|_, g| *g == generation);
            }
        }
        let pinned: Vec<(u32, u32)> = self.pinned.iter().map(|(&t, &p)| (t, p)).collect();
        for (tid, pid) in pinned {
            self.read_into(pid, tid, &mut out, &mut read)?;
        }
        self.check_zombies(generation);
        self.threads.retain(|_, e| e.generation == generation);
        // A pinned thread that was not read this pass has exited: forget it,
        // or a reused PID/TID would bring an unrelated thread into scope.
        let seen: HashSet<u32> = out.iter().map(|s| s.tid).collect();
        self.pinned.retain(|tid, _| seen.contains(tid));
        let threads = &self.threads;
        self.exe_cache
            .retain(|pid, _| threads.values().any(|e| e.sample.pid == *pid));
        self.open_files = self
            .threads
            .values()
            .filter(|e| e.schedstat.is_some())
            .count();
        out.sort_by_key(|s| s.tid);
        Ok(Snapshot {
            at_ns: now_ns,
            threads: out,
        })
    }

    /// Reads one thread into `out` unless already read this pass; returns
    /// whether it is new or ran since the last pass.
    fn read_into(
        &mut self,
        pid: u32,
        tid: u32,
        out: &mut Vec<ThreadSample>,
        read: &mut HashSet<u32>,
    ) -> Result<bool> {
        if !read.insert(tid) {
            return Ok(false);
        }
        match self.read_thread(pid, tid) {
            Ok(Some((s, ran))) => {
                out.push(s);
                Ok(ran)
            }
            Ok(None) => Ok(false),
            Err(e) if e.is_gone() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether process `pid`, whose tasks are `tids`, is a zombie known
    /// from an earlier pass (its one task's state was Z when last read):
    /// then it joins [`Sampler::zombies`] and its handle is closed.
    fn found_zombie(&mut self, pid: u32, tids: &[u32]) -> bool {
        if tids != [pid] || !self.threads.get(&pid).is_some_and(|e| e.zombie) {
            return false;
        }
        self.threads.remove(&pid);
        self.scoped_pids.remove(&pid);
        self.zombies.insert(pid);
        true
    }

    /// Forgets the zombies of this pass's share (PID modulo
    /// [`ZOMBIE_CHECK_EVERY`] or [`ZOMBIE_PRUNE_EVERY`]) that are no longer
    /// zombies: reaped, or the number now names another process.
    fn check_zombies(&mut self, generation: u64) {
        let every = if self.forks_reported {
            ZOMBIE_PRUNE_EVERY
        } else {
            ZOMBIE_CHECK_EVERY
        };
        let turn = generation % every;
        let procfs = &self.paths.procfs;
        self.zombies.retain(|&pid| {
            u64::from(pid) % every != turn
                || std::fs::read_to_string(procfs.join(pid.to_string()).join("stat"))
                    .ok()
                    .and_then(|t| parse_stat(&t))
                    .is_some_and(|s| is_zombie(s.state))
        });
    }

    /// Whether every fork since the last pass reached [`Sampler::adopt`]
    /// (the process connector's events were taken in and none was lost):
    /// then the next pass reads `children` only of processes new to it.
    pub fn set_forks_reported(&mut self, yes: bool) {
        self.forks_reported = yes;
    }

    /// Zombie processes passes skip now.
    pub fn zombies(&self) -> usize {
        self.zombies.len()
    }

    fn task_dir(&self, pid: u32, tid: u32) -> PathBuf {
        self.paths
            .procfs
            .join(pid.to_string())
            .join("task")
            .join(tid.to_string())
    }

    fn tasks_of(&self, pid: u32) -> Vec<u32> {
        numeric_entries(&self.paths.procfs.join(pid.to_string()).join("task")).unwrap_or_default()
    }

    fn cgroup_tasks(&mut self, dir: &Path, out: &mut Vec<(u32, u32)>) -> Result<()> {
        // v1 lists threads in `tasks`, v2 in `cgroup.threads`.
        for name in ["tasks", "cgroup.threads"] {
            if let Some(text) = crate::fsutil::read_opt(&dir.join(name))? {
                for tid in text
                    .split_whitespace()
                    .filter_map(|t| t.parse::<u32>().ok())
                {
                    let pid = match self.threads.get(&tid) {
                        Some(e) => e.sample.pid,
                        None => match tgid(&self.paths, tid) {
                            Some(p) => p,
                            None => continue,
                        },
                    };
                    if !self.never.contains(&pid) {
                        out.push((tid, pid));
                    }
                }
                break;
            }
        }
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io(dir, e)),
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                self.cgroup_tasks(&entry.path(), out)?;
            }
        }
        Ok(())
    }

    /// Reads one thread and whether it is new or ran since the last pass;
    /// `None` when it is gone.
    fn read_thread(&mut self, pid: u32, tid: u32) -> Result<Option<(ThreadSample, bool)>> {
        let generation = self.generation;
        let dir = self.task_dir(pid, tid);
        if let Some(entry) = self
            .threads
            .get_mut(&tid)
            .filter(|e| e.sample.pid == pid && e.complete)
        {
            let Some((run, wait, slices)) = read_schedstat(&dir, entry, &mut self.buf)? else {
                return Ok(None);
            };
            // It ran since the last pass when it was switched in again, or
            // when its runtime grew within the slice it was in: a thread
            // read while running (a fork systemd's `--uid` unit is about to
            // become) can change its uid and comm, exec and sleep without
            // being switched in again.
            let ran = slices != entry.sample.timeslices || run != entry.sample.run_ns;
            entry.sample.run_ns = run;
            entry.sample.wait_ns = wait;
            entry.sample.timeslices = slices;
            entry.generation = generation;
            if !ran {
                let mut s = entry.sample.clone();
                // Not read this time: the tracker keeps the last count.
                s.nr_migrations = None;
                s.util_avg = None;
                return Ok(Some((s, false)));
            }
            let mut s = entry.sample.clone();
            let born = entry.born.clone();
            // Only a watched thread's CPUs are parsed.
            let mut mask = None;
            let want = born.is_some().then_some(&mut mask);
            let Some(state) = read_details(&dir, &mut s, &mut self.buf, want)? else {
                return Ok(None);
            };
            let watch = match (born, mask) {
                (Some(b), Some(mask)) => self.born_again(b, mask, &dir, &mut s),
                (b, _) => b,
            };
            let entry = self.threads.get_mut(&tid).expect("entry present");
            entry.born = watch;
            entry.sample = s.clone();
            entry.zombie = is_zombie(state);
            return Ok(Some((s, true)));
        }
        // A new thread, or one a full pass saw once before.
        let seen = self.threads.remove(&tid).filter(|e| e.sample.pid == pid);
        let mut sample = ThreadSample::new(tid, pid);
        let schedstat = match seen.as_ref() {
            Some(e) => e.schedstat.as_ref().and_then(|f| f.try_clone().ok()),
            None => File::open(dir.join("schedstat")).ok(),
        };
        let mut entry = Entry {
            schedstat,
            sample: sample.clone(),
            generation,
            complete: true,
            zombie: false,
            born: None,
        };
        let Some((run, wait, slices)) = read_schedstat(&dir, &mut entry, &mut self.buf)? else {
            return Ok(None);
        };
        sample.run_ns = run;
        sample.wait_ns = wait;
        sample.timeslices = slices;
        // A full pass (after the first) reads a thread it has never seen
        // only this far: under a fork storm most such threads are gone by
        // the next pass, and their details (four more files) were wasted
        // work. Seen again, it is read whole; between passes the process
        // connector's young threads are read whole at once.
        if self.defer_new && seen.is_none() && generation > 1 {
            entry.complete = false;
            entry.sample = sample;
            self.threads.insert(tid, entry);
            return Ok(None);
        }
        let Some(state) = read_details(&dir, &mut sample, &mut self.buf, None)? else {
            return Ok(None);
        };
        entry.zombie = is_zombie(state);
        sample.cgroup = read_cpu_cgroup(&dir);
        sample.in_own_group = sample
            .cgroup
            .as_deref()
            .is_some_and(|c| c.starts_with(&self.own_groups));
        if let Some(allowed) = read_cpus_allowed(&dir)? {
            sample.affinity_narrowed = !self.online.is_subset(&allowed);
            // A thread forked inside one of corral's cpuset groups inherits
            // its CPUs: corral narrowed it, nobody pinned it there.
            let ours = sample.in_own_group;
            // Per-thread backend: a set corral gave out, held by a thread
            // of a process with a placed thread or of its child, was
            // inherited from a member: corral's to manage, not pinning.
            // (The same set on another thread is somebody's pinning.)
            let inherited = !self.own_masks.is_empty() && self.own_masks.contains(&allowed) && {
                let parent = ppid(&self.paths, pid);
                self.pinned.values().any(|&p| p == pid || Some(p) == parent)
            };
            if inherited {
                sample.affinity_narrowed = false;
            } else if sample.affinity_narrowed && !ours {
                sample.allowed = Some(allowed);
            } else if sample.affinity_narrowed {
                // Inside one of corral's groups (born to a member): the
                // group's own CPUs are corral's doing, not a pin, and the
                // thread is corral's to manage (it leaves a dedicated or
                // the latency group at once; before, it stayed "narrowed
                // by someone else" for good, and one moved out went back
                // to the root group, where all it started ran beside the
                // user's own threads). Fewer than the group's: its
                // program pinned it. Unknown (no cpuset read): neither.
                match self.cpuset_of(&dir) {
                    Some((cpuset, cpus)) if cpus == allowed => {
                        sample.affinity_narrowed = false;
                        entry.born = Some(Born {
                            cpuset,
                            mask: allowed,
                            moved: false,
                        });
                    }
                    Some((_, cpus)) if allowed.is_subset(&cpus) => {
                        sample.allowed = Some(allowed);
                    }
                    _ => {}
                }
            }
        }
        if self.want_exe {
            let exe = self
                .exe_cache
                .entry(pid)
                .or_insert_with(|| {
                    std::fs::read_link(self.paths.procfs.join(pid.to_string()).join("exe"))
                        .ok()
                        .map(|p| Arc::from(p.to_string_lossy()))
                })
                .clone();
            sample.exe = exe;
        }
        entry.sample = sample.clone();
        self.threads.insert(tid, entry);
        Ok(Some((sample, true)))
    }
}

/// Reads `schedstat` through the kept handle (re-opening once if needed).
fn read_schedstat(
    dir: &Path,
    entry: &mut Entry,
    buf: &mut Vec<u8>,
) -> Result<Option<(u64, u64, u64)>> {
    buf.clear();
    buf.resize(128, 0);
    let n = match &entry.schedstat {
        Some(f) => f.read_at(buf, 0),
        None => std::fs::read(dir.join("schedstat")).map(|v| {
            let n = v.len().min(buf.len());
            buf[..n].copy_from_slice(&v[..n]);
            n
        }),
    };
    match n {
        Ok(0) => Ok(None),
        Ok(n) => Ok(parse_schedstat(&buf[..n])),
        Err(e) if is_gone_io(&e) => Ok(None),
        Err(e) => Err(Error::io(&dir.join("schedstat"), e)),
    }
}

fn is_gone_io(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
        || e.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error())
}

/// `run_ns wait_ns timeslices`.
pub fn parse_schedstat(bytes: &[u8]) -> Option<(u64, u64, u64)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut it = text.split_whitespace().map(|f| f.parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// Z: exited, waiting for its parent to reap it; X: being reaped.
fn is_zombie(state: char) -> bool {
    matches!(state, 'Z' | 'X')
}

/// Reads `stat`, `status` and `sched` into `s`, and into `allowed`, when
/// asked, the thread's CPUs as `status` gives them (`Cpus_allowed_list`);
/// returns the thread's state (`stat` field 3), `None` when the thread is
/// gone.
fn read_details(
    dir: &Path,
    s: &mut ThreadSample,
    buf: &mut Vec<u8>,
    mut allowed: Option<&mut Option<CpuSet>>,
) -> Result<Option<char>> {
    let Some(stat) = read_small(&dir.join("stat"), buf)? else {
        return Ok(None);
    };
    let Some(parsed) = parse_stat(&stat) else {
        return Err(Error::parse(
            &dir.join("stat"),
            &stat,
            "a /proc/PID/stat line",
        ));
    };
    if *s.comm != *parsed.comm {
        s.comm = parsed.comm.into();
    }
    s.cpu = parsed.cpu;
    s.policy = Policy::from_raw(parsed.policy);
    s.nice = parsed.nice;
    s.kernel_thread = parsed.flags & PF_KTHREAD != 0;
    let state = parsed.state;
    let Some(status) = read_small(&dir.join("status"), buf)? else {
        return Ok(None);
    };
    for line in status.lines() {
        let value = |prefix: &str| line.strip_prefix(prefix).map(str::trim);
        if let Some(v) = value("voluntary_ctxt_switches:") {
            s.voluntary_switches = v.parse().unwrap_or(s.voluntary_switches);
        } else if let Some(v) = value("nonvoluntary_ctxt_switches:") {
            s.involuntary_switches = v.parse().unwrap_or(s.involuntary_switches);
        } else if let (Some(a), Some(v)) = (allowed.as_deref_mut(), value("Cpus_allowed_list:")) {
            *a = crate::fsutil::parse_cpulist(&dir.join("status"), v).ok();
        } else if let Some(v) = value("Uid:") {
            s.uid = v
                .split_whitespace()
                .next()
                .and_then(|u| u.parse().ok())
                .unwrap_or(s.uid);
        }
    }
    // `sched` exists only with CONFIG_SCHED_DEBUG; its absence is fine.
    if let Some(sched) = read_small(&dir.join("sched"), buf)? {
        for line in sched.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            match key.trim() {
                "se.nr_migrations" => s.nr_migrations = value.trim().parse().ok(),
                "se.avg.util_avg" => s.util_avg = value.trim().parse().ok(),
                _ => {}
            }
        }
    }
    Ok(Some(state))
}

/// A small procfs file as text; `None` when the thread is gone.
fn read_small(path: &Path, buf: &mut Vec<u8>) -> Result<Option<String>> {
    use std::io::Read;
    buf.clear();
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if is_gone_io(&e) => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    match f.read_to_end(buf) {
        Ok(_) => Ok(Some(String::from_utf8_lossy(buf).into_owned())),
        Err(e) if is_gone_io(&e) => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// The fields of `/proc/PID/task/TID/stat` corral uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    pub flags: u64,
    pub nice: i32,
    pub cpu: u32,
    pub policy: u32,
}

/// Parses a stat line (proc(5)); the comm may hold spaces and parentheses,
/// so fields are counted from the last `)`.
pub fn parse_stat(line: &str) -> Option<Stat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?.to_string();
    let f: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // f[0] is field 3 (state); field k is f[k - 3].
    let field = |k: usize| f.get(k - 3).copied();
    Some(Stat {
        comm,
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        flags: field(9)?.parse().ok()?,
        nice: field(19)?.parse().ok()?,
        cpu: field(39)?.parse().ok()?,
        policy: field(41)?.parse().ok()?,
    })
}

pub(crate) fn read_cpus_allowed(dir: &Path) -> Result<Option<CpuSet>> {
    let path = dir.join("status");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    text.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|list| crate::fsutil::parse_cpulist(&path, list))
        .transpose()
}

/// The thread's path in the cpu controller's hierarchy (v1 `cpu`, else v2).
fn read_cpu_cgroup(dir: &Path) -> Option<Arc<str>> {
    let text = std::fs::read_to_string(dir.join("cgroup")).ok()?;
    let mut v2 = None;
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (id, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        if ctrl.split(',').any(|c| c == "cpu") {
            return Some(path.into());
        }
        if id == "0" && ctrl.is_empty() {
            v2 = Some(path.into());
        }
    }
    v2
}

fn ppid(paths: &HostPaths, pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(paths.procfs.join(pid.to_string()).join("stat")).ok()?;
    parse_stat(&text).map(|s| s.ppid)
}

fn is_kernel_process(paths: &HostPaths, pid: u32) -> bool {
    std::fs::read_to_string(paths.procfs.join(pid.to_string()).join("stat"))
        .ok()
        .and_then(|t| parse_stat(&t))
        .is_some_and(|s| s.flags & PF_KTHREAD != 0)
}

fn tgid(paths: &HostPaths, tid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(paths.procfs.join(tid.to_string()).join("status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The numeric entries of a directory (PIDs in /proc, TIDs in task/).
fn numeric_entries(dir: &Path) -> Result<Vec<u32>> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    Ok(rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_awkward_comm() {
        let line = "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 100 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.comm, "a (b) c");
        assert_eq!(
            (s.state, s.ppid, s.nice, s.cpu, s.policy),
            ('S', 1, 0, 1, 0)
        );
        assert_eq!(s.flags, 4194560);
    }

    #[test]
    fn affinity_narrowed_inside_corral_groups_is_not_somebody_elses_pin() {
        let dir = std::env::temp_dir().join(format!("corral-sampler-pin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let host = crate::fake::FakeHost::new(&dir);
        host.cpus("0-1", "0-1", "0-1");
        // One process: a thread someone pinned to CPU 0, one forked inside
        // corral's dedicated-cpu1 (so on CPU 1), one free.
        for (tid, allowed, cgroup) in [
            (4242, "0", "/lab"),
            (4243, "1", "/corral/dedicated-cpu1"),
            (4244, "0-1", "/lab"),
        ] {
            let cgroup = format!("4:cpu,cpuacct:{cgroup}\n0::/\n");
            fake_thread(&host, tid, allowed, &cgroup, 1);
        }
        let mut sampler = Sampler::new(
            host.paths(),
            Scope::Pids(vec![4242]),
            "0-1".parse().unwrap(),
            "corral",
        );
        let snap = sampler.sample(0).unwrap();
        let by = |tid: u32| snap.threads.iter().find(|t| t.tid == tid).unwrap().clone();
        assert_eq!(by(4242).allowed, Some("0".parse().unwrap()));
        assert!(by(4242).affinity_narrowed);
        assert!(by(4243).affinity_narrowed);
        assert_eq!(by(4243).allowed, None);
        assert!(!by(4244).affinity_narrowed);
        assert_eq!(by(4244).allowed, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Threads born inside corral's cpuset groups: one with its group's
    /// CPUs is corral's to manage, and stays so once moved out (the
    /// kernel gave it the new group's); one with fewer CPUs than its
    /// group's was pinned by its program, at its first read or once moved.
    #[test]
    fn a_thread_born_with_its_corral_group_s_cpus_is_not_narrowed_and_a_pin_is_told_apart() {
        let dir = std::env::temp_dir().join(format!("corral-sampler-born-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let host = crate::fake::FakeHost::new(&dir);
        host.cpus("0-3", "0-3", "0-3");
        for (group, cpus) in [
            ("dedicated-cpu1", "1"),
            ("latency", "0-1"),
            ("shared", "0,2-3"),
        ] {
            host.write(
                &format!("cgroup/cpuset/corral/{group}/cpuset.cpus"),
                &format!("{cpus}\n"),
            );
        }
        let put = |tid: u32, allowed: &str, group: &str, slices: u32| {
            let cgroup = format!("4:cpu,cpuacct:/corral/{group}\n3:cpuset:/corral/{group}\n0::/\n");
            fake_thread(&host, tid, allowed, &cgroup, slices);
        };
        // Born in dedicated-cpu1 and in latency with the group's CPUs, and
        // in latency pinned to CPU 0.
        put(4243, "1", "dedicated-cpu1", 1);
        put(4246, "0-1", "latency", 1);
        put(4245, "0", "latency", 1);
        put(4248, "1", "dedicated-cpu1", 1);
        let mut sampler = Sampler::new(
            host.paths(),
            Scope::Pids(vec![4242]),
            "0-3".parse().unwrap(),
            "corral",
        );
        sampler.set_cpusets(host.paths().cgroup.join("cpuset"), true);
        let snap = sampler.sample(0).unwrap();
        let by =
            |snap: &Snapshot, tid: u32| snap.threads.iter().find(|t| t.tid == tid).unwrap().clone();
        for tid in [4243, 4246, 4248] {
            assert!(!by(&snap, tid).affinity_narrowed, "{tid}");
            assert_eq!(by(&snap, tid).allowed, None);
        }
        assert!(by(&snap, 4245).affinity_narrowed);
        assert_eq!(by(&snap, 4245).allowed, Some("0".parse().unwrap()));
        // corral moved 4243 and 4246 to shared. 4243 got shared's CPUs;
        // 4246's program had pinned it to CPU 0 meanwhile, which the
        // kernel kept.
        put(4243, "0,2-3", "shared", 2);
        put(4246, "0", "shared", 2);
        // 4248's program pinned it to CPU 1, its CPUs the same: corral's
        // move (`pin`) is what says to look again.
        sampler.pin(4248, 4242);
        put(4248, "1", "latency", 2);
        let snap = sampler.sample(0).unwrap();
        assert!(!by(&snap, 4243).affinity_narrowed);
        assert!(by(&snap, 4246).affinity_narrowed);
        assert_eq!(by(&snap, 4246).allowed, Some("0".parse().unwrap()));
        assert!(by(&snap, 4248).affinity_narrowed);
        assert_eq!(by(&snap, 4248).allowed, Some("1".parse().unwrap()));
        // Out of its birth group with that group's CPUs: no longer watched.
        put(4243, "2", "shared", 3);
        let snap = sampler.sample(0).unwrap();
        assert!(!by(&snap, 4243).affinity_narrowed);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Thread `tid` of process 4242 (a child of 1) in a fake procfs: its
    /// CPUs, its `/proc/PID/cgroup` text and its timeslice count (a change
    /// means it ran).
    fn fake_thread(
        host: &crate::fake::FakeHost,
        tid: u32,
        allowed: &str,
        cgroup: &str,
        slices: u32,
    ) {
        let stat = |tid: u32| {
            format!("{tid} (t) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 100 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
        };
        let task = format!("proc/4242/task/{tid}");
        host.write("proc/4242/stat", &stat(4242))
            .write(&format!("{task}/stat"), &stat(tid))
            .write(&format!("{task}/schedstat"), &format!("{slices}000 0 {slices}\n"))
            .write(
                &format!("{task}/status"),
                &format!("Name:\tt\nUid:\t0\t0\t0\t0\nCpus_allowed_list:\t{allowed}\nvoluntary_ctxt_switches:\t{slices}\nnonvoluntary_ctxt_switches:\t0\n"),
            )
            .write(&format!("{task}/cgroup"), cgroup);
    }

    /// A one-thread process (child of 4242) in a fake procfs: its state
    /// and its timeslice count (a change means it ran).
    fn fake_task(host: &crate::fake::FakeHost, pid: u32, state: char, slices: u32) {
        let t = format!("proc/{pid}/task/{pid}");
        let stat = format!("{pid} (t) {state} 4242 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 100 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n");
        host.write(&format!("proc/{pid}/stat"), &stat)
            .write(&format!("{t}/stat"), &stat)
            .write(&format!("{t}/schedstat"), &format!("1000 0 {slices}\n"))
            .write(
                &format!("{t}/status"),
                "Name:\tt\nUid:\t0\t0\t0\t0\nvoluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t0\n",
            )
            .write(&format!("{t}/cgroup"), "0::/\n");
    }

    /// A fake tree (CPUs 0-1) in a fresh temporary directory named after
    /// `what`, holding process 4242, and a sampler scoped to 4242 and its
    /// descendants.
    fn scoped_to_4242(what: &str) -> (PathBuf, crate::fake::FakeHost, Sampler) {
        let dir =
            std::env::temp_dir().join(format!("corral-sampler-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let host = crate::fake::FakeHost::new(&dir);
        host.cpus("0-1", "0-1", "0-1");
        fake_task(&host, 4242, 'S', 1);
        let sampler = Sampler::new(
            host.paths(),
            Scope::Pids(vec![4242]),
            "0-1".parse().unwrap(),
            "corral",
        );
        (dir, host, sampler)
    }

    fn tids(snap: &Snapshot) -> Vec<u32> {
        snap.threads.iter().map(|t| t.tid).collect()
    }

    #[test]
    fn a_zombie_process_is_skipped_until_its_number_names_a_live_task() {
        let (dir, host, mut sampler) = scoped_to_4242("zombie");
        let task = |pid: u32, state: char, slices: u32| fake_task(&host, pid, state, slices);
        host.write("proc/4242/task/4242/children", "4300 ");
        // Exited, not reaped by its parent.
        task(4300, 'Z', 3);
        assert_eq!(tids(&sampler.sample(0).unwrap()), [4242, 4300]);
        // Known to be a zombie: skipped, its file closed.
        assert_eq!(tids(&sampler.sample(1).unwrap()), [4242]);
        assert_eq!(sampler.zombies(), 1);
        assert_eq!(sampler.open_files, 1);
        // Reaped, and the number taken by a new process the connector
        // missed: this pass's check (PID modulo 8) finds it no zombie, and
        // the parent's next fork list brings it back.
        task(4300, 'R', 9);
        task(4242, 'S', 2);
        for g in 2..2 + ZOMBIE_CHECK_EVERY {
            sampler.sample(g).unwrap();
        }
        assert_eq!(sampler.zombies(), 0);
        task(4242, 'S', 3);
        // A process a full pass finds is read whole at its second pass.
        sampler.sample(20).unwrap();
        assert_eq!(tids(&sampler.sample(21).unwrap()), [4242, 4300]);
        // A fork event naming a zombie's number takes it off at once.
        task(4300, 'Z', 10);
        sampler.sample(22).unwrap();
        sampler.sample(23).unwrap();
        assert_eq!(sampler.zombies(), 1);
        sampler.adopt(4300, 4300, 4242);
        assert_eq!(sampler.zombies(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn children_are_read_only_when_the_connector_did_not_report_every_fork() {
        let (dir, host, mut sampler) = scoped_to_4242("forks");
        let task = |pid: u32, slices: u32| fake_task(&host, pid, 'S', slices);
        assert_eq!(tids(&sampler.sample(0).unwrap()), [4242]);
        // The parent ran and forked 4300; the connector reported every fork
        // but this one did not reach the sampler: the pass does not look.
        task(4300, 1);
        host.write("proc/4242/task/4242/children", "4300 ");
        task(4242, 2);
        sampler.set_forks_reported(true);
        assert_eq!(tids(&sampler.sample(1).unwrap()), [4242]);
        // Events were lost: the pass reads the parent's children (the
        // parent ran again), and finds 4300 (whole at its second pass).
        task(4242, 3);
        sampler.set_forks_reported(false);
        sampler.sample(2).unwrap();
        assert_eq!(tids(&sampler.sample(3).unwrap()), [4242, 4300]);
        // A fork the connector reported is found without the file.
        task(4301, 1);
        task(4242, 4);
        sampler.set_forks_reported(true);
        assert!(sampler.adopt(4301, 4301, 4242));
        sampler.sample(4).unwrap();
        assert_eq!(tids(&sampler.sample(5).unwrap()), [4242, 4300, 4301]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_thread_read_while_running_is_read_again_when_only_its_runtime_grew() {
        let (dir, host, mut sampler) = scoped_to_4242("running");
        let t = "proc/4242/task/4242";
        let status = |uid: u32| {
            format!("Name:\tt\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nvoluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t0\n")
        };
        // Read while it runs, before it drops root.
        host.write(&format!("{t}/schedstat"), "1000 0 1\n")
            .write(&format!("{t}/status"), &status(0));
        let snap = sampler.sample(0).unwrap();
        assert_eq!(snap.threads[0].uid, 0);
        // In the same slice: setuid, exec, sleep. Switched in once, as
        // before; its runtime grew.
        let stat = std::fs::read_to_string(dir.join(format!("{t}/stat"))).unwrap();
        host.write(&format!("{t}/schedstat"), "3000 0 1\n")
            .write(&format!("{t}/status"), &status(65534))
            .write(&format!("{t}/stat"), &stat.replace("(t)", "(sleep)"));
        let snap = sampler.sample(1).unwrap();
        assert_eq!(snap.threads[0].uid, 65534);
        assert_eq!(&*snap.threads[0].comm, "sleep");
        // Asleep since: not read again (its files are not opened).
        host.write(&format!("{t}/status"), &status(7));
        let snap = sampler.sample(2).unwrap();
        assert_eq!(snap.threads[0].uid, 65534);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn schedstat() {
        assert_eq!(parse_schedstat(b"123 456 7\n"), Some((123, 456, 7)));
        assert_eq!(parse_schedstat(b"123 x 7\n"), None);
    }
}
