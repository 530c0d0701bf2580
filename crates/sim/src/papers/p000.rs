//! Paper 000 on the simulator: blind pair-wise balancing; a dedicated core for the heavy task.

use super::*;

pub(super) fn run() -> Result<Paper, Error> {
    const BROWSING: &str = include_str!("../../papers/000-browsing.json");
    const BENCH: &str = include_str!("../../papers/000-benchmark.json");
    const PHONE: &str = include_str!("../../papers/000-phone.toml");
    let phone = spec(PHONE, "000-phone.toml")?;
    let procs = ["browser", "renderer", "mediaserver"];
    let secs = 500.0;
    let end = (secs * 1e9) as Ns;

    // Browsing with music, 500 s, sampled every second (as `top` did).
    let together = |m: &Sim| -> Result<bool, Error> {
        let cpus: Vec<usize> = procs
            .iter()
            .map(|p| task(m, p).map(|t| m.task_cpu(t)))
            .collect::<Result<_, _>>()?;
        Ok(cpus.iter().all(|&c| c == cpus[0]))
    };
    let mut m = build(workload(BROWSING, "000-browsing.json")?, &phone)?;
    let mut same_base = 0;
    for s in 1..=secs as u64 {
        m.run_until(s * 1_000_000_000);
        same_base += together(&m)? as u32;
    }
    let base_migr: Vec<u64> = procs
        .iter()
        .map(|p| task(&m, p).map(|t| m.task_stats(t).migrations))
        .collect::<Result<_, _>>()?;

    let m = build(workload(BROWSING, "000-browsing.json")?, &phone)?;
    let mut same_corral = 0u32;
    let mut err = None;
    let (d, _) = policy::run(
        SimHost::new(m),
        Config::default(),
        &[],
        end,
        &mut |h| match together(h.machine()) {
            Ok(t) => same_corral += t as u32,
            Err(e) => err = Some(e),
        },
    )?;
    if let Some(e) = err {
        return Err(e);
    }
    let m = d.host().machine();
    let corral_migr: Vec<u64> = procs
        .iter()
        .map(|p| task(m, p).map(|t| m.task_stats(t).migrations))
        .collect::<Result<_, _>>()?;

    // A CPU benchmark (20 s of work) alone, with the browsing mix, and
    // with the mix under corral.
    let done = |m: &Sim| -> Result<f64, Error> {
        let t = task(m, "benchmark")?;
        m.task_stats(t)
            .exited_at
            .map(|x| x as f64 / 1e9)
            .ok_or_else(|| Error::Scenario {
                paper: "000",
                what: "the benchmark did not finish in 40 s".into(),
            })
    };
    let bench = |names: &[&str]| -> Result<Sim, Error> {
        build(only(workload(BENCH, "000-benchmark.json")?, names), &phone)
    };
    let mut alone = bench(&["benchmark"])?;
    alone.run_until(40_000_000_000);
    let t_alone = done(&alone)?;
    let mut multi = bench(&["benchmark", "browser", "renderer", "mediaserver"])?;
    multi.run_until(40_000_000_000);
    let t_multi = done(&multi)?;
    let m = bench(&["benchmark", "browser", "renderer", "mediaserver"])?;
    let (d, _) = policy::run(
        SimHost::new(m),
        Config::default(),
        &[],
        40_000_000_000,
        &mut |_| {},
    )?;
    let t_corral = done(d.host().machine())?;
    let bench_migr = [
        task(&multi, "benchmark").map(|t| multi.task_stats(t).migrations)?,
        task(d.host().machine(), "benchmark")
            .map(|t| d.host().machine().task_stats(t).migrations)?,
    ];

    let mut rows = vec![];
    let paper_migr = ["~170", "~195", "~120"];
    for (i, p) in procs.iter().enumerate() {
        rows.push(row(&[
            format!("migrations of {p} in 500 s"),
            paper_migr[i].into(),
            base_migr[i].to_string(),
            corral_migr[i].to_string(),
        ]));
    }
    rows.push(row(&[
        "1-s samples with all three on one CPU".into(),
        "65+".into(),
        same_base.to_string(),
        same_corral.to_string(),
    ]));
    rows.push(row(&[
        "benchmark (20 s of work): alone / with the mix".into(),
        "-".into(),
        format!("{t_alone:.2} s / {t_multi:.2} s"),
        format!("{t_alone:.2} s / {t_corral:.2} s"),
    ]));
    rows.push(row(&[
        "benchmark migrations with the mix".into(),
        "20+".into(),
        bench_migr[0].to_string(),
        bench_migr[1].to_string(),
    ]));
    let gain = 1.0 - t_corral / t_multi;
    let claims = vec![
        Claim {
            claim: "blind pair-wise balancing migrates the busy processes often".into(),
            paper: "~170/195/120 migrations in 500 s".into(),
            simulated: format!(
                "{}/{}/{} migrations",
                base_migr[0], base_migr[1], base_migr[2]
            ),
            test: "each of the three migrates at least 100 times in 500 s".into(),
            holds: base_migr.iter().all(|&x| x >= 100),
        },
        Claim {
            claim: "it piles all three main processes on one CPU".into(),
            paper: "65+ of 500 samples".into(),
            simulated: format!("{same_base} of 500 samples"),
            test: "at least 10 of the 500 samples".into(),
            holds: same_base >= 10,
        },
        Claim {
            claim: "telling the scheduler what each task is cuts the migrations".into(),
            paper: "fewer migrations (the benchmark's 20+ fall)".into(),
            simulated: format!(
                "{}/{}/{} (browsing), benchmark {} -> {}",
                corral_migr[0], corral_migr[1], corral_migr[2], bench_migr[0], bench_migr[1]
            ),
            test: "fewer migrations in all, and fewer for the benchmark".into(),
            holds: corral_migr.iter().sum::<u64>() < base_migr.iter().sum::<u64>()
                && bench_migr[1] < bench_migr[0],
        },
        Claim {
            claim: "a dedicated core brings the benchmark with background load closer to alone"
                .into(),
            paper: "7 % (Quadrant) to 25 % (SunSpider) better than with the background".into(),
            simulated: format!(
                "{} vs with the mix ({t_multi:.2} s -> {t_corral:.2} s; alone {t_alone:.2} s)",
                pct(-gain)
            ),
            test: "the benchmark beside the mix finishes sooner with corral than without".into(),
            holds: t_corral < t_multi,
        },
    ];
    let chart = bars(
        "Paper 000: benchmark completion time",
        "completion time (s)",
        &[
            Bar::sim("alone", t_alone),
            Bar::sim("with the mix (CFS)", t_multi),
            Bar::sim("with the mix + corral", t_corral),
        ],
        "The paper gives no completion times, only that a dedicated core made the benchmark 7 % (Quadrant) to 25 % (SunSpider) better than with the background.",
    );
    Ok(Paper {
        id: "000",
        title: "Heterogeneous many-core resource manager (thesis, 2013)",
        setup: "2-CPU phone (CFS 3.0 model, HZ 100): browser ~35 %, renderer ~25 %, music ~5 % for 500 s; a 20-s CPU benchmark alone, with that mix, and with the mix under corral (daemon interval 1 s).".into(),
        header: header(&["measure", "paper", "simulated (CFS)", "simulated + corral"]),
        rows,
        claims,
        chart,
        simulated_s: secs * 2.0 + 120.0,
    })
}
