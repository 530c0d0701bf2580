//! `corral lab pelt`: the simulator's PELT (`corral_sim::sched::pelt`)
//! against the live kernel's, on periodic threads.
//!
//! A thread pinned to one CPU wakes every period, reads its own PELT
//! state from `/proc/thread-self/sched` (computed as the kernel enqueued
//! it and put it on the CPU: `se.avg.*_sum`, `*_avg`, `last_update_time`,
//! and `se.sum_exec_runtime`), spins for the run time and sleeps until
//! the next period; a sampler pinned to another CPU reads the same file
//! while it sleeps (the state computed at its dequeue, which holds until
//! it wakes). The model starts from the kernel's state at a wake-up (its
//! `period_contrib`, which `/proc` does not show, from the entity's phase
//! in the period: the one under which the readings' averages are their
//! sums over the divider) and is then driven by the kernel's own instants — each
//! `last_update_time`, in the CPU's `clock_pelt` — and by the CPU time
//! the thread got between them (the rest of a span it waited). Its
//! `util_avg` at each wake-up and each sleep is compared with the
//! kernel's. The tolerance is LISA's for its own PELT model: mean error at
//! most 2 % and largest at most 5 % of 1024.
//!
//! No wall clock enters the model: a virtual machine's stolen time, which
//! the guest kernel's clock leaves out, cannot skew it. A period whose
//! sleep was not sampled (the sampler itself descheduled) breaks the
//! chain; the model starts again from the next wake-up's state.

use crate::error::{Error, Result};
use crate::work::mono_ns;
use corral_sim::sched::pelt::{SchedAvg, PELT_MIN_DIVIDER};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// LISA's tolerance for a PELT model: mean error, in util units of 1024.
pub const MEAN_TOLERANCE: f64 = 0.02 * 1024.0;
/// … and largest error.
pub const MAX_TOLERANCE: f64 = 0.05 * 1024.0;

/// The first part of a run, before the model starts, ns: the signal
/// climbs to its steady swing meanwhile.
const WARMUP_NS: u64 = 500_000_000;

/// One periodic thread's shape.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Shape {
    pub run_us: u64,
    pub period_us: u64,
}

/// The shapes `corral lab pelt` runs: short and long runs (shorter and
/// longer than a 4 ms tick), light and heavy duty cycles.
pub const SHAPES: [Shape; 4] = [
    Shape {
        run_us: 2_000,
        period_us: 8_000,
    },
    Shape {
        run_us: 6_000,
        period_us: 10_000,
    },
    Shape {
        run_us: 1_000,
        period_us: 16_000,
    },
    Shape {
        run_us: 12_000,
        period_us: 16_000,
    },
];

/// What `/proc/…/sched` shows of a task's PELT state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Reading {
    /// `se.avg.last_update_time`: the CPU's `clock_pelt` at the last
    /// update, ns.
    lut: u64,
    load_sum: u64,
    runnable_sum: u64,
    util_sum: u64,
    load_avg: u64,
    runnable_avg: u64,
    util_avg: u64,
    /// `se.sum_exec_runtime`, ns.
    sum_exec_ns: u64,
}

/// A field's value in a `/proc/PID/sched` text (`name   :   value`).
pub(crate) fn sched_field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split(':').nth(1))
        .map(str::trim)
}

impl Reading {
    /// From a `sched` file's text; `None` if a field is missing.
    fn parse(text: &str) -> Option<Reading> {
        let field = |name: &str| sched_field(text, name);
        let int = |name: &str| field(name).and_then(|v| v.parse::<u64>().ok());
        // "%Ld.%06ld" ms.
        let exec = field("se.sum_exec_runtime")?;
        let (ms, frac) = exec.split_once('.')?;
        Some(Reading {
            lut: int("se.avg.last_update_time")?,
            load_sum: int("se.avg.load_sum")?,
            runnable_sum: int("se.avg.runnable_sum")?,
            util_sum: int("se.avg.util_sum")?,
            load_avg: int("se.avg.load_avg")?,
            runnable_avg: int("se.avg.runnable_avg")?,
            util_avg: int("se.avg.util_avg")?,
            sum_exec_ns: ms.parse::<u64>().ok()? * 1_000_000 + frac.parse::<u64>().ok()?,
        })
    }

