//! `corral lab placement`: where this kernel puts a thread woken by a
//! busy CPU while its previous CPU idles.
//!
//! Upstream, the fair class places a woken thread with
//! `select_task_rq_fair`: `wake_affine` between the waker's CPU and the
//! thread's previous one, then `select_idle_sibling` around the choice.
//! With the previous CPU idle both return it (`wake_affine_idle`: an
//! idle prev; `select_idle_sibling`: "if the previous CPU is cache
//! affine and idle, don't be stupid"), where idle is
//!
//! ```text
//! available_idle_cpu(cpu) = idle_cpu(cpu) ∧ ¬vcpu_is_preempted(cpu)
//! ```
//!
//! A guest kernel may differ: this machine's (a vendor build with
//! `sched_vcpu_pack=` on its command line and `vcpu_pack_room` among its
//! symbols, no source at hand) keeps such a thread beside its waker
//! while the waker's CPU has room, and the idle vCPU stays halted. The
//! simulator models that when a platform file gives `vcpu_pack_util`
//! (`Fair::packs` in `corral-sim`); this measures it, and `corral lab
//! validate` gives the simulated machine what it finds (unless
//! `--no-pack`).
//!
//! The probe: a thread that last ran on CPU `b` sleeps; both CPUs idle
//! 2 ms; a thread on CPU `a` spins for a while, reads its own `util_avg`
//! and `util_est` (`/proc/thread-self/sched`), wakes the sleeper (a futex
//! wake, not WF_SYNC) and spins 300 µs more. The sleeper, which read its
//! own before it slept, reads the CPU it runs on first (`sched_getcpu`).
//! The waker's spin grows level by level, its duty from about 20 % to
//! 80 %, so the two utilizations' sum crosses any threshold between: 40
//! wake-ups a level, the first 15 left out while PELT settles, 250
//! kept (a [`Plan`]: a round left out — with a companion, one it ran
//! first in; for timers, one whose sleeper slept off `b` or whose spin
//! began late — is drawn again, up to 100 a level). A thread of another
//! program on these CPUs still disturbs rounds kept: run it on a quiet
//! machine. Upstream every wake-up lands on `b`. (Idle
//! balancing could move a sleeper placed on `a` before it first runs,
//! which would count it on `b`: the figure on `a` is a floor.)
//!
//! With a companion ([`measure`]'s `companion`), a third thread pinned
//! to `a` at nice 19 is woken just before the sleeper and waits queued
//! behind the waker through its wake-up: whether a CPU that has room
//! but runs more than one task packs too (here it does not).
//!
//! [`pulls`] then asks the balancing side: with both threads' utilization
//! low (100 ms idle between rounds) the wake-up packs, and both spin
//! 10 ms on `a` while `b` idles; the woken thread watches whether it is
//! moved to `b`. Upstream the busy CPU's next tick kicks the idle one's
//! balancing (`nohz_balancer_kick`: two tasks queued), which pulls it.
//!
//! [`timers`] asks the same of a timer's wake-up: a thread whose timer
//! fires on its previous CPU, busy, while the other idles. Upstream
//! takes the idle CPU; this machine's kernel keeps it on the busy one
//! under the same threshold.

use crate::error::{Error, Result};
use crate::work::mono_ns;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One wake-up of the probe.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Sample {
    /// The waker's `util_avg` and `util_est` just before it woke the
    /// sleeper (`/proc/thread-self/sched`).
    pub util_avg: u64,
    pub util_est: u64,
    /// The sleeper's own, read just before it slept.
    pub wakee_util_avg: u64,
    pub wakee_util_est: u64,
    /// Whether the sleeper ran first on the waker's busy CPU (else on its
    /// previous, idle one; [`timers`]: on its previous CPU, busy, where
    /// its timer fired, else on the idle one).
    pub on_waker_cpu: bool,
}

impl Sample {
    /// A wake-up kept: the waker's `(util_avg, util_est)` read just before
    /// it, the sleeper's as it last stored them.
    fn seen(waker: (u64, u64), wakee: &std::sync::Mutex<(u64, u64)>, on_waker_cpu: bool) -> Sample {
        let (wakee_util_avg, wakee_util_est) = *wakee.lock().unwrap_or_else(|e| e.into_inner());
        Sample {
            util_avg: waker.0,
            util_est: waker.1,
            wakee_util_avg,
            wakee_util_est,
            on_waker_cpu,
        }
    }
}

