//! Finding a task's cgroups and reading the CPU limits they set.
//!
//! The kernel offers two interfaces; a controller is bound to at most one
//! of them. v1 mounts one hierarchy per controller (or per co-mounted set,
//! `cpu,cpuacct`); v2 is one unified hierarchy. corral finds both from its
//! own `mountinfo` and the task's `/proc/PID/cgroup`.

use crate::error::{Error, Result};
use crate::fsutil::{read_cpulist_opt, read_i64_opt, read_opt};
use crate::paths::HostPaths;
use crate::procfs::{self, CgroupEntry, Mount};
use corral_core::cpucount::{CgroupVersion, CpusetLimit, Quota};
use std::path::{Path, PathBuf};

/// A mounted cgroup hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    pub version: CgroupVersion,
    /// v1 controllers bound to it (from the mount's super options).
    pub controllers: Vec<String>,
    /// The hierarchy path shown at the mount point (`/` for a full mount).
    pub root: String,
    /// Where it is found here (after [`HostPaths::map_cgroup_mount`]).
    pub dir: PathBuf,
}

impl Hierarchy {
    /// The directory of cgroup `path` (as in /proc/PID/cgroup), if this
    /// mount shows it.
    pub fn dir_of(&self, path: &str) -> Option<PathBuf> {
        let root = self.root.trim_end_matches('/');
        let rest = path.strip_prefix(root)?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        let rest = rest.trim_start_matches('/');
        Some(if rest.is_empty() {
            self.dir.clone()
        } else {
            self.dir.join(rest)
        })
    }

    /// The cgroup at `path` and each of its ancestors up to the mount's
    /// root, leaf first, as (cgroup path, directory) pairs.
    pub fn lineage(&self, path: &str) -> Vec<(String, PathBuf)> {
        let mut out = Vec::new();
        let mut current = path.trim_end_matches('/').to_string();
        loop {
            let shown = if current.is_empty() {
                "/".to_string()
            } else {
                current.clone()
            };
            match self.dir_of(&shown) {
                Some(dir) => out.push((shown, dir)),
                None => break,
            }
            match current.rfind('/') {
                Some(i) if !current.is_empty() => current.truncate(i),
                _ => break,
            }
        }
        out
    }
}

/// The cgroup hierarchies mounted on this host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupMounts {
    pub v1: Vec<Hierarchy>,
    pub v2: Option<Hierarchy>,
}

impl CgroupMounts {
    /// Finds the cgroup mounts in corral's `mountinfo`.
    pub fn discover(paths: &HostPaths) -> Result<CgroupMounts> {
        Ok(Self::from_mounts(paths, &procfs::mountinfo(paths)?))
    }

