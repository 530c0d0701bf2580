//! Repeated runs of a case, summarised by their medians.
//!
//! One live run is one draw: on this VM the same case's periodic thread
//! read a wake-up p50 of 7.4 ms in one run and 5.0 ms in the next, more
//! than the 20 % the simulator is held to. Each figure of a task is the
//! median over the runs, live and simulated alike (each simulated run
//! gets its live twin's tick phase and calibration); the ratios are
//! taken between the medians. Runs whose two sides took different paths
//! through the workload (`diverged`) are left out.

use super::{rel, CaseReport, Side, TaskRow};

/// Median of the values (the mean of the middle two for an even count).
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Median of the values present (`None` when none is).
fn median_some(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    median(v.flatten().collect())
}

/// Median of counts, rounded to the nearest whole one.
fn median_count(v: impl Iterator<Item = u64>) -> u64 {
    median(v.map(|x| x as f64).collect()).map_or(0, |m| m.round() as u64)
}

/// One side's medians over the runs.
fn side_median(sides: &[&Side]) -> Side {
    let f = |g: fn(&Side) -> f64| median(sides.iter().map(|s| g(s)).collect()).unwrap_or(0.0);
    let o = |g: fn(&Side) -> Option<f64>| median_some(sides.iter().map(|s| g(s)));
    let c = |g: fn(&Side) -> u64| median_count(sides.iter().map(|s| g(s)));
    Side {
        share: f(|s| s.share),
        iterations: c(|s| s.iterations as u64) as usize,
        late: c(|s| s.late as u64) as usize,
        wakeups: c(|s| s.wakeups as u64) as usize,
        wu_lat_p50_us: o(|s| s.wu_lat_p50_us),
        wu_lat_p99_us: o(|s| s.wu_lat_p99_us),
        resp_p50_us: o(|s| s.resp_p50_us),
        resp_p99_us: o(|s| s.resp_p99_us),
        wait_per_slice_us: o(|s| s.wait_per_slice_us),
        migrations: c(|s| s.migrations),
        preemptions: c(|s| s.preemptions),
        work: o(|s| s.work),
    }
}

/// The case over its runs: per task the median of every figure, the
/// runs themselves in `per_run`. One run is returned as it is.
pub(super) fn medians(mut runs: Vec<CaseReport>) -> CaseReport {
    if runs.len() <= 1 || runs[0].skipped.is_some() {
        return runs.swap_remove(0);
    }
    let n = runs.len();
    let compared: Vec<&CaseReport> = runs.iter().filter(|r| r.diverged.is_none()).collect();
    let mut out = compared.first().map_or(&runs[0], |r| r).clone();
    out.per_run = Vec::new();
    out.runs = n;
    if compared.is_empty() {
        out.notes
            .push(format!("all {n} runs diverged: nothing to compare"));
        out.per_run = runs;
        return out;
    }
    let names: Vec<&str> = out.tasks.iter().map(|t| t.name.as_str()).collect();
    let same_tasks = compared.iter().all(|r| {
        r.tasks
            .iter()
            .map(|t| t.name.as_str())
            .eq(names.iter().copied())
    });
    if same_tasks {
        for (i, row) in out.tasks.iter_mut().enumerate() {
            let live: Vec<&Side> = compared.iter().map(|r| &r.tasks[i].live).collect();
            let sim: Vec<&Side> = compared.iter().map(|r| &r.tasks[i].sim).collect();
            let (l, s) = (side_median(&live), side_median(&sim));
            *row = TaskRow {
                name: row.name.clone(),
                group: row.group.clone(),
                share_diff_pp: (s.share - l.share) * 100.0,
                wu_lat_p50_rel: rel(l.wu_lat_p50_us, s.wu_lat_p50_us),
                wu_lat_p99_rel: rel(l.wu_lat_p99_us, s.wu_lat_p99_us),
                resp_p50_rel: rel(l.resp_p50_us, s.resp_p50_us),
                resp_p99_rel: rel(l.resp_p99_us, s.resp_p99_us),
                live: l,
                sim: s,
            };
        }
    }
    let m =
        |g: fn(&CaseReport) -> f64| median(compared.iter().map(|r| g(r)).collect()).unwrap_or(0.0);
    out.others_cpu = m(|r| r.others_cpu);
    out.steal_cpu = m(|r| r.steal_cpu);
    out.live_window_s = m(|r| r.live_window_s);
    let left_out = n - compared.len();
    out.notes.push(format!(
        "figures are medians over {} runs{}; tick phases {} us",
        compared.len(),
        if left_out > 0 {
            format!(" ({left_out} of {n} diverged and are left out)")
        } else {
            String::new()
        },
        runs.iter()
            .map(|r| r.tick_phase_us.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if runs.iter().any(|r| r.timer_origin_us.is_some()) {
        out.notes.push(format!(
            "rt-app's timers counted from {} us after its start (the simulated threads start there)",
            runs.iter()
                .map(|r| r.timer_origin_us.map_or("-".into(), |us| us.to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !same_tasks {
        out.notes
            .push("the runs' task lists differ: the first compared run's rows are shown".into());
    }
    out.per_run = runs;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(share_live: f64, lat_live: Option<f64>, lat_sim: f64, diverged: bool) -> CaseReport {
        let mut r = super::super::skipped(&super::super::CASES[0], String::new());
        r.skipped = None;
        r.diverged = diverged.then(|| "stalled".to_string());
        let live = Side {
            share: share_live,
            wu_lat_p50_us: lat_live,
            migrations: 10,
            ..Default::default()
        };
        let sim = Side {
            share: 0.5,
            wu_lat_p50_us: Some(lat_sim),
            migrations: 30,
            ..Default::default()
        };
        r.tasks = vec![TaskRow {
            name: "t".into(),
            group: "/".into(),
            share_diff_pp: 0.0,
            wu_lat_p50_rel: None,
            wu_lat_p99_rel: None,
            resp_p50_rel: None,
            resp_p99_rel: None,
            live,
            sim,
        }];
        r
    }

    #[test]
    fn medians_of_each_figure_and_ratios_between_medians() {
        let r = medians(vec![
            run(0.4, Some(100.0), 90.0, false),
            run(0.6, Some(300.0), 120.0, false),
            run(0.5, None, 150.0, false),
            run(0.9, Some(9999.0), 1.0, true),
        ]);
        assert_eq!(r.runs, 4);
        assert_eq!(r.per_run.len(), 4);
        let t = &r.tasks[0];
        assert_eq!(
            t.live.share, 0.5,
            "median of 0.4, 0.6, 0.5; the diverged run left out"
        );
        assert_eq!(
            t.live.wu_lat_p50_us,
            Some(200.0),
            "median of the runs that had one"
        );
        assert_eq!(t.sim.wu_lat_p50_us, Some(120.0));
        assert!((t.wu_lat_p50_rel.unwrap() - (120.0 - 200.0) / 200.0).abs() < 1e-12);
        assert!((t.share_diff_pp - 0.0).abs() < 1e-9);
        assert_eq!((t.live.migrations, t.sim.migrations), (10, 30));
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("medians over 3 runs (1 of 4 diverged")));
    }

    #[test]
    fn one_run_is_its_own_summary() {
        let r = medians(vec![run(0.4, Some(100.0), 90.0, false)]);
        assert_eq!(r.runs, 1);
        assert!(r.per_run.is_empty());
        assert_eq!(r.tasks[0].live.share, 0.4);
    }
}
