//! corral's daemon over the simulator: the loop runs unchanged on
//! [`SimHost`], and what it decides there is what it decides on the live
//! host's code path for the same threads.
//!
//! The live path is `corral-linux`'s `LinuxHost` (dry run) reading a fake
//! procfs that holds, at each step, the simulated threads' counters
//! written in the kernel's own file formats (`stat`, `schedstat`,
//! `status`, `sched`, `cgroup`): the live sampler parses them, and the
//! same daemon code classifies and plans. Classes and plans must agree at
//! every step.

use corral_core::config::Config;
use corral_core::host::{Host, ThreadProgress};
use corral_core::plan::Change;
use corral_core::sample::{Policy, Snapshot, ThreadSample};
use corral_core::share::Level;
use corral_core::{CpuSet, Topology};
use corral_daemon::Daemon;
use corral_linux::fake::FakeHost;
use corral_linux::host::LinuxHost;
use corral_linux::placer::Layout;
use corral_linux::sampler::Scope;
use corral_sim::corral::host::{SimHost, SIM_PID};
use corral_sim::corral::policy::{self, BoostScript};
use corral_sim::input::rtapp::parse;
use corral_sim::sched::fair::{Fair, Flavour};
use corral_sim::sched::machine::{Machine, Platform};

/// A hog, a second hog, a medium thread (~40 %), a 10 ms / 1 ms periodic
/// thread and a light one, on 2 CPUs.
const MIX: &str = r#"{"tasks": {
    "hog": {"run": 100000},
    "hog2": {"run": 100000},
    "medium": {"loop": -1, "run": 4000, "timer": {"ref": "unique", "period": 10000}},
    "periodic": {"loop": -1, "run": 1000, "timer": {"ref": "unique", "period": 10000}},
    "light": {"loop": -1, "run": 3000, "timer": {"ref": "unique", "period": 150000}}
}}"#;

fn machine(json: &str, cpus: usize) -> Machine<Fair> {
    Machine::new(
        Platform::uniform(cpus),
        parse(json, "test").unwrap(),
        Fair::new(Flavour::Eevdf, cpus),
    )
    .unwrap()
}

/// `stat` as the kernel prints it (proc(5)); only the fields corral reads
/// carry values.
fn stat_line(s: &ThreadSample, running: bool) -> String {
    let mut f = vec!["0".to_string(); 41 - 2];
    let mut set = |k: usize, v: String| f[k - 3] = v;
    set(3, if running { "R" } else { "S" }.into());
    set(4, "1".into());
    set(9, "4194560".into()); // PF_RANDOMIZE | PF_FORKNOEXEC: not a kernel thread
    set(18, (120 + s.nice).to_string());
    set(19, s.nice.to_string());
    set(39, s.cpu.to_string());
    let policy = match s.policy {
        Policy::Other => 0,
        Policy::Fifo => 1,
        Policy::Rr => 2,
        Policy::Batch => 3,
        Policy::Idle => 5,
        Policy::Deadline => 6,
        Policy::Unknown(n) => n,
    };
    set(41, policy.to_string());
    format!("{} ({}) {}\n", s.tid, s.comm, f.join(" "))
}

