//! The older run-queue models — Linux 2.4 (`linux24`), paper 004's
//! multi-level queue (`mlq:N`), the O(1) scheduler (`o1`) and BFS (`bfs`)
//! — against what their formulas predict. Expected figures are computed
//! here from the formulas (written out again, not taken from the models).

use corral_sim::engine::Ns;
use corral_sim::models::Model;
use corral_sim::sched::kernel::{SchedClass, Work};
use corral_sim::sched::machine::{Machine, Platform, TaskStats};

fn old_model(name: &str, ncpus: usize, hz: u32) -> Option<Box<dyn SchedClass>> {
    name.parse::<Model>().unwrap().run_queue(ncpus, hz)
}
use corral_sim::input::rtapp::parse;

/// Linux 2.4 and the multi-level queue run at i386's HZ 100 (the paper's
/// kernel); O(1) and BFS at HZ 250 (2.6's default from 2.6.13).
fn hz_of(model: &str) -> u32 {
    if model == "linux24" || model.starts_with("mlq") {
        100
    } else {
        250
    }
}

const MODELS: [&str; 5] = ["linux24", "mlq:3", "mlq:8", "o1", "bfs"];

fn machine(model: &str, json: &str, cpus: usize) -> Machine<Box<dyn SchedClass>> {
    let hz = hz_of(model);
    let w = parse(json, "test").unwrap();
    let k = old_model(model, cpus, hz).unwrap();
    let p = Platform {
        hz,
        ..Platform::uniform(cpus)
    };
    Machine::new(p, w, k).unwrap()
}

fn run(model: &str, json: &str, cpus: usize, secs: f64) -> Vec<TaskStats> {
    let mut m = machine(model, json, cpus);
    m.run_until((secs * 1e9) as Ns);
    m.stats()
}

fn share(s: &TaskStats, secs: f64) -> f64 {
    s.cpu_ns as f64 / (secs * 1e9)
}

/// 2.4's slice in ticks at HZ 100: `((20 − nice) >> 2) + 1`.
fn nice_to_ticks_hz100(nice: i32) -> i32 {
    ((20 - nice) >> 2) + 1
}

/// O(1)'s `task_timeslice` in jiffies: `max(DEF · (140 − (120 + nice)) /
/// 20, MIN)` for nice ≥ 0, DEF = 100 ms and MIN = 5 ms in jiffies.
fn o1_ticks(nice: i32, hz: u64) -> u64 {
    let def = (100 * hz / 1000).max(1);
    let min = (5 * hz / 1000).max(1);
    (def * (20 - nice as u64) / 20).max(min)
}

#[test]
fn two_nice_0_hogs_on_one_cpu_split_it_evenly() {
    for model in MODELS {
        let s = run(
            model,
            r#"{"tasks": {"hog": {"instance": 2, "run": 1000000}}}"#,
            1,
            10.0,
        );
        let (a, b) = (share(&s[0], 10.0), share(&s[1], 10.0));
        println!("{model}: {a:.4} / {b:.4}");
        assert!(
            (a - 0.5).abs() < 0.05 && (b - 0.5).abs() < 0.05,
            "{model}: {a} {b}"
        );
        assert!(a + b > 0.999, "{model}: the CPU never idles");
    }
}

