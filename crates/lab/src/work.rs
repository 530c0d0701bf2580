//! Workload programs the experiments run as separate processes
//! (`corral lab work …`). Each measures itself with CLOCK_MONOTONIC and
//! prints one JSON line when it ends.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The clock and the CPU a frame loop uses: the monotonic clock, absolute
/// sleeps and [`burn_cpu`] live; a scripted clock in tests.
pub trait FrameClock {
    /// Now, ns.
    fn now(&mut self) -> u64;
    /// Sleeps until `t` (ns); may return early (a signal).
    fn sleep_until(&mut self, t: u64);
    /// Does `ns` of CPU work.
    fn work(&mut self, ns: u64);
}

/// [`FrameClock`] on CLOCK_MONOTONIC and the calling thread's CPU.
#[derive(Debug, Default)]
pub struct Monotonic;

impl FrameClock for Monotonic {
    fn now(&mut self) -> u64 {
        mono_ns()
    }

    fn sleep_until(&mut self, t: u64) {
        let ts = rustix::time::Timespec {
            tv_sec: (t / 1_000_000_000) as i64,
            tv_nsec: (t % 1_000_000_000) as i64,
        };
        // EINTR (the stop signal) returns early; the caller looks again.
        let _ = rustix::thread::clock_nanosleep_absolute(rustix::time::ClockId::Monotonic, &ts);
    }

    fn work(&mut self, ns: u64) {
        burn_cpu(ns);
    }
}

/// What a frame loop did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Frames rendered (work done).
    pub frames: u64,
    /// Frames whose work finished after their deadline.
    pub missed: u64,
    /// Periods in which no frame started, because the frame before ran
    /// into them.
    pub skipped: u64,
    /// Each frame's lateness: end of its work − its deadline, ns (negative:
    /// done early).
    pub lateness_ns: Vec<i64>,
}

/// A game's or video player's render loop: frame k is released at
/// `start + k·period` (k = 1, 2, …), does `work_ns` of CPU work and is due
/// at the end of its period, `start + (k+1)·period`; it is missed when its
/// work ends later. As [`periodic`] without catch-up does, a late frame
/// does not make the next ones run back to back: the next frame is released
/// at the next period boundary still ahead, and the periods passed over are
/// counted as skipped. Ends once `stop` is set, or at the first release
/// `seconds` or more after the start.
pub fn frame_loop(
    clock: &mut impl FrameClock,
    period_ns: u64,
    work_ns: u64,
    seconds: Option<f64>,
    stop: &AtomicBool,
) -> FrameStats {
    assert!(period_ns > 0, "a frame period of 0");
    let start = clock.now();
    let end = seconds.map(|s| start.saturating_add((s * 1e9) as u64));
    let mut out = FrameStats::default();
    let mut k = 1u64;
    loop {
        let release = start + k * period_ns;
        if end.is_some_and(|e| release >= e) {
            return out;
        }
        loop {
            if stop.load(Ordering::Relaxed) {
                return out;
            }
            if clock.now() >= release {
                break;
            }
            clock.sleep_until(release);
        }
        clock.work(work_ns);
        let done = clock.now();
        let deadline = release + period_ns;
        out.frames += 1;
        out.lateness_ns.push(done as i64 - deadline as i64);
        k += 1;
        if done > deadline {
            out.missed += 1;
            // The first boundary after `done`; the ones between are skipped.
            let ahead = (done - start) / period_ns + 1;
            out.skipped += ahead - k;
            k = ahead;
        }
    }
}

/// The result of the frame workload (`corral lab work frame`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FrameResult {
    pub period_us: u64,
    pub work_us: u64,
    pub frames: u64,
    pub missed: u64,
    pub skipped: u64,
    /// Lateness (end of work − deadline) percentiles, µs; negative is slack.
    pub lateness_p50_us: f64,
    pub lateness_p99_us: f64,
    pub lateness_max_us: f64,
}

