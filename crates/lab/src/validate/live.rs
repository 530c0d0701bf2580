//! The live side.

use super::*;

/// What the live run measured, per thread in rt-app's order.
pub(super) struct Live {
    pub(super) counters: Vec<Counters>,
    pub(super) logs: Vec<Vec<LogLine>>,
    pub(super) wall: Duration,
    pub(super) others_cpu: f64,
    pub(super) steal_cpu: f64,
    pub(super) notes: Vec<String>,
    /// The use case's start, CLOCK_MONOTONIC µs (from the logs).
    pub(super) t0_us: Option<i64>,
    /// The machine's other threads, traced, for the simulation (none
    /// when not asked for or not traceable: the notes say why).
    pub(super) others: Vec<rtapp::Task>,
}

/// A thread's counters so far: `schedstat` (run ns, run-queue wait ns,
/// time slices) and from `sched` its migrations and preemptions. The
/// simulator keeps the same five.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Counters {
    pub(super) run: u64,
    pub(super) wait: u64,
    pub(super) slices: u64,
    pub(super) migrations: u64,
    pub(super) preemptions: u64,
}

impl Counters {
    /// `self − earlier`.
    pub(super) fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            run: self.run - earlier.run,
            wait: self.wait - earlier.wait,
            slices: self.slices - earlier.slices,
            migrations: self.migrations - earlier.migrations,
            preemptions: self.preemptions - earlier.preemptions,
        }
    }
}

/// Reads `/proc/PID/task/TID/{schedstat,sched}` (`dir` is the task's).
pub(super) fn read_counters(dir: &Path) -> Option<Counters> {
    let text = std::fs::read_to_string(dir.join("schedstat")).ok()?;
    let (run, wait, slices) = corral_linux::sampler::parse_schedstat(text.as_bytes())?;
    let sched = std::fs::read_to_string(dir.join("sched")).ok()?;
    let field = |name: &str| -> Option<u64> {
        sched.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse().ok())?
        })
    };
    Some(Counters {
        run,
        wait,
        slices,
        migrations: field("se.nr_migrations")?,
        preemptions: field("nr_involuntary_switches")?,
    })
}

/// The machine's busy and stolen time so far (`/proc/stat`, USER_HZ ticks).
pub(super) fn cpu_ticks(procfs: &Path) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(procfs.join("stat")).ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal
    let busy = f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)?;
    Some((busy, *f.get(7)?))
}

/// The process rt-app started here, to be stopped on the way out.
pub(super) struct RtApp<'a> {
    pub(super) groups: &'a mut LabGroups,
    pub(super) pid: u32,
    pub(super) output: PathBuf,
    pub(super) done: bool,
}

impl RtApp<'_> {
    /// Its status if it ended.
    fn ended(&mut self) -> Result<Option<std::process::ExitStatus>> {
        let s = self.groups.try_wait(self.pid)?;
        if s.is_some() {
            self.done = true;
        }
        Ok(s)
    }

    /// The last lines rt-app printed.
    fn output_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.output).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(5)..].join(" | ")
    }

    /// Asks rt-app to stop (SIGTERM: it ends its threads and flushes
    /// its logs), then kills it after `grace`. True if it ended by itself.
    fn stop(&mut self, grace: Duration) -> bool {
        if self.done {
            return true;
        }
        let _ = self.groups.signal(self.pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if matches!(self.ended(), Ok(Some(_))) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.groups.kill(self.pid);
        self.done = true;
        false
    }
}

impl Drop for RtApp<'_> {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

/// Starts rt-app on `json` in the run's root group, in a process group
/// of its own (a Ctrl-C reaches corral, which stops it), with 1 ns of
/// timer slack.
pub(super) fn start_rtapp<'a>(
    o: &Options,
    groups: &'a mut LabGroups,
    json: &Path,
    dir: &Path,
) -> Result<RtApp<'a>> {
    let output = dir.join("rt-app.out");
    let out = std::fs::File::create(&output).map_err(Error::io(&output))?;
    let err = out.try_clone().map_err(Error::io(&output))?;
    let mut cmd = Command::new(&o.env.rtapp);
    cmd.arg(json)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    // SAFETY: between fork and exec only one raw system call (prctl).
    unsafe {
        cmd.pre_exec(|| {
            rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1))?;
            Ok(())
        });
    }
    let root = groups.root().to_path_buf();
    let pid = groups.start(&root, cmd)?;
    Ok(RtApp {
        groups,
        pid,
        output,
        done: false,
    })
}

