//! Platform files: the simulated machine in TOML.
//!
//! ```toml
//! kernel = "eevdf"                      # any of models::NAMES; optional
//! features = "NO_RUN_TO_PARITY"         # sched_feat switches (EEVDF), optional
//! hz = 250                              # CONFIG_HZ
//! tick_phase = "2ms"                    # first tick (default: half a tick in)
//! timer_slack = "50us"                  # timer_slack_ns of normal tasks' sleeps
//! vcpu_pack_util = 715                  # a guest kernel that packs work onto
//!                                       # busy vCPUs under this utilization
//!                                       # (`corral lab placement` measures it,
//!                                       # a `corral record`ing carries it; 0:
//!                                       # none, as upstream Linux)
//! run_spread = [0.99, 1.0, 1.0, 1.07]   # how rt-app's `run` varies live: each
//!                                       # run takes its length times one of
//!                                       # these, drawn (none: exact); or by
//!                                       # length, as many factors at each: a
//!                                       # run between two lengths takes the
//!                                       # same factor between theirs by
//!                                       # log(length), one outside them the
//!                                       # nearest length's (`corral lab
//!                                       # validate` measures it):
//! # run_spread = { "140us" = [0.98, 1.0, 1.17], "5ms" = [0.99, 1.0, 1.03] }
//! timer_wakeup_spread = [0.9, 1.0, 1.1, 4.8]  # how a timer's wake-up onto
//!                                       # an idle CPU varies live: each
//!                                       # costs [costs] timer_wakeup times
//!                                       # one of these, drawn (none: exact;
//!                                       # `corral lab validate` measures it)
//! capacities = [1024, 1024, 446, 446]   # or: cpus = 4 (all 1024); neither: 2,
//!                                       # or as many as a recording was made on
//! hotplug = ["2s:cpu1=off", "5s:cpu1=on"]
//! offline = [2, 3]                      # CPUs offline at the start
//!
//! [governor]                            # a load-driven hot-plug governor
//! period_ms = 50                        # (machine::Governor)
//! up_util = 0.8
//! up_samples = 2
//! down_util = 0.2
//! down_samples = 20
//!
//! [costs]                               # the scheduler's own work (machine::Costs),
//! context_switch = "2.1us"              # as `corral lab costs` measures it;
//! wakeup = "30us"                       # each optional, nil by default
//! timer_wakeup = "100us"                # (timer_wakeup: wakeup's when not given)
//! timer_preempt = "20us"
//! migration = "40us"
//! tick = "3us"
//! waker = "10us"                       # (waker_local: waker's when not given)
//! waker_local = "2us"
//!
//! [groups."/bg"]                        # cpu controller groups
//! shares = 52
//! quota_us = 50000                      # CPU bandwidth: quota per period
//! period_us = 100000
//!
//! [[boost]]                             # for `--policy corral`: the framework
//! task = "handler"                      # asks corral to boost this rt-app task
//! at = "1s"                             # at 1 s,
//! every = "200ms"                       # then every 200 ms (optional), or
//! # on_wake = true                      # at each of its wake-ups from `at` on
//! until = "9s"                          # up to 9 s (optional)
//! max_ms = 250                          # the request's cap (optional)
//! ```
//!
//! Unknown keys are refused, with the file, line and key.

use crate::engine::Ns;
use crate::error::Error;
use crate::sched::machine::Platform;
use serde::Deserialize;
use std::collections::BTreeMap;

/// A cgroup of the cpu controller and its settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    #[serde(default)]
    pub shares: Option<u64>,
    #[serde(default)]
    pub quota_us: Option<u64>,
    #[serde(default = "default_period")]
    pub period_us: u64,
}

fn default_period() -> u64 {
    100_000
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    kernel: Option<String>,
    features: Option<String>,
    hz: Option<u32>,
    tick_phase: Option<String>,
    timer_slack: Option<String>,
    vcpu_pack_util: Option<u64>,
    run_spread: Option<SpreadEntry>,
    timer_wakeup_spread: Option<Vec<f64>>,
    cpus: Option<usize>,
    capacities: Option<Vec<u32>>,
    #[serde(default)]
    hotplug: Vec<String>,
    #[serde(default)]
    groups: BTreeMap<String, GroupSpec>,
    #[serde(default)]
    boost: Vec<BoostEntry>,
    #[serde(default)]
    offline: Vec<usize>,
    governor: Option<GovernorEntry>,
    costs: Option<CostsEntry>,
}

