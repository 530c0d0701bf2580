//! Paper 004's question, measured: what does a run queue cost per pick and
//! per enqueue + dequeue as the number of runnable tasks grows (1 … 10 000)?
//!
//! The structures are driven directly, not through the machine:
//!
//! - `linux24`: 2.4's one list and its goodness scan ([`OneList`]);
//! - `mlq3` … `mlq12`: paper 004's three levels with MEASURE 3, 4, 8, 12
//!   ([`Levels`]; removal searches level 2, 3, then 1);
//! - `o1`: the O(1) scheduler's priority array, 140 lists and a bitmap
//!   ([`PrioArray`]);
//! - `cfs_tree`: fair.rs's own run-queue structure, `sched::timeline::Timeline`
//!   (a tree augmented with each subtree's smallest vruntime) keyed by
//!   (vruntime, id), picked at its leftmost, as CFS picks.
//!
//! "pick" chooses the next task (the scan, the bitmap, the leftmost) on
//! CPU 0, every task allowed; "requeue" takes a pseudo-random queued task
//! off and puts it back (`dequeue_task` + `enqueue_task`: a task that
//! blocks and wakes).
//!
//! Afterwards the medians are read back from criterion's estimates, printed
//! as a table with the points where two structures' lines cross, and drawn
//! as a log-log chart, `target/runqueue.svg` (`$CARGO_TARGET_DIR` if set).
//!
//! `cargo bench -p corral-sim --bench runqueue` (about 2 minutes: 70
//! points, 1 s of measurement each).

use corral_sim::engine::Rng;
use corral_sim::legacy::linux24::{OneList, RunQueue24, Task24, Tunables24};
use corral_sim::legacy::mlq::Levels;
use corral_sim::legacy::o1::PrioArray;
use corral_sim::sched::timeline::Timeline;
// (Its tests run as tests/runqueue_chart.rs: a bench without a harness runs none.)
#[cfg_attr(test, allow(dead_code))]
mod runqueue_chart;
use criterion::{black_box, BenchmarkId, Criterion};
use runqueue_chart::{crossing_lines, crossings, svg, Panel, Series};
use std::path::{Path, PathBuf};
use std::time::Duration;

const SIZES: [usize; 5] = [1, 10, 100, 1000, 10_000];
/// The structures: criterion's name and the chart's.
const STRUCTURES: [(&str, &str); 7] = [
    ("linux24", "2.4 list + goodness scan"),
    ("mlq3", "multi-level, MEASURE 3"),
    ("mlq4", "multi-level, MEASURE 4"),
    ("mlq8", "multi-level, MEASURE 8"),
    ("mlq12", "multi-level, MEASURE 12"),
    ("o1", "O(1) bitmap array"),
    ("cfs_tree", "CFS/EEVDF tree"),
];
const OPS: [(&str, &str); 2] = [("pick", "pick next"), ("requeue", "enqueue + dequeue")];
/// Pseudo-random tasks to requeue, cycled through.
const SEQ: usize = 4096;

/// `n` runnable tasks as each structure sees them, drawn with a fixed
/// seed. The distribution is that of a busy 2.4 system at HZ 100
/// (NICE_TO_TICKS(0) = 6 ticks): most tasks have run and used most of
/// their slice — 80 % hold a counter of 0–3, at or below MEASURE 3 and 4 —
/// and 20 % slept through recalculations and hold 6–11 (a sleeper's counter
/// tends to 2·6 − 1 = 11). Each last ran on CPU 0 or 1. For O(1) the same
/// split: 80 % CPU-bound at priority 121–125 (little sleep_avg), 20 %
/// interactive at 115–119; for the tree, random vruntimes.
struct Population {
    tasks: Vec<Task24>,
    prio: Vec<usize>,
    vruntime: Vec<i64>,
    /// Tasks to requeue, in turn.
    seq: Vec<usize>,
}

fn population(n: usize, seed: u64) -> Population {
    let mut rng = Rng::new(seed);
    let (mut tasks, mut prio, mut vruntime) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let ran = rng.below(10) < 8;
        let counter = if ran {
            rng.below(4) as i32
        } else {
            6 + rng.below(6) as i32
        };
        tasks.push(Task24::other(0, counter, rng.below(2) as usize));
        prio.push(if ran { 121 } else { 115 } + rng.below(5) as usize);
        vruntime.push(rng.below(1_000_000_000) as i64);
    }
    let seq = (0..SEQ).map(|_| rng.below(n as u64) as usize).collect();
    Population {
        tasks,
        prio,
        vruntime,
        seq,
    }
}

