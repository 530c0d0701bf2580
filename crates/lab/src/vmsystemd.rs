//! The systemd guest's scenario (`scripts/vm-test`'s `6.12-systemd`:
//! Debian with systemd as PID 1 and dbus, pure cgroup v2): corral as
//! `corral.service`, the unit file of `dist/systemd/`, installed by the
//! guest's start script with corral's Debian package (`scripts/deb`,
//! `dpkg -i`).
//!
//! What it checks (ARCHITECTURE.md, "On a systemd host"):
//! - the unit file passes `systemd-analyze verify`;
//! - `corral run --cgroup v2` refuses systemd's v2 tree (exit 78);
//! - two CPU hogs, each in a transient unit of its own (`systemd-run`),
//!   and corral.service as shipped: it reaches `active` through
//!   `READY=1`, places through each thread's own levers and creates no
//!   cgroup; each hog gets a CPU of its own by affinity, and stays in its
//!   unit (`/proc/PID/cgroup` = the unit's `ControlGroup`);
//! - `systemctl kill -s KILL corral` → systemd starts it again → it puts
//!   back what the killed one did and takes the record over;
//! - `systemctl stop` of a managed unit ends its process;
//! - `systemctl stop corral` gives every thread its affinity back;
//! - paper 002 in units, on two CPUs (the others offline, so that the
//!   host's two CPUs need not time-share the vCPUs): a 10 ms / 1 ms frame
//!   loop in a unit of `CPUWeight=5` beside a unit of three CPU hogs: corral finds it
//!   latency-critical and has systemd lift its unit to the default weight
//!   (runtime), the only attribute it changes; killed meanwhile, corral is
//!   started again and the unit is lifted under the new daemon; undone at
//!   its stop; fewer frames are missed with corral than without (pooled
//!   over three alternating pairs of runs, the unit lifted in most);
//! - paper 000 in units, on two CPUs too: a CPU-bound benchmark alone,
//!   beside a unit of four periodic threads wanting 1.1 CPUs (`lab
//!   heavy`'s mix), and beside them with corral: it gets a CPU of its own and,
//!   from then on, a larger CPU share than beside the mix alone (or a
//!   whole CPU where the kernel had left it one: [`gained`]; corral's
//!   own threads stay off that CPU), in one of two attempts
//!   (under TCG the mix sometimes falls behind as the benchmark arrives,
//!   and corral's plan then dedicates none; completion times printed,
//!   MEASURED);
//! - the medium guarantee in a unit: a thread wanting 0.35 of a CPU,
//!   classified medium, then beside sixteen hogs its program starts: with
//!   corral its nice is lowered (CPU shares with and without printed,
//!   MEASURED: under TCG the nice moves it little);
//! - paper 001 in a unit: a 50 ms input handler alone, beside eight CPU
//!   hogs in its unit (as a session's programs share its scope), and
//!   beside them with its dispatcher asking corral.service for a boost
//!   before each event: every request answered, and from each reply on
//!   the boosted events end sooner (the call itself is slow under TCG;
//!   response times with and without it printed, MEASURED);
//! - every cgroup attribute file outside corral.service's and the test
//!   units' own cgroups reads the same before, while corral manages, and
//!   after;
//! - the package: its files in place and its commented configuration
//!   valid; `systemctl enable --now` with metrics turned on in
//!   /etc/corral/corral.toml (status names the file, a scrape of
//!   /metrics, the journal's line, `corral top --once`); the verbs on the
//!   system bus with the caller's uid from the bus; `dpkg --purge`
//!   leaves no file, link, unit, cgroup or package record.

use crate::vmguest::Check;
use crate::work::percentile_of;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const CGROUP: &str = "/sys/fs/cgroup";
const UNIT: &str = "corral.service";
/// The test's workload units.
const HOGS: [&str; 2] = ["corral-test-hog1.service", "corral-test-hog2.service"];
/// Paper 002's case: a periodic thread (10 ms, 1 ms of work) in a unit of
/// low weight, beside a unit that keeps every CPU busy.
const TICK: &str = "corral-test-tick.service";
const LOAD: &str = "corral-test-load.service";
/// The tick unit's `CPUWeight` (52 cpu.shares in v2 units, as paper 002).
const TICK_WEIGHT: &str = "5";
/// How long each measured run of the tick lasts.
const TICK_SECONDS: u64 = 10;
/// Runs of the tick a side, alternating without and with corral.
const TICK_PAIRS: usize = 3;
/// Paper 000's case: a CPU-bound benchmark in a unit of its own beside a
/// unit of periodic threads wanting 1.1 of the 2 CPUs left online
/// ([`TwoCpus`]), none of them heavy.
const BENCH: &str = "corral-test-bench.service";
const MIX: &str = "corral-test-mix.service";
/// The benchmark's length alone, seconds (its ops are calibrated to it).
const BENCH_SECONDS: f64 = 6.0;
/// The mix's runs per 10 ms: `lab heavy`'s background (2, 2, 3.5 and
/// 3.5 ms, 1.1 CPUs of 2); the 3.5-ms threads are medium. A late period
/// is skipped (as a frame is), not repaid: a mix that repays its late
/// periods back to back (`--catch-up`, rt-app's `timer`) becomes
/// CPU-bound whenever it falls behind, and on two CPUs one such thread
/// beside the benchmark is two threads wanting the one core corral can
/// give: it then rightly dedicates none ("3 threads want a whole CPU and
/// at most 1 can have one" in both attempts of a CI run), which is
/// another case than paper 000's.
const MIX_RUN_MS: &str = "2 2 3.5 3.5";
/// The medium guarantee's case: a thread wanting 0.35 of a CPU, then
/// beside sixteen hogs in its unit on 4 CPUs (4/17 = 0.24 of a CPU each
/// at nice 0; with corral it gets nice -7: 4904 / (4904 + 4 · 1024) =
/// 0.54 of a run queue with four of them).
const MEDIUM: &str = "corral-test-medium.service";
const MEDIUM_HOGS: u32 = 16;
const MEDIUM_RUN_MS: f64 = 3.5;
const MEDIUM_ALONE_S: u64 = 6;
/// Paper 001's case: an input handler doing [`INPUT_TE_MS`] of CPU per
/// event, an event every [`INPUT_PERIOD_MS`], beside [`INPUT_HOGS`] nice-0
/// CPU hogs (two a CPU, as `lab interactive`'s four on 2 CPUs) in the
/// same unit, as a desktop session's programs share its scope: weights
/// then compete per thread, which is what a boost changes (across units
/// the units' weights decide, and the handler's unit already gets most of
/// a CPU).
const INPUT: &str = "corral-test-input.service";
const INPUT_HOGS: u32 = 8;
const INPUT_TE_MS: u64 = 50;
const INPUT_PERIOD_MS: u64 = 300;
const INPUT_EVENTS: u64 = 20;
/// corral.service's socket as shipped (`daemon.socket`).
const SOCKET: &str = "/run/corral.sock";

/// `PROGRAM ARGS`: (success, stdout + stderr, trimmed).
fn output(program: &str, args: &[&str]) -> (bool, String) {
    match Command::new(program).args(args).output() {
        Ok(o) => (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
            .trim()
            .to_string(),
        ),
        Err(e) => (false, format!("cannot run {program}: {e}")),
    }
}

/// `systemctl ARGS`.
fn systemctl(args: &[&str]) -> (bool, String) {
    output("systemctl", args)
}

/// How long `corral run` from a shell may take to refuse.
const SHELL_LIMIT: Duration = Duration::from_secs(60);

/// `PROGRAM ARGS` with its stderr, killed after `limit`: (exit code,
/// stderr).
fn run_for(program: &str, args: &[&str], limit: Duration) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = match Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return (None, format!("cannot run {program}: {e}")),
    };
    let ended = wait_until(limit, || matches!(child.try_wait(), Ok(Some(_))));
    if !ended {
        let _ = child.kill();
    }
    let code = child.wait().ok().and_then(|s| s.code());
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    if !ended {
        err.push_str(&format!(
            " (still running after {} s: killed)",
            limit.as_secs()
        ));
    }
    (code, err)
}

