//! Paper 000 on the simulator: blind pair-wise balancing; a dedicated core for the heavy task.
//! [`run`] measures ([`Figures`]), then [`rows`], [`claims`] and [`chart`]
//! present them.

use super::*;

const BROWSING: &str = include_str!("../../papers/000-browsing.json");
const BENCH: &str = include_str!("../../papers/000-benchmark.json");
const PHONE: &str = include_str!("../../papers/000-phone.toml");
/// The browsing mix's three busy processes.
const PROCS: [&str; 3] = ["browser", "renderer", "mediaserver"];
/// How long the browsing mix runs, seconds.
const SECS: f64 = 500.0;

/// What the runs measured.
struct Figures {
    /// Migrations of each of [`PROCS`] in [`SECS`], without and with corral.
    base_migr: Vec<u64>,
    corral_migr: Vec<u64>,
    /// 1-s samples with all three on one CPU, without and with corral.
    same_base: u32,
    same_corral: u32,
    /// The benchmark's completion time alone, beside the mix, and beside
    /// it under corral, seconds.
    t_alone: f64,
    t_multi: f64,
    t_corral: f64,
    /// The benchmark's migrations beside the mix, without and with corral.
    bench_migr: [u64; 2],
}

pub(super) fn run() -> Result<Paper, Error> {
    let phone = spec(PHONE, "000-phone.toml")?;
    let (base_migr, same_base, corral_migr, same_corral) = browsing(&phone)?;
    let (t_alone, t_multi, t_corral, bench_migr) = benchmark(&phone)?;
    let f = Figures {
        base_migr,
        corral_migr,
        same_base,
        same_corral,
        t_alone,
        t_multi,
        t_corral,
        bench_migr,
    };
    Ok(Paper {
        id: "000",
        title: "Heterogeneous many-core resource manager (thesis, 2013)",
        setup: "2-CPU phone (CFS 3.0 model, HZ 100): browser ~35 %, renderer ~25 %, music ~5 % for 500 s; a 20-s CPU benchmark alone, with that mix, and with the mix under corral (daemon interval 1 s).".into(),
        header: header(&["measure", "paper", "simulated (CFS)", "simulated + corral"]),
        rows: rows(&f),
        claims: claims(&f),
        chart: chart(&f),
        simulated_s: SECS * 2.0 + 120.0,
    })
}

/// Whether all of [`PROCS`] are on one CPU.
fn together(m: &Sim) -> Result<bool, Error> {
    let cpus: Vec<usize> = PROCS
        .iter()
        .map(|p| task(m, p).map(|t| m.task_cpu(t)))
        .collect::<Result<_, _>>()?;
    Ok(cpus.iter().all(|&c| c == cpus[0]))
}

fn migrations(m: &Sim) -> Result<Vec<u64>, Error> {
    PROCS
        .iter()
        .map(|p| task(m, p).map(|t| m.task_stats(t).migrations))
        .collect()
}

/// Browsing with music for [`SECS`], sampled every second (as `top` did),
/// without and with corral: migrations and samples with all three
/// together, each.
fn browsing(phone: &PlatformSpec) -> Result<(Vec<u64>, u32, Vec<u64>, u32), Error> {
    let mut m = build(workload(BROWSING, "000-browsing.json")?, phone)?;
    let mut same_base = 0;
    for s in 1..=SECS as u64 {
        m.run_until(s * 1_000_000_000);
        same_base += together(&m)? as u32;
    }
    let base_migr = migrations(&m)?;

    let m = build(workload(BROWSING, "000-browsing.json")?, phone)?;
    let mut same_corral = 0u32;
    let mut err = None;
    let (d, _) = policy::run(
        SimHost::new(m),
        Config::default(),
        &[],
        (SECS * 1e9) as Ns,
        &mut |h| match together(h.machine()) {
            Ok(t) => same_corral += t as u32,
            Err(e) => err = Some(e),
        },
    )?;
    if let Some(e) = err {
        return Err(e);
    }
    let corral_migr = migrations(d.host().machine())?;
    Ok((base_migr, same_base, corral_migr, same_corral))
}

