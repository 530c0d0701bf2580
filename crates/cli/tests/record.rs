//! `corral record` as a user runs it: a command recorded through tracefs,
//! the file replayed by `corral sim`, a killed recorder's instance cleaned
//! up by the next one, and bad input refused.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn corral() -> Command {
    Command::new(env!("CARGO_BIN_EXE_corral"))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Root, for tracefs; the live recordings run one at a time, each
/// holding the guard (a recorder removes the instances of recorders
/// it finds dead, and the probe before a command's recording loads both
/// CPUs). `None` (after a SKIP line) without root.
fn root(test: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP {test}: needs root (tracefs)");
        return None;
    }
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

#[test]
fn privileged_a_recorded_command_replays_with_its_cpu_wake_ups_and_exit_code() {
    let Some(_serial) =
        root("privileged_a_recorded_command_replays_with_its_cpu_wake_ups_and_exit_code")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.json");
    // A frame loop (100 periods of 10 ms, 2 ms of CPU each) and a child
    // process; the shell's status is 3.
    let exe = env!("CARGO_BIN_EXE_corral");
    let script = format!(
        "{exe} lab work frame --period-us 10000 --work-us 2000 --seconds 1 >/dev/null & sleep 0.2; wait; exit 3"
    );
    let out = corral()
        .args(["record", "-o"])
        .arg(&rec)
        .args(["--", "sh", "-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains(" events, 0 lost"), "{}", text(&out));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    let threads = v["corral_recording"]["threads"].as_object().unwrap();
    // (The recorder, also `corral`, ran beside it: background.)
    let (frame, live) = threads
        .iter()
        .find(|(n, t)| n.starts_with("corral-") && t["background"] == false)
        .unwrap_or_else(|| panic!("no frame loop in {:?}", threads.keys()));
    // It sleeps to absolute deadlines: found periodic, replayed to its
    // live instants.
    let period = live["period_us"].as_u64();
    assert!(
        period.is_some_and(|p| p.abs_diff(10_000) < 500),
        "{frame}: period {period:?}"
    );
    assert!(
        v["tasks"][frame]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("corral_until")),
        "{frame}"
    );
    // 100 frames of 2 ms: ~200 ms of CPU and ~100 wake-ups.
    let cpu = live["cpu_ms"].as_f64().unwrap();
    assert!((170.0..260.0).contains(&cpu), "{frame}: {cpu} ms");
    let wakeups = live["wakeups"].as_u64().unwrap();
    assert!((90..=115).contains(&wakeups), "{frame}: {wakeups} wake-ups");
    assert!(
        threads.keys().any(|n| n.starts_with("sleep-")),
        "{:?}",
        threads.keys()
    );
    // The shell waits for its children: woken by their exits, not by a timer.
    let tasks = v["tasks"].as_object().unwrap();
    let sh = tasks.iter().find(|(n, _)| n.starts_with("sh-")).unwrap().1;
    assert!(
        sh.as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("corral_block")),
        "{sh}"
    );
    // It says how this boot's kernel places wake-ups, as measured before
    // it or by an earlier recording or `corral lab placement` on this
    // boot (kept in /run/corral/placement.json), and the replay places
    // them so.
    let about = &v["corral_recording"];
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let kept: Option<serde_json::Value> = std::fs::read_to_string("/run/corral/placement.json")
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    match kept {
        Some(k) if k["verdict"] == "unknown" => {
            assert_eq!(about["placement_measured"], false, "{about}")
        }
        Some(k) => {
            assert_eq!(about["placement_measured"], true, "{about}");
            assert_eq!(about["vcpu_pack_util"], k["vcpu_pack_util"], "{about}");
        }
        // One CPU, or a probe that failed or could not run here.
        None => assert!(
            online.trim() == "0"
                || text(&out).contains("probe failed")
                || text(&out).contains("not measured"),
            "{}",
            text(&out)
        ),
    }
    // The replay: the same CPU, and the whole within 10 % of its length.
    let out = corral()
        .arg("sim")
        .arg(&rec)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).contains("replayed so"),
        about["vcpu_pack_util"].is_u64(),
        "{}",
        text(&out)
    );
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sim = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == frame.as_str())
        .unwrap();
    let sim_cpu = sim["cpu_s"].as_f64().unwrap() * 1e3;
    assert!((sim_cpu - cpu).abs() < 1.0, "{sim_cpu} against {cpu}");
    let end = |ts: &mut dyn Iterator<Item = &serde_json::Value>, key: &str| {
        ts.filter_map(|t| t[key].as_f64()).fold(0.0, f64::max)
    };
    let live_end = end(&mut threads.values(), "exited_s");
    let sim_end = end(&mut s["tasks"].as_array().unwrap().iter(), "exited_s");
    assert!(
        (sim_end - live_end).abs() < 0.1 * live_end,
        "{sim_end} s simulated against {live_end} s"
    );
    // And its human form names the recording.
    let out = corral().arg("sim").arg(&rec).output().unwrap();
    assert!(
        text(&out).contains("Replaying corral record -- sh -c"),
        "{}",
        text(&out)
    );
}

