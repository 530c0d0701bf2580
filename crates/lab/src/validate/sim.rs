//! The simulated side.

use super::*;

/// Each simulated thread's counters so far.
pub(super) fn counters<K: corral_sim::sched::kernel::SchedClass>(
    m: &corral_sim::sched::machine::Machine<K>,
) -> Vec<Counters> {
    (0..m.ntasks())
        .map(|t| {
            let s = m.task_stats(t);
            Counters {
                run: s.cpu_ns,
                wait: s.wait_ns,
                slices: s.switches,
                migrations: s.migrations,
                preemptions: s.preemptions,
            }
        })
        .collect()
}

pub(super) struct Simulated {
    pub(super) names: Vec<String>,
    pub(super) counters: Vec<Counters>,
    pub(super) logs: Vec<Vec<LogLine>>,
}

/// The platform file of a case: this machine's CPUs at capacity 1024,
/// its HZ, the tick's phase, the timers' slack, the runs' spread and the
/// timer wake-ups' spread of the live run, and the case's groups under
/// the run's root.
pub(super) fn platform_toml(
    sim: &SimInfo,
    tick_phase_us: u64,
    run_spread: &[(u64, Vec<f64>)],
    timer_spread: &[f64],
    groups: &[(&str, u64)],
    root: &str,
) -> String {
    let mut t = format!(
        "# corral lab validate: this machine as the simulator sees it.\n# Simulated with seed {} (corral sim --seed {}).\nkernel = \"eevdf\"\nhz = {}\ntick_phase = \"{}us\"\ntimer_slack = \"{}us\"\ncapacities = [{}]\n",
        sim.seed,
        sim.seed,
        sim.hz,
        tick_phase_us,
        sim.timer_slack_ns as f64 / 1000.0,
        vec![sim.capacity.to_string(); sim.cpus].join(", ")
    );
    if let Some(u) = sim.vcpu_pack_util {
        let _ = writeln!(t, "vcpu_pack_util = {u}");
    }
    let list = |f: &[f64]| {
        let f: Vec<String> = f.iter().map(|x| format!("{x:.4}")).collect();
        format!("[{}]", f.join(", "))
    };
    match run_spread {
        [] => {}
        [(0, f)] => {
            let _ = writeln!(t, "run_spread = {}", list(f));
        }
        by_length => {
            let l: Vec<String> = by_length
                .iter()
                .map(|(ns, f)| format!("\"{}us\" = {}", (ns + 500) / 1000, list(f)))
                .collect();
            let _ = writeln!(t, "run_spread = {{ {} }}", l.join(", "));
        }
    }
    if !timer_spread.is_empty() {
        let _ = writeln!(t, "timer_wakeup_spread = {}", list(timer_spread));
    }
    if let Some(c) = sim.costs {
        t.push_str(&c.toml());
    }
    for (g, shares) in groups {
        let _ = write!(t, "\n[groups.\"{root}{g}\"]\nshares = {shares}\n");
    }
    t
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run_sim(
    run: Window,
    sim: &SimInfo,
    tick_phase_us: u64,
    run_spread: &[(u64, Vec<f64>)],
    timer_spread: &[f64],
    mut work: rtapp::Workload,
    others: Vec<rtapp::Task>,
    groups: &[(&str, u64)],
    root: &str,
    dir: &Path,
) -> Result<Simulated> {
    // The workload's threads come first; the machine's others after them
    // are simulated, not reported.
    let n = work
        .tasks
        .iter()
        .map(|t| t.instances as usize)
        .sum::<usize>();
    work.tasks.extend(others);
    let toml = platform_toml(sim, tick_phase_us, run_spread, timer_spread, groups, root);
    let toml_path = dir.join("platform.toml");
    std::fs::write(&toml_path, &toml).map_err(Error::io(&toml_path))?;
    let mut spec = platform::parse(&toml, &toml_path.display().to_string())?;
    spec.platform.seed = sim.seed;
    let mut m = platform::build(work, &spec, Flavour::Eevdf)?;
    m.record();
    m.advance_to(run.warmup.as_nanos() as u64);
    let a = counters(&m);
    m.advance_to((Duration::from_secs(run.seconds) - run.tail).as_nanos() as u64);
    let b = counters(&m);
    // On to the end, as rt-app goes on, so that the iterations under way
    // at the window's end are logged on both sides.
    m.advance_to(Duration::from_secs(run.seconds).as_nanos() as u64);
    let logs_dir = dir.join("sim");
    let files = trace::rtapp_logs(&m, &logs_dir)
        .map_err(|e| Error::io(&logs_dir)(e).within("cannot write the simulator's logs"))?;
    let logs = files
        .iter()
        .take(n)
        .map(|f| read_log(f, false))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Simulated {
        names: m.stats().into_iter().take(n).map(|s| s.name).collect(),
        counters: a.iter().zip(&b).take(n).map(|(a, b)| b.since(a)).collect(),
        logs,
    })
}
