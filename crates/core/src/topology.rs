//! The machine's CPUs: which exist, which run, how fast each is, and how
//! they are grouped.
//!
//! ```text
//!   package (physical_package_id)
//!   └─ die (die_id)
//!      └─ cluster (cluster_id; shared L2 on Arm, a module on x86)
//!         └─ core (core_id)
//!            └─ CPU (the kernel's logical CPU number; SMT siblings share a core)
//! ```
//!
//! [`Topology::from_raw`] turns what the host layer read ([`RawTopology`],
//! plain numbers and sets, no files) into the model the planner uses. It owns
//! the one heterogeneity rule of corral, [`Performance::assess`].
//!
//! CPU numbers are always the kernel's (`cpuN` in sysfs); corral assigns no
//! ids of its own.

use crate::cpuset::CpuSet;
use serde::Serialize;

/// The scheduler's capacity scale: the fastest CPU of the machine is 1024
/// (`SCHED_CAPACITY_SCALE` in include/linux/sched.h).
pub const CAPACITY_SCALE: u32 = 1024;

/// A machine is heterogeneous when its fastest CPU is at least this many
/// times as fast as its slowest. Below it, differences are boost bins or
/// preferred-core rankings of one core design (AMD `highest_perf` differs by
/// ~10–20 % between cores of one CCD), which no placement policy should act on.
pub const HETEROGENEOUS_RATIO: f64 = 1.3;

/// What kind of core a CPU is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CoreType {
    /// All CPUs of the machine are alike (within [`HETEROGENEOUS_RATIO`]).
    Uniform,
    /// A fast core: Arm "big", Intel P-core, AMD Zen (vs Zen c).
    Big,
    /// A slow, efficient core: Arm "LITTLE", Intel E-core.
    Little,
}

impl CoreType {
    /// A short name for tables.
    pub fn as_str(self) -> &'static str {
        match self {
            CoreType::Uniform => "uniform",
            CoreType::Big => "big",
            CoreType::Little => "little",
        }
    }
}

/// A per-CPU source of relative performance, in the order corral consults
/// them: the first one whose values differ between CPUs wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PerfSource {
    /// `cpuN/cpu_capacity`: the kernel scheduler's own capacity (Arm from the
    /// device tree's capacity-dmips-mhz, x86 hybrid from CPPC), already 0–1024.
    CpuCapacity,
    /// `cpuN/acpi_cppc/highest_perf`: ACPI CPPC abstract performance.
    AcpiCppcHighestPerf,
    /// `cpuN/cpufreq/amd_pstate_highest_perf`.
    AmdPstateHighestPerf,
    /// `cpuN/cpufreq/cpuinfo_max_freq` (kHz): frequency, blind to IPC.
    CpuinfoMaxFreq,
    /// `cpuN/cpufreq/amd_pstate_prefcore_ranking`: an ordering of cores, not
    /// a performance scale, so it is consulted last.
    AmdPstatePrefcoreRanking,
}

impl PerfSource {
    /// The numeric sources, in the order they are consulted.
    pub const ORDER: [PerfSource; 5] = [
        PerfSource::CpuCapacity,
        PerfSource::AcpiCppcHighestPerf,
        PerfSource::AmdPstateHighestPerf,
        PerfSource::CpuinfoMaxFreq,
        PerfSource::AmdPstatePrefcoreRanking,
    ];

    /// The sysfs file this source is read from, relative to `cpuN/`
    /// (Intel's lists live elsewhere).
    pub fn file(self) -> &'static str {
        match self {
            PerfSource::CpuCapacity => "cpu_capacity",
            PerfSource::AcpiCppcHighestPerf => "acpi_cppc/highest_perf",
            PerfSource::AmdPstateHighestPerf => "cpufreq/amd_pstate_highest_perf",
            PerfSource::CpuinfoMaxFreq => "cpufreq/cpuinfo_max_freq",
            PerfSource::AmdPstatePrefcoreRanking => "cpufreq/amd_pstate_prefcore_ranking",
        }
    }
}