#[test]
fn nice_0_beats_nice_10_by_each_models_formula() {
    let json = r#"{"tasks": {
        "n0": {"priority": 0, "run": 1000000},
        "n10": {"priority": 10, "run": 1000000}
    }}"#;
    for model in MODELS {
        let hz = hz_of(model) as u64;
        let tick_ms = 1000.0 / hz as f64;
        let want = match model {
            // Each epoch both run their whole counter, then a recalculation
            // gives both NICE_TO_TICKS again: 6 : 3 ticks at HZ 100.
            "linux24" | "mlq:3" | "mlq:8" => {
                let (a, b) = (nice_to_ticks_hz100(0), nice_to_ticks_hz100(10));
                a as f64 / (a + b) as f64
            }
            // Both are hogs (sleep_avg 0, not interactive): each runs its
            // slice and expires; 100 ms : 50 ms (25 : 12 jiffies at HZ 250).
            "o1" => {
                let (a, b) = (o1_ticks(0, hz), o1_ticks(10, hz));
                a as f64 / (a + b) as f64
            }
            // Deadlines now + rr·ratio: a = 6 ms (nice 0), b = 6 ms · 1.1^10
            // (nice 10). A quota of 6 ms ends at the first tick with less than
            // 0.1 ms left: Q = ceil(5.9 ms / tick) ticks (8 ms at HZ 250).
            // When the nice-10 task takes a new deadline t + b, the nice-0
            // one (deadline t − Q + a) runs quota j while t + (j−1)·Q + a <
            // t + b: k = floor((b − a) / Q) + 1 quotas to its one.
            "bfs" => {
                let (a, b) = (6.0, 6.0 * 1.1f64.powi(10));
                let q = (5.9 / tick_ms).ceil() * tick_ms;
                let k = ((b - a) / q).floor() + 1.0;
                k / (k + 1.0)
            }
            _ => unreachable!(),
        };
        let s = run(model, json, 1, 10.0);
        let got = share(&s[0], 10.0);
        println!("{model}: nice 0 gets {got:.4}, formula {want:.4}");
        assert!(s[0].cpu_ns > s[1].cpu_ns, "{model}: nice 0 first");
        assert!((got - want).abs() < 0.02, "{model}: {got} vs {want}");
    }
}

#[test]
fn four_hogs_on_two_cpus_get_half_a_cpu_each() {
    // With one global queue, four hogs share two CPUs trivially.
    let free = r#"{"tasks": {"hog": {"instance": 4, "run": 5000000}}}"#;
    // O(1) and BFS also start them pinned to CPU 0 (first phase, 1 ms),
    // free after: O(1)'s balancer must pull (4 − 0) / 2 = 2 of them, BFS's
    // idle CPU 1 must take them from the global queue. (Not 2.4: a CPU
    // that may run only spent tasks recalculates, which tops up the task
    // running on the other CPU — 2.4's SMP behaviour, and while two hogs
    // are pinned CPU 1 recalculates every slice; see docs/sim.md.)
    let pinned = r#"{"tasks": {"hog": {"instance": 4, "loop": 1, "phases": {
        "start": {"cpus": [0], "run": 1000},
        "free": {"run": 5000000}
    }}}}"#;
    for model in MODELS {
        let json = if model == "o1" || model == "bfs" {
            pinned
        } else {
            free
        };
        // A second to settle (a pinned hog can leave only after its first
        // phase has run, one slice after another on CPU 0), then 2 s.
        let mut m = machine(model, json, 2);
        m.run_until(1_000_000_000);
        let (at_1s, busy_1s) = (m.stats(), m.cpu_busy().to_vec());
        m.run_until(3_000_000_000);
        let shares: Vec<f64> = at_1s
            .iter()
            .zip(m.stats())
            .map(|(a, b)| (b.cpu_ns - a.cpu_ns) as f64 / 2e9)
            .collect();
        println!("{model}: {shares:.3?}");
        // Two hogs per CPU take turns by slices (at most O(1)'s 100 ms): over
        // 2 s a hog is at most one slice, 0.05 of 2 s, from its half.
        for s in &shares {
            assert!((s - 0.5).abs() <= 0.05 + 1e-9, "{model}: {shares:?}");
        }
        let busy: Ns = m.cpu_busy().iter().zip(&busy_1s).map(|(b, a)| b - a).sum();
        assert!(busy as f64 > 0.999 * 4e9, "{model}: both CPUs busy");
        if json == pinned {
            let moved: u64 = m.stats().iter().map(|s| s.migrations).sum();
            assert!(moved >= 2, "{model}: two hogs left CPU 0");
        }
    }
}