/// One property of corral.service (`systemctl show -p NAME --value`).
fn prop(name: &str) -> String {
    unit_prop(UNIT, name)
}

/// One property of `unit`.
fn unit_prop(unit: &str, name: &str) -> String {
    systemctl(&["show", unit, "-p", name, "--value"]).1
}

/// A unit watched while a measured run goes on, by reading its cgroup's
/// files and its main process's `/proc` entries. `systemctl show` is a
/// process: polled twice every 100 ms it took a share of the guest's CPUs
/// during the very runs it watched (under TCG each one runs for tens of
/// ms), and each one was a young CPU-bound thread to corral, which counts
/// those as wanting a whole CPU: dedications came and went with them
/// (sets `3`, `0-3`, `3`, `0-3` in one run of paper 000 on a slow host).
/// systemd is asked only for the main PID, once, and again when it is gone.
struct UnitWatch {
    unit: &'static str,
    dir: std::path::PathBuf,
    pid: Option<String>,
}

impl UnitWatch {
    /// A transient service of `systemd-run` without `--slice`.
    fn new(unit: &'static str) -> UnitWatch {
        UnitWatch {
            unit,
            dir: Path::new(CGROUP).join("system.slice").join(unit),
            pid: None,
        }
    }

    /// Whether a process of the unit still runs (its cgroup holds one).
    fn running(&self) -> bool {
        std::fs::read_to_string(self.dir.join("cgroup.procs")).is_ok_and(|t| !t.trim().is_empty())
    }

    /// The main PID, "0" when there is none.
    fn main_pid(&mut self) -> String {
        let alive = |p: &String| Path::new("/proc").join(p).exists();
        if !self.pid.as_ref().is_some_and(alive) {
            let p = unit_prop(self.unit, "MainPID");
            self.pid = (p != "0" && !p.is_empty()).then_some(p);
        }
        self.pid.clone().unwrap_or_else(|| "0".into())
    }

    /// The unit's `cpu.weight` as the kernel has it (systemd writes its
    /// `CPUWeight=` there).
    fn weight(&self) -> String {
        std::fs::read_to_string(self.dir.join("cpu.weight"))
            .map(|t| t.trim().to_string())
            .unwrap_or_default()
    }
}

/// CPUs 2 and up offline while it lives, back online at its drop: the
/// effect checks (papers 002 and 000) run on two vCPUs, one for each of
/// the host's two CPUs. On four, the host time-shares the vCPUs, and a
/// vCPU waits for the host for milliseconds at a time while the guest
/// believes it runs: under a loaded host a 10 ms / 1 ms frame loop then
/// missed 31 % of its frames with its unit lifted or not (31 % -> 32 %
/// with a CPU hog beside the guest; 34 % -> 35 % in a CI run), and the
/// benchmark beside the mix got 0.97-0.998 of a CPU without corral,
/// leaving no effect to see. The workloads keep their load per CPU.
struct TwoCpus {
    offline: Vec<u32>,
}

impl TwoCpus {
    fn new() -> Result<TwoCpus, String> {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .map_err(|e| format!("/sys/devices/system/cpu/online: {e}"))?;
        let set = corral_core::cpuset::CpuSet::parse(online.trim())
            .map_err(|e| format!("/sys/devices/system/cpu/online {online:?}: {e}"))?;
        let mut g = TwoCpus {
            offline: Vec::new(),
        };
        for cpu in set.iter().filter(|&c| c >= 2) {
            let f = format!("/sys/devices/system/cpu/cpu{cpu}/online");
            std::fs::write(&f, "0").map_err(|e| format!("{f}: 0: {e}"))?;
            g.offline.push(cpu);
        }
        Ok(g)
    }
}

impl Drop for TwoCpus {
    fn drop(&mut self) {
        for cpu in &self.offline {
            let _ = std::fs::write(format!("/sys/devices/system/cpu/cpu{cpu}/online"), "1");
        }
    }
}

/// A process's affinity (`Cpus_allowed_list`), as text.
fn affinity(pid: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "gone".into())
}

/// A thread's nice value (`/proc/PID/stat`'s 19th field).
fn nice_of(pid: &str) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    corral_linux::sampler::parse_stat(&stat).map(|s| s.nice)
}

/// A process's v2 cgroup (`0::PATH` of `/proc/PID/cgroup`).
fn cgroup_of(pid: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("0::"))
                .map(String::from)
        })
        .unwrap_or_else(|| "gone".into())
}

/// Starts the tick unit (`corral lab work frame`); its figures go to the
/// journal when it ends.
fn start_tick(seconds: Option<u64>) -> (bool, String) {
    let mut args = vec![
        "--collect".to_string(),
        "--unit".into(),
        TICK.into(),
        format!("--property=CPUWeight={TICK_WEIGHT}"),
        "/usr/bin/corral".into(),
        "lab".into(),
        "work".into(),
        "frame".into(),
        "--period-us".into(),
        "10000".into(),
        "--work-us".into(),
        "1000".into(),
    ];
    if let Some(s) = seconds {
        args.push("--seconds".into());
        args.push(s.to_string());
    }
    let args: Vec<&str> = args.iter().map(|a| a.as_str()).collect();
    output("systemd-run", &args)
}

/// The tick's figures in the journal, one (frames, missed) per run.
fn tick_figures() -> Vec<(f64, f64)> {
    let (_, text) = output("journalctl", &["-u", TICK, "-o", "cat", "--no-pager"]);
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .filter_map(|v| Some((v["frames"].as_f64()?, v["missed"].as_f64()?)))
        .collect()
}

/// Runs `argv` as `unit` (a transient service) and waits for the JSON
/// line it prints that has `key` (the journal keeps every
/// run's: the one after those already there is this run's); with
/// `watch`, also the CPU sets its main process was seen on meanwhile and
/// `corral status` after `status_at`, and the nice values its main thread had
/// (in the order seen, each change once) among the sets as `nice N at
/// T s`, and when it was first seen on one CPU; and, watched or not, its
/// main process's [`Sample`]s every 100 ms while it runs.
fn run_job(
    unit: &'static str,
    argv: &[&str],
    key: &str,
    watch: bool,
    status_at: Duration,
) -> (
    Option<serde_json::Value>,
    Vec<String>,
    String,
    Option<Sample>,
    Vec<Sample>,
) {
    let figures = || -> Vec<serde_json::Value> {
        let (_, text) = output("journalctl", &["-u", unit, "-o", "cat", "--no-pager"]);
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
            .filter(|v| v.get(key).is_some())
            .collect()
    };
    let runs = figures().len();
    let mut run = vec!["--collect", "--unit", unit];
    run.extend_from_slice(argv);
    let (ok, _) = output("systemd-run", &run);
    let mut seen = Vec::new();
    let t0 = Instant::now();
    let mut status = None;
    let mut pinned = None;
    let mut samples = Vec::new();
    let mut w = UnitWatch::new(unit);
    if ok {
        wait_until(Duration::from_secs(600), || {
            if watch && status.is_none() && t0.elapsed() > status_at {
                status = Some(daemon_status());
            }
            let pid = w.main_pid();
            if let Some(s) = Sample::read(&pid) {
                samples.push(s);
            }
            if watch {
                let m = affinity(&pid);
                let last = seen
                    .iter()
                    .rev()
                    .find(|s: &&String| !s.starts_with("nice "));
                if pid != "0" && m != "gone" && last != Some(&m) {
                    if pinned.is_none() && m.parse::<u32>().is_ok() {
                        pinned = Sample::read(&pid);
                    }
                    seen.push(m);
                }
                if let Some(n) = nice_of(&pid) {
                    let n = format!("nice {n}");
                    let last = seen.iter().rev().find(|s| s.starts_with("nice "));
                    if pid != "0" && last.map(|s| s.split(" at ").next()) != Some(Some(&n)) {
                        seen.push(format!("{n} at {:.1} s", t0.elapsed().as_secs_f64()));
                    }
                }
            }
            !w.running()
        });
    }
    let mut f = None;
    wait_until(Duration::from_secs(10), || {
        f = figures().into_iter().nth(runs);
        f.is_some()
    });
    (f, seen, status.unwrap_or_default(), pinned, samples)
}

