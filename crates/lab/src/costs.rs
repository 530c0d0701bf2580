//! `corral lab costs`: what the scheduler's own work costs on this
//! machine — a context switch, the wake-up of a thread on another CPU, a
//! migration's cache refill, a tick — measured the way lmbench's
//! `lat_ctx` and perf's `bench sched pipe` measure them, for a platform
//! file's `[costs]` (`corral_sim::input::platform`). Medians of repeated
//! rounds: one round disturbed by the host (a virtual machine's vCPU
//! descheduled) moves a median little.
//!
//! - **Context switch** (same CPU): two threads pinned to one CPU pass a
//!   byte back and forth over a Unix socket pair; a round trip is two
//!   switches and two sends and receives. One thread sending to itself
//!   gives the sends and receives alone:
//!   `switch = (round trip − 2 · send/receive) / 2`.
//! - **Remote wake-up**: the same with the threads on two CPUs; each
//!   half of a round trip wakes a thread whose CPU idles (the IPI, the
//!   idle exit, the switch from idle): `wake-up = (round trip − 2 ·
//!   send/receive) / 2`.
//! - **Timer wake-up**: a thread on an otherwise idle CPU, its timer
//!   slack set to 1 ns (the least `PR_SET_TIMERSLACK` takes), sleeps to
//!   absolute instants [`SLEEP_NS`] apart (`clock_nanosleep(TIMER_ABSTIME)`);
//!   from each instant to the clock read after the return (the timer
//!   interrupt, the idle exit, the switch from idle) is its cost. The
//!   default slack (50 µs) is not in it: the simulator adds a task's own
//!   (`sched::machine::Machine::hrtimer_sleep`). It grows with the idle
//!   time before it (deeper idle states; a virtual machine's host stops
//!   polling the halted vCPU): here 66, 77, 99, 110 and 123 µs (medians)
//!   after 1, 2, 5, 10 and 20 ms. XXX: the simulator takes one figure,
//!   the one after 5 ms, the middle of that range.
//! - **Timer wake-up that preempts**: the same sleeps on a CPU kept busy
//!   by a SCHED_IDLE thread, which any other wake-up preempts
//!   (`check_preempt_wakeup_fair`): from each instant to the clock read
//!   after the return is the timer interrupt on a busy CPU, the wake-up,
//!   the resched at the interrupt's exit and the switch — what a wake-up
//!   that preempts costs before the woken task runs (no idle exit in it).
//! - **Migration**: a thread writes a working set the size of its CPU's
//!   L2 cache (every 64-byte line), pass after pass; a pass right after
//!   it moved to the other CPU, less a pass where its data already is,
//!   is what the move cost it.
//! - **Waker**: a thread on one CPU wakes (`futex` `FUTEX_WAKE`) a
//!   thread asleep in `FUTEX_WAIT` on the other, idle CPU (idle for
//!   [`WAKER_IDLE_NS`] first); the call's time, from before to after it,
//!   is what the wake-up cost its waker: the system call,
//!   `try_to_wake_up` and the IPI to the idle CPU (on a virtual
//!   machine, the exit to the host that sends it). A call that found no
//!   sleeper (it had not gone back to sleep yet) is not counted.
//! - **Waker, same CPU**: the same with the sleeper on the waker's CPU,
//!   as a SCHED_IDLE thread so that its wake-up does not preempt the
//!   waker (no IPI in it); the waker then sleeps [`WAKER_IDLE_NS`] to let
//!   it run and go back to sleep.
//! - **Tick**: a thread spins reading the clock; the gaps in its readings
//!   longer than 1 µs are the interrupts that took its CPU, and the
//!   local timer interrupts (`LOC` in `/proc/interrupts`) counted
//!   meanwhile are the ticks among them: the median gap is a tick's cost.

use crate::error::{Error, Result};
use crate::work::mono_ns;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

/// The costs, ns (what a platform file's `[costs]` takes).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Costs {
    pub context_switch_ns: u64,
    pub wakeup_ns: u64,
    pub timer_wakeup_ns: u64,
    pub timer_preempt_ns: u64,
    pub migration_ns: u64,
    pub tick_ns: u64,
    /// Nil in what an older build kept (`lab validate --keep`).
    #[serde(default)]
    pub waker_ns: u64,
    #[serde(default)]
    pub waker_local_ns: u64,
}

