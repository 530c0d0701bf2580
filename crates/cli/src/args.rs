//! The command line.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use corral_core::config::CgroupChoice;

/// `--cgroup`: the configuration's own names, parsed by its `FromStr`.
fn cgroup_choice() -> impl TypedValueParser<Value = CgroupChoice> {
    PossibleValuesParser::new(CgroupChoice::NAMES).map(|s| {
        s.parse::<CgroupChoice>()
            .expect("one of the possible values")
    })
}

/// Who manages the simulated machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimPolicy {
    /// The kernel alone.
    None,
    /// corral's daemon, its own control loop in simulated time.
    Corral,
}
use std::path::PathBuf;

/// corral — a CPU resource manager for multicore and heterogeneous Linux
/// machines.
///
/// corral measures what each thread is (a CPU hog, a latency-critical
/// thread, light background work) and tells the kernel through cgroups,
/// which the fair scheduler alone cannot see. Start with `corral cpus` to see
/// how corral reads this machine.
#[derive(Debug, Parser)]
#[command(
    name = "corral",
    version,
    max_term_width = 100,
    after_help = "To read a fake tree instead of this machine's (tests, bug reports): \
                  --sysfs-root DIR (/sys), --proc-root DIR (/proc), --cgroup-root DIR \
                  (/sys/fs/cgroup), before or after the subcommand."
)]
pub struct Cli {
    #[command(flatten)]
    pub roots: Roots,
    #[command(subcommand)]
    pub command: Command,
}

/// Where the kernel's pseudo file systems are; change them only to read a
/// fake tree (tests, bug reports). Hidden from every subcommand's help
/// (most never read them); `corral --help` names them.
#[derive(Debug, Args)]
pub struct Roots {
    /// Root of sysfs.
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "DIR",
        default_value = "/sys"
    )]
    pub sysfs_root: PathBuf,
    /// Root of procfs.
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "DIR",
        default_value = "/proc"
    )]
    pub proc_root: PathBuf,
    /// Where the cgroup mounts that mountinfo lists under /sys/fs/cgroup are.
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "DIR",
        default_value = "/sys/fs/cgroup"
    )]
    pub cgroup_root: PathBuf,
}

// Parsed once per run: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show the CPUs and how many threads a parallel program should start.
    ///
    /// Lists every present CPU (state, capacity, core type, grouping), then
    /// counts the CPUs a parallel program can use: CPUs that exist count
    /// even while offline (a hot-plug governor brings them online
    /// under load); the process's affinity and cpuset limit them; a CPU quota
    /// caps the count, rounded up.
    Cpus(CpusArgs),
    /// Undo what a daemon that was killed or crashed left behind.
    ///
    /// Every thread found in corral's groups goes back to where the
    /// daemon's record (/run/corral/corral.json) says it came from, or to
    /// the hierarchy's root when the record does not name it; recorded
    /// nice values and slices are given back; corral's groups are removed.
    /// `corral run` does the same when it starts. Fit for a systemd unit's
    /// ExecStopPost=. Refused while the daemon that wrote the record runs.
    Restore(RestoreArgs),
    /// Run a command with its thread-count variables set from `corral cpus`.
    ///
    /// Sets OMP_NUM_THREADS, RAYON_NUM_THREADS and GOMAXPROCS to the
    /// recommendation, leaving any that is already set alone unless --force.
    /// The command replaces corral (exec), so it keeps corral's PID, signals
    /// and exit status.
    Exec(ExecArgs),
    /// Run the daemon: measure, classify and place threads through cgroups.
    ///
    /// Every interval it samples the threads in scope, classifies them
    /// (heavy, medium, light, latency-critical), plans groups and applies
    /// the difference. On SIGTERM or SIGINT it puts every thread back and
    /// removes its groups. Needs root unless --dry-run.
    Run(RunArgs),
    /// Show what a running daemon is doing.
    Status(StatusArgs),
    /// Explain one thread: its figures, class and why, group, and the share
    /// of a CPU it can count on through the cgroup hierarchy.
    Explain(ExplainArgs),
    /// Boost a thread that is handling user input: corral raises its
    /// priority (nice, a short EEVDF slice, a group of its own) and keeps
    /// other threads off its CPU until it blocks after running, exits, is
    /// unboosted, or --max-ms passes.
    Boost(BoostArgs),
    /// End a boost.
    Unboost(UnboostArgs),
    /// A live view of the daemon: its groups and CPUs, every thread with
    /// class, utilisation, peak and run-queue delay, and boosts as they
    /// happen.
    ///
    /// Keys: q quits, s changes the threads' order (utilisation, peak,
    /// run-queue delay, TID), arrows and PgUp/PgDn scroll.
    Top(TopArgs),
    /// Print the daemon's metrics in Prometheus text format.
    ///
    /// Threads per class, groups and their CPUs, step and sampler
    /// durations, boosts, changes, errors, the starvation guard's actions.
    /// `[metrics] listen` in the configuration serves the same text over
    /// HTTP for a Prometheus server to scrape.
    Metrics(MetricsArgs),
    /// Print or check the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print a shell completion script for bash, zsh, fish, elvish or
    /// PowerShell.
    ///
    /// For example `corral completions bash > /usr/share/bash-completion/completions/corral`
    /// (the Debian package installs bash's, zsh's and fish's).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the man pages (corral.1 and one per subcommand) into DIR.
    #[command(hide = true)]
    Man {
        /// Where to write them.
        dir: PathBuf,
    },
    /// Experiments on this machine's kernel.
    #[command(subcommand)]
    Lab(LabCommand),
    /// Simulate an rt-app workload on a model of the Linux scheduler.
    ///
    /// Models: EEVDF as in Linux 6.6+ (this machine's kernel) and CFS as in
    /// Linux 2.6.32-3.0 (the papers' kernels), each with hierarchical group
    /// shares, CFS bandwidth, pair-wise load balancing, the RT class above,
    /// CPU capacities and hot-plug.
    Sim(SimArgs),
    /// Record a workload's scheduler events and write them as a workload
    /// the simulator replays.
    ///
    /// Records, through a tracefs instance of corral's own, every thread of
    /// the command (or of --scope-pid's processes) and every thread they
    /// start: CPU bursts, sleeps, who wakes whom, forks and exits. The
    /// file is rt-app JSON with extension events that keep each wake-up
    /// tied to its waker (corral_wake, corral_block) and a periodic
    /// thread's wake-ups at their instants (corral_until), and the
    /// live figures of each thread for comparison: `corral sim FILE`
    /// replays it and prints the simulated figures beside the recorded
    /// ones, `--policy corral` predicts corral's effect. Needs root.
    Record(RecordArgs),
}