/// The raw performance readings of one CPU; `None` where the file is absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PerfReadings {
    pub cpu_capacity: Option<u64>,
    pub acpi_cppc_highest_perf: Option<u64>,
    pub amd_pstate_highest_perf: Option<u64>,
    pub cpuinfo_max_freq_khz: Option<u64>,
    pub amd_pstate_prefcore_ranking: Option<u64>,
}

impl PerfReadings {
    /// The reading for a numeric source.
    pub fn get(&self, source: PerfSource) -> Option<u64> {
        match source {
            PerfSource::CpuCapacity => self.cpu_capacity,
            PerfSource::AcpiCppcHighestPerf => self.acpi_cppc_highest_perf,
            PerfSource::AmdPstateHighestPerf => self.amd_pstate_highest_perf,
            PerfSource::CpuinfoMaxFreq => self.cpuinfo_max_freq_khz,
            PerfSource::AmdPstatePrefcoreRanking => self.amd_pstate_prefcore_ranking,
        }
    }
}

/// One CPU as the host layer read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawCpu {
    pub id: u32,
    pub perf: PerfReadings,
    /// `topology/physical_package_id`; absent while the CPU is offline.
    pub package_id: Option<u32>,
    pub die_id: Option<u32>,
    pub cluster_id: Option<u32>,
    pub core_id: Option<u32>,
    /// `topology/core_cpus_list`: SMT siblings sharing this core.
    pub core_cpus: Option<CpuSet>,
    /// `topology/cluster_cpus_list`.
    pub cluster_cpus: Option<CpuSet>,
    /// `topology/package_cpus_list`.
    pub package_cpus: Option<CpuSet>,
}

/// Intel hybrid's lists of P-cores and E-cores.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntelHybrid {
    /// `/sys/devices/cpu_core/cpus`: performance cores.
    pub core: CpuSet,
    /// `/sys/devices/cpu_atom/cpus`: efficiency cores.
    pub atom: CpuSet,
}

/// Everything the host layer reads about the CPUs, before interpretation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawTopology {
    /// `/sys/devices/system/cpu/possible`: CPUs the kernel could ever use.
    pub possible: CpuSet,
    /// `present`: CPUs that physically exist (and are within `possible`).
    pub present: CpuSet,
    /// `online`: CPUs the scheduler uses now.
    pub online: CpuSet,
    /// `offline`, as the kernel prints it: `possible − online`, plus any CPUs
    /// the firmware reported beyond the kernel's `nr_cpu_ids`.
    pub offline: Option<CpuSet>,
    /// `isolated`: CPUs removed from scheduling domains (`isolcpus=`).
    pub isolated: CpuSet,
    /// `kernel_max`: the kernel's `NR_CPUS − 1`.
    pub kernel_max: Option<u32>,
    /// Per-CPU readings, one for every possible CPU.
    pub cpus: Vec<RawCpu>,
    pub intel_hybrid: Option<IntelHybrid>,
}

/// How the CPUs differ in speed, and where that was learned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Performance {
    /// The source the capacities came from; `None` when no source differs
    /// between CPUs (every capacity is then [`CAPACITY_SCALE`]).
    pub source: Option<PerfSource>,
    /// Whether Intel's `cpu_core`/`cpu_atom` lists decided the core types.
    pub intel_hybrid: bool,
    /// Fastest over slowest raw value of that source (1.0 when uniform).
    pub ratio: f64,
    /// Whether the ratio reaches [`HETEROGENEOUS_RATIO`], or Intel's hybrid
    /// lists say so.
    pub heterogeneous: bool,
}

