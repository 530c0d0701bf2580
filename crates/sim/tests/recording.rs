//! Recordings made by other tools: `perf script` output of the sched
//! events (a per-task `perf record` of `sh -c "ls /usr/bin > /dev/null;
//! sleep 0.02; ls / > /dev/null"` on this machine's 6.18 kernel, kept as
//! printed in `tests/data/perf-script-sched.txt`).

use corral_sim::input::recording::{Converter, Scope, Step};
use corral_sim::input::rtapp;

#[test]
fn a_per_task_perf_script_trace_converts_and_replays() {
    let text = include_str!("data/perf-script-sched.txt");
    let mut c = Converter::new(Scope::Tree([12001].into()), None);
    for line in text.lines() {
        c.line(line).unwrap();
    }
    let r = c.finish();
    let names: Vec<String> = r.threads.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["sh-12001", "ls-12003", "sleep-12004", "ls-12005"]);
    // sleep: blocked at .942153, seen again at its exit at .962342 (perf
    // saw neither its timer's wake-up nor its switch back in): a 20.2 ms
    // sleep.
    let sleep = &r.threads[2];
    assert!(
        sleep.steps.iter().any(|s| matches!(
            s,
            Step::Sleep {
                us: 20_189,
                absolute: false,
                ..
            }
        )),
        "{:?}",
        sleep.steps
    );
    assert_eq!(
        sleep.exited_ns,
        Some(79_284_962_342_000 - 79_284_929_603_000)
    );
    // Each child's birth is a wake-up by sh at its fork.
    assert_eq!(
        r.threads[0]
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Wake(_)))
            .count(),
        3
    );
    assert!(
        r.inferred_switches > 0,
        "perf's per-task view lacks switch-ins"
    );
    // It replays.
    let w = rtapp::parse(&r.to_json(false, "perf"), "perf.json").unwrap();
    assert_eq!(w.tasks.len(), 4);
}
