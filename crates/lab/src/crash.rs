//! `corral lab crash`: issue 14's kill test. A churning workload runs; each
//! iteration starts `corral run --scope-pid <this process>`, kills it with
//! SIGKILL at a random moment (nothing is put back), starts it again —
//! the start reconciles from the record in /run/corral — and stops it with
//! SIGTERM. After each: no corral group may be left, no record, and every
//! long-lived workload thread must be in its original cpu and cpuset
//! groups with its original affinity, nice value and slice.

use crate::daemon_process::DaemonProcess;
use crate::error::Result;
use crate::groups::LabGroups;
use corral_linux::placer::Layout;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub struct Options<'a> {
    pub iterations: u32,
    /// The kill comes between these two times after the daemon answers, ms.
    pub min_kill_ms: u64,
    pub max_kill_ms: u64,
    pub seed: u64,
    pub stop: &'a AtomicBool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub iterations: u32,
    /// Iterations whose restart found a killed daemon's work to undo.
    pub reconciled: u32,
    /// Tasks the restarts moved back, in all.
    pub moved_back: u64,
    /// Group directories left after a clean stop, in all.
    pub groups_left: u32,
    /// Records left after a clean stop.
    pub records_left: u32,
    /// Thread comparisons made, and those that differed from the start.
    pub compared: u64,
    pub differed: u64,
    /// Restarts or stops that failed.
    pub failures: u32,
    pub notes: Vec<String>,
    pub churn: String,
}

/// A thread's place: cgroup lines (cpu, cpuset), affinity, nice, slice.
type Place = (String, String, i32, u64);

fn place(pid: u32) -> Option<Place> {
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let cg: String = cg
        .lines()
        .filter(|l| l.contains(":cpu:") || l.contains(":cpuset:") || l.starts_with("0::"))
        .collect::<Vec<_>>()
        .join(";");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let allowed = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list"))?
        .to_string();
    let a = corral_linux::sched::sched_getattr(pid).ok()?;
    Some((cg, allowed, a.sched_nice, a.sched_runtime))
}

