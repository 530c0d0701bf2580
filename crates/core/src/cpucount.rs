//! Paper 003's **CPU Count Detector**: how many threads a parallel program
//! should start.
//!
//! Phones and laptops take idle CPUs offline. A program that counts
//! *online* CPUs (`sysconf(_SC_NPROCESSORS_ONLN)`, `/proc/stat`) starts too
//! few threads, the load never rises, and the hot-plug governor never brings
//! the other CPUs back: the program stays on the CPUs it happened to see.
//! Counting the CPUs that *exist* instead — `present`, which the kernel
//! keeps within `possible` — starts enough threads for the governor to
//! bring every CPU online.
//!
//! corral's rule, applied in order by [`recommend`]:
//!
//! ```text
//!   usable   = present ∩ cpuset              (cpuset: the configured one,
//!                                             offline CPUs included)
//!   allowed  = usable − isolated             if the affinity covers every
//!                                             online, non-isolated CPU of usable
//!            = usable ∩ affinity             otherwise (someone narrowed it)
//!   threads  = min(|allowed|, ⌈quota / period⌉), at least 1
//! ```
//!
//! Why the affinity test: the kernel drops offline CPUs from what
//! `sched_getaffinity(2)` returns (it masks with `cpu_active_mask`), and a
//! v2 cpuset drops them from `cpuset.cpus.effective` and so from the task's
//! mask. A task whose mask holds every online CPU it could have was not
//! narrowed by anyone; the CPUs missing from it are missing because they are
//! offline, and they count. A mask that leaves out an online CPU was set on
//! purpose (`taskset`, `isolcpus`), and only its CPUs count.
//!
//! Why round the quota **up**: a parallel loop wants to consume all the CPU
//! time it may have. With a quota of 1.5 CPUs, one thread can use only
//! 1.0 of them; two threads use all 1.5, paying for it with throttling at
//! the end of each period. Others differ:
//!
//! - Go 1.25 (`runtime/cgroup_linux.go`, `adjustCgroupGOMAXPROCS`) also
//!   rounds up, but with a minimum of 2 — a 0.25-CPU limit gives
//!   `GOMAXPROCS=2` — and reads only the leaf cgroup's limit; corral
//!   takes the tightest over every ancestor and allows 1.
//! - Uber's automaxprocs rounds down (minimum 1), treating the fraction as
//!   head-room rather than capacity: no throttling, but a 1.9-CPU quota
//!   gets one thread.
//! - OpenJDK's container support rounds quota / period up for
//!   `availableProcessors()`.
//! - GNU `nproc` in Debian 12 (coreutils 9.1) counts the affinity mask
//!   only and ignores the quota, so it overcounts.

use crate::cpuset::CpuSet;
use serde::Serialize;

/// Which cgroup interface a limit was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    V1,
    V2,
}

/// The cpuset a task sits in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpusetLimit {
    pub version: CgroupVersion,
    /// The cgroup path, relative to its hierarchy's root.
    pub cgroup: String,
    /// The configured CPUs (`cpuset.cpus`; on v2 the intersection of every
    /// non-empty `cpuset.cpus` from the task's group up to the root).
    pub cpus: CpuSet,
    /// `cpuset.cpus.effective` (v2) or `cpuset.effective_cpus` (v1), which
    /// leave out offline CPUs; informational.
    pub effective: Option<CpuSet>,
}

/// A CFS bandwidth limit: at most `quota_us` of CPU time per `period_us`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Quota {
    pub version: CgroupVersion,
    /// The group that sets the tightest limit on the task.
    pub cgroup: String,
    pub quota_us: u64,
    pub period_us: u64,
}

impl Quota {
    /// The limit in CPUs (quota / period).
    pub fn cpus(&self) -> f64 {
        self.quota_us as f64 / self.period_us as f64
    }

