//! `corral sim`.

use crate::args::SimArgs;
use crate::table::Table;
use anyhow::{bail, Context};
use corral_sim::corral::host::SimHost;
use corral_sim::corral::policy::{self, PolicyReport};
use corral_sim::input::platform::{self, GroupSpec, PlatformSpec};
use corral_sim::input::recording::{self, CommGroup};
use corral_sim::models::Model;
use corral_sim::out::report::{summarise, Summary};
use corral_sim::sched::fair::Flavour;
use corral_sim::sched::features::{Feature, Features};
use corral_sim::{input::rtapp, out::trace};
use std::process::ExitCode;
use std::time::Instant;

/// Parses "1s..1.2s" / "0..50ms" into ns.
fn parse_window(spec: &str) -> anyhow::Result<(u64, u64)> {
    let bad = || anyhow::anyhow!("--svg-window: {spec:?} is not FROM..TO (e.g. 1s..1.2s)");
    let (a, b) = spec.split_once("..").ok_or_else(bad)?;
    let t = |s: &str| -> anyhow::Result<u64> {
        let s = s.trim();
        let (num, scale) = if let Some(v) = s.strip_suffix("ms") {
            (v, 1e6)
        } else if let Some(v) = s.strip_suffix("us") {
            (v, 1e3)
        } else if let Some(v) = s.strip_suffix('s') {
            (v, 1e9)
        } else {
            (s, 1e9)
        };
        let v: f64 = num.parse().map_err(|_| bad())?;
        anyhow::ensure!(v >= 0.0, bad());
        Ok((v * scale) as u64)
    };
    let (from, to) = (t(a)?, t(b)?);
    anyhow::ensure!(to > from, "--svg-window: {spec:?} ends before it starts");
    Ok((from, to))
}

/// The names a workload's threads meet by: its tasks' and every shared
/// resource's (a `unique…` timer is each thread's own).
fn names(w: &rtapp::Workload) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for t in &w.tasks {
        out.insert(t.name.clone());
        for e in t.phases.iter().flat_map(|p| p.events.iter()) {
            if matches!(e, rtapp::Event::Timer { name, .. } if name.starts_with("unique")) {
                continue;
            }
            let (a, b) = e.resources();
            out.extend(a.into_iter().chain(b).map(|n| n.to_string()));
        }
    }
    out
}

/// The platform from --platform and the options that override it;
/// `recorded_cpus`, a recording's own CPU count, when the file gives none
/// (checked before `--hotplug`, which names CPUs).
fn platform_of(args: &SimArgs, recorded_cpus: Option<usize>) -> anyhow::Result<PlatformSpec> {
    let mut spec = match &args.platform {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))?;
            platform::parse(&text, &p.display().to_string())?
        }
        None => PlatformSpec::uniform(platform::DEFAULT_CPUS),
    };
    if let Some(f) = args.sched_feat {
        spec.features = f;
    }
    spec.platform.seed = args.seed;
    // A recording replays on as many CPUs as it was made on, unless told.
    if let Some(n) = recorded_cpus.filter(|_| !spec.cpus_given) {
        anyhow::ensure!(
            (1..=4096).contains(&n),
            "the recording's cpus ({n}) must be 1 to 4096"
        );
        spec.platform.capacities = vec![1024; n];
    }
    if let Some(n) = args.cpus {
        anyhow::ensure!((1..=4096).contains(&n), "--cpus must be 1 to 4096");
        spec.platform.capacities = vec![1024; n];
    }
    if !args.capacities.is_empty() {
        if args.capacities.iter().any(|&c| c == 0 || c > 1024) {
            bail!("--capacities: each CPU's capacity must be 1 to 1024");
        }
        spec.platform.capacities = args.capacities.clone();
    }
    if let Some(h) = &args.hotplug {
        spec.platform.hotplug = platform::parse_hotplug(h, spec.platform.capacities.len())
            .map_err(|e| anyhow::anyhow!("--hotplug: {e}"))?;
    }
    for s in &args.group_shares {
        let (p, v) = s
            .split_once('=')
            .with_context(|| format!("--group-shares: {s:?} is not PATH=SHARES"))?;
        let v: u64 = v
            .parse()
            .with_context(|| format!("--group-shares: {v:?} is not a number"))?;
        anyhow::ensure!(
            (2..=262_144).contains(&v),
            "--group-shares: {p}: shares are 2 to 262144"
        );
        group(&mut spec, p).shares = Some(v);
    }
    for s in &args.group_quota {
        let bad = || anyhow::anyhow!("--group-quota: {s:?} is not PATH=QUOTA_US/PERIOD_US");
        let (p, v) = s.split_once('=').ok_or_else(bad)?;
        let (q, per) = v.split_once('/').ok_or_else(bad)?;
        let g = group(&mut spec, p);
        g.quota_us = Some(q.parse().map_err(|_| bad())?);
        g.period_us = per.parse().map_err(|_| bad())?;
    }
    Ok(spec)
}

