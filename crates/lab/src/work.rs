//! Workload programs the experiments run as separate processes
//! (`corral lab work …`). Each measures itself with CLOCK_MONOTONIC and
//! prints one JSON line when it ends.

use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Monotonic time, ns.
pub fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU time of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Burns CPU until the calling thread has used `ns` more of it: the same
/// demand whether or not it is preempted meanwhile (rt-app's `run`).
pub fn burn_cpu(ns: u64) {
    let end = thread_cpu_ns() + ns;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    while thread_cpu_ns() < end {
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        black_box(x);
    }
}

/// The result of a periodic workload.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PeriodicResult {
    pub tid: u32,
    pub periods: usize,
    /// Periods skipped because the previous one ran past them (missed
    /// deadlines: an audio thread would have under-run).
    pub missed: u64,
    /// Wake-up latency of each measured period: actual wake − timer expiry, ns.
    pub latency_ns: Vec<u64>,
    /// CPU time used over the measured periods, ns.
    pub cpu_ns: u64,
    pub wall_ns: u64,
}

/// Wakes every `period` on an absolute timer, burns `run` of CPU, and
/// records how late each wake-up was. The first `warmup` is not recorded.
///
/// As cyclictest does, a period whose work ends after the next timer
/// expiry does not make the thread run back to back: it skips to the next
/// period boundary still ahead and counts the ones missed. Lateness then
/// never accumulates, and every recorded figure is one wake-up's latency.
///
/// With `catch_up`, it behaves as rt-app's `timer` does instead: the next
/// expiry is always the previous plus a period, so late periods run back
/// to back and the thread keeps demanding its full share of CPU (work that
/// must be done, like decoding); recorded figures are then lateness.
pub fn periodic(
    period: Duration,
    run: Duration,
    warmup: Duration,
    periods: usize,
    catch_up: bool,
) -> PeriodicResult {
    let period_ns = period.as_nanos() as u64;
    let start = mono_ns();
    let measure_from = start + warmup.as_nanos() as u64;
    let mut next = start + period_ns;
    let mut out = PeriodicResult {
        tid: rustix::thread::gettid().as_raw_nonzero().get() as u32,
        ..Default::default()
    };
    let mut cpu0 = None;
    let mut wall0 = 0;
    while out.latency_ns.len() < periods {
        let ts = rustix::time::Timespec {
            tv_sec: (next / 1_000_000_000) as i64,
            tv_nsec: (next % 1_000_000_000) as i64,
        };
        let _ = rustix::thread::clock_nanosleep_absolute(rustix::time::ClockId::Monotonic, &ts);
        let woke = mono_ns();
        if next >= measure_from {
            if cpu0.is_none() {
                cpu0 = Some(thread_cpu_ns());
                wall0 = woke;
            }
            out.latency_ns.push(woke.saturating_sub(next));
        }
        burn_cpu(run.as_nanos() as u64);
        next += period_ns;
        let now = mono_ns();
        if now > next && !catch_up {
            let behind = (now - next) / period_ns + 1;
            if next >= measure_from {
                out.missed += behind;
            }
            next += behind * period_ns;
        }
    }
    out.periods = out.latency_ns.len();
    out.cpu_ns = thread_cpu_ns() - cpu0.unwrap_or(0);
    out.wall_ns = mono_ns() - wall0;
    out
}

/// Spins for ever (a CPU hog); ends when killed.
pub fn hog() -> ! {
    let mut x = 1u64;
    loop {
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
        }
        black_box(x);
    }
}

/// Starts `n` threads that sleep for ever (plus the calling one); ends
/// when killed.
pub fn sleepers(n: u32) -> ! {
    for _ in 0..n {
        let _ = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| loop {
                std::thread::park();
            });
    }
    loop {
        std::thread::park();
    }
}

/// The result of the fixed-work benchmark.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BenchResult {
    pub tid: u32,
    pub ops: u64,
    pub wall_ns: u64,
    pub cpu_ns: u64,
    /// `se.nr_migrations` over the run, when /proc/…/sched exists.
    pub migrations: Option<u64>,
    pub checksum: u64,
}

/// One op of the benchmark: 1000 rounds of a 64-bit xorshift and multiply
/// on registers (no memory traffic: a CPU-bound task with a tiny working set).
#[inline(never)]
fn bench_op(mut x: u64) -> u64 {
    for _ in 0..1000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
    }
    x
}

