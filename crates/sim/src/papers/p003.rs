//! Paper 003 on the simulator: the CPU count detector and a hot-plug governor.

use super::*;

pub(super) fn run() -> Result<Paper, Error> {
    use corral_core::cpucount::{recommend, CountInputs};
    use corral_core::CpuSet;
    const FIB: &str = include_str!("../../papers/003-fib.json");
    const EXYNOS: &str = include_str!("../../papers/003-exynos.toml");
    let base = spec(EXYNOS, "003-exynos.toml")?;
    let work_us = match workload(FIB, "003-fib.json")?.tasks[0].phases[0].events[..] {
        [Event::Run(us)] => us,
        _ => {
            return Err(Error::Scenario {
                paper: "003",
                what: "003-fib.json: fib must be one run event".into(),
            })
        }
    };
    // Fork-join: `threads` threads share the work and the run ends when
    // the last one does.
    let run = |cpus: usize, threads: u32| -> Result<f64, Error> {
        let mut s = base.clone();
        s.platform.capacities = vec![1024; cpus];
        s.platform.offline = (1..cpus).collect();
        let mut w = workload(FIB, "003-fib.json")?;
        w.tasks[0].instances = threads;
        w.tasks[0].phases[0].events = vec![Event::Run(work_us.div_ceil(threads as u64))];
        let mut m = build(w, &s)?;
        m.run_until(20_000_000_000);
        (0..m.ntasks())
            .map(|t| m.task_stats(t).exited_at)
            .try_fold(0u64, |acc, e| e.map(|e| acc.max(e)))
            .map(|ns| ns as f64 / 1e9)
            .ok_or_else(|| Error::Scenario {
                paper: "003",
                what: "fib did not finish in 20 s".into(),
            })
    };
    let paper = [7.4, 4.3, 2.7];
    let mut rows = vec![];
    let mut times = vec![];
    for (i, cpus) in [1u32, 2, 4].into_iter().enumerate() {
        // What each detector sees at start: CPU 0 online, the rest present.
        let input = CountInputs {
            online: CpuSet::first_n(1),
            present: CpuSet::first_n(cpus),
            possible: CpuSet::first_n(cpus),
            isolated: CpuSet::default(),
            affinity: None,
            cpuset: None,
            quota: None,
        };
        let r = recommend(&input);
        let t_online = run(cpus as usize, r.online_only)?;
        let t_corral = run(cpus as usize, r.threads)?;
        rows.push(row(&[
            cpus.to_string(),
            format!("{} / {}", r.online_only, r.threads),
            "7.4".into(),
            format!("{t_online:.2}"),
            format!("{:.1}", paper[i]),
            format!("{t_corral:.2}"),
        ]));
        times.push((t_online, t_corral));
    }
    let one = times[0].1;
    let claims = vec![
        Claim {
            claim: "counting online CPUs starts one thread: no speed-up on any core count".into(),
            paper: "7.4 s on 1, 2 and 4 cores".into(),
            simulated: times
                .iter()
                .map(|t| format!("{:.2}", t.0))
                .collect::<Vec<_>>()
                .join(" / ")
                + " s",
            test: "each completion within 5 % of the 1-CPU one".into(),
            holds: times.iter().all(|t| (t.0 / times[0].0 - 1.0).abs() < 0.05),
        },
        Claim {
            claim: "counting present CPUs lets the governor bring them online: speed-up".into(),
            paper: "7.4 / 4.3 / 2.7 s (-42 %, -64 %)".into(),
            simulated: format!(
                "{:.2} / {:.2} / {:.2} s ({}, {})",
                times[0].1,
                times[1].1,
                times[2].1,
                pct(times[1].1 / one - 1.0),
                pct(times[2].1 / one - 1.0)
            ),
            test: "4 CPUs finish before 2, and 2 before 1".into(),
            holds: times[2].1 < times[1].1 && times[1].1 < times[0].1,
        },
    ];
    let chart = bars(
        "Paper 003: Fibonacci completion, online-only count vs corral's detector",
        "completion time (s)",
        &[
            Bar::both("1 CPU, online-only", times[0].0, 7.4),
            Bar::both("1 CPU, corral", times[0].1, paper[0]),
            Bar::both("2 CPUs, online-only", times[1].0, 7.4),
            Bar::both("2 CPUs, corral", times[1].1, paper[1]),
            Bar::both("4 CPUs, online-only", times[2].0, 7.4),
            Bar::both("4 CPUs, corral", times[2].1, paper[2]),
        ],
        "The paper's detector counted present CPUs, as corral's does.",
    );
    Ok(Paper {
        id: "003",
        title: "BioMP: the CPU count detector",
        setup: "Exynos-like phone with 1, 2 or 4 CPUs, only CPU 0 online at the start, a load-driven hot-plug governor (50 ms samples); fork-join Fibonacci with 7.4 s of work split over the threads each detector (corral_core::cpucount::recommend) asks for.".into(),
        header: header(&["CPUs", "threads: online-only / corral", "paper online-only (s)", "simulated online-only (s)", "paper corral (s)", "simulated corral (s)"]),
        rows,
        claims,
        chart,
        simulated_s: 40.0,
    })
}
