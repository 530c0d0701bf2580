//! Scheduling system calls, each wrapped once.

use crate::error::{Error, Result};
use corral_core::CpuSet;

/// `sched_getaffinity(2)` for `pid` (the calling thread when `None`). The
/// kernel answers with the task's mask *and the active CPUs*, so offline
/// CPUs never appear; see [`crate::procfs::cpus_allowed`] for the full mask.
pub fn sched_getaffinity(pid: Option<u32>) -> Result<CpuSet> {
    let pid = match pid {
        None => None,
        Some(p) => Some(
            i32::try_from(p)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
                .ok_or(Error::NoSuchProcess(p))?,
        ),
    };
    let mask = rustix::thread::sched_getaffinity(pid).map_err(|e| match (e, pid) {
        (rustix::io::Errno::SRCH, Some(p)) => Error::NoSuchProcess(p.as_raw_nonzero().get() as u32),
        (e, _) => Error::Syscall {
            call: "sched_getaffinity",
            error: e.into(),
        },
    })?;
    Ok((0..rustix::thread::CpuSet::MAX_CPU as u32)
        .filter(|&cpu| mask.is_set(cpu as usize))
        .collect())
}
