//! corral's live-kernel experiments and the workload programs they run.
//!
//! Each experiment measures itself with the monotonic clock and returns a
//! report that the CLI prints as a table or JSON. Experiments never change
//! the machine except through cgroups under their own test root, which
//! they remove.
//!
//! - [`parallel`]: paper 003, fork-join Fibonacci over 1..P threads, and
//!   what an online-only detector and corral's detector would choose.

pub mod parallel;