fn group<'a>(spec: &'a mut PlatformSpec, path: &str) -> &'a mut GroupSpec {
    spec.groups.entry(path.to_string()).or_insert(GroupSpec {
        shares: None,
        quota_us: None,
        period_us: 100_000,
    })
}

pub fn run(args: &SimArgs) -> anyhow::Result<ExitCode> {
    if args.bench {
        return bench();
    }
    if let Some(which) = &args.paper {
        return papers(which, args.report.as_deref(), args.json);
    }
    let path = args.workload.as_ref().context("no workload given")?;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut work = rtapp::parse(&text, &path.display().to_string())?;
    if let Some(b) = &args.beside {
        let text =
            std::fs::read_to_string(b).with_context(|| format!("cannot read {}", b.display()))?;
        let other = rtapp::parse(&text, &b.display().to_string())?;
        // Timers, locks, barriers and semaphores are found by name in the
        // one workload the two make: a name in both would join them.
        let ours = names(&work);
        let shared: Vec<String> = names(&other)
            .into_iter()
            .filter(|n| ours.contains(n))
            .collect();
        anyhow::ensure!(
            shared.is_empty(),
            "{}: {:?} also named in {} (a task, timer, lock, barrier or semaphore): the two \
             would share it; rename it in one of them",
            b.display(),
            shared,
            path.display()
        );
        work.tasks.extend(other.tasks);
    }
    // A recording (`corral record`) carries its live figures.
    let recorded = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|mut v| v.get_mut("corral_recording").map(serde_json::Value::take));
    let recorded_cpus = recorded
        .as_ref()
        .and_then(|r| r["cpus"].as_u64())
        .map(|n| n as usize);
    let mut spec = platform_of(args, recorded_cpus)?;
    // A recording made by corral knows where the live ticks fell (XXX: on
    // the replay's HZ; the live kernel's CONFIG_HZ is not recorded).
    if let Some(start) = recorded.as_ref().and_then(|r| r["start_mono_ns"].as_u64()) {
        if !spec.tick_phase_given {
            spec.platform.tick_phase =
                corral_sim::sched::machine::tick_phase_after(start, spec.platform.hz);
        }
    }
    let kernel = args
        .kernel
        .or(spec.kernel)
        .unwrap_or(Model::Fair(Flavour::Eevdf));
    // A recording made by corral says how its kernel placed wake-ups
    // (`corral record`, from `corral lab placement`'s probe): replayed so
    // on the model that has the rule, unless the platform file sets
    // vcpu_pack_util itself (0: as upstream) or the CPUs differ.
    if let Some(u) = recorded.as_ref().and_then(|r| r["vcpu_pack_util"].as_u64()) {
        let caps = &spec.platform.capacities;
        let ignored = if spec.platform.vcpu_pack_util.is_some() {
            None
        } else if u > 1024 {
            Some(format!("{u} is over 1024"))
        } else if kernel != Model::Fair(Flavour::Eevdf) {
            Some(format!("the {kernel} model has no such rule"))
        } else if caps.iter().any(|&c| c != caps[0]) {
            Some("the replay's CPUs differ in capacity".into())
        } else {
            spec.platform.vcpu_pack_util = Some(u);
            eprintln!(
                "corral sim: the recorded kernel kept a woken thread beside its busy waker while their utilizations summed under {u} (measured when recorded): replayed so (a platform file's vcpu_pack_util decides instead; 0: as upstream Linux)"
            );
            None
        };
        if let Some(why) = ignored {
            eprintln!(
                "corral sim: the recorded kernel packed wake-ups under {u}; replayed as upstream Linux places them instead ({why})"
            );
        }
    }
    // A recording runs until its threads end: room for 4 times its length.
    let rec_secs = recorded
        .as_ref()
        .and_then(|r| r["seconds"].as_f64())
        .map(|s| (4.0 * s).max(1.0));
    let secs = args
        .duration
        .or(work.duration_s)
        .or(rec_secs)
        .unwrap_or(10.0);
    anyhow::ensure!(
        secs > 0.0 && secs <= 1e6,
        "--duration must be above 0 and at most 1e6 s"
    );
    let window = match &args.svg_window {
        Some(w) => Some(parse_window(w)?),
        None => None,
    };
    if let Some((from, _)) = window {
        anyhow::ensure!(
            (from as f64) < secs * 1e9,
            "--svg-window starts at {} s, at or past the end of the run ({secs} s)",
            from as f64 / 1e9
        );
    }
    let ntasks: u64 = work.tasks.iter().map(|t| t.instances as u64).sum();
    let recording = args.trace.is_some() || args.svg.is_some() || args.log_dir.is_some();
    let end = (secs * 1e9) as u64;
    let corral = args.policy == Some(crate::args::SimPolicy::Corral);
    anyhow::ensure!(
        corral || args.compare || args.config.is_none(),
        "--config is corral's configuration, read only with --policy corral or --compare"
    );
    anyhow::ensure!(
        corral || args.compare || args.daemon_cost.is_none(),
        "--daemon-cost is the daemon's, read only with --policy corral or --compare"
    );
    anyhow::ensure!(
        corral || args.compare || spec.boosts.is_empty(),
        "the platform scripts boosts, which only --policy corral and --compare act on"
    );
    if spec.features != Features::default() && kernel != Model::Fair(Flavour::Eevdf) {
        let off: Vec<&str> = Feature::ALL
            .into_iter()
            .filter(|f| !spec.features.on(*f))
            .map(|f| f.name())
            .collect();
        let from = if args.sched_feat.is_some() {
            "--sched-feat"
        } else {
            "the platform file's features"
        };
        bail!(
            "{from} turns off {}: the {kernel} model reads no sched_feat switch; only eevdf does",
            off.join(", ")
        );
    }
    if let Some(u) = spec.platform.vcpu_pack_util {
        anyhow::ensure!(
            kernel == Model::Fair(Flavour::Eevdf),
            "the platform file's vcpu_pack_util = {u} packs wake-ups as a 6.x guest kernel does; the {kernel} model has no such rule (only eevdf does)"
        );
    }
    let Some(flavour) = kernel.flavour() else {
        if args.compare {
            return Err(super::whatif::unsupported(&kernel.to_string()));
        }
        // An older run-queue model (Linux 2.4, MLQ, O(1), BFS).
        anyhow::ensure!(
            !corral,
            "--policy corral needs group scheduling: use --kernel eevdf or cfs, not {kernel}"
        );
        let mut m = platform::build_old(work, &spec, kernel)?;
        if recording {
            m.record();
        }
        if ntasks <= 64 {
            m.track_sharing();
        }
        let t0 = Instant::now();
        m.run_until(end);
        let wall = t0.elapsed().as_secs_f64();
        return finish(&m, args, secs, window, wall, None, recorded.as_ref());
    };
    // corral's configuration, read once (whoever runs the daemon).
    let config = match &args.config {
        Some(f) => super::load_config(f)?,
        None => corral_core::config::Config::default(),
    };
    if args.compare {
        return super::whatif::run(
            args,
            work,
            &spec,
            flavour,
            config,
            recorded.as_ref(),
            end,
            &kernel.to_string(),
        );
    }
    let work = match (corral, args.daemon_cost) {
        (true, Some(c)) => policy::with_daemon(&work, &config, c.0, end),
        _ => work,
    };
    let mut m = platform::build(work, &spec, flavour)?;
    if recording {
        m.record();
    }
    if ntasks <= 64 {
        m.track_sharing();
    }
    let t0 = Instant::now();
    if corral {
        let (daemon, report) =
            policy::run(SimHost::new(m), config, &spec.boosts, end, &mut |_| {})?;
        let wall = t0.elapsed().as_secs_f64();
        return finish(
            daemon.host().machine(),
            args,
            secs,
            window,
            wall,
            Some(&report),
            recorded.as_ref(),
        );
    }
    m.run_until(end);
    let wall = t0.elapsed().as_secs_f64();
    finish(&m, args, secs, window, wall, None, recorded.as_ref())
}