    /// ⌈quota / period⌉, at least 1, in integer arithmetic.
    pub fn ceil_cpus(&self) -> u32 {
        let ceil = self.quota_us.div_ceil(self.period_us.max(1));
        ceil.clamp(1, u32::MAX as u64) as u32
    }

    /// Whether `self` allows less CPU time than `other`
    /// (q1/p1 < q2/p2 ⇔ q1·p2 < q2·p1, exact in u128).
    pub fn is_tighter_than(&self, other: &Quota) -> bool {
        (self.quota_us as u128 * other.period_us as u128)
            < (other.quota_us as u128 * self.period_us as u128)
    }
}

/// What the detector knows about the machine and the target process.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CountInputs {
    pub online: CpuSet,
    pub present: CpuSet,
    pub possible: CpuSet,
    pub isolated: CpuSet,
    /// The task's allowed CPUs (`Cpus_allowed_list` in /proc/PID/status,
    /// which keeps offline CPUs), or `None` when unknown.
    pub affinity: Option<CpuSet>,
    pub cpuset: Option<CpusetLimit>,
    pub quota: Option<Quota>,
}

/// The detector's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recommendation {
    /// Threads to start.
    pub threads: u32,
    /// The CPUs counted.
    pub counted: CpuSet,
    /// What a detector that counts online CPUs only would say
    /// (`sysconf(_SC_NPROCESSORS_ONLN)`).
    pub online_only: u32,
    /// Whether the affinity mask was taken as narrowed by someone.
    pub affinity_narrowed: bool,
    /// Each step of the rule that changed the count, in order, for people.
    pub reasons: Vec<String>,
}