impl Costs {
    /// As a platform file's `[costs]` section.
    pub fn toml(&self) -> String {
        let us = |ns: u64| format!("\"{:.2}us\"", ns as f64 / 1000.0);
        format!(
            "\n[costs]\ncontext_switch = {}\nwakeup = {}\ntimer_wakeup = {}\ntimer_preempt = {}\nmigration = {}\ntick = {}\nwaker = {}\nwaker_local = {}\n",
            us(self.context_switch_ns),
            us(self.wakeup_ns),
            us(self.timer_wakeup_ns),
            us(self.timer_preempt_ns),
            us(self.migration_ns),
            us(self.tick_ns),
            us(self.waker_ns),
            us(self.waker_local_ns)
        )
    }
}

/// The costs and what they were measured from.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub costs: Costs,
    pub cpus: (usize, usize),
    /// One send and receive on a socket pair, ns (subtracted above).
    pub send_receive_ns: u64,
    /// Round trips on one CPU and across two, ns (medians).
    pub round_trip_same_ns: u64,
    pub round_trip_remote_ns: u64,
    /// Timed sleeps measured on an idle CPU, and the idle time before
    /// each one's end, ns.
    pub timer_sleeps: usize,
    pub timer_sleep_ns: u64,
    /// The working set and a pass over it, warm and after a move, ns.
    pub working_set_bytes: usize,
    pub pass_warm_ns: u64,
    pub pass_moved_ns: u64,
    /// Interrupts seen by the spinning thread, those on the tick's grid,
    /// and the ticks counted.
    pub gaps: usize,
    pub tick_gaps: usize,
    pub ticks: u64,
}

fn pin(cpu: usize) -> Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)
        .map_err(|e| Error::Environment(format!("cannot pin a thread to CPU {cpu}: {e}")))
}

fn median(mut v: Vec<u64>) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

fn io(what: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::Measurement(format!("{what}: {e}"))
}

/// A send and receive of one byte on a socket pair, by one thread, ns
/// (median of rounds of `n`).
fn send_receive(cpu: usize, n: usize) -> Result<u64> {
    pin(cpu)?;
    let (mut a, mut b) = UnixStream::pair().map_err(io("a socket pair"))?;
    let mut buf = [0u8; 1];
    per_op(n, || {
        a.write_all(&buf).map_err(io("send"))?;
        b.read_exact(&mut buf).map_err(io("receive"))
    })
}

/// `op`'s time, ns: the median over 9 rounds of `n`.
fn per_op(n: usize, mut op: impl FnMut() -> Result<()>) -> Result<u64> {
    let mut rounds = Vec::new();
    for _ in 0..9 {
        let t0 = mono_ns();
        for _ in 0..n {
            op()?;
        }
        rounds.push((mono_ns() - t0) / n as u64);
    }
    Ok(median(rounds))
}

/// A round trip between a thread on `here` and one on `there`, ns
/// (median of rounds of `n`).
fn round_trip(here: usize, there: usize, n: usize) -> Result<u64> {
    let (mut a, mut b) = UnixStream::pair().map_err(io("a socket pair"))?;
    let echo = std::thread::spawn(move || -> Result<()> {
        pin(there)?;
        let mut buf = [0u8; 1];
        // Until the other end closes.
        while b.read_exact(&mut buf).is_ok() {
            b.write_all(&buf).map_err(io("echo"))?;
        }
        Ok(())
    });
    pin(here)?;
    let mut buf = [0u8; 1];
    let took = per_op(n, || {
        a.write_all(&buf).map_err(io("send"))?;
        a.read_exact(&mut buf).map_err(io("receive"))
    });
    drop(a);
    echo.join()
        .map_err(|_| Error::Measurement("the echo thread panicked".into()))??;
    took
}

/// The idle time before each timed sleep's end that `timer_wakeup`
/// measures, ns.
const SLEEP_NS: u64 = 5_000_000;