/// Sleeps until `until`, calling `each` every 100 ms; fails when the
/// stop flag is set or rt-app ends.
pub(super) fn wait_until(
    o: &Options,
    rt: &mut RtApp<'_>,
    until: Instant,
    mut each: impl FnMut(),
) -> Result<()> {
    loop {
        if o.stop.load(Ordering::SeqCst) {
            return Err(Error::Interrupted);
        }
        if let Some(s) = rt.ended()? {
            return Err(Error::Command {
                program: "rt-app".into(),
                why: format!("ended early ({s}); it printed: {}", rt.output_tail()),
            });
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::sleep((until - now).min(Duration::from_millis(100)));
        each();
    }
}

/// Waits for rt-app to end by itself (its `duration`), at most `limit`.
pub(super) fn wait_exit(o: &Options, rt: &mut RtApp<'_>, limit: Duration) -> Result<bool> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if o.stop.load(Ordering::SeqCst) {
            return Err(Error::Interrupted);
        }
        if let Some(s) = rt.ended()? {
            if !s.success() {
                return Err(Error::Command {
                    program: "rt-app".into(),
                    why: format!("failed ({s}); it printed: {}", rt.output_tail()),
                });
            }
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(false)
}

/// rt-app's threads: (tid, comm) in the order they were made, without
/// the main one. The kernel hands out ids in increasing order, back to
/// the start past `pid_max` (`alloc_pid`, cyclic): counted from the main
/// thread's id modulo 2^32, a thread made after the wrap (300 after
/// 32767 in one run here) still comes after those made before it.
pub(super) fn threads_now(procfs: &Path, pid: u32) -> Vec<(u32, String)> {
    let dir = procfs.join(pid.to_string()).join("task");
    let mut v: Vec<(u32, String)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&tid| tid != pid)
        .map(|tid| {
            let comm =
                std::fs::read_to_string(dir.join(tid.to_string()).join("comm")).unwrap_or_default();
            (tid, comm.trim_end().to_string())
        })
        .collect();
    v.sort_unstable_by_key(|&(tid, _)| tid.wrapping_sub(pid));
    v
}

/// The name a thread shows in `comm`: rt-app names it after its task; a
/// name over 15 bytes cannot be set and it stays "rt-app".
pub(super) fn comm_of(task: &str) -> &str {
    if task.len() <= 15 {
        task
    } else {
        "rt-app"
    }
}

