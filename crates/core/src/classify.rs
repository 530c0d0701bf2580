//! Paper 000's classification by **CPU intensiveness**, and
//! latency-critical threads spotted by behaviour.
//!
//! # Intensiveness
//! The paper records each task's *peak* utilisation and keeps the maximum.
//! A maximum that never decays would pin a thread that was busy once (at
//! start-up, say) as heavy for ever, so corral's peak decays:
//!
//! ```text
//!   peak(t) = max(util(t), peak(t − dt) · 2^(−dt / half_life))     half_life = 10 s
//! ```
//!
//! A burst lifts the peak at once; the peak forgets it slowly (a thread
//! that stops dead at 0.9 stays heavy for 10 s at the defaults: it leaves
//! the class below 0.45, and 10·log2(0.9/0.45) = 10), so a thread that is busy in bursts a few seconds apart
//! keeps its class. Classes by peak: heavy ≥ 0.50, medium 0.30–0.50, light
//! below. **Hysteresis**: a thread enters a class as soon as the peak
//! reaches its threshold, and leaves it only when the peak falls
//! `hysteresis` (0.05) below it.
//!
//! # Latency-critical
//! A thread that wakes often and regularly, runs briefly each time, and
//! uses little CPU in all — audio, input, a compositor — suffers most from
//! run-queue waits and costs least to protect. Defaults, all per interval:
//! utilisation ≤ 0.20; ≥ 10 wake-ups/s (a period of 100 ms or less: audio
//! buffers are 5–40 ms, displays 8–17 ms); ≤ 4 ms of run per wake-up
//! (under a quarter of a 60 Hz frame); wake-up rate steady, coefficient of
//! variation ≤ 0.30 over the last 3 intervals. It must hold for 3 intervals
//! to enter the class and fail for 3 to leave it. Long run-queue waits are
//! the symptom being cured, not a condition: with corral working they
//! vanish, and the thread must keep its class.
//!
//! # Rules
//! Ordered rules in the configuration (comm, exe, cgroup globs; uid) force
//! a class or exclude a thread; the first match wins.

pub use crate::class::Class;
use crate::sample::{ThreadSample, ThreadStats};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};

/// `[classify.latency_critical]`: latency-critical by behaviour.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LatencyConfig {
    pub enabled: bool,
    pub max_util: f64,
    pub min_wakeups_per_s: f64,
    pub max_run_per_wakeup_ms: f64,
    pub max_rate_cv: f64,
    pub intervals: u32,
}

impl Default for LatencyConfig {
    fn default() -> Self {
        LatencyConfig {
            enabled: true,
            max_util: 0.30,
            min_wakeups_per_s: 10.0,
            max_run_per_wakeup_ms: 8.0,
            max_rate_cv: 0.30,
            intervals: 3,
        }
    }
}

/// `[classify]`: the classes' thresholds (see `default.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassifyConfig {
    pub heavy: f64,
    pub medium: f64,
    pub hysteresis: f64,
    pub peak_half_life_s: f64,
    /// How long a young thread is watched before it gets a class.
    pub young_min_ms: u64,
    pub latency_critical: LatencyConfig,
}

impl Default for ClassifyConfig {
    fn default() -> Self {
        ClassifyConfig {
            heavy: 0.50,
            medium: 0.30,
            hysteresis: 0.05,
            peak_half_life_s: 10.0,
            young_min_ms: 200,
            latency_critical: LatencyConfig::default(),
        }
    }
}

/// One rule: every given matcher must match; then the thread gets `class`,
/// or is left alone when `exclude` is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<Class>,
    #[serde(default)]
    pub exclude: bool,
}

/// Why a thread is not managed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Unmanaged {
    KernelThread,
    /// SCHED_FIFO / RR / DEADLINE (or unknown): not the fair class.
    RealTime,
    /// Someone else narrowed its affinity.
    AffinityNarrowed,
    /// Excluded by rule `rule` (0-based).
    Excluded {
        rule: usize,
    },
}

/// Why a thread has its class.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Reason {
    /// Not measured over a whole interval yet.
    New,
    /// Its decayed peak against the thresholds.
    Peak { peak: f64 },
    /// Its wake-up behaviour.
    Behaviour {
        wakeups_per_s: f64,
        run_per_wakeup_ms: f64,
        rate_cv: f64,
    },
    /// Rule `rule` (0-based) forces it.
    Rule { rule: usize },
}

/// A thread's class and the reason for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub class: Class,
    pub reason: Reason,
    pub peak: f64,
}

