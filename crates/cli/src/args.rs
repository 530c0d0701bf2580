//! The command line.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// corral — a CPU resource manager for multicore and heterogeneous Linux
/// machines.
///
/// corral measures what each thread is (a CPU hog, a latency-critical
/// thread, light background work) and tells the kernel through cgroups,
/// which the fair scheduler alone cannot see. Start with `corral cpus` to see
/// how corral reads this machine.
#[derive(Debug, Parser)]
#[command(name = "corral", version, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub roots: Roots,
    #[command(subcommand)]
    pub command: Command,
}

/// Where the kernel's pseudo file systems are; change them only to read a
/// fake tree (tests, bug reports).
#[derive(Debug, Args)]
pub struct Roots {
    /// Root of sysfs.
    #[arg(long, global = true, value_name = "DIR", default_value = "/sys")]
    pub sysfs_root: PathBuf,
    /// Root of procfs.
    #[arg(long, global = true, value_name = "DIR", default_value = "/proc")]
    pub proc_root: PathBuf,
    /// Where the cgroup mounts that mountinfo lists under /sys/fs/cgroup are.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        default_value = "/sys/fs/cgroup"
    )]
    pub cgroup_root: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the CPUs and how many threads a parallel program should start.
    ///
    /// Lists every present CPU (state, capacity, core type, grouping), then
    /// counts CPUs the way paper 003's CPU Count Detector does: CPUs that
    /// exist count even while offline (a hot-plug governor brings them online
    /// under load); the process's affinity and cpuset limit them; a CPU quota
    /// caps the count, rounded up.
    Cpus(CpusArgs),
    /// Run a command with its thread-count variables set from `corral cpus`.
    ///
    /// Sets OMP_NUM_THREADS, RAYON_NUM_THREADS and GOMAXPROCS to the
    /// recommendation, leaving any that is already set alone unless --force.
    /// The command replaces corral (exec), so it keeps corral's PID, signals
    /// and exit status.
    Exec(ExecArgs),
    /// Experiments on this machine's kernel.
    #[command(subcommand)]
    Lab(LabCommand),
}

#[derive(Debug, Args)]
pub struct CpusArgs {
    /// Examine this process instead of corral itself.
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Print JSON for programs instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// A thread count: a number, or `auto` for corral's recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    Auto,
    Count(u32),
}

fn parse_threads(s: &str) -> Result<Threads, String> {
    if s == "auto" {
        return Ok(Threads::Auto);
    }
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(Threads::Count(n)),
        _ => Err(format!("expected `auto` or a positive number, found {s:?}")),
    }
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Threads to announce: a number, or `auto` for the recommendation.
    #[arg(long, value_name = "N|auto", default_value = "auto", value_parser = parse_threads)]
    pub threads: Threads,
    /// Overwrite the variables even where the environment already sets them.
    #[arg(long)]
    pub force: bool,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Paper 003: recursive Fibonacci over 1..P threads (P = present CPUs).
    ///
    /// Prints the wall time and speed-up of each thread count, and the
    /// thread counts an online-only detector and corral's detector choose.
    /// Run it on a quiet machine: other load on the CPUs swamps the effect.
    Parallel(ParallelArgs),
}

#[derive(Debug, Args)]
pub struct ParallelArgs {
    /// Compute fib(N); by default N is calibrated to take --seconds on one thread.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(10..=60))]
    pub n: Option<u32>,
    /// One-thread run time to calibrate N for.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    pub seconds: f64,
    /// Runs per thread count; the median is reported.
    #[arg(long, value_name = "R", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Most threads to try (default: the present CPUs).
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_threads: Option<u32>,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
}
