//! Platform files: the simulated machine in TOML.
//!
//! ```toml
//! kernel = "eevdf"                      # or "cfs" (2.6.32); optional
//! hz = 250                              # CONFIG_HZ
//! capacities = [1024, 1024, 446, 446]   # or: cpus = 4 (all 1024)
//! hotplug = ["2s:cpu1=off", "5s:cpu1=on"]
//!
//! [groups."/bg"]                        # cpu controller groups
//! shares = 52
//! quota_us = 50000                      # CPU bandwidth: quota per period
//! period_us = 100000
//! ```
//!
//! Unknown keys are refused, with the file, line and key.

use crate::engine::Ns;
use crate::machine::Platform;
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
    hz: Option<u32>,
    cpus: Option<usize>,
    capacities: Option<Vec<u32>>,
    #[serde(default)]
    hotplug: Vec<String>,
    #[serde(default)]
    groups: BTreeMap<String, GroupSpec>,
}

/// What a platform file describes.
#[derive(Debug, Clone, PartialEq)]
pub struct PlatformSpec {
    pub platform: Platform,
    pub kernel: Option<String>,
    pub groups: BTreeMap<String, GroupSpec>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Parses a platform file; errors read `FILE:LINE: key: message`.
pub fn parse(text: &str, file: &str) -> Result<PlatformSpec, String> {
    let f: File = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
        format!("{file}:{line}: {}", e.message().trim())
    })?;
    let at = |key: &str, msg: String| {
        let line = text
            .lines()
            .position(|l| l.trim_start().starts_with(key))
            .map_or(0, |i| i + 1);
        format!("{file}:{line}: {key}: {msg}")
    };
    let capacities = match (f.cpus, f.capacities) {
        (Some(_), Some(_)) => {
            return Err(at(
                "capacities",
                "give either cpus or capacities, not both".into(),
            ))
        }
        (Some(n), None) => vec![1024; n],
        (None, Some(c)) => c,
        (None, None) => return Err(format!("{file}: no `cpus` or `capacities`")),
    };
    if capacities.is_empty() || capacities.len() > 4096 {
        return Err(at("cpus", "1 to 4096 CPUs".into()));
    }
    if capacities.iter().any(|&c| c == 0 || c > 1024) {
        return Err(at("capacities", "each capacity is 1 to 1024".into()));
    }
    let hz = f.hz.unwrap_or(250);
    if !(100..=1000).contains(&hz) {
        return Err(at("hz", format!("{hz} is not a CONFIG_HZ (100 to 1000)")));
    }
    if let Some(k) = &f.kernel {
        if k != "cfs" && k != "eevdf" {
            return Err(at("kernel", format!("{k:?} is not \"cfs\" or \"eevdf\"")));
        }
    }
    let n = capacities.len();
    let hotplug = parse_hotplug(&f.hotplug.join(","), n).map_err(|e| at("hotplug", e))?;
    for (path, g) in &f.groups {
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
    Ok(PlatformSpec {
        platform: Platform {
            capacities,
            hz,
            hotplug,
        },
        kernel: f.kernel,
        groups: f.groups,
    })
}

/// Parses hot-plug events, "2s:cpu1=off,5500ms:cpu1=on".
pub fn parse_hotplug(spec: &str, ncpus: usize) -> Result<Vec<(Ns, usize, bool)>, String> {
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let bad = || format!("{item:?} is not TIME:cpuN=on|off (e.g. 2s:cpu1=off)");
            let (t, what) = item.trim().split_once(':').ok_or_else(bad)?;
            let ns = if let Some(ms) = t.strip_suffix("ms") {
                ms.parse::<f64>().map_err(|_| bad())? * 1e6
            } else {
                t.strip_suffix('s')
                    .unwrap_or(t)
                    .parse::<f64>()
                    .map_err(|_| bad())?
                    * 1e9
            };
            if ns.is_nan() || ns < 0.0 {
                return Err(bad());
            }
            let (cpu, state) = what.split_once('=').ok_or_else(bad)?;
            let cpu: usize = cpu
                .strip_prefix("cpu")
                .ok_or_else(bad)?
                .parse()
                .map_err(|_| bad())?;
            if cpu >= ncpus {
                return Err(format!("CPU {cpu} does not exist ({ncpus} CPUs)"));
            }
            let on = match state {
                "on" => true,
                "off" => false,
                _ => return Err(bad()),
            };
            Ok((ns as Ns, cpu, on))
        })
        .collect()
}

/// The kernel models a platform can run.
pub fn flavour(name: &str) -> Option<crate::fair::Flavour> {
    match name {
        "cfs" => Some(crate::fair::Flavour::Cfs),
        "eevdf" => Some(crate::fair::Flavour::Eevdf),
        _ => None,
    }
}

/// The machine a platform describes, running `work` under `flavour` with
/// the RT class above it (RT bandwidth as that era had it) and the
/// platform's groups set up.
pub fn build(
    work: crate::rtapp::Workload,
    spec: &PlatformSpec,
    flavour: crate::fair::Flavour,
) -> Result<crate::machine::Machine<crate::classes::Classes<crate::fair::Fair>>, String> {
    use crate::fair::{Fair, Flavour};
    use crate::rt::RtBandwidth;
    let n = spec.platform.capacities.len();
    let hz = spec.platform.hz;
    let bw = match flavour {
        Flavour::Cfs => RtBandwidth::throttling(),
        Flavour::Eevdf => RtBandwidth::fair_server(),
    };
    let k = crate::classes::Classes::new(n, Fair::new(flavour, n).with_hz(hz), bw, hz);
    let mut m = crate::machine::Machine::new(spec.platform.clone(), work, k)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(p.kernel.as_deref(), Some("cfs"));
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = parse("cpus = 2\nhz = 7\n", "p.toml").unwrap_err();
        assert_eq!(e, "p.toml:2: hz: 7 is not a CONFIG_HZ (100 to 1000)");
        let e = parse("cpus = 2\nspeed = 3\n", "p.toml").unwrap_err();
        assert!(e.starts_with("p.toml:2: unknown field `speed`"), "{e}");
        let e = parse("cpus = 2\nhotplug = [\"1s:cpu5=off\"]\n", "p.toml").unwrap_err();
        assert_eq!(e, "p.toml:2: hotplug: CPU 5 does not exist (2 CPUs)");
        let e = parse("cpus = 1\n[groups.\"/g\"]\nshares = 1\n", "p.toml").unwrap_err();
        assert_eq!(e, "p.toml:3: shares: /g: 2 to 262144");
    }
}