/// Where the probe's wake-ups landed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Placement {
    /// The waker's CPU and the sleeper's previous, idle one ([`timers`]:
    /// the busy CPU its timer fires on, and the idle one).
    pub cpus: (usize, usize),
    /// Each wake-up, the waker's duty rising from one level to the next.
    pub samples: Vec<Sample>,
    /// Timer wake-ups ([`timers`]): the room is judged on the sleeper's
    /// `util_avg` alone ([`Placement::util`]).
    pub timer: bool,
    /// [`measure`] or [`timers`] with a companion: a second thread of the
    /// busy CPU was queued there, waiting, at each wake-up kept.
    pub companion: bool,
    /// Rounds past the settling ones left out (see [`measure`] and
    /// [`timers`] for why), each drawn again while its level had fewer
    /// than 100 rounds.
    pub left_out: usize,
}

impl Placement {
    /// What the room is judged on: the busy CPU's utilization without the
    /// sleeper (its only other task, the waker or spinner), `max(util_avg,
    /// util_est)` as `cpu_util` takes it, and the sleeper's: for a task's
    /// wake-up also
    /// `max(util_avg, util_est)` (`task_util_est`); for a timer's its
    /// `util_avg` alone. Timer wake-ups stayed where the sleeper's
    /// `util_est` — stale, not updated while it waited beside the
    /// spinner (`util_est_update` skips a task whose runnable exceeds its
    /// util) — put the sum far over the threshold (120 of 125 at sums of
    /// 619-1010 in one run), and split by `util_avg` at the same
    /// threshold as a task's wake-ups.
    pub fn util(&self, s: &Sample) -> u64 {
        let wakee = if self.timer {
            s.wakee_util_avg
        } else {
            s.wakee_util_avg.max(s.wakee_util_est)
        };
        s.util_avg.max(s.util_est) + wakee
    }
}

impl Placement {
    /// Wake-ups made, and those that stayed on the waker's busy CPU.
    pub fn counts(&self) -> (usize, usize) {
        let on = self.samples.iter().filter(|s| s.on_waker_cpu).count();
        (self.samples.len(), on)
    }

    /// The utilization, waker's and wakee's together, from which
    /// wake-ups go to the idle CPU: the `t` that best splits the samples
    /// into "stayed, util < t" and "went to the idle CPU, util ≥ t" (most
    /// samples on the right side; the lowest such `t`), at most 1024.
    /// `None` when the samples cannot say: no utilization was read (a
    /// kernel without `se.avg.util_avg` in `/proc/PID/sched`), wake-ups
    /// at the lowest quarter of utilizations did not mostly stay (this
    /// kernel places them on the idle CPU, as upstream Linux does), or
    /// those at the highest quarter did not mostly go (the threshold lies
    /// above what the probe reaches).
    pub fn pack_util(&self) -> Option<u64> {
        let mut sorted: Vec<&Sample> = self.samples.iter().collect();
        sorted.sort_by_key(|s| self.util(s));
        let quarter = sorted.len() / 4;
        let (low, high) = (&sorted[..quarter], &sorted[sorted.len() - quarter..]);
        let stayed = |q: &[&Sample]| q.iter().filter(|s| s.on_waker_cpu).count();
        if quarter == 0
            || self.samples.iter().all(|s| s.util_avg == 0)
            || 2 * stayed(low) <= low.len()
            || 2 * stayed(high) >= high.len()
        {
            return None;
        }
        let util = |s: &Sample| self.util(s);
        let right = |t: u64| {
            self.samples
                .iter()
                .filter(|s| s.on_waker_cpu == (util(s) < t))
                .count()
        };
        let mut cuts: Vec<u64> = self.samples.iter().map(|s| util(s) + 1).collect();
        cuts.push(0);
        cuts.sort_unstable();
        cuts.dedup();
        let best = cuts.iter().map(|&t| right(t)).max()?;
        cuts.into_iter()
            .find(|&t| right(t) == best)
            .map(|t| t.min(1024))
    }

    /// Per band of the utilization, waker's and wakee's (`width` wide, from 0): the
    /// band's low end, its wake-ups, and those that stayed on the waker's
    /// CPU.
    pub fn bands(&self, width: u64) -> Vec<(u64, usize, usize)> {
        let mut out: Vec<(u64, usize, usize)> = Vec::new();
        for s in &self.samples {
            let low = self.util(s) / width * width;
            match out.iter_mut().find(|b| b.0 == low) {
                Some(b) => {
                    b.1 += 1;
                    b.2 += s.on_waker_cpu as usize;
                }
                None => out.push((low, 1, s.on_waker_cpu as usize)),
            }
        }
        out.sort_unstable();
        out
    }
}

fn affinity(cpus: &[usize]) -> Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    rustix::thread::sched_setaffinity(None, &set)
        .map_err(|e| Error::Environment(format!("cannot set a thread's CPUs to {cpus:?}: {e}")))
}

fn spin(ns: u64) {
    let end = mono_ns() + ns;
    while mono_ns() < end {
        std::hint::spin_loop();
    }
}

