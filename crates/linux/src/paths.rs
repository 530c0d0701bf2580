//! Where the host's pseudo file systems are. Every reader takes a
//! [`HostPaths`], so tests point it at a fake tree (see [`crate::fake`]).

use std::path::{Path, PathBuf};

/// The standard mount point of the cgroup file systems.
pub const CGROUP_MOUNT_PREFIX: &str = "/sys/fs/cgroup";

/// The roots of sysfs, procfs and the cgroup mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPaths {
    /// sysfs, normally `/sys`.
    pub sysfs: PathBuf,
    /// procfs, normally `/proc`.
    pub procfs: PathBuf,
    /// Where the cgroup file systems listed in `mountinfo` under
    /// `/sys/fs/cgroup` are found, normally `/sys/fs/cgroup` itself.
    pub cgroup: PathBuf,
    /// The runtime directory, normally `/run` (`systemd/system` there
    /// says systemd runs the host, `sd_booted(3)`).
    pub run: PathBuf,
}

impl Default for HostPaths {
    fn default() -> Self {
        HostPaths {
            sysfs: PathBuf::from("/sys"),
            procfs: PathBuf::from("/proc"),
            cgroup: PathBuf::from(CGROUP_MOUNT_PREFIX),
            run: PathBuf::from("/run"),
        }
    }
}

impl HostPaths {
    /// Whether procfs is the live one, so that system calls about a PID
    /// speak of the same process as the files read.
    pub fn is_live_procfs(&self) -> bool {
        self.procfs == Path::new("/proc")
    }

    /// `/sys/devices/system/cpu`.
    pub fn cpu_dir(&self) -> PathBuf {
        self.sysfs.join("devices/system/cpu")
    }

    /// `/proc/PID` (or `/proc/self`).
    pub fn proc_dir(&self, pid: Option<u32>) -> PathBuf {
        match pid {
            Some(pid) => self.procfs.join(pid.to_string()),
            None => self.procfs.join("self"),
        }
    }

    /// Maps a mount point from `mountinfo` to where it is found here: a
    /// mount under `/sys/fs/cgroup` is re-rooted at [`HostPaths::cgroup`].
    pub fn map_cgroup_mount(&self, mount_point: &Path) -> PathBuf {
        match mount_point.strip_prefix(CGROUP_MOUNT_PREFIX) {
            Ok(rest) => self.cgroup.join(rest),
            Err(_) => mount_point.to_path_buf(),
        }
    }
}
