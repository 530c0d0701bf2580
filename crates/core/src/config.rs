//! corral's configuration: TOML, parsed and validated with no I/O.
//!
//! Two stages, as ripgrep parses arguments: [`Config::parse`] checks the
//! text (unknown keys, wrong types, inconsistent values) and every error
//! names the line and the key; resolving it against a topology is the
//! planner's business. The defaults live in one place, `default.toml`,
//! embedded in the binary ([`DEFAULT_TOML`]); a test pins that
//! [`Config::default`] equals it.

use crate::classify::{ClassifyConfig, Rule};
use crate::plan::PlanConfig;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The default configuration, commented: `corral config default` prints it.
pub const DEFAULT_TOML: &str = include_str!("default.toml");

/// Which cgroup interface the daemon uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupChoice {
    Auto,
    V1,
    V2,
    /// No cgroup writes: each thread's own levers (a systemd host).
    Threads,
}

impl CgroupChoice {
    /// The names the configuration and `--cgroup` take.
    pub const NAMES: [&'static str; 4] = ["v1", "v2", "threads", "auto"];
}

impl std::str::FromStr for CgroupChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<CgroupChoice, String> {
        match s {
            "v1" => Ok(CgroupChoice::V1),
            "v2" => Ok(CgroupChoice::V2),
            "threads" => Ok(CgroupChoice::Threads),
            "auto" => Ok(CgroupChoice::Auto),
            _ => Err(format!("must be v1, v2, threads or auto, not {s:?}")),
        }
    }
}

/// The daemon's interval, ms: what `daemon.interval_ms` and every
/// `--interval` accept (10 ms to an hour).
pub const INTERVAL_MS: std::ops::RangeInclusive<u64> = 10..=3_600_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    pub interval_ms: u64,
    /// How often threads in their first `young_ms` are sampled; 0 = never
    /// between intervals.
    pub fast_interval_ms: u64,
    /// How long a new thread counts as young.
    pub young_ms: u64,
    /// At most this many young threads are watched at once; threads born
    /// beyond it are classified at the next interval like any other.
    pub young_max: usize,
    pub cgroup: CgroupChoice,
    pub socket: String,
    /// Serve the socket's verbs on the D-Bus system bus too.
    pub dbus: bool,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            interval_ms: 1000,
            fast_interval_ms: 40,
            young_ms: 2000,
            young_max: 16,
            cgroup: CgroupChoice::Auto,
            socket: "/run/corral.sock".into(),
            dbus: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BoostConfig {
    pub default_max_ms: u64,
    pub max_ms_limit: u64,
    pub rate_per_s: u32,
    /// How long a boosted thread keeps its own group after its last boost.
    pub keep_group_s: u64,
}

impl Default for BoostConfig {
    fn default() -> Self {
        BoostConfig {
            default_max_ms: 250,
            max_ms_limit: 5000,
            rate_per_s: 100,
            keep_group_s: 300,
        }
    }
}

/// The starvation guard (issue 14): no managed thread that wants the CPU
/// may get less than `floor` of one because of corral's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuardConfig {
    pub enabled: bool,
    /// Share of one CPU (0.05 = 5 %) a thread gets at least, over an
    /// interval, while it waits in a run queue.
    pub floor: f64,
    /// The share of the interval it must have waited runnable to count as
    /// wanting the CPU (a thread that sleeps gets little and is fine).
    pub min_wait: f64,
    /// How long a relieved thread stays out of corral's groups.
    pub hold_s: u64,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            enabled: true,
            floor: 0.05,
            min_wait: 0.5,
            hold_s: 30,
        }
    }
}

/// The metrics endpoint (Prometheus text format over HTTP).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// `ADDRESS:PORT` to serve `GET /metrics` on; empty: off.
    pub listen: String,
}

/// The whole configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub daemon: DaemonConfig,
    pub classify: ClassifyConfig,
    pub plan: PlanConfig,
    pub boost: BoostConfig,
    pub guard: GuardConfig,
    pub metrics: MetricsConfig,
    #[serde(rename = "rule")]
    pub rules: Vec<Rule>,
}

