//! Gathers what paper 003's CPU Count Detector needs about a process and
//! asks [`corral_core::cpucount::recommend`].

use crate::cgroup::{self, CgroupMounts};
use crate::error::Result;
use crate::paths::HostPaths;
use crate::{procfs, sched, sysfs};
use corral_core::cpucount::{recommend, CountInputs, Recommendation};
use corral_core::{CpuSet, Topology};
use serde::Serialize;

/// Everything `corral cpus` shows.
#[derive(Debug, Clone, Serialize)]
pub struct CpuReport {
    /// The process examined (`None`: corral itself).
    pub pid: Option<u32>,
    pub topology: Topology,
    pub inputs: CountInputs,
    /// What `sched_getaffinity(2)` says (live procfs only): the affinity
    /// restricted to active CPUs.
    pub sched_getaffinity: Option<CpuSet>,
    pub recommendation: Recommendation,
}

/// Runs the detector for `pid` (corral itself when `None`).
pub fn detect(paths: &HostPaths, pid: Option<u32>) -> Result<CpuReport> {
    let topology = sysfs::read_topology(paths)?;
    let allowed = procfs::cpus_allowed(paths, pid)?;
    // The syscall only speaks of the process the files describe when the
    // procfs is the live one.
    let sched_getaffinity = if paths.is_live_procfs() {
        Some(sched::sched_getaffinity(pid)?)
    } else {
        None
    };
    let mounts = CgroupMounts::discover(paths)?;
    let entries = procfs::cgroups(paths, pid).or_else(|e| {
        // A kernel without cgroups has no /proc/PID/cgroup.
        if e.is_gone() && !matches!(e, crate::Error::NoSuchProcess(_)) {
            Ok(Vec::new())
        } else {
            Err(e)
        }
    })?;
    let inputs = CountInputs {
        online: topology.online.clone(),
        present: topology.present.clone(),
        possible: topology.possible.clone(),
        isolated: topology.isolated.clone(),
        affinity: allowed.or_else(|| sched_getaffinity.clone()),
        cpuset: cgroup::cpuset_limit(&mounts, &entries)?,
        quota: cgroup::quota(&mounts, &entries)?,
    };
    let recommendation = recommend(&inputs);
    Ok(CpuReport {
        pid,
        topology,
        inputs,
        sched_getaffinity,
        recommendation,
    })
}
