//! `corral exec`: the thread-count variables and who wins.

use corral_linux::fake::FakeHost;
use std::process::{Command, Output};

/// corral on a fake machine where the recommendation is 32 (paper 003's
/// first table), so the value cannot come from anywhere else.
fn corral_on_fake(host: &FakeHost) -> Command {
    let p = host.paths();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
    cmd.arg("--sysfs-root")
        .arg(&p.sysfs)
        .arg("--proc-root")
        .arg(&p.procfs)
        .arg("--cgroup-root")
        .arg(&p.cgroup)
        .env_remove("OMP_NUM_THREADS")
        .env_remove("RAYON_NUM_THREADS")
        .env_remove("GOMAXPROCS");
    cmd
}

fn fake() -> (tempfile::TempDir, FakeHost) {
    let dir = tempfile::tempdir().unwrap();
    let host = FakeHost::new(dir.path());
    host.cpus("0-1,3", "0-31", "0-31")
        .process("self", "0-31", &["0::/"]);
    (dir, host)
}

fn stdout(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

const ECHO: [&str; 4] = [
    "--",
    "sh",
    "-c",
    "echo $OMP_NUM_THREADS $RAYON_NUM_THREADS $GOMAXPROCS",
];

#[test]
fn exec_announces_the_recommendation() {
    let (_d, host) = fake();
    let out = corral_on_fake(&host)
        .arg("exec")
        .args(ECHO)
        .output()
        .unwrap();
    assert_eq!(stdout(out), "32 32 32");
}

#[test]
fn exec_on_this_machine_matches_corral_cpus() {
    let cpus = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["cpus", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&cpus.stdout).unwrap();
    let want = v["recommendation"]["threads"].to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .env_remove("OMP_NUM_THREADS")
        .args(["exec", "--", "sh", "-c", "echo $OMP_NUM_THREADS"])
        .output()
        .unwrap();
    assert_eq!(stdout(out), want);
}

#[test]
fn a_variable_already_set_is_kept_unless_forced() {
    let (_d, host) = fake();
    let out = corral_on_fake(&host)
        .env("OMP_NUM_THREADS", "7")
        .arg("exec")
        .args(ECHO)
        .output()
        .unwrap();
    assert_eq!(stdout(out), "7 32 32");
    let out = corral_on_fake(&host)
        .env("OMP_NUM_THREADS", "7")
        .args(["exec", "--force"])
        .args(ECHO)
        .output()
        .unwrap();
    assert_eq!(stdout(out), "32 32 32");
}

#[test]
fn explicit_thread_count() {
    let (_d, host) = fake();
    let out = corral_on_fake(&host)
        .args(["exec", "--threads", "3"])
        .args(ECHO)
        .output()
        .unwrap();
    assert_eq!(stdout(out), "3 3 3");
    let out = corral_on_fake(&host)
        .args(["exec", "--threads", "0", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap rejects 0 as a usage error"
    );
}

#[test]
fn exit_status_passes_through_and_missing_command_is_127() {
    let (_d, host) = fake();
    let out = corral_on_fake(&host)
        .args(["exec", "--", "sh", "-c", "exit 5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let out = corral_on_fake(&host)
        .args(["exec", "--", "/nonexistent/corral-test-command"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run"));
}