/// A timed sleep's end on idle CPU `cpu`, ns: the median, over `n`
/// sleeps to instants [`SLEEP_NS`] apart, of the time from each instant to the
/// clock read after `clock_nanosleep` returns, with a timer slack of
/// 1 ns (the caller's slack is put back).
fn timer_wakeup(cpu: usize, n: usize) -> Result<u64> {
    use rustix::thread::{clock_nanosleep_absolute, ClockId};
    use rustix::time::Timespec;
    pin(cpu)?;
    let own = rustix::thread::current_timer_slack()
        .map_err(|e| Error::Measurement(format!("PR_GET_TIMERSLACK: {e}")))?;
    rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1))
        .map_err(|e| Error::Measurement(format!("PR_SET_TIMERSLACK 1: {e}")))?;
    let mut late = Vec::with_capacity(n);
    let mut at = mono_ns();
    for _ in 0..n {
        at += SLEEP_NS;
        let ts = Timespec {
            tv_sec: (at / 1_000_000_000) as i64,
            tv_nsec: (at % 1_000_000_000) as _,
        };
        // EINTR: that sleep is not counted.
        if clock_nanosleep_absolute(ClockId::Monotonic, &ts).is_ok() {
            late.push(mono_ns().saturating_sub(at));
        }
    }
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(own));
    Ok(median(late))
}

/// Makes the calling thread SCHED_IDLE (a thread of ours, which ends
/// with the measurement).
fn sched_idle() -> Result<()> {
    let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    let attr = corral_linux::sched::sched_getattr(tid)
        .map_err(|e| Error::Measurement(format!("sched_getattr: {e}")))?;
    corral_linux::sched::sched_setattr(
        tid,
        &corral_linux::sched::SchedAttr {
            sched_policy: libc::SCHED_IDLE as u32,
            sched_nice: 0,
            ..attr
        },
    )
    .map_err(|e| Error::Measurement(format!("SCHED_IDLE: {e}")))
}

/// [`timer_wakeup`] on `cpu` kept busy by a SCHED_IDLE thread of ours
/// (spinning until the sleeps end), which each wake-up preempts.
fn timer_preempt(cpu: usize, n: usize) -> Result<u64> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let spinner = s.spawn(|| -> Result<()> {
            pin(cpu)?;
            sched_idle()?;
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
            Ok(())
        });
        // Let the spinner get onto its CPU first.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let r = timer_wakeup(cpu, n);
        stop.store(true, Ordering::Relaxed);
        let spun = spinner
            .join()
            .unwrap_or_else(|_| Err(Error::Measurement("the spinning thread panicked".into())));
        spun.and(r)
    })
}

/// How long the sleeper's CPU idles before each wake-up [`waker`]
/// measures, ns (the waker spins meanwhile).
pub const WAKER_IDLE_NS: u64 = 200_000;

/// A wake-up's cost to its waker on `a`, ns: the median, over `n`
/// wake-ups of a thread asleep on `b`, of the `FUTEX_WAKE` call's time.
/// With `b` another CPU, it idles meanwhile; with `b == a`, the sleeper
/// is SCHED_IDLE and the waker sleeps to let it run. At least half of
/// the wake-ups must have found the sleeper.
fn waker(a: usize, b: usize, n: usize) -> Result<u64> {
    use rustix::thread::futex;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    // 1: wake up; the sleeper puts it back to 0.
    let word = AtomicU32::new(0);
    let seen = AtomicU32::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sleeper = s.spawn(|| -> Result<()> {
            pin(b)?;
            if a == b {
                sched_idle()?;
            }
            loop {
                while word.load(Ordering::Acquire) == 0 {
                    // EAGAIN (the word changed first) or EINTR: look again.
                    let _ = futex::wait(&word, futex::Flags::PRIVATE, 0, None);
                }
                if stop.load(Ordering::Acquire) {
                    return Ok(());
                }
                word.store(0, Ordering::Release);
                seen.fetch_add(1, Ordering::Release);
            }
        });
        let measured = (|| -> Result<u64> {
            pin(a)?;
            let mut took = Vec::with_capacity(n);
            for i in 0..n as u32 {
                // The sleeper has seen the last wake-up; then its CPU
                // idles a while.
                let since = mono_ns();
                while seen.load(Ordering::Acquire) < i {
                    // (A sleeper that failed, or starved for that long.)
                    if mono_ns() - since > 10_000_000_000 {
                        return Err(Error::Measurement(format!(
                            "the thread asleep on CPU {b} did not come back"
                        )));
                    }
                    if a == b {
                        // It runs only while this thread sleeps.
                        std::thread::sleep(std::time::Duration::from_nanos(WAKER_IDLE_NS));
                    } else {
                        std::hint::spin_loop();
                    }
                }
                if a != b {
                    let idle = mono_ns() + WAKER_IDLE_NS;
                    while mono_ns() < idle {
                        std::hint::spin_loop();
                    }
                }
                let t0 = mono_ns();
                word.store(1, Ordering::Release);
                let woke = futex::wake(&word, futex::Flags::PRIVATE, 1)
                    .map_err(|e| Error::Measurement(format!("FUTEX_WAKE: {e}")))?;
                let t1 = mono_ns();
                if woke == 1 {
                    took.push(t1 - t0);
                }
            }
            if took.len() < n / 2 {
                return Err(Error::Measurement(format!(
                    "only {} of {n} wake-ups found the thread asleep on CPU {b}",
                    took.len()
                )));
            }
            Ok(median(took))
        })();
        stop.store(true, Ordering::Release);
        word.store(1, Ordering::Release);
        let _ = futex::wake(&word, futex::Flags::PRIVATE, 1);
        let slept = sleeper
            .join()
            .unwrap_or_else(|_| Err(Error::Measurement("the sleeping thread panicked".into())));
        slept.and(measured)
    })
}