/// A CPU benchmark (20 s of work) alone, with the browsing mix, and with
/// the mix under corral: completion times and the benchmark's migrations
/// beside the mix.
fn benchmark(phone: &PlatformSpec) -> Result<(f64, f64, f64, [u64; 2]), Error> {
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
        build(only(workload(BENCH, "000-benchmark.json")?, names), phone)
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
    Ok((t_alone, t_multi, t_corral, bench_migr))
}

fn rows(f: &Figures) -> Vec<Vec<String>> {
    let mut rows = vec![];
    let paper_migr = ["~170", "~195", "~120"];
    for (i, p) in PROCS.iter().enumerate() {
        rows.push(row(&[
            format!("migrations of {p} in 500 s"),
            paper_migr[i].into(),
            f.base_migr[i].to_string(),
            f.corral_migr[i].to_string(),
        ]));
    }
    rows.push(row(&[
        "1-s samples with all three on one CPU".into(),
        "65+".into(),
        f.same_base.to_string(),
        f.same_corral.to_string(),
    ]));
    rows.push(row(&[
        "benchmark (20 s of work): alone / with the mix".into(),
        "-".into(),
        format!("{:.2} s / {:.2} s", f.t_alone, f.t_multi),
        format!("{:.2} s / {:.2} s", f.t_alone, f.t_corral),
    ]));
    rows.push(row(&[
        "benchmark migrations with the mix".into(),
        "20+".into(),
        f.bench_migr[0].to_string(),
        f.bench_migr[1].to_string(),
    ]));
    rows
}

/// The paper's claims and the thresholds that check them.
fn claims(f: &Figures) -> Vec<Claim> {
    let (base, corral, bench) = (&f.base_migr, &f.corral_migr, &f.bench_migr);
    let gain = 1.0 - f.t_corral / f.t_multi;
    vec![
        Claim {
            claim: "blind pair-wise balancing migrates the busy processes often".into(),
            paper: "~170/195/120 migrations in 500 s".into(),
            simulated: format!("{}/{}/{} migrations", base[0], base[1], base[2]),
            test: "each of the three migrates at least 100 times in 500 s".into(),
            holds: base.iter().all(|&x| x >= 100),
        },
        Claim {
            claim: "it piles all three main processes on one CPU".into(),
            paper: "65+ of 500 samples".into(),
            simulated: format!("{} of 500 samples", f.same_base),
            test: "at least 10 of the 500 samples".into(),
            holds: f.same_base >= 10,
        },
        Claim {
            claim: "telling the scheduler what each task is cuts the migrations".into(),
            paper: "fewer migrations (the benchmark's 20+ fall)".into(),
            simulated: format!(
                "{}/{}/{} (browsing), benchmark {} -> {}",
                corral[0], corral[1], corral[2], bench[0], bench[1]
            ),
            test: "fewer migrations in all, and fewer for the benchmark".into(),
            holds: corral.iter().sum::<u64>() < base.iter().sum::<u64>() && bench[1] < bench[0],
        },
        Claim {
            claim: "a dedicated core brings the benchmark with background load closer to alone"
                .into(),
            paper: "7 % (Quadrant) to 25 % (SunSpider) better than with the background".into(),
            simulated: format!(
                "{} vs with the mix ({:.2} s -> {:.2} s; alone {:.2} s)",
                pct(-gain),
                f.t_multi,
                f.t_corral,
                f.t_alone
            ),
            test: "the benchmark beside the mix finishes sooner with corral than without".into(),
            holds: f.t_corral < f.t_multi,
        },
    ]
}

fn chart(f: &Figures) -> String {
    bars(
        "Paper 000: benchmark completion time",
        "completion time (s)",
        &[
            Bar::sim("alone", f.t_alone),
            Bar::sim("with the mix (CFS)", f.t_multi),
            Bar::sim("with the mix + corral", f.t_corral),
        ],
        "The paper gives no completion times, only that a dedicated core made the benchmark 7 % (Quadrant) to 25 % (SunSpider) better than with the background.",
    )
}