impl Performance {
    /// corral's heterogeneity rule, given each CPU's readings:
    ///
    /// 1. Consult the numeric sources in [`PerfSource::ORDER`]; the first
    ///    whose values differ between the CPUs that have it is *the* source.
    ///    A source identical on every CPU says nothing and is skipped.
    /// 2. capacity(cpu) = round(value(cpu) · 1024 / max value), so the
    ///    fastest CPU is 1024, as the kernel scales `cpu_capacity`.
    /// 3. heterogeneous ⇔ max / min ≥ [`HETEROGENEOUS_RATIO`], or Intel's
    ///    `cpu_core`/`cpu_atom` lists are both non-empty (they then decide
    ///    every CPU's type, whatever the numbers say).
    ///
    /// Returns the assessment and one capacity per entry of `cpus` (`None`
    /// where that CPU lacks the chosen source).
    pub fn assess(
        cpus: &[RawCpu],
        hybrid: Option<&IntelHybrid>,
    ) -> (Performance, Vec<Option<u32>>) {
        let chosen = PerfSource::ORDER.into_iter().find_map(|source| {
            let values: Vec<u64> = cpus.iter().filter_map(|c| c.perf.get(source)).collect();
            let (min, max) = (values.iter().min()?, values.iter().max()?);
            (min != max && *max > 0).then_some((source, *min, *max))
        });
        let intel = hybrid.is_some_and(|h| !h.core.is_empty() && !h.atom.is_empty());
        match chosen {
            Some((source, min, max)) => {
                let capacities = cpus
                    .iter()
                    .map(|c| {
                        c.perf.get(source).map(|v| {
                            ((v as u128 * CAPACITY_SCALE as u128 + max as u128 / 2) / max as u128)
                                as u32
                        })
                    })
                    .collect();
                let ratio = if min == 0 {
                    f64::INFINITY
                } else {
                    max as f64 / min as f64
                };
                let heterogeneous = intel || ratio >= HETEROGENEOUS_RATIO;
                (
                    Performance {
                        source: Some(source),
                        intel_hybrid: intel,
                        ratio,
                        heterogeneous,
                    },
                    capacities,
                )
            }
            None => (
                Performance {
                    source: None,
                    intel_hybrid: intel,
                    ratio: 1.0,
                    heterogeneous: intel,
                },
                vec![Some(CAPACITY_SCALE); cpus.len()],
            ),
        }
    }
}

/// One CPU of the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cpu {
    pub id: u32,
    pub online: bool,
    pub present: bool,
    pub isolated: bool,
    /// Relative performance, 0–1024 (1024 = the fastest CPU). A CPU lacking
    /// the chosen source is taken to be as fast as the fastest.
    pub capacity: u32,
    pub core_type: CoreType,
    pub package_id: Option<u32>,
    pub die_id: Option<u32>,
    pub cluster_id: Option<u32>,
    pub core_id: Option<u32>,
    /// SMT siblings (this CPU included).
    pub core_cpus: Option<CpuSet>,
    pub cluster_cpus: Option<CpuSet>,
    pub package_cpus: Option<CpuSet>,
    /// `cpufreq/cpuinfo_max_freq`, when the CPU has cpufreq.
    pub max_freq_khz: Option<u64>,
}

/// The machine's CPUs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Topology {
    pub possible: CpuSet,
    pub present: CpuSet,
    pub online: CpuSet,
    /// `possible − online`, plus CPUs the kernel reported beyond its
    /// `nr_cpu_ids` (see [`Topology::beyond_nr_cpus`]).
    pub offline: CpuSet,
    pub isolated: CpuSet,
    pub kernel_max: Option<u32>,
    pub performance: Performance,
    /// Every possible CPU, in ascending order of id.
    pub cpus: Vec<Cpu>,
}

