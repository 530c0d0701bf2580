//! This boot's wake-up placement, as `corral lab placement` (or `lab
//! validate`, or `corral record` itself) measured it: kept in
//! `/run/corral/placement.json` with the boot's id, so that a recording
//! carries it ([`Directive::Packing`]) and replays on a machine that
//! places wake-ups as the recorded one did. `/run` is a tmpfs: the
//! figure goes with the boot, as its validity does (the packing is a
//! kernel command-line setting on the machine that has it).
//!
//! [`Directive::Packing`]: corral_sim::input::recording::Directive::Packing

use corral_lab::placement::Placement;
use corral_linux::HostPaths;
use std::path::{Path, PathBuf};

/// The file, under the runtime directory.
pub fn file(paths: &HostPaths) -> PathBuf {
    paths.run.join("corral").join("placement.json")
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`).
fn boot_id(paths: &HostPaths) -> Option<String> {
    std::fs::read_to_string(paths.procfs.join("sys/kernel/random/boot_id"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// What a probe says: `Some(Some(u))`, this kernel keeps a woken thread
/// beside its busy waker while their utilizations sum under `u`;
/// `Some(None)`, it puts it on the idle CPU as upstream does (at most
/// half stayed, no threshold); `None`, the probe cannot tell (most
/// stayed, yet no threshold splits them).
pub fn verdict(p: &Placement) -> Option<Option<u32>> {
    let (n, stayed) = p.counts();
    match p.pack_util() {
        Some(u) => Some(Some(u.min(u32::MAX as u64) as u32)),
        None if n > 0 && stayed * 2 <= n => Some(None),
        None => None,
    }
}

/// This boot's figure, if measured on it.
pub fn load(paths: &HostPaths) -> Option<Option<u32>> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file(paths)).ok()?).ok()?;
    if v["boot_id"].as_str()? != boot_id(paths)? {
        return None;
    }
    match &v["vcpu_pack_util"] {
        serde_json::Value::Null => Some(None),
        u => Some(Some(u32::try_from(u.as_u64()?).ok()?)),
    }
}

/// Keeps this boot's figure (root only: the directory is the daemon's
/// state directory); written whole through a temporary file.
pub fn store(paths: &HostPaths, util: Option<u32>) -> std::io::Result<PathBuf> {
    let boot = boot_id(paths).ok_or_else(|| std::io::Error::other("no boot id in /proc"))?;
    let path = file(paths);
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir)?;
    let v = serde_json::json!({
        "boot_id": boot,
        "vcpu_pack_util": util,
        "measured_by": "corral lab placement's wake-up probe",
    });
    let tmp = dir.join(format!(".placement.json.{}", std::process::id()));
    std::fs::write(&tmp, format!("{v}\n"))?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// Holds this boot's probe to one process at a time (two at once on the
/// same CPUs would disturb each other): an exclusive `flock` on
/// `placement.lock` beside the file, released when the handle drops.
/// `None` (no lock) when the directory cannot be made, as for a user
/// other than root.
pub fn lock(paths: &HostPaths) -> Option<std::fs::File> {
    let path = file(paths).with_extension("lock");
    std::fs::create_dir_all(path.parent()?).ok()?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .ok()?;
    rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive).ok()?;
    Some(f)
}

/// Keeps what a probe said, when it could tell and corral may write
/// there; a note on stderr names `who`'s file, or why it was not kept.
pub fn keep(paths: &HostPaths, p: &Placement, who: &str) {
    let Some(util) = verdict(p) else {
        return;
    };
    if !rustix::process::geteuid().is_root() {
        return;
    }
    match store(paths, util) {
        Ok(path) => eprintln!(
            "{who}: kept in {} for this boot's recordings (corral record)",
            path.display()
        ),
        Err(e) => eprintln!(
            "{who}: warning: cannot keep the figure in {}: {e}",
            file(paths).display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(dir: &Path, boot: &str) -> HostPaths {
        let procfs = dir.join("proc");
        std::fs::create_dir_all(procfs.join("sys/kernel/random")).unwrap();
        std::fs::write(
            procfs.join("sys/kernel/random/boot_id"),
            format!("{boot}\n"),
        )
        .unwrap();
        HostPaths {
            sysfs: dir.join("sys"),
            procfs,
            cgroup: dir.join("cgroup"),
            run: dir.join("run"),
        }
    }

    #[test]
    fn a_figure_is_kept_for_its_boot_only() {
        let dir = std::env::temp_dir().join(format!("corral-packing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let paths = host(&dir, "aaaa");
        assert_eq!(load(&paths), None, "nothing measured");
        store(&paths, Some(717)).unwrap();
        assert_eq!(load(&paths), Some(Some(717)));
        store(&paths, None).unwrap();
        assert_eq!(load(&paths), Some(None), "measured: upstream placement");
        // Another boot: not measured.
        let other = host(&dir, "bbbb");
        assert_eq!(load(&other), None);
        std::fs::write(file(&paths), "{").unwrap();
        assert_eq!(load(&paths), None, "unreadable: not measured");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