/// The worst wake-up latency of `t`'s iterations that start at or after
/// `from`, ns (from rt-app's per-iteration log).
fn worst_latency_after(m: &Machine<Box<dyn SchedClass>>, t: usize, from: Ns) -> (Ns, usize) {
    let lines: Vec<_> = m.log(t).iter().filter(|l| l.start >= from).collect();
    (
        lines.iter().map(|l| l.wu_lat).max().unwrap_or(0),
        lines.len(),
    )
}

#[test]
fn a_periodic_task_beside_two_hogs_waits_as_the_model_implies() {
    let json = r#"{"tasks": {
        "p": {"loop": -1, "run": 1000, "timer": {"ref": "t", "period": 10000}},
        "hog": {"instance": 2, "run": 1000000}
    }}"#;
    for model in MODELS {
        let mut m = machine(model, json, 1);
        m.record();
        m.run_until(10_000_000_000);
        let s = m.stats();
        let lat = &s[0].wakeup_latency;
        let (worst_late, n) = worst_latency_after(&m, 0, 1_000_000_000);
        let tick = 1_000_000_000 / hz_of(model) as Ns;
        println!(
            "{model}: p50 {} µs p99 {} µs max {} µs, worst after 1 s {} µs over {n} periods",
            lat.percentile(50.0) / 1000,
            lat.percentile(99.0) / 1000,
            lat.max / 1000,
            worst_late / 1000
        );
        assert!(n > 800, "{model}: {n} periods after 1 s");
        match model {
            // 2.4: the sleeper is never charged a tick (it runs 1 ms right
            // after the tick its timer shares), so every recalculation
            // raises its counter, c/2 + 6: 9, 10, 11, while a hog's is at
            // most 6. From the first recalculation on its goodness leads
            // by ≥ 3 > 1: it preempts at once. Before, it waits at most for
            // both hogs' slices, 2 · 6 ticks.
            "linux24" | "mlq:3" | "mlq:8" => {
                assert_eq!(worst_late, 0, "{model}");
                assert!(
                    lat.max <= 2 * nice_to_ticks_hz100(0) as Ns * tick,
                    "{model}"
                );
            }
            // O(1): its first sleeps (9 ms each, credited ×10 while its
            // bonus is 0) lift sleep_avg past 100 ms: bonus ≥ 1, prio ≤ 124
            // against the hogs' 125 (no sleep, bonus −5): it preempts at
            // once. Before, it waits at most for both hogs' 100 ms slices.
            "o1" => {
                assert_eq!(worst_late, 0, "{model}");
                assert!(
                    lat.max <= 2 * o1_ticks(0, hz_of(model) as u64) * tick,
                    "{model}"
                );
            }
            // BFS: it keeps its deadline while asleep, set ≥ 9 ms before it
            // wakes; it waits only if the running hog's deadline is earlier
            // still. That hog's quota then ends at a tick, at most
            // Q = rr − 0.1 ms + 1 tick later, and at most one other hog with
            // an earlier deadline runs one quota: ≤ 2·Q. Mostly not at all.
            "bfs" => {
                let q = 6_000_000 - 100_000 + tick;
                assert!(lat.max <= 2 * q, "{model}: {}", lat.max);
                assert_eq!(lat.percentile(50.0), 0, "{model}");
            }
            _ => unreachable!(),
        }
    }
}

/// The model's work over `[from, to)`, on one CPU.
fn work_between(model: &str, json: &str, from: Ns, to: Ns) -> Work {
    let mut m = machine(model, json, 1);
    m.run_until(from);
    let w0 = m.work();
    m.run_until(to);
    m.work() - w0
}

