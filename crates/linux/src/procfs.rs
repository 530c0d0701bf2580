//! Per-process files of procfs: `status`, `cgroup`, and `mountinfo`.

use crate::error::{Error, Result};
use crate::fsutil::{parse_cpulist, read, read_opt};
use crate::paths::HostPaths;
use corral_core::CpuSet;
use std::path::PathBuf;

/// The CPUs a task may run on, from `Cpus_allowed_list` in
/// `/proc/PID/status`. Unlike `sched_getaffinity(2)`, which masks the
/// answer with the active CPUs, this is the task's `cpus_ptr` as set, so it
/// keeps CPUs that are offline now. `None` when the line is missing.
pub fn cpus_allowed(paths: &HostPaths, pid: Option<u32>) -> Result<Option<CpuSet>> {
    let path = paths.proc_dir(pid).join("status");
    let text = read_process_file(&path, pid)?;
    text.lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .map(|list| parse_cpulist(&path, list))
        .transpose()
}

/// One line of `/proc/PID/cgroup`: `hierarchy-ID:controller-list:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupEntry {
    /// 0 for the unified (v2) hierarchy.
    pub hierarchy_id: u32,
    /// The v1 controllers bound to the hierarchy (`cpu`, `cpuacct`,
    /// `name=systemd`); empty for v2.
    pub controllers: Vec<String>,
    /// The path relative to the hierarchy's root, as seen from corral's
    /// cgroup namespace.
    pub path: String,
}

impl CgroupEntry {
    /// Whether this is the v2 (unified) entry.
    pub fn is_v2(&self) -> bool {
        self.hierarchy_id == 0 && self.controllers.is_empty()
    }

    /// Whether this v1 hierarchy carries `controller`.
    pub fn has_controller(&self, controller: &str) -> bool {
        self.controllers.iter().any(|c| c == controller)
    }
}

/// The task's cgroups, from `/proc/PID/cgroup`.
pub fn cgroups(paths: &HostPaths, pid: Option<u32>) -> Result<Vec<CgroupEntry>> {
    let path = paths.proc_dir(pid).join("cgroup");
    let text = read_process_file(&path, pid)?;
    parse_cgroups(&text, &path)
}

/// Parses a `/proc/PID/cgroup` file's text (`path` names it in errors).
pub fn parse_cgroups(text: &str, path: &std::path::Path) -> Result<Vec<CgroupEntry>> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let bad = || Error::parse(path, line, "hierarchy-ID:controllers:path");
            let mut fields = line.splitn(3, ':');
            let id = fields.next().ok_or_else(bad)?;
            let controllers = fields.next().ok_or_else(bad)?;
            let cgroup = fields.next().ok_or_else(bad)?;
            Ok(CgroupEntry {
                hierarchy_id: id.parse().map_err(|_| bad())?,
                controllers: controllers
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(String::from)
                    .collect(),
                path: cgroup.to_string(),
            })
        })
        .collect()
}

/// One line of `/proc/self/mountinfo` (see proc(5)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The directory of the file system mounted here (`/` for a whole
    /// cgroup hierarchy; a sub-path for a bind mount or a namespace).
    pub root: String,
    /// Where it is mounted, unescaped.
    pub mount_point: PathBuf,
    pub fstype: String,
    /// Per-superblock options: for cgroup v1 these name the controllers.
    pub super_options: Vec<String>,
}

/// corral's own mount table, `/proc/self/mountinfo`: the paths in it are
/// the ones corral can open.
pub fn mountinfo(paths: &HostPaths) -> Result<Vec<Mount>> {
    let path = paths.procfs.join("self/mountinfo");
    let Some(text) = read_opt(&path)? else {
        return Ok(Vec::new());
    };
    parse_mountinfo(&text, &path)
}

