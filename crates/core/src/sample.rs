//! What the sampler reads about a thread, and the per-interval figures
//! derived from two reads.
//!
//! The host layer hands over *cumulative* kernel counters
//! ([`ThreadSample`]); [`Tracker`] keeps the previous read of each thread
//! and turns two reads into rates ([`ThreadStats`]). Threads come and go
//! between reads: a thread seen for the first time has no rates yet, and
//! a thread no longer seen is forgotten.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// The scheduling policy (`policy` in `/proc/PID/stat`, field 41).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Other,
    Fifo,
    Rr,
    Batch,
    Idle,
    Deadline,
    /// A policy number this build does not know (sched_ext is 7).
    Unknown(u32),
}

impl Policy {
    /// From the kernel's number (include/uapi/linux/sched.h).
    pub fn from_raw(raw: u32) -> Policy {
        match raw {
            0 => Policy::Other,
            1 => Policy::Fifo,
            2 => Policy::Rr,
            3 => Policy::Batch,
            5 => Policy::Idle,
            6 => Policy::Deadline,
            n => Policy::Unknown(n),
        }
    }

    /// Whether the fair class (CFS/EEVDF) schedules this thread, and with
    /// it cgroup cpu weights: SCHED_OTHER, SCHED_BATCH, SCHED_IDLE.
    pub fn is_fair(self) -> bool {
        matches!(self, Policy::Other | Policy::Batch | Policy::Idle)
    }
}

/// One read of a thread's counters. Times are nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSample {
    pub tid: u32,
    /// The thread group (process) id.
    pub pid: u32,
    /// Shared, so that a snapshot copies a pointer, not the text.
    pub comm: Arc<str>,
    /// `schedstat` field 1: time spent running.
    pub run_ns: u64,
    /// `schedstat` field 2: time spent runnable, waiting on a run queue.
    pub wait_ns: u64,
    /// `schedstat` field 3: timeslices run on a CPU (times picked).
    pub timeslices: u64,
    /// `status`: `voluntary_ctxt_switches` — each one is a sleep, followed
    /// by a wake-up.
    pub voluntary_switches: u64,
    /// `status`: `nonvoluntary_ctxt_switches` — preemptions.
    pub involuntary_switches: u64,
    /// `sched`: `se.nr_migrations`, when read this time.
    pub nr_migrations: Option<u64>,
    /// `sched`: `se.avg.util_avg` (0–1024, PELT), when read this time.
    pub util_avg: Option<u32>,
    /// The CPU it last ran on (`stat` field 39).
    pub cpu: u32,
    pub policy: Policy,
    pub nice: i32,
    /// A kernel thread (PF_KTHREAD): never managed.
    pub kernel_thread: bool,
    /// The thread's real uid.
    pub uid: u32,
    /// The process's executable (`/proc/PID/exe`), when rules need it.
    pub exe: Option<Arc<str>>,
    /// The thread's cgroup in the cpu controller's hierarchy.
    pub cgroup: Option<Arc<str>>,
    /// Whether someone narrowed the thread's affinity: its allowed CPUs
    /// leave out an online CPU (read before corral placed it).
    pub affinity_narrowed: bool,
    /// The CPUs it may run on, when someone other than corral narrowed
    /// them (a thread forked inside a corral cpuset group inherits its
    /// CPUs: not set).
    pub allowed: Option<crate::cpuset::CpuSet>,
    /// Its cpu cgroup lies in corral's own tree (placed there, or born to
    /// a thread corral placed).
    #[serde(default)]
    pub in_own_group: bool,
}

impl ThreadSample {
    /// A thread with every counter at zero, SCHED_OTHER at nice 0: the
    /// sampler fills in what it reads.
    pub fn new(tid: u32, pid: u32) -> ThreadSample {
        ThreadSample {
            tid,
            pid,
            comm: "".into(),
            run_ns: 0,
            wait_ns: 0,
            timeslices: 0,
            voluntary_switches: 0,
            involuntary_switches: 0,
            nr_migrations: None,
            util_avg: None,
            cpu: 0,
            policy: Policy::Other,
            nice: 0,
            kernel_thread: false,
            uid: 0,
            exe: None,
            cgroup: None,
            affinity_narrowed: false,
            allowed: None,
            in_own_group: false,
        }
    }
}

