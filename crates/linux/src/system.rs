//! Who else schedules or owns cgroups on this host: systemd as the
//! cgroup tree's owner, a sched_ext scheduler in place of the fair class.

use std::path::Path;

/// Whether systemd runs this system (`sd_booted(3)`: the directory
/// `/run/systemd/system` exists, under `run`).
///
/// On a cgroup v2 host systemd then owns the tree: one writer per cgroup,
/// writes only inside a subtree it delegated (its `CGROUP_DELEGATION`
/// rules); moving a service's processes into corral's own groups takes
/// them out of their unit (`systemctl stop` no longer reaches them, the
/// unit's limits and accounting no longer apply).
pub fn systemd_booted(run: &Path) -> bool {
    run.join("systemd/system").is_dir()
}

/// The sched_ext scheduler in charge, when one is: `Some(name)` when
/// `kernel/sched_ext/state` (under `sysfs`) reads `enabled`; the name is
/// `kernel/sched_ext/root/ops`, or "unknown". With one loaded, the fair
/// class's weights (cpu.shares, cpu.weight, nice) and EEVDF slices are
/// not what decides who runs.
pub fn sched_ext_scheduler(sysfs: &Path) -> Option<String> {
    let dir = sysfs.join("kernel/sched_ext");
    let state = std::fs::read_to_string(dir.join("state")).ok()?;
    if state.trim() != "enabled" {
        return None;
    }
    let ops = std::fs::read_to_string(dir.join("root/ops")).unwrap_or_default();
    let ops = ops.trim();
    Some(if ops.is_empty() { "unknown" } else { ops }.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_loaded_sched_ext_scheduler_and_systemd() {
        let dir = tempfile::tempdir().unwrap();
        let sysfs = dir.path().join("sys");
        assert_eq!(sched_ext_scheduler(&sysfs), None, "no sched_ext");
        let scx = sysfs.join("kernel/sched_ext");
        std::fs::create_dir_all(scx.join("root")).unwrap();
        std::fs::write(scx.join("state"), "disabled\n").unwrap();
        assert_eq!(sched_ext_scheduler(&sysfs), None);
        std::fs::write(scx.join("state"), "enabled\n").unwrap();
        assert_eq!(sched_ext_scheduler(&sysfs).as_deref(), Some("unknown"));
        std::fs::write(scx.join("root/ops"), "rusty\n").unwrap();
        assert_eq!(sched_ext_scheduler(&sysfs).as_deref(), Some("rusty"));

        let run = dir.path().join("run");
        assert!(!systemd_booted(&run));
        std::fs::create_dir_all(run.join("systemd/system")).unwrap();
        assert!(systemd_booted(&run));
    }
}