/// The calling thread's `util_avg` and `util_est` (0 where the kernel
/// does not show them).
fn own_util() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/thread-self/sched").unwrap_or_default();
    let field = |name: &str| {
        crate::pelt::sched_field(&text, name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("se.avg.util_avg"), field("se.avg.util_est"))
}

/// How long both CPUs idle before each wake-up, and the waker spins
/// after it, ns.
const IDLE_NS: u64 = 2_000_000;
const SPIN_AFTER_NS: u64 = 300_000;
/// [`timers`]: the least time the spinner spins before the sleeper's
/// timer fires (its own wake-up from the idle spell may come late).
const SPIN_LEAD_NS: u64 = 500_000;
/// The waker's spins before each wake-up, ms: its duty from about 20 %
/// to 80 %, so its `util_avg` crosses any threshold in between.
pub const SPIN_LEVELS_MS: &[f64] = &[0.2, 1.0, 2.0, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 8.0];
/// [`measure`] with a companion: the lowest levels, where a waker alone
/// on its CPU has room for the wakee.
pub const COMPANION_LEVELS_MS: &[f64] = &[0.2, 1.0, 2.0];
/// Wake-ups at each level, and of them the first left out while the
/// waker's `util_avg` settles (PELT's half-life is 32 ms).
const ROUNDS: usize = 40;
const SETTLE: usize = 15;
/// The most rounds drawn at one level: a round another thread disturbs
/// is left out and drawn again, up to this many.
const MAX_ROUNDS: usize = 100;

/// A probe's rounds, level by level: at each, [`SETTLE`] left out while
/// PELT settles, then rounds until `ROUNDS - SETTLE` are kept or
/// [`MAX_ROUNDS`] drawn. On a quiet machine that is [`ROUNDS`] a level;
/// on a busy one (another thread on the probe's CPUs lets its companion
/// run first) more, so the figures still rest on as many wake-ups.
struct Plan<'a> {
    levels: &'a [f64],
    level: usize,
    drawn: usize,
    kept: usize,
    /// Rounds past the settling ones that were not kept, over all levels.
    left_out: usize,
}

impl<'a> Plan<'a> {
    fn new(levels: &'a [f64]) -> Self {
        Plan {
            levels,
            level: 0,
            drawn: 0,
            kept: 0,
            left_out: 0,
        }
    }

    /// The next round: its spin (ns) and whether it may be kept (past
    /// the settling rounds); `None` when every level is done.
    fn next(&mut self) -> Option<(u64, bool)> {
        if self.kept == ROUNDS - SETTLE || self.drawn == MAX_ROUNDS {
            self.level += 1;
            self.drawn = 0;
            self.kept = 0;
        }
        let ms = *self.levels.get(self.level)?;
        self.drawn += 1;
        Some(((ms * 1e6) as u64, self.drawn > SETTLE))
    }

    /// The round just drawn: whether it was kept (only one that may be).
    fn done(&mut self, kept: bool, may_keep: bool) {
        if kept {
            self.kept += 1;
        } else if may_keep {
            self.left_out += 1;
        }
    }
}

/// The two threads of a probe and their handshake. The sleeper runs on
/// CPU `b`, is allowed both, and sleeps ([`Pair::sleep`]); the waker, on
/// CPU `a`, waits for that ([`Pair::await_sleeper`]) and wakes it with a
/// futex wake (`unpark`, not WF_SYNC). Once the waker ends, for good or
/// with an error, a sleeper still parked is told to stop.
struct Pair {
    a: usize,
    b: usize,
    go: AtomicBool,
    asleep: AtomicBool,
    stop: AtomicBool,
}

impl Pair {
    /// Runs `sleeper` and `waker` (given the sleeper's thread) on threads
    /// of their own; the caller's CPUs stay as they were. The sleeper's
    /// error comes first: the waker's ("did not come back") follows
    /// from it.
    fn run<T: Send, U: Send>(
        a: usize,
        b: usize,
        sleeper: impl FnOnce(&Pair) -> Result<T> + Send,
        waker: impl FnOnce(&Pair, &std::thread::Thread) -> Result<U> + Send,
    ) -> Result<(T, U)> {
        if a == b {
            return Err(Error::Invalid(
                "the placement probe needs two different CPUs".into(),
            ));
        }
        let pair = Pair {
            a,
            b,
            go: AtomicBool::new(false),
            asleep: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        };
        let pair = &pair;
        std::thread::scope(|s| {
            let sleeper = s.spawn(move || sleeper(pair));
            let handle = sleeper.thread().clone();
            let w = s
                .spawn(move || {
                    affinity(&[pair.a])?;
                    waker(pair, &handle)
                })
                .join()
                .map_err(|_| Error::Measurement("the placement probe's waker panicked".into()));
            pair.stop.store(true, Ordering::Release);
            sleeper.thread().unpark();
            let t = sleeper.join().map_err(|_| {
                Error::Measurement("the placement probe's sleeper panicked".into())
            })??;
            Ok((t, w??))
        })
    }