    /// Picks the cgroup mounts out of a mount table. The first mount of a
    /// hierarchy wins, as the kernel lists the original before bind mounts.
    pub fn from_mounts(paths: &HostPaths, mounts: &[Mount]) -> CgroupMounts {
        let mut out = CgroupMounts::default();
        for m in mounts {
            let dir = paths.map_cgroup_mount(&m.mount_point);
            match m.fstype.as_str() {
                "cgroup2" if out.v2.is_none() => {
                    out.v2 = Some(Hierarchy {
                        version: CgroupVersion::V2,
                        controllers: Vec::new(),
                        root: m.root.clone(),
                        dir,
                    })
                }
                "cgroup" => {
                    let controllers: Vec<String> = m
                        .super_options
                        .iter()
                        .filter(|o| !matches!(o.as_str(), "rw" | "ro") && !o.contains('='))
                        .filter(|o| !V1_MOUNT_FLAGS.contains(&o.as_str()))
                        .cloned()
                        .collect();
                    if !out.v1.iter().any(|h| h.controllers == controllers) {
                        out.v1.push(Hierarchy {
                            version: CgroupVersion::V1,
                            controllers,
                            root: m.root.clone(),
                            dir,
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The v1 hierarchy carrying `controller`.
    pub fn v1_with(&self, controller: &str) -> Option<&Hierarchy> {
        self.v1
            .iter()
            .find(|h| h.controllers.iter().any(|c| c == controller))
    }
}

/// v1 super options that are mount flags, not controllers.
const V1_MOUNT_FLAGS: &[&str] = &[
    "noprefix",
    "xattr",
    "clone_children",
    "cpuset_v2_mode",
    "favordynmods",
];

/// Where a controller of a task is: its hierarchy and its cgroup path.
fn locate<'a>(
    mounts: &'a CgroupMounts,
    entries: &[CgroupEntry],
    controller: &str,
) -> Option<(&'a Hierarchy, String)> {
    if let Some(h) = mounts.v1_with(controller) {
        let entry = entries.iter().find(|e| e.has_controller(controller))?;
        return Some((h, entry.path.clone()));
    }
    let h = mounts.v2.as_ref()?;
    let entry = entries.iter().find(|e| e.is_v2())?;
    Some((h, entry.path.clone()))
}

/// The cpuset a task is confined to, or `None` when it sits in the root
/// cpuset (or no cpuset controller is in use).
///
/// v1: the group's `cpuset.cpus` (a v1 child is always a subset of its
/// parent, and the kernel removes offline CPUs from it). v2: the
/// intersection of every non-empty `cpuset.cpus` from the group up to, not
/// including, the root — an empty one means "as my parent" — which keeps
/// offline CPUs, unlike `cpuset.cpus.effective`.
pub fn cpuset_limit(mounts: &CgroupMounts, entries: &[CgroupEntry]) -> Result<Option<CpusetLimit>> {
    let Some((h, path)) = locate(mounts, entries, "cpuset") else {
        return Ok(None);
    };
    if path == "/" {
        return Ok(None);
    }
    let Some(dir) = h.dir_of(&path) else {
        return Ok(None);
    };
    match h.version {
        CgroupVersion::V1 => {
            let Some(cpus) = read_cpulist_opt(&dir.join("cpuset.cpus"))? else {
                return Ok(None);
            };
            Ok(Some(CpusetLimit {
                version: CgroupVersion::V1,
                cgroup: path,
                cpus,
                effective: read_cpulist_opt(&dir.join("cpuset.effective_cpus"))?,
            }))
        }
        CgroupVersion::V2 => {
            let mut configured = None;
            for (cgroup, dir) in h.lineage(&path).into_iter().filter(|(c, _)| c != "/") {
                if let Some(cpus) = read_cpulist_opt(&dir.join("cpuset.cpus"))? {
                    if !cpus.is_empty() {
                        configured = Some(match configured {
                            None => (cgroup, cpus),
                            Some((leaf, acc)) => (leaf, cpus.intersection(&acc)),
                        });
                    }
                }
            }
            let Some((cgroup, cpus)) = configured else {
                return Ok(None);
            };
            Ok(Some(CpusetLimit {
                version: CgroupVersion::V2,
                cgroup,
                cpus,
                effective: read_cpulist_opt(&dir.join("cpuset.cpus.effective"))?,
            }))
        }
    }
}

/// The tightest CFS bandwidth limit over the task's group and all its
/// ancestors, or `None` when none is set. v1: `cpu.cfs_quota_us` (-1 = no
/// limit) over `cpu.cfs_period_us`; v2: `cpu.max` ("max PERIOD" = no limit).
pub fn quota(mounts: &CgroupMounts, entries: &[CgroupEntry]) -> Result<Option<Quota>> {
    let Some((h, path)) = locate(mounts, entries, "cpu") else {
        return Ok(None);
    };
    let mut tightest: Option<Quota> = None;
    for (cgroup, dir) in h.lineage(&path) {
        let level = match h.version {
            CgroupVersion::V1 => read_v1_quota(&dir, &cgroup)?,
            CgroupVersion::V2 => read_v2_quota(&dir, &cgroup)?,
        };
        if let Some(q) = level {
            if tightest.as_ref().is_none_or(|t| q.is_tighter_than(t)) {
                tightest = Some(q);
            }
        }
    }
    Ok(tightest)
}

fn read_v1_quota(dir: &Path, cgroup: &str) -> Result<Option<Quota>> {
    let quota_path = dir.join("cpu.cfs_quota_us");
    let Some(quota) = read_i64_opt(&quota_path)? else {
        return Ok(None);
    };
    if quota < 0 {
        return Ok(None);
    }
    let period_path = dir.join("cpu.cfs_period_us");
    let period = read_i64_opt(&period_path)?
        .filter(|&p| p > 0)
        .ok_or_else(|| Error::parse(&period_path, "", "a positive period"))?;
    Ok(Some(Quota {
        version: CgroupVersion::V1,
        cgroup: cgroup.to_string(),
        quota_us: quota as u64,
        period_us: period as u64,
    }))
}

fn read_v2_quota(dir: &Path, cgroup: &str) -> Result<Option<Quota>> {
    let path = dir.join("cpu.max");
    let Some(text) = read_opt(&path)? else {
        return Ok(None);
    };
    let bad = || Error::parse(&path, &text, "\"$MAX $PERIOD\" (max or microseconds)");
    let mut fields = text.split_whitespace();
    let quota = fields.next().ok_or_else(bad)?;
    let period: u64 = match fields.next() {
        Some(p) => p.parse().map_err(|_| bad())?,
        None => 100_000,
    };
    if quota == "max" {
        return Ok(None);
    }
    let quota: u64 = quota.parse().map_err(|_| bad())?;
    if period == 0 {
        return Err(bad());
    }
    Ok(Some(Quota {
        version: CgroupVersion::V2,
        cgroup: cgroup.to_string(),
        quota_us: quota,
        period_us: period,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(root: &str, dir: &str) -> Hierarchy {
        Hierarchy {
            version: CgroupVersion::V2,
            controllers: vec![],
            root: root.into(),
            dir: dir.into(),
        }
    }

    #[test]
    fn dir_of_respects_the_mount_root() {
        let full = h("/", "/cg");
        assert_eq!(full.dir_of("/"), Some("/cg".into()));
        assert_eq!(full.dir_of("/a/b"), Some("/cg/a/b".into()));
        let sub = h("/a", "/cg");
        assert_eq!(sub.dir_of("/a/b"), Some("/cg/b".into()));
        assert_eq!(sub.dir_of("/ab"), None);
        assert_eq!(sub.dir_of("/x"), None);
    }

    #[test]
    fn lineage_goes_leaf_to_root() {
        let l: Vec<String> = h("/", "/cg")
            .lineage("/a/b")
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        assert_eq!(l, ["/a/b", "/a", "/"]);
        let l: Vec<String> = h("/a", "/cg")
            .lineage("/a/b")
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        assert_eq!(l, ["/a/b", "/a"]);
        assert_eq!(h("/", "/cg").lineage("/").len(), 1);
    }
}