fn nr_migrations() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
    text.lines()
        .find(|l| l.starts_with("se.nr_migrations"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

/// Runs `ops` ops of fixed arithmetic and reports wall time, CPU time
/// and migrations.
pub fn bench(ops: u64) -> BenchResult {
    let m0 = nr_migrations();
    let (w0, c0) = (Instant::now(), thread_cpu_ns());
    let mut x = 0x1234_5678_9ABC_DEF1u64;
    for _ in 0..ops {
        x = bench_op(black_box(x));
    }
    let wall_ns = w0.elapsed().as_nanos() as u64;
    let cpu_ns = thread_cpu_ns() - c0;
    BenchResult {
        tid: rustix::thread::gettid().as_raw_nonzero().get() as u32,
        ops,
        wall_ns,
        cpu_ns,
        migrations: match (m0, nr_migrations()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        },
        checksum: x,
    }
}

/// Ops per second of [`bench`] here, measured over about `probe`.
pub fn bench_rate(probe: Duration) -> f64 {
    let mut ops = 64u64;
    loop {
        let r = bench(ops);
        if r.cpu_ns as u128 >= probe.as_nanos() / 4 {
            return ops as f64 / (r.cpu_ns as f64 / 1e9);
        }
        ops *= 4;
    }
}

/// Percentile `p` (0–100) of sorted values, nearest rank.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&[7], 99.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn periodic_measures_every_period() {
        let r = periodic(
            Duration::from_millis(2),
            Duration::from_micros(100),
            Duration::from_millis(4),
            10,
            false,
        );
        assert_eq!(r.periods, 10);
        assert!(r.cpu_ns >= 10 * 100_000, "burned {} ns", r.cpu_ns);
    }

    #[test]
    fn periodic_skips_missed_periods_instead_of_running_late() {
        // 3 ms of CPU every 1 ms: it cannot keep up, and must not pile up lateness.
        let r = periodic(
            Duration::from_millis(1),
            Duration::from_millis(3),
            Duration::ZERO,
            5,
            false,
        );
        assert!(r.missed >= 5, "missed {}", r.missed);
        assert!(
            r.latency_ns.iter().all(|&l| l < 50_000_000),
            "{:?}",
            r.latency_ns
        );
    }

    #[test]
    fn bench_is_deterministic_work() {
        assert_eq!(bench(10).checksum, bench(10).checksum);
        assert!(bench_rate(Duration::from_millis(20)) > 0.0);
    }
}

/// The result of the interactive workload.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct InteractiveResult {
    /// The input handler's TID.
    pub handler_tid: u32,
    /// Response time of each event (event arrives at the dispatcher → work
    /// done, the boost call included), ns.
    pub response_ns: Vec<u64>,
    /// Time each boost request took (call → reply), ns, when boosting.
    pub boost_call_ns: Vec<u64>,
    /// Boost requests that failed, and the first reason.
    pub boost_errors: usize,
    pub first_boost_error: Option<String>,
    /// CPU work per event, ns.
    pub te_ns: u64,
}

/// Paper 001's input path: a dispatcher thread delivers an event every
/// `period` to an input-handler thread, which does `te` of CPU work per
/// event. Before each event the dispatcher may call `before_event` with
/// the handler's TID — the framework telling corral which thread handles
/// the input. Response time is measured from the event's arrival at the
/// dispatcher (before the boost call: the input waits for it) to the end
/// of its work, on the monotonic clock.
pub fn interactive(
    te: Duration,
    period: Duration,
    events: usize,
    mut before_event: impl FnMut(u32) -> Result<(), String>,
) -> Result<InteractiveResult, String> {
    use std::sync::mpsc;
    let (event_tx, event_rx) = mpsc::channel::<u64>();
    let (done_tx, done_rx) = mpsc::channel::<(u64, u64)>();
    let (tid_tx, tid_rx) = mpsc::channel::<u32>();
    let te_ns = te.as_nanos() as u64;
    let handler = std::thread::Builder::new()
        .name("input-handler".into())
        .spawn(move || {
            let _ = tid_tx.send(rustix::thread::gettid().as_raw_nonzero().get() as u32);
            // Blocks between events: a voluntary sleep, as a real handler's.
            while let Ok(sent) = event_rx.recv() {
                burn_cpu(te_ns);
                if done_tx.send((sent, mono_ns())).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| e.to_string())?;
    let handler_tid = tid_rx.recv().map_err(|e| e.to_string())?;
    let mut out = InteractiveResult {
        handler_tid,
        te_ns,
        ..Default::default()
    };
    let mut next = mono_ns() + period.as_nanos() as u64;
    for _ in 0..events {
        let ts = rustix::time::Timespec {
            tv_sec: (next / 1_000_000_000) as i64,
            tv_nsec: (next % 1_000_000_000) as i64,
        };
        let _ = rustix::thread::clock_nanosleep_absolute(rustix::time::ClockId::Monotonic, &ts);
        let t = mono_ns();
        // A failed boost must not stop the input: record it and go on.
        if let Err(e) = before_event(handler_tid) {
            out.boost_errors += 1;
            out.first_boost_error.get_or_insert(e);
        }
        out.boost_call_ns.push(mono_ns() - t);
        event_tx.send(t).map_err(|e| e.to_string())?;
        let (sent, done) = done_rx.recv().map_err(|e| e.to_string())?;
        out.response_ns.push(done - sent);
        next += period.as_nanos() as u64;
        let now = mono_ns();
        if now > next {
            next = now + period.as_nanos() as u64 / 10;
        }
    }
    drop(event_tx);
    let _ = handler.join();
    Ok(out)
}
