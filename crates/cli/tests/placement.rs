//! `corral lab placement` end to end. A test binary of its own: cargo
//! runs a binary's tests side by side, and the hogs of `lab.rs`'s tests
//! on the same two CPUs would disturb most of the probe's rounds (a CI
//! run kept 18 of 75 companion rounds when it shared its binary with
//! them).

use std::process::Command;

/// `corral lab placement` as a user runs it: every wake-up it made is
/// counted once, on one of its two CPUs, and a CPU that is not online is
/// refused by name.
#[test]
fn lab_placement_counts_each_wake_up_on_one_of_its_cpus() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() == "0" || online.is_empty() {
        eprintln!("SKIP lab_placement_counts_each_wake_up_on_one_of_its_cpus: needs two CPUs");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["lab", "placement", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let samples = v["placement"]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 250);
    let (a, b) = (&v["placement"]["cpus"][0], &v["placement"]["cpus"][1]);
    assert_ne!(a, b);
    let utils: Vec<u64> = samples
        .iter()
        .map(|s| s["util_avg"].as_u64().unwrap())
        .collect();
    if utils.iter().all(|&u| u == 0) {
        eprintln!("SKIP lab_placement_counts_each_wake_up_on_one_of_its_cpus: this kernel shows no se.avg.util_avg");
        return;
    }
    // The waker's duty rises: its utilization with it.
    let (first, last) = (&utils[..25], &utils[utils.len() - 25..]);
    assert!(
        first.iter().sum::<u64>() < last.iter().sum::<u64>(),
        "{utils:?}"
    );
    let pulls = &v["pulls"];
    assert!(pulls["pulled"].as_u64().unwrap() <= pulls["packed"].as_u64().unwrap());
    assert!(pulls["packed"].as_u64().unwrap() <= 20);
    // Timer wake-ups: up to as many, their busy CPU the placement's idle one
    // (the sleeper's previous CPU, where its timer fires), the spinner's
    // duty rising.
    let timers = &v["timers"];
    assert_eq!(timers["timer"], true);
    assert_eq!(timers["cpus"][0], *b);
    assert_eq!(timers["cpus"][1], *a);
    let spins: Vec<u64> = timers["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["util_avg"].as_u64().unwrap())
        .collect();
    // A round whose sleeper slept off CPU b, or whose spin began late,
    // is left out.
    assert!((125..=250).contains(&spins.len()), "{}", spins.len());
    assert!(
        spins[..25].iter().sum::<u64>() < spins[spins.len() - 25..].iter().sum::<u64>(),
        "{spins:?}"
    );
    // With a companion queued on the busy CPU: the lowest three duties,
    // each wake-up counted, on the same CPUs.
    let shared = &v["companion"];
    assert_eq!(shared["companion"], true);
    assert_eq!(shared["cpus"], v["placement"]["cpus"]);
    // (A round where the companion ran first is left out.)
    // A disturbed round is drawn again, up to 100 a level.
    let n = shared["samples"].as_array().unwrap().len();
    assert!(
        (38..=75).contains(&n),
        "{n}, {} left out",
        shared["left_out"]
    );
    let timers_shared = &v["timers_companion"];
    assert_eq!(
        (&timers_shared["companion"], &timers_shared["timer"]),
        (&true.into(), &true.into())
    );
    assert_eq!(timers_shared["cpus"], timers["cpus"]);
    let n = timers_shared["samples"].as_array().unwrap().len();
    assert!(
        (38..=75).contains(&n),
        "{n}, {} left out",
        timers_shared["left_out"]
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["lab", "placement", "--cpus", "0,4095"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("CPU 4095 is not online"));
}
