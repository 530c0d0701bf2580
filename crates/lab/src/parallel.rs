//! `corral lab parallel`: paper 003's experiment on this machine.
//!
//! Recursive Fibonacci, split fork-join style over 1..P threads: the
//! recursion tree is cut into many subproblems (largest first), and the
//! threads pull them from a shared counter, as an OpenMP task loop would.
//! Each run is timed with the monotonic clock (`Instant`), and the result
//! is checked against the closed-form value so the work cannot be
//! optimised away or split wrongly.

use serde::Serialize;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The golden ratio: fib(n + 1) costs about φ times fib(n).
const PHI: f64 = 1.618_033_988_749_895;

/// Naive doubly recursive Fibonacci, the paper's CPU-bound workload.
pub fn fib(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    fib(black_box(n - 1)) + fib(black_box(n - 2))
}

/// fib(n) by iteration, to check the parallel result.
pub fn fib_exact(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// Cuts fib(n) into subproblems whose fib values sum to fib(n): the
/// largest is split (fib(k) = fib(k−1) + fib(k−2)) until there are at
/// least `pieces`, or the largest is cheap. Returned largest first.
pub fn split(n: u32, pieces: usize) -> Vec<u32> {
    let mut heap = BinaryHeap::from([n]);
    while heap.len() < pieces {
        match heap.peek() {
            Some(&k) if k >= 12 => {
                heap.pop();
                heap.push(k - 1);
                heap.push(k - 2);
            }
            _ => break,
        }
    }
    heap.into_sorted_vec().into_iter().rev().collect()
}

/// fib(n) on `threads` threads, pulling subproblems from a shared counter.
pub fn parallel_fib(n: u32, threads: u32) -> u64 {
    let tasks = split(n, 32 * threads.max(1) as usize);
    let next = AtomicUsize::new(0);
    let sum = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut local = 0u64;
                while let Some(&k) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    local += fib(k);
                }
                sum.fetch_add(local, Ordering::Relaxed);
            });
        }
    });
    sum.into_inner()
}

/// Picks n so that fib(n) takes about `target` on one thread here: time a
/// small fib (best of three), then scale by φ per step.
pub fn calibrate(target: Duration) -> u32 {
    const BASE: u32 = 30;
    let best = (0..3)
        .map(|_| {
            let t = Instant::now();
            black_box(fib(black_box(BASE)));
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
        .as_secs_f64()
        .max(1e-6);
    let steps = (target.as_secs_f64() / best).ln() / PHI.ln();
    (BASE as f64 + steps).round().clamp(20.0, 60.0) as u32
}

/// What the two detectors would choose, given by the caller.
#[derive(Debug, Clone, Serialize)]
pub struct Detectors {
    /// CPUs present: the experiment runs 1..=present threads.
    pub present: u32,
    /// An online-only detector (`sysconf(_SC_NPROCESSORS_ONLN)`).
    pub online_only: u32,
    /// corral's CPU Count Detector.
    pub corral: u32,
}

/// Options of the experiment.
#[derive(Debug, Clone)]
pub struct Options {
    /// fib(n); `None` calibrates n to take `target` on one thread.
    pub n: Option<u32>,
    pub target: Duration,
    /// Runs per thread count; the median is reported.
    pub repeat: u32,
    /// The most threads to try (default: the present CPUs).
    pub max_threads: Option<u32>,
}

/// One thread count's result.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub threads: u32,
    /// Median wall time, seconds.
    pub wall_s: f64,
    /// Every run's wall time, seconds.
    pub runs_s: Vec<f64>,
    /// Wall time on 1 thread / wall time here.
    pub speedup: f64,
    /// Speed-up / threads.
    pub efficiency: f64,
}

/// The experiment's report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub n: u32,
    pub subproblems: usize,
    pub detectors: Detectors,
    pub rows: Vec<Row>,
    /// Wall time at the thread count each detector chose, where measured.
    pub online_only_wall_s: Option<f64>,
    pub corral_wall_s: Option<f64>,
}

/// Runs the experiment; `progress` hears about each run as it ends.
pub fn run(opts: &Options, detectors: Detectors, mut progress: impl FnMut(&str)) -> Report {
    let n = opts.n.unwrap_or_else(|| {
        let n = calibrate(opts.target);
        progress(&format!(
            "calibrated: fib({n}) takes about {:.1} s on one thread",
            opts.target.as_secs_f64()
        ));
        n
    });
    let expected = fib_exact(n);
    let max = opts.max_threads.unwrap_or(detectors.present).max(1);
    let mut rows: Vec<Row> = Vec::new();
    for threads in 1..=max {
        let mut runs: Vec<f64> = (0..opts.repeat.max(1))
            .map(|_| {
                let t = Instant::now();
                let got = parallel_fib(n, threads);
                let s = t.elapsed().as_secs_f64();
                assert_eq!(
                    got, expected,
                    "fib({n}) on {threads} threads summed wrongly"
                );
                progress(&format!("fib({n}) on {threads} thread(s): {s:.3} s"));
                s
            })
            .collect();
        let runs_s = runs.clone();
        runs.sort_by(f64::total_cmp);
        let wall_s = runs[runs.len() / 2];
        let base = rows.first().map_or(wall_s, |r| r.wall_s);
        rows.push(Row {
            threads,
            wall_s,
            runs_s,
            speedup: base / wall_s,
            efficiency: base / wall_s / threads as f64,
        });
    }
    let at = |t: u32| rows.iter().find(|r| r.threads == t).map(|r| r.wall_s);
    Report {
        n,
        subproblems: split(n, 32 * max as usize).len(),
        online_only_wall_s: at(detectors.online_only),
        corral_wall_s: at(detectors.corral),
        detectors,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_preserves_the_sum() {
        for (n, pieces) in [(25, 1), (25, 7), (30, 64), (13, 100)] {
            let parts = split(n, pieces);
            assert_eq!(
                parts.iter().map(|&k| fib_exact(k)).sum::<u64>(),
                fib_exact(n)
            );
            assert!(parts.windows(2).all(|w| w[0] >= w[1]), "largest first");
        }
        assert!(split(30, 64).len() >= 64);
    }

    #[test]
    fn parallel_fib_is_exact() {
        assert_eq!(fib(20), 6765);
        for threads in 1..=4 {
            assert_eq!(parallel_fib(24, threads), fib_exact(24));
        }
    }
}
