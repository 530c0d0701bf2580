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

/// What a probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// This kernel keeps a woken thread beside its busy waker while their
    /// utilizations sum under this (a platform's `vcpu_pack_util`).
    Packs(u32),
    /// It puts it on the idle CPU, as upstream Linux does (at most half
    /// stayed, no threshold).
    Upstream,
    /// The probe could not tell (most stayed, yet no threshold splits
    /// them: no utilization read, or none high enough). Kept too, so that
    /// each recording does not probe again.
    Unknown,
}

impl Measured {
    /// What a recording says ([`Directive::Packing`]): `None` when unknown.
    ///
    /// [`Directive::Packing`]: corral_sim::input::recording::Directive::Packing
    pub fn packing(self) -> Option<Option<u32>> {
        match self {
            Measured::Packs(u) => Some(Some(u)),
            Measured::Upstream => Some(None),
            Measured::Unknown => None,
        }
    }
}

/// What probe `p` says.
pub fn verdict(p: &Placement) -> Measured {
    let (n, stayed) = p.counts();
    match p.pack_util() {
        Some(u) => Measured::Packs(u.min(1024) as u32),
        None if n > 0 && stayed * 2 <= n => Measured::Upstream,
        None => Measured::Unknown,
    }
}

/// This boot's figure, if measured on it.
pub fn load(paths: &HostPaths) -> Option<Measured> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file(paths)).ok()?).ok()?;
    if v["boot_id"].as_str()? != boot_id(paths)? {
        return None;
    }
    match (&v["verdict"].as_str()?, &v["vcpu_pack_util"]) {
        (&"packs", u) => Some(Measured::Packs(
            u32::try_from(u.as_u64()?).ok().filter(|&u| u <= 1024)?,
        )),
        (&"upstream", _) => Some(Measured::Upstream),
        (&"unknown", _) => Some(Measured::Unknown),
        _ => None,
    }
}

/// Keeps this boot's figure (root only: the directory is the daemon's
/// state directory); written whole through a temporary file.
pub fn store(paths: &HostPaths, m: Measured) -> std::io::Result<PathBuf> {
    let boot = boot_id(paths).ok_or_else(|| std::io::Error::other("no boot id in /proc"))?;
    let path = file(paths);
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir)?;
    let (verdict, util) = match m {
        Measured::Packs(u) => ("packs", Some(u)),
        Measured::Upstream => ("upstream", None),
        Measured::Unknown => ("unknown", None),
    };
    let v = serde_json::json!({
        "boot_id": boot,
        "verdict": verdict,
        "vcpu_pack_util": util,
        "measured_by": "corral lab placement's wake-up probe (remove this file to measure again)",
    });
    let tmp = dir.join(format!(".placement.json.{}", std::process::id()));
    let written =
        std::fs::write(&tmp, format!("{v}\n")).and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map(|()| path)
}

/// Holds this boot's probe to one process at a time (two at once on the
/// same CPUs would disturb each other): an exclusive `flock` on
/// `placement.lock` beside the file, released when the handle drops;
/// `who` says so when it has to wait. `None` (no lock) when the
/// directory cannot be made, as for a user other than root.
pub fn lock(paths: &HostPaths, who: &str) -> Option<std::fs::File> {
    use rustix::fs::{flock, FlockOperation};
    let path = file(paths).with_extension("lock");
    std::fs::create_dir_all(path.parent()?).ok()?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .ok()?;
    if flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
        eprintln!("{who}: another corral is probing the wake-up placement; waiting for it");
        flock(&f, FlockOperation::LockExclusive).ok()?;
    }
    Some(f)
}

/// Keeps what probe `p` said, where corral may write (root); a note on
/// stderr, as `who`, says where or why not.
pub fn keep(paths: &HostPaths, p: &Placement, who: &str) {
    if !rustix::process::geteuid().is_root() {
        eprintln!(
            "{who}: not kept for this boot's recordings: only root writes {}",
            file(paths).display()
        );
        return;
    }
    match store(paths, verdict(p)) {
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
        for m in [Measured::Packs(717), Measured::Upstream, Measured::Unknown] {
            store(&paths, m).unwrap();
            assert_eq!(load(&paths), Some(m));
        }
        assert_eq!(
            Measured::Unknown.packing(),
            None,
            "a recording says nothing"
        );
        assert_eq!(Measured::Upstream.packing(), Some(None));
        // Another boot: not measured.
        let other = host(&dir, "bbbb");
        assert_eq!(load(&other), None);
        std::fs::write(file(&paths), "{").unwrap();
        assert_eq!(load(&paths), None, "unreadable: not measured");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
