//! corral's scheduler simulator.
//!
//! - [`engine`]: deterministic discrete events (integer ns, ties broken by
//!   scheduling order) and the seeded generator.
//! - [`rtapp`]: rt-app's JSON (order-preserving, duplicate keys kept,
//!   comments allowed, see [`json`]) into a [`rtapp::Workload`]; anything
//!   it does not model is refused naming the file, line, task and key.
//! - [`kernel`]: the [`kernel::SchedClass`] hooks, shaped like the
//!   kernel's `struct sched_class`.
//! - [`fair`]: the fair class in two eras: CFS of Linux 2.6.32–3.0 and
//!   EEVDF of Linux 6.6+, with hierarchical group shares and balancing.
//! - [`machine`]: CPUs with capacities running rt-app threads under a
//!   kernel model, with per-thread figures.
//! - [`report`]: the run's summary (per task, per CPU, Jain fairness).
//!
//! - [`rt`] and [`classes`]: the RT class (FIFO/RR, priorities, RT
//!   bandwidth) stacked above a fair class.
//! - [`host`] and [`policy`]: corral's daemon managing a simulated
//!   machine; [`papers`]: the five papers' experiments.
//! - [`output`], [`svg`]: Perfetto traces, Gantt charts, rt-app logs.
//! - [`linux24`], [`mlq`], [`o1`], [`bfs`]: the older run-queue models.
//!
//! CFS bandwidth, hot-plug and the RT class are modelled; ARCHITECTURE.md
//! lists every module.
//!
//! **Architecture invariant:** the simulator never reads the wall clock;
//! simulated time is integer nanoseconds.

pub mod bfs;
pub mod classes;
pub mod engine;
pub mod fair;
pub mod hist;
pub mod host;
pub mod json;
pub mod kernel;
pub mod linux24;
pub mod machine;
pub mod mlq;
pub mod models;
pub mod o1;
pub mod output;
pub mod papers;
pub mod platform;
pub mod policy;
pub mod report;
pub mod rt;
pub mod rtapp;
pub mod runq;
pub mod runqueue_chart;
pub mod svg;