#[test]
fn privileged_a_killed_recorder_s_instance_is_removed_by_the_next() {
    let Some(_serial) = root("privileged_a_killed_recorder_s_instance_is_removed_by_the_next")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut rec = corral()
        .args(["record", "--no-probe", "-o"])
        .arg(dir.path().join("a.json"))
        .args(["--", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = rec.id();
    // Its child, to end it ourselves once the recorder is gone.
    let children = format!("/proc/{pid}/task/{pid}/children");
    let mut sleep = None;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(20));
        sleep = std::fs::read_to_string(&children).ok().and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|p| p.parse::<i32>().ok())
        });
        if sleep.is_some() {
            break;
        }
    }
    let sleep = sleep.expect("the recorder started its command");
    rec.kill().unwrap();
    rec.wait().unwrap();
    // The command the killed recorder started (this test's grandchild).
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(sleep).unwrap(),
        rustix::process::Signal::KILL,
    );
    let out = corral()
        .args(["record", "-o"])
        .arg(dir.path().join("b.json"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("removed the trace instance corral-record-{pid}")),
        "{}",
        text(&out)
    );
}

#[test]
fn bad_requests_say_what_is_wrong() {
    let out = corral().arg("record").output().unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("nothing to record"), "{}", text(&out));
    let out = corral()
        .args(["record", "--from", "/nonexistent/trace.txt"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).contains("/nonexistent/trace.txt"),
        "{}",
        text(&out)
    );
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello\nworld\n").unwrap();
    let out = corral()
        .arg("record")
        .arg("--from")
        .arg(&junk)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("no thread ran in it"), "{}", text(&out));
    let out = corral()
        .args(["record", "--", "/nonexistent/prog"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).contains("cannot run /nonexistent/prog: no such program, or not executable"),
        "{}",
        text(&out)
    );
    let out = corral()
        .args(["record", "--", "corral-no-such-program"])
        .output()
        .unwrap();
    assert!(
        text(&out).contains("not executable in PATH"),
        "{}",
        text(&out)
    );
    let out = corral()
        .args(["record", "--seconds", "0", "--", "true"])
        .output()
        .unwrap();
    assert!(
        text(&out).contains("--seconds must be above 0"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_text_trace_from_another_tool_converts_without_root() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("perf.json");
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../sim/tests/data/perf-script-sched.txt"
    );
    let out = corral()
        .args(["record", "--scope-pid", "12001", "--from", trace, "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(": 4 threads ran"), "{}", text(&out));
    let out = corral().arg("sim").arg(&out_file).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("sleep-12004"), "{}", text(&out));
}

/// Runs `script` with `sh -c` as a shell user records, `$CORRAL` being
/// corral and `$REC` where the recording goes; it must succeed. Its output
/// and the recording.
fn record_from_shell(script: &str) -> (Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.json");
    let out = Command::new("sh")
        .args(["-c", script])
        .env("CORRAL", env!("CARGO_BIN_EXE_corral"))
        .env("REC", &rec)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    (out, v)
}

#[test]
fn privileged_scope_pid_from_a_shell_records_the_shell_s_work_not_corral() {
    let Some(_serial) =
        root("privileged_scope_pid_from_a_shell_records_the_shell_s_work_not_corral")
    else {
        return;
    };
    // `corral record --scope-pid $$` as a shell user runs it: corral is
    // one of the shell's descendants, beside a busy loop.
    let (_, v) = record_from_shell(
        "sh -c 'while :; do :; done' & L=$!; \"$CORRAL\" record -o \"$REC\" --scope-pid $$ --seconds 1; s=$?; kill $L; exit $s",
    );
    // The workload's threads; what ran beside it (another test's corral,
    // a kworker) is kept apart as background.
    let names: Vec<&String> = v["corral_recording"]["threads"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, t)| t["background"] == false)
        .map(|(n, _)| n)
        .collect();
    assert!(names.iter().any(|n| n.starts_with("sh-")), "{names:?}");
    assert!(names.iter().all(|n| !n.starts_with("corral-")), "{names:?}");
}

