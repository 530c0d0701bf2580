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