/// A configuration error: where, which key, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The dotted key (`classify.heavy`), when known.
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, &self.key) {
            (Some(l), Some(k)) => write!(f, "line {l}, key `{k}`: {}", self.message),
            (Some(l), None) => write!(f, "line {l}: {}", self.message),
            (None, Some(k)) => write!(f, "key `{k}`: {}", self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

impl Config {
    /// Parses and validates a configuration file's text.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        match Config::check(text) {
            Ok(config) => Ok(config),
            Err(mut all) => Err(all.remove(0)),
        }
    }

    /// As [`Config::parse`], with every complaint about the values
    /// (`corral config check`); a file that does not parse as TOML, or
    /// has a value of the wrong type, stops at that one.
    pub fn check(text: &str) -> Result<Config, Vec<ConfigError>> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of_offset(text, s.start));
            let key = e.span().and_then(|s| key_at(text, s.start));
            vec![ConfigError {
                line,
                key,
                message: plain(e.message().trim()),
            }]
        })?;
        let errors = config.validate();
        if errors.is_empty() {
            return Ok(config);
        }
        let mut errors: Vec<ConfigError> = errors
            .into_iter()
            .map(|(key, message)| ConfigError {
                line: line_of_key(text, &key),
                key: Some(key),
                message,
            })
            .collect();
        errors.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
        Err(errors)
    }

    /// Checks values that parse but make no sense together; returns every
    /// complaint, each with its dotted key, in the file's order of keys.
    fn validate(&self) -> Vec<(String, String)> {
        let mut errors: Vec<(String, String)> = Vec::new();
        self.check_fractions(&mut errors);
        self.check_listen(&mut errors);
        self.check_classify(&mut errors);
        self.check_daemon(&mut errors);
        self.check_plan(&mut errors);
        self.check_boost(&mut errors);
        self.check_latency_slice(&mut errors);
        self.check_rules(&mut errors);
        errors
    }

    /// Fractions of a CPU and thresholds: 0 to 1.
    fn check_fractions(&self, errors: &mut Vec<(String, String)>) {
        let c = &self.classify;
        let frac = |errors: &mut Vec<(String, String)>, key: &str, v: f64| {
            if !((0.0..=1.0).contains(&v) && v.is_finite()) {
                errors.push((key.to_string(), format!("must be between 0 and 1, not {v}")));
            }
        };
        frac(errors, "classify.heavy", c.heavy);
        frac(errors, "classify.medium", c.medium);
        frac(errors, "classify.hysteresis", c.hysteresis);
        frac(
            errors,
            "classify.latency_critical.max_util",
            c.latency_critical.max_util,
        );
        frac(errors, "plan.medium_min_cpu", self.plan.medium_min_cpu);
        frac(errors, "guard.floor", self.guard.floor);
        frac(errors, "guard.min_wait", self.guard.min_wait);
    }

    /// `metrics.listen`: an address and port, or off.
    fn check_listen(&self, errors: &mut Vec<(String, String)>) {
        let listen = &self.metrics.listen;
        if !listen.is_empty() && listen.parse::<std::net::SocketAddr>().is_err() {
            errors.push((
                "metrics.listen".into(),
                format!(
                    "must be an IP address and port such as \"127.0.0.1:9741\" or \"[::1]:9741\" (or \"\" for off), not {listen:?}"
                ),
            ));
        }
    }

    /// The classes' thresholds, in order, and the latency-critical rules.
    fn check_classify(&self, errors: &mut Vec<(String, String)>) {
        let c = &self.classify;
        if c.heavy <= c.medium {
            errors.push((
                "classify.heavy".into(),
                format!(
                    "the heavy threshold ({}) must be above the medium one ({})",
                    c.heavy, c.medium
                ),
            ));
        }
        if c.hysteresis >= c.medium {
            errors.push((
                "classify.hysteresis".into(),
                format!("must be below the medium threshold ({})", c.medium),
            ));
        }
        if !(c.peak_half_life_s > 0.0 && c.peak_half_life_s.is_finite()) {
            errors.push((
                "classify.peak_half_life_s".into(),
                "must be a positive number of seconds".into(),
            ));
        }
        let lc = &c.latency_critical;
        if lc.intervals == 0 {
            errors.push((
                "classify.latency_critical.intervals".into(),
                "must be at least 1".into(),
            ));
        }
        if !(lc.min_wakeups_per_s >= 0.0 && lc.max_run_per_wakeup_ms > 0.0 && lc.max_rate_cv >= 0.0)
        {
            errors.push((
                "classify.latency_critical".into(),
                "rates and times must be positive".into(),
            ));
        }
    }

    /// The loop's intervals and the young threads' window.
    fn check_daemon(&self, errors: &mut Vec<(String, String)>) {
        let c = &self.classify;
        let d = &self.daemon;
        if d.fast_interval_ms != 0 && !(10..=d.interval_ms).contains(&d.fast_interval_ms) {
            errors.push((
                "daemon.fast_interval_ms".into(),
                format!(
                    "must be 0 (off) or 10 to daemon.interval_ms ({}), not {}",
                    d.interval_ms, d.fast_interval_ms
                ),
            ));
        }
        if c.young_min_ms == 0 || (d.fast_interval_ms != 0 && c.young_min_ms >= d.young_ms) {
            errors.push((
                "classify.young_min_ms".into(),
                format!(
                    "must be at least 1 and below daemon.young_ms ({}), not {}",
                    d.young_ms, c.young_min_ms
                ),
            ));
        }
        if !INTERVAL_MS.contains(&self.daemon.interval_ms) {
            errors.push((
                "daemon.interval_ms".into(),
                format!(
                    "must be between {} and {}, not {}",
                    INTERVAL_MS.start(),
                    INTERVAL_MS.end(),
                    self.daemon.interval_ms
                ),
            ));
        }
    }

    /// Group weights, the boost's slice and nice.
    fn check_plan(&self, errors: &mut Vec<(String, String)>) {
        for (key, v) in [
            ("plan.shared_shares", self.plan.shared_shares),
            ("plan.dedicated_shares", self.plan.dedicated_shares),
            ("plan.latency_shares", self.plan.latency_shares),
        ] {
            if !(crate::share::MIN_SHARES..=crate::share::MAX_SHARES).contains(&v) {
                errors.push((
                    key.into(),
                    format!(
                        "cpu.shares must be between {} and {}, not {v}",
                        crate::share::MIN_SHARES,
                        crate::share::MAX_SHARES
                    ),
                ));
            }
        }
        for (key, slice) in [("plan.boost_slice_us", self.plan.boost_slice_us)] {
            if slice != 0 && !(100..=100_000).contains(&slice) {
                errors.push((
                    key.into(),
                    format!("must be 0 or 100 to 100000, not {slice}"),
                ));
            }
        }
        if !(-20..=19).contains(&self.plan.boost_nice) {
            errors.push((
                "plan.boost_nice".into(),
                format!(
                    "must be a nice value, -20 to 19, not {}",
                    self.plan.boost_nice
                ),
            ));
        }
    }

    /// Boost lengths and rate.
    fn check_boost(&self, errors: &mut Vec<(String, String)>) {
        let b = &self.boost;
        if b.default_max_ms == 0 || b.max_ms_limit < b.default_max_ms {
            errors.push((
                "boost.default_max_ms".into(),
                format!(
                    "must be at least 1 and at most boost.max_ms_limit ({})",
                    b.max_ms_limit
                ),
            ));
        }
        if b.rate_per_s == 0 {
            errors.push(("boost.rate_per_s".into(), "must be at least 1".into()));
        }
    }

    /// The latency group's EEVDF slice.
    fn check_latency_slice(&self, errors: &mut Vec<(String, String)>) {
        let slice = self.plan.latency_slice_us;
        if slice != 0 && !(100..=100_000).contains(&slice) {
            errors.push((
                "plan.latency_slice_us".into(),
                format!("must be 0 (leave slices alone) or 100 to 100000 (the kernel's range), not {slice}"),
            ));
        }
    }

    /// Each rule matches something and decides one thing.
    fn check_rules(&self, errors: &mut Vec<(String, String)>) {
        for (i, r) in self.rules.iter().enumerate() {
            if r.comm.is_none() && r.exe.is_none() && r.cgroup.is_none() && r.uid.is_none() {
                errors.push((
                    format!("rule[{i}]"),
                    "a rule needs at least one of comm, exe, cgroup, uid".into(),
                ));
            }
            if r.exclude == r.class.is_some() {
                errors.push((
                    format!("rule[{i}]"),
                    "a rule sets exactly one of class or exclude = true".into(),
                ));
            }
        }
    }
}

