//! `corral sim`.

use crate::args::SimArgs;
use crate::table::Table;
use anyhow::{bail, Context};
use corral_sim::fair::Fair;
use corral_sim::machine::{Machine, Platform};
use corral_sim::report::{summarise, Summary};
use corral_sim::rtapp;
use std::process::ExitCode;
use std::time::Instant;

/// Parses "2s:cpu1=off,5.5s:cpu1=on" (also ms suffixes).
fn parse_hotplug(spec: &str, ncpus: usize) -> anyhow::Result<Vec<(u64, usize, bool)>> {
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let bad = || {
                anyhow::anyhow!("--hotplug: {item:?} is not TIME:cpuN=on|off (e.g. 2s:cpu1=off)")
            };
            let (t, what) = item.trim().split_once(':').ok_or_else(bad)?;
            let ns = if let Some(ms) = t.strip_suffix("ms") {
                ms.parse::<f64>().map_err(|_| bad())? * 1e6
            } else {
                t.strip_suffix('s')
                    .unwrap_or(t)
                    .parse::<f64>()
                    .map_err(|_| bad())?
                    * 1e9
            };
            let (cpu, state) = what.split_once('=').ok_or_else(bad)?;
            let cpu: usize = cpu
                .strip_prefix("cpu")
                .ok_or_else(bad)?
                .parse()
                .map_err(|_| bad())?;
            anyhow::ensure!(
                cpu < ncpus,
                "--hotplug: CPU {cpu} does not exist ({ncpus} CPUs)"
            );
            let on = match state {
                "on" => true,
                "off" => false,
                _ => return Err(bad()),
            };
            Ok((ns as u64, cpu, on))
        })
        .collect()
}

fn simulate(
    work: rtapp::Workload,
    platform: Platform,
    shares: &[(String, u64)],
    secs: f64,
) -> anyhow::Result<Summary> {
    let n = platform.capacities.len();
    let mut m = Machine::new(platform, work, Fair::cfs(n)).map_err(anyhow::Error::msg)?;
    for (path, s) in shares {
        m.set_group_shares(path, *s).map_err(anyhow::Error::msg)?;
    }
    m.run_until((secs * 1e9) as u64);
    Ok(summarise(&m))
}

pub fn run(args: &SimArgs) -> anyhow::Result<ExitCode> {
    if args.bench {
        return bench();
    }
    let path = args.workload.as_ref().context("no workload given")?;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let work = rtapp::parse(&text, &path.display().to_string()).map_err(anyhow::Error::msg)?;
    let capacities = if args.capacities.is_empty() {
        vec![1024; args.cpus]
    } else {
        args.capacities.clone()
    };
    if capacities.is_empty() || capacities.iter().any(|&c| c == 0 || c > 1024) {
        bail!("--capacities: each CPU's capacity must be 1 to 1024");
    }
    let mut platform = Platform {
        capacities,
        ..Platform::uniform(0)
    };
    if let Some(h) = &args.hotplug {
        platform.hotplug = parse_hotplug(h, platform.capacities.len())?;
    }
    let shares = args
        .group_shares
        .iter()
        .map(|s| {
            let (p, v) = s
                .split_once('=')
                .with_context(|| format!("--group-shares: {s:?} is not PATH=SHARES"))?;
            Ok((
                p.to_string(),
                v.parse::<u64>()
                    .with_context(|| format!("--group-shares: {v:?} is not a number"))?,
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let secs = args.duration.or(work.duration_s).unwrap_or(10.0);
    anyhow::ensure!(secs > 0.0 && secs <= 1e6, "--duration must be above 0");
    let t0 = Instant::now();
    let s = simulate(work, platform, &shares, secs)?;
    let wall = t0.elapsed().as_secs_f64();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} on {} CPUs, {:.1} s simulated in {:.3} s ({} events, {:.1} M events/s)",
        s.kernel,
        s.cpus,
        s.simulated_s,
        wall,
        s.events,
        s.events as f64 / wall.max(1e-9) / 1e6
    );
    let mut t = Table::new(&[
        "TASK",
        "CPU (s)",
        "SHARE",
        "WAKEUPS",
        "LAT P50 (us)",
        "P99 (us)",
        "MAX (us)",
        "MIGR",
        "PREEMPT",
        "SWITCHES",
    ]);
    for x in &s.tasks {
        t.row(vec![
            x.name.clone(),
            format!("{:.3}", x.cpu_s),
            format!("{:.3}", x.share),
            x.wakeups.to_string(),
            format!("{:.0}", x.latency_p50_us),
            format!("{:.0}", x.latency_p99_us),
            format!("{:.0}", x.latency_max_us),
            x.migrations.to_string(),
            x.preemptions.to_string(),
            x.switches.to_string(),
        ]);
    }
    print!("{}", t.render());
    let util: Vec<String> = s
        .cpu_utilisation
        .iter()
        .map(|u| format!("{:.1}%", u * 100.0))
        .collect();
    println!(
        "CPU utilisation: {}; Jain fairness {:.3}",
        util.join(" "),
        s.jain_fairness
    );
    Ok(ExitCode::SUCCESS)
}

/// Events per second on Debian's example workloads and how cost grows.
fn bench() -> anyhow::Result<ExitCode> {
    let dir = std::path::Path::new("/usr/share/doc/rt-app/examples");
    println!("workload             cpus  simulated  wall (s)  events     M events/s  x real time");
    for name in ["mp3-short.json", "browser-short.json"] {
        let path = dir.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            println!("{name}: not found (apt-get install rt-app)");
            continue;
        };
        let work = rtapp::parse(&text, name).map_err(anyhow::Error::msg)?;
        let secs = 600.0;
        let t0 = Instant::now();
        let s = simulate(work, Platform::uniform(2), &[], secs)?;
        let wall = t0.elapsed().as_secs_f64();
        println!(
            "{name:<20} {:>4}  {:>7.0} s  {wall:>8.3}  {:>9}  {:>10.2}  {:>10.0}",
            2,
            secs,
            s.events,
            s.events as f64 / wall / 1e6,
            secs / wall
        );
    }
    println!("\nsynthetic periodic tasks (1 ms every 10 ms, 10 s simulated):");
    println!("cpus  tasks   wall (s)  events     M events/s");
    for (cpus, tasks) in [
        (2, 10),
        (2, 100),
        (8, 100),
        (32, 1000),
        (256, 1000),
        (256, 10000),
    ] {
        let json = format!(
            r#"{{"tasks": {{"p": {{"instance": {tasks}, "loop": -1, "run": 1000, "timer": {{"ref": "unique", "period": 10000}}}}}}}}"#
        );
        let work = rtapp::parse(&json, "synthetic").map_err(anyhow::Error::msg)?;
        let t0 = Instant::now();
        let s = simulate(work, Platform::uniform(cpus), &[], 10.0)?;
        let wall = t0.elapsed().as_secs_f64();
        println!(
            "{cpus:>4}  {tasks:>5}  {wall:>9.3}  {:>9}  {:>10.2}",
            s.events,
            s.events as f64 / wall / 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}