pub fn run(
    exe: &Path,
    layout: &Layout,
    o: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Report> {
    let me = std::process::id();
    let dir = crate::groups::scratch_dir("crash")?;
    let mut groups = LabGroups::for_experiment(layout)?;
    let work = groups.group("work", 1024)?;
    let mut r = Report {
        iterations: o.iterations,
        ..Default::default()
    };
    let stable = start_workload(exe, &mut groups, &work, &mut r)?;
    std::thread::sleep(Duration::from_millis(300));
    let before: BTreeMap<u32, Place> = stable
        .iter()
        .filter_map(|&p| place(p).map(|pl| (p, pl)))
        .collect();
    let group = LabGroups::daemon_group_name();
    let record = PathBuf::from("/run/corral").join(format!("{group}.json"));
    let group_dirs: Vec<PathBuf> = match layout {
        Layout::V1 { cpu, cpuset } => vec![cpu.join(&group), cpuset.join(&group)],
        Layout::V2 { unified } => vec![unified.join(&group)],
        Layout::Threads => Vec::new(),
    };
    let socket = dir.join("corral.sock");
    // The kill moments, reproducible from the seed.
    let mut rng = corral_sim::engine::Rng::new(o.seed);
    let t0 = Instant::now();
    for i in 1..=o.iterations {
        if o.stop.load(Ordering::SeqCst) {
            r.notes
                .push(format!("interrupted after {} iterations", i - 1));
            r.iterations = i - 1;
            break;
        }
        let log1 = dir.join(format!("{i}-killed.log"));
        let span = o.max_kill_ms.saturating_sub(o.min_kill_ms).max(1);
        let wait = o.min_kill_ms + rng.below(span);
        match DaemonProcess::start(exe, me, &socket, Some(100), None, &log1, o.stop) {
            Ok(d) => {
                std::thread::sleep(Duration::from_millis(wait));
                d.kill9();
            }
            Err(e) => {
                r.failures += 1;
                r.notes.push(format!("iteration {i}: start: {e}"));
            }
        }
        let log2 = dir.join(format!("{i}-restarted.log"));
        match DaemonProcess::start(exe, me, &socket, Some(100), None, &log2, o.stop) {
            Ok(d) => {
                std::thread::sleep(Duration::from_millis(150));
                if let Err(e) = d.stop() {
                    r.failures += 1;
                    r.notes.push(format!("iteration {i}: {e}"));
                }
            }
            Err(e) => {
                r.failures += 1;
                r.notes.push(format!("iteration {i}: restart: {e}"));
                // Leave nothing for the next iteration.
                let _ = Command::new(exe)
                    .args(["restore", "--group-name", &group])
                    .output();
            }
        }
        check_after(i, exe, &log2, &group, &group_dirs, &record, &before, &mut r);
        if i % 10 == 0 || i == o.iterations {
            progress(&format!(
                "{i} of {} iterations ({:.0} s): {} reconciled, {} groups left, {} of {} thread checks differed",
                o.iterations,
                t0.elapsed().as_secs_f64(),
                r.reconciled,
                r.groups_left,
                r.differed,
                r.compared
            ));
        }
    }
    groups.cleanup();
    if r.failures == 0 && r.groups_left == 0 && r.differed == 0 {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        r.notes.push(format!("logs kept in {}", dir.display()));
    }
    Ok(r)
}

/// The long-lived threads compared (a hog, a 10 ms / 1 ms thread —
/// latency-critical —, a light one, one with a slice and nice of its own)
/// and the churn beside them, in the experiment's group `work`.
fn start_workload(
    exe: &Path,
    groups: &mut LabGroups,
    work: &Path,
    r: &mut Report,
) -> Result<Vec<u32>> {
    let spawn = |groups: &mut LabGroups, args: &[&str]| -> Result<u32> {
        let mut c = Command::new(exe);
        c.args(["lab", "work"]).args(args);
        groups.spawn(work, c)
    };
    let mut stable = vec![
        spawn(groups, &["hog"])?,
        spawn(
            groups,
            &[
                "periodic",
                "--period-ms",
                "10",
                "--run-ms",
                "1",
                "--periods",
                "100000000",
            ],
        )?,
        spawn(groups, crate::vmguest::LIGHT)?,
    ];
    let own = spawn(
        groups,
        &[
            "periodic",
            "--period-ms",
            "10",
            "--run-ms",
            "1",
            "--periods",
            "100000000",
            "--slice-us",
            "2000",
        ],
    )?;
    let _ = corral_linux::sched::set_fair_attr(own, 5, 2_000_000);
    stable.push(own);
    // Churn: processes and threads born and ending all the time.
    let churn = if Command::new("stress-ng").arg("--version").output().is_ok() {
        let mut c = Command::new("stress-ng");
        c.args([
            "--fork",
            "1",
            "--fork-max",
            "8",
            "--pthread",
            "1",
            "--pthread-max",
            "16",
            "--timeout",
            "0",
        ])
        .stderr(Stdio::null());
        groups.start(work, c)?;
        "stress-ng --fork 1 --fork-max 8 --pthread 1 --pthread-max 16".to_string()
    } else {
        r.notes.push(
            "stress-ng is not installed: no process churn (scripts/setup installs it)".into(),
        );
        "none".into()
    };
    r.churn = churn;
    Ok(stable)
}

/// After iteration `i`'s restarted daemon stopped: what its log says it
/// reconciled, any group or record left (removed for the next), and each
/// long-lived thread's place against the one it had before.
#[allow(clippy::too_many_arguments)]
fn check_after(
    i: u32,
    exe: &Path,
    log2: &Path,
    group: &str,
    group_dirs: &[PathBuf],
    record: &Path,
    before: &BTreeMap<u32, Place>,
    r: &mut Report,
) {
    let said = std::fs::read_to_string(log2).unwrap_or_default();
    if let Some(line) = said.lines().find(|l| l.contains("found what")) {
        r.reconciled += 1;
        r.moved_back += line
            .split("moved ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    let left = group_dirs.iter().filter(|d| d.exists()).count() as u32;
    r.groups_left += left;
    if left > 0 {
        r.notes
            .push(format!("iteration {i}: groups left: {group_dirs:?}"));
        let _ = Command::new(exe)
            .args(["restore", "--group-name", group])
            .output();
    }
    if record.exists() {
        r.records_left += 1;
        let _ = std::fs::remove_file(record);
    }
    for (&pid, was) in before {
        r.compared += 1;
        let now = place(pid);
        if now.as_ref() != Some(was) {
            r.differed += 1;
            r.notes
                .push(format!("iteration {i}: {pid} was {was:?}, now {now:?}"));
        }
    }
}
