//! The readers on this machine's real sysfs and procfs (no privileges
//! needed, nothing changed).

use corral_linux::{cpucount, sched, sysfs, HostPaths};

#[test]
fn live_topology_agrees_with_the_syscall() {
    let paths = HostPaths::default();
    let t = sysfs::read_topology(&paths).expect("read live sysfs");
    assert!(!t.online.is_empty());
    assert!(t.online.is_subset(&t.present));
    assert!(t.present.is_subset(&t.possible));
    let mask = sched::sched_getaffinity(None).unwrap();
    assert!(
        mask.is_subset(&t.online),
        "affinity {mask} beyond online {}",
        t.online
    );
    let report = cpucount::detect(&paths, None).unwrap();
    assert!(report.recommendation.threads >= 1);
    assert!(report.recommendation.threads <= t.present.len());
    assert_eq!(report.sched_getaffinity.as_ref(), Some(&mask));
}
