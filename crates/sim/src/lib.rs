//! corral's scheduler simulator, one folder per concern:
//!
//! - [`engine`]: deterministic discrete events (integer ns, ties broken by
//!   scheduling order) and the seeded generator.
//! - [`models`]: every kernel model by name ([`models::Model`]), the one
//!   registry the command line and platform files use.
//! - [`sched`]: the Linux scheduler classes (fair in its CFS and EEVDF
//!   eras with [`sched::features`], RT, stacked as core.c asks them) and
//!   the machine that runs them ([`sched::machine`]).
//! - [`legacy`]: the older run-queue models (Linux 2.4, paper 004's
//!   multi-level queue, O(1), BFS).
//! - [`input`]: rt-app workloads and platform files in, errors naming
//!   file, line and key.
//! - [`corral`]: corral's own daemon managing a simulated machine.
//! - [`out`]: what a run leaves: its summary, latency histograms, Perfetto
//!   traces, Gantt charts, rt-app logs.
//! - [`papers`]: the five papers' experiments, their charts and report.
//!
//! ARCHITECTURE.md lists every module.
//!
//! **Architecture invariant:** the simulator never reads the wall clock;
//! simulated time is integer nanoseconds.

pub mod corral;
pub mod engine;
pub mod error;
pub mod input;
pub mod legacy;
pub mod models;
pub mod out;
pub mod papers;
pub mod sched;