    /// The sleeper: runs on `b`, then allows both CPUs (`b` is its
    /// previous CPU).
    fn settle(&self) -> Result<()> {
        affinity(&[self.b])?;
        affinity(&[self.a, self.b])
    }

    /// The sleeper: tells the waker and sleeps until woken; false when
    /// told to stop instead.
    fn sleep(&self) -> bool {
        self.asleep.store(true, Ordering::Release);
        while !self.go.swap(false, Ordering::AcqRel) {
            if self.stop.load(Ordering::Acquire) {
                return false;
            }
            std::thread::park();
        }
        true
    }

    /// The waker: waits (10 s at most) until the sleeper sleeps. (1 s
    /// was not always enough beside the other tests on a 2-CPU runner:
    /// the sleeper must get onto CPU `b` first.)
    fn await_sleeper(&self) -> Result<()> {
        let t0 = mono_ns();
        while !self.asleep.swap(false, Ordering::AcqRel) {
            if mono_ns() - t0 > 10_000_000_000 {
                return Err(Error::Measurement(
                    "the placement probe's sleeper did not come back".into(),
                ));
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        Ok(())
    }

    /// The waker: wakes the sleeper.
    fn wake(&self, sleeper: &std::thread::Thread) {
        self.go.store(true, Ordering::Release);
        sleeper.unpark();
    }
}

/// Wakes, from CPU `a`, a thread that last ran on idle CPU `b` (two
/// different online CPUs), at each of `levels` (ms the waker spins
/// before each wake-up) [`ROUNDS`] times or, rounds left out, more (a
/// [`Plan`]). With `companion`, the waker first
/// wakes a third thread, pinned to `a` at nice 19, which waits queued
/// behind it through the wake-up (its deadline far off, it does not
/// preempt the waker: `cpu_rq(a)->nr_running` is 2) and then runs
/// [`COMPANION_NS`]: the sleeper is woken from a CPU that has room but
/// where it would wait. A round where the companion ran before the
/// waker began to wake the sleeper is left out (another thread on `a`
/// had preempted the waker and the companion was picked after it). The
/// pinning happens on threads of its own; the caller's CPUs stay as
/// they were.
pub fn measure(a: usize, b: usize, levels: &[f64], companion: bool) -> Result<Placement> {
    let landed = AtomicUsize::new(usize::MAX);
    let wakee_util = std::sync::Mutex::new((0u64, 0u64));
    let (landed, wakee_util) = (&landed, &wakee_util);
    let ((), p) = Pair::run(
        a,
        b,
        |pair| {
            loop {
                pair.settle()?;
                *wakee_util.lock().unwrap_or_else(|e| e.into_inner()) = own_util();
                if !pair.sleep() {
                    break;
                }
                landed.store(rustix::thread::sched_getcpu(), Ordering::Release);
            }
            Ok(())
        },
        |pair, sleeper| {
            with_mate(a, companion, |mate| {
                let mut p = Placement {
                    cpus: (a, b),
                    samples: Vec::new(),
                    timer: false,
                    companion,
                    left_out: 0,
                };
                let mut plan = Plan::new(levels);
                while let Some((spin_ns, may_keep)) = plan.next() {
                    pair.await_sleeper()?;
                    if let Some(c) = &mate {
                        c.await_parked()?;
                    }
                    landed.store(usize::MAX, Ordering::Release);
                    // b idles (the sleeper parked), a sleeps too, then is busy.
                    std::thread::sleep(std::time::Duration::from_nanos(IDLE_NS));
                    spin(spin_ns);
                    let (util_avg, util_est) = own_util();
                    if let Some(c) = &mate {
                        c.wake();
                    }
                    let placing = mono_ns();
                    pair.wake(sleeper);
                    spin(SPIN_AFTER_NS);
                    let t1 = mono_ns();
                    let cpu = loop {
                        let c = landed.load(Ordering::Acquire);
                        if c != usize::MAX {
                            break c;
                        }
                        if mono_ns() - t1 > 10_000_000_000 {
                            return Err(Error::Measurement(
                                "the placement probe's sleeper did not run".into(),
                            ));
                        }
                        std::thread::sleep(std::time::Duration::from_micros(50));
                    };
                    let queued = mate.is_none_or(|c| c.queued_at(placing));
                    let kept = may_keep && (cpu == a || cpu == b) && queued;
                    if kept {
                        p.samples
                            .push(Sample::seen((util_avg, util_est), wakee_util, cpu == a));
                    }
                    plan.done(kept, may_keep);
                }
                p.left_out = plan.left_out;
                Ok(p)
            })
        },
    )?;
    Ok(p)
}

/// How long [`measure`]'s companion runs once woken, ns: its utilization
/// stays a few units.
const COMPANION_NS: u64 = 20_000;

/// [`measure`]'s companion thread: its handshake with the waker.
struct Mate {
    parked: AtomicBool,
    go: AtomicBool,
    stop: AtomicBool,
    failed: AtomicBool,
    /// When it last began to run after a wake, CLOCK_MONOTONIC ns (MAX:
    /// not since the last wake): a round where it ran before the waker
    /// began to wake the sleeper is left out.
    ran_at: std::sync::atomic::AtomicU64,
}

/// The waker's handle on its companion.
struct MateHandle<'a> {
    mate: &'a Mate,
    thread: std::thread::Thread,
}

impl MateHandle<'_> {
    /// Waits (10 s at most) until the companion is back in its wait loop.
    fn await_parked(&self) -> Result<()> {
        let t0 = mono_ns();
        while !self.mate.parked.swap(false, Ordering::AcqRel) {
            if self.mate.failed.load(Ordering::Acquire) || mono_ns() - t0 > 10_000_000_000 {
                return Err(Error::Measurement(
                    "the placement probe's companion did not come back".into(),
                ));
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        Ok(())
    }

    /// Wakes the companion: it is queued on its CPU, behind the waker.
    fn wake(&self) {
        self.mate.ran_at.store(u64::MAX, Ordering::Release);
        self.mate.go.store(true, Ordering::Release);
        self.thread.unpark();
    }

    /// Whether the companion, woken last, has not run by `t` (mono ns):
    /// it was still queued then.
    fn queued_at(&self, t: u64) -> bool {
        self.mate.ran_at.load(Ordering::Acquire) > t
    }
}

/// Ends the companion when its user is done, returning or unwinding.
struct MateStop<'a>(&'a Mate, std::thread::Thread);

impl Drop for MateStop<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Release);
        self.1.unpark();
    }
}

