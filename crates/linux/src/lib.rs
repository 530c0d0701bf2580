//! corral's host layer: everything it reads from or does to a Linux machine.
//!
//! - [`sysfs::read_topology`]: the CPUs, their state, capacity and grouping.
//! - [`procfs`]: a task's allowed CPUs, its cgroups, the mount table.
//! - [`cgroup`]: cgroup v1 and v2 hierarchies and the CPU limits they set.
//! - [`sched`]: scheduling system calls, each wrapped once.
//! - [`cpucount::detect`]: paper 003's CPU Count Detector for a process.
//!
//! Every reader takes a [`HostPaths`] so that tests run on fake trees
//! built by [`fake::FakeHost`]. This crate holds no policy: it reads, and
//! hands plain values to `corral-core`, which decides.
//!
//! ```no_run
//! let report = corral_linux::cpucount::detect(&corral_linux::HostPaths::default(), None)?;
//! println!("start {} threads", report.recommendation.threads);
//! # Ok::<(), corral_linux::Error>(())
//! ```

pub mod cgroup;
pub mod cpucount;
mod error;
pub mod fake;
mod fsutil;
pub mod host;
pub mod notify;
pub mod paths;
pub mod placer;
pub mod procevents;
pub mod procfs;
pub mod sampler;
pub mod sched;
pub mod state;
pub mod sysfs;
pub mod system;
pub mod tracefs;
pub mod units;

pub use error::{Error, Result};
pub use paths::HostPaths;