/// Applies corral's rule (see the module documentation).
pub fn recommend(input: &CountInputs) -> Recommendation {
    let mut reasons = Vec::new();
    let present = input.present.intersection(&input.possible);
    let offline_present = present.difference(&input.online);
    if offline_present.is_empty() {
        reasons.push(format!(
            "{} CPUs present ({present}), all online",
            present.len()
        ));
    } else {
        reasons.push(format!(
            "{} CPUs present ({present}); the {} offline ({offline_present}) count: a hot-plug \
             governor brings them online once the load is there",
            present.len(),
            offline_present.len()
        ));
    }

    let usable = match &input.cpuset {
        Some(cs) => {
            let usable = present.intersection(&cs.cpus);
            if usable != present {
                reasons.push(format!(
                    "cpuset {} allows {} ({})",
                    cs.cgroup,
                    cs.cpus,
                    usable.len()
                ));
            }
            usable
        }
        None => present,
    };

    let unisolated = usable.difference(&input.isolated);
    let (allowed, narrowed) = match &input.affinity {
        None => (unisolated, false),
        Some(affinity) => {
            let reachable = unisolated.intersection(&input.online);
            if reachable.is_subset(affinity) {
                // Not narrowed: CPUs missing from the mask are offline ones,
                // or isolated ones the mask never had. Isolated CPUs the mask
                // does hold were handed over on purpose and count.
                (unisolated.union(&affinity.intersection(&usable)), false)
            } else {
                let allowed = usable.intersection(affinity);
                reasons.push(format!(
                    "affinity {affinity} leaves out online CPUs: only its {} CPUs ({allowed}) count",
                    allowed.len()
                ));
                (allowed, true)
            }
        }
    };
    if !narrowed && allowed != usable {
        reasons.push(format!(
            "isolated CPUs ({}) do not count",
            usable.difference(&allowed)
        ));
    }

    let mut threads = allowed.len();
    if let Some(q) = &input.quota {
        let cap = q.ceil_cpus();
        if cap < threads {
            reasons.push(format!(
                "CPU quota {:.2} CPUs ({} us per {} us, {}) caps it at {cap} (rounded up)",
                q.cpus(),
                q.quota_us,
                q.period_us,
                q.cgroup
            ));
            threads = cap;
        }
    }
    if threads == 0 {
        reasons.push("no CPU is left after these limits; falling back to 1 thread".into());
        threads = 1;
    }
    let online_only = input.online.len().max(1);
    Recommendation {
        threads,
        counted: allowed,
        online_only,
        affinity_narrowed: narrowed,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse(s).unwrap()
    }

    fn machine(online: &str, possible: &str, present: &str) -> CountInputs {
        CountInputs {
            online: set(online),
            possible: set(possible),
            present: set(present),
            // A task in the root cpuset holds every possible CPU.
            affinity: Some(set(possible)),
            ..Default::default()
        }
    }

    #[test]
    fn paper_003_tables() {
        // 80 physical CPUs, NR_CPUS 32, some offline.
        let r = recommend(&machine("0-1,3", "0-31", "0-31"));
        assert_eq!((r.threads, r.online_only), (32, 3));
        // 4 physical CPUs, NR_CPUS 128.
        let r = recommend(&machine("0-1,3", "0-127", "0-3"));
        assert_eq!((r.threads, r.online_only), (4, 3));
        assert!(!r.affinity_narrowed);
    }

    #[test]
    fn active_only_affinity_is_not_narrowing() {
        // sched_getaffinity-style mask: the online CPUs only.
        let mut m = machine("0-1,3", "0-7", "0-3");
        m.affinity = Some(set("0-1,3"));
        assert_eq!(recommend(&m).threads, 4);
    }

    #[test]
    fn narrowed_affinity_counts_only_its_cpus() {
        let mut m = machine("0-1", "0-1", "0-1");
        m.affinity = Some(set("0"));
        let r = recommend(&m);
        assert_eq!(r.threads, 1);
        assert!(r.affinity_narrowed);
    }

    #[test]
    fn cpuset_limits_and_keeps_offline_cpus() {
        let mut m = machine("0-1", "0-7", "0-7");
        m.cpuset = Some(CpusetLimit {
            version: CgroupVersion::V2,
            cgroup: "/a".into(),
            cpus: set("0-3"),
            effective: Some(set("0-1")),
        });
        m.affinity = Some(set("0-1"));
        assert_eq!(recommend(&m).threads, 4);
    }

    #[test]
    fn isolated_cpus_count_only_when_the_mask_holds_them() {
        let mut m = machine("0-3", "0-3", "0-3");
        m.isolated = set("3");
        m.affinity = Some(set("0-2"));
        let r = recommend(&m);
        assert_eq!(r.threads, 3);
        assert!(!r.affinity_narrowed);
        m.affinity = Some(set("0-3"));
        assert_eq!(recommend(&m).threads, 4);
    }

    #[test]
    fn quota_rounds_up_and_caps() {
        let q = |quota_us, period_us| Quota {
            version: CgroupVersion::V2,
            cgroup: "/q".into(),
            quota_us,
            period_us,
        };
        assert_eq!(q(150_000, 100_000).ceil_cpus(), 2);
        assert_eq!(q(100_000, 100_000).ceil_cpus(), 1);
        assert_eq!(q(1_000, 100_000).ceil_cpus(), 1);
        assert_eq!(q(200_001, 100_000).ceil_cpus(), 3);
        assert!(q(150_000, 100_000).is_tighter_than(&q(50_000, 20_000)));
        let mut m = machine("0-7", "0-7", "0-7");
        m.quota = Some(q(150_000, 100_000));
        assert_eq!(recommend(&m).threads, 2);
        // A quota above the CPU count changes nothing.
        m.quota = Some(q(10_000_000, 100_000));
        assert_eq!(recommend(&m).threads, 8);
    }

    #[test]
    fn never_recommends_zero() {
        let mut m = machine("0-1", "0-1", "0-1");
        m.cpuset = Some(CpusetLimit {
            version: CgroupVersion::V1,
            cgroup: "/x".into(),
            cpus: set("5"),
            effective: None,
        });
        assert_eq!(recommend(&m).threads, 1);
    }
}