/// A process's age, the clock and its CPU time (s) at one moment; two of
/// them give its share of a CPU in between, read on one clock. (The
/// benchmark's own wall time starts after its start-up, which under TCG
/// takes a quarter second: a share from its wall time and a `/proc` age
/// read 1.03 of a CPU.)
#[derive(Debug, Clone, Copy)]
struct Sample {
    age: f64,
    up: f64,
    cpu: f64,
}

impl Sample {
    /// From `/proc/PID/stat`'s start time (field 22, clock ticks of 1/100
    /// s on Debian's kernels), `/proc/uptime` and `/proc/PID/schedstat`'s
    /// time on a CPU (ns); `None` if it has exited.
    fn read(pid: &str) -> Option<Sample> {
        if pid == "0" {
            return None;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = stat.get(stat.rfind(')')? + 1..)?;
        let start: f64 = after.split_whitespace().nth(22 - 3)?.parse().ok()?;
        let up: f64 = std::fs::read_to_string("/proc/uptime")
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        let cpu: f64 = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        Some(Sample {
            age: up - start / 100.0,
            up,
            cpu: cpu / 1e9,
        })
    }

    /// Its share of a CPU from `from` to the last of `samples` (`None`
    /// if that spans under a second).
    fn share_to_last(from: Sample, samples: &[Sample]) -> Option<f64> {
        let last = samples.last()?;
        let span = last.up - from.up;
        (span >= 1.0).then(|| (last.cpu - from.cpu) / span)
    }

    /// Its share from the first sample at least `age` s old to the last.
    fn share_from_age(age: f64, samples: &[Sample]) -> Option<f64> {
        let from = *samples.iter().find(|s| s.age >= age)?;
        Sample::share_to_last(from, samples)
    }
}

/// Runs `corral lab work bench --ops N` as the bench unit: (wall s, CPU
/// s), and what [`run_job`] watched.
fn run_bench(ops: u64, watch: bool) -> (Option<(f64, f64)>, Watched) {
    let ops = ops.to_string();
    let (v, seen, status, pinned, samples) = run_job(
        BENCH,
        &["/usr/bin/corral", "lab", "work", "bench", "--ops", &ops],
        "wall_ns",
        watch,
        Duration::from_secs(3),
    );
    let f = v.and_then(|v| Some((v["wall_ns"].as_f64()? / 1e9, v["cpu_ns"].as_f64()? / 1e9)));
    (f, (seen, status, pinned, samples))
}

/// What [`run_job`] watched: the CPU sets and nice values seen, `corral
/// status`, when it was first on one CPU, and its samples.
type Watched = (Vec<String>, String, Option<Sample>, Vec<Sample>);

/// Paper 001's input path as the input unit (`corral lab work
/// interactive`, [`INPUT_EVENTS`] events of [`INPUT_TE_MS`] every
/// [`INPUT_PERIOD_MS`]), with `hogs` CPU hogs beside it in the unit; with
/// `boost`, the dispatcher asks corral.service on its socket to boost the
/// handler before each event. The response times and boost calls, ms, in
/// event order, and the boost calls that failed (with the first reason).
fn run_input(hogs: u32, boost: bool) -> (Vec<f64>, Vec<f64>, u64, String) {
    let mut script = format!(
        "for i in $(seq {hogs}); do (while :; do :; done) & done; exec /usr/bin/corral lab work \
         interactive --te-ms {INPUT_TE_MS} --period-ms {INPUT_PERIOD_MS} --events {INPUT_EVENTS}"
    );
    if boost {
        script.push_str(&format!(" --boost-socket {SOCKET}"));
    }
    // The unit ends with its main process (the handler's), and systemd
    // then ends the hogs.
    let (v, _, _, _, _) = run_job(
        INPUT,
        &["/bin/sh", "-c", &script],
        "response_ns",
        false,
        Duration::ZERO,
    );
    let Some(v) = v else {
        return (
            Vec::new(),
            Vec::new(),
            0,
            "no figures in the journal".into(),
        );
    };
    let ms = |key: &str| -> Vec<f64> {
        v[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_f64())
                    .map(|n| n / 1e6)
                    .collect()
            })
            .unwrap_or_default()
    };
    let errors = v["boost_errors"].as_u64().unwrap_or(0);
    let first = v["first_boost_error"].as_str().unwrap_or("").to_string();
    (ms("response_ns"), ms("boost_call_ns"), errors, first)
}

/// `corral status`, its first 40 lines on one, for a check's detail.
fn daemon_status() -> String {
    let (_, text) = output("/usr/bin/corral", &["status"]);
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(40)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Runs the tick for [`TICK_SECONDS`] and waits for its figures; with
/// `watch`, corral.service starts a second after the tick (a program's
/// start-up is not a young periodic thread's pattern: under TCG loading
/// the binary takes a quarter of its first 200 ms, which reads as
/// medium) and the lift of the tick's unit is watched for.
fn measure_tick(watch: bool) -> (Option<(f64, f64)>, bool, String) {
    let runs = tick_figures().len();
    let (ok, out) = start_tick(Some(TICK_SECONDS));
    if !ok {
        return (None, false, out);
    }
    if watch {
        std::thread::sleep(Duration::from_secs(1));
        let (started, out) = systemctl(&["start", UNIT]);
        if !started {
            return (None, false, format!("corral.service: {out:?}"));
        }
    }
    let mut lifted = false;
    let t0 = Instant::now();
    let mut status = String::new();
    let limit = Duration::from_secs(TICK_SECONDS * 6 + 60);
    let w = UnitWatch::new(TICK);
    let done = wait_until(limit, || {
        if watch && status.is_empty() && t0.elapsed() > Duration::from_secs(5) {
            status = daemon_status();
        }
        // Seen in the cgroup, then confirmed as systemd's own property
        // (corral lifts through systemd, never by the file).
        if watch && !lifted && w.weight() == "100" {
            lifted = unit_prop(TICK, "CPUWeight") == "100";
        }
        !w.running()
    });
    wait_until(Duration::from_secs(10), || tick_figures().len() > runs);
    let f = tick_figures().get(runs).copied();
    (
        f,
        lifted,
        format!("ended: {done}; figures {f:?}; status: {status}"),
    )
}

/// Whether every hog has one CPU, none the same.
fn hogs_apart(pids: &[String]) -> bool {
    let masks: Vec<String> = pids.iter().map(|p| affinity(p)).collect();
    masks.iter().all(|m| m.parse::<u32>().is_ok())
        && masks
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            == masks.len()
}

/// Waits until `ok` holds (polling every 100 ms), up to `limit`.
fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if ok() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every cgroup attribute file someone may write (mode has a write bit),
/// with its contents, outside the cgroups of `skip` (units' own cgroups,
/// which systemd creates and removes with them). Left out: files whose
/// contents change by themselves, membership (`cgroup.procs`, `cgroup.threads`) as
/// processes come and go, pressure (`*.pressure`, writable to set a PSI
/// trigger) and `memory.peak` (writable to reset it).
fn snapshot(skip: &[String]) -> BTreeMap<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut dirs = vec![Path::new(CGROUP).to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let rel = dir
            .strip_prefix(CGROUP)
            .unwrap_or(&dir)
            .display()
            .to_string();
        // `/system.slice/x.service`, as units name their ControlGroup.
        let at = format!("/{}", rel.trim_start_matches('/'));
        if skip
            .iter()
            .any(|k| at == *k || at.starts_with(&format!("{k}/")))
        {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                dirs.push(path);
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if meta.permissions().mode() & 0o200 == 0
                || name.ends_with(".pressure")
                || matches!(
                    name.as_str(),
                    "cgroup.procs" | "cgroup.threads" | "memory.peak" | "memory.swap.peak"
                )
            {
                continue;
            }
            if let Ok(text) = std::fs::read_to_string(&path) {
                out.insert(format!("{rel}/{name}"), text);
            }
        }
    }
    out
}

