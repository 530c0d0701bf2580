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