/// Per-interval figures of one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadStats {
    /// The interval the figures cover, ns.
    pub interval_ns: u64,
    /// CPU time over wall time: 1.0 is one whole CPU.
    pub util: f64,
    /// Mean run-queue wait per timeslice, ns (0 when it never ran).
    pub wait_per_slice_ns: f64,
    /// Run-queue wait over wall time (the share of the interval spent
    /// runnable but not running).
    pub wait_ratio: f64,
    /// Wake-ups per second (voluntary switches per second).
    pub wakeups_per_s: f64,
    /// Mean CPU time per wake-up, ns (the whole run time when it never slept).
    pub run_per_wakeup_ns: f64,
    /// Preemptions per second.
    pub preemptions_per_s: f64,
    /// Migrations in the interval, when both reads had them.
    pub migrations: Option<u64>,
}

impl ThreadStats {
    /// Rates from two reads `dt_ns` apart. Counters that went backwards
    /// (a recycled TID) give `None`.
    pub fn between(prev: &ThreadSample, now: &ThreadSample, dt_ns: u64) -> Option<ThreadStats> {
        delta(&Counters::of(prev, 0, 0), &Counters::of(now, dt_ns, 0))
    }
}

/// A set of threads read at one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// When the read started, ns on the host's monotonic clock.
    pub at_ns: u64,
    pub threads: Vec<ThreadSample>,
}

/// The counters of one read that the next read is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counters {
    at_ns: u64,
    pid: u32,
    run_ns: u64,
    wait_ns: u64,
    timeslices: u64,
    voluntary_switches: u64,
    involuntary_switches: u64,
    nr_migrations: Option<u64>,
    generation: u64,
}

impl Counters {
    fn of(t: &ThreadSample, at_ns: u64, generation: u64) -> Counters {
        Counters {
            at_ns,
            pid: t.pid,
            run_ns: t.run_ns,
            wait_ns: t.wait_ns,
            timeslices: t.timeslices,
            voluntary_switches: t.voluntary_switches,
            involuntary_switches: t.involuntary_switches,
            nr_migrations: t.nr_migrations,
            generation,
        }
    }
}

/// Keeps each thread's previous counters and yields per-interval figures.
/// Updated in place: a step allocates nothing once the threads are known.
#[derive(Debug, Default)]
pub struct Tracker {
    last: HashMap<u32, Counters>,
    generation: u64,
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Takes a snapshot; returns, for each thread in it, its figures since
    /// its previous read (`None` the first time it is seen). Threads that
    /// are no longer present are forgotten.
    pub fn update(&mut self, snap: &Snapshot) -> Vec<Option<ThreadStats>> {
        self.generation += 1;
        let generation = self.generation;
        let out = snap
            .threads
            .iter()
            .map(|t| {
                let now = Counters::of(t, snap.at_ns, generation);
                match self.last.get_mut(&t.tid) {
                    // A TID reused by another process starts afresh.
                    Some(prev) if prev.pid == t.pid => {
                        let stats = delta(prev, &now);
                        // Keep the last known migration count when this read
                        // skipped the `sched` file, so the next delta spans both.
                        let migrations = now.nr_migrations.or(prev.nr_migrations);
                        *prev = Counters {
                            nr_migrations: migrations,
                            ..now
                        };
                        stats
                    }
                    Some(prev) => {
                        *prev = now;
                        None
                    }
                    None => {
                        self.last.insert(t.tid, now);
                        None
                    }
                }
            })
            .collect();
        self.last.retain(|_, c| c.generation == generation);
        out
    }

    /// Whether `tid` is tracked.
    pub fn knows(&self, tid: u32) -> bool {
        self.last.contains_key(&tid)
    }
}