/// Matches `text` against a glob with `*` (any run) and `?` (one char).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The first rule matching the thread, with its index.
pub fn first_rule<'a>(rules: &'a [Rule], t: &ThreadSample) -> Option<(usize, &'a Rule)> {
    let m = |pat: &Option<String>, val: Option<&str>| match pat {
        None => true,
        Some(p) => val.is_some_and(|v| glob_match(p, v)),
    };
    rules.iter().enumerate().find(|(_, r)| {
        m(&r.comm, Some(&*t.comm))
            && m(&r.exe, t.exe.as_deref())
            && m(&r.cgroup, t.cgroup.as_deref())
            && r.uid.is_none_or(|u| u == t.uid)
    })
}

/// Whether corral may manage the thread at all.
pub fn eligibility(rules: &[Rule], t: &ThreadSample) -> Result<Option<(usize, Class)>, Unmanaged> {
    if t.kernel_thread {
        return Err(Unmanaged::KernelThread);
    }
    if !t.policy.is_fair() {
        return Err(Unmanaged::RealTime);
    }
    let rule = first_rule(rules, t);
    if let Some((i, r)) = rule {
        if r.exclude {
            return Err(Unmanaged::Excluded { rule: i });
        }
    }
    if t.affinity_narrowed {
        return Err(Unmanaged::AffinityNarrowed);
    }
    Ok(rule.and_then(|(i, r)| r.class.map(|c| (i, c))))
}

#[derive(Debug, Clone)]
struct State {
    peak: f64,
    intensity: Class,
    latency: bool,
    /// Consecutive intervals the latency behaviour held (or, once in the
    /// class, failed).
    streak: u32,
    rates: VecDeque<f64>,
}

impl State {
    fn new() -> State {
        State {
            peak: 0.0,
            intensity: Class::Light,
            latency: false,
            streak: 0,
            rates: VecDeque::new(),
        }
    }
}

/// Fast samples a young thread needs before its wake-ups can be called
/// regular (and so latency-critical).
pub const YOUNG_SAMPLES: usize = 3;

/// Classifies threads interval by interval; keeps per-thread state.
#[derive(Debug)]
pub struct Classifier {
    cfg: ClassifyConfig,
    states: HashMap<u32, State>,
}

impl Classifier {
    pub fn new(cfg: ClassifyConfig) -> Classifier {
        Classifier {
            cfg,
            states: HashMap::new(),
        }
    }

    /// The intensity class for `peak`, given the current one (hysteresis).
    fn intensity(&self, current: Class, peak: f64) -> Class {
        let level = |p: f64| {
            if p >= self.cfg.heavy {
                Class::Heavy
            } else if p >= self.cfg.medium {
                Class::Medium
            } else {
                Class::Light
            }
        };
        let up = level(peak);
        let down = level(peak + self.cfg.hysteresis);
        if up > current {
            up
        } else if down < current {
            down
        } else {
            current
        }
    }

    /// Folds one interval of `tid` into its state and returns its verdict.
    /// `stats` is `None` for a thread seen for the first time.
    pub fn update(&mut self, tid: u32, stats: Option<&ThreadStats>) -> Verdict {
        let Some(s) = stats else {
            let st = self.states.entry(tid).or_insert_with(State::new);
            return Verdict {
                class: if st.latency {
                    Class::LatencyCritical
                } else {
                    st.intensity
                },
                reason: Reason::New,
                peak: st.peak,
            };
        };
        let cfg = self.cfg.clone();
        let decay = (-(s.interval_ns as f64 / 1e9) / cfg.peak_half_life_s).exp2();
        let mut st = self.states.remove(&tid).unwrap_or_else(State::new);
        st.peak = s.util.max(st.peak * decay);
        st.intensity = self.intensity(st.intensity, st.peak);

        let lc = &cfg.latency_critical;
        st.rates.push_back(s.wakeups_per_s);
        while st.rates.len() > lc.intervals as usize {
            st.rates.pop_front();
        }
        let cv = coefficient_of_variation(&st.rates);
        let behaves = lc.enabled
            && st.intensity == Class::Light
            && s.util <= lc.max_util
            && s.wakeups_per_s >= lc.min_wakeups_per_s
            && s.run_per_wakeup_ns <= lc.max_run_per_wakeup_ms * 1e6
            // Regularity is asked to enter the class, not to stay: one odd
            // interval would otherwise poison the window for `intervals`.
            && (st.latency || cv <= lc.max_rate_cv);
        // The streak counts intervals that argue for a change of state.
        if behaves != st.latency {
            st.streak += 1;
            if st.streak >= lc.intervals || (st.latency && st.intensity != Class::Light) {
                st.latency = behaves;
                st.streak = 0;
            }
        } else {
            st.streak = 0;
        }
        let verdict = if st.latency {
            Verdict {
                class: Class::LatencyCritical,
                reason: Reason::Behaviour {
                    wakeups_per_s: s.wakeups_per_s,
                    run_per_wakeup_ms: s.run_per_wakeup_ns / 1e6,
                    rate_cv: cv,
                },
                peak: st.peak,
            }
        } else {
            Verdict {
                class: st.intensity,
                reason: Reason::Peak { peak: st.peak },
                peak: st.peak,
            }
        };
        self.states.insert(tid, st);
        verdict
    }