/// rt-app's threads, once it has created them all: in index order, each
/// named after its task (they then wait on a barrier and start together,
/// the use case's start).
fn rtapp_threads(o: &Options, rt: &mut RtApp<'_>, threads: &[Thread]) -> Result<Vec<u32>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid = rt.pid;
    Ok(loop {
        if o.stop.load(Ordering::SeqCst) {
            return Err(Error::Interrupted);
        }
        if let Some(s) = rt.ended()? {
            return Err(Error::Command {
                program: "rt-app".into(),
                why: format!(
                    "ended before starting its threads ({s}); it printed: {}",
                    rt.output_tail()
                ),
            });
        }
        let now = threads_now(&o.procfs, pid);
        if now.len() == threads.len()
            && now
                .iter()
                .zip(threads)
                .all(|((_, comm), t)| comm == comm_of(&t.task))
        {
            break now.into_iter().map(|(tid, _)| tid).collect();
        }
        if now.len() > threads.len() || Instant::now() > deadline {
            let seen: Vec<String> = now.iter().map(|(t, c)| format!("{t}:{c}")).collect();
            return Err(Error::Measurement(format!(
                "rt-app's threads are not the workload's {} (found {})",
                threads.len(),
                seen.join(" ")
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    })
}

/// The calling thread as SCHED_FIFO priority 1 until dropped, then as
/// it was (`sched_setattr(2)` with its old attributes).
/// `SCHED_FLAG_RESET_ON_FORK`: no thread or process it starts inherits
/// the policy.
///
/// The live side's thread sleeps 100 ms between readings of rt-app's
/// threads. As a fair task it waited up to 2.8 s for a CPU beside
/// hackbench-groups' sixteen busy threads (a sleeper whose group's load
/// sits on the other CPU gets a small share of this one, from
/// `calc_group_shares`), so the window it measured began late or ended
/// after rt-app had (2 of 3 runs, twice). As SCHED_FIFO it runs when it
/// wakes: its readings, about 50 µs every 100 ms.
struct FifoSampler {
    was: corral_linux::sched::SchedAttr,
}

impl FifoSampler {
    fn new() -> corral_linux::Result<FifoSampler> {
        use corral_linux::sched::{sched_getattr, sched_setattr, SchedAttr};
        // tid 0: the calling thread.
        let was = sched_getattr(0)?;
        sched_setattr(
            0,
            &SchedAttr {
                sched_policy: libc::SCHED_FIFO as u32,
                sched_flags: libc::SCHED_FLAG_RESET_ON_FORK as u64,
                sched_priority: 1,
                ..SchedAttr::default()
            },
        )?;
        Ok(FifoSampler { was })
    }
}

impl Drop for FifoSampler {
    fn drop(&mut self) {
        if let Err(e) = corral_linux::sched::sched_setattr(0, &self.was) {
            eprintln!("corral lab validate: warning: the sampling thread stays SCHED_FIFO: {e}");
        }
    }
}

/// The live rt-app's logs in `dir`, one per thread (rt-app names each
/// `rt-app-<task>-<index>.log`).
pub(super) fn live_logs(dir: &Path, threads: &[Thread]) -> Result<Vec<Vec<LogLine>>> {
    threads
        .iter()
        .enumerate()
        .map(|(i, th)| read_log(&dir.join(format!("rt-app-{}-{i}.log", th.task)), true))
        .collect()
}

pub(super) fn run_live(
    o: &Options,
    groups: &mut LabGroups,
    threads: &[Thread],
    json: &Path,
    dir: &Path,
) -> Result<Live> {
    let root = groups.root().to_path_buf();
    let mut notes = Vec::new();
    let mut others = if o.others {
        match super::others::Others::start() {
            Ok(t) => Some(t),
            Err(e) => {
                notes.push(format!(
                    "the machine's other threads are not replayed: cannot trace them ({e})"
                ));
                None
            }
        }
    } else {
        None
    };
    let mut rt = start_rtapp(o, groups, json, dir)?;
    let pid = rt.pid;
    // This thread reads rt-app's threads on time (SCHED_FIFO 1 from here
    // to the window's last reading), not whenever the fair class gets to
    // it.
    let fifo = match FifoSampler::new() {
        Ok(t) => Some(t),
        Err(e) => {
            notes.push(format!(
                "the lab's sampling thread stays SCHED_OTHER (SCHED_FIFO refused: {e}); beside a busy workload it may read the window's ends late"
            ));
            None
        }
    };
    if let Some(t) = others.as_mut() {
        t.scope(pid);
    }

    let tids = rtapp_threads(o, &mut rt, threads)?;
    if let Some(t) = others.as_ref() {
        let mut all = tids.clone();
        all.push(pid);
        match t.ignore_among(&all) {
            Ok(true) => {}
            Ok(false) => notes.push(format!(
                "the trace of the machine's other threads keeps rt-app's own switches too ({} threads: too many for one filter); reading them costs CPU beside the workload",
                all.len()
            )),
            Err(e) => notes.push(format!(
                "the trace of the machine's other threads keeps rt-app's own switches too (the kernel refused the filter: {e}); reading them costs CPU beside the workload"
            )),
        }
    }
    // The use case's start, from which rt-app counts its duration: just
    // after it made its last thread. This thread may see them late (it
    // polls beside the workload's own threads: sixteen busy ones on two
    // CPUs kept it off a CPU long enough that rt-app ended before the
    // window did), so the last thread's start time says how late (in
    // USER_HZ ticks, 10 ms).
    let late = tids
        .last()
        .and_then(|&t| {
            let start = corral_linux::state::start_time(&o.procfs, pid, t)?;
            let now = corral_linux::state::now_ticks(&o.procfs)?;
            Some(Duration::from_millis(now.saturating_sub(start) * 10))
        })
        .unwrap_or_default();
    let t0 = Instant::now()
        .checked_sub(late)
        .unwrap_or_else(Instant::now);
    for (th, tid) in threads.iter().zip(&tids) {
        if th.group.is_empty() {
            continue;
        }
        let tasks = root.join(&th.group).join("tasks");
        std::fs::write(&tasks, tid.to_string())
            .map_err(|e| Error::io(&tasks)(e).within(format!("cannot move thread {tid}")))?;
    }

    let dirs: Vec<PathBuf> = tids
        .iter()
        .map(|t| {
            o.procfs
                .join(pid.to_string())
                .join("task")
                .join(t.to_string())
        })
        .collect();
    let mut last: Vec<Counters> = vec![Counters::default(); dirs.len()];
    let mut gone = vec![false; dirs.len()];
    let sample = |last: &mut Vec<Counters>, gone: &mut Vec<bool>| {
        for (i, d) in dirs.iter().enumerate() {
            if gone[i] {
                continue;
            }
            match read_counters(d) {
                Some(s) => last[i] = s,
                None => gone[i] = true,
            }
        }
    };

    wait_until(o, &mut rt, t0 + o.warmup, || {})?;
    sample(&mut last, &mut gone);
    let (start, ticks0, w0) = (last.clone(), cpu_ticks(&o.procfs), Instant::now());
    let end_at = t0 + Duration::from_secs(o.seconds) - TAIL;
    wait_until(o, &mut rt, end_at, || sample(&mut last, &mut gone))?;
    sample(&mut last, &mut gone);
    let (ticks1, w1) = (cpu_ticks(&o.procfs), Instant::now());
    drop(fifo);
    let wall = w1 - w0;

    if !wait_exit(o, &mut rt, TAIL + Duration::from_secs(5))? {
        let by_itself = rt.stop(Duration::from_secs(3));
        notes.push(format!(
            "rt-app did not end at its duration; stopped with {} (logs may miss their last lines)",
            if by_itself { "SIGTERM" } else { "SIGKILL" }
        ));
    }
    drop(rt);

    let counters: Vec<Counters> = start.iter().zip(&last).map(|(a, b)| b.since(a)).collect();
    let ours: u64 = counters.iter().map(|c| c.run).sum();
    let (others_cpu, steal_cpu) = match (ticks0, ticks1) {
        (Some((b0, s0)), Some((b1, s1))) => {
            // USER_HZ is 100 on Linux whatever CONFIG_HZ is.
            let busy_ns = (b1 - b0) as f64 * 1e7;
            let w = wall.as_nanos() as f64;
            (
                ((busy_ns - ours as f64) / w).max(0.0),
                (s1 - s0) as f64 * 1e7 / w,
            )
        }
        _ => (f64::NAN, f64::NAN),
    };
    let logs = live_logs(dir, threads)?;
    let t0_us = logs
        .iter()
        .flatten()
        .map(|l| l.abs_start_us - l.start_us)
        .min();
    let others = match (others, t0_us) {
        (Some(t), Some(us)) => {
            let r = t.finish(us.max(0) as u64 * 1000)?;
            let (text, cpu_s) = r.describe();
            // What is replayed, for whoever keeps the run's files.
            let _ = std::fs::write(dir.join("others.txt"), text);
            // What `--from` replays them from.
            let json = dir.join("others.json");
            std::fs::write(&json, r.to_json()).map_err(Error::io(&json))?;
            notes.push(format!(
                "the machine's other threads, traced live, replayed in the simulation: {} threads, {cpu_s:.2} CPU s{}",
                r.tasks.len(),
                if r.lost > 0 {
                    format!(" ({} trace events lost)", r.lost)
                } else {
                    String::new()
                }
            ));
            r.tasks
        }
        (Some(_), None) => {
            notes.push(
                "the machine's other threads are not replayed: rt-app's logs give no start".into(),
            );
            Vec::new()
        }
        (None, _) => Vec::new(),
    };
    Ok(Live {
        others,
        counters,
        logs,
        wall,
        others_cpu,
        steal_cpu,
        notes,
        t0_us,
    })
}

/// Measures rt-app's loop on this machine: with a calibration of 1 ns
/// per loop, `run: 5000` executes 5 000 000 loops; rt-app logs their
/// count (`perf`) and wall time (`run`). Seven of them, alone in the
/// run's group; rt-app gets the median, rounded (it takes an integer).
/// Then how runs of fixed work vary from one to the next, at each of
/// [`SPREAD_PROBES`]' lengths (from about as long as a case's shortest
/// `run` to about 20 ms), each run after a 100 µs sleep ([`run_spread`]);
/// then how late rt-app's timer wakes it after 5 ms asleep, the machine
/// otherwise idle, [`TIMER_PROBES`] times ([`timer_spread`]).
pub(super) fn calibrate(o: &Options, groups: &mut LabGroups, dir: &Path) -> Result<Calibration> {
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    let probes: Vec<String> = SPREAD_PROBES
        .iter()
        .enumerate()
        .map(|(i, (runs, loops))| {
            format!(
                r#""s{i}": {{ "loop": {runs}, "sleep": 100, "run": {} }}"#,
                loops / 1000
            )
        })
        .collect();
    let json = format!(
        r#"{{
	"tasks": {{
		"calibrate": {{ "loop": 1, "phases": {{
			"p": {{ "loop": 7, "run": 5000 }},
			{},
			"t": {{ "loop": {}, "run": {}, "timer": {{ "ref": "probe", "period": {} }} }}
		}} }}
	}},
	"global": {{ "calibration": 1, "duration": -1, "logdir": {}, "log_basename": "rt-app" }}
}}
"#,
        probes.join(",\n\t\t\t"),
        TIMER_PROBES + 1,
        TIMER_PROBE_LOOPS / 1000,
        TIMER_PROBE_PERIOD_US,
        serde_json::to_string(&dir.display().to_string()).expect("strings serialise")
    );
    let path = dir.join("calibrate.json");
    std::fs::write(&path, json).map_err(Error::io(&path))?;
    let mut rt = start_rtapp(o, groups, &path, dir)?;
    if !wait_exit(o, &mut rt, Duration::from_secs(30))? {
        return Err(Error::Measurement(
            "rt-app's loop measurement did not end within 30 s".into(),
        ));
    }
    drop(rt);
    let log = dir.join("rt-app-calibrate-0.log");
    let text = std::fs::read_to_string(&log).map_err(Error::io(&log))?;
    let fields = log_fields(&text);
    let lines: Vec<(f64, f64)> = fields.iter().map(|f| (f[1], f[2])).collect();
    let timer_lats = timer_lats(&fields);
    // The seven runs of `run: 5000` at 1 ns a loop: 5 000 000 loops.
    let mut ns: Vec<f64> = lines
        .iter()
        .filter(|(perf, _)| *perf as u64 == 5_000_000)
        .map(|(perf, run)| run * 1e3 / perf)
        .collect();
    // Each probe's runs, by their loop count.
    let runs_of = |loops: u64| -> Vec<f64> {
        lines
            .iter()
            .filter(|(perf, _)| *perf as u64 == loops)
            .map(|&(_, run)| run)
            .collect()
    };
    let run_spreads: Vec<RunSpread> = SPREAD_PROBES
        .iter()
        .filter_map(|&(_, loops)| {
            let runs = runs_of(loops);
            let factors = run_spread(runs.clone());
            (!factors.is_empty()).then(|| RunSpread {
                median_us: median_of(runs),
                factors,
            })
        })
        .collect();
    if ns.is_empty() {
        return Err(Error::Parse {
            what: log.display().to_string(),
            why: "no measurement".into(),
        });
    }
    ns.sort_by(f64::total_cmp);
    let median = ns[ns.len() / 2];
    Ok(Calibration {
        samples: ns.len(),
        ns_per_loop_min: ns[0],
        ns_per_loop_median: median,
        ns_per_loop_max: ns[ns.len() - 1],
        used: (median.round() as u32).max(1),
        run_spread: run_spreads
            .first()
            .map(|s| s.factors.clone())
            .unwrap_or_default(),
        run_spreads,
        timer_spread: timer_spread(timer_lats),
    })
}

/// The timer probe: [`TIMER_PROBES`] wake-ups (and the timer's first
/// use, which does not sleep), each from a sleep of about 5 ms, each
/// followed by [`TIMER_PROBE_LOOPS`] loops (about 40 µs; a loop count
/// none of the other probes uses): 1.5 s.
const TIMER_PROBES: usize = 300;
const TIMER_PROBE_LOOPS: u64 = 3_000;
const TIMER_PROBE_PERIOD_US: u64 = 5_000;
const _: () = {
    let mut i = 0;
    while i < SPREAD_PROBES.len() {
        assert!(SPREAD_PROBES[i].1 != TIMER_PROBE_LOOPS);
        i += 1;
    }
    assert!(TIMER_PROBE_LOOPS.is_multiple_of(1000) && TIMER_PROBE_LOOPS != 5_000_000);
};

/// The numeric fields of each line of rt-app's calibration log that ran
/// loops (`idx perf run …`: perf, the loops; run, µs; wu_lat, µs).
fn log_fields(text: &str) -> Vec<Vec<f64>> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect::<Vec<f64>>()
        })
        .filter(|f| f.len() >= 3 && f[1] > 0.0)
        .collect()
}