/// `--daemon-cost STEP_US,QUICK_US`.
#[derive(Debug, Clone, Copy)]
pub struct DaemonCostArg(pub corral_sim::corral::policy::DaemonCost);

impl std::str::FromStr for DaemonCostArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?}: want STEP_US,QUICK_US, e.g. 1500,300 (µs of CPU)");
        let (step, quick) = s.split_once(',').ok_or_else(bad)?;
        let us = |v: &str| v.trim().parse::<u64>().map_err(|_| bad());
        let (step, quick) = (us(step)?, us(quick)?);
        if step > 10_000_000 || quick > 10_000_000 {
            return Err(format!("{s:?}: a step of more than 10 s of CPU"));
        }
        Ok(DaemonCostArg(corral_sim::corral::policy::DaemonCost {
            step_ns: step * 1000,
            quick_ns: quick * 1000,
        }))
    }
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// The rt-app JSON workload.
    #[arg(required_unless_present_any = ["bench", "paper"])]
    pub workload: Option<PathBuf>,
    /// Also run the threads of this workload, after the workload's own:
    /// e.g. the machine's other threads that `corral lab validate --keep`
    /// traced beside a case (`live/others.json`), which reproduces the
    /// simulation it ran.
    #[arg(long, value_name = "FILE", requires = "workload")]
    pub beside: Option<PathBuf>,
    /// Platform file (TOML: kernel, hz, cpus or capacities, hotplug,
    /// groups); the options below override it.
    #[arg(long, value_name = "FILE")]
    pub platform: Option<PathBuf>,
    /// Number of CPUs (capacity 1024 each) [default: 2].
    #[arg(long, value_name = "N")]
    pub cpus: Option<usize>,
    /// Capacity of each CPU, e.g. 1024,1024,446,446 (sets the CPU count).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub capacities: Vec<u32>,
    /// Hot-plug events, e.g. "2s:cpu1=off,5s:cpu1=on".
    #[arg(long, value_name = "SPEC")]
    pub hotplug: Option<String>,
    /// cpu.shares of task groups, e.g. "/bg=52,/apps=1024".
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub group_shares: Vec<String>,
    /// CPU bandwidth of task groups, PATH=QUOTA_US/PERIOD_US, e.g. "/bg=50000/100000".
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub group_quota: Vec<String>,
    /// The kernel model: eevdf (Linux 6.6+), cfs (Linux 2.6.32), or an
    /// older run queue: linux24 (the goodness scan), mlq:N (paper 004's
    /// multi-level queue, MEASURE N), o1, bfs [default: eevdf].
    #[arg(long, value_name = "MODEL")]
    pub kernel: Option<corral_sim::models::Model>,
    /// EEVDF's sched_feat switches, as /sys/kernel/debug/sched/features
    /// takes them: NO_NAME turns NAME off, e.g. "NO_RUN_TO_PARITY,NO_PLACE_LAG"
    /// (PLACE_LAG, PLACE_DEADLINE_INITIAL, PLACE_REL_DEADLINE,
    /// RUN_TO_PARITY, PREEMPT_SHORT, DELAY_DEQUEUE, DELAY_ZERO, SIS_UTIL,
    /// WA_IDLE, WA_WEIGHT, WA_BIAS, NI_RANDOM; all on by
    /// default, as in Linux 6.18.5 and later).
    #[arg(long, value_name = "FEATURES")]
    pub sched_feat: Option<corral_sim::sched::features::Features>,
    /// Simulated seconds (default: the workload's duration, else 10).
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Seed for anything random; recorded in the summary: the EEVDF
    /// model's own draws (NI_RANDOM's, each CPU's generator started from
    /// it) and --phases' phases. The same input and seed give the same
    /// run.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write a Chrome/Perfetto trace (open it in ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Write an SVG Gantt chart of --svg-window.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// The chart's time window, FROM..TO (e.g. 1s..1.2s, 0..50ms) [default:
    /// 200 ms from the first thread's first run].
    #[arg(long, value_name = "FROM..TO", requires = "svg")]
    pub svg_window: Option<String>,
    /// Write rt-app log files (one per thread) into this directory.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// Measure the simulator's speed instead of running a workload.
    #[arg(long)]
    pub bench: bool,
    /// Who manages the simulated machine [default: none].
    #[arg(long, value_name = "POLICY")]
    pub policy: Option<SimPolicy>,
    /// corral's configuration for --policy corral and --compare (default:
    /// the built-in one).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The daemon's own CPU time for --policy corral and --compare,
    /// STEP_US,QUICK_US: a thread that runs that long at each full step
    /// and each quick step (`corral run` logs both when it stops, as
    /// "own CPU: … (corral sim --daemon-cost A,B)") [default: none, the
    /// daemon costs nothing].
    #[arg(long, value_name = "STEP_US,QUICK_US")]
    pub daemon_cost: Option<DaemonCostArg>,
    /// What if corral managed it: replay the workload with no policy and
    /// under corral, and print the predicted effect side by side (each
    /// periodic thread, the programs that use the most CPU, the whole).
    #[arg(long, conflicts_with_all = ["policy", "trace", "svg", "log_dir", "bench", "paper"])]
    pub compare: bool,
    /// With --compare: replay a recording's periodic threads (cyclictest, a
    /// frame loop) at this many phases of their grids, the first as
    /// recorded, and quote the medians (a live run draws its phase anew)
    /// [default: 9 for a recording with periodic threads, else 1].
    #[arg(long, value_name = "N", requires = "compare", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub phases: Option<u32>,
    /// Reproduce a paper's experiment (000–004, or all) from the bundled
    /// scenarios and print the paper's figures beside the simulated ones.
    #[arg(long, value_name = "PAPER", value_parser = ["000", "001", "002", "003", "004", "all"], conflicts_with_all = ["workload", "bench"])]
    pub paper: Option<String>,
    /// With --paper: write an HTML report (tables and SVG charts) into DIR.
    #[arg(long, value_name = "DIR", requires = "paper")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Configuration file (TOML); `corral config default` prints every key
    /// [default: none, the built-in defaults].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Sampling interval, overriding the configuration's
    /// `daemon.interval_ms` [default: 1000].
    #[arg(long, value_name = "MS")]
    pub interval: Option<u64>,
    /// Print each plan and the changes it would make; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run one step (two samples, an interval apart, so rates exist) and exit.
    #[arg(long)]
    pub once: bool,
    /// cgroup interface: v1, v2, threads (no cgroup: each thread's own
    /// affinity, nice and slice; the default on a systemd host) or auto,
    /// overriding the configuration.
    #[arg(long, value_name = "VERSION", value_parser = cgroup_choice())]
    pub cgroup: Option<CgroupChoice>,
    /// The socket for status, explain and boost (`none` for no socket),
    /// overriding the configuration's `daemon.socket` [default:
    /// /run/corral.sock; a user's dry run: $XDG_RUNTIME_DIR/corral.sock].
    #[arg(long, value_name = "PATH", env = "CORRAL_SOCKET")]
    pub socket: Option<PathBuf>,
    /// Manage only this process and its descendants (repeatable).
    #[arg(long, value_name = "PID")]
    pub scope_pid: Vec<u32>,
    /// Manage only threads at or under this cgroup path of the cpu
    /// hierarchy, e.g. /lab (repeatable).
    #[arg(long, value_name = "PATH")]
    pub scope_cgroup: Vec<String>,
    /// Name of corral's own group under each cgroup mount (must start with
    /// "corral"); tests and experiments use their own.
    #[arg(long, value_name = "NAME", default_value = "corral", hide = true)]
    pub group_name: String,
    /// Which log lines to write: error, warning, notice, info (start,
    /// stop, hot-plug, the starvation guard) or debug (also every
    /// decision, with its reason). On a terminal lines carry a UTC
    /// timestamp and level; under systemd a journal priority prefix.
    #[arg(long, value_name = "LEVEL", default_value = "info", value_parser = ["error", "warning", "notice", "info", "debug"])]
    pub log_level: String,
    /// Where the crash-safe record of what corral changed is kept
    /// (`<group>.json`); a start, or `corral restore`, undoes what a killed
    /// daemon left behind from it.
    #[arg(long, value_name = "DIR", default_value = "/run/corral")]
    pub state_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// cgroup interface: v1, v2, threads or auto (the record's own layout).
    #[arg(long, value_name = "VERSION", value_parser = cgroup_choice(), default_value = "auto")]
    pub cgroup: CgroupChoice,
    /// Where the daemon keeps its record (as `corral run --state-dir`).
    #[arg(long, value_name = "DIR", default_value = "/run/corral")]
    pub state_dir: PathBuf,
    /// corral's group name (as `corral run --group-name`).
    #[arg(long, value_name = "NAME", default_value = "corral", hide = true)]
    pub group_name: String,
}