impl Topology {
    /// Interprets what the host layer read.
    pub fn from_raw(raw: RawTopology) -> Topology {
        let mut raw_cpus = raw.cpus;
        raw_cpus.sort_by_key(|c| c.id);
        // Only present CPUs take part in the speed comparison: a possible
        // but absent CPU has no meaningful readings.
        let (performance, capacities) = {
            let present: Vec<RawCpu> = raw_cpus
                .iter()
                .filter(|c| raw.present.contains(c.id))
                .cloned()
                .collect();
            let (perf, caps) = Performance::assess(&present, raw.intel_hybrid.as_ref());
            let mut by_id = vec![None; raw_cpus.len()];
            for (c, cap) in present.iter().zip(caps) {
                if let Some(i) = raw_cpus.iter().position(|r| r.id == c.id) {
                    by_id[i] = cap;
                }
            }
            (perf, by_id)
        };
        let big_threshold = big_threshold(&capacities);
        let cpus = raw_cpus
            .into_iter()
            .zip(capacities)
            .map(|(c, cap)| {
                let capacity = cap.unwrap_or(CAPACITY_SCALE);
                let core_type = match (&raw.intel_hybrid, performance.heterogeneous) {
                    (_, false) => CoreType::Uniform,
                    (Some(h), true) if h.core.contains(c.id) => CoreType::Big,
                    (Some(h), true) if h.atom.contains(c.id) => CoreType::Little,
                    _ if capacity >= big_threshold => CoreType::Big,
                    _ => CoreType::Little,
                };
                Cpu {
                    id: c.id,
                    online: raw.online.contains(c.id),
                    present: raw.present.contains(c.id),
                    isolated: raw.isolated.contains(c.id),
                    capacity,
                    core_type,
                    package_id: c.package_id,
                    die_id: c.die_id,
                    cluster_id: c.cluster_id,
                    core_id: c.core_id,
                    core_cpus: c.core_cpus,
                    cluster_cpus: c.cluster_cpus,
                    package_cpus: c.package_cpus,
                    max_freq_khz: c.perf.cpuinfo_max_freq_khz,
                }
            })
            .collect();
        let offline = raw
            .offline
            .unwrap_or_else(|| raw.possible.difference(&raw.online));
        Topology {
            possible: raw.possible,
            present: raw.present,
            online: raw.online,
            offline,
            isolated: raw.isolated,
            kernel_max: raw.kernel_max,
            performance,
            cpus,
        }
    }

    /// The CPU with kernel id `id`.
    pub fn cpu(&self, id: u32) -> Option<&Cpu> {
        self.cpus
            .binary_search_by_key(&id, |c| c.id)
            .ok()
            .map(|i| &self.cpus[i])
    }

    /// CPUs of the given type.
    pub fn of_type(&self, core_type: CoreType) -> CpuSet {
        self.cpus
            .iter()
            .filter(|c| c.core_type == core_type)
            .map(|c| c.id)
            .collect()
    }

    /// CPUs the firmware reported but the kernel cannot use because they lie
    /// beyond its `nr_cpu_ids` (NR_CPUS too small, or `nr_cpus=`): the
    /// `offline` file lists them after `possible`.
    pub fn beyond_nr_cpus(&self) -> CpuSet {
        self.offline.difference(&self.possible)
    }
}

