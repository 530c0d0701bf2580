//! Hot-plug through the live code path on a fake tree: the real sampler,
//! sysfs reader and cgroup v1 placer, run by the daemon loop over fake
//! sysfs, procfs and cgroupfs directories. When `online` changes, the
//! next step re-plans over the CPUs online now.

use corral_core::config::Config;
use corral_daemon::Daemon;
use corral_linux::fake::FakeHost;
use corral_linux::host::LinuxHost;
use corral_linux::placer::Layout;
use corral_linux::sampler::Scope;

const PID: u32 = 4242;

/// A fake thread that has used `run_ms` of CPU so far.
fn thread(host: &FakeHost, run_ms: u64, cpu: u32) {
    let dir = format!("proc/{PID}/task/{PID}");
    host.write(
        &format!("{dir}/schedstat"),
        &format!("{} 0 {}\n", run_ms * 1_000_000, run_ms),
    );
    // pid (comm) state ppid … flags(9) … nice(19) … processor(39) rt_priority policy(41)
    let mut fields = vec!["0"; 39];
    fields[0] = "R";
    fields[1] = "1";
    let cpu = cpu.to_string();
    fields[36] = &cpu;
    fields[38] = "0";
    host.write(
        &format!("{dir}/stat"),
        &format!("{PID} (hog) {}\n", fields.join(" ")),
    );
    host.write(
        &format!("{dir}/status"),
        "Name:\thog\nUid:\t0\t0\t0\t0\nCpus_allowed_list:\t0-3\nvoluntary_ctxt_switches:\t0\nnonvoluntary_ctxt_switches:\t5\n",
    );
    host.write(&format!("{dir}/cgroup"), "3:cpuset:/\n1:cpu:/\n0::/\n");
}

#[test]
fn hotplug_moves_the_dedicated_core_within_one_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let host = FakeHost::new(tmp.path());
    host.cpus("0-3", "0-3", "0-3");
    let cg = host.paths().cgroup;
    host.write("cgroup/cpuset/cpuset.cpus", "0-3\n")
        .write("cgroup/cpuset/cpuset.mems", "0\n")
        .write("cgroup/cpu/cpu.shares", "1024\n");
    thread(&host, 0, 3);
    let layout = Layout::V1 {
        cpu: cg.join("cpu"),
        cpuset: cg.join("cpuset"),
    };
    let live = LinuxHost::new(
        host.paths(),
        Scope::Pids(vec![PID]),
        layout,
        "corral-test-fake",
        false,
    )
    .unwrap();
    let mut daemon = Daemon::new(live, Config::default()).unwrap();

    daemon.step().unwrap();
    // The fake thread used a whole CPU since (the fake clock is the real
    // one, so use a lot of CPU time to be heavy whatever the interval).
    thread(&host, 100_000, 3);
    daemon.step().unwrap();
    let dedicated = cg.join("cpuset/corral-test-fake/dedicated-cpu3");
    assert_eq!(
        std::fs::read_to_string(dedicated.join("cpuset.cpus")).unwrap(),
        "3"
    );
    assert_eq!(
        std::fs::read_to_string(dedicated.join("tasks")).unwrap(),
        PID.to_string()
    );

    // CPU 3 goes offline: the next step notices and re-plans over 0-2.
    host.cpus("0-2", "0-3", "0-3");
    thread(&host, 200_000, 3);
    let report = daemon.step().unwrap().clone();
    let (before, after) = report.hotplug.expect("hot-plug noticed");
    assert_eq!(
        (before.to_string(), after.to_string()),
        ("0-3".into(), "0-2".into())
    );
    assert_eq!(
        daemon.plan().dedicated_cpu(PID),
        Some(2),
        "the dedicated core moved"
    );
    // The old group is removed. (On this fake tree the removal fails: a
    // plain directory holding files cannot be rmdir'ed as a cgroup can, so
    // the daemon keeps it in force and reports the error.)
    assert!(report.changes.iter().any(|c| matches!(c,
        corral_core::plan::Change::RemoveGroup { name } if name == "dedicated-cpu3")));
    for (tid, (_, group)) in &daemon.plan().placements {
        let g = &daemon.plan().groups[group];
        assert!(
            g.cpus.is_subset(&after) && !g.cpus.is_empty(),
            "thread {tid} in {} on {}",
            g.name,
            g.cpus
        );
    }
    let moved = cg.join("cpuset/corral-test-fake/dedicated-cpu2");
    assert_eq!(
        std::fs::read_to_string(moved.join("cpuset.cpus")).unwrap(),
        "2"
    );
    assert_eq!(
        std::fs::read_to_string(moved.join("tasks")).unwrap(),
        PID.to_string()
    );
}
