//! The CPU topology from sysfs (`Documentation/ABI/stable/sysfs-devices-system-cpu`,
//! `Documentation/admin-guide/cputopology.rst`).

use crate::error::Result;
use crate::fsutil::{read_cpulist, read_cpulist_opt, read_id_opt, read_u64_opt};
use crate::paths::HostPaths;
use corral_core::topology::{IntelHybrid, PerfReadings, RawCpu};
use corral_core::{RawTopology, Topology};
use std::path::Path;

/// Reads the CPU lists, every possible CPU's topology and performance
/// readings, and Intel's hybrid lists, and interprets them.
pub fn read_topology(paths: &HostPaths) -> Result<Topology> {
    Ok(Topology::from_raw(read_raw_topology(paths)?))
}

/// Reads the raw topology without interpreting it.
pub fn read_raw_topology(paths: &HostPaths) -> Result<RawTopology> {
    let dir = paths.cpu_dir();
    let possible = read_cpulist(&dir.join("possible"))?;
    let present = read_cpulist(&dir.join("present"))?;
    let online = read_cpulist(&dir.join("online"))?;
    let offline = read_cpulist_opt(&dir.join("offline"))?;
    let isolated = read_cpulist_opt(&dir.join("isolated"))?.unwrap_or_default();
    let kernel_max = read_id_opt(&dir.join("kernel_max"))?;
    let cpus = possible
        .iter()
        .map(|id| read_cpu(&dir.join(format!("cpu{id}")), id))
        .collect::<Result<Vec<_>>>()?;
    let devices = paths.sysfs.join("devices");
    let core = read_cpulist_opt(&devices.join("cpu_core/cpus"))?;
    let atom = read_cpulist_opt(&devices.join("cpu_atom/cpus"))?;
    let intel_hybrid = match (core, atom) {
        (None, None) => None,
        (core, atom) => Some(IntelHybrid {
            core: core.unwrap_or_default(),
            atom: atom.unwrap_or_default(),
        }),
    };
    Ok(RawTopology {
        possible,
        present,
        online,
        offline,
        isolated,
        kernel_max,
        cpus,
        intel_hybrid,
    })
}

/// One `cpuN` directory. Its `topology/` is absent while the CPU is
/// offline (the kernel removes it at hot-unplug), as is `cpufreq/` for
/// CPUs without a frequency driver: absent files are `None`.
fn read_cpu(dir: &Path, id: u32) -> Result<RawCpu> {
    let topo = dir.join("topology");
    // Older kernels name the SMT and package lists thread_siblings_list and
    // core_siblings_list; core_cpus_list and package_cpus_list came in 5.4.
    let either = |new: &str, old: &str| -> Result<_> {
        match read_cpulist_opt(&topo.join(new))? {
            Some(set) => Ok(Some(set)),
            None => read_cpulist_opt(&topo.join(old)),
        }
    };
    Ok(RawCpu {
        id,
        perf: PerfReadings {
            cpu_capacity: read_u64_opt(&dir.join("cpu_capacity"))?,
            acpi_cppc_highest_perf: read_u64_opt(&dir.join("acpi_cppc/highest_perf"))?,
            amd_pstate_highest_perf: read_u64_opt(&dir.join("cpufreq/amd_pstate_highest_perf"))?,
            cpuinfo_max_freq_khz: read_u64_opt(&dir.join("cpufreq/cpuinfo_max_freq"))?,
            amd_pstate_prefcore_ranking: read_u64_opt(
                &dir.join("cpufreq/amd_pstate_prefcore_ranking"),
            )?,
        },
        package_id: read_id_opt(&topo.join("physical_package_id"))?,
        die_id: read_id_opt(&topo.join("die_id"))?,
        // x86 reports a CPU with no known L2 cluster as BAD_APICID, 0xffff
        // (arch/x86/include/asm/apicdef.h); arm64 as -1: neither is an id.
        cluster_id: read_id_opt(&topo.join("cluster_id"))?.filter(|&id| id != 0xffff),
        core_id: read_id_opt(&topo.join("core_id"))?,
        core_cpus: either("core_cpus_list", "thread_siblings_list")?,
        cluster_cpus: read_cpulist_opt(&topo.join("cluster_cpus_list"))?,
        package_cpus: either("package_cpus_list", "core_siblings_list")?,
    })
}