/// Runs `f` with a companion pinned to `cpu` at nice 19 when `on` (see
/// [`measure`]), else with none; the companion ends with `f`.
fn with_mate<T>(
    cpu: usize,
    on: bool,
    f: impl FnOnce(Option<&MateHandle>) -> Result<T>,
) -> Result<T> {
    if !on {
        return f(None);
    }
    let mate = Mate {
        parked: AtomicBool::new(false),
        go: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        failed: AtomicBool::new(false),
        ran_at: std::sync::atomic::AtomicU64::new(u64::MAX),
    };
    let mate = &mate;
    std::thread::scope(|s| {
        let h = s.spawn(move || -> Result<()> {
            let setup = || -> Result<()> {
                affinity(&[cpu])?;
                let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
                corral_linux::sched::set_fair_attr(tid, 19, 0)
                    .map(|_| ())
                    .map_err(|e| Error::Measurement(format!("nice 19: {e}")))
            };
            setup().inspect_err(|_| mate.failed.store(true, Ordering::Release))?;
            loop {
                mate.parked.store(true, Ordering::Release);
                while !mate.go.swap(false, Ordering::AcqRel) {
                    if mate.stop.load(Ordering::Acquire) {
                        return Ok(());
                    }
                    std::thread::park();
                }
                mate.ran_at.store(mono_ns(), Ordering::Release);
                spin(COMPANION_NS);
            }
        });
        let handle = MateHandle {
            mate,
            thread: h.thread().clone(),
        };
        let r = {
            let _stop = MateStop(mate, h.thread().clone());
            f(Some(&handle))
        };
        let j = h
            .join()
            .map_err(|_| Error::Measurement("the placement probe's companion panicked".into()))?;
        // The companion's own error first: the waker's follows from it.
        j?;
        r
    })
}

