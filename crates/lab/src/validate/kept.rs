//! `--keep` and `--from`: a kept live run, simulated again.
//!
//! `--keep DIR` leaves, beside each run's rt-app logs and the machine's
//! other threads (`live/others.json`), what the live side measured that
//! those files do not hold, in `live/live.json`: each thread's counters
//! over the window, the window's wall time, what the rest of the machine
//! and the hypervisor took, the run's cgroup root and rt-app's
//! calibration; and in DIR the experiment's settings, `validate.json`.
//!
//! `--from DIR` reads them back and simulates each kept run again with
//! this build's simulator. A change to the model is then scored on the
//! very live draws the old model was scored on: across two invocations
//! the live draws differ (one live run's p99 varies by more than 20 %
//! here, and the host's costs drift), which hides a change's effect.

use super::*;

/// The file in the kept directory that holds the experiment's settings.
const SETTINGS: &str = "validate.json";
/// The file in each run's `live/` that holds what its logs do not.
const LIVE: &str = "live.json";

/// The experiment's settings, as kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Settings {
    pub(super) machine: MachineInfo,
    pub(super) sim: SimInfo,
    pub(super) seconds: u64,
    pub(super) warmup_ms: u64,
    pub(super) runs: usize,
}

/// What one live run measured beyond its logs.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct KeptLive {
    /// The run's cgroup root (`/corral-validate-<pid>`), which the
    /// workload's `taskgroup`s name.
    root: String,
    calibration: Calibration,
    counters: Vec<Counters>,
    wall_ns: u64,
    /// None where `/proc/stat` could not be read (NaN live).
    others_cpu: Option<f64>,
    steal_cpu: Option<f64>,
    notes: Vec<String>,
    t0_us: Option<i64>,
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("plain data");
    std::fs::write(path, text).map_err(Error::io(path))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path, what: &str) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::Invalid(format!("{}: not found: {what}", path.display()))
        } else {
            Error::io(path)(e)
        }
    })?;
    serde_json::from_str(&text).map_err(|e| Error::Parse {
        what: format!("{}:{}", path.display(), e.line()),
        why: e.to_string(),
    })
}

/// Writes the experiment's settings in the kept directory `base`.
pub(super) fn write_settings(base: &Path, settings: &Settings) -> Result<()> {
    write_json(&base.join(SETTINGS), settings)
}

/// Writes what the live run measured beyond its logs in its `live_dir`.
pub(super) fn write_live(
    live_dir: &Path,
    live: &Live,
    cal: &Calibration,
    root: &str,
) -> Result<()> {
    let finite = |x: f64| x.is_finite().then_some(x);
    write_json(
        &live_dir.join(LIVE),
        &KeptLive {
            root: root.into(),
            calibration: cal.clone(),
            counters: live.counters.clone(),
            wall_ns: live.wall.as_nanos() as u64,
            others_cpu: finite(live.others_cpu),
            steal_cpu: finite(live.steal_cpu),
            notes: live.notes.clone(),
            t0_us: live.t0_us,
        },
    )
}

/// What `--from` simulates again.
#[derive(Debug, Clone)]
pub struct Again {
    /// The directory `--keep` wrote.
    pub from: PathBuf,
    /// Only the cases whose name contains this.
    pub case: Option<String>,
    /// Give the simulated machine the costs measured then, if they were
    /// (`--no-costs` clears it).
    pub costs: bool,
    /// Simulate the packing measured then (`--pack`).
    pub pack: bool,
}

