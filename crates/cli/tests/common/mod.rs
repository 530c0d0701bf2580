//! What the live (privileged) tests share: the binary, one-at-a-time
//! execution, and the check that this machine can run them.

#![allow(dead_code)]

use corral_core::config::CgroupChoice;
use corral_linux::cgroup::CgroupMounts;
use corral_linux::placer::Layout;
use corral_linux::HostPaths;
use std::path::{Path, PathBuf};

pub const BIN: &str = env!("CARGO_BIN_EXE_corral");

/// Live tests start CPU hogs and time reactions: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The v1 cpu and cpuset mounts, or `None` after saying why `test` skips.
pub fn v1_mounts(test: &str) -> Option<(PathBuf, PathBuf)> {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP {test}: needs root");
        return None;
    }
    let mounts = CgroupMounts::discover(&HostPaths::default()).ok()?;
    match Layout::choose(&mounts, CgroupChoice::V1) {
        Ok(Layout::V1 { cpu, cpuset }) => Some((cpu, cpuset)),
        _ => {
            eprintln!("SKIP {test}: no cgroup v1 cpu and cpuset hierarchies");
            None
        }
    }
}

/// Removes a daemon's groups left behind by a failed test (children first).
pub fn remove_groups(mounts: &(PathBuf, PathBuf), name: &str) {
    for m in [&mounts.0, &mounts.1] {
        let d: &Path = &m.join(name);
        if d.exists() {
            for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                if e.path().is_dir() {
                    let _ = std::fs::remove_dir(e.path());
                }
            }
            let _ = std::fs::remove_dir(d);
        }
    }
}