#[test]
fn a_recording_s_replay_ticks_where_the_live_ticks_were() {
    // Two CPU hogs on one CPU: the first switch between them waits for a
    // tick (the slice ends between ticks). The recording began 1 ms into
    // a 4 ms tick (HZ 250) on CLOCK_MONOTONIC, so the replay's first tick
    // is 3 ms in; without the start it falls half a tick in (the
    // default).
    let dir = tempfile::tempdir().unwrap();
    let first_switch_ms = |start: Option<u64>| {
        let rec = dir.path().join("rec.json");
        let start = start.map_or(String::new(), |s| format!(", \"start_mono_ns\": {s}"));
        std::fs::write(
            &rec,
            format!(
                r#"{{"tasks": {{"a": {{"run": 50000}}, "b": {{"run": 50000}}}},
"global": {{"duration": -1}},
"corral_recording": {{"cpus": 1, "seconds": 0.1{start}}}}}"#
            ),
        )
        .unwrap();
        let trace = dir.path().join("t.json");
        let out = corral()
            .arg("sim")
            .arg(&rec)
            .arg("--trace")
            .arg(&trace)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
        let first = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"].as_str().is_some_and(|n| n == "a" || n == "b"))
            .map(|e| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        first / 1000.0
    };
    let with = first_switch_ms(Some(11_001_000_000));
    let without = first_switch_ms(None);
    assert!((with - 3.0).abs() < 0.1, "first switch at {with} ms");
    assert!((without - 2.0).abs() < 0.1, "first switch at {without} ms");
}

#[test]
fn a_replay_says_how_many_threads_come_within_a_quarter_of_live() {
    // Three threads of 5 ms on four CPUs replay as 5 ms each: the live
    // figures of a (5 ms) and b (6.2 ms) agree, c's (7 ms) does not; the
    // background thread d is not counted. e-1 and f-2 each run 100 µs
    // and sleep 1 ms 30 times, alone on their CPUs: woken 29 times at
    // once (no costs), so a live p99 of 0 agrees (e-1, program e) and one
    // of 100 µs does not (f-2, program f); their CPU (3 ms) agrees with
    // live's 3.2 and 3.0 ms, pooled by program as by thread.
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.json");
    std::fs::write(
        &rec,
        r#"{"tasks": {"a": {"loop": 1, "run": 5000}, "b": {"loop": 1, "run": 5000},
  "c": {"loop": 1, "run": 5000}, "d": {"loop": 1, "run": 5000, "corral_background": true},
  "e-1": {"loop": 30, "run": 100, "sleep": 1000}, "f-2": {"loop": 30, "run": 100, "sleep": 1000}},
"global": {"duration": -1},
"corral_recording": {"cpus": 6, "seconds": 0.04, "threads": {
  "a": {"cpu_ms": 5.0, "wakeups": 0},
  "b": {"cpu_ms": 6.2, "wakeups": 0},
  "c": {"cpu_ms": 7.0, "wakeups": 0},
  "d": {"cpu_ms": 1.0, "wakeups": 0, "background": true},
  "e-1": {"cpu_ms": 3.2, "wakeups": 29, "latency_p99_us": 0.0},
  "f-2": {"cpu_ms": 3.0, "wakeups": 29, "latency_p99_us": 100.0}},
 "by_comm": {
  "e": {"cpu_ms": 3.2, "wakeups": 29, "latency_p99_us": 0.0, "threads": 1},
  "f": {"cpu_ms": 3.0, "wakeups": 29, "latency_p99_us": 100.0, "threads": 1},
  "c": {"cpu_ms": 9.0, "wakeups": 0, "threads": 1}}}}"#,
    )
    .unwrap();
    let out = corral().arg("sim").arg(&rec).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Within 25 % of live: CPU time of 4 of 5 threads"),
        "{}",
        text(&out)
    );
    let out = corral()
        .arg("sim")
        .arg(&rec)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["agreement"]["cpu_threads"], serde_json::json!([4, 5]));
    assert_eq!(v["agreement"]["p99_threads"], serde_json::json!([1, 2]));
    // c's program (9 ms live) does not agree; e's and f's do.
    assert_eq!(v["agreement"]["cpu_programs"], serde_json::json!([2, 3]));
    assert_eq!(v["agreement"]["p99_programs"], serde_json::json!([1, 2]));
}