/// The timer probe's wake-up latencies (`wu_lat`, µs) from the
/// calibration log's numeric fields (`idx perf run period start end
/// rel_st slack c_duration c_period wu_lat`): its lines by their loop
/// count, less those that did not sleep — rt-app's timer already past
/// (its first use, or after a wake-up over a period late) logs a
/// `wu_lat` of 0 with a negative slack.
fn timer_lats(fields: &[Vec<f64>]) -> Vec<f64> {
    fields
        .iter()
        .filter(|f| f.len() >= 11 && f[1] as u64 == TIMER_PROBE_LOOPS)
        .filter(|f| !(f[10] == 0.0 && f[7] < 0.0))
        .map(|f| f[10])
        .collect()
}

/// How late a timer wakes a thread on an idle CPU, from rt-app's
/// `wu_lat` (µs) after each sleep: every one, sorted, over their median,
/// each as likely (the platform's `timer_wakeup_spread`, times the cost
/// `corral lab costs` measures). All of them, not percentiles: the tail
/// is a few percent of the wake-ups, and a thread's p99 is wherever the
/// spread puts its slowest percent (one value standing for the slowest
/// percent made every thread's p99 that value). Fewer than 100 say
/// nothing: none.
pub(super) fn timer_spread(mut lats: Vec<f64>) -> Vec<f64> {
    if lats.len() < 100 {
        return Vec::new();
    }
    lats.sort_by(f64::total_cmp);
    let median = lats[lats.len() / 2];
    if median <= 0.0 {
        return Vec::new();
    }
    // (Within what a platform file takes.)
    lats.iter()
        .map(|&l| (l / median).clamp(0.01, 1000.0))
        .collect()
}