/// Whether a snapshot now (outside `skip`) equals `base`, a non-empty
/// one, and what was compared or what differs.
fn unchanged(base: &BTreeMap<String, String>, skip: &[String]) -> (bool, String) {
    let diff = changes(base, &snapshot(skip));
    if diff.is_empty() {
        (
            !base.is_empty(),
            format!("{} attribute files compared", base.len()),
        )
    } else {
        (false, diff.join("; "))
    }
}

/// What differs between two snapshots, a line per file.
fn changes(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            None => out.push(format!("{k}: gone")),
            Some(w) if w != v => out.push(format!("{k}: {:?} -> {:?}", v.trim(), w.trim())),
            _ => {}
        }
    }
    for k in after.keys().filter(|k| !before.contains_key(*k)) {
        out.push(format!("{k}: new"));
    }
    out
}

/// Runs the scenario; its checks.
/// The checks so far, each printed as it is made.
#[derive(Default)]
struct Checks(Vec<Check>);

impl Checks {
    fn check(&mut self, name: &str, pass: bool, detail: String) {
        eprintln!(
            "{} systemd: {name}: {detail}",
            if pass { "PASS" } else { "FAIL" }
        );
        self.0.push(Check {
            scenario: "systemd",
            name: name.into(),
            pass,
            detail,
        });
    }
}

pub fn run() -> Vec<Check> {
    let mut c = Checks::default();
    let own = format!("/{}", prop("ControlGroup").trim_start_matches('/'));
    let own = if own == "/" {
        "/system.slice/corral.service".to_string()
    } else {
        own
    };
    let mut skip: Vec<String> = vec![own];
    skip.extend(HOGS.iter().map(|u| format!("/system.slice/{u}")));
    let before = snapshot(&skip);
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap_or_default()
        .trim()
        .to_string();

    verify_and_refuse(&mut c);
    if !hogs_in_units(&mut c, &skip, &online) {
        return c.0;
    }
    match TwoCpus::new() {
        Ok(two) => {
            if !paper_002(&mut c, &skip) {
                return c.0;
            }
            paper_000(&mut c);
            drop(two);
        }
        Err(e) => c.check("CPUs 2 and up go offline for the effect checks", false, e),
    }
    medium(&mut c);
    paper_001(&mut c);

    let (same, said) = unchanged(&before, &skip);
    c.check(
        "after all, no cgroup attribute outside the units' own changed",
        same,
        said,
    );
    package(&mut c);
    c.0
}

/// The unit file passes `systemd-analyze verify`; v2 groups asked for by
/// name are refused (exit 78), nothing written.
fn verify_and_refuse(c: &mut Checks) {
    let (ok, out) = output(
        "systemd-analyze",
        &["verify", &format!("/lib/systemd/system/{UNIT}")],
    );
    c.check(
        "the unit file passes systemd-analyze verify",
        ok,
        format!("{out:?}"),
    );

    let (code, said) = run_for(
        "/usr/bin/corral",
        &["run", "--cgroup", "v2", "--socket", "none"],
        SHELL_LIMIT,
    );
    c.check(
        "corral run --cgroup v2 from a shell refuses systemd's v2 tree (exit 78, EX_CONFIG)",
        code == Some(78) && said.contains("systemd runs this host and owns its cgroup v2 tree"),
        format!("exit {code:?}: {:?}", said.trim()),
    );
}

/// Two CPU hogs, each a unit of its own, and corral.service as shipped:
/// active through READY=1, its journal, each hog on a CPU of its own in
/// its unit, nothing else changed; killed and started again by systemd;
/// a managed unit stopped; corral stopped. False when the units do not
/// start.
fn hogs_in_units(c: &mut Checks, skip: &[String], online: &str) -> bool {
    // The workload: two CPU hogs, each a unit of its own.
    let mut pids = Vec::new();
    for unit in HOGS {
        let (ok, out) = output(
            "systemd-run",
            &["--unit", unit, "/bin/sh", "-c", "while :; do :; done"],
        );
        let pid = unit_prop(unit, "MainPID");
        if !ok || pid == "0" {
            c.check("the test units start", false, format!("{unit}: {out:?}"));
            return false;
        }
        pids.push(pid);
    }
    let units_cgroups = || -> (bool, String) {
        let mut all = true;
        let mut said = Vec::new();
        for (unit, pid) in HOGS.iter().zip(&pids) {
            let want = unit_prop(unit, "ControlGroup");
            let have = cgroup_of(pid);
            all &= have == want;
            said.push(format!("{unit}: PID {pid} in {have}, unit's {want}"));
        }
        (all, said.join("; "))
    };

    // What the units' start changed (systemd's doing) is the baseline of
    // the check while corral runs.
    let base = snapshot(skip);

    // corral.service as shipped.
    let (started, out) = systemctl(&["start", UNIT]);
    let status = prop("StatusText");
    let ours = Path::new(CGROUP).join("corral").exists();
    c.check(
        "as shipped, corral.service becomes active through READY=1, on per-thread levers, and creates no cgroup",
        started && prop("ActiveState") == "active" && status.starts_with("managing") && !ours,
        format!("start: {out:?}; StatusText {status:?}; {CGROUP}/corral exists: {ours}"),
    );
    // Its log in the journal: a priority per line (`<N>` prefixes, read
    // by journald), no timestamp of its own, no `corral:` tag.
    let (_, journal) = output(
        "journalctl",
        &[
            "-u",
            UNIT,
            "-o",
            "json",
            "--no-pager",
            "--output-fields=MESSAGE,PRIORITY",
        ],
    );
    let start_line = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| {
            v["MESSAGE"]
                .as_str()
                .is_some_and(|m| m.starts_with("managing "))
        });
    c.check(
        "its journal lines carry a priority and no timestamp or tag of their own",
        start_line.as_ref().is_some_and(|v| v["PRIORITY"] == "6"),
        format!("start line: {start_line:?}"),
    );
    let apart = wait_until(Duration::from_secs(120), || hogs_apart(&pids));
    let masks: Vec<String> = pids
        .iter()
        .map(|p| format!("PID {p}: {}", affinity(p)))
        .collect();
    c.check(
        "each hog runs on a CPU of its own, by its affinity",
        apart,
        format!("online {online}; {}", masks.join(", ")),
    );
    let (inside, said) = units_cgroups();
    c.check(
        "while corral manages them, each hog's process stays in its unit's cgroup",
        inside,
        said,
    );
    let (same, said) = unchanged(&base, skip);
    c.check(
        "while corral manages, no cgroup attribute outside the units' own changed",
        same,
        said,
    );

    restart_and_stop(c, &pids, online);
    true
}

