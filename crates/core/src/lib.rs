//! corral's pure model and policy.
//!
//! This crate knows the machine only through values handed to it: it reads
//! no file, makes no system call and reads no clock, so every decision it
//! makes can be tested on any machine and replayed in the simulator.
//!
//! - [`CpuSet`]: a set of CPUs in the kernel's cpulist format (`0-1,3`).
//! - [`Topology`]: every possible CPU with its state, capacity and core
//!   type, built from a [`RawTopology`] the host layer read.
//! - [`cpucount`]: paper 003's CPU Count Detector.
//! - [`sample`]: per-thread kernel counters and the rates derived from them.
//! - [`classify`]: paper 000's classes by peak utilisation, and
//!   latency-critical threads by behaviour.
//! - [`plan`]: groups and placements, and the diff between two plans.
//! - [`share`]: cgroup weights and paper 002's effective CPU share.
//! - [`config`]: the TOML configuration and its validation.
//!
//! ```
//! use corral_core::{cpucount, CpuSet};
//!
//! // Paper 003: 4 CPUs exist, one is offline, the kernel allows 128.
//! let input = cpucount::CountInputs {
//!     online: "0-1,3".parse().unwrap(),
//!     present: "0-3".parse().unwrap(),
//!     possible: "0-127".parse().unwrap(),
//!     ..Default::default()
//! };
//! let r = cpucount::recommend(&input);
//! assert_eq!((r.threads, r.online_only), (4, 3));
//! assert_eq!(r.counted, CpuSet::first_n(4));
//! ```

pub mod class;
pub mod classify;
pub mod config;
pub mod cpucount;
pub mod cpuset;
pub mod host;
pub mod plan;
pub mod share;
pub mod topology;
pub mod words;

pub use cpuset::{CpuSet, ParseCpuListError};
pub use topology::{CoreType, Cpu, RawTopology, Topology};
pub mod sample;
