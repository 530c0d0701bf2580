//! What corral changed, recorded durably so that any later start (or
//! `corral restore`) can undo it after a crash, a `kill -9` or a power cut
//! of the daemon alone.
//!
//! One JSON file per group root, `/run/corral/<root>.json` by default
//! (`/run` is a tmpfs: the record lives exactly as long as the cgroups it
//! describes). It is written before every change it must cover — the
//! origin of a thread before the thread moves, a thread's nice value and
//! slice before they change — by writing a temporary file, `fsync`, and
//! `rename` over the old one, so a reader sees the old record or the new,
//! never half of one.
//!
//! A thread is named by its TID *and* its start time (field 22 of
//! `/proc/PID/task/TID/stat`): a TID freed by an exited thread may name
//! somebody else's thread by the time the record is read, and that thread
//! must not be touched.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The record's format version.
pub const VERSION: u32 = 1;

/// Where a thread (v1 and "threads", keyed by TID) or a process (v2,
/// keyed by PID) was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginRecord {
    pub key: u32,
    pub pid: u32,
    /// Start time of the keyed task, clock ticks after boot.
    pub start: Option<u64>,
    /// v1: the cpu hierarchy's path; v2: the unified path.
    pub cpu: String,
    /// v1: the cpuset hierarchy's path.
    pub cpuset: Option<String>,
}

/// A thread's nice value and slice before corral changed them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttrRecord {
    pub tid: u32,
    pub pid: u32,
    pub start: Option<u64>,
    pub nice: i32,
    /// `sched_runtime` (ns); 0 = the kernel's default slice.
    pub slice_ns: u64,
}

/// The whole record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    /// The daemon that wrote it.
    pub daemon_pid: u32,
    /// Its start time, so a recycled PID is not taken for it.
    pub daemon_start: Option<u64>,
    /// "v1", "v2" or "threads".
    pub layout: String,
    /// corral's group name under each mount.
    pub root_name: String,
    pub origins: Vec<OriginRecord>,
    pub attrs: Vec<AttrRecord>,
    /// "threads": every CPU set corral gave members, narrower than the
    /// host's, since it was first given; a thread born to a member
    /// inherits one, and is given its process's recorded affinity back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub masks: Vec<MaskRecord>,
    /// "threads": each process's affinity before corral changed any of
    /// its threads (kept after a release: threads born to it may hold a
    /// set of corral's still).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessRecord>,
    /// "threads": systemd units whose `CPUWeight` corral raised, with the
    /// property as it was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<UnitRecord>,
}

/// A CPU set corral gave out, and when it first did (clock ticks after
/// boot, as a thread's start time): only threads started since may have
/// inherited it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaskRecord {
    pub cpus: String,
    pub since: u64,
}

/// A process's affinity before corral changed any of its threads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    pub pid: u32,
    pub start: Option<u64>,
    pub cpus: String,
}

/// A unit's `CPUWeight` property before corral changed it
/// ([`crate::units::WEIGHT_UNSET`] when it was not set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitRecord {
    pub unit: String,
    pub cpu_weight: u64,
}

/// The record's file for group root `root_name` in `dir`.
pub fn path_for(dir: &Path, root_name: &str) -> PathBuf {
    dir.join(format!("{root_name}.json"))
}

/// Reads a record; `None` when there is none.
pub fn load(path: &Path) -> Result<Option<State>> {
    let Some(text) = crate::fsutil::read_opt(path)? else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Error::parse(path, &e.to_string(), "a corral state record (JSON)"))
}

/// Writes a record atomically: a temporary file beside it, `fsync`,
/// `rename`, then `fsync` of the directory.
pub fn store(path: &Path, state: &State) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let text = serde_json::to_vec(state).map_err(|e| Error::Syscall {
        call: "serialise state",
        error: std::io::Error::other(e),
    })?;
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&text)?;
        f.sync_all()
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(&tmp, e));
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Removes a record (absent is fine).
pub fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// A task's start time (clock ticks after boot), `None` when it is gone.
/// `tid` = `pid` names the process's main thread.
pub fn start_time(procfs: &Path, pid: u32, tid: u32) -> Option<u64> {
    let path = procfs
        .join(pid.to_string())
        .join("task")
        .join(tid.to_string())
        .join("stat");
    let text = std::fs::read_to_string(path).ok()?;
    parse_start_time(&text)
}

/// Field 22 (`starttime`) of a `stat` line. The command name (field 2)
/// may hold spaces and parentheses: fields are counted after its last ')'.
pub fn parse_start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields 3.. follow; starttime is field 22, the 20th of them.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Now, in clock ticks after boot (`USER_HZ`, 100), as [`start_time`]
/// counts: from `/proc/uptime`.
pub fn now_ticks(procfs: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(procfs.join("uptime")).ok()?;
    let secs: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some((secs * 100.0) as u64)
}

/// Whether `pid` is a live process started at `start` whose command is
/// `corral` (a record's writer still running).
pub fn daemon_alive(procfs: &Path, pid: u32, start: Option<u64>) -> bool {
    let comm =
        std::fs::read_to_string(procfs.join(pid.to_string()).join("comm")).unwrap_or_default();
    comm.trim() == "corral" && start.is_none_or(|s| start_time(procfs, pid, pid) == Some(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_field_22_even_with_odd_names() {
        let line =
            "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_time(line), Some(987654));
        assert_eq!(parse_start_time("garbage"), None);
        assert_eq!(parse_start_time("1 (x) S 1"), None);
        // This process's own record parses.
        let me = std::process::id();
        assert!(start_time(Path::new("/proc"), me, me).is_some());
    }

    #[test]
    fn store_is_atomic_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(&dir.path().join("run"), "corral-x");
        assert_eq!(load(&path).unwrap(), None);
        let s = State {
            version: VERSION,
            daemon_pid: 7,
            daemon_start: Some(9),
            layout: "v1".into(),
            root_name: "corral-x".into(),
            origins: vec![OriginRecord {
                key: 5,
                pid: 5,
                start: Some(11),
                cpu: "/a b".into(),
                cpuset: Some("/".into()),
            }],
            attrs: vec![AttrRecord {
                tid: 5,
                pid: 5,
                start: Some(11),
                nice: -3,
                slice_ns: 0,
            }],
            masks: vec![MaskRecord {
                cpus: "3".into(),
                since: 12,
            }],
            processes: vec![ProcessRecord {
                pid: 5,
                start: Some(11),
                cpus: "0-3".into(),
            }],
            units: vec![UnitRecord {
                unit: "a.service".into(),
                cpu_weight: u64::MAX,
            }],
        };
        store(&path, &s).unwrap();
        assert_eq!(load(&path).unwrap(), Some(s.clone()));
        // Only the record is left beside it (no temporary file).
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
        std::fs::write(&path, "{").unwrap();
        let e = load(&path).unwrap_err().to_string();
        assert!(e.contains("corral-x.json"), "{e}");
        remove(&path).unwrap();
        remove(&path).unwrap();
    }
}