/// Rates between two reads; counters that went backwards give `None`.
fn delta(prev: &Counters, now: &Counters) -> Option<ThreadStats> {
    let dt_ns = now.at_ns.checked_sub(prev.at_ns).filter(|&d| d > 0)?;
    let run = now.run_ns.checked_sub(prev.run_ns)?;
    let wait = now.wait_ns.checked_sub(prev.wait_ns)?;
    let slices = now.timeslices.checked_sub(prev.timeslices)?;
    let vol = now
        .voluntary_switches
        .checked_sub(prev.voluntary_switches)?;
    let invol = now
        .involuntary_switches
        .checked_sub(prev.involuntary_switches)?;
    let secs = dt_ns as f64 / 1e9;
    Some(ThreadStats {
        interval_ns: dt_ns,
        util: run as f64 / dt_ns as f64,
        wait_per_slice_ns: if slices == 0 {
            0.0
        } else {
            wait as f64 / slices as f64
        },
        wait_ratio: wait as f64 / dt_ns as f64,
        wakeups_per_s: vol as f64 / secs,
        run_per_wakeup_ns: run as f64 / vol.max(1) as f64,
        preemptions_per_s: invol as f64 / secs,
        migrations: match (prev.nr_migrations, now.nr_migrations) {
            (Some(a), Some(b)) => b.checked_sub(a),
            _ => None,
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn sample(tid: u32, run_ns: u64, vol: u64) -> ThreadSample {
        ThreadSample {
            comm: format!("t{tid}").into(),
            run_ns,
            timeslices: vol,
            voluntary_switches: vol,
            ..ThreadSample::new(tid, tid)
        }
    }

    #[test]
    fn rates_from_two_reads() {
        let mut a = sample(1, 1_000_000_000, 100);
        a.wait_ns = 0;
        let mut b = sample(1, 1_100_000_000, 200);
        b.wait_ns = 50_000_000;
        b.timeslices = 200;
        let s = ThreadStats::between(&a, &b, 1_000_000_000).unwrap();
        assert!((s.util - 0.1).abs() < 1e-12);
        assert!((s.wakeups_per_s - 100.0).abs() < 1e-9);
        assert!((s.run_per_wakeup_ns - 1_000_000.0).abs() < 1e-6);
        assert!((s.wait_per_slice_ns - 500_000.0).abs() < 1e-6);
        assert!((s.wait_ratio - 0.05).abs() < 1e-12);
    }

    #[test]
    fn tracker_skips_first_sight_and_recycled_tids() {
        let mut t = Tracker::new();
        let snap = |at_ns, threads| Snapshot { at_ns, threads };
        assert_eq!(t.update(&snap(0, vec![sample(1, 0, 0)])), vec![None]);
        let r = t.update(&snap(
            1_000_000_000,
            vec![sample(1, 500_000_000, 10), sample(2, 0, 0)],
        ));
        assert!((r[0].unwrap().util - 0.5).abs() < 1e-12);
        assert!(r[1].is_none());
        // Counters going backwards: a new thread with a recycled TID.
        let r = t.update(&snap(2_000_000_000, vec![sample(1, 1, 0)]));
        assert!(r[0].is_none());
        assert!(!t.knows(2), "thread 2 vanished and is forgotten");
    }

    #[test]
    fn migrations_span_skipped_reads() {
        let mut t = Tracker::new();
        let mut s = sample(1, 0, 0);
        s.nr_migrations = Some(5);
        t.update(&Snapshot {
            at_ns: 0,
            threads: vec![s.clone()],
        });
        s.nr_migrations = None;
        s.run_ns = 10;
        t.update(&Snapshot {
            at_ns: 10,
            threads: vec![s.clone()],
        });
        s.nr_migrations = Some(9);
        s.run_ns = 20;
        let r = t.update(&Snapshot {
            at_ns: 20,
            threads: vec![s],
        });
        assert_eq!(r[0].unwrap().migrations, Some(4));
    }
}
