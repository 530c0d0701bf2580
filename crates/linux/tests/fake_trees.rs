//! The host readers on fake sysfs/procfs/cgroupfs trees: paper 003's
//! tables, cgroup limits, heterogeneity, and malformed input.

use corral_core::cpucount::CgroupVersion;
use corral_core::topology::PerfSource;
use corral_core::CoreType;
use corral_linux::cpucount::detect;
use corral_linux::fake::FakeHost;
use corral_linux::sysfs::read_topology;

fn host() -> (tempfile::TempDir, FakeHost) {
    let dir = tempfile::tempdir().unwrap();
    let host = FakeHost::new(dir.path());
    (dir, host)
}

#[test]
fn paper_003_table_a_recommends_32() {
    // 80 physical CPUs, kernel built with NR_CPUS 32, CPUs 2 and 4-31 offline.
    let (_d, h) = host();
    h.cpus("0-1,3", "0-31", "0-31")
        .write("sys/devices/system/cpu/offline", "2,4-79\n")
        .process("self", "0-31", &["0::/"]);
    let r = detect(&h.paths(), None).unwrap();
    assert_eq!(r.recommendation.threads, 32);
    assert_eq!(r.recommendation.online_only, 3);
    assert_eq!(r.topology.beyond_nr_cpus().to_string(), "32-79");
}

#[test]
fn paper_003_table_b_recommends_4() {
    // 4 physical CPUs, NR_CPUS 128.
    let (_d, h) = host();
    h.cpus("0-1,3", "0-127", "0-3")
        .process("self", "0-127", &["0::/"]);
    let r = detect(&h.paths(), None).unwrap();
    assert_eq!(r.recommendation.threads, 4);
    assert_eq!(r.recommendation.counted.to_string(), "0-3");
}

#[test]
fn v2_quota_two_levels_up_is_1_5_cpus_rounded_up_to_2() {
    let (_d, h) = host();
    h.cpus("0-7", "0-7", "0-7")
        .mount_v2("")
        .process("self", "0-7", &["0::/a/b/c"])
        .cgroup_file("", "/a", "cpu.max", "150000 100000")
        .cgroup_file("", "/a/b", "cpu.max", "max 100000")
        .cgroup_file("", "/a/b/c", "cpu.max", "max 100000");
    let r = detect(&h.paths(), None).unwrap();
    let q = r.inputs.quota.as_ref().expect("quota found");
    assert_eq!((q.quota_us, q.period_us), (150_000, 100_000));
    assert_eq!(q.cgroup, "/a");
    assert_eq!(q.version, CgroupVersion::V2);
    assert!((q.cpus() - 1.5).abs() < 1e-9);
    // corral rounds a fractional quota up: 1.5 CPUs -> 2 threads.
    assert_eq!(r.recommendation.threads, 2);
}

#[test]
fn v2_tightest_quota_wins_whatever_the_period() {
    let (_d, h) = host();
    h.cpus("0-7", "0-7", "0-7")
        .mount_v2("")
        .process("self", "0-7", &["0::/a/b"])
        .cgroup_file("", "/a", "cpu.max", "300000 100000")
        .cgroup_file("", "/a/b", "cpu.max", "50000 20000");
    let r = detect(&h.paths(), None).unwrap();
    assert_eq!(r.inputs.quota.unwrap().cgroup, "/a/b"); // 2.5 < 3
    assert_eq!(r.recommendation.threads, 3);
}

#[test]
fn v1_quota_and_cpuset() {
    let (_d, h) = host();
    h.cpus("0-3", "0-3", "0-3")
        .mount_v1("cpu", "cpu")
        .mount_v1("cpuset", "cpuset")
        .mount_v2("unified")
        .process("self", "0-1", &["3:cpuset:/job", "1:cpu:/job/x", "0::/"])
        .cgroup_file("cpu", "/", "cpu.cfs_quota_us", "-1")
        .cgroup_file("cpu", "/", "cpu.cfs_period_us", "100000")
        .cgroup_file("cpu", "/job", "cpu.cfs_quota_us", "250000")
        .cgroup_file("cpu", "/job", "cpu.cfs_period_us", "100000")
        .cgroup_file("cpu", "/job/x", "cpu.cfs_quota_us", "-1")
        .cgroup_file("cpu", "/job/x", "cpu.cfs_period_us", "100000")
        .cgroup_file("cpuset", "/job", "cpuset.cpus", "0-1");
    let r = detect(&h.paths(), None).unwrap();
    let cs = r.inputs.cpuset.as_ref().unwrap();
    assert_eq!(
        (cs.version, cs.cpus.to_string()),
        (CgroupVersion::V1, "0-1".into())
    );
    assert_eq!(r.inputs.quota.as_ref().unwrap().cgroup, "/job");
    assert_eq!(r.recommendation.threads, 2);
}