/// The running daemon's socket, for its clients (`status`, `explain`,
/// `boost`, `unboost`, `metrics`, `top`).
#[derive(Debug, Args)]
pub struct Socket {
    /// The daemon's socket.
    #[arg(
        long = "socket",
        value_name = "PATH",
        env = "CORRAL_SOCKET",
        default_value = "/run/corral.sock"
    )]
    pub path: PathBuf,
}

#[derive(Debug, Args)]
pub struct TopArgs {
    #[command(flatten)]
    pub socket: Socket,
    /// How often the view asks the daemon, ms.
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=60_000))]
    pub refresh_ms: u64,
    /// Print one frame as text and exit.
    #[arg(long)]
    pub once: bool,
}

#[derive(Debug, Args)]
pub struct MetricsArgs {
    #[command(flatten)]
    pub socket: Socket,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub socket: Socket,
    /// Print JSON for programs.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The thread id.
    pub tid: u32,
    #[command(flatten)]
    pub socket: Socket,
    /// Print JSON for programs.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct BoostArgs {
    /// The thread id.
    pub tid: u32,
    /// The cap, ms (default: the daemon's `[boost] default_max_ms`).
    #[arg(long, value_name = "MS")]
    pub max_ms: Option<u64>,
    #[command(flatten)]
    pub socket: Socket,
}