/// The runs timed for [`run_spread`]: how many, of how many loops (a
/// multiple of 1000: rt-app's `run` in µs at 1 ns a loop) — about 0.14,
/// 1, 5 and 20 ms at 14 ns a loop, 2.0 s in all, sleeps included.
const SPREAD_PROBES: [(usize, u64); 4] = [
    (1000, 10_000),
    (300, 70_000),
    (100, 350_000),
    (50, 1_400_000),
];
const _: () = {
    let mut i = 0;
    while i < SPREAD_PROBES.len() {
        assert!(SPREAD_PROBES[i].1.is_multiple_of(1000) && SPREAD_PROBES[i].1 != 5_000_000);
        i += 1;
    }
};

/// The middle value (the upper one of an even count); 0 for none.
fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The spread of runs of fixed work, from their wall times: the 5th,
/// 10th, … 95th percentiles over the median, 19 factors each as likely
/// (nearest rank). Fewer than 50 runs say nothing: none.
///
/// XXX: the top 5 % are left out, where a tick (23-27 µs here, on about
/// 3.5 % of 140 µs runs at 250 Hz) or another interrupt landed: the
/// simulator charges the tick itself. A longer run holds a tick more
/// often: about a quarter of 1 ms runs do, so that spread's 80th to 95th
/// percentiles carry one (+2.5 %), charged again by the simulator; a run
/// of 5 ms or more holds one or more, and the median takes out their
/// average, not their count's spread (a tick is under 0.6 % of such a
/// run).
pub(super) fn run_spread(mut runs: Vec<f64>) -> Vec<f64> {
    if runs.len() < 50 {
        return Vec::new();
    }
    runs.sort_by(f64::total_cmp);
    let at = |q: usize| runs[(runs.len() * q / 100).min(runs.len() - 1)];
    let median = at(50);
    if median <= 0.0 {
        return Vec::new();
    }
    // (Within what a platform file takes.)
    (1..20)
        .map(|i| (at(5 * i) / median).clamp(0.5, 2.0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_spread_is_its_percentiles_over_the_median() {
        assert!(run_spread(vec![85.0; 49]).is_empty(), "too few");
        // 90 runs of 85 µs, 10 of 93 (one in ten hit by something).
        let mut runs = vec![93.0; 10];
        runs.extend([85.0; 90]);
        let f = run_spread(runs);
        assert_eq!(f.len(), 19);
        assert!(f[..17].iter().all(|&x| x == 1.0), "{f:?}");
        assert_eq!(f[17..], [93.0 / 85.0, 93.0 / 85.0]);
        // A run over twice the median is held to what a platform takes.
        let mut runs = vec![400.0; 10];
        runs.extend([100.0; 90]);
        assert_eq!(run_spread(runs)[18], 2.0);
    }

    #[test]
    fn a_timer_spread_is_every_wake_up_over_the_median() {
        assert!(timer_spread(vec![50.0; 99]).is_empty(), "too few");
        // 95 wake-ups of 50 µs, 4 of 250 and one of 0 µs, shuffled.
        let mut lats = vec![50.0; 95];
        lats.extend([250.0; 4]);
        lats.insert(37, 0.0);
        lats.swap(3, 97);
        let f = timer_spread(lats);
        assert_eq!(f.len(), 100);
        assert_eq!(f[0], 0.01, "held to what a platform takes");
        assert!(f[1..96].iter().all(|&x| x == 1.0), "{f:?}");
        assert_eq!(f[96..], [5.0; 4]);
    }

    #[test]
    fn the_timer_probe_s_wake_ups_are_its_lines_that_slept() {
        // rt-app's log (calibration 1): the timer's first use (past: no
        // sleep), two wake-ups, one 6 ms late, the next that found its
        // timer past, a line of another probe.
        let log = "\
# Policy : SCHED_OTHER priority : 0
#idx    perf     run   period     start       end    rel_st   slack c_duration c_period wu_lat
   1    3000      41       45  10000000  10000041   5000000   -4955          3     5000      0
   1    3000      40     5001  10005001  10005041   5005001    4940          3     5000     56
   1    3000      42    11043  10016044  10016086   5016044   -1086          3     5000   6044
   1    3000      41     3998  10016086  10016127   5016086   -2127          3     5000      0
   1    3000      40     4957  10025043  10025083   5025043    4917          3     5000     43
   0   10000     139      139  10025083  10025222   5025083       0        139        0      0
";
        let fields = log_fields(log);
        assert_eq!(timer_lats(&fields), [56.0, 6044.0, 43.0]);
    }

    #[test]
    fn threads_come_in_the_order_they_were_made_across_the_id_wrap() {
        let dir = tempfile::tempdir().unwrap();
        let pid = 32760u32;
        for (tid, comm) in [
            (pid, "rt-app"),
            (32766, "hog"),
            (32767, "periodic"),
            (300, "hog"),
        ] {
            let t = dir.path().join(format!("{pid}/task/{tid}"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("comm"), format!("{comm}\n")).unwrap();
        }
        assert_eq!(
            threads_now(dir.path(), pid),
            [
                (32766, "hog".to_string()),
                (32767, "periodic".to_string()),
                (300, "hog".to_string())
            ]
        );
    }
}
