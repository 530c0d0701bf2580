//! What if corral managed it: [`compare`] replays one workload twice, with
//! no policy and under corral's daemon ([`super::policy::run`]), and does
//! so over several *phases* of its periodic threads.
//!
//! Why phases. A periodic program (cyclictest's measuring thread, a frame
//! loop) wakes on its own grid, and where that grid falls against the
//! other periodic programs and the tick is set by the instant it started:
//! a new draw in every live run. A recording holds one draw, and the worst
//! wake-ups of such a thread hang on it (two 10 ms loops that wake
//! together wait on each other every period; 3 ms apart, never). One replay
//! under corral therefore predicts one draw of a random figure, and so
//! does every live run it is checked against. Phase 0 is the recording as
//! it was; phase k ≥ 1 delays each periodic thread's instants
//! (`corral_until`) by its own offset, uniform in [0, period) and drawn
//! from the seed, k and the thread's name. The figures to quote are the
//! medians over phases ([`median`]), and their spread says how much one
//! live run can differ from them.
//!
//! The threads' other steps are left as recorded, so are the background
//! threads (they replay at their live instants).

use crate::corral::host::SimHost;
use crate::corral::policy::{self, Place};
use crate::engine::{Ns, Rng};
use crate::error::Error;
use crate::input::platform::{self, PlatformSpec};
use crate::input::rtapp::{Event, Workload};
use crate::out::hist::Histogram;
use crate::sched::fair::Flavour;
use crate::sched::machine::TaskStats;
use corral_core::config::Config;
use std::collections::BTreeMap;

/// A thread that wakes on a grid (`recording::periodic`): its name and
/// period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Periodic {
    pub name: String,
    pub period_us: u64,
}

/// How far phase `k` delays each of `periodic`'s instants, µs: nothing in
/// phase 0; otherwise uniform in [0, period), from `seed`, `k` and the
/// thread's name (not its place in the list).
pub fn offsets(periodic: &[Periodic], k: u32, seed: u64) -> Vec<u64> {
    periodic
        .iter()
        .map(|p| {
            if k == 0 || p.period_us == 0 {
                return 0;
            }
            // FNV-1a of the name.
            let name = p.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
            });
            // The simulator's generator (SplitMix64), seeded per thread,
            // then per phase.
            let thread = Rng::new(seed ^ name).next_u64();
            Rng::new(thread ^ k as u64).below(p.period_us)
        })
        .collect()
}

/// `work` with each named thread's `corral_until` instants `by` µs later.
pub fn shifted(work: &Workload, periodic: &[Periodic], by: &[u64]) -> Workload {
    let mut w = work.clone();
    for (p, &d) in periodic.iter().zip(by) {
        if d == 0 {
            continue;
        }
        for t in w.tasks.iter_mut().filter(|t| t.name == p.name) {
            for e in t.phases.iter_mut().flat_map(|ph| ph.events.iter_mut()) {
                if let Event::Until(at) = e {
                    *at += d;
                }
            }
        }
    }
    w
}

/// Each replay's per-thread figures.
#[derive(Debug, Clone, Default)]
pub struct WhatIf {
    pub seed: u64,
    /// The threads outside the scope (`background`): the workload's, and
    /// the daemon's own when it ran.
    pub outside: std::collections::BTreeSet<String>,
    /// Per phase, each periodic thread's delay, µs.
    pub offsets: Vec<Vec<u64>>,
    /// Per phase, the threads with no policy.
    pub none: Vec<Vec<TaskStats>>,
    /// Per phase, the threads under corral.
    pub corral: Vec<Vec<TaskStats>>,
    /// Where the daemon last had each thread in the first phase's replay
    /// (by task name).
    pub under: BTreeMap<String, Place>,
}