    /// A young thread's verdict from its first `window` (from its first
    /// read to now) and the wake-up rates of the fast samples within it,
    /// as (wake-ups/s, seconds) pairs; `None` while it looks light (the
    /// intervals decide later).
    ///
    /// Heavy and medium by the window's utilisation (it lifts the peak as
    /// an interval would), and only once `full` (the window reached
    /// `young_min_ms`): a CPU-bound thread's share over a shorter window
    /// says more about which run queue it landed on than about what it
    /// wants (three stress-ng workers on 2 CPUs read 1.0, 0.5, 0.5 over
    /// 120 ms, and one got a dedicated CPU the others then lacked: 1.06 x
    /// the kernel's time in `lab real`). Latency-critical by the interval
    /// rules applied to the window, with regularity judged on the fast
    /// samples (at least [`YOUNG_SAMPLES`]): a periodic thread of rate r wakes r × d times in a sample of
    /// d seconds, rounded either way, so each sample's count must be within
    /// 1 + `max_rate_cv` × r × d of r × d, with r the window's rate and at
    /// least one wake-up expected per sample. A thread woken by events
    /// (a compiler's helper threads, a build tool reading its children's
    /// output) has counts like 0, 12, 3 and waits for the intervals.
    pub fn young(
        &mut self,
        tid: u32,
        window: &ThreadStats,
        rates: &[(f64, f64)],
        full: bool,
    ) -> Option<Verdict> {
        let cfg = self.cfg.clone();
        let lc = &cfg.latency_critical;
        let mut st = self.states.remove(&tid).unwrap_or_else(State::new);
        if full {
            st.peak = st.peak.max(window.util);
            st.intensity = self.intensity(st.intensity, st.peak);
        }
        let regular = rates.len() >= YOUNG_SAMPLES && {
            let woke: f64 = rates.iter().map(|(r, d)| r * d).sum();
            let secs: f64 = rates.iter().map(|(_, d)| d).sum();
            let rate = woke / secs;
            rates.iter().all(|&(r, d)| {
                let expected = rate * d;
                expected >= 1.0 && (r * d - expected).abs() <= 1.0 + lc.max_rate_cv * expected
            })
        };
        if lc.enabled
            && st.intensity == Class::Light
            && window.util <= lc.max_util
            && window.wakeups_per_s >= lc.min_wakeups_per_s
            && window.run_per_wakeup_ns <= lc.max_run_per_wakeup_ms * 1e6
            && regular
        {
            st.latency = true;
            st.streak = 0;
            // The interval rules take over with this window's rate.
            st.rates.clear();
            st.rates.push_back(window.wakeups_per_s);
        }
        let verdict = if st.latency {
            Some(Verdict {
                class: Class::LatencyCritical,
                reason: Reason::Behaviour {
                    wakeups_per_s: window.wakeups_per_s,
                    run_per_wakeup_ms: window.run_per_wakeup_ns / 1e6,
                    rate_cv: 0.0,
                },
                peak: st.peak,
            })
        } else if st.intensity != Class::Light {
            Some(Verdict {
                class: st.intensity,
                reason: Reason::Peak { peak: st.peak },
                peak: st.peak,
            })
        } else {
            None
        };
        self.states.insert(tid, st);
        verdict
    }

    /// The verdict of `tid` as it stands, without folding in an interval:
    /// for a boosted thread, whose CPU use while boosted says nothing of
    /// what it needs when it is not.
    pub fn hold(&mut self, tid: u32) -> Verdict {
        match self.states.get(&tid) {
            None => self.update(tid, None),
            Some(st) => Verdict {
                class: if st.latency {
                    Class::LatencyCritical
                } else {
                    st.intensity
                },
                reason: Reason::Peak { peak: st.peak },
                peak: st.peak,
            },
        }
    }

