//! `corral lab …`.

use crate::args::ParallelArgs;
use crate::table::Table;
use anyhow::Context;
use corral_lab::parallel::{self, Detectors};
use corral_linux::cpucount::detect;
use corral_linux::HostPaths;
use std::process::ExitCode;
use std::time::Duration;

pub fn parallel(paths: &HostPaths, args: &ParallelArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 600.0,
        "--seconds must be above 0 and at most 600, not {}",
        args.seconds
    );
    let report = detect(paths, None).context("cannot count the CPUs")?;
    let detectors = Detectors {
        present: report.topology.present.len(),
        online_only: report.recommendation.online_only,
        corral: report.recommendation.threads,
    };
    let opts = parallel::Options {
        n: args.n,
        target: Duration::from_secs_f64(args.seconds),
        repeat: args.repeat,
        max_threads: args.max_threads,
    };
    let r = parallel::run(&opts, detectors, |line| {
        eprintln!("corral lab parallel: {line}")
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "paper 003: fib({}) cut into {} subproblems, median of {} run(s) per thread count",
        r.n, r.subproblems, args.repeat
    );
    let mut t = Table::new(&["THREADS", "WALL (s)", "SPEED-UP", "EFFICIENCY"]);
    for row in &r.rows {
        t.row(vec![
            row.threads.to_string(),
            format!("{:.3}", row.wall_s),
            format!("{:.2}", row.speedup),
            format!("{:.2}", row.efficiency),
        ]);
    }
    print!("{}", t.render());
    let wall = |w: Option<f64>| w.map_or("not measured".into(), |w| format!("{w:.3} s"));
    println!(
        "\nonline-only detector chooses {} threads: {}\ncorral's detector chooses    {} threads: {}",
        r.detectors.online_only,
        wall(r.online_only_wall_s),
        r.detectors.corral,
        wall(r.corral_wall_s)
    );
    Ok(ExitCode::SUCCESS)
}

use crate::args::{HeavyArgs, LabDaemonArgs, LatencyArgs, OverheadArgs, WorkCommand};
use anyhow::bail;
use corral_lab::{heavy, latency, work};
use corral_linux::cgroup::CgroupMounts;
use corral_linux::placer::Layout;

/// The daemon configuration and cgroup layout an experiment runs with.
fn lab_setup(
    paths: &HostPaths,
    d: &LabDaemonArgs,
) -> anyhow::Result<(corral_core::config::Config, Layout)> {
    if !rustix::process::geteuid().is_root() {
        bail!("lab experiments create cgroups and need root");
    }
    let mut config = match &d.config {
        Some(f) => super::load_config(f)?,
        None => corral_core::config::Config::default(),
    };
    anyhow::ensure!(
        (10..=3_600_000).contains(&d.interval),
        "--interval must be between 10 and 3600000 ms"
    );
    config.daemon.interval_ms = d.interval;
    let mounts = CgroupMounts::discover(paths)?;
    let layout = Layout::choose(&mounts, config.daemon.cgroup).map_err(anyhow::Error::msg)?;
    layout.check().map_err(anyhow::Error::msg)?;
    Ok((config, layout))
}

fn progress(line: &str) {
    eprintln!("corral lab: {line}");
}