#[test]
fn the_multi_level_queue_looks_at_fewer_tasks_as_the_queue_grows() {
    // N nice-0 hogs and a burst every 10 ms: a driver wakes k workers,
    // each runs 100 µs. The burst follows the tick its timer shares and is
    // never charged a tick, so after the first recalculations the driver's
    // and workers' counters are 9–11 (level 2 at MEASURE 8); a hog's never
    // exceeds NICE_TO_TICKS = 6 (level 3).
    let k = 8;
    let mut ratios = Vec::new();
    for n in [10usize, 100] {
        let json = format!(
            r#"{{"tasks": {{
                "hog": {{"instance": {n}, "run": 1000000}},
                "w": {{"instance": {k}, "loop": -1, "suspend": "go", "run": 100}},
                "d": {{"loop": -1, "run": 100, "resume": "go", "timer": {{"ref": "t", "period": 10000}}}}
            }}}}"#
        );
        // After two recalculations even at N = 100 (one per ~N·6 ticks).
        let (from, to) = (15_000_000_000, 25_000_000_000);
        let l = work_between("linux24", &json, from, to);
        let q = work_between("mlq:8", &json, from, to);
        let o = work_between("o1", &json, from, to);
        let (lp, qp) = (l.examined_per_pick(), q.examined_per_pick());
        // Per 10 ms: the driver's pick, k worker picks, the pick of a hog
        // after the burst, and a hog's slice end every 6 ticks (1/6), plus
        // as many recalculation rescans. 2.4 scans everything runnable: the
        // N hogs plus the driver or the workers left, Σ = (k + 13/6)·N +
        // k(k+1)/2 + 1. The levels scan level 2 during the burst (1, then k,
        // k − 1 … 1) and level 3 only after it and at slice ends: 7/6·N +
        // k(k+1)/2 + 1. The ratio tends to k + 13/6 as N grows.
        let (nf, kf) = (n as f64, k as f64);
        let burst = kf * (kf + 1.0) / 2.0 + 1.0;
        let want = ((kf + 13.0 / 6.0) * nf + burst) / (7.0 / 6.0 * nf + burst);
        println!(
            "N {n}: linux24 {lp:.1}/pick, mlq:8 {qp:.1}/pick, o1 {:.2}/pick; ratio {:.2}, formula {want:.2}",
            o.examined_per_pick(),
            lp / qp
        );
        assert!(l.picks > 9_000, "N {n}: the bursts ran ({} picks)", l.picks);
        assert!(
            lp >= n as f64 && lp <= (n + k + 1) as f64,
            "N {n}: linux24 {lp}"
        );
        assert!(
            ((lp / qp) / want - 1.0).abs() < 0.15,
            "N {n}: {} vs {want}",
            lp / qp
        );
        // 2.4's recalculation touches every task, sleepers too.
        assert_eq!(l.recalc_touched, l.recalcs * (n + k + 1) as u64);
        assert!(q.removal_scanned > 0);
        // O(1): one task looked at per pick, whatever N.
        assert_eq!(o.examined, o.picks, "N {n}: o1");
        ratios.push(lp / qp);
    }
    // 10 → 100 tasks: the formula's ratio grows 2.4-fold (2.85 → 6.86).
    assert!(ratios[1] > 2.0 * ratios[0], "{ratios:?}");
}