/// Writes a snapshot as procfs files for the threads of process SIM_PID.
fn write_procfs(fake: &FakeHost, snap: &Snapshot, online: &str) {
    // Files are rewritten in place: the live sampler keeps `schedstat`
    // open and re-reads it with pread, as it does on procfs.
    let main = ThreadSample {
        comm: "rt-app".into(),
        ..ThreadSample::new(SIM_PID, SIM_PID)
    };
    fake.write(&format!("proc/{SIM_PID}/stat"), &stat_line(&main, false));
    for s in &snap.threads {
        let dir = format!("proc/{SIM_PID}/task/{}", s.tid);
        fake.write(&format!("{dir}/stat"), &stat_line(s, false));
        fake.write(
            &format!("{dir}/schedstat"),
            &format!("{} {} {}\n", s.run_ns, s.wait_ns, s.timeslices),
        );
        let allowed = if s.affinity_narrowed { "0" } else { online };
        fake.write(
            &format!("{dir}/status"),
            &format!(
                "Name:\t{}\nState:\tS (sleeping)\nTgid:\t{SIM_PID}\nPid:\t{}\nUid:\t{u}\t{u}\t{u}\t{u}\n\
                 Cpus_allowed_list:\t{allowed}\nvoluntary_ctxt_switches:\t{}\nnonvoluntary_ctxt_switches:\t{}\n",
                s.comm,
                s.tid,
                s.voluntary_switches,
                s.involuntary_switches,
                u = s.uid
            ),
        );
        fake.write(
            &format!("{dir}/sched"),
            &format!(
                "{} ({}, #threads: 1)\n-------------------------------------------------------------------\n\
                 se.nr_migrations                             :                    {}\n",
                s.comm,
                s.tid,
                s.nr_migrations.unwrap_or(0)
            ),
        );
        fake.write(
            &format!("{dir}/cgroup"),
            &format!(
                "5:cpuset:/\n4:cpu,cpuacct:{}\n0::/\n",
                s.cgroup.as_deref().unwrap_or("/")
            ),
        );
    }
}

/// The live host, reading the fake tree; the clock is the simulation's
/// (the live one would turn the same counters into other rates).
struct Replay {
    live: LinuxHost,
    at_ns: u64,
    last: Option<Snapshot>,
}

impl Host for Replay {
    type Error = corral_linux::Error;
    fn now_ns(&self) -> u64 {
        self.at_ns
    }
    fn topology(&mut self) -> Result<Topology, Self::Error> {
        self.live.topology()
    }
    fn online(&mut self) -> Result<CpuSet, Self::Error> {
        self.live.online()
    }
    fn sample(&mut self) -> Result<Snapshot, Self::Error> {
        let mut s = self.live.sample()?;
        s.at_ns = self.at_ns;
        self.last = Some(s.clone());
        Ok(s)
    }
    fn apply(&mut self, c: &Change) -> Result<(), Self::Error> {
        self.live.apply(c)
    }
    fn restore(&mut self) -> Result<(), Self::Error> {
        self.live.restore()
    }
    fn share_levels(&mut self, tid: u32) -> Result<Option<(Vec<Level>, u32)>, Self::Error> {
        self.live.share_levels(tid)
    }
    fn thread_progress(&mut self, tid: u32) -> Result<Option<ThreadProgress>, Self::Error> {
        self.live.thread_progress(tid)
    }
    fn describe(&self) -> String {
        self.live.describe()
    }
}