/// Parses a mountinfo file's text (`path` names it in errors).
pub fn parse_mountinfo(text: &str, path: &std::path::Path) -> Result<Vec<Mount>> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let bad = || Error::parse(path, line, "a mountinfo line");
            let (left, right) = line.split_once(" - ").ok_or_else(bad)?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            if left.len() < 6 || right.len() < 3 {
                return Err(bad());
            }
            Ok(Mount {
                root: unescape(left[3]),
                mount_point: PathBuf::from(unescape(left[4])),
                fstype: right[0].to_string(),
                super_options: right[2].split(',').map(String::from).collect(),
            })
        })
        .collect()
}

/// Undoes the kernel's octal escapes of ' ', '\t', '\n' and '\\' in
/// mountinfo (`\040` and friends).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let oct = &bytes[i + 1..i + 4];
            if oct.iter().all(|b| (b'0'..=b'7').contains(b)) {
                let v = oct
                    .iter()
                    .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the kernel schedules a session's tasks as one group
/// (`CONFIG_SCHED_AUTOGROUP`, `/proc/sys/kernel/sched_autogroup_enabled`
/// 1). `false` when the file is missing (built without it).
pub fn autogroup_enabled(paths: &HostPaths) -> bool {
    let file = paths.procfs.join("sys/kernel/sched_autogroup_enabled");
    read_opt(&file)
        .ok()
        .flatten()
        .is_some_and(|t| t.trim() == "1")
}

/// The autogroup of task `pid`, from `/proc/PID/autogroup`: its name
/// (`/autogroup-N`, as the kernel's `sched/debug` names its task group)
/// and nice value. `None` when the task is in none (a kernel thread, or
/// a kernel without autogroups).
///
/// With autogroups enabled, a task whose cpu cgroup is the root runs in
/// its session's task group instead (`autogroup_task_group`), a child of
/// the root whose shares are the weight of the autogroup's nice
/// (`autogroup_set_nice`: `sched_prio_to_weight[nice + 20]`); a new one
/// is made at each `setsid()`, and a fork inherits its parent's. The
/// group is invisible in `/proc/PID/cgroup`, which says `/`.
pub fn autogroup(paths: &HostPaths, pid: u32) -> Result<Option<(String, i32)>> {
    let path = paths.proc_dir(Some(pid)).join("autogroup");
    let text = match read_opt(&path)? {
        Some(t) => t,
        None => return Err(Error::NoSuchProcess(pid)),
    };
    Ok(parse_autogroup(&text))
}

/// Parses `/proc/PID/autogroup`'s `/autogroup-N nice K` (empty for a task
/// in none).
pub fn parse_autogroup(text: &str) -> Option<(String, i32)> {
    let mut words = text.split_whitespace();
    let name = words.next().filter(|n| {
        n.strip_prefix("/autogroup-")
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    })?;
    let nice = match (words.next(), words.next()) {
        (Some("nice"), Some(k)) => k.parse().ok()?,
        _ => return None,
    };
    Some((name.to_string(), nice))
}

/// Reads a per-process file, turning "not there" into
/// [`Error::NoSuchProcess`] when a PID was named.
fn read_process_file(path: &std::path::Path, pid: Option<u32>) -> Result<String> {
    match read(path) {
        Err(e) if e.is_gone() && pid.is_some() => {
            Err(Error::NoSuchProcess(pid.unwrap_or_default()))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn an_autogroup_line_gives_its_name_and_nice() {
        use super::parse_autogroup;
        assert_eq!(
            parse_autogroup("/autogroup-19288 nice 0\n"),
            Some(("/autogroup-19288".into(), 0))
        );
        assert_eq!(
            parse_autogroup("/autogroup-7 nice -5\n"),
            Some(("/autogroup-7".into(), -5))
        );
        // A kernel thread's file is empty; anything else is not one.
        assert_eq!(parse_autogroup(""), None);
        assert_eq!(parse_autogroup("/autogroup- nice 0"), None);
        assert_eq!(parse_autogroup("/autogroup-3 nice x"), None);
    }

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape(r"/mnt/a\040b"), "/mnt/a b");
        assert_eq!(unescape(r"/x\134y"), r"/x\y");
        assert_eq!(unescape(r"/trailing\"), r"/trailing\");
        assert_eq!(unescape(r"/short\04"), r"/short\04");
    }
}