/// Simulates the runs kept in `a.from` again, with this build's
/// simulator, and compares them with their live figures as `run` does.
pub fn again(a: &Again, mut progress: impl FnMut(&str)) -> Result<Report> {
    let settings: Settings = read_json(
        &a.from.join(SETTINGS),
        "not a directory kept by `corral lab validate --keep` (or kept by a corral without --from)",
    )?;
    let mut sim = settings.sim.clone();
    let kept_without = |option: &str, what: &str| {
        Error::Invalid(format!(
            "{option}: the runs in {} were kept without it: {what}",
            a.from.display()
        ))
    };
    if !a.costs {
        sim.costs = None;
    }
    match (a.pack, sim.vcpu_pack_util) {
        (false, _) => sim.vcpu_pack_util = None,
        (true, None) => {
            return Err(kept_without(
                "--pack",
                "no packing was measured then (the placement probe did not run, or found none)",
            ))
        }
        (true, Some(_)) => {}
    }
    let run = Window {
        warmup: Duration::from_millis(settings.warmup_ms),
        seconds: settings.seconds,
    };
    let mut cases = Vec::new();
    for case in CASES
        .iter()
        .filter(|c| a.case.as_deref().is_none_or(|n| c.name.contains(n)))
    {
        let mut reps = Vec::new();
        let mut failed = Vec::new();
        for r in 1..=settings.runs {
            let dir = if settings.runs == 1 {
                a.from.join(case.name)
            } else {
                a.from.join(case.name).join(format!("run-{r}"))
            };
            if !dir.exists() {
                continue;
            }
            if !dir.join("live").join(LIVE).exists() {
                failed.push(format!(
                    "run {r} was not kept whole (it failed, or the experiment stopped in it) and is left out"
                ));
                continue;
            }
            progress(&format!("{}: run {r}: simulated again", case.name));
            let (work, threads, live, cal, root) = read_run(&dir)?;
            let rep = compare(
                run,
                case,
                &sim,
                &dir,
                &work,
                &threads,
                live,
                cal,
                &root,
                &mut |_: &str| {},
            )
            .map_err(|e| e.within(format!("{} run {r}", case.name)))?;
            reps.push(rep);
        }
        if !reps.is_empty() {
            cases.push(summarise(reps, failed));
        }
    }
    if cases.is_empty() {
        return Err(Error::Invalid(format!(
            "no case{} kept whole in {}",
            a.case
                .as_deref()
                .map(|n| format!(" matching {n:?}"))
                .unwrap_or_default(),
            a.from.display()
        )));
    }
    Ok(Report {
        machine: settings.machine,
        sim,
        seconds: settings.seconds,
        warmup_s: run.warmup.as_secs_f64(),
        latency: LATENCY,
        cases,
        kept: Some(a.from.clone()),
        again: true,
    })
}

/// One kept run: its workload, threads, live side, calibration and root.
fn read_run(dir: &Path) -> Result<(rtapp::Workload, Vec<Thread>, Live, Calibration, String)> {
    let live_dir = dir.join("live");
    let k: KeptLive = read_json(&live_dir.join(LIVE), "the live run's figures")?;
    let path = dir.join("workload.json");
    let text = std::fs::read_to_string(&path).map_err(Error::io(&path))?;
    let work = rtapp::parse(&text, &path.display().to_string())?;
    let threads = threads_of(&work, &k.root);
    if k.counters.len() != threads.len() {
        return Err(Error::Parse {
            what: live_dir.join(LIVE).display().to_string(),
            why: format!(
                "{} threads' counters for the workload's {} threads",
                k.counters.len(),
                threads.len()
            ),
        });
    }
    let logs = threads
        .iter()
        .enumerate()
        .map(|(i, th)| read_log(&live_dir.join(format!("rt-app-{}-{i}.log", th.task)), true))
        .collect::<Result<Vec<_>, _>>()?;
    let others_path = live_dir.join("others.json");
    let others = match std::fs::read_to_string(&others_path) {
        Ok(t) => rtapp::parse(&t, &others_path.display().to_string())?.tasks,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(Error::io(&others_path)(e)),
    };
    let live = Live {
        counters: k.counters,
        logs,
        wall: Duration::from_nanos(k.wall_ns),
        others_cpu: k.others_cpu.unwrap_or(f64::NAN),
        steal_cpu: k.steal_cpu.unwrap_or(f64::NAN),
        notes: k.notes,
        t0_us: k.t0_us,
        others,
    };
    Ok((work, threads, live, k.calibration, k.root))
}
