//! The RT class above the fair class: known answers.

use corral_sim::input::rtapp::parse;
use corral_sim::sched::classes::Classes;
use corral_sim::sched::fair::Fair;
use corral_sim::sched::machine::{Machine, Platform, TaskStats};
use corral_sim::sched::rt::RtBandwidth;

fn run(json: &str, cpus: usize, secs: f64, bw: RtBandwidth) -> Vec<TaskStats> {
    let w = parse(json, "test").unwrap();
    let k = Classes::new(cpus, Fair::eevdf(cpus), bw, 250);
    let mut m = Machine::new(Platform::uniform(cpus), w, k).unwrap();
    m.run_until((secs * 1e9) as u64);
    m.stats()
}

fn share(s: &TaskStats, secs: f64) -> f64 {
    s.cpu_ns as f64 / (secs * 1e9)
}

#[test]
fn a_fifo_hog_leaves_the_fair_class_its_reserve_only() {
    let json = r#"{"tasks": {
        "rt": {"policy": "SCHED_FIFO", "priority": 50, "run": 1000000},
        "fair": {"run": 1000000}
    }}"#;
    for bw in [RtBandwidth::fair_server(), RtBandwidth::throttling()] {
        let s = run(json, 1, 4.0, bw);
        let (rt, fair) = (share(&s[0], 4.0), share(&s[1], 4.0));
        println!("{bw:?}: rt {rt:.4}, fair {fair:.4}");
        // 950 ms of every 1 s (checked at 4 ms ticks).
        assert!((rt - 0.95).abs() < 0.01, "rt {rt}");
        assert!((fair - 0.05).abs() < 0.01, "fair {fair}");
    }
    // Alone, the fair server leaves RT the whole CPU; 2.6.32 throttling idles it.
    let alone = r#"{"tasks": {"rt": {"policy": "SCHED_FIFO", "run": 1000000}}}"#;
    let s = run(alone, 1, 2.0, RtBandwidth::fair_server());
    assert!(share(&s[0], 2.0) > 0.999);
    let s = run(alone, 1, 2.0, RtBandwidth::throttling());
    assert!((share(&s[0], 2.0) - 0.95).abs() < 0.01);
}

#[test]
fn rr_equals_take_turns_by_100_ms_and_fifo_equals_do_not() {
    let rr = r#"{"tasks": {"a": {"policy": "SCHED_RR", "run": 1000000},
                           "b": {"policy": "SCHED_RR", "run": 1000000}}}"#;
    let s = run(rr, 1, 2.0, RtBandwidth::fair_server());
    assert!((share(&s[0], 2.0) - 0.5).abs() < 0.01, "{s:?}");
    // 2 s in 100 ms turns: about 20 switches between them.
    assert!((9..=11).contains(&s[0].switches), "{}", s[0].switches);
    let fifo = rr.replace("SCHED_RR", "SCHED_FIFO");
    let s = run(&fifo, 1, 2.0, RtBandwidth::fair_server());
    assert!(share(&s[0], 2.0) > 0.999 && s[1].cpu_ns == 0, "{s:?}");
}

#[test]
fn a_waking_rt_task_preempts_fair_work_at_once_and_rt_spreads_over_cpus() {
    let json = r#"{"tasks": {
        "rt": {"policy": "SCHED_FIFO", "priority": 80, "loop": -1, "run": 500, "timer": {"ref": "t", "period": 5000}},
        "hog": {"instance": 3, "run": 1000000}
    }}"#;
    let s = run(json, 2, 2.0, RtBandwidth::fair_server());
    assert!(s[0].wakeups > 300);
    let worst = s[0].wakeup_latency.max;
    assert_eq!(worst, 0, "an RT wake-up waits for no fair task");
    // Two RT hogs on two CPUs: one each.
    let two = r#"{"tasks": {"rt": {"instance": 2, "policy": "SCHED_FIFO", "run": 1000000}}}"#;
    let s = run(two, 2, 1.0, RtBandwidth::fair_server());
    assert!(s.iter().all(|t| share(t, 1.0) > 0.99), "{s:?}");
}