/// The L2 cache of `cpu`, bytes (sysfs `cache/index2/size`, "1024K"); 1
/// MiB when not shown.
fn l2_bytes(cpu: usize) -> usize {
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/cache/index2/size");
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            let s = s.trim();
            let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
            let n: usize = num.parse().ok()?;
            Some(match unit {
                "K" => n << 10,
                "M" => n << 20,
                _ => n,
            })
        })
        .unwrap_or(1 << 20)
}

/// One pass writing every 64-byte line of `buf`, ns.
fn pass(buf: &mut [u8], round: u8) -> u64 {
    let t0 = mono_ns();
    for i in (0..buf.len()).step_by(64) {
        buf[i] = buf[i].wrapping_add(round);
    }
    std::hint::black_box(&buf);
    mono_ns() - t0
}

/// A pass right after a move from `a` to `b` (and back), and a warm
/// pass, ns (medians of `rounds`).
fn migration(a: usize, b: usize, bytes: usize, rounds: usize) -> Result<(u64, u64)> {
    let mut buf = vec![0u8; bytes];
    let (mut warm, mut moved) = (Vec::new(), Vec::new());
    let mut cpu = a;
    pin(cpu)?;
    for r in 0..rounds {
        // Warm on this CPU: two passes, the second timed.
        pass(&mut buf, r as u8);
        warm.push(pass(&mut buf, r as u8));
        cpu = if cpu == a { b } else { a };
        pin(cpu)?;
        moved.push(pass(&mut buf, r as u8));
    }
    Ok((median(warm), median(moved)))
}

/// The local timer interrupts of `cpu` so far (`LOC` in
/// `/proc/interrupts`).
fn local_timer_interrupts(cpu: usize) -> Option<u64> {
    loc_in(&std::fs::read_to_string("/proc/interrupts").ok()?, cpu)
}

/// `cpu`'s column of the `LOC:` line.
fn loc_in(text: &str, cpu: usize) -> Option<u64> {
    let line = text.lines().find(|l| l.trim_start().starts_with("LOC:"))?;
    line.split_whitespace().nth(1 + cpu)?.parse().ok()
}

/// Spins on `cpu` for `ns`: the gaps longer than 1 µs (when each began,
/// and how long it was, ns) and the ticks counted meanwhile.
fn gaps(cpu: usize, ns: u64) -> Result<(Vec<(u64, u64)>, u64)> {
    pin(cpu)?;
    let loc0 = local_timer_interrupts(cpu);
    let start = mono_ns();
    let (mut last, mut out) = (start, Vec::new());
    while last - start < ns {
        let now = mono_ns();
        if now - last > 1_000 {
            out.push((last, now - last));
        }
        last = now;
    }
    let ticks = loc0
        .zip(local_timer_interrupts(cpu))
        .map_or(0, |(a, b)| b.saturating_sub(a));
    Ok((out, ticks))
}

