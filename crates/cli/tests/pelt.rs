//! `corral lab pelt`: the simulator's PELT against this kernel's. Its own
//! test binary, so that no other test's load shares the CPUs with it.

use std::process::Command;

#[test]
fn the_simulated_util_avg_follows_the_kernels_within_lisas_tolerance() {
    let test = "the_simulated_util_avg_follows_the_kernels_within_lisas_tolerance";
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() == "0" {
        eprintln!("SKIP {test}: needs two online CPUs");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["lab", "pelt", "--seconds", "3", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for c in cases {
        // Two seconds compared of each: at least half the periods.
        let period_us = c["shape"]["period_us"].as_f64().unwrap();
        let want = 0.5 * 2e6 / period_us;
        assert!(
            c["periods"].as_f64().unwrap() >= want,
            "too few periods compared: {c}"
        );
    }
    assert!(
        out.status.success() && v["within"] == true,
        "outside LISA's tolerance: {}",
        serde_json::to_string_pretty(&v).unwrap()
    );
}
