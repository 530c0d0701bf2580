//! The loop on a scripted host: classification, placement, hot-plug,
//! failures and restore.

use super::*;
use corral_core::host::{TaskEvents, ThreadProgress};
use corral_core::plan::GroupKind;
use corral_core::sample::Snapshot;
use corral_core::share::Level;
use corral_core::topology::RawTopology;
use std::fmt;

#[derive(Debug)]
struct MockError(&'static str);
impl fmt::Display for MockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}
impl std::error::Error for MockError {}
impl HostError for MockError {
    fn is_gone(&self) -> bool {
        self.0 == "gone"
    }
}

/// Threads with a fixed utilisation and wake-up rate; 1 s per step.
struct MockHost {
    now: u64,
    online: CpuSet,
    threads: Vec<(u32, f64, u64)>,
    cum: BTreeMap<u32, (u64, u64)>,
    applied: Vec<Change>,
    restored: bool,
    /// `Host::finish` calls.
    finished: u32,
    fail_moves_of: Option<u32>,
    sleeping: Vec<u32>,
    /// Threads the next `sample` (not `sample_whole`) leaves out once, as
    /// the live sampler does with a thread a full pass sees first.
    deferred: Vec<u32>,
    /// Time between two samples (1 s unless a test says otherwise).
    tick_ns: u64,
    /// Threads born since the last `task_events`.
    born: Vec<(u32, u32)>,
    /// Cgroup paths other than "/".
    cgroups: BTreeMap<u32, String>,
    /// SCHED_FIFO threads.
    realtime: Vec<u32>,
}

impl MockHost {
    fn new(online: &str, threads: Vec<(u32, f64, u64)>) -> MockHost {
        MockHost {
            now: 0,
            online: CpuSet::parse(online).unwrap(),
            threads,
            cum: BTreeMap::new(),
            applied: vec![],
            restored: false,
            finished: 0,
            fail_moves_of: None,
            sleeping: vec![],
            deferred: vec![],
            tick_ns: 1_000_000_000,
            born: vec![],
            cgroups: BTreeMap::new(),
            realtime: vec![],
        }
    }

    /// One sample, `tick_ns` after the last; `defer`: threads in
    /// `deferred` are left out once.
    fn pass(&mut self, defer: bool) -> Result<Snapshot, MockError> {
        self.now += self.tick_ns;
        let mut threads = vec![];
        for &(tid, util, wakeups) in &self.threads {
            if let Some(i) = self.deferred.iter().position(|&t| t == tid) {
                if defer {
                    self.deferred.remove(i);
                    continue;
                }
            }
            let c = self.cum.entry(tid).or_default();
            c.0 += (util * self.tick_ns as f64) as u64;
            c.1 += wakeups;
            threads.push(ThreadSample {
                comm: format!("t{tid}").into(),
                run_ns: c.0,
                timeslices: c.1,
                voluntary_switches: c.1,
                // Every thread last ran on CPU 3.
                cpu: 3,
                cgroup: Some(self.cgroups.get(&tid).map_or("/", |c| c).into()),
                in_own_group: self
                    .cgroups
                    .get(&tid)
                    .is_some_and(|c| c.starts_with("/corral/")),
                policy: if self.realtime.contains(&tid) {
                    corral_core::sample::Policy::Fifo
                } else {
                    corral_core::sample::Policy::Other
                },
                ..ThreadSample::new(tid, 100)
            });
        }
        Ok(Snapshot {
            at_ns: self.now,
            threads,
        })
    }
}