#[test]
fn the_daemon_plans_the_same_over_simhost_and_the_live_sampler() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeHost::new(dir.path());
    fake.cpus("0-1", "0-1", "0-1")
        .mount_v1("cpu,cpuacct", "cpu,cpuacct")
        .mount_v1("cpuset", "cpuset");
    let paths = fake.paths();
    let layout = Layout::V1 {
        cpu: paths.cgroup.join("cpu,cpuacct"),
        cpuset: paths.cgroup.join("cpuset"),
    };
    let live = LinuxHost::new(
        paths,
        Scope::Pids(vec![SIM_PID]),
        layout,
        "corral-test",
        true,
    )
    .unwrap();

    let config = Config::default();
    let interval = config.daemon.interval_ms * 1_000_000;
    let mut sim = Daemon::new(SimHost::new(machine(MIX, 2)), config.clone()).unwrap();
    let mut replay = Daemon::new(
        Replay {
            live,
            at_ns: 0,
            last: None,
        },
        config,
    )
    .unwrap();
    let mut placed_steps = 0;
    for step in 0..8u64 {
        let t = step * interval;
        sim.host_mut().machine_mut().advance_to(t);
        let changes = sim.step().unwrap().changes.len();
        // What SimHost sampled, as the kernel's files.
        let snap = sim.host_mut().sample().unwrap();
        write_procfs(&fake, &snap, "0-1");
        replay.host_mut().at_ns = t;
        let live_changes = replay.step().unwrap().changes.len();
        if changes != live_changes {
            eprintln!(
                "sim: {:#?}\nlive: {:#?}",
                sim.last_step(),
                replay.last_step()
            );
            eprintln!(
                "sim status: {:#?}\nlive status: {:#?}",
                sim.status().threads,
                replay.status().threads
            );
        }
        assert_eq!(changes, live_changes, "step {step}: changes");
        // The live sampler read back every counter SimHost gave.
        let read = replay.host().last.clone().unwrap();
        assert_eq!(read.threads.len(), snap.threads.len());
        for (a, b) in snap.threads.iter().zip(&read.threads) {
            let key = |s: &ThreadSample| {
                (
                    (
                        s.tid,
                        s.pid,
                        s.comm.clone(),
                        s.run_ns,
                        s.wait_ns,
                        s.timeslices,
                    ),
                    (
                        s.voluntary_switches,
                        s.involuntary_switches,
                        s.cpu,
                        s.policy,
                        s.nice,
                    ),
                    (s.kernel_thread, s.uid, s.affinity_narrowed),
                )
            };
            assert_eq!(key(a), key(b), "step {step}: thread {}", a.comm);
        }
        for s in &snap.threads {
            assert_eq!(
                sim.class_of(s.tid),
                replay.class_of(s.tid),
                "step {step}: class of {}",
                s.comm
            );
        }
        assert_eq!(sim.plan(), replay.plan(), "step {step}: plans differ");
        if !sim.plan().placements.is_empty() {
            placed_steps += 1;
        }
    }
    // Not vacuous: the daemon placed threads, and classified them as the
    // mix intends.
    assert!(placed_steps >= 5, "placed in {placed_steps} steps only");
    let class = |name: &str| {
        let t = sim.host().task_named(name).unwrap();
        sim.class_of(SimHost::<Fair>::tid_of(t))
            .map(|c| c.as_str())
            .unwrap_or("-")
    };
    assert_eq!(class("hog"), "heavy");
    assert_eq!(class("hog2"), "heavy");
    assert_eq!(class("medium"), "medium");
    assert_eq!(class("periodic"), "latency-critical");
}

/// The daemon's plan takes effect in the simulated machine: each heavy
/// thread gets a CPU of its own (two hogs, three CPUs). By default the
/// other groups keep that CPU and yield it by weight (work-conserving),
/// yet the hog still gets nearly all of it; with `dedicated_exclusive`
/// no other thread may use it.
#[test]
fn a_dedicated_core_is_honoured_by_the_simulated_machine() {
    for exclusive in [false, true] {
        let mut config = Config::default();
        config.plan.dedicated_exclusive = exclusive;
        let end = 10_000_000_000;
        let (daemon, report) =
            policy::run(SimHost::new(machine(MIX, 3)), config, &[], end, &mut |_| {}).unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let dedicated: Vec<_> = daemon
            .plan()
            .groups
            .values()
            .filter(|g| g.name.starts_with("dedicated"))
            .collect();
        assert_eq!(
            dedicated.len(),
            2,
            "each hog gets a CPU: {:?}",
            daemon.plan()
        );
        let m = daemon.host().machine();
        for g in dedicated {
            let cpu = g.cpus.first().unwrap() as usize;
            for t in 0..m.ntasks() {
                let in_it = daemon
                    .plan()
                    .group_of(SimHost::<Fair>::tid_of(t))
                    .is_some_and(|x| x.name == g.name);
                let allowed = m.task_allowed(t);
                let stats = m.task_stats(t);
                if in_it {
                    assert_eq!(allowed, &[cpu]);
                    // Placed within the first second; nearly all of its CPU since.
                    let share = stats.cpu_ns as f64 / end as f64;
                    assert!(
                        share > 0.93,
                        "{} got {share:.3} (exclusive {exclusive})",
                        stats.name
                    );
                } else if daemon
                    .plan()
                    .dedicated_cpu(SimHost::<Fair>::tid_of(t))
                    .is_none()
                {
                    // The latency group never spans a dedicated CPU.
                    let latency = daemon
                        .plan()
                        .group_of(SimHost::<Fair>::tid_of(t))
                        .is_some_and(|x| x.kind == corral_core::plan::GroupKind::Latency);
                    assert_eq!(
                        allowed.contains(&cpu),
                        !exclusive && !latency,
                        "{} on the dedicated CPU (exclusive {exclusive})",
                        stats.name
                    );
                }
            }
        }
    }
}

