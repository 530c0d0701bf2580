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

/// `sched_setaffinity(2)` of thread `tid`. CPUs of `cpus` that are offline
/// are accepted (the kernel keeps the requested mask, 6.2+, and runs the
/// thread on its online part); a set with no online CPU is EINVAL.
pub fn sched_setaffinity(tid: u32, cpus: &CpuSet) -> Result<()> {
    let pid = i32::try_from(tid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or(Error::NoSuchProcess(tid))?;
    let mut mask = rustix::thread::CpuSet::new();
    for cpu in cpus.iter() {
        if (cpu as usize) < rustix::thread::CpuSet::MAX_CPU {
            mask.set(cpu as usize);
        }
    }
    rustix::thread::sched_setaffinity(Some(pid), &mask).map_err(|e| match e {
        rustix::io::Errno::SRCH => Error::NoSuchProcess(tid),
        e => Error::Syscall {
            call: "sched_setaffinity",
            error: e.into(),
        },
    })
}

/// `struct sched_attr` (include/uapi/linux/sched/types.h), version 1.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedAttr {
    pub size: u32,
    pub sched_policy: u32,
    pub sched_flags: u64,
    pub sched_nice: i32,
    pub sched_priority: u32,
    /// For SCHED_OTHER/BATCH since Linux 6.12: the EEVDF slice, ns (0 =
    /// the default `base_slice_ns`); for SCHED_DEADLINE the runtime.
    pub sched_runtime: u64,
    pub sched_deadline: u64,
    pub sched_period: u64,
    pub sched_util_min: u32,
    pub sched_util_max: u32,
}

const SCHED_ATTR_SIZE_VER1: u32 = 56;

/// The shortest and longest EEVDF slice the kernel accepts for a fair
/// task (kernel/sched/syscalls.c clamps `sched_runtime` to 0.1–100 ms).
pub const MIN_SLICE_NS: u64 = 100_000;
pub const MAX_SLICE_NS: u64 = 100_000_000;

fn errno_error(call: &'static str, tid: u32) -> Error {
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ESRCH) {
        Error::NoSuchProcess(tid)
    } else {
        Error::Syscall { call, error: e }
    }
}

/// `sched_getattr(2)` of thread `tid`.
pub fn sched_getattr(tid: u32) -> Result<SchedAttr> {
    let mut attr = SchedAttr::default();
    // SAFETY: the kernel writes at most `size` (56) bytes into `attr`,
    // which is a repr(C) struct of exactly that layout.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid as libc::pid_t,
            &mut attr as *mut SchedAttr,
            SCHED_ATTR_SIZE_VER1,
            0u32,
        )
    };
    if r != 0 {
        return Err(errno_error("sched_getattr", tid));
    }
    Ok(attr)
}

/// `sched_setattr(2)` of thread `tid`.
pub fn sched_setattr(tid: u32, attr: &SchedAttr) -> Result<()> {
    let mut attr = *attr;
    attr.size = SCHED_ATTR_SIZE_VER1;
    // SAFETY: the kernel reads `size` bytes from a valid repr(C) struct.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            tid as libc::pid_t,
            &attr as *const SchedAttr,
            0u32,
        )
    };
    if r != 0 {
        return Err(errno_error("sched_setattr", tid));
    }
    Ok(())
}

/// Sets the nice value and EEVDF slice of a SCHED_OTHER/BATCH thread in
/// one `sched_setattr(2)`, keeping its policy (a slice of 0 restores the
/// default). A shorter slice gives an earlier virtual deadline (deadline =
/// vruntime + slice / weight) and, with the PREEMPT_SHORT feature, lets
/// the thread preempt a running one whose slice is longer on wake-up
/// instead of waiting for it to finish its protected slice. Returns the
/// previous nice value and `sched_runtime`.
pub fn set_fair_attr(tid: u32, nice: i32, slice_ns: u64) -> Result<(i32, u64)> {
    let old = sched_getattr(tid)?;
    if !matches!(
        old.sched_policy as i32,
        libc::SCHED_OTHER | libc::SCHED_BATCH
    ) {
        return Err(Error::Syscall {
            call: "sched_setattr",
            error: std::io::Error::other(format!("thread {tid} is not SCHED_OTHER or SCHED_BATCH")),
        });
    }
    let new = SchedAttr {
        sched_nice: nice.clamp(-20, 19),
        sched_runtime: if slice_ns == 0 {
            0
        } else {
            slice_ns.clamp(MIN_SLICE_NS, MAX_SLICE_NS)
        },
        sched_deadline: 0,
        sched_period: 0,
        sched_flags: 0,
        ..old
    };
    sched_setattr(tid, &new)?;
    Ok((old.sched_nice, old.sched_runtime))
}

/// Whether thread `tid` is in the fair class (SCHED_OTHER or SCHED_BATCH,
/// the policies [`set_fair_attr`] changes); `false` when it is gone.
pub fn is_fair(tid: u32) -> bool {
    sched_getattr(tid)
        .is_ok_and(|a| matches!(a.sched_policy as i32, libc::SCHED_OTHER | libc::SCHED_BATCH))
}

/// Sets only the EEVDF slice (see [`set_fair_attr`]), keeping the nice
/// value; returns the previous `sched_runtime`.
pub fn set_fair_slice(tid: u32, slice_ns: u64) -> Result<u64> {
    let nice = sched_getattr(tid)?.sched_nice;
    set_fair_attr(tid, nice, slice_ns).map(|(_, old)| old)
}