impl Host for MockHost {
    type Error = MockError;
    fn now_ns(&self) -> u64 {
        self.now
    }
    fn topology(&mut self) -> Result<Topology, MockError> {
        let possible = CpuSet::first_n(4);
        Ok(Topology::from_raw(RawTopology {
            possible: possible.clone(),
            present: possible,
            online: self.online.clone(),
            ..Default::default()
        }))
    }
    fn online(&mut self) -> Result<CpuSet, MockError> {
        Ok(self.online.clone())
    }
    fn sample(&mut self) -> Result<Snapshot, MockError> {
        self.pass(true)
    }
    fn sample_whole(&mut self) -> Result<Snapshot, MockError> {
        self.pass(false)
    }
    fn task_events(&mut self) -> TaskEvents {
        TaskEvents {
            born: std::mem::take(&mut self.born),
            ..Default::default()
        }
    }
    fn apply(&mut self, change: &Change) -> Result<(), MockError> {
        if let Change::Move { tid, .. } = change {
            if Some(*tid) == self.fail_moves_of {
                return Err(MockError("EINVAL"));
            }
        }
        self.applied.push(change.clone());
        Ok(())
    }
    fn finish(&mut self) -> Result<(), MockError> {
        self.finished += 1;
        Ok(())
    }
    fn restore(&mut self) -> Result<(), MockError> {
        self.restored = true;
        Ok(())
    }
    fn share_levels(&mut self, _tid: u32) -> Result<Option<(Vec<Level>, u32)>, MockError> {
        Ok(Some((
            vec![Level {
                weight: 52,
                total: 1076,
            }],
            1,
        )))
    }
    fn thread_progress(&mut self, tid: u32) -> Result<Option<ThreadProgress>, MockError> {
        Ok(self.cum.get(&tid).map(|c| ThreadProgress {
            sleeping: self.sleeping.contains(&tid),
            run_ns: c.0,
        }))
    }
    fn describe(&self) -> String {
        "mock".into()
    }
    fn limits_real_time(&self) -> bool {
        !self.realtime.is_empty()
    }
}

fn daemon(online: &str, threads: Vec<(u32, f64, u64)>) -> Daemon<MockHost> {
    Daemon::new(MockHost::new(online, threads), Config::default()).unwrap()
}

#[test]
fn places_from_the_second_interval() {
    // A hog, a periodic 10 ms / 1 ms thread, a medium thread, a light one.
    let mut d = daemon(
        "0-3",
        vec![(1, 0.95, 1), (2, 0.10, 100), (3, 0.40, 5), (4, 0.05, 2)],
    );
    assert!(
        d.step().unwrap().changes.is_empty(),
        "first sight: no rates yet"
    );
    d.step().unwrap();
    assert_eq!(d.plan().dedicated_cpu(1), Some(3));
    assert_eq!(d.plan().group_of(3).unwrap().kind, GroupKind::Medium);
    assert_eq!(d.plan().group_of(4).unwrap().kind, GroupKind::Shared);
    // The periodic thread becomes latency-critical after 3 intervals.
    d.step().unwrap();
    d.step().unwrap();
    assert_eq!(d.class_of(2), Some(Class::LatencyCritical));
    assert_eq!(d.plan().group_of(2).unwrap().kind, GroupKind::Latency);
    // Steady state: nothing to change.
    assert!(d.step().unwrap().changes.is_empty());
    let s = d.status();
    assert_eq!(s.counts.get("heavy"), Some(&1));
    assert_eq!(s.groups.iter().map(|g| g.members).sum::<usize>(), 4);
}

#[test]
fn hotplug_replans_within_one_interval() {
    let mut d = daemon("0-3", vec![(1, 0.95, 1), (4, 0.05, 2)]);
    d.step().unwrap();
    d.step().unwrap();
    assert_eq!(d.plan().dedicated_cpu(1), Some(3));
    d.host_mut().online = CpuSet::parse("0-2").unwrap();
    let r = d.step().unwrap();
    assert_eq!(r.hotplug.as_ref().unwrap().1.to_string(), "0-2");
    assert_eq!(
        d.plan().dedicated_cpu(1),
        Some(2),
        "the dedicated core moved"
    );
    for g in d.plan().groups.values() {
        assert!(
            g.cpus.is_subset(&d.topology().online),
            "{} on {}",
            g.name,
            g.cpus
        );
    }
    // Down to one CPU: no dedicated core, everything shared on CPU 0.
    d.host_mut().online = CpuSet::parse("0").unwrap();
    d.step().unwrap();
    assert_eq!(d.plan().dedicated_cpu(1), None);
    assert_eq!(d.plan().group_of(1).unwrap().cpus.to_string(), "0");
}

#[test]
fn a_failed_move_is_reported_and_retried() {
    let mut d = daemon("0-1", vec![(1, 0.95, 1), (2, 0.05, 2)]);
    d.host_mut().fail_moves_of = Some(2);
    d.step().unwrap();
    let r = d.step().unwrap();
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert!(r.errors[0].contains("move thread 2"));
    assert!(d.plan().group_of(2).is_none());
    d.host_mut().fail_moves_of = None;
    let r = d.step().unwrap();
    assert!(r.errors.is_empty());
    assert!(d.plan().group_of(2).is_some());
}