#[test]
fn v2_cpuset_keeps_offline_cpus_the_configuration_names() {
    // cpuset.cpus "0-3" at /a, empty (inherit) at /a/b; CPUs 2-3 offline, so
    // the effective set and the task's mask hold only 0-1.
    let (_d, h) = host();
    h.cpus("0-1", "0-7", "0-7")
        .mount_v2("")
        .process("self", "0-1", &["0::/a/b"])
        .cgroup_file("", "/a", "cpuset.cpus", "0-3")
        .cgroup_file("", "/a/b", "cpuset.cpus", "")
        .cgroup_file("", "/a/b", "cpuset.cpus.effective", "0-1");
    let r = detect(&h.paths(), None).unwrap();
    let cs = r.inputs.cpuset.as_ref().unwrap();
    assert_eq!(cs.cpus.to_string(), "0-3");
    assert_eq!(cs.effective.as_ref().unwrap().to_string(), "0-1");
    assert_eq!(r.recommendation.threads, 4);
}

#[test]
fn arm_capacity_4_big_4_little() {
    let (_d, h) = host();
    h.cpus("0-7", "0-7", "0-7")
        .per_cpu("0-7", "cpu_capacity", |c| {
            if c < 4 { "1024" } else { "446" }.into()
        });
    let t = read_topology(&h.paths()).unwrap();
    assert!(t.performance.heterogeneous);
    assert_eq!(t.of_type(CoreType::Big).to_string(), "0-3");
    assert_eq!(t.of_type(CoreType::Little).to_string(), "4-7");
    assert_eq!(t.cpu(7).unwrap().capacity, 446);
}

#[test]
fn intel_hybrid_8_p_cores_8_e_cores() {
    let (_d, h) = host();
    h.cpus("0-15", "0-15", "0-15")
        .write("sys/devices/cpu_core/cpus", "0-7\n")
        .write("sys/devices/cpu_atom/cpus", "8-15\n")
        .per_cpu("0-15", "cpufreq/cpuinfo_max_freq", |c| {
            if c < 8 { "5000000" } else { "3800000" }.into()
        });
    let t = read_topology(&h.paths()).unwrap();
    assert!(t.performance.intel_hybrid);
    assert_eq!(t.of_type(CoreType::Big).to_string(), "0-7");
    assert_eq!(t.of_type(CoreType::Little).to_string(), "8-15");
    assert_eq!(t.cpu(8).unwrap().capacity, 778); // 3.8 / 5.0 * 1024
}

#[test]
fn same_max_frequency_everywhere_is_uniform() {
    let (_d, h) = host();
    h.cpus("0-3", "0-3", "0-3")
        .per_cpu("0-3", "cpufreq/cpuinfo_max_freq", |_| "3000000".into())
        .per_cpu("0-3", "cpu_capacity", |_| "1024".into());
    let t = read_topology(&h.paths()).unwrap();
    assert!(!t.performance.heterogeneous);
    assert_eq!(t.of_type(CoreType::Uniform).len(), 4);
}

#[test]
fn equal_cppc_but_differing_capacity_capacity_wins() {
    let (_d, h) = host();
    h.cpus("0-3", "0-3", "0-3")
        .per_cpu("0-3", "acpi_cppc/highest_perf", |_| "255".into())
        .per_cpu("0-3", "cpu_capacity", |c| {
            if c < 2 { "1024" } else { "600" }.into()
        });
    let t = read_topology(&h.paths()).unwrap();
    assert_eq!(t.performance.source, Some(PerfSource::CpuCapacity));
    assert_eq!(t.of_type(CoreType::Little).to_string(), "2-3");
}