    /// Whether its averages are its sums over the divider of position
    /// `p` in the period (`___update_load_avg`, weight 1024): false when
    /// the last update did not cross a period boundary (the sums moved,
    /// the averages did not) or the reading was torn.
    fn fresh_at(&self, p: u64) -> bool {
        let d = PELT_MIN_DIVIDER + p;
        self.util_sum / d == self.util_avg
            && self.runnable_sum / d == self.runnable_avg
            && 1024 * self.load_sum / d == self.load_avg
    }

    /// Its position in the period, `period_contrib`, which `/proc` does
    /// not show, from the entity's `phase` ([`phase_of`]).
    fn position(&self, phase: u64) -> u64 {
        ((self.lut >> 10) + 1024 - phase) % 1024
    }

    /// The model's state from the kernel's, if the reading is fresh.
    fn to_model(self, phase: u64) -> Option<SchedAvg> {
        let p = self.position(phase);
        self.fresh_at(p).then_some(SchedAvg {
            last_update_time: self.lut,
            load_sum: self.load_sum,
            runnable_sum: self.runnable_sum,
            util_sum: self.util_sum as u32,
            period_contrib: p as u32,
            load_avg: self.load_avg,
            runnable_avg: self.runnable_avg,
            util_avg: self.util_avg,
            util_est: 0,
        })
    }
}

/// An entity's phase: `(last_update_time / 1024 − period_contrib) mod
/// 1024` does not change from one update to the next (`accumulate_sum`
/// adds the same µs to both, modulo the period), as long as the entity
/// stays on one CPU. It is the phase under which the most wake-up
/// readings are fresh, then the most distinct `samples`. A wake-up's
/// enqueue follows a sleep of over a period, so it crossed a boundary
/// and is fresh under the entity's phase; a dequeue soon after a tick's
/// update may cross none and is then stale, yet a stale reading passes
/// the test under a window of wrong phases (`util_sum / d` keeps its
/// quotient over about `d / util_avg` values of `d`), and the sampler
/// reads the same one a dozen times through a sleep: counted with the
/// wake-ups, such readings outvoted them once (a CI run compared no
/// period of its first shape).
fn phase_of(wakes: &[Reading], samples: &[Reading]) -> Option<u64> {
    let mut distinct = samples.to_vec();
    distinct.sort_by_key(|r| r.lut);
    distinct.dedup();
    let fresh =
        |rs: &[Reading], phase: u64| rs.iter().filter(|r| r.fresh_at(r.position(phase))).count();
    (0..1024u64)
        .map(|phase| ((fresh(wakes, phase), fresh(&distinct, phase)), phase))
        .max()
        .filter(|&(n, _)| n > (0, 0))
        .map(|(_, phase)| phase)
}

/// One period as the thread lived it.
#[derive(Debug, Clone, Copy)]
struct Period {
    wake_ns: u64,
    sleep_ns: u64,
    /// Its state read at the wake-up.
    at_wake: Option<Reading>,
}

/// A shape's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    pub shape: Shape,
    /// Periods compared; times the model started again (a sleep not
    /// sampled, a reading that fits no period position).
    pub periods: usize,
    pub restarts: usize,
    /// Runs of the shape: one more for each that compared no period.
    pub attempts: usize,
    /// At the wake-ups (enqueue) and during the sleeps (dequeue): the
    /// kernel's mean value and the model's.
    pub kernel_wake_mean: f64,
    pub model_wake_mean: f64,
    pub kernel_sleep_mean: f64,
    pub model_sleep_mean: f64,
    /// |model − kernel| over every value compared.
    pub mean_error: f64,
    pub max_error: f64,
    /// Where the largest error was.
    pub worst: String,
    pub within: bool,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub cpu: usize,
    pub sampler_cpu: usize,
    pub seconds: f64,
    pub cases: Vec<CaseReport>,
    pub within: bool,
}

fn gettid() -> u32 {
    rustix::thread::gettid().as_raw_nonzero().get() as u32
}

fn pin(cpu: usize) -> Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)
        .map_err(|e| Error::Environment(format!("cannot pin a thread to CPU {cpu}: {e}")))
}