#[test]
fn explain_and_shutdown() {
    let mut d = daemon("0-1", vec![(1, 0.10, 100)]);
    d.step().unwrap();
    d.step().unwrap();
    let e = d.explain(1).unwrap();
    assert!((e.effective_share - 52.0 / 1076.0).abs() < 1e-9);
    assert!(e.why.contains("peak utilisation 10 %"), "{}", e.why);
    assert!(d.explain(99).unwrap_err().contains("not in corral's scope"));
    d.shutdown().unwrap();
    assert!(d.host().restored);
    assert!(d.plan().groups.is_empty());
}

#[test]
fn socket_serves_status_and_explain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corral.sock");
    let (tx, mut inbox) = server::channel().unwrap();
    let _guard = server::listen(&path, &mut inbox).unwrap();
    let mut d = daemon("0-1", vec![(1, 0.95, 1)]);
    let client = {
        let path = path.clone();
        std::thread::spawn(move || {
            let status = server::request(&path, api::Command::Status).unwrap();
            let explain = server::request(&path, api::Command::Explain { tid: 1 }).unwrap();
            let missing = server::request(&path, api::Command::Explain { tid: 7 }).unwrap();
            tx.send(server::Msg::Stop("test".into())).unwrap();
            (status, explain, missing)
        })
    };
    let ended = server::run(
        &mut d,
        &mut inbox,
        std::time::Duration::from_millis(20),
        false,
        |_, _| {},
    )
    .unwrap();
    assert_eq!(ended, server::Ended::Stopped("test".into()));
    let (status, explain, missing) = client.join().unwrap();
    assert!(status.ok);
    assert_eq!(status.result.unwrap()["backend"], "mock");
    assert_eq!(explain.result.unwrap()["tid"], 1);
    assert!(!missing.ok);
    assert!(missing.error.unwrap().contains("not in corral's scope"));
    // A second daemon on the same socket is refused while the first listens.
    let (_tx2, mut inbox2) = server::channel().unwrap();
    assert!(server::listen(&path, &mut inbox2).is_err());
}

fn root() -> Caller {
    Caller { uid: 0, pid: 1 }
}

#[test]
fn boost_moves_evicts_and_ends_when_the_thread_blocks_after_running() {
    // A hog, a light thread, and an input handler (tid 3).
    let mut d = daemon("0-3", vec![(1, 0.95, 1), (2, 0.05, 2), (3, 0.05, 5)]);
    d.step().unwrap();
    d.step().unwrap();
    let calm = d.plan().clone();
    let r = d.boost(3, Some(200), root()).unwrap();
    assert!(!r.extended);
    assert_eq!(r.max_ms, 200);
    let g = d.plan().group_of(3).unwrap();
    assert_eq!(g.kind, corral_core::plan::GroupKind::Boost);
    assert_eq!(g.nice, Some(-20));
    // Eviction: no other group keeps the boosted thread's CPU (it runs on 3).
    assert_eq!(g.cpus.to_string(), "3");
    for other in d.plan().groups.values().filter(|o| o.name != g.name) {
        assert!(!other.cpus.contains(3), "{} still on CPU 3", other.name);
    }
    // Boosting again extends it.
    assert!(d.boost(3, Some(200), root()).unwrap().extended);
    // It has not run yet: asleep, same CPU time -> still boosted.
    d.host_mut().sleeping = vec![3];
    assert_eq!(d.check_boosts(), 0);
    // It runs, and is seen not runnable while its CPU time still moves
    // (a transient state): the boost stays.
    d.host_mut().cum.get_mut(&3).unwrap().0 += 1_000_000;
    assert_eq!(d.check_boosts(), 0);
    // A millisecond later it has not run since: it blocked, the boost ends.
    assert_eq!(d.check_boosts(), 1);
    assert!(!d.has_boosts());
    // It keeps its own group, lowered: an ordinary weight, its own nice
    // and slice, the shared CPUs; every other group is as before the boost.
    let g = d.plan().group_of(3).unwrap().clone();
    assert_eq!(g.name, "boost-3");
    assert_eq!(g.shares, Config::default().plan.shared_shares);
    assert_eq!((g.nice, g.slice_ns), (None, None));
    assert_eq!(g.cpus, calm.groups["shared"].cpus);
    for (name, spec) in &calm.groups {
        assert_eq!(d.plan().groups.get(name), Some(spec), "{name}");
    }
    // The next boost moves no thread at all: only groups change, and the
    // thread's own group first (the reply waits for that one only).
    let before = d.host().applied.len();
    let finished = d.host().finished;
    d.boost(3, Some(200), root()).unwrap();
    let first = d.host().applied[before..].to_vec();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(matches!(&first[0], Change::SetGroup(g) if g.name == "boost-3" && g.nice == Some(-20)));
    // The host's slow work (a systemd host's unit lifts) waits until the
    // reply is out: `settle` runs it.
    assert_eq!(d.host().finished, finished);
    d.settle();
    assert_eq!(d.host().finished, finished + 1);
    let all = d.host().applied[before..].to_vec();
    assert!(
        all.iter().all(|c| matches!(c, Change::SetGroup(_))),
        "{all:?}"
    );
    d.unboost(3, root()).unwrap();
    assert!(d.host().applied[before..]
        .iter()
        .all(|c| matches!(c, Change::SetGroup(_))));
    // After keep_group_s without a boost it gives the group up.
    d.host_mut().now += Config::default().boost.keep_group_s * 1_000_000_000;
    d.step().unwrap();
    assert_ne!(d.plan().group_of(3).unwrap().kind, GroupKind::Boost);
}

