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
