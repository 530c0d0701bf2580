//! corral's live-kernel experiments and the workload programs they run.
//!
//! Each experiment runs its baseline and its corral variant in one
//! invocation, measures with the monotonic clock, and returns a report
//! that the CLI prints as a table or JSON. Experiments change the machine
//! only through cgroups under their own `corral-lab-<pid>` root and the
//! daemon's `corral-test-lab-<pid>` groups, all removed at the end, and
//! end only the processes they started.
//!
//! - [`parallel`]: paper 003, fork-join Fibonacci over 1..P threads.
//! - [`latency`]: paper 002, a periodic thread in a 52-share group beside hogs.
//! - [`heavy`]: paper 000, a CPU-bound benchmark beside a background mix.
//! - [`medium`]: the medium guarantee, by cgroup weight and by nice, for a
//!   periodic thread beside hogs its program starts.
//! - [`interactive`]: paper 001, an input handler beside hogs, boosted by
//!   its dispatcher through corral's socket.
//! - [`boost_bench`]: how fast a boost request takes effect.
//! - [`overhead`]: the daemon's own CPU and memory with a thousand threads.
//! - [`real`]: a real parallel build with cyclictest and a 60 Hz frame
//!   loop beside it (and stress-ng), the kernel alone against corral.
//! - [`reaction`]: how fast the daemon places a new latency-critical
//!   thread or hog, and gives a dedicated CPU back when its hog exits.
//! - [`validate`]: the simulator against this kernel, rt-app workloads
//!   run live and simulated from the same JSON.
//! - [`vmguest`]: the scenarios `scripts/vm-test` runs in its QEMU guest;
//!   [`vmhetero`] the arm64 big.LITTLE guest's, [`vmsystemd`] the systemd
//!   guest's.
//! - [`work`]: the workload programs (`corral lab work …`).
//! - [`error`]: the one error type every experiment returns.

pub mod boost_bench;
pub mod costs;
pub mod crash;
pub mod daemon_process;
pub mod daemon_thread;
pub mod error;
pub mod flood;
pub mod fuzz;
pub mod groups;
pub mod heavy;
pub mod interactive;
pub mod latency;
pub mod medium;
pub mod overhead;
pub mod parallel;
pub mod pelt;
pub mod placement;
pub mod reaction;
pub mod real;
pub mod soak;
pub mod starve;
pub mod validate;
pub mod vmguest;
pub mod vmhetero;
pub mod vmsystemd;
pub mod work;