/// corral.service killed and started again by systemd (the new daemon
/// puts back what the killed one did, then places again); a managed unit
/// stopped; corral stopped, the other hog's affinity back in its unit.
fn restart_and_stop(c: &mut Checks, pids: &[String], online: &str) {
    // Killed, started again by systemd: the new daemon puts back what the
    // killed one did (its record), then places again.
    let pid0 = prop("MainPID");
    let _ = systemctl(&["kill", "-s", "KILL", UNIT]);
    let restarted = wait_until(Duration::from_secs(60), || {
        prop("ActiveState") == "active" && prop("MainPID") != pid0 && prop("NRestarts") == "1"
    });
    let pid1 = prop("MainPID");
    let record = std::fs::read_to_string("/run/corral/corral.json").unwrap_or_default();
    let took_over = wait_until(Duration::from_secs(30), || {
        std::fs::read_to_string("/run/corral/corral.json")
            .is_ok_and(|r| r.contains(&format!("\"daemon_pid\":{pid1},")))
    });
    let apart_again = wait_until(Duration::from_secs(120), || hogs_apart(pids));
    c.check(
        "after systemctl kill -s KILL, systemd starts it again; it takes the record over and places again",
        restarted && took_over && apart_again,
        format!(
            "MainPID {pid0} -> {pid1}, NRestarts {}, ActiveState {}; record names the new daemon: {took_over}; hogs apart again: {apart_again} ({} bytes of record at the restart)",
            prop("NRestarts"),
            prop("ActiveState"),
            record.len()
        ),
    );

    // A managed unit stopped: its process ends.
    let (stopped, out) = systemctl(&["stop", HOGS[0]]);
    let gone = wait_until(Duration::from_secs(30), || {
        !Path::new(&format!("/proc/{}", pids[0])).exists()
    });
    c.check(
        "systemctl stop of a unit corral manages ends its process",
        stopped && gone,
        format!("stop {}: {out:?}; PID {} gone: {gone}", HOGS[0], pids[0]),
    );

    // corral stopped: the other hog has its affinity back, in its unit.
    let (stopped, out) = systemctl(&["stop", UNIT]);
    let back = affinity(&pids[1]);
    let home = cgroup_of(&pids[1]);
    let want = unit_prop(HOGS[1], "ControlGroup");
    let record_left = Path::new("/run/corral/corral.json").exists();
    c.check(
        "systemctl stop corral gives the hog its affinity back, in its unit, and leaves no record",
        stopped
            && prop("Result") == "success"
            && back == online
            && home == want
            && !record_left,
        format!(
            "stop: {out:?}; Result {}; PID {} affinity {back} (online {online}), cgroup {home} (unit's {want}); record left: {record_left}",
            prop("Result"),
            pids[1]
        ),
    );
    let (stopped, out) = systemctl(&["stop", HOGS[1]]);
    let gone = wait_until(Duration::from_secs(30), || {
        !Path::new(&format!("/proc/{}", pids[1])).exists()
    });
    c.check(
        "after corral stopped, systemctl stop of the other unit ends its process",
        stopped && gone,
        format!("stop {}: {out:?}; PID {} gone: {gone}", HOGS[1], pids[1]),
    );
}

/// Paper 002's case: a periodic thread in a unit of low weight beside a
/// unit that keeps every CPU busy, without and with corral; then the lift
/// through systemd, kept over a kill and restart, undone at the stop.
/// False when the load unit does not start.
fn paper_002(c: &mut Checks, skip: &[String]) -> bool {
    // Paper 002's case: a periodic thread in a unit of low weight beside
    // a unit that keeps every CPU busy; first without corral, then with.
    let (ok, out) = output(
        "systemd-run",
        &[
            "--unit",
            LOAD,
            // A weight of its own keeps systemd's cpu controller on along
            // the path for the whole phase (it turns it on and off as
            // units with a CPUWeight come and go).
            "--property=CPUWeight=100",
            "/bin/sh",
            "-c",
            "for i in 1 2 3; do (while :; do :; done) & done; wait",
        ],
    );
    if !ok {
        c.check("the load unit starts", false, out);
        return false;
    }
    // Runs alternate, without and with corral, and their frames are
    // pooled: one 10-s run a side under TCG is noisy (missed 25 % -> 9 %,
    // 21 % -> 14 %, 19.4 % -> 16.8 % in single pairs, and once 21.1 % ->
    // 24.0 %), alternation puts a drift in the guest's speed on both sides.
    // The lift is asked of most runs, not all: under TCG the starved
    // tick's wake-up rate is sometimes too irregular over the first
    // intervals (coefficient of variation above 0.30) to be called
    // latency-critical within a 10-s run (one run of three in each of the
    // first two guest runs with pairs); its frames stay in the pool.
    let (mut pooled_base, mut pooled_corral) = ((0.0, 0.0), (0.0, 0.0));
    let (mut stopped_all, mut lifted_runs, mut pairs) = (true, 0, Vec::new());
    let mut load_base = BTreeMap::new();
    for pair in 0..TICK_PAIRS {
        let (base_fig, _, base_said) = measure_tick(false);
        if pair == 0 {
            load_base = snapshot(skip);
        }
        let (corral_fig, lifted, corral_said) = measure_tick(true);
        let (stopped, out) = systemctl(&["stop", UNIT]);
        stopped_all &= stopped;
        lifted_runs += lifted as usize;
        for (pool, fig) in [
            (&mut pooled_base, base_fig),
            (&mut pooled_corral, corral_fig),
        ] {
            match fig {
                Some((n, m)) => *pool = (pool.0 + n, pool.1 + m),
                None => *pool = (f64::NAN, f64::NAN),
            }
        }
        pairs.push(format!(
            "pair {pair}: without {base_fig:?} ({base_said}); with {corral_fig:?} (lifted {lifted}; stop {out:?}{})",
            if lifted { String::new() } else { format!("; {corral_said}") }
        ));
    }
    let missed = |(n, m): (f64, f64)| (n.is_finite() && n > 0.0).then(|| m / n);
    let (mb, mc) = (missed(pooled_base), missed(pooled_corral));
    eprintln!(
        "MEASURED systemd: paper 002 in units: frames missed without corral {mb:?}, with corral {mc:?} (pooled over {TICK_PAIRS} alternating pairs: {})",
        pairs.join(" | ")
    );
    c.check(
        "paper 002 in units: corral lifts the low-weight unit of a latency-critical thread to the default weight, and fewer frames are missed than without it",
        stopped_all && lifted_runs * 2 > TICK_PAIRS && mb.zip(mc).is_some_and(|(b, c)| c < b),
        format!(
            "CPUWeight {TICK_WEIGHT} -> 100 seen in {lifted_runs} of {TICK_PAIRS} runs with corral; frames missed without corral {mb:?}, with corral {mc:?}, pooled over {TICK_PAIRS} pairs: {}",
            pairs.join(" | ")
        ),
    );
    lift_kept_and_undone(c, skip, &load_base);
    true
}

/// A lifted unit: the only cgroup attribute corral changed, through
/// systemd; kept over a kill and restart; back at corral's stop.
fn lift_kept_and_undone(c: &mut Checks, skip: &[String], load_base: &BTreeMap<String, String>) {
    let (ok, out) = start_tick(None);
    std::thread::sleep(Duration::from_secs(1));
    let (started_again, _) = systemctl(&["start", UNIT]);
    let lifted = ok
        && started_again
        && wait_until(Duration::from_secs(120), || {
            unit_prop(TICK, "CPUWeight") == "100"
        });
    let during: Vec<String> = changes(load_base, &snapshot(skip))
        .into_iter()
        .filter(|c| !c.starts_with("system.slice/corral-test-tick.service/"))
        .collect();
    let weight_file = Path::new(CGROUP)
        .join("system.slice")
        .join(TICK)
        .join("cpu.weight");
    let weight_now = std::fs::read_to_string(&weight_file).unwrap_or_default();
    // Killed while the unit is lifted: systemd starts corral again (its
    // ExecStopPost= restore first), and under the new daemon the unit is
    // lifted (again, or still: the record it takes over names the lift).
    let pid0 = prop("MainPID");
    let (killed, _) = systemctl(&["kill", "-s", "KILL", UNIT]);
    let restarted = wait_until(Duration::from_secs(120), || {
        prop("ActiveState") == "active" && !["0", pid0.as_str()].contains(&prop("MainPID").as_str())
    });
    let relifted = restarted
        && wait_until(Duration::from_secs(120), || {
            unit_prop(TICK, "CPUWeight") == "100"
        });
    c.check(
        "killed while a unit is lifted, corral is started again and the unit is lifted under the new daemon",
        killed && restarted && relifted,
        format!(
            "MainPID {pid0} -> {}, NRestarts {}, ActiveState {}; CPUWeight {}",
            prop("MainPID"),
            prop("NRestarts"),
            prop("ActiveState"),
            unit_prop(TICK, "CPUWeight")
        ),
    );
    let (stopped, stop_out) = systemctl(&["stop", UNIT]);
    let back = unit_prop(TICK, "CPUWeight");
    let weight_after = std::fs::read_to_string(&weight_file).unwrap_or_default();
    c.check(
        "the lift is systemd's own property, the only change outside the units, and is undone at corral's stop (after a kill and restart too)",
        ok && lifted
            && during.is_empty()
            && !load_base.is_empty()
            && weight_now.trim() == "100"
            && stopped
            && back == TICK_WEIGHT
            && weight_after.trim() == TICK_WEIGHT,
        format!(
            "tick: {out:?}; lifted: {lifted}, {} reads {:?}; other changes: {during:?}; stop: {stop_out:?}; CPUWeight after {back:?}, file {:?}",
            weight_file.display(),
            weight_now.trim(),
            weight_after.trim()
        ),
    );
    let _ = systemctl(&["stop", TICK, LOAD]);
}

