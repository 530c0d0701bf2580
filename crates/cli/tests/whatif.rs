//! `corral sim --compare` as a user runs it: a recording replayed with no
//! policy and under corral, over phases of its periodic thread, and the
//! requests it refuses.

use corral_sim::corral::whatif::median;
use std::process::{Command, Output};

fn corral() -> Command {
    Command::new(env!("CARGO_BIN_EXE_corral"))
}

/// `corral sim FILE ARGS…`.
fn sim(file: &std::path::Path, args: &[&str]) -> Output {
    corral().arg("sim").arg(file).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A recording as `corral record` writes it: a 10 ms loop running 1 ms at
/// its live instants beside two CPU hogs, on 1 CPU, for 4 s.
fn recording(dir: &std::path::Path) -> std::path::PathBuf {
    let mut events = String::new();
    for i in 1..=400 {
        events += &format!("\"corral_until{i}\": {}, \"run{i}\": 1000, ", i * 10_000);
    }
    let events = events.trim_end_matches(", ");
    let json = format!(
        r#"{{"tasks": {{
  "loop-100": {{"loop": 1, {events}}},
  "hog-200": {{"loop": 1, "run": 4000000}},
  "hog-201": {{"loop": 1, "run": 4000000}}
}},
"global": {{"duration": -1}},
"corral_recording": {{"cpus": 1, "seconds": 4.0, "threads": {{
  "loop-100": {{"background": false, "cpu_ms": 400, "latency_p99_us": 1500, "period_us": 10000, "exited_s": 4.0}},
  "hog-200": {{"background": false, "cpu_ms": 3800, "latency_p99_us": 0, "period_us": null, "exited_s": 4.0}},
  "hog-201": {{"background": false, "cpu_ms": 3800, "latency_p99_us": 0, "period_us": null, "exited_s": 4.0}}
}}, "by_comm": {{
  "hog": {{"threads": 2, "cpu_ms": 7600, "wakeups": 0, "latency_p50_us": 0, "latency_p99_us": 0}}
}}}}}}"#
    );
    let f = dir.join("rec.json");
    std::fs::write(&f, json).unwrap();
    f
}

#[test]
fn compare_replays_a_recording_with_and_without_corral_over_phases() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording(dir.path());
    let out = sim(&rec, &["--compare"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = text(&out);
    assert!(s.contains("What if corral managed it"), "{s}");
    assert!(s.contains("9 phases"), "{s}");
    assert!(s.contains("loop-100 (every 10.0 ms)"), "{s}");
    assert!(s.lines().any(|l| l.starts_with("hog ")), "{s}");
    assert!(s.contains("Whole (the scope"), "{s}");
    // Where the daemon had the loop: a group of its (it is not pinned).
    assert!(
        s.contains("Under corral (the recorded phase): loop-100 in its "),
        "{s}"
    );
    // The daemon's own CPU time, when given, runs beside the workload
    // under corral and is not one of its rows.
    let out = sim(
        &rec,
        &[
            "--compare",
            "--phases",
            "1",
            "--daemon-cost",
            "1500,300",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Nor part of the whole, whose CPU is the workload's and which ends
    // with it (the daemon's thread runs to the end of the replay, 16 s).
    let cpu = |pol: &str| v["whole"][pol]["cpu_s"][0].as_f64().unwrap();
    assert!(
        (cpu("corral") - cpu("none")).abs() < 0.01,
        "{} {}",
        cpu("corral"),
        cpu("none")
    );
    let ended = |pol: &str| v["whole"][pol]["ended_s"][0].as_f64().unwrap();
    assert!(ended("corral") < 10.0, "{}", ended("corral"));
    assert!(
        ended("corral") >= ended("none"),
        "{} {}",
        ended("corral"),
        ended("none")
    );

    let out = sim(
        &rec,
        &["--compare", "--phases", "5", "--seed", "3", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["phases"], 5);
    assert_eq!(v["seed"], 3);
    // Phase 0 is the recording; the others delay the loop within a period.
    let offsets: Vec<u64> = v["offsets_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o[0].as_u64().unwrap())
        .collect();
    assert_eq!(offsets.len(), 5);
    assert_eq!(offsets[0], 0);
    assert!(offsets[1..].iter().all(|&o| o < 10_000), "{offsets:?}");
    assert!(offsets[1..].iter().any(|&o| o > 0), "{offsets:?}");
    let row = &v["rows"][0];
    assert_eq!(row["name"], "loop-100");
    let p99 = |pol: &str| -> Vec<f64> {
        row[pol]["latency_p99_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let (none, managed) = (p99("none"), p99("corral"));
    assert_eq!((none.len(), managed.len()), (5, 5));
    // The ratio quoted is of the medians.
    let r = row["p99_ratio_of_medians"]
        .as_f64()
        .unwrap_or_else(|| panic!("{none:?} {managed:?}"));
    assert!((r - median(managed) / median(none)).abs() < 1e-9);
    assert_eq!(row["live"]["latency_p99_us"], 1500.0);
    // Every replay ran the loop's 400 periods.
    for pol in ["none", "corral"] {
        for w in row[pol]["wakeups"].as_array().unwrap() {
            assert!(w.as_u64().unwrap() >= 400, "{pol}: {w}");
        }
    }
    // The same seed, the same phases.
    let again = sim(
        &rec,
        &["--compare", "--phases", "5", "--seed", "3", "--json"],
    );
    let w: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(w["offsets_us"], v["offsets_us"]);
    assert_eq!(w["rows"], v["rows"]);
}

#[test]
fn compare_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.json");
    std::fs::write(
        &plain,
        r#"{"tasks": {"a": {"run": 1000, "sleep": 9000}}, "global": {"duration": 1}}"#,
    )
    .unwrap();
    // No periodic threads named: one phase only.
    let out = sim(&plain, &["--compare", "--phases", "3"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("has no periodic threads to shift"),
        "{}",
        text(&out)
    );
    // Without --phases it runs one phase.
    let out = sim(&plain, &["--compare"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("phases"), "{}", text(&out));
    // corral needs group scheduling.
    let out = sim(&plain, &["--compare", "--kernel", "o1"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("needs group scheduling"),
        "{}",
        text(&out)
    );
    // The daemon's cost: two figures, and only where the daemon runs.
    let out = sim(&plain, &["--compare", "--daemon-cost", "1500"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("want STEP_US,QUICK_US"),
        "{}",
        text(&out)
    );
    let out = sim(&plain, &["--daemon-cost", "1500,300"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("read only with --policy corral or --compare"),
        "{}",
        text(&out)
    );
    // --phases belongs to --compare; --compare is not a policy.
    for args in [
        &["--phases", "3"][..],
        &["--compare", "--policy", "corral"][..],
    ] {
        let out = sim(&plain, args);
        assert!(!out.status.success(), "{args:?}: {}", text(&out));
    }
}
