//! The cgroup v1 backend on this machine's real hierarchy: groups under
//! `corral-test-born-<pid>-<test>` of the `cpu` and `cpuset` controllers, and
//! processes this test starts, nothing else. Needs root and v1's `cpu`
//! and `cpuset` mounts; skips without them.

use corral_core::plan::{GroupKind, GroupSpec};
use corral_core::CpuSet;
use corral_linux::placer::{Layout, Placer};
use corral_linux::{sched, HostPaths};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

mod common;
use common::{end, forker, go, wait_for_child};

const CPU: &str = "/sys/fs/cgroup/cpu";
const CPUSET: &str = "/sys/fs/cgroup/cpuset";

/// The task's path in the v1 hierarchy of `controller`.
fn cgroup_of(tid: u32, controller: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{tid}/cgroup")).unwrap();
    text.lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
            ctrls
                .split(',')
                .any(|c| c == controller)
                .then(|| path.to_string())
        })
        .unwrap()
}

fn spec(name: &str, kind: GroupKind, cpus: &CpuSet) -> GroupSpec {
    GroupSpec {
        name: name.into(),
        kind,
        cpus: cpus.clone(),
        shares: 2048,
        slice_ns: None,
        nice: None,
    }
}

/// Root, the v1 mounts, and a test root of this process's own; `None`
/// (after a SKIP line) without them.
fn setup(name: &str, tag: &str) -> Option<(String, tempfile::TempDir)> {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP {name}: needs root");
        return None;
    }
    if !Path::new(CPU).join("cpu.shares").exists()
        || !Path::new(CPUSET).join("cpuset.cpus").exists()
    {
        eprintln!("SKIP {name}: no cgroup v1 cpu and cpuset mounts");
        return None;
    }
    let root = format!("corral-test-born-{}-{tag}", std::process::id());
    Some((root, tempfile::tempdir().unwrap()))
}

fn placer(root: &str, record: PathBuf) -> Placer {
    let mut p = Placer::new(
        Layout::V1 {
            cpu: CPU.into(),
            cpuset: CPUSET.into(),
        },
        root,
        &HostPaths::default(),
    );
    p.set_state_file(record);
    p
}

/// Removes what a failed run left (a test must not leave groups behind;
/// a task still inside goes to the root first).
fn sweep(root: &str) {
    for mount in [CPU, CPUSET] {
        let top = Path::new(mount).join(root);
        if let Ok(dirs) = std::fs::read_dir(&top) {
            for d in dirs.flatten().filter(|d| d.path().is_dir()) {
                let tasks = std::fs::read_to_string(d.path().join("tasks")).unwrap_or_default();
                for t in tasks.split_whitespace() {
                    let _ = std::fs::write(Path::new(mount).join("tasks"), t);
                }
                let _ = std::fs::remove_dir(d.path());
            }
        }
        let _ = std::fs::remove_dir(&top);
    }
}

/// What a run started: ended and removed when dropped, a panic
/// included (the shell, its child, the test's groups).
struct Leftovers {
    sh: Option<Child>,
    root: String,
    home_dir: PathBuf,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        if let Some(sh) = self.sh.take() {
            let pid = sh.id();
            end(sh, pid);
        }
        sweep(&self.root);
        // Empty once the shell and its child are gone (their exit is
        // asynchronous: a few tries; a task left goes to the root).
        for _ in 0..100 {
            if std::fs::remove_dir(&self.home_dir).is_ok() || !self.home_dir.exists() {
                break;
            }
            let tasks = std::fs::read_to_string(self.home_dir.join("tasks")).unwrap_or_default();
            for t in tasks.split_whitespace() {
                let _ = std::fs::write(Path::new(CPU).join("tasks"), t);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A process born inside one of corral's groups (a managed shell's
/// command) and then placed in another must go back where its parent
/// came from, never into corral's group it was born in: that group is
/// being removed, and a thread put back into it kept it busy (rmdir
/// EBUSY until the deadline; the group was left behind).
fn born_inside_then_moved(name: &str, crash: bool) {
    let Some((root, dir)) = setup(name, if crash { "crash" } else { "stop" }) else {
        return;
    };
    let all = sched::sched_getaffinity(None).unwrap();
    let record = dir.path().join("record.json");
    let gate = dir.path().join("go");
    // The shell starts in a group of the test's own, not the root, so
    // that "back where it came from" is told apart from "to the root".
    let home = format!("/{root}-home");
    let mut left = Leftovers {
        sh: None,
        root: root.clone(),
        home_dir: Path::new(CPU).join(&home[1..]),
    };
    std::fs::create_dir(&left.home_dir).unwrap();
    let sh = left.sh.insert(forker(&gate));
    let pid = sh.id();
    std::fs::write(left.home_dir.join("tasks"), pid.to_string()).unwrap();
    let mut p = placer(&root, record.clone());
    p.set_group(&spec("latency", GroupKind::Latency, &all))
        .unwrap();
    p.set_group(&spec("heavy", GroupKind::Dedicated, &all))
        .unwrap();
    assert!(p.move_thread(pid, pid, "latency").unwrap());
    go(&gate);
    let kid = wait_for_child(pid);
    assert_eq!(
        cgroup_of(kid, "cpu"),
        format!("/{root}/latency"),
        "born inside"
    );
    assert!(p.move_thread(kid, kid, "heavy").unwrap());
    let t0 = Instant::now();
    let done = if crash {
        // The daemon dies (its record stays); the next one reconciles.
        drop(p);
        placer(&root, record).reconcile().map(|_| ())
    } else {
        p.restore_all()
    };
    let took = t0.elapsed();
    let (shell_at, kid_at) = (cgroup_of(pid, "cpu"), cgroup_of(kid, "cpu"));
    let groups_left = Path::new(CPU).join(&root).exists() || Path::new(CPUSET).join(&root).exists();
    drop(left);
    done.unwrap_or_else(|e| panic!("{e} (after {took:?})"));
    assert!(!groups_left, "corral's groups were removed");
    assert_eq!(shell_at, home, "the shell is back");
    assert_eq!(kid_at, home, "its child goes where the shell came from");
}

#[test]
fn privileged_a_process_born_in_a_group_and_moved_is_restored_outside_corral() {
    born_inside_then_moved(
        "privileged_a_process_born_in_a_group_and_moved_is_restored_outside_corral",
        false,
    );
}

#[test]
fn privileged_a_process_born_in_a_group_and_moved_is_reconciled_outside_corral() {
    born_inside_then_moved(
        "privileged_a_process_born_in_a_group_and_moved_is_reconciled_outside_corral",
        true,
    );
}
