//! `corral lab parallel` runs end to end (a tiny n: no timing is asserted).

use std::process::Command;

#[test]
fn lab_parallel_reports_every_thread_count() {
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "lab",
            "parallel",
            "--n",
            "22",
            "--max-threads",
            "3",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["n"], 22);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["threads"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(rows.iter().all(|r| r["wall_s"].as_f64().unwrap() > 0.0));
    assert_eq!(rows[0]["speedup"], 1.0);
    assert!(v["detectors"]["corral"].as_u64().unwrap() >= 1);
}

#[test]
fn lab_parallel_rejects_bad_options() {
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["lab", "parallel", "--seconds", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seconds"));
}

#[test]
fn lab_work_frame_ends_on_sigterm_with_its_figures() {
    // 5 ms frames with 0.5 ms of work, stopped as `corral lab real` stops it.
    let child = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "lab",
            "work",
            "frame",
            "--period-us",
            "5000",
            "--work-us",
            "500",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let out = child.wait_with_output().unwrap();
    let periods = t0.elapsed().as_micros() as u64 / 5000;
    assert!(out.status.success(), "{:?}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (frames, skipped, missed) = (
        v["frames"].as_u64().unwrap(),
        v["skipped"].as_u64().unwrap(),
        v["missed"].as_u64().unwrap(),
    );
    assert!(
        frames >= 1 && frames + skipped <= periods,
        "{v} in {periods} periods"
    );
    assert!(missed <= frames, "{v}");
    assert_eq!(
        (v["period_us"].as_u64(), v["work_us"].as_u64()),
        (Some(5000), Some(500))
    );
}

/// Issue 14: one user's idle connections (256 used to lock everyone out)
/// are capped per user, and root's requests are still answered. Timing is
/// `corral lab flood`'s report, not asserted here.
#[test]
fn privileged_one_users_idle_connections_do_not_lock_root_out() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP privileged_one_users_idle_connections_do_not_lock_root_out: needs root");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "lab",
            "flood",
            "--clients",
            "300",
            "--requests",
            "5",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(v["held"], 16, "{v}");
    assert_eq!(v["refused"], 284, "{v}");
    assert_eq!(v["failed"], 0, "{v}");
    assert_eq!(v["status_ms"].as_array().unwrap().len(), 5, "{v}");
}

/// Issue 14's kill test, short: SIGKILL at random moments beside process
/// churn, then a start and SIGTERM, leave no group, record or moved thread.
#[test]
fn privileged_lab_crash_a_killed_daemon_leaves_nothing_behind() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP privileged_lab_crash_a_killed_daemon_leaves_nothing_behind: needs root");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "lab",
            "crash",
            "--iterations",
            "4",
            "--max-kill-ms",
            "600",
            "--json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("\"churn\": \"none\"") {
        eprintln!("note: stress-ng missing, the kill test ran without churn");
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {text}{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["iterations"], 4, "{v}");
    assert_eq!(v["groups_left"], 0, "{v}");
    assert_eq!(v["records_left"], 0, "{v}");
    assert_eq!(v["differed"], 0, "{v}");
    assert_eq!(v["failures"], 0, "{v}");
    assert_eq!(v["compared"], 16, "{v}");
    assert!(out.status.success(), "{v}");
}

/// Issue 14's starvation guard: a plan that starves a light thread (the
/// shared group at 2 shares beside two CPU-bound threads a rule makes
/// latency-critical). Without the guard it gets below the floor for
/// seconds while waiting; with it, never after the first interval.
#[test]
fn privileged_lab_starve_the_guard_holds_the_floor() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP privileged_lab_starve_the_guard_holds_the_floor: needs root");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["lab", "starve", "--seconds", "6", "--settle", "2", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let variants = v["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2, "{v}");
    assert_eq!(variants[0]["guard"], false);
    assert!(
        variants[0]["violations"].as_u64().unwrap() >= 2,
        "without the guard the plan should starve the light thread: {v}"
    );
    assert_eq!(variants[1]["violations"], 0, "{v}");
    assert!(
        !variants[1]["guard_log"].as_array().unwrap().is_empty(),
        "the guard said nothing: {v}"
    );
}

/// Issue 14's fuzzing, short: every parser of outside input, no panic, no
/// hang (the full run is `corral lab fuzz`, a million inputs each).
#[test]
fn lab_fuzz_finds_no_panic_in_a_short_run() {
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["lab", "fuzz", "--cases", "3000", "--seed", "7", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(v["targets"].as_array().unwrap().len() >= 13, "{v}");
    for t in v["targets"].as_array().unwrap() {
        assert_eq!(t["cases"], 3000, "{t}");
        assert_eq!(t["panics"], 0, "{t}");
    }
    assert!(out.status.success());
}

/// The medium guarantee, short: with corral the periodic thread is
/// classified medium and placed in the medium group, on cgroups by its
/// weight and on per-thread levers with a nice below 0, and it gets more
/// of a CPU than beside the hogs without corral (the figures are `corral
/// lab medium`'s).
#[test]
fn privileged_lab_medium_guarantees_by_weight_and_by_nice() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP privileged_lab_medium_guarantees_by_weight_and_by_nice: needs root");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["lab", "medium", "--seconds", "4", "--alone", "4", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let variants = v["variants"].as_array().unwrap();
    let names: Vec<&str> = variants
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["baseline", "cgroups", "threads"], "{v}");
    let base = variants[0]["share"].as_f64().unwrap();
    for x in &variants[1..] {
        assert_eq!(x["class"], "medium", "{v}");
        assert_eq!(x["group"], "medium", "{v}");
        assert!(x["share"].as_f64().unwrap() > base, "{v}");
    }
    assert!(variants[2]["nice"].as_i64().unwrap() < 0, "{v}");
}