#[test]
fn a_platform_file_of_costs_alone_replays_a_recording_on_its_own_cpus() {
    // `corral lab costs` prints a `[costs]` section "for a platform file":
    // such a file says what the scheduler's work costs, not how many CPUs
    // the machine has, so a recording keeps its own; a file that gives
    // `cpus` decides.
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.json");
    std::fs::write(
        &rec,
        r#"{"tasks": {"a": {"loop": 1, "run": 5000}, "b": {"loop": 1, "run": 5000},
  "c": {"loop": 1, "run": 5000}},
"global": {"duration": -1},
"corral_recording": {"cpus": 3, "seconds": 0.01}}"#,
    )
    .unwrap();
    let cpus_of = |platform: &str| {
        let toml = dir.path().join("costs.toml");
        std::fs::write(&toml, platform).unwrap();
        let out = corral()
            .arg("sim")
            .arg(&rec)
            .arg("--platform")
            .arg(&toml)
            .arg("--json")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["cpus"].as_u64().unwrap()
    };
    assert_eq!(
        cpus_of("[costs]\ncontext_switch = \"0.92us\"\nwakeup = \"31.44us\"\n"),
        3
    );
    assert_eq!(cpus_of("cpus = 1\n[costs]\nwakeup = \"31.44us\"\n"), 1);
    // --hotplug names the recording's third CPU.
    let toml = dir.path().join("costs.toml");
    std::fs::write(&toml, "[costs]\nwakeup = \"31.44us\"\n").unwrap();
    let out = corral()
        .arg("sim")
        .arg(&rec)
        .arg("--platform")
        .arg(&toml)
        .args(["--hotplug", "1ms:cpu2=off"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn privileged_scope_pid_recording_ends_when_the_scope_has_exited() {
    let Some(_serial) = root("privileged_scope_pid_recording_ends_when_the_scope_has_exited")
    else {
        return;
    };
    // A shell that sleeps a second, works a moment and exits, recorded
    // with room for 30 s: the recording ends within a few seconds of its
    // exit.
    let t0 = std::time::Instant::now();
    let (out, v) = record_from_shell(
        "sh -c 'sleep 1; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done' & P=$!; \"$CORRAL\" record -o \"$REC\" --scope-pid $P --seconds 30",
    );
    let took = t0.elapsed();
    assert!(
        text(&out).contains("every thread in scope has exited"),
        "{}",
        text(&out)
    );
    assert!(took < std::time::Duration::from_secs(10), "took {took:?}");
    assert!(
        v["corral_recording"]["threads"]
            .as_object()
            .unwrap()
            .keys()
            .any(|n| n.starts_with("sh-")),
        "{v}"
    );
}

/// The autogroup of the test's session, when the kernel runs autogroups
/// and this process is in the root cpu cgroup (where they apply).
fn own_autogroup(test: &str) -> Option<String> {
    if std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .is_ok_and(|t| t.trim() != "1")
    {
        eprintln!("SKIP {test}: autogroups are off on this kernel");
        return None;
    }
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let cpu = cgroups.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        (ctrl.split(',').any(|c| c == "cpu") || (id == "0" && ctrl.is_empty())).then_some(path)
    });
    if cpu != Some("/") {
        eprintln!("SKIP {test}: this process is not in the root cpu cgroup ({cpu:?}), where autogroups apply");
        return None;
    }
    let Some(group) = std::fs::read_to_string("/proc/self/autogroup")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(String::from))
    else {
        eprintln!("SKIP {test}: no /proc/self/autogroup");
        return None;
    };
    Some(group)
}

#[test]
fn privileged_a_root_cgroup_thread_replays_in_its_session_s_autogroup() {
    let test = "privileged_a_root_cgroup_thread_replays_in_its_session_s_autogroup";
    let Some(_serial) = root(test) else {
        return;
    };
    let Some(ours) = own_autogroup(test) else {
        return;
    };
    // A shell of this session, and one in a session of its own (`setsid`
    // makes a new autogroup); both busy long enough to be read.
    let (_, v) = record_from_shell(
        "\"$CORRAL\" record -o \"$REC\" -- sh -c 'setsid sh -c \"i=0; while [ \\$i -lt 300000 ]; do i=\\$((i+1)); done\"; sleep 0.3'",
    );
    let threads = v["corral_recording"]["threads"].as_object().unwrap();
    let groups: Vec<(&String, Option<&str>)> = threads
        .iter()
        .filter(|(n, t)| n.starts_with("sh-") && t["background"] == false)
        .map(|(n, _)| (n, v["tasks"][n.as_str()]["taskgroup"].as_str()))
        .collect();
    // One shell is the session's; the other's group is its own.
    let mine = groups.iter().filter(|(_, g)| *g == Some(ours.as_str()));
    let own = groups
        .iter()
        .filter(|(_, g)| g.is_some_and(|g| g.starts_with("/autogroup-") && g != ours));
    assert_eq!(
        (groups.len(), mine.count(), own.count()),
        (2, 1, 1),
        "{groups:?} ({ours} is this session's)"
    );
}