pub fn latency(paths: &HostPaths, args: &LatencyArgs) -> anyhow::Result<ExitCode> {
    let (config, layout) = lab_setup(paths, &args.daemon)?;
    let opts = latency::Options {
        periods: args.periods as usize,
        config,
        ..Default::default()
    };
    let exe = latency::self_exe().map_err(anyhow::Error::msg)?;
    let r = latency::run(&exe, paths, &layout, &opts, progress).map_err(anyhow::Error::msg)?;
    if args.daemon.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "paper 002: {} ms every {} ms in a {}-share group, {} hogs in a {}-share group; daemon every {} ms",
        r.run_ms, r.period_ms, r.low_shares, r.hogs, r.high_shares, r.interval_ms
    );
    let mut t = Table::new(&[
        "VARIANT", "PERIODS", "MISSED", "P50 (ms)", "P90 (ms)", "P99 (ms)", "MAX (ms)", "CPU",
        "CLASS", "GROUP",
    ]);
    for v in &r.variants {
        t.row(vec![
            v.name.clone(),
            v.periods.to_string(),
            v.missed.to_string(),
            format!("{:.3}", v.p50_us / 1000.0),
            format!("{:.3}", v.p90_us / 1000.0),
            format!("{:.3}", v.p99_us / 1000.0),
            format!("{:.3}", v.max_us / 1000.0),
            format!("{:.1}%", v.cpu_share * 100.0),
            v.class.clone().unwrap_or_else(|| "-".into()),
            v.group.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    print!("{}", t.render());
    println!("p99 baseline / corral: {:.1}x", r.p99_improvement);
    Ok(ExitCode::SUCCESS)
}

pub fn heavy(paths: &HostPaths, args: &HeavyArgs) -> anyhow::Result<ExitCode> {
    let (config, layout) = lab_setup(paths, &args.daemon)?;
    anyhow::ensure!(
        args.seconds > 0.5 && args.seconds <= 600.0,
        "--seconds must be above 0.5 and at most 600"
    );
    let opts = heavy::Options {
        seconds: args.seconds,
        config,
        ..Default::default()
    };
    let exe = latency::self_exe().map_err(anyhow::Error::msg)?;
    let r = heavy::run(&exe, paths, &layout, &opts, progress).map_err(anyhow::Error::msg)?;
    if args.daemon.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("paper 000: a CPU-bound benchmark ({} ops) beside a background mix of 4 periodic threads (0.2+0.2+0.35+0.35 CPU); daemon every {} ms", r.ops, r.interval_ms);
    let mut t = Table::new(&[
        "VARIANT",
        "TIME (s)",
        "VS ALONE",
        "CPU SHARE",
        "MIGRATIONS",
        "BACKGROUND CPU",
        "CLASS",
        "GROUP",
    ]);
    for v in &r.variants {
        t.row(vec![
            v.name.clone(),
            format!("{:.3}", v.completion_s),
            format!("{:.3}", v.vs_alone),
            format!("{:.3}", v.cpu_share),
            v.migrations.map_or("-".into(), |m| m.to_string()),
            if v.background_cpu.is_empty() {
                "-".into()
            } else {
                v.background_cpu
                    .iter()
                    .map(|c| format!("{c:.2}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            },
            v.class.clone().unwrap_or_else(|| "-".into()),
            v.group.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    print!("{}", t.render());
    println!(
        "baseline / corral completion: {:.3}x",
        r.speedup_vs_baseline
    );
    Ok(ExitCode::SUCCESS)
}

pub fn work(w: WorkCommand) -> anyhow::Result<ExitCode> {
    match w {
        WorkCommand::Periodic {
            period_ms,
            run_ms,
            warmup_ms,
            periods,
            slice_us,
            catch_up,
        } => {
            anyhow::ensure!(
                period_ms > 0.0 && run_ms >= 0.0 && run_ms < period_ms * 100.0,
                "bad period or run"
            );
            if let Some(us) = slice_us {
                let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
                corral_linux::sched::set_fair_slice(tid, us * 1000)
                    .context("cannot set the slice")?;
            }
            let r = work::periodic(
                Duration::from_secs_f64(period_ms / 1000.0),
                Duration::from_secs_f64(run_ms / 1000.0),
                Duration::from_millis(warmup_ms),
                periods,
                catch_up,
            );
            println!("{}", serde_json::to_string(&r)?);
        }
        WorkCommand::Hog => work::hog(),
        WorkCommand::Sleepers { threads } => work::sleepers(threads),
        WorkCommand::Bench { ops } => println!("{}", serde_json::to_string(&work::bench(ops))?),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn overhead(paths: &HostPaths, args: &OverheadArgs) -> anyhow::Result<ExitCode> {
    let d = LabDaemonArgs {
        interval: args.interval,
        config: None,
        json: args.json,
    };
    let (_, layout) = lab_setup(paths, &d)?;
    let opts = corral_lab::overhead::Options {
        threads: args.threads,
        hogs: args.hogs,
        seconds: args.seconds,
        interval_ms: args.interval,
    };
    let exe = latency::self_exe().map_err(anyhow::Error::msg)?;
    let r =
        corral_lab::overhead::run(&exe, &layout, &opts, progress).map_err(anyhow::Error::msg)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "daemon overhead: {} sleeping threads + {} hogs in scope, interval {} ms, {:.1} s measured",
        r.threads, r.hogs, r.interval_ms, r.seconds
    );
    println!(
        "CPU {:.3} % of one CPU ({:.0} us per step); RSS {:.1} MB (peak {:.1} MB); threads in scope {}",
        r.daemon_cpu * 100.0,
        r.per_step_us,
        r.rss_mb,
        r.peak_rss_mb,
        r.threads_sampled.map_or("?".into(), |n| n.to_string())
    );
    Ok(ExitCode::SUCCESS)
}