#[derive(Debug, Args)]
pub struct UnboostArgs {
    /// The thread id.
    pub tid: u32,
    #[command(flatten)]
    pub socket: Socket,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the default configuration, commented.
    Default,
    /// Validate a configuration file: every error, each with its line and
    /// key (exit 2 if any).
    Check {
        /// The file to check [default: /etc/corral/corral.toml].
        #[arg(default_value = "/etc/corral/corral.toml")]
        file: PathBuf,
    },
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

/// Two different CPUs as `A,B`.
fn parse_cpu_pair(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("expected two CPUs as A,B, found {s:?}"))?;
    let cpu = |x: &str| {
        x.trim()
            .parse::<usize>()
            .map_err(|_| format!("{x:?} is not a CPU number"))
    };
    let (a, b) = (cpu(a)?, cpu(b)?);
    if a == b {
        return Err(format!("two different CPUs are needed, not {a} twice"));
    }
    Ok((a, b))
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

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to write the recording.
    #[arg(
        short,
        long,
        value_name = "FILE",
        default_value = "corral-recording.json"
    )]
    pub output: PathBuf,
    /// Stop after S seconds [default: when the command exits; 10 with
    /// --scope-pid]. With --scope-pid recording also stops once every
    /// thread in scope has exited.
    #[arg(long, value_name = "S")]
    pub seconds: Option<f64>,
    /// Record this running process, its threads and everything it starts
    /// (repeatable).
    #[arg(long, value_name = "PID", conflicts_with = "command")]
    pub scope_pid: Vec<u32>,
    /// Convert a text trace instead of recording: the kernel's trace_pipe,
    /// `trace-cmd report` or `perf script` output of the sched events
    /// (every task in it, or --scope-pid's trees).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["seconds", "command"])]
    pub from: Option<PathBuf>,
    /// Write only what rt-app itself runs: each wake-up by another thread
    /// becomes a sleep as long as the live one.
    #[arg(long)]
    pub rtapp: bool,
    /// Also keep the trace's text in FILE (what --from reads; it carries
    /// the recorder's start, scope, each thread's CPUs and cgroup as `# corral`
    /// lines, so --from makes the same recording).
    #[arg(long, value_name = "FILE", conflicts_with = "from")]
    pub raw: Option<PathBuf>,
    /// Trace buffer per CPU, KiB.
    #[arg(long, value_name = "KIB", default_value_t = 8192)]
    pub buffer_kb: u32,
    /// Do not measure where this kernel places wake-ups before recording
    /// a command. By default a recording carries that figure (a platform's
    /// vcpu_pack_util, which `corral sim` then replays with): measured once
    /// per boot, in about 3 s, by `corral record -- CMD` or by `corral lab
    /// placement`, and kept in /run/corral/placement.json. (--scope-pid
    /// never measures: its workload already runs.)
    #[arg(long, conflicts_with = "from")]
    pub no_probe: bool,
    /// The command to run and record.
    #[arg(last = true, value_name = "CMD")]
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
    /// Paper 002: a 10 ms / 1 ms periodic thread in a 52-share group beside
    /// four hogs in a 1024-share group; wake-up latency without and with
    /// corral. Needs root; creates and removes its own cgroups.
    LatencyCritical(LatencyArgs),
    /// Paper 000: a CPU-bound benchmark beside a background mix wanting
    /// ~1.1 CPUs; completion time alone, with the mix, and with corral.
    /// Needs root; creates and removes its own cgroups.
    Heavy(HeavyArgs),
    /// Paper 001: a 50 ms input handler beside four hogs on 2 CPUs; response
    /// time alone, baseline, boosted by its dispatcher, and boosted with
    /// hog eviction. Needs root; creates and removes its own cgroups.
    Interactive(InteractiveArgs),
    /// How fast a boost takes effect: N boost requests, each timed from the
    /// request to the reply the daemon sends once the thread is raised.
    BoostLatency {
        #[arg(long, value_name = "N", default_value_t = 1000)]
        requests: usize,
        /// Pause between a request's unboost and the next request, ms (an
        /// input event is rarely back to back with the last one; an idle
        /// machine is the slow case for cgroup writes).
        #[arg(long, value_name = "MS", default_value_t = 20)]
        gap_ms: u64,
        #[arg(long)]
        json: bool,
    },
    /// The daemon's own cost: CPU and memory with many sleeping threads and
    /// some hogs in scope (a benchmark). Needs root.
    Overhead(OverheadArgs),
    /// The simulator against this kernel: the same rt-app files run with
    /// the real rt-app here and in the simulator (EEVDF, this machine's
    /// CPUs); per task CPU share and wake-up latency side by side. Needs
    /// root and rt-app; creates and removes its own cgroups.
    Validate(ValidateArgs),
    /// The simulator's PELT against this kernel's: periodic threads of
    /// four shapes, their `se.avg.util_avg` read from /proc at each
    /// wake-up and during each sleep, beside the model driven by the same
    /// instants. Exits 1 unless the error is within LISA's tolerance
    /// (mean 2 %, largest 5 % of 1024). Needs no root; two CPUs.
    Pelt(PeltArgs),
    /// What the scheduler's own work costs here: a context switch, the
    /// wake-up of a thread on another CPU, a migration's cache refill, a
    /// tick (medians; as lmbench's lat_ctx and perf bench sched pipe
    /// measure them). Prints a platform file's `[costs]` section for
    /// `corral sim --platform`. No root; two CPUs.
    Costs(CostsArgs),
    /// Where this kernel puts a thread woken by a busy CPU while the
    /// thread's previous CPU idles: a thread on CPU A, busier step by step
    /// (its duty 20 % to 80 %), wakes one that last ran on idle CPU B (400
    /// times, 250 kept; a round left out is drawn again). As root it keeps
    /// the threshold in /run/corral/placement.json for this boot's
    /// recordings (`corral record`; remove the file to measure again). Upstream Linux puts every one on B; a guest kernel
    /// that packs wake-ups onto busy vCPUs keeps them on A while A's
    /// utilization and the wakee's sum under a threshold, which this
    /// prints (a platform file's `vcpu_pack_util`); then the same at the
    /// lowest duties with a second thread queued on A at each wake-up
    /// (here none stays: only a CPU running its one task packs). Then
    /// whether the idle CPU pulls a packed thread while both spin 10 ms,
    /// and timer wake-ups: a thread's timer fires on its previous CPU,
    /// busy, while the other idles (alone and with a second thread
    /// queued). No root; two CPUs; about 9 s.
    Placement(CostsArgs),
    /// A real workload, the kernel alone against corral: a parallel cargo
    /// build of this workspace (offline, fresh target directory) with
    /// cyclictest and a 60 Hz frame loop beside it, and with --stress
    /// stress-ng over 1 to 2x the online CPUs. The corral variant starts
    /// `corral run --scope-pid <this process>` as a user does. Medians over
    /// runs, corral over baseline, and whether each goal was met. Needs
    /// root, cargo, cyclictest (and stress-ng); creates and removes its own
    /// cgroups.
    Real(RealArgs),
    /// How fast the daemon reacts: a new latency-critical thread placed, a
    /// new hog given a dedicated CPU, and that CPU given back when the hog
    /// dies, each timed through the socket (polled every 5 ms) of a `corral
    /// run --scope-pid <this process>`. Needs root; creates and removes its
    /// own cgroups.
    Reaction(ReactionArgs),
    /// One unprivileged user opens many idle connections to the daemon's
    /// socket; how many it keeps and refuses, and how fast root's `status`
    /// is answered meanwhile (goal: < 100 ms). Needs root.
    Flood(FloodArgs),
    /// Issue 14's kill test: a churning workload; each iteration starts the
    /// daemon, SIGKILLs it at a random moment, starts it again (which puts
    /// back what the killed one left) and stops it; counts groups left and
    /// threads not back where they were. Needs root and stress-ng.
    Crash(CrashArgs),
    /// The starvation guard's experiment: a plan that starves a light
    /// thread (the shared group at 2 shares beside two hogs a rule makes
    /// latency-critical), the guard off and on; every workload thread's CPU per
    /// second against the floor (5 % of a CPU). Needs root.
    Starve(StarveArgs),
    /// The medium guarantee: a periodic thread wanting 0.35 of a CPU,
    /// alone, then beside 4 CPU hogs per CPU its program starts; without
    /// corral, with corral on cgroups (the medium group's weight) and on
    /// each thread's own levers (its nice, as on a systemd host). Needs
    /// root.
    Medium(MediumArgs),
    /// Issue 14's churn soak: stress-ng --fork 1 --pthread 1 (and with
    /// --clone-max a clone storm) under the daemon for minutes; its RSS,
    /// open files and CPU every 10 s, errors in its log, and whether
    /// SIGTERM leaves nothing. Needs root and stress-ng.
    Soak(SoakArgs),
    /// Every parser of outside input (configuration, rt-app and platform
    /// files, socket requests, CPU lists, procfs lines, process connector
    /// messages, the state record) fed mutated and random inputs: panics
    /// and hangs (> 2 s) are failures. No root needed.
    Fuzz(FuzzArgs),
    /// The scenarios of the test VM (scripts/vm-test), run inside it:
    /// v2 backend, hot-plug, the CPU count detector, 4 CPUs. Refuses to
    /// run unless the kernel command line has corral.vmtest=1.
    #[command(hide = true)]
    VmGuest {
        /// Write the JSON report here.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// The workload programs the experiments start (for experiments and
    /// by hand).
    #[command(subcommand)]
    Work(WorkCommand),
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Seconds each case runs (live and simulated).
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub seconds: f64,
    /// Only the cases whose name contains this.
    #[arg(long, value_name = "NAME")]
    pub case: Option<String>,
    /// Runs of each case, live and simulated; every figure is the median
    /// over them (one live run is one draw: its latencies vary by more
    /// than 20 % from run to run here).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub runs: u32,
    /// Keep the live and simulated rt-app logs in this directory, with
    /// what --from needs to simulate the live runs again.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Simulate the scheduler's own work as free: do not measure this
    /// machine's scheduling costs first (as `corral lab costs` does) to
    /// give them to the simulated machine. With --from: do not give it
    /// the costs measured then
    #[arg(long)]
    pub no_costs: bool,
    /// The default (kept for scripts that ask for it).
    #[arg(long, hide = true, conflicts_with = "no_costs")]
    pub costs: bool,
    /// Do not trace the machine's other threads (kernel threads, other
    /// programs, the lab itself) during the live runs to replay them in
    /// the simulation; it then simulates the workload alone.
    #[arg(long)]
    pub no_others: bool,
    /// Simulate wake-ups placed and balanced as upstream Linux does,
    /// without measuring this kernel's placement first. By default it is
    /// measured (as `corral lab placement`, about 8 s) and, if this kernel
    /// packs work onto busy CPUs, the simulated one does too
    /// (`vcpu_pack_util`; on three kept sets of this machine's runs, 332
    /// of 420 measures met against 319 placed as upstream: docs/sim.md)
    #[arg(long)]
    pub no_pack: bool,
    /// The default (kept for scripts that ask for it).
    #[arg(long, hide = true, conflicts_with = "no_pack")]
    pub pack: bool,
    /// Run nothing live: simulate again, with this build's simulator, the
    /// live runs kept in DIR by an earlier `--keep DIR`, and compare them
    /// as then (a model change scored on the same live draws); DIR is only
    /// read. The simulated machine gets the
    /// costs measured then (unless --no-costs) and the packing measured
    /// then (unless --no-pack; none if none was)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["seconds", "runs", "keep", "no_others"])]
    pub from: Option<PathBuf>,
    /// Seed of the simulation's random draws (as `corral sim --seed`:
    /// EEVDF's NI_RANDOM). The kernel's are random; simulating the same
    /// live runs under a few seeds shows how much of a score is the
    /// draw's. Default 0, or with --from the seed the runs were kept with
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RealArgs {
    /// Runs, each one baseline and one corral variant (in alternating order).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub runs: u32,
    /// cargo's -j.
    #[arg(long, value_name = "J", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// Also time stress-ng --cpu N for N = 1 to 2x the online CPUs.
    #[arg(long)]
    pub stress: bool,
    /// Also run the kernel alone with cyclictest at nice -20 and at
    /// SCHED_FIFO priority 1 beside the same build: the bounds of what any
    /// placement could give a SCHED_OTHER thread (two more builds a run).
    #[arg(long)]
    pub bounds: bool,
    /// The daemon's --interval (default: its configured one).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(corral_core::config::INTERVAL_MS))]
    pub interval: Option<u64>,
    /// The daemon's configuration file (default: the built-in one), to try a
    /// policy change on the real workload.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The workspace to build (default: the one corral was built from).
    #[arg(long, value_name = "DIR")]
    pub source: Option<PathBuf>,
    /// Keep the logs, cyclictest histograms and daemon status snapshots here.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print JSON for programs instead of tables.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// Inputs per parser.
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub cases: u64,
    /// Only the parsers whose name contains this.
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// Seed of the generator (a run is reproducible from it).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SoakArgs {
    #[arg(long, value_name = "M", default_value_t = 10.0)]
    pub minutes: f64,
    /// The daemon's --interval (default: its configured one).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(corral_core::config::INTERVAL_MS))]
    pub interval: Option<u64>,
    /// Add a clone storm of at most N live clones (stress-ng --clone 1
    /// --clone-max N) in 20 s rounds; 0: none. Each round is a new
    /// stress-ng: Debian 12's leaves finished clones unreaped until it
    /// ends (~170 zombies a second here), which in one run would fill
    /// pid_max.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub clone_max: u32,
    /// Print JSON for programs instead of a summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StarveArgs {
    /// Seconds per variant.
    #[arg(long, value_name = "S", default_value_t = 20, value_parser = clap::value_parser!(u32).range(5..=3600))]
    pub seconds: u32,
    /// Seconds at the start not held to the floor (placing, one guard interval).
    #[arg(long, value_name = "S", default_value_t = 3)]
    pub settle: u32,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MediumArgs {
    /// Seconds measured per variant (after the thread's time alone and 2 s
    /// of the hogs).
    #[arg(long, value_name = "S", default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..=3600))]
    pub seconds: u32,
    /// The thread's CPU per 10 ms period, ms (3.0-5.0 is medium).
    #[arg(long, value_name = "MS", default_value_t = 3.5)]
    pub run_ms: f64,
    /// Seconds the thread runs alone first (to be classified).
    #[arg(long, value_name = "S", default_value_t = 6)]
    pub alone: u32,
    /// CPU hogs per online CPU.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub hogs_per_cpu: u32,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CrashArgs {
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub iterations: u32,
    /// The kill comes at least this long after the daemon answers.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub min_kill_ms: u64,
    /// … and at most this long.
    #[arg(long, value_name = "MS", default_value_t = 1500)]
    pub max_kill_ms: u64,
    /// Seed of the kill moments.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Print JSON for programs instead of a summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FloodArgs {
    /// Idle connections the user opens.
    #[arg(long, value_name = "N", default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..=5000))]
    pub clients: u32,
    /// The user (default: nobody, 65534).
    #[arg(long, value_name = "UID", default_value_t = 65534, value_parser = clap::value_parser!(u32).range(1..))]
    pub uid: u32,
    /// Root's `status` requests meanwhile.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub requests: u32,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReactionArgs {
    /// Runs, each with a daemon of its own; medians are reported.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub runs: u32,
    /// The daemon's configuration file (default: the built-in one).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print JSON for programs instead of tables.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LabDaemonArgs {
    /// The daemon's interval during the experiment.
    #[arg(long, value_name = "MS", default_value_t = 250)]
    pub interval: u64,
    /// The daemon's configuration (its interval is replaced by --interval).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Repeat the whole experiment and report each run and the medians.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub runs: u32,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LatencyArgs {
    /// Periods measured in each variant.
    #[arg(long, value_name = "N", default_value_t = 400, value_parser = clap::value_parser!(u64).range(10..))]
    pub periods: u64,
    #[command(flatten)]
    pub daemon: LabDaemonArgs,
}

#[derive(Debug, Args)]
pub struct HeavyArgs {
    /// Length of the benchmark alone, seconds.
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub seconds: f64,
    #[command(flatten)]
    pub daemon: LabDaemonArgs,
}

#[derive(Debug, Args)]
pub struct InteractiveArgs {
    /// Events per variant.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u64).range(5..))]
    pub events: u64,
    #[command(flatten)]
    pub daemon: LabDaemonArgs,
}

#[derive(Debug, Args)]
pub struct OverheadArgs {
    /// Sleeping threads in scope.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub threads: u32,
    /// CPU hogs in scope.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub hogs: u32,
    /// Measurement length.
    #[arg(long, value_name = "S", default_value_t = 60)]
    pub seconds: u64,
    /// The daemon's interval.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub interval: u64,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum WorkCommand {
    /// Wake every period on an absolute timer, burn CPU, record lateness.
    Periodic {
        #[arg(long, value_name = "MS")]
        period_ms: f64,
        #[arg(long, value_name = "MS")]
        run_ms: f64,
        /// Time before recording starts.
        #[arg(long, value_name = "MS", default_value_t = 0)]
        warmup_ms: u64,
        /// Periods to record.
        #[arg(long, value_name = "N", default_value_t = 300)]
        periods: usize,
        /// Set this thread's EEVDF slice first (sched_setattr, Linux 6.12+).
        #[arg(long, value_name = "US")]
        slice_us: Option<u64>,
        /// Run late periods back to back (rt-app's timer) instead of
        /// skipping them (cyclictest's).
        #[arg(long)]
        catch_up: bool,
    },
    /// Spin for ever (a CPU hog).
    Hog,
    /// Paper 001's input path: a dispatcher delivers an event every PERIOD
    /// to a handler thread doing TE of CPU work; prints response times.
    Interactive {
        #[arg(long, value_name = "MS", default_value_t = 50.0)]
        te_ms: f64,
        #[arg(long, value_name = "MS", default_value_t = 200)]
        period_ms: u64,
        #[arg(long, value_name = "N", default_value_t = 30)]
        events: usize,
        /// Ask the daemon at this socket to boost the handler before each
        /// event (framework-assisted).
        #[arg(long, value_name = "PATH")]
        boost_socket: Option<PathBuf>,
        /// The boost's cap.
        #[arg(long, value_name = "MS")]
        boost_max_ms: Option<u64>,
    },
    /// A 60 Hz render loop: each period, WORK of CPU; a frame is missed
    /// when its work ends after the end of its period (late frames skip
    /// periods, never catch up). Runs until SIGINT or SIGTERM, or --seconds.
    Frame {
        /// The frame period (16667: 60 Hz).
        #[arg(long, value_name = "US", default_value_t = 16_667, value_parser = clap::value_parser!(u64).range(100..))]
        period_us: u64,
        /// CPU time each frame's work takes.
        #[arg(long, value_name = "US", default_value_t = 4_000)]
        work_us: u64,
        /// Stop after this long.
        #[arg(long, value_name = "S")]
        seconds: Option<f64>,
    },
    /// Start N threads that sleep for ever.
    Sleepers {
        #[arg(long, value_name = "N")]
        threads: u32,
    },
    /// Fixed arithmetic: wall time, CPU time and migrations.
    Bench {
        #[arg(long, value_name = "N")]
        ops: u64,
    },
    /// Open N idle connections to a daemon's socket (as user UID, when
    /// root), print how many it kept and refused, and hold them until
    /// killed.
    Clients {
        #[arg(long, value_name = "PATH")]
        socket: PathBuf,
        #[arg(long, value_name = "N", default_value_t = 300)]
        count: usize,
        #[arg(long, value_name = "UID")]
        uid: Option<u32>,
    },
}

#[derive(Debug, Args)]
pub struct CostsArgs {
    /// The two CPUs to measure on (default: the last two online).
    #[arg(long, value_name = "A,B", value_parser = parse_cpu_pair)]
    pub cpus: Option<(usize, usize)>,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PeltArgs {
    /// Seconds per shape (the first second is warm-up).
    #[arg(long, value_name = "S", default_value_t = 4.0)]
    pub seconds: f64,
    /// The periodic thread's CPU and the sampler's (default: the last
    /// two online, the thread on the last).
    #[arg(long, value_name = "A,B", value_parser = parse_cpu_pair)]
    pub cpus: Option<(usize, usize)>,
    /// Print JSON for programs instead of a table.
    #[arg(long)]
    pub json: bool,
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