/// Writes the outputs asked for and prints the summary.
fn finish<K: corral_sim::sched::kernel::SchedClass>(
    m: &corral_sim::sched::machine::Machine<K>,
    args: &SimArgs,
    secs: f64,
    window: Option<(u64, u64)>,
    wall: f64,
    report: Option<&PolicyReport>,
    recorded: Option<&serde_json::Value>,
) -> anyhow::Result<ExitCode> {
    let s = summarise(m);
    // Outside the recorded scope: the recording's background and the
    // daemon's own thread (`--daemon-cost`), as the workload marks them.
    let outside: std::collections::BTreeSet<&str> = m
        .workload()
        .tasks
        .iter()
        .filter(|t| t.background)
        .map(|t| t.name.as_str())
        .collect();
    if let Some(f) = &args.trace {
        std::fs::write(f, trace::perfetto(m, report.map_or(&[][..], |r| &r.log)))
            .with_context(|| format!("cannot write {}", f.display()))?;
        eprintln!(
            "corral sim: trace written to {} (open it in ui.perfetto.dev)",
            f.display()
        );
    }
    if let Some(f) = &args.svg {
        // By default the first 200 ms from the first run: a workload whose
        // threads start late (browser-short at 400 ms) would otherwise
        // chart an empty window.
        let end = (secs * 1e9) as u64;
        let (from, to) = window.unwrap_or_else(|| {
            let first = m.slices().iter().map(|s| s.start).min().unwrap_or(0);
            let from = first / 1_000_000 * 1_000_000;
            (from, (from + 200_000_000).min(end).max(from + 1))
        });
        std::fs::write(f, trace::svg(m, from, to))
            .with_context(|| format!("cannot write {}", f.display()))?;
        eprintln!("corral sim: chart written to {}", f.display());
    }
    if let Some(d) = &args.log_dir {
        let files = trace::rtapp_logs(m, d)
            .with_context(|| format!("cannot write logs into {}", d.display()))?;
        eprintln!(
            "corral sim: {} rt-app logs written to {}",
            files.len(),
            d.display()
        );
    }
    if args.json {
        let mut v = serde_json::to_value(&s)?;
        v["seed"] = args.seed.into();
        if let Some(r) = report {
            v["policy"] = policy_json(r);
        }
        if let Some(r) = recorded {
            v["recorded"] = r.clone();
            let groups = by_comm(&m.stats(), &outside);
            v["agreement"] = serde_json::to_value(agreement(&s, &groups, r))?;
            v["by_comm"] = groups
                .into_iter()
                .map(|g| (g.comm.clone(), g.figures()))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    match recorded {
        Some(r) => print_against_recording(&s, &m.stats(), r, &outside, wall),
        None => print_summary(&s, wall),
    }
    let w = m.work();
    if w.picks > 0 {
        println!(
            "Scheduling work: {} picks, {:.2} tasks examined per pick, {} enqueues, {} dequeues{}",
            w.picks,
            w.examined as f64 / w.picks as f64,
            w.enqueues,
            w.dequeues,
            if w.removal_scanned > 0 {
                format!(", {} scanned to remove", w.removal_scanned)
            } else {
                String::new()
            }
        );
    }
    if let Some(r) = report {
        print_policy(r);
    }
    Ok(ExitCode::SUCCESS)
}

fn policy_json(r: &PolicyReport) -> serde_json::Value {
    serde_json::json!({
        "policy": "corral",
        "steps": r.steps,
        "changes": r.changes,
        "boosts": r.boosts,
        "boosts_ended": r.boosts_ended,
        "classes": r.classes,
        "groups": r.groups,
        "group_cpus": r.group_cpus,
        "errors": r.errors.iter().map(|(t, e)| serde_json::json!({"at_s": *t as f64 / 1e9, "error": e})).collect::<Vec<_>>(),
    })
}

fn print_policy(r: &PolicyReport) {
    println!(
        "corral: {} steps, {} changes applied, {} boosts ({} ended by the daemon), {} errors",
        r.steps,
        r.changes,
        r.boosts,
        r.boosts_ended,
        r.errors.len()
    );
    let mut t = Table::new(&["TASK", "CLASS", "GROUP", "CPUS"]);
    for (name, class) in &r.classes {
        let group = r.groups.get(name);
        t.row(vec![
            name.clone(),
            class.clone(),
            group.cloned().unwrap_or_else(|| "-".into()),
            group
                .and_then(|g| r.group_cpus.get(g))
                .cloned()
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    print!("{}", t.render());
    for (at, e) in r.errors.iter().take(10) {
        println!("error at {:.3} s: {e}", *at as f64 / 1e9);
    }
}

fn print_summary(s: &Summary, wall: f64) {
    println!(
        "{} on {} CPUs, {:.1} s simulated in {:.3} s ({} events, {:.1} M events/s)",
        s.kernel,
        s.cpus,
        s.simulated_s,
        wall,
        s.events,
        s.events as f64 / wall.max(1e-9) / 1e6
    );
    let mut t = Table::new(&[
        "TASK",
        "CPU (s)",
        "SHARE",
        "WAKEUPS",
        "LAT P50 (us)",
        "P99 (us)",
        "MAX (us)",
        "SLACK P50/MIN (us)",
        "MIGR",
        "PREEMPT",
        "SWITCHES",
        "EXIT (s)",
    ]);
    for x in &s.tasks {
        t.row(vec![
            x.name.clone(),
            format!("{:.3}", x.cpu_s),
            format!("{:.3}", x.share),
            x.wakeups.to_string(),
            format!("{:.0}", x.latency_p50_us),
            format!("{:.0}", x.latency_p99_us),
            format!("{:.0}", x.latency_max_us),
            match (x.slack_p50_us, x.slack_min_us) {
                (Some(a), Some(b)) => format!("{a:.0}/{b:.0}"),
                _ => "-".into(),
            },
            x.migrations.to_string(),
            x.preemptions.to_string(),
            x.switches.to_string(),
            x.exited_s.map_or("-".into(), |e| format!("{e:.2}")),
        ]);
    }
    print!("{}", t.render());
    let util: Vec<String> = s
        .cpu_utilisation
        .iter()
        .map(|u| format!("{:.1}%", u * 100.0))
        .collect();
    println!(
        "CPU utilisation: {}; Jain fairness {:.3}",
        util.join(" "),
        s.jain_fairness
    );
    let mut shared: Vec<_> = s.sharing.iter().filter(|p| p.seconds > 0.0).collect();
    shared.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    if !shared.is_empty() {
        let top: Vec<String> = shared
            .iter()
            .take(8)
            .map(|p| format!("{}+{} {:.2} s", p.a, p.b, p.seconds))
            .collect();
        println!("Sharing a CPU (most): {}", top.join(", "));
    }
}

/// A recording's replay: the threads that used the most CPU live, each
/// recorded figure beside the simulated one, and the whole run's.
fn print_against_recording(
    s: &Summary,
    stats: &[corral_sim::sched::machine::TaskStats],
    rec: &serde_json::Value,
    outside: &std::collections::BTreeSet<&str>,
    wall: f64,
) {
    const SHOWN: usize = 20;
    println!(
        "{} on {} CPUs, {:.1} s simulated in {:.3} s ({} events)",
        s.kernel, s.cpus, s.simulated_s, wall, s.events
    );
    let empty = serde_json::Map::new();
    let threads = rec["threads"].as_object().unwrap_or(&empty);
    println!(
        "Replaying {} ({:.2} s, {} threads, {} events lost)",
        rec["about"].as_str().unwrap_or("a recording"),
        rec["seconds"].as_f64().unwrap_or(0.0),
        threads.len(),
        rec["lost_events"].as_u64().unwrap_or(0)
    );
    let (bg, mut rows): (Vec<_>, Vec<_>) = threads
        .iter()
        .partition(|(_, t)| t["background"].as_bool().unwrap_or(false));
    rows.sort_by(|a, b| {
        b.1["cpu_ms"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&a.1["cpu_ms"].as_f64().unwrap_or(0.0))
    });
    let mut t = Table::new(&[
        "THREAD (live / simulated)",
        "CPU (ms)",
        "WAKEUPS",
        "LAT P50 (us)",
        "P99 (us)",
        "MIGR",
        "EXIT (s)",
    ]);
    let pair = |a: String, b: String| format!("{a} / {b}");
    for (name, live) in rows.iter().take(SHOWN) {
        let Some(sim) = s.tasks.iter().find(|t| &t.name == *name) else {
            continue;
        };
        let f = |k: &str| live[k].as_f64().unwrap_or(0.0);
        t.row(vec![
            (*name).clone(),
            pair(
                format!("{:.1}", f("cpu_ms")),
                format!("{:.1}", sim.cpu_s * 1e3),
            ),
            pair(format!("{:.0}", f("wakeups")), sim.wakeups.to_string()),
            pair(
                format!("{:.0}", f("latency_p50_us")),
                format!("{:.0}", sim.latency_p50_us),
            ),
            pair(
                format!("{:.0}", f("latency_p99_us")),
                format!("{:.0}", sim.latency_p99_us),
            ),
            pair(
                format!("{:.0}", f("migrations")),
                sim.migrations.to_string(),
            ),
            pair(
                live["exited_s"]
                    .as_f64()
                    .map_or("-".into(), |e| format!("{e:.3}")),
                sim.exited_s.map_or("-".into(), |e| format!("{e:.3}")),
            ),
        ]);
    }
    print!("{}", t.render());
    if rows.len() > SHOWN {
        println!(
            "({} more threads: --json lists every one)",
            rows.len() - SHOWN
        );
    }
    if !bg.is_empty() {
        let live: f64 = bg
            .iter()
            .map(|(_, t)| t["cpu_ms"].as_f64().unwrap_or(0.0))
            .sum();
        let sim: f64 = s
            .tasks
            .iter()
            .filter(|t| is_background(&rec["threads"], &t.name))
            .map(|t| t.cpu_s)
            .sum();
        println!(
            "Background (ran beside it, outside the scope; replayed at its live instants): {} threads, CPU {:.2} s live / {:.2} s simulated",
            bg.len(),
            live / 1e3,
            sim
        );
    }
    // Programs pooled: a thread's p99 over a few dozen wake-ups is one
    // draw; a program's thousands are not.
    let sim_groups = by_comm(stats, outside);
    let empty = serde_json::Map::new();
    let live_groups = rec["by_comm"].as_object().unwrap_or(&empty);
    let mut t = Table::new(&[
        "PROGRAM (live / simulated)",
        "THREADS",
        "CPU (s)",
        "WAKEUPS",
        "LAT P50 (us)",
        "P99 (us)",
    ]);
    // The programs that used the most CPU live.
    let mut live_groups: Vec<_> = live_groups.iter().collect();
    live_groups.sort_by(|a, b| {
        b.1["cpu_ms"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&a.1["cpu_ms"].as_f64().unwrap_or(0.0))
    });
    for (comm, live) in live_groups.into_iter().take(10) {
        let Some(sim) = sim_groups.iter().find(|g| &g.comm == comm) else {
            continue;
        };
        let f = |k: &str| live[k].as_f64().unwrap_or(0.0);
        t.row(vec![
            comm.clone(),
            format!("{:.0}", f("threads")),
            pair(
                format!("{:.2}", f("cpu_ms") / 1e3),
                format!("{:.2}", sim.cpu_ns as f64 / 1e9),
            ),
            pair(format!("{:.0}", f("wakeups")), sim.wakeups.to_string()),
            pair(
                format!("{:.0}", f("latency_p50_us")),
                format!("{:.0}", sim.latency.percentile(50.0) as f64 / 1e3),
            ),
            pair(
                format!("{:.0}", f("latency_p99_us")),
                format!("{:.0}", sim.latency.percentile(99.0) as f64 / 1e3),
            ),
        ]);
    }
    print!("{}", t.render());
    let a = agreement(s, &sim_groups, rec);
    println!(
        "Within {:.0} % of live: CPU time of {} of {} threads and {} of {} programs; wake-up latency p99 of {} of {} threads and {} of {} programs with {} or more wake-ups (one run's p99 over a few dozen wake-ups is one draw: docs/sim.md, *How close a replay comes*)",
        AGREE * 100.0,
        a.cpu_threads.0,
        a.cpu_threads.1,
        a.cpu_programs.0,
        a.cpu_programs.1,
        a.p99_threads.0,
        a.p99_threads.1,
        a.p99_programs.0,
        a.p99_programs.1,
        AGREE_MIN_WAKEUPS,
    );
    // The whole is the recorded scope's: the background (whose threads
    // end in the replay but never live) is left out.
    let live_cpu: f64 = rows
        .iter()
        .map(|(_, v)| v["cpu_ms"].as_f64().unwrap_or(0.0))
        .sum();
    let scope: Vec<_> = s
        .tasks
        .iter()
        .filter(|t| !outside.contains(t.name.as_str()))
        .collect();
    let sim_cpu: f64 = scope.iter().map(|t| t.cpu_s * 1e3).sum();
    let live_end = rows
        .iter()
        .filter_map(|(_, v)| v["exited_s"].as_f64())
        .fold(0.0, f64::max);
    let sim_end = scope.iter().filter_map(|t| t.exited_s).fold(0.0, f64::max);
    let running = scope.iter().filter(|t| t.exited_s.is_none()).count();
    println!(
        "Whole: CPU {:.2} s live, {:.2} s simulated; last exit {:.3} s live, {:.3} s simulated{}",
        live_cpu / 1e3,
        sim_cpu / 1e3,
        live_end,
        sim_end,
        if running > 0 {
            format!(" ({running} threads had not ended when the simulation stopped)")
        } else {
            String::new()
        }
    );
}

/// The simulated tasks of a recording pooled by program (comm), as the
/// recording pools the live ones (`Recording::by_comm`): its background
/// left out.
pub(crate) fn by_comm(
    stats: &[corral_sim::sched::machine::TaskStats],
    outside: &std::collections::BTreeSet<&str>,
) -> Vec<CommGroup> {
    recording::pool(
        stats
            .iter()
            .filter(|t| !outside.contains(t.name.as_str()))
            .map(|t| {
                (
                    recording::comm_of(&t.name),
                    t.cpu_ns,
                    t.wakeups,
                    &*t.wakeup_latency,
                )
            }),
    )
}

/// How close a replay must come to the recording to count as agreeing
/// (issue 19's 25 %): |simulated − live| ≤ `AGREE` × live.
const AGREE: f64 = 0.25;
/// The fewest live wake-ups for a latency p99 to be compared.
const AGREE_MIN_WAKEUPS: u64 = 20;

/// Of a recording's threads and programs (background left out), how many
/// the replay brings within [`AGREE`] of live: (agreeing, compared). A
/// thread is compared when the replay has it (one that never ran a whole
/// µs live is not replayed), a program when the recording pooled it.
#[derive(Debug, Default, PartialEq, serde::Serialize)]
struct Agreement {
    cpu_threads: (usize, usize),
    cpu_programs: (usize, usize),
    p99_threads: (usize, usize),
    p99_programs: (usize, usize),
}

/// (agreeing, compared) of (live, simulated) pairs.
fn within(pairs: impl Iterator<Item = (f64, f64)>) -> (usize, usize) {
    pairs.fold((0, 0), |(ok, n), (live, sim)| {
        (
            ok + usize::from((sim - live).abs() <= AGREE * live.abs()),
            n + 1,
        )
    })
}

fn agreement(s: &Summary, sim_groups: &[CommGroup], rec: &serde_json::Value) -> Agreement {
    let empty = serde_json::Map::new();
    let threads = rec["threads"].as_object().unwrap_or(&empty);
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(0.0);
    // Looked up by name: a build's recording holds thousands of threads.
    let tasks: std::collections::HashMap<&str, &corral_sim::out::report::TaskSummary> =
        s.tasks.iter().map(|t| (t.name.as_str(), t)).collect();
    let sim_groups: std::collections::HashMap<&str, &CommGroup> =
        sim_groups.iter().map(|g| (g.comm.as_str(), g)).collect();
    let pairs: Vec<_> = threads
        .iter()
        .filter(|(_, t)| !t["background"].as_bool().unwrap_or(false))
        .filter_map(|(name, t)| Some((t, *tasks.get(name.as_str())?)))
        .collect();
    let groups: Vec<_> = rec["by_comm"]
        .as_object()
        .unwrap_or(&empty)
        .iter()
        .filter_map(|(comm, g)| Some((g, *sim_groups.get(comm.as_str())?)))
        .collect();
    let woken = |v: &serde_json::Value| v["wakeups"].as_u64().unwrap_or(0) >= AGREE_MIN_WAKEUPS;
    Agreement {
        cpu_threads: within(pairs.iter().map(|(l, t)| (f(l, "cpu_ms"), t.cpu_s * 1e3))),
        cpu_programs: within(
            groups
                .iter()
                .map(|(l, g)| (f(l, "cpu_ms"), g.cpu_ns as f64 / 1e6)),
        ),
        p99_threads: within(
            pairs
                .iter()
                .filter(|(l, _)| woken(l))
                .map(|(l, t)| (f(l, "latency_p99_us"), t.latency_p99_us)),
        ),
        p99_programs: within(groups.iter().filter(|(l, _)| woken(l)).map(|(l, g)| {
            (
                f(l, "latency_p99_us"),
                g.latency.percentile(99.0) as f64 / 1e3,
            )
        })),
    }
}

/// Whether a recording's thread is background (ran live outside the scope).
fn is_background(threads: &serde_json::Value, name: &str) -> bool {
    threads[name]["background"].as_bool().unwrap_or(false)
}

/// Runs `work` for `secs` on `cpus` uniform CPUs; (events, wall seconds).
fn timed(
    work: rtapp::Workload,
    cpus: usize,
    secs: f64,
    flavour: corral_sim::sched::fair::Flavour,
) -> anyhow::Result<(u64, f64)> {
    let spec = PlatformSpec::uniform(cpus);
    let mut m = platform::build(work, &spec, flavour)?;
    let t0 = Instant::now();
    m.run_until((secs * 1e9) as u64);
    Ok((m.events(), t0.elapsed().as_secs_f64()))
}

/// [`timed`] three times on the workload in `text`; (events, the median
/// wall seconds): the runs are identical, the VM's speed is not.
fn timed_median(
    text: &str,
    name: &str,
    cpus: usize,
    secs: f64,
    flavour: corral_sim::sched::fair::Flavour,
) -> anyhow::Result<(u64, f64)> {
    let mut walls = Vec::new();
    let mut events = 0;
    for _ in 0..3 {
        let (e, w) = timed(rtapp::parse(text, name)?, cpus, secs, flavour)?;
        events = e;
        walls.push(w);
    }
    walls.sort_by(f64::total_cmp);
    Ok((events, walls[1]))
}

/// Peak resident memory of this process so far (VmHWM), MiB.
fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// Events per second on Debian's example workloads and how cost grows.
fn bench() -> anyhow::Result<ExitCode> {
    use corral_sim::sched::fair::Flavour;
    let dir = std::path::Path::new("/usr/share/doc/rt-app/examples");
    println!("corral sim --bench (release build recommended; run nothing else meanwhile)");
    println!("Debian's examples: 1 h simulated, median of 3 runs\n");
    println!("workload             kernel  cpus  simulated  wall (s)  events      M events/s  x real time");
    for name in ["mp3-short.json", "browser-short.json"] {
        let path = dir.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            println!("{name}: not found (apt-get install rt-app)");
            continue;
        };
        for flavour in [Flavour::Eevdf, Flavour::Cfs] {
            // An hour simulated.
            let secs = 3600.0;
            let (events, wall) = timed_median(&text, name, 2, secs, flavour)?;
            println!(
                "{name:<20} {:<6}  {:>4}  {:>7.0} s  {wall:>8.3}  {events:>10}  {:>10.2}  {:>10.0}",
                format!("{flavour:?}").to_lowercase(),
                2,
                secs,
                events as f64 / wall / 1e6,
                secs / wall
            );
        }
    }
    if let Some(mib) = peak_rss_mib() {
        println!("peak memory so far: {mib:.1} MiB");
    }
    println!(
        "\ncost against size: periodic tasks (1 ms every 10 ms), EEVDF, 2 s simulated, median of 3 runs"
    );
    println!("cpus  tasks   wall (s)  events      M events/s  x real time  ns/event");
    for cpus in [2usize, 8, 32, 256] {
        for tasks in [10usize, 100, 1000, 10000] {
            let json = format!(
                r#"{{"tasks": {{"p": {{"instance": {tasks}, "loop": -1, "run": 1000, "timer": {{"ref": "unique", "period": 10000}}}}}}}}"#
            );
            let secs = 2.0;
            let (events, wall) = timed_median(&json, "synthetic", cpus, secs, Flavour::Eevdf)?;
            println!(
                "{cpus:>4}  {tasks:>5}  {wall:>9.3}  {events:>10}  {:>10.2}  {:>11.1}  {:>8.0}",
                events as f64 / wall / 1e6,
                secs / wall,
                wall * 1e9 / events.max(1) as f64
            );
        }
    }
    if let Some(mib) = peak_rss_mib() {
        println!("peak memory: {mib:.1} MiB");
    }
    Ok(ExitCode::SUCCESS)
}

/// `--paper`: the papers' experiments on the simulator.
fn papers(which: &str, report: Option<&std::path::Path>, json: bool) -> anyhow::Result<ExitCode> {
    use corral_sim::papers;
    let ids: Vec<&str> = if which == "all" {
        papers::IDS.to_vec()
    } else {
        vec![which]
    };
    let t0 = Instant::now();
    let mut done = Vec::new();
    let mut disagreements = 0;
    for id in ids {
        let t = Instant::now();
        if !json {
            eprintln!("corral sim: paper {id} ...");
        }
        let p = papers::run(id).map_err(|e| anyhow::anyhow!("paper {id}: {e}"))?;
        disagreements += p.claims.iter().filter(|c| !c.holds).count();
        if !json {
            println!("\n== Paper {} — {}", p.id, p.title);
            println!("{}", p.setup);
            let cols: Vec<&str> = p.header.iter().map(String::as_str).collect();
            let mut table = Table::new(&cols);
            for r in &p.rows {
                table.row(r.clone());
            }
            print!("{}", table.render());
            let mut claims = Table::new(&["CLAIM", "PAPER", "SIMULATED", "HOLDS WHEN", ""]);
            for c in &p.claims {
                claims.row(vec![
                    c.claim.clone(),
                    c.paper.clone(),
                    c.simulated.clone(),
                    c.test.clone(),
                    if c.holds { "holds" } else { "DISAGREES" }.into(),
                ]);
            }
            print!("{}", claims.render());
            println!(
                "({:.0} s simulated in {:.1} s)",
                p.simulated_s,
                t.elapsed().as_secs_f64()
            );
        }
        done.push(p);
    }
    if json {
        let v: Vec<serde_json::Value> = done
            .iter()
            .map(|p| {
                serde_json::json!({
                    "paper": p.id,
                    "title": p.title,
                    "setup": p.setup,
                    "header": p.header,
                    "rows": p.rows,
                    "claims": p.claims.iter().map(|c| serde_json::json!({
                        "claim": c.claim, "paper": c.paper, "simulated": c.simulated, "test": c.test, "holds": c.holds,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "\n{} in {:.1} s; {} where the simulation disagrees with the paper{}",
            corral_core::words::count(done.len(), "paper", "papers"),
            t0.elapsed().as_secs_f64(),
            corral_core::words::count(disagreements, "claim", "claims"),
            if disagreements > 0 {
                " (findings, listed above)"
            } else {
                ""
            }
        );
    }
    if let Some(dir) = report {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let page = dir.join("index.html");
        std::fs::write(&page, papers::html(&done))
            .with_context(|| format!("cannot write {}", page.display()))?;
        for p in &done {
            let f = dir.join(format!("paper-{}.svg", p.id));
            std::fs::write(&f, &p.chart)
                .with_context(|| format!("cannot write {}", f.display()))?;
        }
        eprintln!("corral sim: report written to {}", page.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_agrees_within_a_quarter_of_live_either_way() {
        // 100 live: 75 and 125 agree, 74.9 and 125.1 do not; 0 live
        // agrees only with 0.
        let pairs = [
            (100.0, 75.0),
            (100.0, 125.0),
            (100.0, 74.9),
            (100.0, 125.1),
            (0.0, 0.0),
            (0.0, 1.0),
        ];
        assert_eq!(within(pairs.into_iter()), (3, 6));
        assert_eq!(within(std::iter::empty()), (0, 0));
    }
}