#[test]
fn offline_cpus_have_no_topology() {
    let (_d, h) = host();
    h.cpus("0-1,3", "0-3", "0-3");
    let t = read_topology(&h.paths()).unwrap();
    assert!(!t.cpu(2).unwrap().online);
    assert_eq!(t.cpu(2).unwrap().core_id, None);
    assert_eq!(t.cpu(3).unwrap().core_id, Some(3));
}

#[test]
fn malformed_cpulist_names_the_file() {
    let (_d, h) = host();
    h.cpus("0-1", "0-1", "0-1")
        .write("sys/devices/system/cpu/online", "0-\n");
    let err = read_topology(&h.paths()).unwrap_err().to_string();
    assert!(err.contains("devices/system/cpu/online"), "{err}");
    assert!(err.contains("\"0-\""), "{err}");
}

#[test]
fn missing_process_is_reported_as_such() {
    let (_d, h) = host();
    h.cpus("0-1", "0-1", "0-1");
    let err = detect(&h.paths(), Some(4242)).unwrap_err();
    assert!(err.is_gone());
    assert_eq!(err.to_string(), "no process with PID 4242");
}

/// x86 reports a CPU with no known L2 cluster as 65535 (BAD_APICID):
/// no cluster id, not cluster 65535.
#[test]
fn cluster_id_65535_is_no_cluster() {
    let (_d, h) = host();
    h.cpus("0-1", "0-1", "0-1")
        .write("sys/devices/system/cpu/cpu0/topology/cluster_id", "65535\n")
        .write("sys/devices/system/cpu/cpu1/topology/cluster_id", "3\n");
    let t = read_topology(&h.paths()).unwrap();
    assert_eq!(t.cpu(0).unwrap().cluster_id, None);
    assert_eq!(t.cpu(1).unwrap().cluster_id, Some(3));
}

/// `explain`'s share: a hog alone on its dedicated CPU (the others'
/// cpuset leaves that CPU) has all of it; when the shared group may use
/// that CPU too (work-conserving), its weight counts against the hog's.
#[test]
fn share_levels_count_only_competitors_that_may_run_on_the_threads_cpus() {
    let stat = |tid: u32| {
        // Fields 3.. of /proc/TID/stat: state R, nice (19) 0, processor
        // (39) 1, policy (41) 0.
        let mut f = vec!["0"; 50];
        f[0] = "R";
        format!("{tid} (hog) {}\n", f.join(" "))
    };
    for (theirs, want) in [("0", 1.0), ("0-1", 10240.0 / (10240.0 + 1024.0))] {
        let (_d, h) = host();
        h.cpus("0-1", "0-1", "0-1")
            .mount_v1("cpu,cpuacct", "cpu,cpuacct")
            .process("100", "1", &["3:cpu,cpuacct:/corral/dedicated-cpu1"])
            .write("proc/100/stat", &stat(100))
            .process("200", theirs, &["3:cpu,cpuacct:/corral/shared"])
            .write("proc/200/stat", &stat(200))
            .cgroup_file("cpu,cpuacct", "corral", "cpu.shares", "1024\n")
            .cgroup_file("cpu,cpuacct", "corral", "tasks", "")
            .cgroup_file(
                "cpu,cpuacct",
                "corral/dedicated-cpu1",
                "cpu.shares",
                "10240\n",
            )
            .cgroup_file("cpu,cpuacct", "corral/dedicated-cpu1", "tasks", "100\n")
            .cgroup_file("cpu,cpuacct", "corral/shared", "cpu.shares", "1024\n")
            .cgroup_file("cpu,cpuacct", "corral/shared", "tasks", "200\n")
            .cgroup_file("cpu,cpuacct", "", "tasks", "");
        let mount = h.root().join("cgroup/cpu,cpuacct");
        let (levels, cpus) = corral_linux::host::share_levels(&h.paths(), &mount, true, 100)
            .unwrap()
            .unwrap();
        assert_eq!(cpus, 1);
        let share = corral_core::share::effective_share(&levels, cpus);
        assert!(
            (share - want).abs() < 1e-9,
            "others on {theirs}: {share} ({levels:?})"
        );
    }
}