/// A scripted boost reaches the daemon at its time, raises the thread
/// (nice and group) and ends when the thread blocks.
#[test]
fn scripted_boosts_raise_the_handler_until_it_blocks() {
    // A 50 ms handler every 200 ms beside four hogs on 2 CPUs (paper 001).
    let json = r#"{"tasks": {
        "hog": {"instance": 4, "run": 100000},
        "handler": {"loop": -1, "run": 50000, "timer": {"ref": "unique", "period": 200000}}
    }}"#;
    let boosts = [BoostScript {
        task: "handler".into(),
        at: 2_000_000_000,
        on_wake: true,
        max_ms: Some(150),
        ..Default::default()
    }];
    let run = |boosts: &[BoostScript]| {
        let (d, r) = policy::run(
            SimHost::new(machine(json, 2)),
            Config::default(),
            boosts,
            8_000_000_000,
            &mut |_| {},
        )
        .unwrap();
        let m = d.host().machine();
        let h = d.host().task_named("handler").unwrap();
        let lat = m.task_stats(h).slack.clone();
        (r, lat)
    };
    let (plain, plain_slack) = run(&[]);
    let (boosted, boosted_slack) = run(&boosts);
    assert_eq!(plain.boosts, 0);
    assert!(boosted.boosts >= 29, "boosts: {}", boosted.boosts);
    assert!(
        boosted.boosts_ended + 1 >= boosted.boosts,
        "every boost but the last ends: {} of {}",
        boosted.boosts_ended,
        boosted.boosts
    );
    assert!(boosted.errors.is_empty(), "{:?}", boosted.errors);
    // rt-app's slack is the period (200 ms) less the response time.
    let response =
        |h: &corral_sim::out::hist::SignedHistogram| 200e6 - h.percentile(50.0).unwrap() as f64;
    let (p, b) = (response(&plain_slack), response(&boosted_slack));
    println!(
        "handler response p50: plain {:.1} ms, boosted {:.1} ms",
        p / 1e6,
        b / 1e6
    );
    // Four hogs and the handler on 2 CPUs: the handler gets ~2/5 of a CPU
    // unboosted (~2.5 x its 50 ms); boosted (its own CPU, top weight) it
    // runs as if alone.
    assert!(p > 100e6, "plain {p}");
    assert!(b < 55e6, "boosted {b}");
}

/// The simulated loop takes its full steps at the instants the live
/// loop's `Schedule` gives (the live side: `corral-daemon`'s test
/// `the_live_loop_steps_on_the_schedule`): a step at 0 and every interval,
/// on the simulated clock exactly.
#[test]
fn the_simulated_loop_steps_on_the_live_schedule() {
    use corral_daemon::schedule::{Due, Schedule};
    // Two hogs only: no thread is born after the start, so quick steps
    // change nothing and `observe` sees the full steps alone.
    let json = r#"{"tasks": {"hog": {"run": 100000}, "hog2": {"run": 100000}}}"#;
    let mut config = Config::default();
    config.daemon.interval_ms = 100;
    let end = 1_000_000_000;
    let mut seen = Vec::new();
    let (_, report) = policy::run(
        SimHost::new(machine(json, 2)),
        config.clone(),
        &[],
        end,
        &mut |h| seen.push(h.now_ns()),
    )
    .unwrap();
    // The schedule alone, stepped the way both loops step it.
    let mut s = Schedule::new(100_000_000, Some(40_000_000), 0);
    let mut want = Vec::new();
    let mut now = 0;
    while now <= end {
        match s.due(now) {
            Due::Step => {
                want.push(now);
                s.stepped(now);
            }
            Due::Quick => s.quick_stepped(now),
            Due::Wait => now = s.wake_at(now, false),
        }
    }
    assert_eq!(report.steps as usize, want.len());
    assert_eq!(seen, want);
    assert_eq!(want.len(), 11, "0, 100, ..., 1000 ms: {want:?}");
}