    /// Forgets threads not in `alive`.
    pub fn retain(&mut self, alive: impl Fn(u32) -> bool) {
        self.states.retain(|tid, _| alive(*tid));
    }
}

fn coefficient_of_variation(xs: &VecDeque<f64>) -> f64 {
    if xs.is_empty() {
        return f64::INFINITY;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return f64::INFINITY;
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    var.sqrt() / mean
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::tests::sample;

    const SEC: u64 = 1_000_000_000;

    fn stats(util: f64, wakeups: f64) -> ThreadStats {
        ThreadStats {
            interval_ns: SEC,
            util,
            wakeups_per_s: wakeups,
            run_per_wakeup_ns: if wakeups > 0.0 {
                util * 1e9 / wakeups
            } else {
                util * 1e9
            },
            ..Default::default()
        }
    }

    #[test]
    fn thresholds() {
        let mut c = Classifier::new(ClassifyConfig::default());
        assert_eq!(c.update(1, Some(&stats(0.9, 1.0))).class, Class::Heavy);
        assert_eq!(c.update(2, Some(&stats(0.4, 1.0))).class, Class::Medium);
        assert_eq!(c.update(3, Some(&stats(0.1, 1.0))).class, Class::Light);
        assert_eq!(c.update(4, None).reason, Reason::New);
    }

    #[test]
    fn hysteresis_stops_flapping_at_a_threshold() {
        let cfg = ClassifyConfig {
            peak_half_life_s: 0.001,
            ..Default::default()
        };
        let mut c = Classifier::new(cfg);
        // A thread hovering around 0.50 (±0.03) stays heavy once heavy...
        assert_eq!(c.update(1, Some(&stats(0.51, 0.0))).class, Class::Heavy);
        for u in [0.47, 0.52, 0.48, 0.46, 0.53, 0.47] {
            assert_eq!(
                c.update(1, Some(&stats(u, 0.0))).class,
                Class::Heavy,
                "at {u}"
            );
        }
        // ...and leaves only once clearly below the band.
        assert_eq!(c.update(1, Some(&stats(0.44, 0.0))).class, Class::Medium);
        for u in [0.49, 0.46, 0.49] {
            assert_eq!(
                c.update(1, Some(&stats(u, 0.0))).class,
                Class::Medium,
                "at {u}"
            );
        }
        assert_eq!(c.update(1, Some(&stats(0.50, 0.0))).class, Class::Heavy);
    }

    #[test]
    fn peak_decays_with_its_half_life() {
        let mut c = Classifier::new(ClassifyConfig::default());
        assert_eq!(c.update(1, Some(&stats(0.9, 0.0))).class, Class::Heavy);
        // Idle afterwards: 0.9 * 2^(-t/10) stays >= 0.45 for 10 s.
        let mut v = None;
        for _ in 0..9 {
            v = Some(c.update(1, Some(&stats(0.0, 0.0))));
        }
        assert_eq!(v.unwrap().class, Class::Heavy);
        let v = c.update(1, Some(&stats(0.0, 0.0))); // t = 10 s: 0.45
        assert!((v.peak - 0.45).abs() < 1e-9, "{}", v.peak);
        let v = c.update(1, Some(&stats(0.0, 0.0))); // t = 11 s: 0.42
        assert_eq!(v.class, Class::Medium);
    }

    #[test]
    fn periodic_short_bursts_become_latency_critical_and_stay() {
        let mut c = Classifier::new(ClassifyConfig::default());
        // 10 ms period, 1 ms run: 100 wake-ups/s, util 0.10.
        let v: Vec<Class> = (0..4)
            .map(|_| c.update(1, Some(&stats(0.10, 100.0))).class)
            .collect();
        assert_eq!(
            v,
            [
                Class::Light,
                Class::Light,
                Class::LatencyCritical,
                Class::LatencyCritical
            ]
        );
        // One odd interval does not drop it; three do.
        assert_eq!(
            c.update(1, Some(&stats(0.10, 2.0))).class,
            Class::LatencyCritical
        );
        assert_eq!(
            c.update(1, Some(&stats(0.10, 100.0))).class,
            Class::LatencyCritical
        );
        for _ in 0..2 {
            assert_eq!(
                c.update(1, Some(&stats(0.10, 2.0))).class,
                Class::LatencyCritical
            );
        }
        assert_eq!(c.update(1, Some(&stats(0.10, 2.0))).class, Class::Light);
    }

    #[test]
    fn irregular_or_long_runs_are_not_latency_critical() {
        let mut c = Classifier::new(ClassifyConfig::default());
        for w in [20.0, 200.0, 20.0, 200.0, 20.0, 200.0] {
            assert_eq!(c.update(1, Some(&stats(0.10, w))).class, Class::Light);
        }
        // 10 ms runs per wake-up.
        for _ in 0..5 {
            assert_eq!(c.update(2, Some(&stats(0.15, 15.0))).class, Class::Light);
        }
    }

    #[test]
    fn a_young_thread_is_latency_critical_only_when_its_samples_are_regular() {
        let mut c = Classifier::new(ClassifyConfig::default());
        // 10 ms period, 1 ms runs: 150 ms window, 50 ms samples of 5 ± 1.
        let window = ThreadStats {
            run_per_wakeup_ns: 1e6,
            ..stats(0.1, 100.0)
        };
        let periodic = [(100.0, 0.05), (120.0, 0.05), (80.0, 0.05)];
        assert_eq!(
            c.young(1, &window, &periodic, false).map(|v| v.class),
            Some(Class::LatencyCritical)
        );
        // The same wake-ups in bursts: 0, 12, 3 per sample.
        let bursty = [(0.0, 0.05), (240.0, 0.05), (60.0, 0.05)];
        assert_eq!(c.young(2, &window, &bursty, true).map(|v| v.class), None);
        // Two samples are too few to call anything regular.
        assert_eq!(
            c.young(3, &window, &periodic[..2], true).map(|v| v.class),
            None
        );
        // Under one wake-up expected per sample: rounding is all there is.
        let slow = ThreadStats {
            run_per_wakeup_ns: 1e6,
            ..stats(0.01, 12.0)
        };
        let sparse = [(20.0, 0.05), (0.0, 0.05), (20.0, 0.05)];
        assert_eq!(c.young(4, &slow, &sparse, true).map(|v| v.class), None);
    }

    #[test]
    fn a_young_thread_gets_an_intensity_only_from_a_full_window() {
        let mut c = Classifier::new(ClassifyConfig::default());
        let hog = stats(1.0, 1.0);
        let samples = [(1.0, 0.04); 3];
        assert_eq!(c.young(1, &hog, &samples, false).map(|v| v.class), None);
        assert_eq!(c.hold(1).peak, 0.0, "a short window lifts no peak");
        assert_eq!(
            c.young(1, &hog, &samples, true).map(|v| v.class),
            Some(Class::Heavy)
        );
    }

    #[test]
    fn hold_does_not_fold_in_an_interval() {
        let mut c = Classifier::new(ClassifyConfig::default());
        c.update(1, Some(&stats(0.1, 1.0)));
        assert_eq!(c.hold(1).class, Class::Light);
        assert!((c.hold(1).peak - 0.1).abs() < 1e-12);
        assert_eq!(c.update(1, Some(&stats(0.1, 1.0))).class, Class::Light);
    }

    #[test]
    fn globs() {
        assert!(glob_match("AudioTrack*", "AudioTrack"));
        assert!(glob_match("AudioTrack*", "AudioTrackThr"));
        assert!(glob_match("*.slice/*", "/system.slice/cron.service"));
        assert!(glob_match("t?", "t1"));
        assert!(!glob_match("t?", "t12"));
        assert!(!glob_match("a*b", "acbd"));
        assert!(glob_match("*", ""));
    }

    #[test]
    fn eligibility_rules() {
        use crate::sample::Policy;
        let rules = vec![
            Rule {
                comm: Some("skip*".into()),
                exclude: true,
                ..Default::default()
            },
            Rule {
                comm: Some("audio".into()),
                class: Some(Class::LatencyCritical),
                ..Default::default()
            },
        ];
        let mut t = sample(1, 0, 0);
        assert_eq!(eligibility(&rules, &t), Ok(None));
        t.comm = "audio".into();
        assert_eq!(
            eligibility(&rules, &t),
            Ok(Some((1, Class::LatencyCritical)))
        );
        t.comm = "skipme".into();
        assert_eq!(
            eligibility(&rules, &t),
            Err(Unmanaged::Excluded { rule: 0 })
        );
        t.comm = "x".into();
        t.policy = Policy::Fifo;
        assert_eq!(eligibility(&rules, &t), Err(Unmanaged::RealTime));
        t.policy = Policy::Batch;
        t.kernel_thread = true;
        assert_eq!(eligibility(&rules, &t), Err(Unmanaged::KernelThread));
        t.kernel_thread = false;
        t.affinity_narrowed = true;
        assert_eq!(eligibility(&rules, &t), Err(Unmanaged::AffinityNarrowed));
    }
}