/// Replays `work` for `end` ns on `spec` with no policy and under corral
/// (with `config`, the platform's scripted boosts, and the daemon's own
/// CPU time when given, [`policy::with_daemon`]), in `phases` phases (at
/// least one: the workload as given). `progress` hears each replay done,
/// of `2 · phases`.
#[allow(clippy::too_many_arguments)]
pub fn compare(
    work: &Workload,
    spec: &PlatformSpec,
    flavour: Flavour,
    config: &Config,
    daemon: Option<policy::DaemonCost>,
    periodic: &[Periodic],
    phases: u32,
    seed: u64,
    end: Ns,
    progress: &mut dyn FnMut(u32),
) -> Result<WhatIf, Error> {
    let mut out = WhatIf {
        seed,
        ..WhatIf::default()
    };
    let mut done = 0;
    for k in 0..phases.max(1) {
        let by = offsets(periodic, k, seed);
        let w = shifted(work, periodic, &by);
        let mut m = platform::build(w.clone(), spec, flavour)?;
        m.run_until(end);
        out.none.push(m.stats());
        done += 1;
        progress(done);
        let w = match daemon {
            Some(cost) => policy::with_daemon(&w, config, cost, end),
            None => w,
        };
        out.outside.extend(
            w.tasks
                .iter()
                .filter(|t| t.background)
                .map(|t| t.name.clone()),
        );
        let m = platform::build(w, spec, flavour)?;
        let (daemon, report) = policy::run(
            SimHost::new(m),
            config.clone(),
            &spec.boosts,
            end,
            &mut |_| {},
        )?;
        out.corral.push(daemon.host().machine().stats());
        if k == 0 {
            out.under = report.places;
        }
        done += 1;
        progress(done);
        out.offsets.push(by);
    }
    Ok(out)
}

/// One replay's figures for a thread, or for threads pooled.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures {
    pub threads: usize,
    pub cpu_ns: u64,
    pub wakeups: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// When the last of them ended, if all did.
    pub ended_at: Option<Ns>,
}

/// The threads of `stats` that `pick` selects, pooled: their CPU time and
/// wake-ups summed, their wake-up latencies in one histogram.
pub fn figures(stats: &[TaskStats], pick: impl Fn(&str) -> bool) -> Figures {
    let mut lat = Histogram::default();
    let mut f = Figures {
        ended_at: Some(0),
        ..Figures::default()
    };
    for t in stats.iter().filter(|t| pick(&t.name)) {
        f.threads += 1;
        f.cpu_ns += t.cpu_ns;
        f.wakeups += t.wakeups;
        lat.merge(&t.wakeup_latency);
        f.ended_at = match (f.ended_at, t.exited_at) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
    }
    if f.threads == 0 {
        f.ended_at = None;
    }
    f.p50_ns = lat.percentile(50.0);
    f.p99_ns = lat.percentile(99.0);
    f
}