/// The `util_avg` the daemon samples is PELT's: a 10 ms / 4 ms thread
/// alone on its CPU swings between the closed-form bounds
/// `1024·(1 − y^r)/(1 − y^p)` and that times `y^(p − r)` (r, p in periods
/// of 1024 µs; y³² = ½), LISA's tolerance (5 % of 1024) around them; a
/// 2.6.32 kernel has no PELT, and the sample says so.
#[test]
fn the_sampled_util_avg_is_pelts_on_an_eevdf_kernel_and_absent_on_2_6_32() {
    let json = r#"{"tasks": {"medium": {"loop": -1, "run": 4000, "timer": {"ref": "unique", "period": 10000}}}}"#;
    let mut host = SimHost::new(machine(json, 1));
    let mut seen = Vec::new();
    // Every 1.3 ms from 1 s on: each phase of the period.
    for k in 0..400u64 {
        host.machine_mut().run_until(1_000_000_000 + k * 1_300_000);
        let s = host.sample().unwrap();
        seen.push(s.threads[0].util_avg.expect("PELT on EEVDF") as f64);
    }
    let y = 0.5f64.powf(1.0 / 32.0);
    let (r, p) = (4000.0 / 1024.0, 10000.0 / 1024.0);
    let max = 1024.0 * (1.0 - y.powf(r)) / (1.0 - y.powf(p));
    let min = max * y.powf(p - r);
    let (lo, hi) = seen
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &u| (l.min(u), h.max(u)));
    assert!((hi - max).abs() < 51.2, "highest {hi}, closed form {max}");
    assert!((lo - min).abs() < 51.2, "lowest {lo}, closed form {min}");

    let old = Machine::new(
        Platform::uniform(1),
        parse(json, "test").unwrap(),
        Fair::new(Flavour::Cfs, 1),
    )
    .unwrap();
    let mut host = SimHost::new(old);
    host.machine_mut().run_until(100_000_000);
    assert_eq!(host.sample().unwrap().threads[0].util_avg, None);
}

/// A recording's threads as the daemon sees them: a fork not yet made is
/// not there, and a thread that exited inside corral's group has left it
/// (the kernel's `cgroup_exit`), so the group can be removed.
#[test]
fn a_recorded_fork_is_unseen_until_forked_and_an_exited_thread_leaves_its_group() {
    // "bg" is the recording's background: outside the daemon's scope,
    // never sampled however much it runs.
    let json = r#"{"tasks": {
        "parent": {"loop": 1, "run": 20000, "corral_wake": "child", "run1": 1000},
        "child": {"loop": 1, "corral_forked": true, "corral_block": "child", "run": 5000},
        "bg": {"loop": 1, "corral_background": true, "run": 30000}
    }}"#;
    let mut host = SimHost::new(machine(json, 2));
    host.machine_mut().run_until(10_000_000);
    let seen: Vec<u32> = host
        .sample()
        .unwrap()
        .threads
        .iter()
        .map(|t| t.tid)
        .collect();
    assert_eq!(
        seen,
        [SimHost::<Fair>::tid_of(0)],
        "the child is not forked yet, the background not sampled"
    );
    // (advance_to: the changes below are made at 22 ms, as the policy
    // driver makes them.)
    host.machine_mut().advance_to(22_000_000);
    let child = SimHost::<Fair>::tid_of(1);
    assert!(host
        .sample()
        .unwrap()
        .threads
        .iter()
        .any(|t| t.tid == child));
    let group = corral_core::plan::GroupSpec {
        name: "shared".into(),
        kind: corral_core::plan::GroupKind::Shared,
        cpus: CpuSet::from_iter([0, 1]),
        shares: 1024,
        slice_ns: None,
        nice: None,
    };
    host.apply(&Change::SetGroup(group)).unwrap();
    host.apply(&Change::Move {
        tid: child,
        pid: SIM_PID,
        group: "shared".into(),
    })
    .unwrap();
    host.machine_mut().run_until(40_000_000);
    assert!(host.machine().task_stats(1).exited_at.is_some());
    host.apply(&Change::RemoveGroup {
        name: "shared".into(),
    })
    .unwrap();
}