/// 1-based line of a byte offset.
/// serde's type names in words a person uses: `expected u64` → `expected
/// a whole number ≥ 0`.
fn plain(message: &str) -> String {
    let mut m = message.to_string();
    for (ty, words) in [
        ("u64", "a whole number ≥ 0"),
        ("u32", "a whole number ≥ 0"),
        ("u16", "a whole number ≥ 0"),
        ("u8", "a whole number ≥ 0"),
        ("usize", "a whole number ≥ 0"),
        ("i64", "a whole number"),
        ("i32", "a whole number"),
        ("f64", "a number"),
        ("f32", "a number"),
    ] {
        m = m.replace(&format!("expected {ty}"), &format!("expected {words}"));
    }
    m
}

fn line_of_offset(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// The dotted key whose line holds `offset`: the table header above it
/// plus the name before `=` on the line.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let line_no = line_of_offset(text, offset);
    let mut table = String::new();
    // `[[rule]]` tables are named by their index, as `rule[2].class`.
    let mut rules = 0;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(h) = header(t) {
            table = if t.starts_with("[[rule]]") {
                rules += 1;
                format!("rule[{}]", rules - 1)
            } else {
                h
            };
        }
        if i + 1 == line_no {
            let name = t.split_once('=')?.0.trim().trim_matches('"');
            if name.is_empty() || name.starts_with('[') {
                return None;
            }
            return Some(if table.is_empty() {
                name.to_string()
            } else {
                format!("{table}.{name}")
            });
        }
    }
    None
}