#[test]
fn affinity_hotplug_cpusets_rt_and_yield_keep_the_machine_consistent() {
    // Debug builds check after every event that no task runs on an offline
    // or forbidden CPU and no CPU runs two tasks; the global queues must
    // honour affinity in their pick, and every model must survive CPUs
    // leaving and coming back.
    let json = r#"{"tasks": {
        "pinned": {"cpus": [0], "loop": -1, "run": 3000, "sleep": 1000},
        "rr": {"policy": "SCHED_RR", "priority": 10, "loop": -1, "run": 500, "timer": {"ref": "t", "period": 5000}},
        "fifo": {"policy": "SCHED_FIFO", "priority": 20, "loop": -1, "run": 200, "sleep": 3000},
        "hog": {"instance": 4, "run": 1000000},
        "yielder": {"loop": -1, "run": 100, "yield": 0},
        "a": {"loop": -1, "lock": "m", "run": 300, "unlock": "m", "sleep": 500},
        "b": {"loop": -1, "lock": "m", "run": 200, "unlock": "m", "sleep": 700}
    }}"#;
    const S: Ns = 1_000_000_000;
    for model in MODELS {
        let hz = hz_of(model);
        let w = parse(json, "test").unwrap();
        let p = Platform {
            hz,
            hotplug: vec![
                (S, 2, false),
                (3 * S / 2, 1, false),
                (2 * S, 2, true),
                (5 * S / 2, 1, true),
            ],
            ..Platform::uniform(3)
        };
        let mut m = Machine::new(p, w, old_model(model, 3, hz).unwrap()).unwrap();
        m.record();
        m.advance_to(3 * S);
        let hog = 4;
        m.set_cpuset(hog, Some(vec![1])).unwrap();
        m.run_until(4 * S);
        let s = m.stats();
        for t in &s {
            assert!(t.cpu_ns > 0, "{model}: {} never ran", t.name);
        }
        for sl in m.slices() {
            let name = &s[sl.task].name;
            assert!(
                !(sl.cpu == 2 && sl.end > S && sl.start < 2 * S),
                "{model}: {name} on offline CPU 2 at {}",
                sl.start
            );
            assert!(
                !(sl.cpu == 1 && sl.end > 3 * S / 2 && sl.start < 5 * S / 2),
                "{model}: {name} on offline CPU 1 at {}",
                sl.start
            );
            if sl.task == 0 {
                assert_eq!(sl.cpu, 0, "{model}: the pinned task left CPU 0");
            }
            if sl.task == hog && sl.start >= 3 * S {
                assert_eq!(sl.cpu, 1, "{model}: the hog left its cpuset");
            }
        }
        // Four hogs never let an online CPU idle: 3 CPUs × 4 s less the
        // two CPUs' second offline (an idle CPU finds waiting work).
        let busy: Ns = m.cpu_busy().iter().sum();
        println!("{model}: busy {:.4} s, {:?}", busy as f64 / 1e9, m.work());
        assert!(busy as f64 > 0.995 * 10e9, "{model}: busy {busy}");
    }
}

#[test]
fn the_fair_and_rt_classes_count_their_work_too() {
    use corral_sim::sched::classes::Classes;
    use corral_sim::sched::fair::Fair;
    use corral_sim::sched::rt::RtBandwidth;
    let json = r#"{"tasks": {
        "hog": {"instance": 3, "run": 1000000},
        "rt": {"policy": "SCHED_FIFO", "priority": 5, "loop": -1, "run": 100, "sleep": 900}
    }}"#;
    let w = parse(json, "test").unwrap();
    let k = Classes::new(1, Fair::cfs(1), RtBandwidth::fair_server(), 250);
    let mut m = Machine::new(Platform::uniform(1), w.clone(), k).unwrap();
    m.run_until(1_000_000_000);
    let (all, rt, fair) = (m.work(), m.kernel().rt.work(), m.kernel().fair.work());
    assert_eq!(all, rt + fair);
    // Every pick asks RT first; one RT task looked at per RT pick.
    assert!(rt.picks >= fair.picks && rt.examined > 900 && rt.examined < rt.picks);
    // CFS: the leftmost, one entity per level (no groups: one level).
    assert_eq!(fair.examined, fair.picks);
    assert!(rt.enqueues - rt.dequeues <= 1, "one RT task: queued or not");
    // EEVDF scans for an eligible entity: at least one per pick.
    let k = Classes::new(1, Fair::eevdf(1), RtBandwidth::fair_server(), 250);
    let mut m = Machine::new(Platform::uniform(1), w, k).unwrap();
    m.run_until(1_000_000_000);
    let fair = m.kernel().fair.work();
    assert!(fair.examined >= fair.picks && fair.picks > 100, "{fair:?}");
}
