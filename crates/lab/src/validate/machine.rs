//! What the machine is.

use super::*;

pub(super) fn machine_info(procfs: &Path, rtapp: &Path) -> MachineInfo {
    let kernel = std::fs::read_to_string(procfs.join("sys/kernel/osrelease"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let (config, source) = kernel_config(procfs, &kernel);
    let get = |key: &str| -> Option<String> {
        config.lines().find_map(|l| {
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix('='))
                .map(str::to_string)
        })
    };
    let hz = get("CONFIG_HZ").and_then(|v| v.parse().ok());
    let built = [
        ("CONFIG_PREEMPT_NONE", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT", "full"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
        ("CONFIG_PREEMPT_RT", "rt"),
    ]
    .iter()
    .find(|(k, _)| get(k).as_deref() == Some("y"))
    .map(|(k, m)| (k.to_string(), m.to_string()));
    let cmdline = std::fs::read_to_string(procfs.join("cmdline")).unwrap_or_default();
    let param = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("preempt="))
        .map(str::to_string);
    let debugfs = std::fs::read_to_string("/sys/kernel/debug/sched/preempt").ok();
    let dynamic = get("CONFIG_PREEMPT_DYNAMIC").as_deref() == Some("y");
    let preempt = match (debugfs, param, built) {
        (Some(d), _, _) => format!("{} (/sys/kernel/debug/sched/preempt)", d.trim()),
        (None, Some(p), _) if dynamic => format!("{p} (preempt= on the command line)"),
        (None, _, Some((k, m))) => format!(
            "{m} ({k}=y{})",
            if dynamic {
                ", PREEMPT_DYNAMIC, no preempt= on the command line"
            } else {
                ""
            }
        ),
        _ => "unknown".into(),
    };
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| corral_core::cpuset::CpuSet::parse(s.trim()).ok())
        .map_or(2, |c| c.len() as usize);
    MachineInfo {
        kernel,
        config: source,
        hz,
        preempt,
        cpus,
        rtapp: rtapp.display().to_string(),
        timer_slack_ns: 1,
    }
}

/// The running kernel's configuration: `/boot/config-RELEASE`, else
/// `/proc/config.gz` (through `gzip -dc`).
pub(super) fn kernel_config(procfs: &Path, release: &str) -> (String, String) {
    let boot = PathBuf::from(format!("/boot/config-{release}"));
    if let Ok(t) = std::fs::read_to_string(&boot) {
        return (t, boot.display().to_string());
    }
    let gz = procfs.join("config.gz");
    match Command::new("gzip").arg("-dc").arg(&gz).output() {
        Ok(out) if out.status.success() => (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            gz.display().to_string(),
        ),
        _ => (String::new(), "not found".into()),
    }
}
