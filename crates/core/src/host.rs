//! The interface between corral's control loop and a machine: the live
//! kernel (`corral-linux`) or the simulator (`corral-sim`) implements it,
//! so the daemon's loop runs unchanged on both.
//!
//! It is shaped after the loop: read the clock and the CPUs, take a
//! snapshot of the threads, apply one change at a time, and put everything
//! back at the end.

use crate::cpuset::CpuSet;
use crate::plan::Change;
use crate::sample::Snapshot;
use crate::share::Level;
use crate::topology::Topology;

/// A machine the daemon manages.
pub trait Host {
    /// The host's error; [`HostError::is_gone`] marks a thread that exited
    /// mid-operation, which the daemon treats as normal.
    type Error: HostError;

    /// Monotonic time, ns.
    fn now_ns(&self) -> u64;

    /// The full topology (read at start and after every hot-plug change).
    fn topology(&mut self) -> Result<Topology, Self::Error>;

    /// The CPUs online now; called every interval, so it must be cheap.
    fn online(&mut self) -> Result<CpuSet, Self::Error>;

    /// Reads every thread in scope.
    fn sample(&mut self) -> Result<Snapshot, Self::Error>;

    /// Applies one change of a plan.
    fn apply(&mut self, change: &Change) -> Result<(), Self::Error>;

    /// Puts every thread back where it was and removes every group.
    fn restore(&mut self) -> Result<(), Self::Error>;

    /// The group hierarchy above a thread as it is now, for its effective
    /// CPU share ([`crate::share::effective_share`]), and the CPUs it may use.
    /// `None` when the thread is gone.
    fn share_levels(&mut self, tid: u32) -> Result<Option<(Vec<Level>, u32)>, Self::Error>;

    /// Whether a thread is asleep now and the CPU time it has used, for
    /// ending boosts when the thread blocks after running; `None` when it
    /// is gone. Called every millisecond while boosts are in force.
    fn thread_progress(&mut self, tid: u32) -> Result<Option<ThreadProgress>, Self::Error>;

    /// A one-line description of the backend, for status and logs.
    fn describe(&self) -> String;
}

/// A thread's state, read quickly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadProgress {
    /// Not runnable: sleeping or blocked (state S, D, I …).
    pub sleeping: bool,
    /// CPU time used so far, ns.
    pub run_ns: u64,
}

/// What the daemon needs to know of a host's errors.
pub trait HostError: std::error::Error + Send + Sync + 'static {
    /// The thread or process concerned has exited.
    fn is_gone(&self) -> bool;
}