/// `run_spread`: factors for runs of every length, or by length.
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "run_spread: a list of factors, or a table of them by run length"
)]
enum SpreadEntry {
    Every(Vec<f64>),
    ByLength(BTreeMap<String, Vec<f64>>),
}

/// `run_spread` as the machine takes it (`Platform::run_spread`): by
/// length, ascending, as many factors at each length, each 0.5 to 2.
fn run_spread(e: Option<&SpreadEntry>, at: At) -> Result<Vec<(Ns, Vec<f64>)>, Error> {
    let mut spread = match e {
        None => return Ok(Vec::new()),
        Some(SpreadEntry::Every(f)) if f.is_empty() => return Ok(Vec::new()),
        Some(SpreadEntry::Every(f)) => vec![(0, f.clone())],
        Some(SpreadEntry::ByLength(m)) => m
            .iter()
            .map(|(l, f)| match parse_time(l).filter(|&ns| ns > 0) {
                Some(ns) => Ok((ns, f.clone())),
                None => Err(at(
                    "run_spread",
                    format!("{l:?} is not a run's length (\"140us\", \"5ms\")"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    spread.sort_by_key(|(l, _)| *l);
    if let Some(w) = spread.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(at(
            "run_spread",
            format!("{} µs is given twice", w[0].0 / 1000),
        ));
    }
    let n = spread.first().map_or(0, |(_, f)| f.len());
    if let Some((l, f)) = spread.iter().find(|(_, f)| f.len() != n || n == 0) {
        return Err(at(
            "run_spread",
            format!(
                "{} factors at {} µs where the first length has {n}: each length needs as many, one or more",
                f.len(),
                l / 1000
            ),
        ));
    }
    if let Some(x) = spread
        .iter()
        .flat_map(|(_, f)| f)
        .find(|x| !(0.5..=2.0).contains(*x))
    {
        return Err(at(
            "run_spread",
            format!("{x} is not a factor of a run's length (0.5 to 2)"),
        ));
    }
    Ok(spread)
}

/// `[costs]`: times as `"2.5us"`, `"0.1ms"` (`corral lab costs` prints
/// this machine's).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CostsEntry {
    context_switch: Option<String>,
    wakeup: Option<String>,
    timer_wakeup: Option<String>,
    timer_preempt: Option<String>,
    migration: Option<String>,
    tick: Option<String>,
    waker: Option<String>,
    waker_local: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GovernorEntry {
    period_ms: f64,
    up_util: f64,
    up_samples: u32,
    down_util: f64,
    down_samples: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BoostEntry {
    task: String,
    at: String,
    every: Option<String>,
    #[serde(default)]
    on_wake: bool,
    until: Option<String>,
    max_ms: Option<u64>,
}

/// What a platform file describes.
#[derive(Debug, Clone, PartialEq)]
pub struct PlatformSpec {
    pub platform: Platform,
    pub kernel: Option<crate::models::Model>,
    /// The fair class's `sched_feat` switches (EEVDF reads them).
    pub features: crate::sched::features::Features,
    pub groups: BTreeMap<String, GroupSpec>,
    /// Boosts the framework asks corral for (`--policy corral`).
    pub boosts: Vec<crate::corral::policy::BoostScript>,
    /// Whether the file set `tick_phase` (else a recording's own start
    /// may place the tick grid).
    pub tick_phase_given: bool,
    /// Whether the file set `cpus` or `capacities` (else a recording
    /// replays on as many CPUs as it was made on, a workload on 2: a
    /// file of `corral lab costs`' `[costs]` alone describes the costs,
    /// not the machine's size).
    pub cpus_given: bool,
}

impl PlatformSpec {
    /// `ncpus` CPUs of capacity 1024 at HZ 250 (the first tick half a
    /// tick in, as a platform file's), no kernel named, every switch on,
    /// no group and no boost.
    pub fn uniform(ncpus: usize) -> PlatformSpec {
        let mut platform = crate::sched::machine::Platform::uniform(ncpus);
        platform.tick_phase = 1_000_000_000 / platform.hz as Ns / 2;
        PlatformSpec {
            platform,
            kernel: None,
            features: Default::default(),
            groups: Default::default(),
            boosts: Vec::new(),
            tick_phase_given: false,
            cpus_given: false,
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Where a platform file's key is: `FILE:LINE: key: message`.
type At<'a> = &'a dyn Fn(&str, String) -> Error;

/// The key a line of TOML sets (`key = …`, the key bare or quoted), if
/// it sets one: not a table's header, nor a later line of an array.
fn key_of(line: &str) -> Option<&str> {
    let (k, _) = line.split_once('=')?;
    let k = k.trim();
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let quoted =
        k.len() >= 2 && k.starts_with('"') && k.ends_with('"') && !k[1..k.len() - 1].contains('"');
    if bare {
        Some(k)
    } else if quoted {
        Some(&k[1..k.len() - 1])
    } else {
        None
    }
}

/// Parses a platform file; errors read `FILE:LINE: key: message`.
pub fn parse(text: &str, file: &str) -> Result<PlatformSpec, Error> {
    let f: File = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
        // The key the value belongs to, when its line starts with one
        // (`key = …`): toml's message names the type, not the key.
        let key = (line > 0)
            .then(|| text.lines().nth(line - 1))
            .flatten()
            .and_then(key_of)
            .filter(|k| !e.message().contains(k));
        match key {
            Some(k) => Error::Platform(format!("{file}:{line}: {k}: {}", e.message().trim())),
            None => Error::Platform(format!("{file}:{line}: {}", e.message().trim())),
        }
    })?;
    let at = |key: &str, msg: String| {
        // The key's own line (`timer_wakeup` is not `timer_wakeup_spread`),
        // else the first that starts with it (a table's).
        let line = text
            .lines()
            .position(|l| key_of(l) == Some(key))
            .or_else(|| text.lines().position(|l| l.trim_start().starts_with(key)))
            .map_or(0, |i| i + 1);
        Error::Platform(format!("{file}:{line}: {key}: {msg}"))
    };
    let cpus_given = f.cpus.is_some() || f.capacities.is_some();
    if !cpus_given {
        // What names a CPU needs to know how many there are.
        for (key, names) in [
            ("hotplug", !f.hotplug.is_empty()),
            ("offline", !f.offline.is_empty()),
        ] {
            if names {
                return Err(at(
                    key,
                    "names CPUs: give the machine's `cpus` or `capacities` too".into(),
                ));
            }
        }
    }
    let capacities = capacities(f.cpus, f.capacities, &at)?;
    let hz = f.hz.unwrap_or(250);
    if !(100..=1000).contains(&hz) {
        return Err(at("hz", format!("{hz} is not a CONFIG_HZ (100 to 1000)")));
    }
    let tick_phase = tick_phase(f.tick_phase.as_deref(), hz, &at)?;
    let timer_slack = match f.timer_slack.as_deref() {
        None => crate::sched::machine::TIMER_SLACK_NS,
        Some(v) => parse_time(v).ok_or_else(|| {
            at(
                "timer_slack",
                format!("{v:?} is not a time (\"50us\", \"0\")"),
            )
        })?,
    };
    if let Some(u) = f.vcpu_pack_util.filter(|&u| u > 1024) {
        return Err(at(
            "vcpu_pack_util",
            format!("{u} is over a CPU's capacity (1024)"),
        ));
    }
    if f.vcpu_pack_util.is_some() && capacities.iter().any(|&c| c != capacities[0]) {
        // The rule was read off a guest of equal vCPUs; on unequal ones
        // it would keep a misfit task off the bigger CPU.
        return Err(at(
            "vcpu_pack_util",
            "packing is known on CPUs of one capacity only; these differ".into(),
        ));
    }
    let run_spread = run_spread(f.run_spread.as_ref(), &at)?;
    let timer_wakeup_spread = f.timer_wakeup_spread.clone().unwrap_or_default();
    if let Some(x) = timer_wakeup_spread
        .iter()
        .find(|&&x| !(x > 0.0 && x <= 1000.0))
    {
        return Err(at(
            "timer_wakeup_spread",
            format!("{x} is not a factor of a timer wake-up's cost (over 0, at most 1000)"),
        ));
    }
    let kernel = match &f.kernel {
        Some(k) => Some(
            k.parse::<crate::models::Model>()
                .map_err(|e| at("kernel", e.to_string()))?,
        ),
        None => None,
    };
    let features = match &f.features {
        Some(w) => w.parse().map_err(|e| at("features", format!("{e}")))?,
        None => Default::default(),
    };
    let n = capacities.len();
    let hotplug =
        parse_hotplug(&f.hotplug.join(","), n).map_err(|e| at("hotplug", e.to_string()))?;
    check_groups(&f.groups, &at)?;
    if let Some(c) = f.offline.iter().find(|&&c| c >= n) {
        return Err(at("offline", format!("CPU {c} does not exist ({n} CPUs)")));
    }
    if f.offline.len() >= n {
        return Err(at("offline", "at least one CPU must stay online".into()));
    }
    let governor = f.governor.as_ref().map(|g| governor(g, &at)).transpose()?;
    let costs = f
        .costs
        .as_ref()
        .map(|c| costs(c, &at))
        .transpose()?
        .unwrap_or_default();
    let boosts = boosts(&f.boost, &at)?;
    Ok(PlatformSpec {
        platform: Platform {
            capacities,
            hz,
            tick_phase,
            timer_slack,
            vcpu_pack_util: f.vcpu_pack_util,
            run_spread,
            timer_wakeup_spread,
            seed: 0,
            hotplug,
            offline: f.offline,
            governor,
            costs,
        },
        kernel,
        features,
        groups: f.groups,
        boosts,
        tick_phase_given: f.tick_phase.is_some(),
        cpus_given,
    })
}

/// `[costs]`: each a time under a tick's worth (10 ms).
fn costs(c: &CostsEntry, at: At) -> Result<crate::sched::machine::Costs, Error> {
    let time = |key: &str, v: &Option<String>| -> Result<Ns, Error> {
        match v {
            None => Ok(0),
            Some(v) => match parse_time(v) {
                Some(t) if t <= 10_000_000 => Ok(t),
                Some(_) => Err(at(key, format!("{v:?} is over 10 ms"))),
                None => Err(at(key, format!("{v:?} is not a time (e.g. 2.5us, 0.1ms)"))),
            },
        }
    };
    let wakeup = time("wakeup", &c.wakeup)?;
    let waker = time("waker", &c.waker)?;
    Ok(crate::sched::machine::Costs {
        context_switch: time("context_switch", &c.context_switch)?,
        wakeup,
        timer_wakeup: match c.timer_wakeup {
            None => wakeup,
            Some(_) => time("timer_wakeup", &c.timer_wakeup)?,
        },
        timer_preempt: time("timer_preempt", &c.timer_preempt)?,
        migration: time("migration", &c.migration)?,
        tick: time("tick", &c.tick)?,
        waker,
        waker_local: match c.waker_local {
            None => waker,
            Some(_) => time("waker_local", &c.waker_local)?,
        },
    })
}

/// The CPUs of a platform that gives neither `cpus` nor `capacities`
/// (and of `corral sim` without a platform file).
pub const DEFAULT_CPUS: usize = 2;

/// The CPUs' capacities: `cpus` of 1024, or each one given; neither,
/// [`DEFAULT_CPUS`] ([`PlatformSpec::cpus_given`]).
fn capacities(
    cpus: Option<usize>,
    capacities: Option<Vec<u32>>,
    at: At,
) -> Result<Vec<u32>, Error> {
    let capacities = match (cpus, capacities) {
        (Some(_), Some(_)) => {
            return Err(at(
                "capacities",
                "give either cpus or capacities, not both".into(),
            ))
        }
        // Checked before allocating: `cpus = 99999999999` would ask for
        // hundreds of GB (a fuzz find, `corral lab fuzz`).
        (Some(n), None) if !(1..=4096).contains(&n) => {
            return Err(at("cpus", "1 to 4096 CPUs".into()))
        }
        (Some(n), None) => vec![1024; n],
        (None, Some(c)) => c,
        (None, None) => vec![1024; DEFAULT_CPUS],
    };
    if capacities.is_empty() || capacities.len() > 4096 {
        return Err(at("cpus", "1 to 4096 CPUs".into()));
    }
    if capacities.iter().any(|&c| c == 0 || c > 1024) {
        return Err(at("capacities", "each capacity is 1 to 1024".into()));
    }
    Ok(capacities)
}

/// The first tick's time, less than one tick (0: one tick in). By
/// default half a tick: a live workload starts at an arbitrary point of a
/// tick, and a start on a tick would put every expiry of a timer whose
/// period is a multiple of the tick on a tick (rt-app's timers count from
/// the start), a coincidence the kernel almost never meets.
fn tick_phase(phase: Option<&str>, hz: u32, at: At) -> Result<Ns, Error> {
    Ok(match phase {
        None => 1_000_000_000 / hz as Ns / 2,
        Some(v) => match parse_time(v) {
            Some(t) if t < 1_000_000_000 / hz as Ns => t,
            Some(_) => {
                return Err(at(
                    "tick_phase",
                    format!("{v:?} is not less than one tick (1 s / {hz})"),
                ))
            }
            None => {
                return Err(at(
                    "tick_phase",
                    format!("{v:?} is not a time (e.g. 2ms, 500us)"),
                ))
            }
        },
    })
}

/// Each group's path, bandwidth and shares in range.
fn check_groups(groups: &BTreeMap<String, GroupSpec>, at: At) -> Result<(), Error> {
    for (path, g) in groups {
        if !path.starts_with('/') || path == "/" {
            return Err(at(
                "[groups",
                format!("{path:?}: a group path is /name or /a/b"),
            ));
        }
        if g.quota_us.is_some_and(|q| q < 1000) {
            return Err(at("quota_us", format!("{path}: at least 1000 µs")));
        }
        if !(1000..=1_000_000).contains(&g.period_us) {
            return Err(at("period_us", format!("{path}: 1000 to 1000000 µs")));
        }
        if g.shares.is_some_and(|s| !(2..=262_144).contains(&s)) {
            return Err(at("shares", format!("{path}: 2 to 262144")));
        }
    }
    Ok(())
}

/// The load-driven hot-plug governor.
fn governor(g: &GovernorEntry, at: At) -> Result<crate::sched::machine::Governor, Error> {
    if !(g.period_ms > 0.0 && g.period_ms <= 10_000.0) {
        return Err(at("period_ms", "0 to 10000 ms".into()));
    }
    for (key, v) in [("up_util", g.up_util), ("down_util", g.down_util)] {
        if !(0.0..=1.0).contains(&v) {
            return Err(at(key, format!("{v} is not a fraction 0 to 1")));
        }
    }
    if g.up_samples == 0 || g.down_samples == 0 {
        return Err(at("up_samples", "samples are at least 1".into()));
    }
    Ok(crate::sched::machine::Governor {
        period: (g.period_ms * 1e6) as Ns,
        up_util: g.up_util,
        up_samples: g.up_samples,
        down_util: g.down_util,
        down_samples: g.down_samples,
    })
}

/// The framework's scripted boost requests (`--policy corral`).
fn boosts(boost: &[BoostEntry], at: At) -> Result<Vec<crate::corral::policy::BoostScript>, Error> {
    let mut boosts = Vec::new();
    for b in boost {
        let time = |key: &str, v: &str| {
            parse_time(v).ok_or_else(|| at(key, format!("{v:?} is not a time (e.g. 1s, 200ms)")))
        };
        let every = b.every.as_deref().map(|v| time("every", v)).transpose()?;
        if every == Some(0) {
            return Err(at("every", "must be above 0".into()));
        }
        if every.is_some() && b.on_wake {
            return Err(at(
                "on_wake",
                "give either every or on_wake, not both".into(),
            ));
        }
        boosts.push(crate::corral::policy::BoostScript {
            task: b.task.clone(),
            at: time("at", &b.at)?,
            every,
            on_wake: b.on_wake,
            until: b.until.as_deref().map(|v| time("until", v)).transpose()?,
            max_ms: b.max_ms,
        });
    }
    Ok(boosts)
}

/// Parses hot-plug events, "2s:cpu1=off,5500ms:cpu1=on".
pub fn parse_hotplug(spec: &str, ncpus: usize) -> Result<Vec<(Ns, usize, bool)>, Error> {
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let bad = || {
                Error::Platform(format!(
                    "{item:?} is not TIME:cpuN=on|off (e.g. 2s:cpu1=off)"
                ))
            };
            let (t, what) = item.trim().split_once(':').ok_or_else(bad)?;
            let ns = parse_time(t).ok_or_else(bad)?;
            let (cpu, state) = what.split_once('=').ok_or_else(bad)?;
            let cpu: usize = cpu
                .strip_prefix("cpu")
                .ok_or_else(bad)?
                .parse()
                .map_err(|_| bad())?;
            if cpu >= ncpus {
                return Err(Error::Platform(format!(
                    "CPU {cpu} does not exist ({ncpus} CPUs)"
                )));
            }
            let on = match state {
                "on" => true,
                "off" => false,
                _ => return Err(bad()),
            };
            Ok((ns, cpu, on))
        })
        .collect()
}

/// A time: "2s", "2500ms", "300us", or bare seconds ("1.5").
pub fn parse_time(t: &str) -> Option<Ns> {
    let t = t.trim();
    let (num, scale) = if let Some(v) = t.strip_suffix("ms") {
        (v, 1e6)
    } else if let Some(v) = t.strip_suffix("us") {
        (v, 1e3)
    } else if let Some(v) = t.strip_suffix('s') {
        (v, 1e9)
    } else {
        (t, 1e9)
    };
    let v = num.trim().parse::<f64>().ok()? * scale;
    (v.is_finite() && v >= 0.0).then_some(v.round() as Ns)
}

/// What a workload asks of a platform that the platform does not have: a
/// CPU number past its CPUs (`"cpus": [0, 7]` on 2 CPUs), or a group of
/// the platform's that no task runs in or under (`--group-shares
/// bg=52` for a workload whose tasks name no `taskgroup` `/bg`). Either
/// would otherwise be dropped without a word.
pub fn check_fit(work: &crate::input::rtapp::Workload, spec: &PlatformSpec) -> Result<(), Error> {
    let n = spec.platform.capacities.len() as u32;
    for t in &work.tasks {
        let sets = std::iter::once(("", t.cpus.as_ref()))
            .chain(t.phases.iter().map(|p| (p.name.as_str(), p.cpus.as_ref())));
        for (phase, cpus) in sets {
            if let Some(&c) = cpus.into_iter().flatten().find(|&&c| c >= n) {
                let at = if phase.is_empty() {
                    String::new()
                } else {
                    format!(", phase {phase:?}")
                };
                return Err(Error::Platform(format!(
                    "task {:?}{at}: \"cpus\" names CPU {c}, and the platform has {n} (0-{})",
                    t.name,
                    n.saturating_sub(1)
                )));
            }
        }
    }
    for path in spec.groups.keys() {
        let norm = format!("/{}", path.trim_matches('/'));
        let used = work.tasks.iter().any(|t| {
            let g = format!(
                "/{}",
                t.taskgroup.as_deref().unwrap_or("/").trim_matches('/')
            );
            g == norm || g.starts_with(&format!("{norm}/")) || norm == "/"
        });
        if !used {
            let named: std::collections::BTreeSet<&str> = work
                .tasks
                .iter()
                .filter_map(|t| t.taskgroup.as_deref())
                .collect();
            return Err(Error::Platform(format!(
                "group {norm}: no task runs in it (the workload's taskgroups: {})",
                if named.is_empty() {
                    "none, every task is in /".to_string()
                } else {
                    named.into_iter().collect::<Vec<_>>().join(", ")
                }
            )));
        }
    }
    Ok(())
}

/// The machine a platform describes, running `work` under `flavour` with
/// the RT class above it (RT bandwidth as that era had it) and the
/// platform's groups set up.
pub fn build(
    work: crate::input::rtapp::Workload,
    spec: &PlatformSpec,
    flavour: crate::sched::fair::Flavour,
) -> Result<
    crate::sched::machine::Machine<crate::sched::classes::Classes<crate::sched::fair::Fair>>,
    Error,
> {
    use crate::sched::fair::{Fair, Flavour};
    use crate::sched::rt::RtBandwidth;
    let n = spec.platform.capacities.len();
    let hz = spec.platform.hz;
    let bw = match flavour {
        Flavour::Cfs => RtBandwidth::throttling(),
        Flavour::Eevdf => RtBandwidth::fair_server(),
    };
    check_fit(&work, spec)?;
    let k = crate::sched::classes::Classes::new(
        n,
        Fair::new(flavour, n)
            .with_hz(hz)
            .with_features(spec.features),
        bw,
        hz,
    );
    let mut m = crate::sched::machine::Machine::new(spec.platform.clone(), work, k)?;
    for (path, g) in &spec.groups {
        if let Some(s) = g.shares {
            m.set_group_shares(path, s)?;
        }
        if let Some(q) = g.quota_us {
            m.set_group_quota(path, Some(q * 1000), g.period_us * 1000)?;
        }
    }
    Ok(m)
}

/// The machine a platform describes under one of the older run-queue
/// models ([`crate::models::Model::run_queue`]: Linux 2.4, paper 004's
/// multi-level queue, O(1), BFS). They have no group scheduling: a
/// platform with groups is refused.
pub fn build_old(
    work: crate::input::rtapp::Workload,
    spec: &PlatformSpec,
    model: crate::models::Model,
) -> Result<crate::sched::machine::Machine<Box<dyn crate::sched::kernel::SchedClass>>, Error> {
    let n = spec.platform.capacities.len();
    check_fit(&work, spec)?;
    let k = model
        .run_queue(n, spec.platform.hz)
        .ok_or_else(|| Error::Invalid(format!("{model} is not a run-queue model")))?;
    if let Some(g) = spec.groups.keys().next() {
        return Err(Error::unsupported(
            &model.to_string(),
            format!("no group scheduling (group {g})"),
        ));
    }
    crate::sched::machine::Machine::new(spec.platform.clone(), work, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_the_machine_s_size_keeps_the_default_unless_it_names_cpus() {
        // `corral lab costs`' section alone: the default 2 CPUs, marked
        // as not given (a recording then replays on its own).
        let p = parse("[costs]\nwakeup = \"30us\"\n", "p.toml").unwrap();
        assert_eq!(p.platform.capacities, vec![1024, 1024]);
        assert!(!p.cpus_given);
        assert_eq!(p.platform.costs.wakeup, 30_000);
        assert!(parse("cpus = 4\n", "p.toml").unwrap().cpus_given);
        assert!(
            parse("capacities = [1024, 512]\n", "p.toml")
                .unwrap()
                .cpus_given
        );
        // Hot-plug and offline CPUs need the machine's size.
        for (text, line, key) in [
            ("hz = 250\nhotplug = [\"1s:cpu1=off\"]\n", 2, "hotplug"),
            ("offline = [1]\n", 1, "offline"),
        ] {
            let e = parse(text, "p.toml").unwrap_err().to_string();
            assert!(
                e.contains(&format!("p.toml:{line}: {key}: names CPUs")),
                "{e}"
            );
        }
    }

    #[test]
    fn a_full_file_parses() {
        let p = parse(
            r#"kernel = "cfs"
hz = 100
capacities = [1024, 446]
hotplug = ["2s:cpu1=off", "2500ms:cpu1=on"]
[groups."/bg"]
shares = 52
quota_us = 50000
"#,
            "p.toml",
        )
        .unwrap();
        assert_eq!(p.platform.capacities, vec![1024, 446]);
        assert_eq!(p.platform.hz, 100);
        assert_eq!(
            p.platform.hotplug,
            vec![(2_000_000_000, 1, false), (2_500_000_000, 1, true)]
        );
        assert_eq!(p.groups["/bg"].period_us, 100_000);
        assert_eq!(p.kernel.map(|k| k.to_string()).as_deref(), Some("cfs"));
        let p = parse(
            "cpus = 2\n[[boost]]\ntask = \"h\"\nat = \"1s\"\nevery = \"200ms\"\nmax_ms = 90\n",
            "p.toml",
        )
        .unwrap();
        assert_eq!(
            p.boosts,
            vec![crate::corral::policy::BoostScript {
                task: "h".into(),
                at: 1_000_000_000,
                every: Some(200_000_000),
                until: None,
                max_ms: Some(90),
                on_wake: false,
            }]
        );
    }

    #[test]
    fn a_timer_wakeup_spread_is_a_list_of_positive_factors() {
        let p = parse(
            "cpus = 2\ntimer_wakeup_spread = [0.8, 1.0, 5.2]\n",
            "p.toml",
        )
        .unwrap();
        assert_eq!(p.platform.timer_wakeup_spread, [0.8, 1.0, 5.2]);
        assert!(parse("cpus = 2\n", "p.toml")
            .unwrap()
            .platform
            .timer_wakeup_spread
            .is_empty());
        let e = parse("cpus = 2\ntimer_wakeup_spread = \"x\"\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("p.toml:2: timer_wakeup_spread: invalid type"),
            "{e}"
        );
        // A bad element on an array's later line names no key (its "="
        // is inside a string), and a `[costs]` key is not taken for the
        // spread that starts with its name.
        let e = parse("cpus = 2\nhotplug = [\n \"2s:cpu1=off\", 3 ]\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.toml:3: invalid type"), "{e}");
        let e = parse(
            "cpus = 2\ntimer_wakeup_spread = [1.0]\n[costs]\ntimer_wakeup = \"soon\"\n",
            "p.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("p.toml:4: timer_wakeup: "), "{e}");
        for bad in ["0.0", "-1.0", "1500.0", "nan"] {
            let e = parse(
                &format!("cpus = 2\ntimer_wakeup_spread = [1.0, {bad}]\n"),
                "p.toml",
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.starts_with("p.toml:2: timer_wakeup_spread: ") && e.contains("not a factor"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_run_spread_is_a_list_of_factors_near_one() {
        let p = parse("cpus = 2\nrun_spread = [0.99, 1.0, 1.07]\n", "p.toml").unwrap();
        assert_eq!(p.platform.run_spread, [(0, vec![0.99, 1.0, 1.07])]);
        let p = parse(
            "cpus = 2\nrun_spread = { \"20ms\" = [0.99, 1.02], \"5ms\" = [0.99, 1.03] }\n",
            "p.toml",
        )
        .unwrap();
        // By length, not as the keys sort ("20ms" before "5ms").
        assert_eq!(
            p.platform.run_spread,
            [
                (5_000_000, vec![0.99, 1.03]),
                (20_000_000, vec![0.99, 1.02])
            ]
        );
        let e = parse(
            "cpus = 2\nrun_spread = { \"1ms\" = [1.0], \"1000us\" = [1.1] }\n",
            "p.toml",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(e, "p.toml:2: run_spread: 1000 µs is given twice");
        assert!(parse("cpus = 2\n", "p.toml")
            .unwrap()
            .platform
            .run_spread
            .is_empty());
        let e = parse("cpus = 2\nrun_spread = [1.0, 3.0]\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "p.toml:2: run_spread: 3 is not a factor of a run's length (0.5 to 2)"
        );
        let e = parse(
            "cpus = 2\nrun_spread = { \"5ms\" = [0.99, 1.03], \"140us\" = [1.0] }\n",
            "p.toml",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "p.toml:2: run_spread: 2 factors at 5000 µs where the first length has 1: each length needs as many, one or more"
        );
        let e = parse("cpus = 2\nrun_spread = { \"long\" = [1.0] }\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("p.toml:2: run_spread: \"long\" is not a run's length"),
            "{e}"
        );
    }

    #[test]
    fn a_packing_guest_s_threshold_is_read_and_kept_under_a_cpu() {
        let p = parse("cpus = 2\nvcpu_pack_util = 715\n", "p.toml").unwrap();
        assert_eq!(p.platform.vcpu_pack_util, Some(715));
        let p = parse("cpus = 2\n", "p.toml").unwrap();
        assert_eq!(p.platform.vcpu_pack_util, None);
        let e = parse("cpus = 2\nvcpu_pack_util = 2048\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "p.toml:2: vcpu_pack_util: 2048 is over a CPU's capacity (1024)"
        );
        let e = parse("capacities = [1024, 446]\nvcpu_pack_util = 700\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "p.toml:2: vcpu_pack_util: packing is known on CPUs of one capacity only; these differ"
        );
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = parse("cpus = 2\nhz = 7\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "p.toml:2: hz: 7 is not a CONFIG_HZ (100 to 1000)");
        let e = parse("cpus = 2\nspeed = 3\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.toml:2: unknown field `speed`"), "{e}");
        let e = parse("cpus = 2\nhotplug = [\"1s:cpu5=off\"]\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "p.toml:2: hotplug: CPU 5 does not exist (2 CPUs)");
        let e = parse("cpus = 1\n[groups.\"/g\"]\nshares = 1\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "p.toml:3: shares: /g: 2 to 262144");
        let e = parse(
            "cpus = 1\n[[boost]]\ntask = \"x\"\nat = \"soon\"\n",
            "p.toml",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(e, "p.toml:4: at: \"soon\" is not a time (e.g. 1s, 200ms)");
        let e = parse("cpus = 1\ntick_phase = \"4ms\"\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "p.toml:2: tick_phase: \"4ms\" is not less than one tick (1 s / 250)"
        );
    }

    #[test]
    fn ticks_fall_on_the_tick_phase_grid() {
        // Two hogs on one CPU switch only at a tick (PREEMPT_NONE, no
        // hrtick): every run slice but the last ends on the grid
        // `tick_phase + k · 4 ms`.
        let json = r#"{"tasks": {"hog": {"instance": 2, "loop": -1, "run": 100000}}}"#;
        for (phase, at) in [("0ms", 0), ("1500us", 1_500_000), ("3ms", 3_000_000)] {
            let spec = parse(&format!("cpus = 1\ntick_phase = \"{phase}\"\n"), "p").unwrap();
            assert_eq!(spec.platform.tick_phase, at);
            let w = crate::input::rtapp::parse(json, "w").unwrap();
            let mut m = build(w, &spec, crate::sched::fair::Flavour::Eevdf).unwrap();
            m.record();
            m.run_until(100_000_000);
            let ends: Vec<u64> = m.slices().iter().map(|s| s.end).collect();
            assert!(ends.len() > 10, "{phase}: {ends:?}");
            for end in &ends[..ends.len() - 1] {
                assert_eq!((end + 4_000_000 - at) % 4_000_000, 0, "{phase}: {ends:?}");
            }
        }
    }

    #[test]
    fn a_huge_cpu_count_is_refused_before_allocating() {
        let e = parse("cpus = 99999999999\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("p.toml:1: cpus: 1 to 4096 CPUs"), "{e}");
        assert!(parse("cpus = 0\n", "p.toml").is_err());
    }
}
