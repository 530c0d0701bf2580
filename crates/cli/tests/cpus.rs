//! `corral cpus` end to end: fake trees, this machine's affinity, and a
//! real cgroup v1 quota.

use corral_linux::cgroup::CgroupMounts;
use corral_linux::fake::FakeHost;
use corral_linux::HostPaths;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

fn corral() -> Command {
    Command::new(env!("CARGO_BIN_EXE_corral"))
}

fn with_roots(cmd: &mut Command, host: &FakeHost) {
    let p = host.paths();
    cmd.arg("--sysfs-root")
        .arg(&p.sysfs)
        .arg("--proc-root")
        .arg(&p.procfs)
        .arg("--cgroup-root")
        .arg(&p.cgroup);
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "corral failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn threads(v: &Value) -> u64 {
    v["recommendation"]["threads"].as_u64().expect("threads")
}

#[test]
fn paper_003_tables_through_the_cli() {
    for (online, possible, present, want) in
        [("0-1,3", "0-31", "0-31", 32), ("0-1,3", "0-127", "0-3", 4)]
    {
        let dir = tempfile::tempdir().unwrap();
        let host = FakeHost::new(dir.path());
        host.cpus(online, possible, present)
            .process("self", possible, &["0::/"]);
        let mut cmd = corral();
        with_roots(&mut cmd, &host);
        let v = json(&cmd.args(["cpus", "--json"]).output().unwrap());
        assert_eq!(
            threads(&v),
            want,
            "online {online} possible {possible} present {present}"
        );
        assert_eq!(v["recommendation"]["online_only"], 3);
        // The table form says the same.
        let mut cmd = corral();
        with_roots(&mut cmd, &host);
        let out = cmd.arg("cpus").output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains(&format!(
                "recommended:          {want} thread{}\n",
                if want == 1 { "" } else { "s" }
            )),
            "{text}"
        );
    }
}

#[test]
fn taskset_c0_recommends_1() {
    let online = corral_linux::sysfs::read_topology(&HostPaths::default())
        .unwrap()
        .online;
    if !online.contains(0) {
        eprintln!("SKIP taskset_c0_recommends_1: CPU 0 is not online here");
        return;
    }
    let out = Command::new("taskset")
        .args(["-c", "0"])
        .arg(env!("CARGO_BIN_EXE_corral"))
        .args(["cpus", "--json"])
        .output()
        .expect("taskset (util-linux) is installed by scripts/setup");
    let v = json(&out);
    assert_eq!(threads(&v), 1);
    assert_eq!(v["inputs"]["affinity"], "0");
    // Without taskset, every online CPU counts (the affinity was the cause).
    let v = json(&corral().args(["cpus", "--json"]).output().unwrap());
    assert_eq!(threads(&v), online.len() as u64);
}

#[test]
fn malformed_cpulist_fails_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let host = FakeHost::new(dir.path());
    host.cpus("0-1", "0-1", "0-1")
        .process("self", "0-1", &["0::/"])
        .write("sys/devices/system/cpu/online", "0-\n");
    let mut cmd = corral();
    with_roots(&mut cmd, &host);
    let out = cmd.arg("cpus").output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let file = host.paths().sysfs.join("devices/system/cpu/online");
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(err.contains("\"0-\""), "{err}");
}

#[test]
fn unknown_pid_fails_clearly() {
    // PIDs above pid_max (at most 2^22) never exist.
    let out = corral()
        .args(["cpus", "--pid", "9999999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no process with PID 9999999"));
}

/// A cgroup v1 `cpu` group of the test's own, removed on drop together
/// with the child it holds.
struct QuotaGroup {
    dir: PathBuf,
    child: Child,
}

impl Drop for QuotaGroup {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!("could not remove {}: {e}", self.dir.display());
        }
    }
}

fn write(path: &Path, value: &str) {
    std::fs::write(path, value).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

#[test]
fn privileged_v1_quota_of_one_cpu_recommends_1() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP privileged_v1_quota_of_one_cpu_recommends_1: needs root");
        return;
    }
    let mounts = CgroupMounts::discover(&HostPaths::default()).unwrap();
    let Some(cpu) = mounts.v1_with("cpu").filter(|h| h.root == "/") else {
        eprintln!("SKIP privileged_v1_quota_of_one_cpu_recommends_1: no cgroup v1 cpu hierarchy");
        return;
    };
    let dir = cpu
        .dir
        .join(format!("corral-test-{}-quota", std::process::id()));
    std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let child = Command::new("sleep").arg("60").spawn().unwrap();
    let group = QuotaGroup { dir, child };
    write(&group.dir.join("cpu.cfs_period_us"), "100000");
    write(&group.dir.join("cpu.cfs_quota_us"), "100000");
    write(
        &group.dir.join("cgroup.procs"),
        &group.child.id().to_string(),
    );

    let out = corral()
        .args(["cpus", "--json", "--pid", &group.child.id().to_string()])
        .output()
        .unwrap();
    let v = json(&out);
    assert_eq!(threads(&v), 1, "{v:#}");
    let q = &v["inputs"]["quota"];
    assert_eq!(
        (q["quota_us"].as_u64(), q["period_us"].as_u64()),
        (Some(100_000), Some(100_000))
    );
    assert!(q["cgroup"].as_str().unwrap().ends_with("-quota"), "{q}");
    drop(group);
}
