//! The per-thread backend (`Layout::Threads`) on this machine's real
//! threads: processes this test starts, nothing else. No cgroup is read or
//! written; no privilege is needed (a process may change its children's
//! affinity). Skips on a machine with one CPU.

use corral_core::plan::{GroupKind, GroupSpec};
use corral_core::CpuSet;
use corral_linux::placer::{Layout, Placer};
use corral_linux::{sched, HostPaths};
use std::process::Command;
use std::time::{Duration, Instant};

mod common;
use common::{end, forker, go, wait_for_child};

fn mask(pid: u32) -> CpuSet {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn spec(name: &str, cpus: &CpuSet) -> GroupSpec {
    GroupSpec {
        name: name.into(),
        kind: GroupKind::Dedicated,
        cpus: cpus.clone(),
        shares: 10240,
        slice_ns: None,
        nice: None,
    }
}

fn setup(name: &str) -> Option<(CpuSet, CpuSet, tempfile::TempDir)> {
    let all = sched::sched_getaffinity(None).unwrap();
    if all.len() < 2 {
        eprintln!("SKIP {name}: one CPU, nothing to narrow");
        return None;
    }
    let one: CpuSet = [all.last().unwrap()].into_iter().collect();
    Some((all, one, tempfile::tempdir().unwrap()))
}

/// A per-thread placer keeping its record in `record`.
fn placer(record: std::path::PathBuf) -> Placer {
    let mut p = Placer::new(
        Layout::Threads,
        "corral-test-threads",
        &HostPaths::default(),
    );
    p.set_state_file(record);
    p
}

/// A placer with process `pid` moved into a group of `cpus`.
fn placed(record: std::path::PathBuf, pid: u32, cpus: &CpuSet) -> Placer {
    let mut p = placer(record);
    p.set_group(&spec("dedicated-cpu", cpus)).unwrap();
    p.prepare(&[(pid, pid)]).unwrap();
    assert!(p.move_thread(pid, pid, "dedicated-cpu").unwrap());
    p
}

#[test]
fn a_member_gets_its_groups_cpus_and_restore_gives_it_and_its_children_their_own() {
    let Some((all, one, dir)) =
        setup("a_member_gets_its_groups_cpus_and_restore_gives_it_and_its_children_their_own")
    else {
        return;
    };
    let gate = dir.path().join("go");
    let sh = forker(&gate);
    let pid = sh.id();
    let before = mask(pid);
    assert_eq!(before, all);
    let mut p = placed(dir.path().join("record.json"), pid, &one);
    assert_eq!(mask(pid), one, "the member runs on its group's CPUs");
    assert_eq!(p.narrow_masks(), vec![one.clone()]);
    // Born to the member, the sleep inherits its CPU set.
    go(&gate);
    let kid = wait_for_child(pid);
    assert_eq!(mask(kid), one);
    // The record names the set, for a restore after a crash.
    let record = std::fs::read_to_string(dir.path().join("record.json")).unwrap();
    assert!(record.contains("\"threads\""), "{record}");
    p.restore_all().unwrap();
    assert_eq!(mask(pid), before, "the member has its own affinity back");
    assert_eq!(mask(kid), before, "so does the thread born to it");
    assert!(!dir.path().join("record.json").exists());
    end(sh, pid);
}

#[test]
fn after_a_crash_reconcile_gives_back_the_recorded_affinity_and_the_inherited_one() {
    let Some((all, one, dir)) =
        setup("after_a_crash_reconcile_gives_back_the_recorded_affinity_and_the_inherited_one")
    else {
        return;
    };
    let gate = dir.path().join("go");
    let sh = forker(&gate);
    let pid = sh.id();
    let record = dir.path().join("record.json");
    // The daemon dies once the move is done: nothing is put back.
    drop(placed(record.clone(), pid, &one));
    go(&gate);
    let kid = wait_for_child(pid);
    assert_eq!((mask(pid), mask(kid)), (one.clone(), one.clone()));
    // The record says "written by a daemon that is gone" only when its
    // writer is not alive: this test process wrote it, so make it a
    // stranger's by hand (a PID that is not running).
    let text = std::fs::read_to_string(&record).unwrap();
    let me = format!("\"daemon_pid\":{}", std::process::id());
    assert!(text.contains(&me), "{text}");
    std::fs::write(&record, text.replace(&me, "\"daemon_pid\":4194304")).unwrap();
    let mut q = placer(record.clone());
    let r = q.reconcile().unwrap();
    assert_eq!(r.record_of, Some(4_194_304));
    assert_eq!(r.affinities_restored, 2, "{r:?}");
    assert_eq!((mask(pid), mask(kid)), (all.clone(), all));
    q.drop_state_file().unwrap();
    end(sh, pid);
}

/// What the daemon does between the birth of a child and its exit: the
/// member leaves its group (released, the group removed) or the group's
/// CPU set changes. The child's inherited set is corral's still, and the
/// restore gives it back.
#[test]
fn a_child_born_to_a_member_gets_its_affinity_back_after_release_removal_or_a_new_set() {
    let Some((all, one, dir)) =
        setup("a_child_born_to_a_member_gets_its_affinity_back_after_release_removal_or_a_new_set")
    else {
        return;
    };
    for case in ["released", "removed", "new set"] {
        let gate = dir.path().join(format!("{case}.go"));
        let sh = forker(&gate);
        let pid = sh.id();
        let mut p = placed(dir.path().join(format!("{case}.json")), pid, &one);
        go(&gate);
        let kid = wait_for_child(pid);
        assert_eq!(mask(kid), one, "{case}");
        match case {
            "released" => p.release(pid).unwrap(),
            "removed" => {
                p.release(pid).unwrap();
                p.remove_group("dedicated-cpu").unwrap();
            }
            _ => {
                let other: CpuSet = [all.first().unwrap()].into_iter().collect();
                p.set_group(&spec("dedicated-cpu", &other)).unwrap();
                assert_eq!(mask(pid), other, "{case}");
            }
        }
        assert_eq!(
            mask(kid),
            one,
            "{case}: the child keeps the set until the restore"
        );
        p.restore_all().unwrap();
        assert_eq!((mask(pid), mask(kid)), (all.clone(), all.clone()), "{case}");
        end(sh, pid);
    }
}

/// A thread's nice value, `/proc/PID/stat`'s 19th field.
fn nice_of(pid: u32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    corral_linux::sampler::parse_stat(&stat).unwrap().nice
}

/// The medium guarantee on the per-thread backend is its members' nice,
/// a floor: a thread with a lower nice of its own keeps it, one its owner
/// niced above 0 keeps that, and each gets its own back at the restore.
#[test]
fn the_medium_nice_is_a_floor_and_comes_back_off() {
    let name = "the_medium_nice_is_a_floor_and_comes_back_off";
    let Some((all, _, dir)) = setup(name) else {
        return;
    };
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP {name}: lowering a nice value needs CAP_SYS_NICE (run as root)");
        return;
    }
    let start = |nice: &str| {
        Command::new("nice")
            .args(["-n", nice, "sleep", "30"])
            .spawn()
            .unwrap()
    };
    let kids = [start("0"), start("5"), start("-6")];
    let pids: Vec<u32> = kids.iter().map(|c| c.id()).collect();
    let t0 = Instant::now();
    while pids.iter().map(|&p| nice_of(p)).collect::<Vec<_>>() != [0, 5, -6] {
        assert!(t0.elapsed() < Duration::from_secs(5), "nice did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut p = placer(dir.path().join("record.json"));
    p.set_group(&GroupSpec {
        kind: GroupKind::Medium,
        nice: Some(-4),
        shares: 1024,
        ..spec("medium", &all)
    })
    .unwrap();
    let pairs: Vec<(u32, u32)> = pids.iter().map(|&p| (p, p)).collect();
    p.prepare(&pairs).unwrap();
    for &pid in &pids {
        assert!(p.move_thread(pid, pid, "medium").unwrap());
    }
    let placed: Vec<i32> = pids.iter().map(|&p| nice_of(p)).collect();
    p.restore_all().unwrap();
    let back: Vec<i32> = pids.iter().map(|&p| nice_of(p)).collect();
    for (c, pid) in kids.into_iter().zip(pids) {
        end(c, pid);
    }
    assert_eq!(placed, [-4, 5, -6], "nice 0 raised to -4, 5 and -6 kept");
    assert_eq!(back, [0, 5, -6]);
}

/// A group's nice value that cannot be put on record is not given: the
/// move fails (the daemon reports it and tries again at its next step)
/// rather than leave a thread placed without the nice its group promises,
/// as a boost answered but not in force would be.
#[test]
fn a_nice_that_cannot_be_recorded_fails_the_move_and_the_retry_gives_it() {
    let name = "a_nice_that_cannot_be_recorded_fails_the_move_and_the_retry_gives_it";
    let Some((all, _, dir)) = setup(name) else {
        return;
    };
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP {name}: lowering a nice value needs CAP_SYS_NICE (run as root)");
        return;
    }
    let mut kid = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = kid.id();
    let record = dir.path().join("record.json");
    let mut p = placer(record.clone());
    p.set_group(&GroupSpec {
        kind: GroupKind::Boost,
        nice: Some(-20),
        ..spec("boost", &all)
    })
    .unwrap();
    p.prepare(&[(pid, pid)]).unwrap();
    // Where a record cannot be written (no directory is made under /proc).
    p.set_state_file("/proc/corral-test-nowhere/record.json".into());
    let failed = p.move_thread(pid, pid, "boost");
    let unrecorded = nice_of(pid);
    p.set_state_file(record);
    let retried = p.move_thread(pid, pid, "boost").unwrap();
    let given = nice_of(pid);
    p.restore_all().unwrap();
    let back = nice_of(pid);
    let _ = kid.kill();
    let _ = kid.wait();
    assert!(failed.is_err(), "the move did not fail: {failed:?}");
    assert_eq!(
        unrecorded, 0,
        "the nice was given with no record of the old one"
    );
    assert!(retried);
    assert_eq!((given, back), (-20, 0));
}