/// The capacity at or above which a CPU counts as big: the upper side of
/// the widest ratio gap between neighbouring distinct capacities. With two
/// kinds of core that is simply the faster kind; with three (Arm's
/// prime + big + LITTLE), the split falls where the speeds differ most.
fn big_threshold(capacities: &[Option<u32>]) -> u32 {
    let mut distinct: Vec<u32> = capacities.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    distinct
        .windows(2)
        .max_by(|a, b| {
            let ra = a[1] as f64 / a[0].max(1) as f64;
            let rb = b[1] as f64 / b[0].max(1) as f64;
            ra.total_cmp(&rb)
        })
        .map_or(0, |w| w[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(id: u32, perf: PerfReadings) -> RawCpu {
        RawCpu {
            id,
            perf,
            ..Default::default()
        }
    }

    fn raw(n: u32, perf: impl Fn(u32) -> PerfReadings) -> RawTopology {
        RawTopology {
            possible: CpuSet::first_n(n),
            present: CpuSet::first_n(n),
            online: CpuSet::first_n(n),
            cpus: (0..n).map(|i| cpu(i, perf(i))).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn arm_capacity_gives_big_and_little() {
        let t = Topology::from_raw(raw(8, |i| PerfReadings {
            cpu_capacity: Some(if i < 4 { 1024 } else { 446 }),
            cpuinfo_max_freq_khz: Some(if i < 4 { 2_000_000 } else { 1_400_000 }),
            ..Default::default()
        }));
        assert!(t.performance.heterogeneous);
        assert_eq!(t.performance.source, Some(PerfSource::CpuCapacity));
        assert_eq!(t.of_type(CoreType::Big).to_string(), "0-3");
        assert_eq!(t.of_type(CoreType::Little).to_string(), "4-7");
        assert_eq!(t.cpu(5).unwrap().capacity, 446);
    }

    #[test]
    fn identical_source_is_skipped_for_the_next_that_differs() {
        // acpi_cppc says nothing (all equal); cpu_capacity differs and wins.
        let t = Topology::from_raw(raw(4, |i| PerfReadings {
            cpu_capacity: Some(if i < 2 { 1024 } else { 512 }),
            acpi_cppc_highest_perf: Some(255),
            ..Default::default()
        }));
        assert_eq!(t.performance.source, Some(PerfSource::CpuCapacity));
        assert_eq!(t.of_type(CoreType::Little).to_string(), "2-3");
        // cpu_capacity identical; max_freq differs: max_freq is used.
        let t = Topology::from_raw(raw(4, |i| PerfReadings {
            cpu_capacity: Some(1024),
            cpuinfo_max_freq_khz: Some(if i == 0 { 3_000_000 } else { 1_500_000 }),
            ..Default::default()
        }));
        assert_eq!(t.performance.source, Some(PerfSource::CpuinfoMaxFreq));
        assert_eq!(t.cpu(1).unwrap().capacity, 512);
        assert_eq!(t.of_type(CoreType::Big).to_string(), "0");
    }

    #[test]
    fn small_differences_are_uniform() {
        // AMD preferred-core style: highest_perf 166 vs 196 (1.18x).
        let t = Topology::from_raw(raw(4, |i| PerfReadings {
            amd_pstate_highest_perf: Some(if i == 0 { 196 } else { 166 }),
            ..Default::default()
        }));
        assert!(!t.performance.heterogeneous);
        assert_eq!(t.performance.source, Some(PerfSource::AmdPstateHighestPerf));
        assert_eq!(t.of_type(CoreType::Uniform).len(), 4);
    }

    #[test]
    fn same_frequency_everywhere_is_uniform() {
        let t = Topology::from_raw(raw(4, |_| PerfReadings {
            cpuinfo_max_freq_khz: Some(2_400_000),
            ..Default::default()
        }));
        assert_eq!(t.performance.source, None);
        assert!(!t.performance.heterogeneous);
        assert!(t
            .cpus
            .iter()
            .all(|c| c.capacity == 1024 && c.core_type == CoreType::Uniform));
    }

    #[test]
    fn intel_lists_win() {
        let mut r = raw(16, |_| PerfReadings::default());
        r.intel_hybrid = Some(IntelHybrid {
            core: CpuSet::parse("0-7").unwrap(),
            atom: CpuSet::parse("8-15").unwrap(),
        });
        let t = Topology::from_raw(r);
        assert!(t.performance.heterogeneous);
        assert!(t.performance.intel_hybrid);
        assert_eq!(t.performance.source, None);
        assert_eq!(t.of_type(CoreType::Big).len(), 8);
        assert_eq!(t.of_type(CoreType::Little).to_string(), "8-15");
    }

    #[test]
    fn three_tiers_split_at_the_widest_gap() {
        // prime 1024, big 870, LITTLE 300.
        let t = Topology::from_raw(raw(8, |i| PerfReadings {
            cpu_capacity: Some(match i {
                0 => 1024,
                1..=3 => 870,
                _ => 300,
            }),
            ..Default::default()
        }));
        assert_eq!(t.of_type(CoreType::Big).to_string(), "0-3");
        assert_eq!(t.of_type(CoreType::Little).to_string(), "4-7");
    }

    #[test]
    fn offline_defaults_to_possible_minus_online_and_reports_beyond_nr_cpus() {
        let mut r = raw(4, |_| PerfReadings::default());
        r.online = CpuSet::parse("0-1,3").unwrap();
        let t = Topology::from_raw(r.clone());
        assert_eq!(t.offline.to_string(), "2");
        r.offline = Some(CpuSet::parse("2,4-79").unwrap());
        let t = Topology::from_raw(r);
        assert_eq!(t.beyond_nr_cpus().to_string(), "4-79");
    }
}