/// The gaps that are ticks: the tick period is the span over the ticks
/// counted, rounded to a CONFIG_HZ (100, 250, 300, 1000); ticks fall at
/// one phase of it (the same instants on every CPU, `skew_tick=0`), so
/// the gaps whose start lies within 20 µs of the most crowded phase (of
/// 20 µs bins) are the ticks'. Other gaps (other interrupts, a virtual
/// machine's host taking the vCPU) fall anywhere.
fn on_the_tick_grid(gaps: &[(u64, u64)], span: u64, ticks: u64) -> Vec<u64> {
    if ticks == 0 || gaps.is_empty() {
        return Vec::new();
    }
    let hz = ticks as f64 / (span as f64 / 1e9);
    let hz = [100.0, 250.0, 300.0, 1000.0]
        .into_iter()
        .min_by(|a: &f64, b: &f64| (a - hz).abs().total_cmp(&(b - hz).abs()))
        .unwrap_or(250.0);
    let period = (1e9 / hz) as u64;
    const BIN: u64 = 20_000;
    let bins = period.div_ceil(BIN) as usize;
    let mut count = vec![0usize; bins];
    for &(at, _) in gaps {
        count[((at % period) / BIN) as usize] += 1;
    }
    let top = (0..bins).max_by_key(|&b| count[b]).unwrap_or(0) as u64;
    let centre = top * BIN + BIN / 2;
    gaps.iter()
        .filter(|&&(at, _)| {
            let d = (at % period).abs_diff(centre);
            d.min(period - d) <= BIN
        })
        .map(|&(_, len)| len)
        .collect()
}

/// Measures on CPUs `a` and `b` (two different online CPUs); `progress`
/// hears of each step. The pinning happens on threads of its own: the
/// caller's CPUs, which the programs it starts later inherit, stay as
/// they were.
pub fn measure(a: usize, b: usize, progress: impl FnMut(&str) + Send) -> Result<Report> {
    std::thread::scope(|s| {
        s.spawn(|| measure_here(a, b, progress))
            .join()
            .unwrap_or_else(|_| Err(Error::Measurement("the measuring thread panicked".into())))
    })
}