#[test]
fn boost_ends_at_its_cap_and_checks_callers() {
    let mut d = daemon("0-1", vec![(1, 0.95, 1), (3, 0.05, 5)]);
    d.step().unwrap();
    d.step().unwrap();
    // Another user may not boost root's thread (the mock's threads are uid 0).
    let err = d.boost(3, None, Caller { uid: 1000, pid: 9 }).unwrap_err();
    assert!(err.contains("permission denied"), "{err}");
    assert!(d
        .boost(99, None, root())
        .unwrap_err()
        .contains("not in corral's scope"));
    assert!(d.boost(3, Some(0), root()).unwrap_err().contains("max_ms"));
    assert!(d
        .boost(3, Some(999_999), root())
        .unwrap_err()
        .contains("max_ms"));
    d.boost(3, Some(50), root()).unwrap();
    // A spinning thread never blocks; 50 ms later the cap ends it.
    d.host_mut().now += 49_000_000;
    assert_eq!(d.check_boosts(), 0);
    d.host_mut().now += 2_000_000;
    assert_eq!(d.check_boosts(), 1);
    assert!(d.unboost(3, root()).unwrap_err().contains("not boosted"));
}

#[test]
fn boost_rate_is_limited_per_user() {
    let mut cfg = Config::default();
    cfg.boost.rate_per_s = 3;
    let mut d = Daemon::new(MockHost::new("0-1", vec![(3, 0.05, 5)]), cfg).unwrap();
    d.step().unwrap();
    d.step().unwrap();
    for _ in 0..3 {
        d.boost(3, None, root()).unwrap();
    }
    assert!(d.boost(3, None, root()).unwrap_err().contains("rate limit"));
    d.host_mut().now += 1_000_000_000;
    d.boost(3, None, root()).unwrap();
}

#[test]
fn two_boosts_at_once_each_get_a_cpu_and_one_stays_for_the_rest() {
    let mut d = daemon(
        "0-2",
        vec![(1, 0.95, 1), (2, 0.05, 2), (3, 0.05, 5), (4, 0.05, 5)],
    );
    d.step().unwrap();
    d.step().unwrap();
    d.boost(3, None, root()).unwrap();
    d.boost(4, None, root()).unwrap();
    d.settle();
    let b3 = d.plan().group_of(3).unwrap().clone();
    let b4 = d.plan().group_of(4).unwrap().clone();
    assert_eq!((b3.name.as_str(), b4.name.as_str()), ("boost-3", "boost-4"));
    assert_eq!((b3.cpus.len(), b4.cpus.len()), (1, 1));
    let boost = b3.cpus.union(&b4.cpus);
    assert_eq!(boost.len(), 2, "two boosted threads, two reserved CPUs");
    let rest: Vec<_> = d
        .plan()
        .groups
        .values()
        .filter(|g| g.kind != GroupKind::Boost)
        .collect();
    assert!(!rest.is_empty());
    for g in rest {
        assert!(
            g.cpus.intersection(&boost).is_empty(),
            "{} shares a boosted CPU",
            g.name
        );
        assert!(!g.cpus.is_empty());
    }
    // Ending one keeps the other.
    d.unboost(3, root()).unwrap();
    assert!(d.has_boosts());
    assert_eq!(
        d.plan().group_of(4).unwrap().kind,
        corral_core::plan::GroupKind::Boost
    );
}