/// Where timer wake-ups land: a thread that last ran on CPU `b` sleeps
/// (`nanosleep`, so its timer fires on `b`, where it was armed); both
/// CPUs idle [`IDLE_NS`], then a thread pinned to `b` spins `levels[i]`
/// ms, through the expiry (100 µs before the spin's end, at least
/// [`SPIN_LEAD_NS`] after its start), and [`SPIN_AFTER_NS`] more, while
/// `a` idles; the sleeper reads the CPU it runs on first, `levels[i]`
/// as [`measure`]'s (a [`Plan`]). With `companion`, the spinner wakes a
/// third thread pinned to `b` (as [`measure`]'s) just before the
/// expiry; a round where it ran before the expiry, or was woken after
/// it, is left out. Each [`Sample`]'s waker is the spinning thread (its
/// utilization read 50 µs before the expiry) and `on_waker_cpu` means it
/// stayed on busy `b`; `Placement::cpus` is `(b, a)`. A round whose
/// sleeper was not on `b` when it slept, or whose spin began late (`b`
/// may have idled at the expiry), is left out. Upstream the wake-up is
/// placed from `b`'s timer interrupt: `b` is busy and `a` idles, so
/// `select_idle_sibling` takes `a` every time. The pinning happens on
/// threads of its own; the caller's CPUs stay as they were.
pub fn timers(a: usize, b: usize, levels: &[f64], companion: bool) -> Result<Placement> {
    use std::sync::atomic::AtomicU64;
    if a == b {
        return Err(Error::Invalid(
            "the placement probe needs two different CPUs".into(),
        ));
    }
    let mut plan = Plan::new(levels);
    let Some(first) = plan.next() else {
        return Ok(Placement {
            cpus: (b, a),
            samples: Vec::new(),
            timer: true,
            companion,
            left_out: 0,
        });
    };
    // The round's spin (ns, set by the spinner before it lets the sleeper
    // go), when the sleeper went to sleep this round (0: not yet) and
    // whether it did so on `b`, where it then ran first (MAX: not yet),
    // whether the spinner is done with the round, and whether either ended.
    let round_spin = AtomicU64::new(first.0);
    let asleep_at = AtomicU64::new(0);
    let armed_on_b = AtomicBool::new(false);
    let landed = AtomicUsize::new(usize::MAX);
    let done = AtomicBool::new(true);
    let stop = AtomicBool::new(false);
    let sleeper_failed = AtomicBool::new(false);
    let wakee_util = std::sync::Mutex::new((0u64, 0u64));
    // The sleep: the spin starts IDLE_NS after it began, the timer fires
    // 100 µs before the spin's planned end, or SPIN_LEAD_NS into a short
    // one (which then goes on past it).
    let sleep_ns = |spin_ns: u64| IDLE_NS + spin_ns.saturating_sub(100_000).max(SPIN_LEAD_NS);
    let wait = |flag: &dyn Fn() -> bool, what: &str| -> Result<()> {
        let t0 = mono_ns();
        while !flag() {
            if sleeper_failed.load(Ordering::Acquire) {
                return Err(Error::Measurement(
                    "the timer placement probe's sleeper failed".into(),
                ));
            }
            if mono_ns() - t0 > 10_000_000_000 {
                return Err(Error::Measurement(format!(
                    "the timer placement probe's {what} did not come"
                )));
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        Ok(())
    };
    std::thread::scope(|s| {
        let sleeper = s.spawn(|| -> Result<()> {
            let rounds = || -> Result<()> {
                loop {
                    wait(
                        &|| done.load(Ordering::Acquire) || stop.load(Ordering::Acquire),
                        "spinner",
                    )?;
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    done.store(false, Ordering::Release);
                    let spin_ns = round_spin.load(Ordering::Acquire);
                    affinity(&[b])?;
                    affinity(&[a, b])?;
                    *wakee_util.lock().unwrap_or_else(|e| e.into_inner()) = own_util();
                    armed_on_b.store(rustix::thread::sched_getcpu() == b, Ordering::Release);
                    asleep_at.store(mono_ns(), Ordering::Release);
                    std::thread::sleep(std::time::Duration::from_nanos(sleep_ns(spin_ns)));
                    landed.store(rustix::thread::sched_getcpu(), Ordering::Release);
                }
                Ok(())
            };
            rounds().inspect_err(|_| sleeper_failed.store(true, Ordering::Release))
        });
        let spinner = s
            .spawn(|| -> Result<Placement> {
                affinity(&[b])?;
                with_mate(b, companion, |mate| {
                    let mut p = Placement {
                        cpus: (b, a),
                        samples: Vec::new(),
                        timer: true,
                        companion,
                        left_out: 0,
                    };
                    let (mut spin_ns, mut may_keep) = first;
                    loop {
                        if let Some(c) = &mate {
                            c.await_parked()?;
                        }
                        wait(&|| asleep_at.load(Ordering::Acquire) != 0, "sleeper")?;
                        let t0 = asleep_at.swap(0, Ordering::AcqRel);
                        let expiry = t0 + sleep_ns(spin_ns);
                        let now = mono_ns();
                        if t0 + IDLE_NS > now {
                            std::thread::sleep(std::time::Duration::from_nanos(t0 + IDLE_NS - now));
                        }
                        let began = mono_ns();
                        spin(expiry.saturating_sub(50_000).saturating_sub(mono_ns()));
                        let woke_mate = mono_ns();
                        if let Some(c) = &mate {
                            c.wake();
                        }
                        let (util_avg, util_est) = own_util();
                        let end = (t0 + IDLE_NS + spin_ns).max(expiry) + SPIN_AFTER_NS;
                        spin(end.saturating_sub(mono_ns()));
                        wait(
                            &|| landed.load(Ordering::Acquire) != usize::MAX,
                            "sleeper's wake-up",
                        )?;
                        let cpu = landed.swap(usize::MAX, Ordering::AcqRel);
                        // With a companion: woken before the expiry and not yet
                        // run at it (else the spinner was alone there).
                        let queued = mate.is_none_or(|c| woke_mate < expiry && c.queued_at(expiry));
                        let kept = may_keep
                            && (cpu == a || cpu == b)
                            && armed_on_b.load(Ordering::Acquire)
                            && began + 50_000 < expiry
                            && queued;
                        if kept {
                            p.samples.push(Sample::seen(
                                (util_avg, util_est),
                                &wakee_util,
                                cpu == b,
                            ));
                        }
                        plan.done(kept, may_keep);
                        // The next round's spin goes before the sleeper is let go;
                        // with none left, the sleeper is told to stop first.
                        match plan.next() {
                            Some(next) => {
                                (spin_ns, may_keep) = next;
                                round_spin.store(spin_ns, Ordering::Release);
                            }
                            None => stop.store(true, Ordering::Release),
                        }
                        done.store(true, Ordering::Release);
                        if stop.load(Ordering::Acquire) {
                            break;
                        }
                    }
                    p.left_out = plan.left_out;
                    Ok(p)
                })
            })
            .join()
            .map_err(|_| Error::Measurement("the timer placement probe's spinner panicked".into()));
        stop.store(true, Ordering::Release);
        sleeper.join().map_err(|_| {
            Error::Measurement("the timer placement probe's sleeper panicked".into())
        })??;
        spinner?
    })
}

/// Packed pairs left sharing a CPU: how many the idle CPU pulled.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Pulls {
    /// Rounds in which the woken thread first ran beside its waker.
    pub packed: usize,
    /// Of them, those in which it moved to the idle CPU while both spun.
    pub pulled: usize,
    /// How long both spun, ns.
    pub shared_ns: u64,
}

/// How long both CPUs idle before each round of [`pulls`] (long, so the
/// threads' utilizations stay low and the wake-up packs), and how long
/// the two threads then spin together, ns.
const PULL_IDLE_NS: u64 = 100_000_000;
const PULL_SHARED_NS: u64 = 10_000_000;

/// Wakes, from CPU `a`, a thread that last ran on idle CPU `b`, `n` times
/// (after 5 left out for the utilizations to settle); each time both
/// spin [`PULL_SHARED_NS`] and the woken one watches its CPU. Upstream,
/// a thread queued beside a running one while a CPU idles is pulled at
/// the busy CPU's next tick (the nohz balancer kick); a packing guest
/// leaves them. About (`n` + 5) × 0.11 s.
pub fn pulls(a: usize, b: usize, n: usize) -> Result<Pulls> {
    const SETTLE_ROUNDS: usize = 5;
    let rounds = n + SETTLE_ROUNDS;
    let (out, ()) = Pair::run(
        a,
        b,
        |pair| {
            let mut out = Vec::new();
            for _ in 0..rounds {
                pair.settle()?;
                if !pair.sleep() {
                    break;
                }
                let t0 = mono_ns();
                let first = rustix::thread::sched_getcpu();
                let mut moved = false;
                while mono_ns() - t0 < PULL_SHARED_NS {
                    moved |= rustix::thread::sched_getcpu() != first;
                }
                out.push((first, moved));
            }
            Ok(out)
        },
        |pair, sleeper| {
            for _ in 0..rounds {
                pair.await_sleeper()?;
                std::thread::sleep(std::time::Duration::from_nanos(PULL_IDLE_NS));
                spin(SPIN_AFTER_NS);
                pair.wake(sleeper);
                spin(PULL_SHARED_NS);
            }
            Ok(())
        },
    )?;
    let kept = &out[SETTLE_ROUNDS.min(out.len())..];
    let packed: Vec<_> = kept.iter().filter(|(first, _)| *first == a).collect();
    Ok(Pulls {
        packed: packed.len(),
        pulled: packed.iter().filter(|(_, moved)| *moved).count(),
        shared_ns: PULL_SHARED_NS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(util_avg: u64, on_waker_cpu: bool) -> Sample {
        Sample {
            util_avg,
            util_est: 0,
            wakee_util_avg: 0,
            wakee_util_est: 0,
            on_waker_cpu,
        }
    }

    #[test]
    fn the_threshold_splits_stayed_from_moved() {
        let mut samples: Vec<Sample> = (0..40).map(|k| sample(100 + 15 * k, k < 25)).collect();
        // Noise: one low wake-up that moved, one high that stayed.
        samples.push(sample(150, false));
        samples.push(sample(900, true));
        let p = Placement {
            cpus: (0, 1),
            samples,
            timer: false,
            companion: false,
            left_out: 0,
        };
        assert_eq!(p.pack_util(), Some(100 + 15 * 24 + 1));
        let bands = p.bands(200);
        // 100..199: seven that stayed and the low one that moved.
        assert_eq!(bands[0], (0, 8, 7));
        assert_eq!(bands.iter().map(|b| b.1).sum::<usize>(), 42);
    }

    #[test]
    fn samples_that_cannot_say_give_no_threshold() {
        // No utilization read at all.
        let p = Placement {
            cpus: (0, 1),
            samples: (0..40).map(|k| sample(0, k < 25)).collect(),
            timer: false,
            companion: false,
            left_out: 0,
        };
        assert_eq!(p.pack_util(), None);
        // Every wake-up stayed: the threshold is above what was reached.
        let p = Placement {
            cpus: (0, 1),
            samples: (0..40).map(|k| sample(100 + 15 * k, true)).collect(),
            timer: false,
            companion: false,
            left_out: 0,
        };
        assert_eq!(p.pack_util(), None);
        // The wakee's utilization counts: the same split, 100 higher.
        let samples = (0..40)
            .map(|k| Sample {
                wakee_util_est: 100,
                ..sample(100 + 15 * k, k < 25)
            })
            .collect();
        let p = Placement {
            cpus: (0, 1),
            samples,
            timer: false,
            companion: false,
            left_out: 0,
        };
        assert_eq!(p.pack_util(), Some(200 + 15 * 24 + 1));
        // A timer's sleeper: its util_avg counts, not its util_est.
        let p = Placement { timer: true, ..p };
        assert_eq!(p.pack_util(), Some(100 + 15 * 24 + 1));
    }

    #[test]
    fn a_machine_that_spreads_wake_ups_does_not_pack() {
        let p = Placement {
            cpus: (0, 1),
            samples: (0..40).map(|k| sample(100 + 15 * k, k % 10 == 0)).collect(),
            timer: false,
            companion: false,
            left_out: 0,
        };
        assert_eq!(p.pack_util(), None);
    }

    /// A plan draws `ROUNDS` a level when every round may be kept, and
    /// draws again what is left out, up to `MAX_ROUNDS` a level.
    #[test]
    fn a_plan_draws_again_the_rounds_left_out() {
        let levels = [0.2, 1.0, 2.0];
        let run = |keep: &dyn Fn(usize) -> bool| {
            let mut plan = Plan::new(&levels);
            let mut per_level = vec![(0, 0); levels.len()];
            let mut i = 0;
            while let Some((spin_ns, may_keep)) = plan.next() {
                let l = levels
                    .iter()
                    .position(|&ms| (ms * 1e6) as u64 == spin_ns)
                    .unwrap();
                let kept = may_keep && keep(i);
                per_level[l].0 += 1;
                per_level[l].1 += kept as usize;
                plan.done(kept, may_keep);
                i += 1;
            }
            (per_level, plan.left_out)
        };
        // Quiet: 40 drawn, 25 kept a level, none left out.
        assert_eq!(run(&|_| true), (vec![(ROUNDS, ROUNDS - SETTLE); 3], 0));
        // Every other round disturbed: 15 + 50 drawn for 25 kept.
        let (levels_seen, left_out) = run(&|i| i % 2 == 0);
        for &(drawn, kept) in &levels_seen {
            assert_eq!(kept, ROUNDS - SETTLE);
            assert!(
                (SETTLE + 49..=SETTLE + 50).contains(&drawn),
                "{levels_seen:?}"
            );
        }
        assert_eq!(
            left_out,
            levels_seen
                .iter()
                .map(|&(d, k)| d - SETTLE - k)
                .sum::<usize>()
        );
        // Nothing keepable: MAX_ROUNDS a level, and the plan ends.
        assert_eq!(
            run(&|_| false),
            (vec![(MAX_ROUNDS, 0); 3], 3 * (MAX_ROUNDS - SETTLE))
        );
    }

    /// On a machine with two CPUs every wake-up is seen to land, and the
    /// caller's CPUs are left alone.
    #[test]
    fn the_probe_sees_each_wake_up_land() {
        let before = rustix::thread::sched_getaffinity(None).unwrap();
        let cpus: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&c| before.is_set(c))
            .collect();
        let [.., a, b] = cpus[..] else {
            eprintln!("SKIP the_probe_sees_each_wake_up_land: needs two CPUs");
            return;
        };
        if own_util() == (0, 0) {
            eprintln!("SKIP the_probe_sees_each_wake_up_land: no se.avg.util_avg in /proc/thread-self/sched");
            return;
        }
        let levels = [0.2, 5.0];
        let p = measure(a, b, &levels, false).unwrap();
        assert_eq!(p.samples.len(), (ROUNDS - SETTLE) * levels.len(), "{p:?}");
        assert!(p.samples.iter().any(|s| s.util_avg > 0), "{p:?}");
        assert_eq!(rustix::thread::sched_getaffinity(None).unwrap(), before);
    }
}