/// `dbus-send` of a method of corral's object on the system bus, as `uid`
/// (via setpriv) when given; its errors name the D-Bus error and carry
/// the daemon's words.
fn bus_call(uid: Option<u32>, method: &str, args: &[&str]) -> (bool, String) {
    let mut argv: Vec<String> = Vec::new();
    if let Some(u) = uid {
        argv.extend([
            format!("--reuid={u}"),
            format!("--regid={u}"),
            "--clear-groups".into(),
            "dbus-send".into(),
        ]);
    }
    argv.extend([
        "--system".to_string(),
        "--print-reply".into(),
        "--dest=org.corral.Daemon1".into(),
        "/org/corral/Daemon1".into(),
        format!("org.corral.Daemon1.{method}"),
    ]);
    argv.extend(args.iter().map(|a| a.to_string()));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    output(
        if uid.is_some() {
            "setpriv"
        } else {
            "dbus-send"
        },
        &argv,
    )
}

/// The socket's verbs on the system bus (corral.service, installed by the
/// package with its bus policy): `Status` as root; a boost of root's
/// thread asked by another user is refused with AccessDenied (the uid the
/// bus tells), the same user's own thread is boosted.
fn bus(c: &mut Checks) {
    const NOBODY: u32 = 65534;
    let (status_ok, status) = bus_call(None, "Status", &[]);
    // A thread of root's and one of nobody's, each a unit of its own.
    let units = [
        "corral-test-bus-root.service",
        "corral-test-bus-nobody.service",
    ];
    let (a, _) = output("systemd-run", &["--unit", units[0], "/bin/sleep", "120"]);
    let (b, _) = output(
        "systemd-run",
        &[
            "--unit",
            units[1],
            &format!("--uid={NOBODY}"),
            "/bin/sleep",
            "120",
        ],
    );
    let root_pid = unit_prop(units[0], "MainPID");
    let nobody_pid = unit_prop(units[1], "MainPID");
    // The daemon sees a thread at its next step at the latest (or samples
    // on request).
    let mut theirs = (false, String::new());
    let mut own = (false, String::new());
    let answered = wait_until(Duration::from_secs(20), || {
        theirs = bus_call(
            Some(NOBODY),
            "Boost",
            &[&format!("uint32:{root_pid}"), "uint64:100"],
        );
        own = bus_call(
            Some(NOBODY),
            "Boost",
            &[&format!("uint32:{nobody_pid}"), "uint64:100"],
        );
        own.0
            && theirs.1.contains("org.freedesktop.DBus.Error.AccessDenied")
            && theirs.1.contains(&format!("the caller is uid {NOBODY}"))
    });
    let _ = systemctl(&["stop", units[0], units[1]]);
    c.check(
        "on the system bus (org.corral.Daemon1): Status answers; another user's thread is refused to nobody with AccessDenied (uid from the bus), nobody's own thread is boosted",
        status_ok && status.contains("backend") && a && b && answered && !theirs.0,
        format!(
            "Status: {:?}; root's thread {root_pid}: {:?}; nobody's thread {nobody_pid}: {:?}",
            status.chars().take(80).collect::<String>(),
            theirs.1,
            own.1
        ),
    );
}

/// The metrics endpoint the package test turns on.
const METRICS_AT: &str = "127.0.0.1:9741";

