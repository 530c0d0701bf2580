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

    /// Reads every thread in scope, each whole, those it has never seen
    /// included: for a request that names a thread born since the last
    /// pass. (A host may leave a thread out of [`Host::sample`] until its
    /// second pass, as the live one does under fork storms.)
    fn sample_whole(&mut self) -> Result<Snapshot, Self::Error> {
        self.sample()
    }

    /// What happened to threads since the last call (the kernel's process
    /// connector on the live host): threads born in scope and threads that
    /// exited. A host without such events returns nothing, and new threads
    /// are then found by [`Host::sample`] only.
    fn task_events(&mut self) -> TaskEvents {
        TaskEvents::default()
    }

    /// Reads only these threads (tid, pid), between full samples; threads
    /// that are gone or out of scope are left out.
    fn sample_threads(&mut self, which: &[(u32, u32)]) -> Result<Snapshot, Self::Error> {
        let mut snap = self.sample()?;
        snap.threads
            .retain(|t| which.iter().any(|&(tid, pid)| tid == t.tid && pid == t.pid));
        Ok(snap)
    }

    /// Applies one change of a plan.
    fn apply(&mut self, change: &Change) -> Result<(), Self::Error>;

    /// Called with a batch of changes before any of them is applied: a
    /// host that must record what it is about to change (the live one
    /// writes where each moving thread is, so a crash can be undone) does
    /// it here, once for the batch. When it fails, the batch's moves are
    /// not made.
    fn prepare(&mut self, changes: &[Change]) -> Result<(), Self::Error> {
        let _ = changes;
        Ok(())
    }

    /// Work a host keeps off a boost's path, done once a batch of
    /// changes is in force: the daemon calls it after a step's changes
    /// and after answering a boost (the live host's per-thread backend
    /// asks systemd here to lift the units of latency-critical and
    /// boosted threads, D-Bus round trips of milliseconds). An error is
    /// reported; the changes stand.
    fn finish(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Whether the host's groups limit a thread's real-time time (cgroup
    /// v1 with real-time group scheduling): then the daemon sends a
    /// real-time thread it finds inside them out ([`crate::plan::Change::SendHome`]).
    fn limits_real_time(&self) -> bool {
        false
    }

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

/// Threads born and exited since the last [`Host::task_events`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskEvents {
    /// (tid, pid) of threads that appeared in scope, or ran a new program.
    pub born: Vec<(u32, u32)>,
    /// tids of threads that exited.
    pub exited: Vec<u32>,
    /// tids of threads in scope that forked a new process.
    pub spawners: Vec<u32>,
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