impl FrameResult {
    pub fn new(period_ns: u64, work_ns: u64, s: &FrameStats) -> FrameResult {
        let mut late = s.lateness_ns.clone();
        late.sort_unstable();
        let us = |ns: i64| ns as f64 / 1000.0;
        FrameResult {
            period_us: period_ns / 1000,
            work_us: work_ns / 1000,
            frames: s.frames,
            missed: s.missed,
            skipped: s.skipped,
            lateness_p50_us: us(percentile_of(&late, 50.0).unwrap_or(0)),
            lateness_p99_us: us(percentile_of(&late, 99.0).unwrap_or(0)),
            lateness_max_us: us(late.last().copied().unwrap_or(0)),
        }
    }

    /// Missed frames over frames rendered, percent.
    pub fn missed_pct(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.missed as f64 * 100.0 / self.frames as f64
        }
    }
}

/// Percentile `p` (0–100) of sorted values, nearest rank; `None` if empty.
pub fn percentile_of<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Percentile `p` (0–100) of sorted values, nearest rank.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    percentile_of(sorted, p).unwrap_or(0)
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

    /// A scripted clock: each sleep wakes `wake_ns` after its target (the
    /// first `early` sleeps return at once, as on a signal), and each
    /// frame's work takes the next scripted time (or what was asked).
    struct FakeClock {
        t: u64,
        wake_ns: u64,
        early: u32,
        work: std::collections::VecDeque<u64>,
    }

    impl FakeClock {
        fn new(wake_ns: u64, work: &[u64]) -> FakeClock {
            FakeClock {
                t: 0,
                wake_ns,
                early: 0,
                work: work.iter().copied().collect(),
            }
        }
    }

    impl FrameClock for FakeClock {
        fn now(&mut self) -> u64 {
            self.t
        }
        fn sleep_until(&mut self, t: u64) {
            if self.early > 0 {
                self.early -= 1;
                self.t += 1;
            } else {
                self.t = self.t.max(t) + self.wake_ns;
            }
        }
        fn work(&mut self, ns: u64) {
            self.t += self.work.pop_front().unwrap_or(ns);
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn frames_on_time_are_not_missed() {
        let mut c = FakeClock::new(0, &[]);
        c.early = 3;
        let s = frame_loop(
            &mut c,
            16_667_000,
            4 * MS,
            Some(1.0),
            &AtomicBool::new(false),
        );
        // Releases at k x 16.667 ms below 1 s: k = 1..=59 (60 x 16.667 ms is past it).
        assert_eq!((s.frames, s.missed, s.skipped), (59, 0, 0));
        assert!(s.lateness_ns.iter().all(|&l| l == -16_667_000 + 4_000_000));
    }

    #[test]
    fn a_late_frame_is_missed_and_the_periods_it_ran_into_are_skipped() {
        // Period 10 ms: frames at 10, 20, 30 (runs 25 ms: done at 55, due
        // at 40), then at 60, not 40 or 50.
        let mut c = FakeClock::new(0, &[4 * MS, 4 * MS, 25 * MS, 4 * MS]);
        let s = frame_loop(
            &mut c,
            10 * MS,
            4 * MS,
            Some(0.065),
            &AtomicBool::new(false),
        );
        assert_eq!((s.frames, s.missed, s.skipped), (4, 1, 2));
        assert_eq!(
            s.lateness_ns,
            vec![-6_000_000, -6_000_000, 15_000_000, -6_000_000]
        );
        let r = FrameResult::new(10 * MS, 4 * MS, &s);
        assert_eq!(r.missed_pct(), 25.0);
        assert_eq!(r.lateness_max_us, 15_000.0);
        assert_eq!(r.lateness_p50_us, -6_000.0);
    }

    #[test]
    fn late_wake_ups_miss_every_frame_without_catching_up() {
        // Woken 7 ms late with 4 ms of work in 10 ms periods: each frame
        // ends 1 ms late, and the next starts a period later.
        let mut c = FakeClock::new(7 * MS, &[]);
        let s = frame_loop(&mut c, 10 * MS, 4 * MS, Some(0.1), &AtomicBool::new(false));
        // Releases at 10, 30, 50, 70, 90 ms; each ran into the next period
        // (the last into the one at 100 ms, where the loop ends).
        assert_eq!((s.frames, s.missed, s.skipped), (5, 5, 5));
        assert!(s.lateness_ns.iter().all(|&l| l == 1_000_000));
    }

    #[test]
    fn a_stopped_frame_loop_renders_nothing() {
        let mut c = FakeClock::new(0, &[]);
        let s = frame_loop(&mut c, 10 * MS, 4 * MS, None, &AtomicBool::new(true));
        assert_eq!(s, FrameStats::default());
        assert_eq!(FrameResult::new(10 * MS, 4 * MS, &s).missed_pct(), 0.0);
    }

    #[test]
    fn the_live_frame_loop_does_its_work() {
        let s = frame_loop(
            &mut Monotonic,
            5 * MS,
            MS,
            Some(0.05),
            &AtomicBool::new(false),
        );
        // Releases at 5, 10, …, 45 ms: nine periods, each rendered or
        // skipped (a loaded machine may make some late).
        assert!(s.frames >= 1 && s.frames + s.skipped <= 9, "{s:?}");
        assert_eq!(s.frames as usize, s.lateness_ns.len());
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
/// the input; a call that fails is counted, its first error kept, and the
/// event delivered all the same. Response time is measured from the
/// event's arrival at the dispatcher (before the boost call: the input
/// waits for it) to the end of its work, on the monotonic clock.
pub fn interactive(
    te: Duration,
    period: Duration,
    events: usize,
    mut before_event: impl FnMut(u32) -> Result<()>,
) -> Result<InteractiveResult> {
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
        .map_err(Error::spawn("the input-handler thread"))?;
    let handler_tid = tid_rx.recv().map_err(handler_ended)?;
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
            out.first_boost_error.get_or_insert(e.to_string());
        }
        out.boost_call_ns.push(mono_ns() - t);
        event_tx.send(t).map_err(handler_ended)?;
        let (sent, done) = done_rx.recv().map_err(handler_ended)?;
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

/// The input handler ended before the last event was handled.
fn handler_ended(e: impl std::fmt::Display) -> Error {
    Error::Measurement(format!("the input-handler thread ended early: {e}"))
}

/// What [`clients`] got: connections the daemon kept, and refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClientsResult {
    pub uid: u32,
    pub held: usize,
    pub refused: usize,
}

/// Opens `count` idle connections to the daemon's socket as user `uid`
/// (root may become anyone), prints how many were kept and refused as
/// one JSON line, and holds them until killed: one user's idle clients,
/// as issue 14 found them locking everybody out.
pub fn clients(socket: &std::path::Path, count: usize, uid: Option<u32>) -> Result<()> {
    use std::io::Read;
    if let Some(uid) = uid {
        let u = rustix::process::Uid::from_raw(uid);
        let g = rustix::process::Gid::from_raw(uid);
        let refused =
            |call: String| move |e: rustix::io::Errno| Error::Environment(format!("{call}: {e}"));
        rustix::thread::set_thread_groups(&[]).map_err(refused("setgroups".into()))?;
        rustix::thread::set_thread_gid(g).map_err(refused(format!("setgid {uid}")))?;
        rustix::thread::set_thread_uid(u).map_err(refused(format!("setuid {uid}")))?;
    }
    let mut streams = Vec::new();
    for _ in 0..count {
        match std::os::unix::net::UnixStream::connect(socket) {
            Ok(s) => streams.push(s),
            Err(e) => return Err(Error::io(socket)(e)),
        }
    }
    // A refused connection gets one error line and is closed at once.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut r = ClientsResult {
        uid: rustix::process::getuid().as_raw(),
        ..Default::default()
    };
    let mut kept = Vec::new();
    for s in streams {
        let _ = s.set_nonblocking(true);
        let mut buf = [0u8; 512];
        match (&s).read(&mut buf) {
            Ok(0) => r.refused += 1,
            Ok(_) => r.refused += 1,
            Err(_) => {
                r.held += 1;
                kept.push(s);
            }
        }
    }
    println!("{}", serde_json::to_string(&r).unwrap_or_default());
    loop {
        std::thread::park();
    }
}