/// `GET /metrics` of `addr`: (status line, body).
fn scrape(addr: &str) -> (String, String) {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return ("cannot connect".into(), String::new());
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// Every file and link the package owns or corral writes at run time.
const PACKAGE_PATHS: [&str; 11] = [
    "/usr/bin/corral",
    "/lib/systemd/system/corral.service",
    "/etc/corral",
    "/etc/systemd/system/multi-user.target.wants/corral.service",
    "/usr/share/man/man1/corral.1.gz",
    "/usr/share/bash-completion/completions/corral",
    "/usr/share/zsh/vendor-completions/_corral",
    "/usr/share/fish/vendor_completions.d/corral.fish",
    "/usr/share/doc/corral",
    "/usr/share/dbus-1/system.d/org.corral.Daemon1.conf",
    "/run/corral.sock",
];

/// The Debian package as a new user meets it (the guest's start script
/// installed it with `dpkg -i`): its files in place, the commented
/// configuration valid; `systemctl enable --now` with metrics turned on in
/// /etc/corral/corral.toml, which `status` names; a scrape; the journal;
/// `corral top`; then `dpkg --purge`, after which nothing of it is left.
fn package(c: &mut Checks) {
    let (installed, dpkg) = output(
        "dpkg-query",
        &["-W", "-f", "${Status} ${Version}", "corral"],
    );
    let present: Vec<&str> = PACKAGE_PATHS
        .iter()
        .copied()
        .filter(|p| Path::new(p).exists())
        .collect();
    let (conf_ok, conf) = output("/usr/bin/corral", &["config", "check"]);
    c.check(
        "the .deb installed its binary, unit, commented /etc/corral/corral.toml (valid as shipped), man pages and bash/zsh/fish completions",
        installed
            && dpkg.starts_with("install ok installed")
            && conf_ok
            && ["/usr/bin/corral", "/lib/systemd/system/corral.service", "/etc/corral", "/usr/share/man/man1/corral.1.gz",
                "/usr/share/bash-completion/completions/corral", "/usr/share/zsh/vendor-completions/_corral",
                "/usr/share/fish/vendor_completions.d/corral.fish"]
                .iter()
                .all(|p| present.contains(p)),
        format!("dpkg: {dpkg:?}; present: {present:?}; config check: {conf:?}"),
    );

    // Metrics on, through the file the package installed.
    let conf_path = "/etc/corral/corral.toml";
    let mut text = std::fs::read_to_string(conf_path).unwrap_or_default();
    text.push_str(&format!("\n[metrics]\nlisten = \"{METRICS_AT}\"\n"));
    let wrote = std::fs::write(conf_path, text).is_ok();
    let (enabled, out) = systemctl(&["enable", "--now", UNIT]);
    let active = wait_until(Duration::from_secs(60), || prop("ActiveState") == "active");
    let (_, status) = output("/usr/bin/corral", &["status"]);
    let mut scraped = (String::new(), String::new());
    let got = wait_until(Duration::from_secs(30), || {
        scraped = scrape(METRICS_AT);
        scraped.0.contains(" 200 ") && scraped.1.contains("corral_steps_total")
    });
    let (_, journal) = output("journalctl", &["-u", UNIT, "--no-pager", "-o", "cat"]);
    let said_metrics = journal.contains(&format!("metrics at http://{METRICS_AT}/metrics"));
    let (top_ok, top) = output("/usr/bin/corral", &["top", "--once"]);
    let steps = scraped
        .1
        .lines()
        .find(|l| l.starts_with("corral_steps_total "))
        .unwrap_or("")
        .to_string();
    c.check(
        "systemctl enable --now corral runs it with /etc/corral/corral.toml, which status names; its metrics are scraped; the journal says where; corral top shows it",
        wrote
            && enabled
            && active
            && status.contains(&format!("config: {conf_path}"))
            && got
            && said_metrics
            && top_ok
            && top.contains("GROUP"),
        format!(
            "enable: {out:?}; status: {:?}; scrape: {:?}, {steps:?}; journal names the endpoint: {said_metrics}; top: {:?}",
            status.lines().take(2).collect::<Vec<_>>(),
            scraped.0,
            top.lines().take(3).collect::<Vec<_>>()
        ),
    );

    // D-Bus: the verbs on the system bus, the caller's uid from the bus.
    bus(c);

    // Removal: the service stops (every thread back), is disabled, and a
    // purge leaves nothing.
    let (purged, out) = output("dpkg", &["--purge", "corral"]);
    let left: Vec<&str> = PACKAGE_PATHS
        .iter()
        .copied()
        .chain(["/run/corral"])
        .filter(|p| Path::new(p).exists() || Path::new(p).is_symlink())
        .collect();
    let load = prop("LoadState");
    let cgroup_left = Path::new(CGROUP).join("system.slice").join(UNIT).exists();
    let (known, _) = output("dpkg-query", &["-W", "corral"]);
    c.check(
        "dpkg --purge corral stops and disables it and leaves nothing behind: no file, link, unit, cgroup or package record",
        purged && left.is_empty() && load == "not-found" && !cgroup_left && !known,
        format!("purge: {:?}; left: {left:?}; LoadState {load}; cgroup left: {cgroup_left}; dpkg still knows it: {known}",
            out.lines().last().unwrap_or("")),
    );
}

/// Paper 000 in units: the benchmark alone, beside the mix, and beside
/// the mix with corral, which gives it a CPU of its own by affinity.
fn paper_000(c: &mut Checks) {
    let (alone, ..) = run_bench(50_000, false);
    let ops = alone.map_or(50_000, |(wall, _)| {
        ((50_000.0 * BENCH_SECONDS / wall.max(0.01)) as u64).max(50_000)
    });
    let (alone, ..) = run_bench(ops, false);
    let mix = || {
        output(
            "systemd-run",
            &[
                "--unit",
                MIX,
                "/bin/sh",
                "-c",
                &format!(
                    "for r in {MIX_RUN_MS}; do /usr/bin/corral lab work periodic --period-ms 10 \
                     --run-ms $r --periods 1000000 >/dev/null & done; wait"
                ),
            ],
        )
    };
    let (ok, out) = mix();
    if !ok {
        c.check("the mix unit starts", false, out);
        return;
    }
    std::thread::sleep(Duration::from_secs(2));
    let (base, (_, _, _, base_samples)) = run_bench(ops, false);
    let wall = |f: Option<(f64, f64)>| f.map(|(w, _)| w);
    // Its CPU share while it ran (CPU time / wall time): the guest
    // kernel's decision, which the host's time-sharing of the vCPUs does
    // not enter; the wall time does.
    let share = |f: Option<(f64, f64)>| f.map(|(w, cpu)| cpu / w.max(1e-9));
    let (a, b) = (wall(alone), wall(base));
    // The baseline from BASE_FROM_S of age on, as corral's run is
    // measured from its dedication on (1.4-2.6 s of age in guest runs):
    // both from /proc, on one clock.
    const BASE_FROM_S: f64 = 1.5;
    let sb_whole = share(base);
    let sb = Sample::share_from_age(BASE_FROM_S, &base_samples);
    // corral's run, from a fresh mix (none of the baseline's lateness
    // carried over) and a fresh daemon. Two attempts: under TCG the mix
    // sometimes falls behind as the benchmark arrives, its threads read
    // as wanting a whole CPU, and corral's plan then dedicates none
    // ("among equals"; the first attempt declined in 2 of 11 runs on four
    // CPUs). Both attempts are reported.
    let mut attempts = Vec::new();
    let mut held = false;
    let (mut started, mut stopped, mut out, mut stop_out) =
        (true, true, String::new(), String::new());
    let (mut status, mut w, mut sw) = (String::new(), None, None);
    for attempt in 1..=2 {
        let _ = systemctl(&["stop", MIX]);
        let (ok, said) = systemctl(&["start", UNIT]);
        started &= ok;
        out = said;
        let _ = mix();
        std::thread::sleep(Duration::from_secs(5));
        let (with, (s, st, pinned, samples)) = run_bench(ops, true);
        let (ok, said) = systemctl(&["stop", UNIT]);
        stopped &= ok;
        stop_out = said;
        let _ = systemctl(&["stop", MIX]);
        let seen = s;
        (status, w, sw) = (st, wall(with), share(with));
        let own_cpu = seen.iter().any(|m| m.parse::<u32>().is_ok());
        // The share from the moment it was seen on a CPU of its own: the
        // run's first seconds, before corral has classified it, are the
        // baseline's (they cost a whole-run share up to 2 points and
        // made it a coin toss beside a baseline of 0.92-0.96).
        let after = pinned.and_then(|p| Sample::share_to_last(p, &samples));
        eprintln!(
            "MEASURED systemd: paper 000 in units (attempt {attempt}): benchmark ({ops} ops) alone {a:?} s, beside the mix {b:?} s (CPU share {sb_whole:?}, from {BASE_FROM_S} s of age on {sb:?}), with corral {w:?} s (CPU share {sw:?}; a CPU of its own: {own_cpu}, from {:?} s on, and its share from then on {after:?}); wall with corral over beside the mix {:?}",
            pinned.map(|p| p.age),
            b.zip(w).map(|(b, w)| w / b)
        );
        attempts.push(format!(
            "attempt {attempt}: sets seen {seen:?}, CPU share {sw:?} (on a CPU of its own from {:?} s: {after:?}), wall {w:?} s",
            pinned.map(|p| (p.age * 10.0).round() / 10.0)
        ));
        if own_cpu && sb.zip(after).is_some_and(|(b, w)| gained(b, w)) {
            held = true;
            break;
        }
    }
    c.check(
        "paper 000 in units: corral gives the benchmark a CPU of its own beside the mix, and from then on it gets more of a CPU than beside the mix without corral (where the mix took any: at least 0.98 of it where it took none)",
        started && stopped && a.is_some() && held,
        format!(
            "start corral: {out:?}, stop: {stop_out:?}; {}; CPU share beside the mix {sb_whole:?} (from {BASE_FROM_S} s of age on {sb:?}), with corral {sw:?}; wall alone {a:?} s, beside the mix {b:?} s, with corral {w:?} s; last status: {status}",
            attempts.join("; ")
        ),
    );
}

/// Whether the benchmark, on a CPU of its own from then on (`with`),
/// gained on its share beside the mix without corral (`base`, both from
/// /proc on one clock). Where the mix took some of its CPU (base below
/// [`UNCONTENDED`]) it must get more; where the kernel had already left
/// it alone there is nothing to gain, and it must keep a whole CPU
/// (corral's own sampling included). On a fast host the guest's balancer
/// puts the mix's 1.1 CPUs on one CPU and the benchmark alone on the
/// other: 0.998 from 1.5 s of age on in a CI run, against 0.992 and
/// 0.996 on its own CPU with corral; under a loaded host the mix wakes
/// onto its CPU (0.93-0.97 without corral, 0.995-1.0 with it).
fn gained(base: f64, with: f64) -> bool {
    if base < UNCONTENDED {
        with > base
    } else {
        with >= UNCONTENDED
    }
}

/// A CPU share at which the benchmark had its CPU to itself but for the
/// guest's own housekeeping (ticks, kworkers, corral's sampler).
const UNCONTENDED: f64 = 0.98;

/// The medium guarantee in a unit: a periodic thread wanting
/// [`MEDIUM_RUN_MS`] of every 10 ms (a late period is skipped, as
/// cyclictest does, and counted missed), alone in its unit for [`MEDIUM_ALONE_S`] s (long enough
/// to be classified medium), then beside [`MEDIUM_HOGS`] CPU hogs its
/// program starts (as a build started in a session), measured from 2 s
/// after they start, without corral and with it (its nice lowered so it
/// counts on half a CPU: share::medium_nice).
///
/// Overloaded from the start it would not be: the hogs and it then share
/// alike and look alike (11 threads on 4 CPUs at ~0.36 each read as
/// medium, the periodic thread as light, and its share fell 0.26 -> 0.12
/// with corral: the hogs got the guarantee). Utilisation tells a medium
/// thread's demand only while it gets it. Nor does it catch up (rt-app's
/// `timer`): given its guarantee it then repays the periods it owes at
/// more than half a CPU, reads as heavy, loses the guarantee, and so on
/// (nice -4 .. -11 and 0 seen in one run, 0.18 -> 0.27 of a CPU).
fn medium(c: &mut Checks) {
    let warmup_ms = (MEDIUM_ALONE_S + 2) * 1000;
    let script = format!(
        "(sleep {MEDIUM_ALONE_S}; for i in $(seq {MEDIUM_HOGS}); do (while :; do :; done) & done) & \
         exec /usr/bin/corral lab work periodic --period-ms 10 --run-ms {MEDIUM_RUN_MS} \
         --warmup-ms {warmup_ms} --periods 1000"
    );
    let run = |watch: bool| {
        let (v, seen, status, _, _) = run_job(
            MEDIUM,
            &["/bin/sh", "-c", &script],
            "cpu_ns",
            watch,
            Duration::from_secs(MEDIUM_ALONE_S + 5),
        );
        let share = v
            .as_ref()
            .and_then(|v| Some(v["cpu_ns"].as_f64()? / v["wall_ns"].as_f64()?.max(1.0)));
        let missed = v.and_then(|v| {
            let (n, m) = (v["periods"].as_f64()?, v["missed"].as_f64()?);
            Some(m / (n + m).max(1.0))
        });
        (share, missed, seen, status)
    };
    let (base, missed_base, _, _) = run(false);
    let (started, out) = systemctl(&["start", UNIT]);
    std::thread::sleep(Duration::from_secs(3));
    let (with, missed_with, seen, status) = run(true);
    let (stopped, stop_out) = systemctl(&["stop", UNIT]);
    let nices: Vec<i32> = seen
        .iter()
        .filter_map(|s| s.strip_prefix("nice ")?.split(" at ").next()?.parse().ok())
        .collect();
    let lowered = nices.iter().any(|&n| n < 0);
    let want = MEDIUM_RUN_MS / 10.0;
    eprintln!(
        "MEASURED systemd: medium guarantee in a unit: a thread wanting {want} of a CPU beside {MEDIUM_HOGS} hogs got {base:?} without corral ({missed_base:?} of its periods missed), {with:?} with it ({missed_with:?} missed; nice seen {nices:?})"
    );
    // The effect is a figure here, not a gate: under TCG the nice moves
    // the thread's share little and unevenly (0.13-0.14 -> 0.15-0.32 in
    // five runs at nice -4 and -7), where on this machine's kernel `corral lab
    // medium` measures 0.171 -> 0.346 with nice -7 (and gates on it).
    c.check(
        "medium guarantee in a unit: corral lowers the medium thread's nice beside the hogs its program started",
        started && stopped && lowered && base.is_some() && with.is_some(),
        format!(
            "start corral: {out:?}, stop: {stop_out:?}; seen {seen:?}; CPU share wanted {want}, without corral {base:?} ({missed_base:?} of periods missed), with corral {with:?} ({missed_with:?}); status: {status}"
        ),
    );
}

/// Paper 001 in a unit: the input handler alone, beside hogs in its
/// unit, and beside them boosted by corral.service on request.
fn paper_001(c: &mut Checks) {
    let (alone, _, _, _) = run_input(0, false);
    let (base, _, _, _) = run_input(INPUT_HOGS, false);
    let (started, out) = systemctl(&["start", UNIT]);
    std::thread::sleep(Duration::from_secs(5));
    let (boosted, calls, errors, first_error) = run_input(INPUT_HOGS, true);
    let (stopped, stop_out) = systemctl(&["stop", UNIT]);
    // Each event from the boost's reply on: the call itself costs 26-47 ms
    // under TCG (0.3-0.4 ms on real hardware, `corral lab interactive`),
    // which says little about what the boost does to the handler.
    let after: Vec<f64> = boosted.iter().zip(&calls).map(|(r, c)| r - c).collect();
    let sorted = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v
    };
    let (alone, base, boosted, calls, after) = (
        sorted(&alone),
        sorted(&base),
        sorted(&boosted),
        sorted(&calls),
        sorted(&after),
    );
    let p = |v: &[f64], q: f64| percentile_of(v, q);
    let (a50, b50, c50) = (p(&alone, 50.0), p(&base, 50.0), p(&boosted, 50.0));
    let (b90, c90) = (p(&base, 90.0), p(&boosted, 90.0));
    let (call50, after50) = (p(&calls, 50.0), p(&after, 50.0));
    eprintln!(
        "MEASURED systemd: paper 001 in a unit: response time p50 alone {a50:?} ms, beside {INPUT_HOGS} hogs {b50:?} ms (p90 {b90:?}), boosted by corral.service {c50:?} ms (p90 {c90:?}; the boost call's p50 {call50:?} ms included, {after50:?} ms from its reply on); boosted p50 over the hogs' {:?}",
        b50.zip(c50).map(|(b, c)| c / b)
    );
    c.check(
        "paper 001 in a unit: corral.service answers every boost request, and from its reply on the boosted handler's events end sooner than beside the hogs without it",
        started
            && stopped
            && errors == 0
            && boosted.len() == INPUT_EVENTS as usize
            && b50.zip(after50).is_some_and(|(b, a)| a < b),
        format!(
            "start corral: {out:?}, stop: {stop_out:?}; boost errors {errors} {first_error:?}; p50 alone {a50:?} ms, beside the hogs {b50:?} ms, boosted {c50:?} ms (call p50 {call50:?} ms, from the reply on {after50:?} ms); p90 {b90:?} -> {c90:?} ms"
        ),
    );
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_lists_changed_gone_and_new_files() {
        let a: BTreeMap<String, String> = [("/a/cpu.weight", "100\n"), ("/b/cpu.max", "max\n")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut b = a.clone();
        assert!(changes(&a, &b).is_empty());
        b.insert("/a/cpu.weight".into(), "200\n".into());
        b.remove("/b/cpu.max");
        b.insert("/c/cpu.idle".into(), "0\n".into());
        assert_eq!(
            changes(&a, &b),
            [
                "/a/cpu.weight: \"100\" -> \"200\"",
                "/b/cpu.max: gone",
                "/c/cpu.idle: new"
            ]
        );
    }

    #[test]
    fn gained_wants_more_where_the_mix_took_some_and_a_whole_cpu_where_it_took_none() {
        // A CI run's figures: left alone by the kernel, kept a whole CPU.
        assert!(gained(0.998, 0.992));
        assert!(!gained(0.998, 0.97));
        // A loaded host's: the mix took some, corral gave it back.
        assert!(gained(0.934, 0.995));
        assert!(!gained(0.95, 0.94));
        assert!(!gained(0.95, 0.95));
    }
}
