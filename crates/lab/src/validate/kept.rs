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
    /// This invocation's mark (its cgroup root and start, Unix seconds),
    /// also in each run it keeps: a run of another invocation left in
    /// the same directory is told apart and left out.
    pub(super) invocation: String,
    pub(super) machine: MachineInfo,
    pub(super) sim: SimInfo,
    pub(super) seconds: u64,
    pub(super) warmup_ms: u64,
    /// Left out at the window's end ([`TAIL`] then).
    pub(super) tail_ms: u64,
    pub(super) runs: usize,
    /// The cases this invocation ran.
    pub(super) cases: Vec<String>,
}

impl Settings {
    pub(super) fn new(
        machine: MachineInfo,
        sim: SimInfo,
        o: &Options,
        tail: Duration,
        cases: &[&Case],
    ) -> Settings {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Settings {
            invocation: format!(
                "corral-validate-{} {}",
                std::process::id(),
                since_epoch.as_secs()
            ),
            machine,
            sim,
            seconds: o.seconds,
            warmup_ms: o.warmup.as_millis() as u64,
            tail_ms: tail.as_millis() as u64,
            runs: o.runs.max(1),
            cases: cases.iter().map(|c| c.name.to_string()).collect(),
        }
    }
}

/// What one live run measured beyond its logs.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct KeptLive {
    /// [`Settings::invocation`] of the invocation that ran it.
    invocation: String,
    /// The run's cgroup root (`/corral-validate-<pid>`), which the
    /// workload's `taskgroup`s name.
    root: String,
    /// The case's groups and their `cpu.shares`, as run.
    groups: Vec<(String, u64)>,
    calibration: Calibration,
    counters: Vec<Counters>,
    wall_ns: u64,
    /// None where `/proc/stat` could not be read (NaN live).
    others_cpu: Option<f64>,
    steal_cpu: Option<f64>,
    notes: Vec<String>,
    t0_us: Option<i64>,
    /// How many of the machine's other threads were replayed
    /// (`others.json`).
    others: usize,
}

/// Writes `value` as JSON to `path` whole or not at all (a temporary
/// file renamed over it): a run's `live.json` marks it as kept whole.
fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("plain data");
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(Error::io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::io(path))
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