#[test]
fn re_boosting_cannot_hold_a_thread_up_past_the_limit() {
    let mut cfg = Config::default();
    cfg.boost.default_max_ms = 200;
    cfg.boost.max_ms_limit = 300;
    let mut d = Daemon::new(MockHost::new("0-1", vec![(3, 0.95, 1)]), cfg).unwrap();
    d.step().unwrap();
    d.step().unwrap();
    d.boost(3, None, root()).unwrap();
    for _ in 0..10 {
        d.host_mut().now += 100_000_000;
        // Extensions are accepted but capped at 300 ms from the start.
        let _ = d.boost(3, None, root());
    }
    assert_eq!(
        d.check_boosts(),
        1,
        "a second after it began, the boost is over"
    );
}

/// A placed thread that ran, then gets no CPU at all while runnable: the
/// kernel adds a wait to schedstat only when the waiting task runs, so the
/// guard must see it from the thread's state.
fn starved_after_running() -> Daemon<MockHost> {
    let mut d = daemon("0-1", vec![(1, 0.95, 1), (2, 0.20, 2)]);
    d.step().unwrap();
    d.step().unwrap();
    d.step().unwrap();
    assert!(d.plan().group_of(2).is_some(), "placed");
    // From now on thread 2 gets nothing, and schedstat shows no wait.
    d.host_mut().threads[1].1 = 0.0;
    let r = d.step().unwrap();
    assert!(r.guard.is_empty(), "seen runnable once: a suspect only");
    d
}

#[test]
fn the_guard_relieves_a_thread_runnable_without_running_though_schedstat_shows_no_wait() {
    let mut d = starved_after_running();
    let r = d.step().unwrap();
    assert_eq!(r.guard.len(), 1, "{:?}", r.guard);
    assert!(
        r.guard[0].contains("thread 2 (t2) was runnable for 1000 ms without running"),
        "{}",
        r.guard[0]
    );
    assert!(
        d.plan().group_of(2).is_none(),
        "put back where it came from"
    );
    assert!(d.explain(2).unwrap().why.contains("starvation guard"));
}

#[test]
fn a_quick_step_confirms_the_guards_suspect_half_an_interval_later() {
    let mut d = starved_after_running();
    d.host_mut().now += 400_000_000;
    assert!(d.quick_step().unwrap().is_none(), "0.4 s: not yet");
    d.host_mut().now += 100_000_000;
    let r = d.quick_step().unwrap().expect("relieved: a re-plan");
    assert_eq!(r.guard.len(), 1, "{:?}", r.guard);
    assert!(r.guard[0].contains("runnable for 500 ms"), "{}", r.guard[0]);
    assert!(d.plan().group_of(2).is_none());
}

#[test]
fn the_guard_waits_two_intervals_after_a_hot_plug() {
    let mut d = daemon("0-3", vec![(1, 0.95, 1), (2, 0.20, 2)]);
    for _ in 0..3 {
        d.step().unwrap();
    }
    assert!(d.plan().group_of(2).is_some(), "placed");
    // A CPU goes offline, and thread 2 gets no CPU from then on.
    d.host_mut().online = CpuSet::parse("0-2").unwrap();
    d.host_mut().threads[1].1 = 0.0;
    for step in 0..2 {
        let r = d.step().unwrap();
        assert!(
            r.guard.is_empty(),
            "step {step} after the hot-plug: {:?}",
            r.guard
        );
    }
    assert!(d.plan().group_of(2).is_some(), "still placed");
    // Then the guard judges again: a suspect, then relieved.
    assert!(d.step().unwrap().guard.is_empty());
    let r = d.step().unwrap();
    assert_eq!(r.guard.len(), 1, "{:?}", r.guard);
    assert!(d.plan().group_of(2).is_none());
}

#[test]
fn the_guard_leaves_a_thread_that_sleeps() {
    let mut d = daemon("0-1", vec![(1, 0.95, 1), (2, 0.20, 2)]);
    for _ in 0..3 {
        d.step().unwrap();
    }
    d.host_mut().threads[1].1 = 0.0;
    d.host_mut().sleeping.push(2);
    for _ in 0..5 {
        assert!(d.step().unwrap().guard.is_empty());
    }
    assert!(d.plan().group_of(2).is_some());
}

