//! `corral sim WORKLOAD --compare`: what if corral managed it. The replays
//! are `corral_sim::corral::whatif`'s; this prints them side by side.

use crate::args::SimArgs;
use crate::table::Table;
use corral_sim::corral::policy::Place;
use corral_sim::corral::whatif::{self, Figures, Periodic};
use corral_sim::input::platform::PlatformSpec;
use corral_sim::input::recording;
use corral_sim::input::rtapp::Workload;
use corral_sim::sched::fair::Flavour;
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

/// Programs shown beside the periodic threads.
const PROGRAMS: usize = 8;

/// What a row pools: one thread, or a program's threads.
enum Pick {
    Thread(String),
    Program(String),
}

struct Row {
    label: String,
    pick: Pick,
    /// Its live figures, from the recording (CPU ms, p99 µs).
    live: Option<(f64, f64)>,
}

#[allow(clippy::too_many_arguments)]
pub fn run(
    args: &SimArgs,
    work: Workload,
    spec: &PlatformSpec,
    flavour: Flavour,
    config: corral_core::config::Config,
    recorded: Option<&serde_json::Value>,
    end: u64,
    kernel: &str,
) -> anyhow::Result<ExitCode> {
    // The periodic threads of the scope, as the recording judged them.
    let mut periodic: Vec<Periodic> = Vec::new();
    if let Some(threads) = recorded.and_then(|r| r["threads"].as_object()) {
        for (name, t) in threads {
            if let (Some(p), false) = (
                t["period_us"].as_u64(),
                t["background"].as_bool().unwrap_or(false),
            ) {
                periodic.push(Periodic {
                    name: name.clone(),
                    period_us: p,
                });
            }
        }
    }
    let phases = match args.phases {
        Some(n) if n > 1 && periodic.is_empty() => anyhow::bail!(
            "--phases {n}: {} has no periodic threads to shift (a recording made by `corral record` names them)",
            args.workload.as_ref().map_or("the workload".into(), |p| p.display().to_string())
        ),
        Some(n) => n,
        None if periodic.is_empty() => 1,
        None => 9,
    };
    let t0 = Instant::now();
    let tty = std::io::stderr().is_terminal() && !args.json;
    let r = whatif::compare(
        &work,
        spec,
        flavour,
        &config,
        args.daemon_cost.map(|c| c.0),
        &periodic,
        phases,
        args.seed,
        end,
        &mut |n| {
            if tty {
                eprint!("\rcorral sim: replay {n} of {}", 2 * phases);
            }
        },
    )?;
    if tty {
        eprintln!();
    }
    let wall = t0.elapsed().as_secs_f64();
    // What ran beside the scope, and the daemon's own thread if asked.
    let background: BTreeSet<&str> = r.outside.iter().map(String::as_str).collect();

    // Rows: each periodic thread, then the programs that used the most
    // CPU with no policy in the recorded phase (but one whose threads all
    // have rows already).
    let live_threads = recorded.map(|r| &r["threads"]);
    let live_comm = recorded.map(|r| &r["by_comm"]);
    let mut rows: Vec<Row> = periodic
        .iter()
        .map(|p| Row {
            label: format!("{} (every {:.1} ms)", p.name, p.period_us as f64 / 1e3),
            pick: Pick::Thread(p.name.clone()),
            live: live_threads.map(|t| {
                (
                    t[&p.name]["cpu_ms"].as_f64().unwrap_or(0.0),
                    t[&p.name]["latency_p99_us"].as_f64().unwrap_or(0.0),
                )
            }),
        })
        .collect();
    let mut programs = super::sim::by_comm(&r.none[0], &background);
    programs.retain(|g| {
        let own_rows = periodic
            .iter()
            .filter(|p| recording::comm_of(&p.name) == g.comm)
            .count();
        g.threads > own_rows
    });
    programs.sort_by_key(|g| std::cmp::Reverse(g.cpu_ns));
    for comm in programs.into_iter().take(PROGRAMS).map(|g| g.comm) {
        rows.push(Row {
            label: comm.clone(),
            live: live_comm.and_then(|c| {
                let g = &c[&comm];
                Some((g["cpu_ms"].as_f64()?, g["latency_p99_us"].as_f64()?))
            }),
            pick: Pick::Program(comm),
        });
    }
    let per_phase = |stats: &Vec<Vec<corral_sim::sched::machine::TaskStats>>, pick: &Pick| {
        stats
            .iter()
            .map(|s| match pick {
                Pick::Thread(n) => whatif::figures(s, |t| t == n),
                Pick::Program(c) => {
                    whatif::figures(s, |t| !background.contains(t) && recording::comm_of(t) == c)
                }
            })
            .collect::<Vec<Figures>>()
    };
    let scope = |stats: &Vec<Vec<corral_sim::sched::machine::TaskStats>>| {
        stats
            .iter()
            .map(|s| whatif::figures(s, |t| !background.contains(t)))
            .collect::<Vec<Figures>>()
    };
    let (whole_none, whole_corral) = (scope(&r.none), scope(&r.corral));

    if args.json {
        let fig = |f: &[Figures]| {
            serde_json::json!({
                "cpu_s": f.iter().map(|x| x.cpu_ns as f64 / 1e9).collect::<Vec<_>>(),
                "wakeups": f.iter().map(|x| x.wakeups).collect::<Vec<_>>(),
                "latency_p50_us": f.iter().map(|x| x.p50_ns as f64 / 1e3).collect::<Vec<_>>(),
                "latency_p99_us": f.iter().map(|x| x.p99_ns as f64 / 1e3).collect::<Vec<_>>(),
                "ended_s": f.iter().map(|x| x.ended_at.map(|e| e as f64 / 1e9)).collect::<Vec<_>>(),
            })
        };
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|row| {
                let (kind, name) = match &row.pick {
                    Pick::Thread(n) => ("thread", n),
                    Pick::Program(c) => ("program", c),
                };
                let (none, corral) = (per_phase(&r.none, &row.pick), per_phase(&r.corral, &row.pick));
                let under = match &row.pick {
                    Pick::Thread(n) => match r.under.get(n) {
                        Some(Place::Group(g)) => serde_json::json!({"group": g}),
                        Some(Place::Unmanaged(why)) => serde_json::json!({"unmanaged": why}),
                        None => serde_json::Value::Null,
                    },
                    Pick::Program(_) => serde_json::Value::Null,
                };
                serde_json::json!({
                    "kind": kind,
                    "name": name,
                    "under_corral": under,
                    "none": fig(&none),
                    "corral": fig(&corral),
                    "p99_ratio_of_medians": ratio(&none, &corral, |f| f.p99_ns as f64),
                    "live": row.live.map(|(cpu, p99)| serde_json::json!({"cpu_ms": cpu, "latency_p99_us": p99})),
                })
            })
            .collect();
        let v = serde_json::json!({
            "kernel": kernel,
            "cpus": spec.platform.capacities.len(),
            "phases": phases,
            "seed": r.seed,
            "periodic": periodic.iter().map(|p| serde_json::json!({"name": p.name, "period_us": p.period_us})).collect::<Vec<_>>(),
            "offsets_us": r.offsets,
            "rows": rows,
            "whole": {"none": fig(&whole_none), "corral": fig(&whole_corral),
                      "end_ratio_of_medians": all_ended(&whole_none, &whole_corral)
                          .then(|| ratio(&whole_none, &whole_corral, end_s)).flatten()},
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }

    let cpus = spec.platform.capacities.len();
    println!(
        "What if corral managed it: {kernel} on {cpus} CPU{}, {} replays in {wall:.1} s",
        if cpus == 1 { "" } else { "s" },
        2 * phases,
    );
    if phases > 1 {
        println!(
            "{phases} phases of the periodic threads' grids (the first as recorded; seed {}): medians, p99 also [least–most]",
            r.seed
        );
    }
    let mut headers = vec![
        "THREAD / PROGRAM",
        "CPU (s) NONE → CORRAL",
        "P99 (us) NONE",
        "P99 (us) CORRAL",
        "P99 RATIO",
        "ENDS (s) NONE → CORRAL",
    ];
    if recorded.is_some() {
        headers.push("LIVE P99 (us)");
    }
    let mut t = Table::new(&headers);
    let spread = |f: &[Figures], g: &dyn Fn(&Figures) -> f64| {
        let xs: Vec<f64> = f.iter().map(g).collect();
        let m = whatif::median(xs.clone());
        if xs.len() < 2 {
            return format!("{m:.0}");
        }
        let lo = xs.iter().cloned().fold(f64::MAX, f64::min);
        let hi = xs.iter().cloned().fold(f64::MIN, f64::max);
        format!("{m:.0} [{lo:.0}–{hi:.0}]")
    };
    let p99 = |f: &Figures| f.p99_ns as f64 / 1e3;
    let cpu = |f: &[Figures]| whatif::median(f.iter().map(|x| x.cpu_ns as f64 / 1e9).collect());
    for row in &rows {
        let (none, corral) = (
            per_phase(&r.none, &row.pick),
            per_phase(&r.corral, &row.pick),
        );
        let mut cells = vec![
            row.label.clone(),
            format!("{:.2} → {:.2}", cpu(&none), cpu(&corral)),
            spread(&none, &p99),
            spread(&corral, &p99),
            ratio(&none, &corral, |f| f.p99_ns as f64).map_or("-".into(), |x| format!("×{x:.2}")),
            ends(&none, &corral),
        ];
        if recorded.is_some() {
            cells.push(row.live.map_or("-".into(), |(_, p)| format!("{p:.0}")));
        }
        t.row(cells);
    }
    print!("{}", t.render());
    let placed: Vec<String> = periodic
        .iter()
        .map(|p| match r.under.get(&p.name) {
            Some(Place::Group(g)) => format!("{} in its {g} group", p.name),
            Some(Place::Unmanaged(why)) => format!("{} left alone ({why})", p.name),
            None => format!("{} never sampled by the daemon", p.name),
        })
        .collect();
    if !placed.is_empty() {
        println!("Under corral (the recorded phase): {}", placed.join("; "));
    }
    if periodic
        .iter()
        .any(|p| matches!(r.under.get(&p.name), Some(Place::Unmanaged(_))))
    {
        if args.daemon_cost.is_some() {
            println!(
                "A thread left alone changes only by where corral puts the others and by what shares its task group with it (the daemon, the recorder): docs/sim.md, --compare"
            );
        } else {
            println!(
                "A thread left alone changes only by where corral puts the others and by what shares its task group with it: without --daemon-cost (`corral run` logs it when it stops) the daemon runs free and such a thread is predicted to gain too much (docs/sim.md, --compare)"
            );
        }
    }
    if whole_none.iter().all(|f| f.threads == 0) {
        println!("Whole: no thread in scope (every thread is background)");
    } else if all_ended(&whole_none, &whole_corral) {
        let e = |f: &[Figures]| whatif::median(f.iter().map(end_s).collect());
        println!(
            "Whole (the scope, background left out): CPU {:.2} s → {:.2} s; ends at {:.3} s → {:.3} s (×{:.3}){}",
            cpu(&whole_none),
            cpu(&whole_corral),
            e(&whole_none),
            e(&whole_corral),
            e(&whole_corral) / e(&whole_none),
            recorded
                .and_then(live_end)
                .map_or(String::new(), |l| format!("; live {l:.3} s")),
        );
    } else {
        println!(
            "Whole: some threads had not ended when a replay stopped (no ratio of ends); --duration gives them longer"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether every thread of a row ended in every replay.
fn all_ended(none: &[Figures], corral: &[Figures]) -> bool {
    none.iter().chain(corral).all(|x| x.ended_at.is_some())
}

/// When the last thread of a row ended, medians over phases ("-" when one
/// had not ended in some replay).
fn ends(none: &[Figures], corral: &[Figures]) -> String {
    if !all_ended(none, corral) {
        return "-".into();
    }
    let n = whatif::median(none.iter().map(end_s).collect());
    let c = whatif::median(corral.iter().map(end_s).collect());
    format!("{n:.2} → {c:.2} (×{:.3})", c / n)
}

/// When the last of a replay's threads ended, s (0 if one had not).
fn end_s(f: &Figures) -> f64 {
    f.ended_at.map_or(0.0, |e| e as f64 / 1e9)
}

/// The median under corral over the median with no policy; none when the
/// latter is 0.
fn ratio(none: &[Figures], corral: &[Figures], g: impl Fn(&Figures) -> f64) -> Option<f64> {
    let n = whatif::median(none.iter().map(&g).collect());
    let c = whatif::median(corral.iter().map(&g).collect());
    (n > 0.0).then(|| c / n)
}

/// When the recorded scope's last thread ended live, s.
fn live_end(rec: &serde_json::Value) -> Option<f64> {
    let threads = rec["threads"].as_object()?;
    threads
        .values()
        .filter(|t| !t["background"].as_bool().unwrap_or(false))
        .filter_map(|t| t["exited_s"].as_f64())
        .reduce(f64::max)
}

/// `--compare` refuses a model without group scheduling.
pub fn unsupported(kernel: &str) -> anyhow::Error {
    anyhow::anyhow!("--compare runs corral's daemon, which needs group scheduling: use --kernel eevdf or cfs, not {kernel}")
}