/// The median (the mean of the middle two of an even count); 0 when empty.
pub fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::rtapp;

    fn periodic(names: &[(&str, u64)]) -> Vec<Periodic> {
        names
            .iter()
            .map(|&(n, p)| Periodic {
                name: n.into(),
                period_us: p,
            })
            .collect()
    }

    #[test]
    fn phase_zero_is_the_recording_and_the_others_fall_within_a_period() {
        let p = periodic(&[("a", 10_000), ("b", 16_667)]);
        assert_eq!(offsets(&p, 0, 7), vec![0, 0]);
        let mut seen = Vec::new();
        for k in 1..200 {
            let o = offsets(&p, k, 7);
            assert!(o[0] < 10_000 && o[1] < 16_667, "{o:?}");
            // The draw is the thread's, not its place in the list.
            let swapped = offsets(&[p[1].clone(), p[0].clone()], k, 7);
            assert_eq!(swapped, vec![o[1], o[0]]);
            seen.push(o[0]);
        }
        // Spread over the period: every tenth of it drawn.
        for decile in 0..10 {
            assert!(
                seen.iter().any(|&o| o / 1000 == decile),
                "no offset in decile {decile}: {seen:?}"
            );
        }
        assert_eq!(offsets(&p, 3, 7), offsets(&p, 3, 7));
        assert_ne!(offsets(&p, 3, 7), offsets(&p, 3, 8));
    }

    /// Two 10 ms loops that each run 2 ms, on one CPU, recorded waking at
    /// the same instants (as `corral record` writes them: an instant
    /// each, from 10 ms on), and a 5 ms job that runs at the start.
    fn pair() -> Workload {
        let mut events = String::new();
        for i in 1..=50 {
            events += &format!("\"corral_until{i}\": {}, \"run{i}\": 2000, ", i * 10_000);
        }
        let events = events.trim_end_matches(", ");
        let json = format!(
            r#"{{
            "global": {{"duration": 1}},
            "tasks": {{
                "a": {{"loop": 1, {events}}},
                "b": {{"loop": 1, {events}}},
                "job": {{"loop": 1, "run": 5000}}
            }}
        }}"#
        );
        rtapp::parse(&json, "pair.json").unwrap()
    }

    #[test]
    fn shifting_moves_only_the_named_thread_s_instants() {
        let w = pair();
        let s = shifted(&w, &periodic(&[("b", 10_000)]), &[3000]);
        let until = |w: &Workload, name: &str| -> Vec<u64> {
            let t = w.tasks.iter().find(|t| t.name == name).unwrap();
            t.phases
                .iter()
                .flat_map(|p| &p.events)
                .filter_map(|e| match e {
                    Event::Until(at) => Some(*at),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(until(&s, "a"), until(&w, "a"));
        let (old, new) = (until(&w, "b"), until(&s, "b"));
        assert!(!old.is_empty());
        assert!(old.iter().zip(&new).all(|(o, n)| n - o == 3000));
        assert_eq!(s.tasks[2], w.tasks[2]);
    }

    #[test]
    fn a_thread_s_worst_wake_ups_change_with_the_phase() {
        let w = pair();
        let spec = PlatformSpec::uniform(1);
        let p = periodic(&[("a", 10_000), ("b", 10_000)]);
        let mut heard = 0;
        let r = compare(
            &w,
            &spec,
            Flavour::Eevdf,
            &Config::default(),
            None,
            &p,
            16,
            1,
            1_000_000_000,
            &mut |n| heard = n,
        )
        .unwrap();
        assert_eq!(heard, 32);
        assert_eq!(
            (r.none.len(), r.corral.len(), r.offsets.len()),
            (16, 16, 16)
        );
        // The worse of the two loops' p99, µs, per phase.
        let worst: Vec<f64> = r
            .none
            .iter()
            .map(|s| {
                let a = figures(s, |n| n == "a").p99_ns;
                let b = figures(s, |n| n == "b").p99_ns;
                a.max(b) as f64 / 1e3
            })
            .collect();
        // As recorded, one waits out the other's 2 ms run every period.
        assert!(worst[0] >= 1900.0, "{worst:?}");
        // Apart by 2 ms or more (some phase draws so), neither waits.
        let apart = r.offsets.iter().position(|o| {
            let d = o[0].abs_diff(o[1]);
            (2_500..=7_500).contains(&d)
        });
        let k = apart.expect("no phase with the loops 2.5-7.5 ms apart");
        assert!(worst[k] < 100.0, "phase {k} {:?}: {worst:?}", r.offsets[k]);
        // Every replay ran the whole workload: the job ended in each.
        for s in r.none.iter().chain(&r.corral) {
            assert!(figures(s, |n| n == "job").ended_at.is_some());
        }
    }

    #[test]
    fn the_replay_says_which_threads_corral_left_alone_and_why() {
        // Two 10 ms loops beside two hogs on two CPUs; "pinned" narrowed
        // its own affinity, as cyclictest's measuring thread does.
        let w = rtapp::parse(
            r#"{"tasks": {
                "pinned": {"loop": -1, "cpus": [0], "run": 100, "timer": {"ref": "p", "period": 10000}},
                "free": {"loop": -1, "run": 100, "timer": {"ref": "f", "period": 10000}},
                "hog": {"instance": 2, "loop": -1, "run": 1000000}}}"#,
            "t",
        )
        .unwrap();
        let r = compare(
            &w,
            &PlatformSpec::uniform(2),
            Flavour::Eevdf,
            &Config::default(),
            None,
            &[],
            1,
            0,
            5_000_000_000,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(
            r.under.get("pinned"),
            Some(&Place::Unmanaged(
                "its affinity was narrowed by someone else".into()
            )),
            "{:?}",
            r.under
        );
        assert!(
            matches!(r.under.get("free"), Some(Place::Group(_))),
            "{:?}",
            r.under
        );
        assert!(
            matches!(r.under.get("hog-0"), Some(Place::Group(_))),
            "{:?}",
            r.under
        );
    }

    #[test]
    fn pooled_figures_sum_cpu_and_end_with_the_last() {
        let w = pair();
        let mut m = platform::build(w, &PlatformSpec::uniform(1), Flavour::Eevdf).unwrap();
        m.run_until(1_000_000_000);
        let s = m.stats();
        let a = figures(&s, |n| n == "a");
        let b = figures(&s, |n| n == "b");
        let both = figures(&s, |n| n == "a" || n == "b");
        assert_eq!(both.threads, 2);
        assert_eq!(both.cpu_ns, a.cpu_ns + b.cpu_ns);
        assert_eq!(both.wakeups, a.wakeups + b.wakeups);
        assert_eq!(both.ended_at, a.ended_at.max(b.ended_at));
        assert_eq!(figures(&s, |_| false), Figures::default());
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn the_daemon_s_own_cpu_time_runs_at_its_steps_and_is_left_alone() {
        let config = Config::default();
        let cost = policy::DaemonCost {
            step_ns: 2_000_000,
            quick_ns: 100_000,
        };
        let w = policy::with_daemon(&pair(), &config, cost, 1_000_000_000);
        let t = w.tasks.last().unwrap();
        assert_eq!(t.name, policy::DAEMON_TASK);
        assert!(t.background);
        let events: Vec<&Event> = t.phases.iter().flat_map(|p| &p.events).collect();
        let runs: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Runtime(us) => Some(*us),
                _ => None,
            })
            .collect();
        let at: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Until(us) => Some(*us),
                _ => None,
            })
            .collect();
        // A full step at 0, quick steps every 40 ms until the next full
        // step: 1 + 24 in the first second.
        assert_eq!(runs.len(), 25);
        assert_eq!(runs[0], 2000);
        assert!(runs[1..].iter().all(|&r| r == 100), "{runs:?}");
        assert_eq!(at[..3], [0, 40_000, 80_000]);
        // Under corral it uses that CPU, from the group of the
        // workload's first thread (here the root group).
        let m = platform::build(w, &PlatformSpec::uniform(2), Flavour::Eevdf).unwrap();
        let (daemon, _) =
            policy::run(SimHost::new(m), config, &[], 1_000_000_000, &mut |_| {}).unwrap();
        let m = daemon.host().machine();
        let stats = m.stats();
        let id = stats
            .iter()
            .position(|s| s.name == policy::DAEMON_TASK)
            .unwrap();
        assert_eq!(stats[id].cpu_ns, 2_000_000 + 24 * 100_000);
        assert_eq!(&**m.task_cgroup(id), "/");
        // Started from the shell that runs the workload, the daemon
        // lives in that shell's group: the scope root's, beside the
        // threads it leaves alone there.
        let rec = rtapp::parse(
            r#"{"tasks": {
                "sh-1": {"loop": 1, "taskgroup": "/autogroup-7", "run": 1000},
                "cc-2": {"loop": 1, "corral_forked": true, "taskgroup": "/build", "corral_block0": "sh-1", "run1": 1000}}}"#,
            "t",
        )
        .unwrap();
        let w = policy::with_daemon(&rec, &Config::default(), cost, 1_000_000_000);
        let t = w.tasks.last().unwrap();
        assert_eq!(
            (t.name.as_str(), t.taskgroup.as_deref()),
            (policy::DAEMON_TASK, Some("/autogroup-7"))
        );
        // Without a cost the workload is as it was.
        assert_eq!(
            policy::with_daemon(
                &pair(),
                &Config::default(),
                policy::DaemonCost::default(),
                1_000_000_000
            ),
            pair()
        );
    }
}