fn measure_here(a: usize, b: usize, mut progress: impl FnMut(&str)) -> Result<Report> {
    if a == b {
        return Err(Error::Invalid(
            "corral lab costs needs two different CPUs".into(),
        ));
    }
    const N: usize = 20_000;
    progress("send and receive, one thread");
    let sr = send_receive(a, N)?;
    progress("round trips on one CPU");
    let same = round_trip(a, a, N)?;
    progress("round trips across two CPUs");
    let remote = round_trip(a, b, N / 4)?;
    const SLEEPS: usize = 200;
    progress(&format!("{SLEEPS} timed sleeps on CPU {b}"));
    let timer = timer_wakeup(b, SLEEPS)?;
    progress(&format!(
        "{SLEEPS} timed sleeps on CPU {b} busy with a SCHED_IDLE thread"
    ));
    let preempt = timer_preempt(b, SLEEPS)?;
    let bytes = l2_bytes(a);
    progress(&format!(
        "a {} KiB working set moved between CPUs {a} and {b}",
        bytes >> 10
    ));
    let (warm, moved) = migration(a, b, bytes, 41)?;
    const WAKES: usize = 1000;
    progress(&format!(
        "{WAKES} wake-ups from CPU {a} of a thread asleep on CPU {b}"
    ));
    let waker_remote = waker(a, b, WAKES)?;
    progress(&format!(
        "{} wake-ups from CPU {a} of a SCHED_IDLE thread asleep on it",
        WAKES / 2
    ));
    let waker_local = waker(a, a, WAKES / 2)?;
    progress(&format!("spinning on CPU {a} for 2 s"));
    let (g, ticks) = gaps(a, 2_000_000_000)?;
    let tick_gaps = on_the_tick_grid(&g, 2_000_000_000, ticks);
    let (n, on_grid) = (g.len(), tick_gaps.len());
    let costs = Costs {
        context_switch_ns: same.saturating_sub(2 * sr) / 2,
        wakeup_ns: remote.saturating_sub(2 * sr) / 2,
        timer_wakeup_ns: timer,
        timer_preempt_ns: preempt,
        migration_ns: moved.saturating_sub(warm),
        tick_ns: median(tick_gaps),
        waker_ns: waker_remote,
        waker_local_ns: waker_local,
    };
    Ok(Report {
        costs,
        cpus: (a, b),
        send_receive_ns: sr,
        round_trip_same_ns: same,
        round_trip_remote_ns: remote,
        timer_sleeps: SLEEPS,
        timer_sleep_ns: SLEEP_NS,
        working_set_bytes: bytes,
        pass_warm_ns: warm,
        pass_moved_ns: moved,
        gaps: n,
        tick_gaps: on_grid,
        ticks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_read_back_from_their_platform_section() {
        let c = Costs {
            context_switch_ns: 2_140,
            wakeup_ns: 31_000,
            timer_wakeup_ns: 98_000,
            timer_preempt_ns: 21_000,
            migration_ns: 45_500,
            tick_ns: 3_010,
            waker_ns: 9_870,
            waker_local_ns: 1_230,
        };
        let spec =
            corral_sim::input::platform::parse(&format!("cpus = 2\n{}", c.toml()), "t").unwrap();
        let got = spec.platform.costs;
        assert_eq!(
            (
                got.context_switch,
                got.wakeup,
                got.timer_wakeup,
                got.timer_preempt,
                got.migration,
                got.tick,
                got.waker,
                got.waker_local
            ),
            (2_140, 31_000, 98_000, 21_000, 45_500, 3_010, 9_870, 1_230)
        );
    }

    #[test]
    fn ticks_are_the_gaps_on_one_phase_of_the_tick_period() {
        // 500 ticks of 3 µs at 1.234 ms into each 4 ms, and 2000 other
        // gaps of 10 µs spread over the period.
        let mut g: Vec<(u64, u64)> = (0..500u64)
            .map(|k| (k * 4_000_000 + 1_234_000, 3_000))
            .collect();
        g.extend((0..2000u64).map(|k| (k * 999_983 + 17, 10_000)));
        let t = on_the_tick_grid(&g, 2_000_000_000, 500);
        assert!(t.len() >= 500 && t.len() < 540, "{}", t.len());
        assert_eq!(median(t), 3_000);
    }

    /// The measurement pins threads of its own: the caller's CPU set
    /// (which `lab validate` hands on to rt-app) is left alone,
    /// and the caller's timer slack, and every cost comes out above nil.
    #[test]
    fn measuring_leaves_the_callers_cpus_alone() {
        let before = rustix::thread::sched_getaffinity(None).unwrap();
        let slack = rustix::thread::current_timer_slack().unwrap();
        let cpus: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| before.is_set(c))
            .collect();
        let [.., a, b] = cpus[..] else {
            eprintln!("SKIP measuring_leaves_the_callers_cpus_alone: needs two CPUs");
            return;
        };
        let r = measure(a, b, |_| {}).unwrap();
        assert_eq!(rustix::thread::sched_getaffinity(None).unwrap(), before);
        assert_eq!(rustix::thread::current_timer_slack().unwrap(), slack);
        let c = r.costs;
        assert!(
            c.context_switch_ns > 0
                && c.wakeup_ns > 0
                && c.timer_wakeup_ns > 0
                && c.timer_preempt_ns > 0
                && c.waker_ns > 0
                && c.waker_local_ns > 0
                && r.tick_gaps > 0,
            "{r:?}"
        );
    }

    #[test]
    fn a_median_is_the_middle_value() {
        assert_eq!(median(vec![5, 1, 9]), 5);
        assert_eq!(median(vec![]), 0);
    }

    #[test]
    fn local_timer_interrupts_are_read_per_cpu() {
        let text = "           CPU0       CPU1\n  0:         36          0   IO-APIC   2-edge      timer\nLOC:    3087212    2911423   Local timer interrupts\n";
        assert_eq!(loc_in(text, 0), Some(3087212));
        assert_eq!(loc_in(text, 1), Some(2911423));
        assert_eq!(loc_in(text, 2), None);
    }
}