/// Sleeps until monotonic time `at_ns`.
fn sleep_until(at_ns: u64) {
    let ts = rustix::time::Timespec {
        tv_sec: (at_ns / 1_000_000_000) as i64,
        tv_nsec: (at_ns % 1_000_000_000) as i64,
    };
    let _ = rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &ts);
}

/// Runs `shape` for `seconds` on `cpu`, sampled from `sampler_cpu` (on
/// a thread of its own: the caller's CPUs stay as they were).
fn run_shape(shape: Shape, seconds: f64, cpu: usize, sampler_cpu: usize) -> Result<CaseReport> {
    std::thread::scope(|s| {
        s.spawn(|| sample_shape(shape, seconds, cpu, sampler_cpu))
            .join()
            .unwrap_or_else(|_| Err(Error::Measurement("the sampler panicked".into())))
    })
}

fn sample_shape(shape: Shape, seconds: f64, cpu: usize, sampler_cpu: usize) -> Result<CaseReport> {
    let tid = Arc::new(AtomicU32::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let periods = (seconds * 1e6 / shape.period_us as f64).ceil() as u64;
    let worker = {
        let (tid, done) = (tid.clone(), done.clone());
        std::thread::spawn(move || -> Result<Vec<Period>> {
            pin(cpu)?;
            tid.store(gettid(), Ordering::SeqCst);
            let path = "/proc/thread-self/sched";
            let mut out = Vec::with_capacity(periods as usize);
            let start = mono_ns() + 20_000_000;
            for k in 0..periods {
                let at = start + k * shape.period_us * 1000;
                sleep_until(at);
                let wake_ns = mono_ns();
                let at_wake = std::fs::read_to_string(path)
                    .ok()
                    .and_then(|t| Reading::parse(&t));
                let end = at + shape.run_us * 1000;
                while mono_ns() < end {
                    std::hint::spin_loop();
                }
                out.push(Period {
                    wake_ns,
                    sleep_ns: mono_ns(),
                    at_wake,
                });
            }
            done.store(true, Ordering::SeqCst);
            Ok(out)
        })
    };
    // The sampler, every 500 µs: (before the read, after it, reading).
    let samples = Arc::new(Mutex::new(Vec::<(u64, u64, Reading)>::new()));
    pin(sampler_cpu)?;
    while tid.load(Ordering::SeqCst) == 0 && !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let path = format!("/proc/self/task/{}/sched", tid.load(Ordering::SeqCst));
    while !done.load(Ordering::SeqCst) && !worker.is_finished() {
        let t = mono_ns();
        let read = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| Reading::parse(&t));
        if let Some(r) = read {
            samples.lock().expect("sampler").push((t, mono_ns(), r));
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let lived = worker
        .join()
        .map_err(|_| Error::Measurement("the periodic thread panicked".into()))??;
    let samples = samples.lock().expect("sampler").clone();
    Ok(compare(shape, &lived, &samples))
}

/// The state at period `i`'s dequeue: the last sample read wholly within
/// its sleep (from 200 µs after it began to 100 µs before the next
/// wake-up: a read the wake-up overtakes shows the enqueue's state), and
/// stamped after the wake-up's.
fn asleep(lived: &[Period], i: usize, samples: &[(u64, u64, Reading)]) -> Option<Reading> {
    let p = &lived[i];
    let next = lived.get(i + 1).map_or(u64::MAX, |n| n.wake_ns);
    let woke = p.at_wake?.lut;
    samples
        .iter()
        .rev()
        .find(|(t0, t1, _)| *t0 > p.sleep_ns + 200_000 && t1 + 100_000 < next)
        .map(|s| s.2)
        .filter(|r| r.lut > woke)
}

/// The model driven by the kernel's instants against the kernel's values
/// (see the module's comment).
fn compare(shape: Shape, lived: &[Period], samples: &[(u64, u64, Reading)]) -> CaseReport {
    let first = lived.first().map_or(0, |p| p.wake_ns);
    let wakes: Vec<Reading> = lived.iter().filter_map(|p| p.at_wake).collect();
    let sampled: Vec<Reading> = samples.iter().map(|s| s.2).collect();
    let phase = phase_of(&wakes, &sampled).unwrap_or(0);
    let mut model: Option<SchedAvg> = None;
    let (mut errors, mut restarts, mut compared) = (Vec::new(), 0, 0);
    let mut worst = (0.0, String::new());
    let (mut kw, mut mw, mut ks, mut ms) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut note = |e: f64, what: String, errors: &mut Vec<f64>| {
        if e > worst.0 {
            worst = (e, what);
        }
        errors.push(e);
    };
    for (i, p) in lived.iter().enumerate() {
        let Some(w) = p.at_wake.filter(|_| p.wake_ns >= first + WARMUP_NS) else {
            continue;
        };
        match model.as_mut() {
            None => {
                model = w.to_model(phase);
                restarts += model.is_some() as usize;
            }
            Some(m) => {
                // Asleep since its dequeue: it decays.
                m.update_se(w.lut, 1024, false, false);
                let e = (m.util_avg as f64 - w.util_avg as f64).abs();
                note(
                    e,
                    format!(
                        "at wake-up {i}: kernel {}, model {}",
                        w.util_avg, m.util_avg
                    ),
                    &mut errors,
                );
                kw.push(w.util_avg as f64);
                mw.push(m.util_avg as f64);
                compared += 1;
            }
        }
        let Some(m) = model.as_mut() else {
            continue;
        };
        let Some(d) = asleep(lived, i, samples) else {
            model = None;
            continue;
        };
        // Queued from the wake-up's stamp to the dequeue's; it ran for
        // its CPU time of that span and waited the rest (first: when is
        // not known).
        let span = d.lut - w.lut;
        let ran = d.sum_exec_ns.saturating_sub(w.sum_exec_ns).min(span);
        m.update_se(w.lut + (span - ran), 1024, true, false);
        m.update_se(d.lut, 1024, true, true);
        let e = (m.util_avg as f64 - d.util_avg as f64).abs();
        note(
            e,
            format!(
                "asleep after period {i}: kernel {}, model {}",
                d.util_avg, m.util_avg
            ),
            &mut errors,
        );
        ks.push(d.util_avg as f64);
        ms.push(m.util_avg as f64);
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let mean_error = mean(&errors);
    let max_error = errors.iter().copied().fold(0.0, f64::max);
    CaseReport {
        shape,
        periods: compared,
        restarts,
        attempts: 1,
        kernel_wake_mean: mean(&kw),
        model_wake_mean: mean(&mw),
        kernel_sleep_mean: mean(&ks),
        model_sleep_mean: mean(&ms),
        mean_error,
        max_error,
        worst: worst.1,
        within: !errors.is_empty() && mean_error <= MEAN_TOLERANCE && max_error <= MAX_TOLERANCE,
    }
}

/// Runs every shape of [`SHAPES`] for `seconds` each, the thread on
/// `cpu` and the sampler on `sampler_cpu`; `progress` hears of each.
pub fn run(
    seconds: f64,
    cpu: usize,
    sampler_cpu: usize,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    if cpu == sampler_cpu {
        return Err(Error::Invalid(
            "the periodic thread and the sampler need two different CPUs".into(),
        ));
    }
    let mut cases = Vec::new();
    for shape in SHAPES {
        progress(&format!(
            "{} µs every {} µs for {seconds} s",
            shape.run_us, shape.period_us
        ));
        // A run that compared no period measured nothing (no reading
        // matched a period position): drawn again, twice at most.
        let mut attempts = 1;
        let mut case = run_shape(shape, seconds, cpu, sampler_cpu)?;
        while case.periods == 0 && attempts < 3 {
            progress("no period compared; again");
            attempts += 1;
            case = run_shape(shape, seconds, cpu, sampler_cpu)?;
        }
        case.attempts = attempts;
        cases.push(case);
    }
    let within = cases.iter().all(|c| c.within);
    Ok(Report {
        cpu,
        sampler_cpu,
        seconds,
        cases,
        within,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHED: &str = "se.sum_exec_runtime                          :          2044.066331
se.avg.load_sum                              :                47309
se.avg.runnable_sum                          :             13783040
se.avg.util_sum                              :             12345678
se.avg.load_avg                              :                 1021
se.avg.runnable_avg                          :                  290
se.avg.util_avg                              :                  260
se.avg.last_update_time                      :       12138725325824
";

    #[test]
    fn a_sched_file_is_read_and_its_period_position_found() {
        let r = Reading::parse(SCHED).unwrap();
        assert_eq!(r.sum_exec_ns, 2_044_066_331);
        assert_eq!(r.lut, 12138725325824);
        assert_eq!(r.util_avg, 260);
        let phase = phase_of(&[r], &[]).unwrap();
        let m = r.to_model(phase).unwrap();
        let d = PELT_MIN_DIVIDER + m.period_contrib as u64;
        assert_eq!(r.util_sum / d, 260);
        assert_eq!(1024 * r.load_sum / d, 1021);
        assert!(Reading::parse("se.avg.util_avg : 3").is_none());
    }

    /// A periodic thread as the kernel would report it, from the model
    /// itself: wake-up readings and one sleep sample per period.
    fn lived(offset: u64) -> (Vec<Period>, Vec<(u64, u64, Reading)>) {
        let mut m = SchedAvg::default();
        let (mut lived, mut samples) = (Vec::new(), Vec::new());
        let mut exec = 0;
        let read = |m: &SchedAvg, exec: u64| Reading {
            lut: m.last_update_time,
            load_sum: m.load_sum,
            runnable_sum: m.runnable_sum,
            util_sum: m.util_sum as u64,
            load_avg: m.load_avg,
            runnable_avg: m.runnable_avg,
            util_avg: m.util_avg,
            sum_exec_ns: exec,
        };
        for k in 0..300u64 {
            let wake = k * 8_000_000 + 777;
            m.update_se(wake, 1024, false, false);
            let w = read(&m, exec);
            m.update_se(wake + 2_000_000, 1024, true, true);
            exec += 2_000_000;
            let mut d = read(&m, exec);
            d.util_avg += offset;
            samples.push((wake + 5_000_000, wake + 5_000_100, d));
            lived.push(Period {
                wake_ns: wake,
                sleep_ns: wake + 2_000_000,
                at_wake: Some(w),
            });
        }
        (lived, samples)
    }

    /// A stale reading sampled many times through sleeps does not outvote
    /// the wake-ups: the phase is theirs.
    #[test]
    fn the_phase_is_the_wake_ups_not_a_stale_readings_read_many_times() {
        let (l, s) = lived(0);
        let wakes: Vec<Reading> = l
            .iter()
            .skip(100)
            .filter_map(|p| p.at_wake)
            .take(5)
            .collect();
        let phase = phase_of(&wakes, &[]).unwrap();
        // Readings that pass the test only under a wrong phase, 400 µs
        // off (sums over a divider 400 larger, averages the same), each
        // read 12 times.
        let stale: Vec<Reading> = s
            .iter()
            .skip(100)
            .map(|(_, _, d)| *d)
            .filter(|d| d.position(phase) < 600)
            .take(5)
            .flat_map(|d| {
                let p = d.position(phase);
                let (from, to) = (PELT_MIN_DIVIDER + p, PELT_MIN_DIVIDER + p + 400);
                let r = Reading {
                    load_sum: (d.load_avg * to).div_ceil(1024),
                    runnable_sum: d.runnable_avg * to,
                    util_sum: d.util_avg * to,
                    ..d
                };
                assert!(
                    d.fresh_at(p) && !r.fresh_at(p) && r.fresh_at(p + 400),
                    "{from}: {r:?}"
                );
                std::iter::repeat_n(r, 12)
            })
            .collect();
        let both: Vec<Reading> = wakes.iter().chain(&stale).copied().collect();
        // Counted together, they would win.
        let outvoted = phase_of(&both, &[]).unwrap();
        assert!(wakes.iter().any(|w| !w.fresh_at(w.position(outvoted))));
        assert_eq!(phase_of(&wakes, &stale), Some(phase));
        assert!(wakes.iter().all(|w| w.fresh_at(w.position(phase))));
    }

    #[test]
    fn a_kernel_that_agrees_with_the_model_is_within_and_one_that_does_not_is_not() {
        let (l, s) = lived(0);
        let r = compare(SHAPES[0], &l, &s);
        assert!(r.within && r.max_error <= 1.0 && r.periods > 200, "{r:?}");
        // A kernel reading 100 higher at every sleep: outside.
        let (l, s) = lived(100);
        let r = compare(SHAPES[0], &l, &s);
        assert!(!r.within && r.max_error >= 99.0, "{r:?}");
    }
}