/// Writes what the live run measured beyond its logs in its `live_dir`
/// (last: its presence says the run was kept whole).
pub(super) fn write_live(
    live_dir: &Path,
    invocation: &str,
    live: &Live,
    cal: &Calibration,
    root: &str,
    groups: &[(&str, u64)],
) -> Result<()> {
    let finite = |x: f64| x.is_finite().then_some(x);
    write_json(
        &live_dir.join(LIVE),
        &KeptLive {
            invocation: invocation.into(),
            root: root.into(),
            groups: groups.iter().map(|(g, s)| (g.to_string(), *s)).collect(),
            calibration: cal.clone(),
            counters: live.counters.clone(),
            wall_ns: live.wall.as_nanos() as u64,
            others_cpu: finite(live.others_cpu),
            steal_cpu: finite(live.steal_cpu),
            notes: live.notes.clone(),
            t0_us: live.t0_us,
            others: live.others.len(),
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
    /// Simulate the packing measured then, if it was (`--no-pack`:
    /// placed as upstream).
    pub pack: bool,
    /// The simulation's seed, if not the one kept.
    pub seed: Option<u64>,
}

/// The simulated machine of `--from`: the one kept, with the costs
/// unless `a.costs` is off, and the packing measured then (if any)
/// unless `a.pack` is.
fn simulated_machine(settings: &Settings, a: &Again) -> SimInfo {
    let mut sim = settings.sim.clone();
    if !a.costs {
        sim.costs = None;
    }
    if !a.pack {
        sim.vcpu_pack_util = None;
    }
    if let Some(seed) = a.seed {
        sim.seed = seed;
    }
    sim
}

/// Simulates the runs kept in `a.from` again, with this build's
/// simulator, and compares them with their live figures as `run` does.
/// The kept files are only read: the simulated side's go to a
/// temporary directory, removed at the end.
pub fn again(a: &Again, mut progress: impl FnMut(&str)) -> Result<Report> {
    let settings: Settings = read_json(
        &a.from.join(SETTINGS),
        "not a directory kept by `corral lab validate --keep` (or kept by a corral without --from)",
    )?;
    let sim = simulated_machine(&settings, a);
    if a.pack && sim.vcpu_pack_util.is_none() {
        progress(&format!(
            "the runs in {} were kept without a packing measured (--no-pack, an older corral, or none found): wake-ups placed as upstream",
            a.from.display()
        ));
    }
    let run = Window {
        warmup: Duration::from_millis(settings.warmup_ms),
        seconds: settings.seconds,
        tail: Duration::from_millis(settings.tail_ms),
    };
    let scratch = std::env::temp_dir().join(format!("corral-validate-from-{}", std::process::id()));
    let result = again_cases(a, &settings, &sim, run, &scratch, &mut progress);
    let _ = std::fs::remove_dir_all(&scratch);
    let cases = result?;
    if cases.is_empty() {
        return Err(Error::Invalid(format!(
            "no case{} kept in {} (it kept: {})",
            a.case
                .as_deref()
                .map(|n| format!(" matching {n:?}"))
                .unwrap_or_default(),
            a.from.display(),
            settings.cases.join(", ")
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

/// The kept cases that `a` selects, each run simulated in `scratch`.
fn again_cases(
    a: &Again,
    settings: &Settings,
    sim: &SimInfo,
    run: Window,
    scratch: &Path,
    progress: &mut impl FnMut(&str),
) -> Result<Vec<CaseReport>> {
    let mut cases = Vec::new();
    for case in CASES.iter().filter(|c| {
        settings.cases.iter().any(|k| k == c.name)
            && a.case.as_deref().is_none_or(|n| c.name.contains(n))
    }) {
        let mut reps = Vec::new();
        let mut left_out = Vec::new();
        for r in 1..=settings.runs {
            let rel = run_dir(case, settings.runs, r);
            let dir = a.from.join(&rel);
            if !dir.join("live").join(LIVE).exists() {
                left_out.push(format!(
                    "run {r} was not kept whole (it failed or was skipped, or the experiment stopped in it) and is left out"
                ));
                continue;
            }
            let kept = match read_run(&dir, &settings.invocation) {
                Ok(k) => k,
                Err(e) => {
                    left_out.push(format!("run {r} is left out: {e}"));
                    continue;
                }
            };
            progress(&format!("{}: run {r}: simulated again", case.name));
            let groups: Vec<(&str, u64)> =
                kept.groups.iter().map(|(g, s)| (g.as_str(), *s)).collect();
            let out = scratch.join(&rel);
            std::fs::create_dir_all(&out).map_err(Error::io(&out))?;
            let rep = compare(
                run,
                case,
                &groups,
                sim,
                &out,
                &kept.work,
                &kept.threads,
                kept.live,
                kept.calibration,
                &kept.root,
                &mut |_: &str| {},
            )
            .map_err(|e| e.within(format!("{} run {r}", case.name)))?;
            reps.push(rep);
        }
        if reps.is_empty() {
            cases.push(skipped(case, left_out.join("; ")));
        } else {
            cases.push(summarise(reps, left_out));
        }
    }
    Ok(cases)
}

/// One kept run, read back.
struct KeptRun {
    work: rtapp::Workload,
    threads: Vec<Thread>,
    live: Live,
    calibration: Calibration,
    root: String,
    groups: Vec<(String, u64)>,
}

/// The run kept in `dir` by the invocation `invocation`.
fn read_run(dir: &Path, invocation: &str) -> Result<KeptRun> {
    let live_dir = dir.join("live");
    let live_path = live_dir.join(LIVE);
    let k: KeptLive = read_json(&live_path, "the live run's figures")?;
    if k.invocation != invocation {
        return Err(Error::Parse {
            what: live_path.display().to_string(),
            why: format!(
                "kept by another invocation ({}, not {invocation}) in the same directory",
                k.invocation
            ),
        });
    }
    let path = dir.join("workload.json");
    let text = std::fs::read_to_string(&path).map_err(Error::io(&path))?;
    let work = rtapp::parse(&text, &path.display().to_string())?;
    let threads = threads_of(&work, &k.root);
    if k.counters.len() != threads.len() {
        return Err(Error::Parse {
            what: live_path.display().to_string(),
            why: format!(
                "{} threads' counters for the workload's {} threads",
                k.counters.len(),
                threads.len()
            ),
        });
    }
    let logs = live_logs(&live_dir, &threads)?;
    let others_path = live_dir.join("others.json");
    let others = if k.others == 0 {
        Vec::new()
    } else {
        let t = std::fs::read_to_string(&others_path).map_err(Error::io(&others_path))?;
        rtapp::parse(&t, &others_path.display().to_string())?.tasks
    };
    if others.len() != k.others {
        return Err(Error::Parse {
            what: others_path.display().to_string(),
            why: format!("{} threads where {} were replayed", others.len(), k.others),
        });
    }
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
    Ok(KeptRun {
        work,
        threads,
        live,
        calibration: k.calibration,
        root: k.root,
        groups: k.groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(costs: Option<crate::costs::Costs>, pack: Option<u64>) -> Settings {
        Settings {
            invocation: "corral-validate-1 2".into(),
            machine: MachineInfo {
                kernel: "6.18".into(),
                config: "/proc/config.gz".into(),
                hz: Some(250),
                preempt: "none".into(),
                cpus: 2,
                rtapp: "rt-app".into(),
                timer_slack_ns: 1,
            },
            sim: SimInfo {
                kernel: "eevdf".into(),
                cpus: 2,
                capacity: 1024,
                hz: 250,
                costs,
                timer_slack_ns: 1,
                vcpu_pack_util: pack,
                seed: 0,
            },
            seconds: 10,
            warmup_ms: 1000,
            tail_ms: 250,
            runs: 3,
            cases: vec!["hackbench-groups".into()],
        }
    }

    /// The simulated machine of `--from` has the costs kept unless
    /// `--no-costs`, and the packing kept unless `--no-pack`; where none
    /// was measured it places wake-ups as upstream.
    #[test]
    fn from_gives_the_costs_and_the_packing_kept_unless_told_not_to() {
        let costs = crate::costs::Costs {
            context_switch_ns: 5000,
            wakeup_ns: 7000,
            timer_wakeup_ns: 60_000,
            timer_preempt_ns: 13_000,
            migration_ns: 700,
            tick_ns: 29_000,
            waker_ns: 4_000,
            waker_local_ns: 900,
        };
        let a = |costs, pack| Again {
            from: "/kept".into(),
            case: None,
            costs,
            pack,
            seed: None,
        };
        let kept = settings(Some(costs), Some(717));
        let sim = simulated_machine(&kept, &a(true, false));
        assert_eq!((sim.costs, sim.vcpu_pack_util), (Some(costs), None));
        let sim = simulated_machine(&kept, &a(false, true));
        assert_eq!((sim.costs, sim.vcpu_pack_util), (None, Some(717)));
        // The seed kept, unless another is given.
        assert_eq!(simulated_machine(&kept, &a(true, true)).seed, 0);
        let seeded = Again {
            seed: Some(5),
            ..a(true, true)
        };
        assert_eq!(simulated_machine(&kept, &seeded).seed, 5);
        // Kept without packing: placed as upstream.
        let sim = simulated_machine(&settings(None, None), &a(true, true));
        assert_eq!((sim.costs, sim.vcpu_pack_util), (None, None));
        // The settings read back as written (what `--from` relies on).
        let text = serde_json::to_string(&kept).unwrap();
        let back: Settings = serde_json::from_str(&text).unwrap();
        assert_eq!(back.sim.costs, Some(costs));
        assert_eq!(back.invocation, kept.invocation);
    }

    /// A run kept by another invocation in the same directory, or one
    /// without its `live.json`, is left out with a reason; `--from` over
    /// a directory with neither settings nor runs says what it lacks.
    #[test]
    fn runs_of_another_invocation_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("live");
        std::fs::create_dir_all(&live).unwrap();
        let mut k = serde_json::json!({
            "invocation": "corral-validate-9 9", "root": "/corral-validate-9",
            "groups": [], "calibration": {"samples": 7, "ns_per_loop_min": 1.0,
            "ns_per_loop_median": 1.0, "ns_per_loop_max": 1.0, "used": 1},
            "counters": [], "wall_ns": 1, "others_cpu": null, "steal_cpu": null,
            "notes": [], "t0_us": null, "others": 0
        });
        std::fs::write(live.join(LIVE), k.to_string()).unwrap();
        let e = read_run(dir.path(), "corral-validate-1 2")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("another invocation") && e.contains("corral-validate-9 9"),
            "{e}"
        );
        // The right invocation gets past that, to the workload it lacks.
        k["invocation"] = "corral-validate-1 2".into();
        std::fs::write(live.join(LIVE), k.to_string()).unwrap();
        let e = read_run(dir.path(), "corral-validate-1 2")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("workload.json"), "{e}");
        let e = again(
            &Again {
                from: dir.path().to_path_buf(),
                case: None,
                costs: true,
                pack: false,
                seed: None,
            },
            |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("validate.json") && e.contains("--keep"), "{e}");
    }
}