/// A child forked by a thread corral moved is born in corral's group (the
/// kernel's `cgroup_fork`), the daemon reads it there, and a restore puts
/// it back where it was recorded, as the live placer moves out threads
/// born inside its groups.
#[test]
fn a_child_of_a_moved_thread_is_born_in_corral_s_group_and_restored() {
    let json = r#"{"tasks": {
        "parent": {"loop": 1, "taskgroup": "/work", "run": 20000, "corral_wake": "child", "run1": 1000},
        "child": {"loop": 1, "taskgroup": "/work", "corral_forked": true, "corral_block": "child", "run": 50000}
    }}"#;
    let mut host = SimHost::new(machine(json, 2));
    host.machine_mut().advance_to(5_000_000);
    let group = corral_core::plan::GroupSpec {
        name: "shared".into(),
        kind: corral_core::plan::GroupKind::Shared,
        cpus: CpuSet::from_iter([1]),
        shares: 1024,
        slice_ns: None,
        nice: None,
    };
    host.apply(&Change::SetGroup(group)).unwrap();
    host.apply(&Change::Move {
        tid: SimHost::<Fair>::tid_of(0),
        pid: SIM_PID,
        group: "shared".into(),
    })
    .unwrap();
    host.machine_mut().advance_to(30_000_000);
    let child = SimHost::<Fair>::tid_of(1);
    let snap = host.sample().unwrap();
    let c = snap
        .threads
        .iter()
        .find(|t| t.tid == child)
        .expect("forked");
    assert_eq!(c.cgroup.as_deref(), Some("/corral/shared"));
    assert_eq!(host.machine().task_allowed(1), &[1]);
    host.restore().unwrap();
    assert_eq!(&**host.machine().task_cgroup(1), "/work");
    assert_eq!(host.machine().task_allowed(1), &[0, 1]);
}

/// A recording's thread of the root cgroup on a kernel with autogroups
/// runs in its session's group (`/autogroup-N`, 1024 shares): two hogs of
/// one session share what a hog of another session has alone. The daemon
/// sees it in the root, as `/proc/PID/cgroup` shows it, and a release
/// gives it back its autogroup, as the kernel does when a task returns to
/// the root cgroup.
#[test]
fn an_autogroup_s_threads_share_its_weight_and_the_daemon_sees_the_root() {
    let json = r#"{"global": {"duration": 2}, "tasks": {
        "a": {"instance": 2, "taskgroup": "/autogroup-7", "run": 3000000},
        "b": {"taskgroup": "/autogroup-8", "run": 3000000}
    }}"#;
    let mut host = SimHost::new(machine(json, 1));
    host.machine_mut().advance_to(1_000_000_000);
    let cpu = |host: &SimHost<Fair>, t| host.machine().task_stats(t).cpu_ns as f64 / 1e9;
    let shares = [cpu(&host, 0), cpu(&host, 1), cpu(&host, 2)];
    for (s, want) in shares.iter().zip([0.25, 0.25, 0.5]) {
        assert!((s - want).abs() < 0.03, "{shares:?}");
    }
    let snap = host.sample().unwrap();
    assert!(
        snap.threads
            .iter()
            .all(|t| t.cgroup.as_deref() == Some("/")),
        "{:?}",
        snap.threads.iter().map(|t| &t.cgroup).collect::<Vec<_>>()
    );
    let group = corral_core::plan::GroupSpec {
        name: "shared".into(),
        kind: corral_core::plan::GroupKind::Shared,
        cpus: CpuSet::from_iter([0]),
        shares: 1024,
        slice_ns: None,
        nice: None,
    };
    host.apply(&Change::SetGroup(group)).unwrap();
    host.apply(&Change::Move {
        tid: SimHost::<Fair>::tid_of(2),
        pid: SIM_PID,
        group: "shared".into(),
    })
    .unwrap();
    assert_eq!(&**host.machine().task_cgroup(2), "/corral/shared");
    host.restore().unwrap();
    assert_eq!(&**host.machine().task_cgroup(2), "/autogroup-8");
}
