//! Paper 001 on the simulator: framework-assisted boost, and balancing around the input task.
//! [`run`] measures each variant ([`variants`]), then [`claims`] and
//! [`chart`] present them.

use super::*;

const DRAWING: &str = include_str!("../../papers/001-drawing.json");
const TEGRA: &str = include_str!("../../papers/001-tegra2.toml");
/// Each variant's run, seconds.
const SECS: f64 = 30.0;

/// A variant's name and the drawing thread's response time p50 and p90, ms.
type Variant = (String, f64, f64);

pub(super) fn run() -> Result<Paper, Error> {
    let tegra = spec(TEGRA, "001-tegra2.toml")?;
    let variants = variants(&tegra)?;
    let base = variants[0].1;
    let paper_fig = ["", "", "", "", "-22 %", "-43.31 %", ""];
    let rows = variants
        .iter()
        .zip(paper_fig)
        .map(|((name, p50, p90), paper)| {
            row(&[
                name.clone(),
                format!("{p50:.1}"),
                format!("{p90:.1}"),
                pct(p50 / base - 1.0),
                paper.to_string(),
            ])
        })
        .collect();
    Ok(Paper {
        id: "001",
        title: "Framework-assisted priority boosting and load balancing (KCC 2012)",
        setup: "2 CPUs (CFS 2.6.32 model, HZ 100): a drawing thread with 100 ms of work per input event, one event every 500 s / 60 events, beside two nice-0 CPU hogs; the paper's kernel boost (priority 115 ... 100 while the thread is awake), its balancing, and corral's boost requested at each event.".replace("500 s / 60", "500 ms, 60"),
        header: header(&["variant", "p50 (ms)", "p90 (ms)", "vs baseline", "paper"]),
        rows,
        claims: claims(&variants),
        chart: chart(&variants),
        simulated_s: SECS * 7.0,
    })
}

/// The baseline, the paper's boost at each level, boost 100 with the
/// paper's balancing, and corral's boost requested at each event.
fn variants(tegra: &PlatformSpec) -> Result<Vec<Variant>, Error> {
    let mut plain = tegra.clone();
    plain.boosts.clear();
    let end = (SECS * 1e9) as Ns;
    let period = 500e6;
    // Response time of each event: the period less rt-app's slack.
    let response = |m: &Sim| -> Result<(f64, f64), Error> {
        let t = task(m, "drawing")?;
        let s = &m.task_stats(t).slack;
        let no_events = || Error::Scenario {
            paper: "001",
            what: "no events".into(),
        };
        let p50 = s.percentile(50.0).ok_or_else(no_events)?;
        let p90 = s.percentile(10.0).ok_or_else(no_events)?;
        Ok(((period - p50 as f64) / 1e6, (period - p90 as f64) / 1e6))
    };
    let mut variants: Vec<(String, f64, f64)> = Vec::new();
    // Baseline and the paper's boost: priority 120 - k is nice -k.
    for nice in [0, -5, -10, -15, -20] {
        let mut m = build(workload(DRAWING, "001-drawing.json")?, &plain)?;
        if nice != 0 {
            let t = task(&m, "drawing")?;
            m.boost_on_wake(t, Some(nice));
        }
        m.run_until(end);
        let (p50, p90) = response(&m)?;
        let name = if nice == 0 {
            "baseline (120)".to_string()
        } else {
            format!("boost {}", 120 + nice)
        };
        variants.push((name, p50, p90));
    }
    // Boost 100 and the paper's balancing.
    {
        let mut m = build(workload(DRAWING, "001-drawing.json")?, &plain)?;
        let t = task(&m, "drawing")?;
        m.boost_on_wake(t, Some(-20));
        m.set_interactive(t, true)?;
        m.run_until(end);
        let (p50, p90) = response(&m)?;
        variants.push(("boost 100 + balancing".into(), p50, p90));
    }
    // corral: the dispatcher's boost request at each event.
    {
        let m = build(workload(DRAWING, "001-drawing.json")?, &plain)?;
        let (d, r) = policy::run(
            SimHost::new(m),
            Config::default(),
            &tegra.boosts,
            end,
            &mut |_| {},
        )?;
        if let Some((_, e)) = r.errors.first() {
            return Err(Error::Scenario {
                paper: "001",
                what: format!("corral's run: {e}"),
            });
        }
        let (p50, p90) = response(d.host().machine())?;
        variants.push(("corral boost + eviction".into(), p50, p90));
    }
    Ok(variants)
}

/// The paper's claims and the thresholds that check them.
fn claims(variants: &[Variant]) -> Vec<Claim> {
    let base = variants[0].1;
    let boosts: Vec<f64> = variants[..5].iter().map(|v| v.1).collect();
    let monotonic = boosts.windows(2).all(|w| w[1] <= w[0] + 0.05);
    let b100 = variants[4].1;
    let bal = variants[5].1;
    let corral = variants[6].1;
    vec![
        Claim {
            claim: "response time falls as the boost grows (120 -> 100)".into(),
            paper: "falls; -22 % at 100".into(),
            simulated: format!(
                "{} ms; {} at 100",
                boosts
                    .iter()
                    .map(|x| format!("{x:.0}"))
                    .collect::<Vec<_>>()
                    .join(" -> "),
                pct(b100 / base - 1.0)
            ),
            test: "p50 never rises by more than 0.05 ms from one level to the next, and is lower at 100 than without a boost".into(),
            holds: monotonic && b100 < base,
        },
        Claim {
            claim: "balancing around the input task adds to the boost".into(),
            paper: "-43.31 % (vs -22 % boost alone)".into(),
            simulated: format!(
                "{} (vs {} boost alone)",
                pct(bal / base - 1.0),
                pct(b100 / base - 1.0)
            ),
            // "Adds" means a visible gain: at least 2 % below boost alone.
            test: "boost + balancing at least 2 % below boost alone".into(),
            holds: bal < b100 * 0.98,
        },
        Claim {
            claim: "corral's boost + eviction does as well as the paper's best mechanism (boost + balancing)".into(),
            paper: "boost + balancing -43.31 % (measured on the phone)".into(),
            simulated: format!(
                "corral {} vs boost + balancing {} (T_E = 100 ms; the simulated sizes differ from the paper's)",
                pct(corral / base - 1.0),
                pct(bal / base - 1.0)
            ),
            test: "corral's p50 at most 0.5 ms above boost + balancing's, both simulated".into(),
            holds: corral <= bal + 0.5,
        },
    ]
}

fn chart(variants: &[Variant]) -> String {
    let base = variants[0].1;
    let paper_cut = [None, None, None, None, Some(22.0), Some(43.31), None];
    bars(
        "Paper 001: how much sooner the drawing app answers, beside 2 hogs",
        "response time p50 below the baseline's (%)",
        &variants
            .iter()
            .zip(paper_cut)
            .map(|((n, p50, _), paper)| Bar {
                label: n.clone(),
                simulated: (1.0 - p50 / base) * 100.0,
                paper,
            })
            .collect::<Vec<_>>(),
        "The paper gives the cut for the boost at 100 and for boost + balancing; corral's boost is not in the paper.",
    )
}
