//! Traces, charts and rt-app logs of a recorded run.

use corral_sim::input::platform::{build, PlatformSpec};
use corral_sim::out::report::summarise;
use corral_sim::sched::fair::Flavour;
use corral_sim::{input::rtapp, out::trace};

fn spec(cpus: usize) -> PlatformSpec {
    PlatformSpec::uniform(cpus)
}

const PERIODIC: &str = r#"{"tasks": {
    "p": {"loop": -1, "run": 1000, "timer": {"ref": "t", "period": 10000}},
    "hog": {"instance": 2, "run": 1000000}
}}"#;

#[test]
fn the_trace_has_a_track_per_cpu_and_every_run_slice() {
    let w = rtapp::parse(PERIODIC, "t").unwrap();
    let mut m = build(w, &spec(2), Flavour::Eevdf).unwrap();
    m.record();
    m.run_until(500_000_000);
    let v: serde_json::Value = serde_json::from_str(&trace::perfetto(&m, &[])).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let tracks: Vec<&str> = ev
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tracks, ["CPU 0", "CPU 1"]);
    // A simulated corral's changes go on a track of their own.
    let marks = [(2_000_000, "move p to latency".to_string())];
    let with: serde_json::Value = serde_json::from_str(&trace::perfetto(&m, &marks)).unwrap();
    let mark = with["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "move p to latency")
        .expect("the change");
    assert_eq!(
        (mark["tid"].as_u64(), mark["ts"].as_f64()),
        (Some(3), Some(2000.0))
    );
    // The slices add up to the CPU time each task got.
    let stats = m.stats();
    for (t, st) in stats.iter().enumerate() {
        let us: f64 = ev
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == st.name.as_str())
            .map(|e| e["dur"].as_f64().unwrap())
            .sum();
        assert!(
            (us * 1e3 - st.cpu_ns as f64).abs() < 1e3,
            "task {t}: {us} µs in slices, {} ns of CPU",
            st.cpu_ns
        );
    }
    // No CPU runs two slices at once.
    let mut s = m.slices().to_vec();
    s.sort_by_key(|x| (x.cpu, x.start));
    assert!(s
        .windows(2)
        .all(|w| w[0].cpu != w[1].cpu || w[0].end <= w[1].start));
    let svg = trace::svg(&m, 0, 100_000_000);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.matches("<rect").count() > 20);
}

#[test]
fn rtapp_logs_show_each_period_with_its_slack() {
    // Alone on a CPU: 1 ms of work every 10 ms, each period begun 50 µs
    // after its timer's expiry (the timer slack of a normal task's sleep,
    // on an idle CPU), leaves 8.95 ms of slack and logs 50 µs of wu_lat.
    let w = rtapp::parse(
        r#"{"tasks": {"p": {"loop": -1, "run": 1000, "timer": {"ref": "t", "period": 10000}}}}"#,
        "t",
    )
    .unwrap();
    let mut m = build(w, &spec(1), Flavour::Eevdf).unwrap();
    m.record();
    m.run_until(1_000_000_000);
    let dir = tempfile::tempdir().unwrap();
    let files = trace::rtapp_logs(&m, dir.path()).unwrap();
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let lines: Vec<Vec<i64>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    assert!((98..=100).contains(&lines.len()), "{}", lines.len());
    for l in &lines[1..] {
        // idx perf run period start end rel_st slack c_duration c_period wu_lat
        assert_eq!(
            (l[2], l[3], l[7], l[8], l[9], l[10]),
            (1000, 10000, 8950, 1000, 10000, 50),
            "{l:?}"
        );
    }
    let s = summarise(&m);
    assert_eq!(s.tasks[0].slack_p50_us, Some(8950.0));
}

#[test]
fn same_workload_same_json() {
    let run = || {
        let w = rtapp::parse(PERIODIC, "t").unwrap();
        let mut m = build(w, &spec(2), Flavour::Eevdf).unwrap();
        m.record();
        m.track_sharing();
        m.run_until(1_000_000_000);
        (
            serde_json::to_string(&summarise(&m)).unwrap(),
            trace::perfetto(&m, &[]),
        )
    };
    assert_eq!(run(), run());
}