/// `[a.b]` → `a.b`; `[[rule]]` → `rule`.
fn header(line: &str) -> Option<String> {
    let inner = line
        .strip_prefix("[[")
        .and_then(|l| l.split("]]").next())
        .or_else(|| line.strip_prefix('[').and_then(|l| l.split(']').next()))?;
    Some(inner.trim().to_string())
}

/// The line where dotted `key` is set (or its table opens), if written in
/// the usual `[table]` / `name = value` form. `rule[i]` finds the i-th
/// `[[rule]]`.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    if let Some(i) = key.strip_prefix("rule[").and_then(|k| k.strip_suffix(']')) {
        let want: usize = i.parse().ok()?;
        return text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim().starts_with("[[rule]]"))
            .nth(want)
            .map(|(n, _)| n + 1);
    }
    let mut table = String::new();
    let mut table_line = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(h) = header(t) {
            if h == key {
                table_line = Some(n + 1);
            }
            table = h;
            continue;
        }
        if let Some((name, _)) = t.split_once('=') {
            let full = if table.is_empty() {
                name.trim().to_string()
            } else {
                format!("{table}.{}", name.trim())
            };
            if full == key {
                return Some(n + 1);
            }
        }
    }
    table_line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::Class;

    #[test]
    fn embedded_defaults_equal_default() {
        assert_eq!(Config::parse(DEFAULT_TOML).unwrap(), Config::default());
        assert_eq!(Config::parse("").unwrap(), Config::default());
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let e = Config::parse("[classify]\nheavy = 0.6\nhevy = 0.7\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert_eq!(e.key.as_deref(), Some("classify.hevy"));
        assert!(e.message.contains("unknown field"), "{e}");
    }

    #[test]
    fn wrong_type_names_line_and_key() {
        let e = Config::parse("[daemon]\n\ninterval_ms = \"fast\"\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert_eq!(e.key.as_deref(), Some("daemon.interval_ms"));
    }

    #[test]
    fn heavy_below_medium_is_inconsistent() {
        let e = Config::parse("[classify]\nmedium = 0.4\nheavy = 0.3\n").unwrap_err();
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(3), Some("classify.heavy"))
        );
        assert!(e.message.contains("above the medium"), "{e}");
        assert_eq!(
            e.to_string(),
            format!("line 3, key `classify.heavy`: {}", e.message)
        );
    }

    #[test]
    fn rules_parse_and_are_checked() {
        let c = Config::parse("[[rule]]\ncomm = \"AudioTrack*\"\nclass = \"latency-critical\"\n[[rule]]\ncgroup = \"/system.slice/*\"\nexclude = true\n").unwrap();
        assert_eq!(c.rules.len(), 2);
        assert_eq!(c.rules[0].class, Some(Class::LatencyCritical));
        let e = Config::parse("[[rule]]\ncomm = \"x\"\nclass = \"heavy\"\n[[rule]]\nuid = 5\n")
            .unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (Some(4), Some("rule[1]")));
        let e = Config::parse("[[rule]]\ncomm = \"x\"\nclass = \"huge\"\n").unwrap_err();
        assert_eq!(e.line, Some(3));
    }
}