fn measure(
    c: &mut Criterion,
    op: &str,
    name: &str,
    n: usize,
    f: &mut dyn FnMut(&mut criterion::Bencher),
) {
    let mut g = c.benchmark_group(op);
    g.bench_function(BenchmarkId::new(name, n), |b| f(b));
    g.finish();
}

fn bench_24<Q: RunQueue24>(c: &mut Criterion, name: &str, make: &dyn Fn() -> Q) {
    let tun = Tunables24::new(100);
    for n in SIZES {
        let p = population(n, 2024);
        let mut q = make();
        for t in 0..n {
            q.insert(t, &p.tasks, false);
        }
        measure(c, "pick", name, n, &mut |b| {
            b.iter(|| black_box(q.pick(0, &p.tasks, &tun, &|_| true).task))
        });
        let mut i = 0;
        measure(c, "requeue", name, n, &mut |b| {
            b.iter(|| {
                i = (i + 1) % SEQ;
                let t = p.seq[i];
                black_box(q.remove(t, &p.tasks));
                q.insert(t, &p.tasks, true);
            })
        });
    }
}

fn bench_o1(c: &mut Criterion) {
    for n in SIZES {
        let p = population(n, 2024);
        let mut a = PrioArray::default();
        for t in 0..n {
            a.insert(p.prio[t], t);
        }
        measure(c, "pick", "o1", n, &mut |b| b.iter(|| black_box(a.first())));
        let mut i = 0;
        measure(c, "requeue", "o1", n, &mut |b| {
            b.iter(|| {
                i = (i + 1) % SEQ;
                let t = p.seq[i];
                black_box(a.remove(t));
                a.insert(p.prio[t], t);
            })
        });
    }
}

fn bench_tree(c: &mut Criterion) {
    for n in SIZES {
        let p = population(n, 2024);
        let mut s = Timeline::default();
        for t in 0..n {
            s.insert(p.vruntime[t], t as u64, t, p.vruntime[t]);
        }
        measure(c, "pick", "cfs_tree", n, &mut |b| {
            b.iter(|| black_box(s.first()))
        });
        let mut i = 0;
        measure(c, "requeue", "cfs_tree", n, &mut |b| {
            b.iter(|| {
                i = (i + 1) % SEQ;
                let t = p.seq[i];
                black_box(s.remove(p.vruntime[t], t as u64));
                s.insert(p.vruntime[t], t as u64, t, p.vruntime[t]);
            })
        });
    }
}

/// `$CARGO_TARGET_DIR`, else the workspace's `target`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// The median of one point, ns, from criterion's estimates.
fn median(dir: &Path, op: &str, name: &str, n: usize) -> Option<f64> {
    let path = dir
        .join(op)
        .join(name)
        .join(n.to_string())
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

fn main() {
    let crit_dir = target_dir().join("criterion");
    let mut c = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(1))
        .warm_up_time(Duration::from_millis(300))
        .output_directory(&crit_dir)
        .configure_from_args();
    bench_24(&mut c, "linux24", &OneList::default);
    for m in [3, 4, 8, 12] {
        bench_24(&mut c, &format!("mlq{m}"), &|| Levels::new(m));
    }
    bench_o1(&mut c);
    bench_tree(&mut c);
    c.final_summary();

    let mut panels = Vec::new();
    println!("\nmedian ns per operation, by runnable tasks");
    for (op, title) in OPS {
        println!("\n{title}");
        print!("{:<28}", "structure");
        for n in SIZES {
            print!("{n:>10}");
        }
        println!();
        let mut series = Vec::new();
        for (name, label) in STRUCTURES {
            print!("{label:<28}");
            let mut points = Vec::new();
            for n in SIZES {
                match median(&crit_dir, op, name, n) {
                    Some(ns) => {
                        print!("{ns:>10.1}");
                        points.push((n as f64, ns));
                    }
                    None => print!("{:>10}", "-"),
                }
            }
            println!();
            series.push(Series {
                name: label.to_string(),
                points,
            });
        }
        let cross = crossings(&series);
        println!("crossings:");
        for l in crossing_lines(&cross, "ns") {
            println!("  {l}");
        }
        if cross.is_empty() {
            println!("  none");
        }
        panels.push(Panel {
            title: format!("{title} (median ns per operation)"),
            series,
        });
    }
    let out = target_dir().join("runqueue.svg");
    let chart = svg(
        "Run-queue cost against runnable tasks (paper 004), criterion medians",
        "runnable tasks",
        "ns per operation",
        "ns",
        &panels,
    );
    match std::fs::write(&out, chart) {
        Ok(()) => println!("\nchart: {}", out.display()),
        Err(e) => eprintln!("cannot write {}: {e}", out.display()),
    }
}
