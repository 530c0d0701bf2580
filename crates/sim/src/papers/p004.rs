//! Paper 004 on the simulator: Linux 2.4's goodness scan against the multi-level run queue.
//! [`run`] runs the mix under each model ([`run_mix`]), then [`claims`]
//! checks the paper's.

use super::*;
use crate::models::Model;

const MIX: &str = include_str!("../../papers/004-mix.json");
const PC: &str = include_str!("../../papers/004-pc.toml");
/// Linux 2.4's scan, and the multi-level queue with MEASURE 3, 4, 8, 12.
const MODELS: [Model; 5] = [
    Model::Linux24,
    Model::Mlq { measure: 3 },
    Model::Mlq { measure: 4 },
    Model::Mlq { measure: 8 },
    Model::Mlq { measure: 12 },
];

/// Per mix size, each model's tasks examined per pick.
type PerPick = Vec<(u32, Vec<f64>)>;

pub(super) fn run() -> Result<Paper, Error> {
    let pc = spec(PC, "004-pc.toml")?;
    let mut rows = vec![];
    let mut per_pick: Vec<(u32, Vec<f64>)> = vec![];
    let mut completion = vec![];
    let mut simulated = 0.0;
    for scale in [1u32, 4, 16] {
        let mut line = vec![];
        for model in MODELS {
            let (done, w) = run_mix(&pc, model, scale)?;
            let pp = w.examined as f64 / w.picks.max(1) as f64;
            simulated += done;
            rows.push(row(&[
                format!("x{scale}"),
                model.to_string(),
                format!("{done:.2}"),
                w.picks.to_string(),
                format!("{pp:.2}"),
                w.examined.to_string(),
                w.removal_scanned.to_string(),
                (w.examined + w.removal_scanned).to_string(),
                w.recalcs.to_string(),
            ]));
            line.push(pp);
            if scale == 1 {
                completion.push(done);
            }
        }
        per_pick.push((scale, line));
    }
    Ok(Paper {
        id: "004",
        title: "Multi-level run queue for Linux 2.4",
        setup: "One CPU, HZ 100: a 2.4-era mix (4 gcc, cp of three sizes, cat over smb, ls of 1000 files, ping, tar), then the same mix 4 and 16 times over, under the 2.4 goodness scan and the multi-level queue with MEASURE 3, 4, 8, 12.".into(),
        header: header(&[
            "mix",
            "model",
            "done (s)",
            "picks",
            "examined/pick",
            "examined",
            "removal scans",
            "total scanned",
            "recalcs",
        ]),
        rows,
        claims: claims(&per_pick, &completion),
        chart: chart(&per_pick),
        simulated_s: simulated,
    })
}

/// The mix with every task `scale` times over (a longer run queue) under
/// `model`: when the last task ended, seconds, and the scheduler's work.
fn run_mix(
    pc: &PlatformSpec,
    model: Model,
    scale: u32,
) -> Result<(f64, crate::sched::kernel::Work), Error> {
    let mut w = workload(MIX, "004-mix.json")?;
    for t in &mut w.tasks {
        t.instances *= scale;
    }
    let mut m = platform::build_old(w, pc, model)?;
    m.run_until(600_000_000_000);
    let done = (0..m.ntasks())
        .map(|t| m.task_stats(t).exited_at)
        .try_fold(0u64, |acc, e| e.map(|e| acc.max(e)))
        .ok_or_else(|| Error::Scenario {
            paper: "004",
            what: format!("{model}: the mix did not finish in 600 s"),
        })?;
    Ok((done as f64 / 1e9, m.work()))
}

fn best_mlq(l: &[f64]) -> f64 {
    l[1..].iter().copied().fold(f64::INFINITY, f64::min)
}

/// The paper's claims and the thresholds that check them; `completion`:
/// each model's time for the mix once over.
fn claims(per_pick: &PerPick, completion: &[f64]) -> Vec<Claim> {
    let ratios: Vec<f64> = per_pick.iter().map(|(_, l)| l[0] / best_mlq(l)).collect();
    vec![
        Claim {
            claim: "the multi-level queue looks at fewer tasks per schedule than the goodness scan".into(),
            paper: "the scan is O(n); levels stop at the first non-empty one".into(),
            simulated: format!(
                "tasks examined per pick, 2.4 / best MLQ: {}",
                per_pick
                    .iter()
                    .zip(&ratios)
                    .map(|((s, l), r)| format!("x{s}: {:.1} / {:.1} ({r:.1}x)", l[0], best_mlq(l)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            test: "the scan examines more tasks per pick than every multi-level variant, at every mix size".into(),
            holds: ratios.iter().all(|&r| r > 1.0),
        },
        Claim {
            claim: "and the gap grows with the number of tasks".into(),
            paper: "multi-level beats the single scan as tasks grow".into(),
            simulated: ratios
                .iter()
                .map(|r| format!("{r:.1}x"))
                .collect::<Vec<_>>()
                .join(" -> "),
            test: "that ratio rises from each mix size to the next".into(),
            holds: ratios.windows(2).all(|w| w[1] > w[0]),
        },
        Claim {
            claim: "the multi-level kernels finish the mix sooner".into(),
            paper: "~1.2 s faster (runs 2-10 averaged)".into(),
            simulated: format!(
                "2.4 {:.2} s, MLQ {} s — the simulator charges no CPU time for scheduling itself, so only the pick order can differ",
                completion[0],
                completion[1..]
                    .iter()
                    .map(|c| format!("{c:.2}"))
                    .collect::<Vec<_>>()
                    .join("/")
            ),
            test: "every multi-level variant finishes before the scan".into(),
            holds: completion[1..].iter().all(|&c| c < completion[0]),
        },
    ]
}

fn chart(per_pick: &PerPick) -> String {
    bars(
        "Paper 004: the scheduler's work per pick, the mix 16 times over",
        "tasks examined per pick",
        &MODELS
            .iter()
            .zip(&per_pick[2].1)
            .map(|(m, v)| Bar::sim(&m.to_string(), *v))
            .collect::<Vec<_>>(),
        "The paper states the ordering and the trend, not per-pick counts.",
    )
}
