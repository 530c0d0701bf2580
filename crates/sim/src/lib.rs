//! corral's scheduler simulator (issue 5, under construction).
//!
//! What exists: the workload front end — [`rtapp::parse`] reads rt-app's
//! JSON (order-preserving, duplicate keys kept, comments allowed, see
//! [`json`]) into a [`rtapp::Workload`] and refuses anything it does not
//! model, naming the file, line, task and key. The engine, the platform
//! and the kernel models come next.
//!
//! **Architecture invariant:** the simulator never reads the wall clock;
//! simulated time is integer nanoseconds.

pub mod json;
pub mod rtapp;