#[test]
fn a_boost_of_a_thread_born_since_the_last_step_samples_until_it_is_read_whole() {
    let mut d = daemon("0-1", vec![(1, 0.95, 1)]);
    d.step().unwrap();
    d.step().unwrap();
    // A handler thread born just now: the first full pass that sees it
    // reads it only in part and leaves it out.
    d.host_mut().threads.push((5, 0.05, 5));
    d.host_mut().deferred.push(5);
    let r = d.boost(5, Some(200), root()).expect("boosted, not refused");
    assert!(!r.extended);
}

#[test]
fn a_young_thread_is_latency_critical_after_three_fast_samples_and_heavy_after_young_min() {
    // A hog, then a 10 ms / 1 ms thread and a second hog born between
    // steps. Quick steps run on a timer: here each lands 39.9 ms after
    // the last, so five fast samples make a 199.5 ms window, a hair short
    // of young_min_ms (200).
    let mut d = daemon("0-3", vec![(1, 0.95, 1)]);
    d.step().unwrap();
    d.step().unwrap();
    let fast = d.fast_interval_ns().unwrap();
    assert_eq!((fast, d.config.classify.young_min_ms), (40_000_000, 200));
    let h = d.host_mut();
    h.tick_ns = fast - 100_000;
    h.threads.extend([(2, 0.10, 4), (3, 1.0, 0)]);
    h.born.extend([(2, 100), (3, 100)]);
    d.quick_step().unwrap(); // their first reads
    for _ in 0..2 {
        d.quick_step().unwrap();
        assert_eq!(d.class_of(2), None, "too early");
    }
    d.quick_step().unwrap();
    assert_eq!(d.class_of(2), Some(Class::LatencyCritical));
    assert_eq!(d.class_of(3), None, "119.7 ms tell no intensity");
    d.quick_step().unwrap();
    assert_eq!(d.class_of(3), None);
    d.quick_step().unwrap();
    assert_eq!(d.class_of(3), Some(Class::Heavy));
}

/// A hog placed, then thread 5 (CPU-bound) born inside the latency
/// group, as a codegen worker of a thread corral found latency-critical
/// is (cgroup membership is inherited); `reported`: the host's task
/// events name it (else only the next full pass finds it).
fn born_in_latency(reported: bool) -> Daemon<MockHost> {
    let mut d = daemon("0-3", vec![(1, 0.95, 1)]);
    d.step().unwrap();
    d.step().unwrap();
    let h = d.host_mut();
    h.threads.push((5, 1.0, 0));
    h.cgroups.insert(5, "/corral/latency".into());
    if reported {
        h.tick_ns = 40_000_000;
        h.born.push((5, 100));
    }
    d
}

#[test]
fn a_thread_born_in_the_latency_group_goes_to_the_shared_one_at_its_first_read() {
    let mut d = born_in_latency(true);
    d.quick_step().unwrap();
    assert_eq!(
        d.plan().group_of(5).map(|g| g.kind),
        Some(GroupKind::Shared)
    );
}

#[test]
fn a_thread_a_full_pass_finds_born_in_the_latency_group_leaves_it_at_that_step() {
    // No task events (no process connector, or past young_max): it leaves
    // at the full pass that sees it first, not an interval later.
    let mut d = born_in_latency(false);
    d.step().unwrap();
    assert_eq!(
        d.plan().group_of(5).map(|g| g.kind),
        Some(GroupKind::Shared)
    );
}

