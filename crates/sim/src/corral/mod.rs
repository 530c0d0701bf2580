//! corral on the simulator: [`host::SimHost`] puts a simulated machine
//! behind the daemon's `Host` trait, and [`policy::run`] runs the daemon's
//! own loop over it in simulated time, on the live loop's schedule.

pub mod host;
pub mod policy;
pub mod whatif;