/// The live loop takes its full steps when [`schedule::Schedule`] says:
/// at its start and every interval after (the simulator's loop follows the
/// same schedule, on its clock: `corral-sim`'s test
/// `the_simulated_loop_steps_on_the_live_schedule`). Real time: each step
/// within 20 ms after its instant.
#[test]
fn the_live_loop_steps_on_the_schedule() {
    use std::time::{Duration, Instant};
    let (tx, mut inbox) = server::channel().unwrap();
    let mut d = daemon("0-1", vec![(1, 0.10, 100)]);
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(230));
        tx.send(server::Msg::Stop("test".into())).unwrap();
    });
    let t0 = Instant::now();
    let mut steps: Vec<(u64, Duration)> = Vec::new();
    server::run(
        &mut d,
        &mut inbox,
        Duration::from_millis(50),
        false,
        |r, _| {
            // Quick steps report under the full step's number.
            if steps.last().is_none_or(|&(s, _)| s != r.step) {
                steps.push((r.step, t0.elapsed()));
            }
        },
    )
    .unwrap();
    stopper.join().unwrap();
    assert!(steps.len() >= 4, "{steps:?}");
    // The loop counted its own CPU time per kind of step.
    let cost = d.own_cost().unwrap();
    assert_eq!(cost.steps, steps.len() as u64);
    assert!(cost.step_us > 0.0, "{cost:?}");
    assert!(
        cost.quick_looks >= 3,
        "a quick step 40 ms after each full one: {cost:?}"
    );
    let m = d.metrics();
    let full: f64 = m
        .lines()
        .find_map(|l| l.strip_prefix("corral_step_cpu_seconds_total{kind=\"full\"} "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (full * 1e6 / cost.steps as f64 - cost.step_us).abs() < 0.01,
        "{m}"
    );
    assert!(m.contains(&format!("corral_quick_looks_total {}", cost.quick_looks)));
    for (i, &(_, at)) in steps.iter().enumerate() {
        let due = Duration::from_millis(50 * i as u64);
        assert!(
            at >= due && at < due + Duration::from_millis(20),
            "step {i} at {at:?}, due at {due:?}: {steps:?}"
        );
    }
}

/// A thread that turned real-time inside corral's groups (born to a
/// member) is sent out of them once; one outside them is left alone,
/// and neither is placed.
#[test]
fn a_real_time_thread_inside_corral_s_groups_is_sent_out_once() {
    let mut d = daemon("0-3", vec![(1, 0.95, 1), (7, 0.01, 1000), (8, 0.01, 1000)]);
    d.host_mut().realtime = vec![7, 8];
    d.host_mut().cgroups.insert(7, "/corral/shared".into());
    let mut sent = vec![];
    for _ in 0..4 {
        let r = d.step().unwrap();
        sent.extend(
            r.changes
                .iter()
                .filter(|c| matches!(c, Change::SendHome { .. }))
                .cloned(),
        );
    }
    assert_eq!(sent, vec![Change::SendHome { tid: 7, pid: 100 }]);
    assert!(d.plan().group_of(7).is_none() && d.plan().group_of(8).is_none());
    assert_eq!(
        d.plan().dedicated_cpu(1),
        Some(3),
        "the rest is planned as ever"
    );
    // A thread corral placed that turns real-time is put back by the plan
    // (released), not sent home as well.
    let h = d.host_mut();
    h.realtime.push(1);
    h.cgroups.insert(1, "/corral/dedicated-cpu3".into());
    let r = d.step().unwrap().changes.clone();
    assert!(r.contains(&Change::Release { tid: 1 }), "{r:?}");
    assert!(
        !r.iter().any(|c| matches!(c, Change::SendHome { .. })),
        "{r:?}"
    );
    // Back in a group of corral's after it exited and its TID was reused:
    // a new thread, sent out again.
    d.host_mut().threads.retain(|t| t.0 != 7);
    d.step().unwrap();
    d.host_mut().threads.push((7, 0.01, 1000));
    let again = d.step().unwrap().changes.clone();
    assert!(
        again.contains(&Change::SendHome { tid: 7, pid: 100 }),
        "{again:?}"
    );
}

/// A young thread (the host reported its birth) found real-time inside
/// corral's groups by a quick step's fast sample is sent out then, not
/// an interval later.
#[test]
fn a_young_real_time_thread_is_sent_out_by_the_quick_step_that_finds_it() {
    let mut d = daemon("0-3", vec![(1, 0.95, 1)]);
    d.step().unwrap();
    d.step().unwrap();
    d.step().unwrap();
    let h = d.host_mut();
    h.threads.push((9, 0.01, 1000));
    h.realtime.push(9);
    h.cgroups.insert(9, "/corral/shared".into());
    h.born.push((9, 100));
    let r = d.quick_step().unwrap().expect("a re-plan");
    assert_eq!(
        r.changes
            .iter()
            .filter(|c| matches!(c, Change::SendHome { .. }))
            .collect::<Vec<_>>(),
        vec![&Change::SendHome { tid: 9, pid: 100 }]
    );
    // The next full step knows it was sent.
    let r = d.step().unwrap();
    assert!(!r
        .changes
        .iter()
        .any(|c| matches!(c, Change::SendHome { .. })));
}
