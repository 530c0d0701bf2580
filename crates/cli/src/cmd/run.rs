//! `corral run`: the daemon.

use crate::args::{RestoreArgs, RunArgs};
use crate::log;
use anyhow::{bail, Context};
use corral_core::config::CgroupChoice;
use corral_core::host::Host;
use corral_core::plan::Change;
use corral_core::words::count;
use corral_daemon::server::{self, Msg};
use corral_daemon::{Daemon, StepReport};
use corral_linux::cgroup::CgroupMounts;
use corral_linux::host::LinuxHost;
use corral_linux::placer::Layout;
use corral_linux::sampler::Scope;
use corral_linux::HostPaths;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(paths: &HostPaths, args: &RunArgs) -> anyhow::Result<ExitCode> {
    log::set_max(match args.log_level.as_str() {
        "error" => log::Level::Error,
        "warning" => log::Level::Warning,
        "notice" => log::Level::Notice,
        "debug" => log::Level::Debug,
        _ => log::Level::Info,
    });
    let (mut config, config_file) = configure(args)?;
    let mounts = CgroupMounts::discover(paths).context("cannot read the cgroup mounts")?;
    let layout = match choose_layout(paths, args, &mut config, &mounts)? {
        Ok(layout) => layout,
        Err(code) => return Ok(code),
    };
    if let Some(scx) = corral_linux::system::sched_ext_scheduler(&paths.sysfs) {
        log::warning(&format!(
            "the sched_ext scheduler {scx:?} is loaded: it, not the fair class, \
             decides who runs, and it ignores cgroup weights, nice values and EEVDF slices; \
             corral's placements keep only their CPU sets"
        ));
    }
    let scope = scope(args, &layout, &mounts)?;
    raise_nofile_limit();
    let host = host(paths, args, &mounts, scope, layout, &config)?;
    let interval = Duration::from_millis(config.daemon.interval_ms);
    let notifier = notifier(interval)?;
    let socket_path = config.daemon.socket.clone();
    let metrics_listen = config.metrics.listen.clone();
    let dbus = config.daemon.dbus;
    let mut daemon = Daemon::new(host, config).context("cannot read the topology")?;

    let (tx, mut inbox) = server::channel().context("cannot set up the event loop")?;
    let _socket = if socket_path == "none" || socket_path.is_empty() {
        None
    } else {
        Some(
            server::listen(std::path::Path::new(&socket_path), &mut inbox)
                .with_context(|| format!("cannot listen on {socket_path}"))?,
        )
    };
    if dbus {
        serve_bus(tx.clone())?;
    }
    if !metrics_listen.is_empty() {
        let at = corral_daemon::http::serve(&metrics_listen, tx.clone())
            .with_context(|| format!("metrics.listen: cannot listen on {metrics_listen}"))?;
        log::info(&format!("metrics at http://{at}/metrics"));
    }
    stop_on_signals_and_panics(&tx)?;
    // With --scope-pid, the daemon ends when everything it was started for
    // has: every named process gone and no thread left in scope.
    let scope_tx = tx.clone();
    drop(tx);

    let scope_text = scope_text(args);
    let config_text = config_file.as_ref().map(|f| f.display().to_string());
    daemon.set_origin(config_text.clone(), scope_text.clone());
    log::info(&format!(
        "managing {scope_text} every {} ms on {}{}; configuration: {}",
        interval.as_millis(),
        daemon.host().describe(),
        if socket_path == "none" {
            String::new()
        } else {
            format!(", socket {socket_path}")
        },
        config_text.as_deref().unwrap_or("the built-in defaults")
    ));
    serve(
        paths,
        args,
        &mut daemon,
        &mut inbox,
        interval,
        notifier,
        scope_tx,
    )
}

/// The configuration in force: `--config`, else /etc/corral/corral.toml
/// when it exists, else the built-in defaults (said at start and in
/// `status`), with the command line's overrides; and which file it came
/// from. Refuses what cannot run (no root without --dry-run, a group name
/// outside corral's).
fn configure(args: &RunArgs) -> anyhow::Result<(corral_core::config::Config, Option<PathBuf>)> {
    let config_file = args.config.clone().or_else(|| {
        let etc = std::path::Path::new(super::ETC_CONFIG);
        etc.exists().then(|| etc.to_path_buf())
    });
    let mut config = match &config_file {
        Some(file) => super::load_config(file)?,
        None => corral_core::config::Config::default(),
    };
    if let Some(ms) = args.interval {
        super::check_interval(ms)?;
        config.daemon.interval_ms = ms;
    }
    if let Some(v) = &args.cgroup {
        config.daemon.cgroup = *v;
    }
    if let Some(s) = &args.socket {
        config.daemon.socket = s.to_string_lossy().into_owned();
    }
    if !args.group_name.starts_with("corral") || args.group_name.contains('/') {
        bail!(
            "--group-name must start with \"corral\" and hold no '/', not {:?}",
            args.group_name
        );
    }
    let root = rustix::process::geteuid().is_root();
    if !args.dry_run && !root {
        bail!("corral run changes cgroups and needs root; run it as root, or add --dry-run to only print plans");
    }
    if args.dry_run && !root && args.socket.is_none() {
        // /run is root's: a user's dry run answers on its own runtime
        // directory's socket, or on none.
        let own = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|d| d.is_dir())
            .map(|d| d.join("corral.sock"));
        match own {
            Some(path) => {
                log::notice(&format!(
                    "note: a dry run as a user: the socket is {} (/run is root's; corral status --socket {} reads it)",
                    path.display(),
                    path.display()
                ));
                config.daemon.socket = path.to_string_lossy().into_owned();
            }
            None => {
                log::notice("note: a dry run as a user: no socket (/run is root's; give --socket PATH for status)");
                config.daemon.socket = "none".into();
            }
        }
    }
    Ok((config, config_file))
}

/// The cgroup layout: as configured, or, on a systemd host's v2 tree,
/// each thread's own levers (refused when v2 groups were asked for by
/// name: `Err` with the exit code); the per-thread backend's plan
/// settings.
fn choose_layout(
    paths: &HostPaths,
    args: &RunArgs,
    config: &mut corral_core::config::Config,
    mounts: &CgroupMounts,
) -> anyhow::Result<Result<Layout, ExitCode>> {
    let mut layout = Layout::choose(mounts, config.daemon.cgroup).map_err(anyhow::Error::msg)?;
    // On a systemd host's v2 tree, corral's v2 groups would take services'
    // processes out of their units (ARCHITECTURE.md, "On a systemd
    // host"): corral places through each thread's own levers instead, or
    // refuses when v2 groups were asked for by name.
    if matches!(layout, Layout::V2 { .. }) && corral_linux::system::systemd_booted(&paths.run) {
        if config.daemon.cgroup == CgroupChoice::Auto {
            log::notice(
                "note: systemd owns this host's cgroup v2 tree: corral writes no cgroup \
                 and places threads through their own levers (affinity, nice, EEVDF slice; \
                 a latency-critical thread's unit weight through systemd) (ARCHITECTURE.md, \
                 \"On a systemd host\")",
            );
            layout = Layout::Threads;
        } else {
            let why = "systemd runs this host and owns its cgroup v2 tree: corral's groups at \
                       the top of the tree would take services' processes out of their units \
                       (`systemctl stop` would no longer reach them, nor their limits apply); \
                       use --cgroup threads (or auto) to place through each thread's own levers; \
                       see ARCHITECTURE.md, \"On a systemd host\"";
            if let Some(code) = refuse(why, args.dry_run) {
                return Ok(Err(code));
            }
        }
    }
    if matches!(layout, Layout::Threads) {
        // No group weights here: a dedicated CPU the others keep at a
        // lower weight would be one they share equally. The others stay
        // off it (`dedicated_exclusive`); it goes back to them when its
        // owner blocks or leaves, as before.
        config.plan.dedicated_exclusive = true;
        // Nor a medium group's weight: its members' nice instead.
        config.plan.per_thread = true;
    }
    if let Err(why) = layout.check() {
        if let Some(code) = refuse(&why, args.dry_run) {
            return Ok(Err(code));
        }
    }
    Ok(Ok(layout))
}

/// The threads the daemon manages: all, a process tree, or cgroup subtrees
/// (found under the v2 hierarchy).
fn scope(args: &RunArgs, layout: &Layout, mounts: &CgroupMounts) -> anyhow::Result<Scope> {
    let cpu_mount = match layout {
        Layout::V1 { cpu, .. } => Some(cpu.clone()),
        Layout::V2 { unified } => Some(unified.clone()),
        Layout::Threads => mounts
            .v2
            .as_ref()
            .filter(|h| h.root == "/")
            .map(|h| h.dir.clone()),
    };
    Ok(match (&args.scope_pid[..], &args.scope_cgroup[..]) {
        ([], []) => Scope::All,
        (pids, []) => Scope::Pids(pids.to_vec()),
        ([], cgroups) => Scope::Cgroups(
            cgroups
                .iter()
                .map(|c| {
                    let Some(cpu_mount) = &cpu_mount else {
                        bail!(
                            "--scope-cgroup {c}: no cgroup v2 hierarchy is mounted to find it in"
                        );
                    };
                    let dir = cpu_mount.join(c.trim_start_matches('/'));
                    anyhow::ensure!(
                        dir.is_dir(),
                        "--scope-cgroup {c}: no such cgroup ({} does not exist)",
                        dir.display()
                    );
                    Ok(dir)
                })
                .collect::<anyhow::Result<Vec<PathBuf>>>()?,
        ),
        _ => bail!("give either --scope-pid or --scope-cgroup, not both"),
    })
}

/// The live host: a killed daemon's leftovers undone and its record taken
/// over (not in a dry run), the scope's roots checked, the process
/// connector listened to.
fn host(
    paths: &HostPaths,
    args: &RunArgs,
    mounts: &CgroupMounts,
    scope: Scope,
    layout: Layout,
    config: &corral_core::config::Config,
) -> anyhow::Result<LinuxHost> {
    let mut host = LinuxHost::new(paths.clone(), scope, layout, &args.group_name, args.dry_run)
        .context("cannot set up the host")?;
    if !args.dry_run {
        // First undo whatever a killed daemon left (and refuse if it
        // still runs), then keep the record of this one's changes.
        let file = corral_linux::state::path_for(&args.state_dir, &args.group_name);
        if let Some(found) = undo_other_layout(
            paths,
            mounts,
            &file,
            &args.group_name,
            host.placer_mut().layout(),
        )? {
            log::info(&describe_reconciled(&found));
        }
        host.placer_mut().set_state_file(file.clone());
        let found = host
            .placer_mut()
            .reconcile()
            .with_context(|| format!("cannot reconcile with {}", file.display()))?;
        if found.found_anything() {
            log::info(&describe_reconciled(&found));
        }
    }
    // A scope root that cannot be used is refused now, not found out later
    // from a `status` with no threads.
    for note in host.check_scope().map_err(anyhow::Error::msg)? {
        log::notice(&format!("note: {note}"));
    }
    host.want_exe(config.rules.iter().any(|r| r.exe.is_some()));
    host.keep_self_off_dedicated();
    if config.daemon.fast_interval_ms > 0 {
        if let Err(e) = host.listen_for_tasks() {
            log::notice(&format!(
                "note: the kernel's process connector is not available ({e}): new threads are found every {} ms only",
                config.daemon.interval_ms
            ));
        }
    }
    Ok(host)
}

/// Started by systemd as a Type=notify service: READY=1 after the first
/// step, WATCHDOG=1 from every step; a WatchdogSec= too short for the
/// interval is refused.
fn notifier(interval: Duration) -> anyhow::Result<Option<corral_linux::notify::Notifier>> {
    let notifier = corral_linux::notify::Notifier::from_env().unwrap_or_else(|e| {
        log::warning(&format!(
            "cannot use $NOTIFY_SOCKET ({e}): systemd will not hear from corral"
        ));
        None
    });
    if let Some(w) = notifier.as_ref().and_then(|n| n.watchdog()) {
        // A keep-alive is due every half of WatchdogSec=; a step comes every
        // interval, plus what the step itself takes.
        anyhow::ensure!(
            interval * 3 <= w,
            "the service's WatchdogSec= ({} s) must be at least three times the interval ({} ms): a keep-alive comes with each step",
            w.as_secs_f64(),
            interval.as_millis()
        );
    }
    Ok(notifier)
}

/// `org.corral.Daemon1` on the system bus, if there is one.
fn serve_bus(tx: server::MsgSender) -> anyhow::Result<()> {
    // The bus from a thread of its own, which then holds the connection
    // until the daemon ends: a bus that is slow or never answers (a
    // policy that drops replies) must not hold the daemon's start up.
    // No system bus (no dbus-daemon here, and none named): nothing to say
    // above debug.
    let bus_here = std::env::var_os("DBUS_SYSTEM_BUS_ADDRESS").is_some()
        || std::path::Path::new("/run/dbus/system_bus_socket").exists();
    if !bus_here {
        log::debug(
            "D-Bus: no system bus (/run/dbus/system_bus_socket); boosts only through the socket",
        );
    }
    if bus_here {
        let bus_tx = tx;
        std::thread::Builder::new()
            .name("corral-dbus".into())
            .spawn(move || match corral_daemon::bus::serve(bus_tx) {
                Ok(_conn) => {
                    log::info(&format!(
                        "D-Bus: {} on the system bus",
                        corral_daemon::bus::BUS_NAME
                    ));
                    loop {
                        std::thread::park();
                    }
                }
                Err(e) => log::notice(&format!(
                    "D-Bus: not serving {} ({e}); boosts only through the socket",
                    corral_daemon::bus::BUS_NAME
                )),
            })?;
    }
    Ok(())
}

/// SIGTERM, SIGINT and SIGHUP (a closed terminal, a dropped ssh session),
/// and a panic in any thread, stop the loop, which then puts everything
/// back.
fn stop_on_signals_and_panics(tx: &server::MsgSender) -> anyhow::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ])
    .context("cannot install signal handlers")?;
    let signal_tx = tx.clone();
    std::thread::Builder::new()
        .name("corral-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let name = match sig {
                    signal_hook::consts::SIGTERM => "SIGTERM",
                    signal_hook::consts::SIGHUP => "SIGHUP",
                    _ => "SIGINT",
                };
                let _ = signal_tx.send(Msg::Stop(name.into()));
            }
        })?;
    // A panic in any thread stops the loop, which then puts everything
    // back (a panic of the loop itself is caught below).
    let panic_tx = std::sync::Mutex::new(tx.clone());
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        if let Ok(t) = panic_tx.lock() {
            let _ = t.send(Msg::Stop(format!("a panic ({info})")));
        }
    }));
    Ok(())
}

/// What the daemon manages, in words.
fn scope_text(args: &RunArgs) -> String {
    match (&args.scope_pid[..], &args.scope_cgroup[..]) {
        ([], []) => "every user thread".to_string(),
        ([p], []) => format!("process {p} and its descendants"),
        (p, []) => format!("processes {} and their descendants", list(p)),
        (_, [c]) => format!("threads under {c}"),
        (_, c) => format!("threads under {}", list(c)),
    }
}

/// The control loop until it stops, then every thread put back: the step
/// log, the end of the scope, systemd's notifications.
fn serve(
    paths: &HostPaths,
    args: &RunArgs,
    daemon: &mut Daemon<LinuxHost>,
    inbox: &mut server::Inbox,
    interval: Duration,
    notifier: Option<corral_linux::notify::Notifier>,
    scope_tx: server::MsgSender,
) -> anyhow::Result<ExitCode> {
    let dry_run = args.dry_run;
    // With --once, one step must already have rates: take a first sample,
    // wait an interval, then run the real step.
    if args.once {
        daemon.step().context("first sample")?;
        std::thread::sleep(interval);
    }
    let (mut ready, mut warned, mut scope_ended) = (false, false, false);
    let roots = args.scope_pid.clone();
    let procfs = paths.procfs.clone();
    let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        server::run(daemon, inbox, interval, args.once, |report, d| {
            log_step(report, d, dry_run);
            if !roots.is_empty()
                && !scope_ended
                && report.threads == 0
                && roots.iter().all(|&p| !process_alive(&procfs, p))
            {
                scope_ended = true;
                let what = match &roots[..] {
                    [p] => format!("process {p}"),
                    p => format!("processes {}", list(p)),
                };
                let _ = scope_tx.send(Msg::Stop(format!(
                    "{what} and every thread in scope have exited"
                )));
            }
            if let Some(n) = &notifier {
                let state = if ready {
                    "WATCHDOG=1".to_string()
                } else {
                    format!(
                        "READY=1\nSTATUS=managing {} every {} ms",
                        count(report.threads, "thread", "threads"),
                        interval.as_millis()
                    )
                };
                // Tried again at every step; said once, not every second.
                match n.send(&state) {
                    Ok(()) => ready = true,
                    Err(e) if !warned => {
                        warned = true;
                        log::warning(&format!(
                            "cannot notify systemd: {e} (trying again at each step)"
                        ));
                    }
                    Err(_) => {}
                }
            }
        })
    }));
    if let Some(n) = &notifier {
        let _ = n.send("STOPPING=1\nSTATUS=putting every thread back");
    }
    let restored = daemon.shutdown();
    let ended = match ended {
        Ok(ended) => ended.context("the control loop failed")?,
        Err(_) => {
            restored.context("after a panic, could not put every thread back")?;
            bail!("the control loop panicked; every thread was put back and the groups removed");
        }
    };
    restored.context("could not put every thread back")?;
    // What the loop cost, as the simulator's daemon is told it.
    if let (server::Ended::Stopped(_), Some(c)) = (&ended, daemon.own_cost()) {
        log::info(&format!(
            "own CPU: {} full {} at {:.0} µs each, {} quick {} at {:.0} µs each \
             (corral sim --daemon-cost {:.0},{:.0})",
            c.steps,
            if c.steps == 1 { "step" } else { "steps" },
            c.step_us,
            c.quick_looks,
            if c.quick_looks == 1 { "step" } else { "steps" },
            c.quick_us,
            c.step_us,
            c.quick_us
        ));
    }
    match ended {
        server::Ended::Stopped(why) if dry_run => {
            log::info(&format!("{why}: stopped (a dry run changes nothing)"))
        }
        server::Ended::Stopped(why) => {
            log::info(&format!("{why}: every thread put back, groups removed"))
        }
        server::Ended::Once => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// `1, 2 and 3`.
fn list<T: std::fmt::Display>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(|i| i.to_string()).collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// Whether process `pid` runs (a zombie, exited and not yet reaped by
/// its parent, does not).
fn process_alive(procfs: &std::path::Path, pid: u32) -> bool {
    std::fs::read_to_string(procfs.join(pid.to_string()).join("stat"))
        .ok()
        .and_then(|s| corral_linux::sampler::parse_stat(&s))
        .is_some_and(|s| !matches!(s.state, 'Z' | 'X'))
}

/// A host corral cannot manage as configured: a warning on a dry run
/// (which writes nothing), else an error and exit 78, EX_CONFIG
/// (sysexits.h), on which corral.service does not restart
/// (RestartPreventExitStatus=78): starting again would change nothing.
/// A record written under another layout than `layout` (a daemon killed
/// under `--cgroup threads`, started again with v2, or the other way) is
/// undone with its own layout first: another backend would not know
/// what it describes. `None` when there is no such record.
fn undo_other_layout(
    paths: &HostPaths,
    mounts: &CgroupMounts,
    file: &std::path::Path,
    group_name: &str,
    layout: &Layout,
) -> anyhow::Result<Option<corral_linux::placer::Reconciled>> {
    let record = corral_linux::state::load(file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let Some(record) = record.filter(|r| r.layout != layout.name()) else {
        return Ok(None);
    };
    let choice = match record.layout.as_str() {
        "threads" => CgroupChoice::Threads,
        "v1" => CgroupChoice::V1,
        "v2" => CgroupChoice::V2,
        other => bail!("{}: unknown layout {other:?}", file.display()),
    };
    let theirs = Layout::choose(mounts, choice).map_err(|e| {
        anyhow::anyhow!(
            "{} was written under cgroup {}, which this host does not have now: {e}",
            file.display(),
            record.layout
        )
    })?;
    let mut placer = corral_linux::placer::Placer::new(theirs, group_name, paths);
    placer.set_state_file(file.to_path_buf());
    let found = placer
        .reconcile()
        .with_context(|| format!("cannot undo {} (layout {})", file.display(), record.layout))?;
    placer
        .drop_state_file()
        .with_context(|| format!("cannot remove {}", file.display()))?;
    Ok(Some(found))
}

fn refuse(why: &str, dry_run: bool) -> Option<ExitCode> {
    if dry_run {
        log::warning(&format!("{why} (dry run: nothing is written)"));
        None
    } else {
        log::error(why);
        Some(ExitCode::from(78))
    }
}

fn log_step(report: &StepReport, daemon: &Daemon<LinuxHost>, dry_run: bool) {
    if let Some((before, after)) = &report.hotplug {
        log::notice(&format!(
            "CPUs online changed from {before} to {after}: re-planned"
        ));
    }
    for e in &report.errors {
        log::error(e);
    }
    for g in &report.guard {
        log::notice(g);
    }
    if dry_run {
        if report.changes.is_empty() && report.step > 1 {
            return;
        }
        println!(
            "step {}: {}, plan:",
            report.step,
            count(report.threads, "thread", "threads")
        );
        for g in daemon.plan().groups.values() {
            let members: Vec<String> = daemon
                .plan()
                .placements
                .iter()
                .filter(|(_, (_, n))| *n == g.name)
                .map(|(tid, _)| tid.to_string())
                .collect();
            println!(
                "  {:<16} cpus {:<8} shares {:<6} threads {}",
                g.name,
                g.cpus.to_string(),
                g.shares,
                members.join(",")
            );
        }
        for c in &report.changes {
            println!("  would {c}");
        }
        for n in &report.notes {
            println!("  note: {n}");
        }
    } else {
        // Every decision, with its reason (`--log-level debug`).
        for c in &report.changes {
            let why = match c {
                Change::Move { tid, .. } => daemon
                    .why(*tid)
                    .map(|w| format!(" ({})", w))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            if matches!(c, Change::SendHome { .. }) {
                // Rare, and a move of a thread corral does not manage (a
                // failed one is logged as an error already).
                let said = c.to_string();
                if !report.errors.iter().any(|e| e.starts_with(&said)) {
                    log::info(&format!(
                        "{said}: it turned real-time inside them, where it would run on their small real-time budget"
                    ));
                }
            } else {
                log::debug(&format!("{c}{why}"));
            }
        }
    }
}

/// The sampler keeps one file open per thread: lift the soft limit on open
/// files to the hard one (it falls back to opening per read when short).
fn raise_nofile_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// What a start found of a killed daemon's work, in a sentence.
fn describe_reconciled(r: &corral_linux::placer::Reconciled) -> String {
    if (r.affinities_restored > 0 || r.units_restored > 0) && r.groups_removed == 0 {
        return format!(
            "found what {} left behind: gave {} thread(s) back their affinity and {} their nice value and slice, {} unit(s) their CPUWeight",
            r.record_of
                .map_or("an earlier corral (no record)".to_string(), |p| format!("corral PID {p}")),
            r.affinities_restored,
            r.attrs_restored,
            r.units_restored
        );
    }
    format!(
        "found what {} left behind: moved {} task(s) out of its groups ({} to their recorded origin, {} to the root), gave {} thread(s) back their nice value and slice, removed {} group(s)",
        r.record_of
            .map_or("an earlier corral (no record)".to_string(), |p| format!("corral PID {p}")),
        r.moved,
        r.to_origin,
        r.moved - r.to_origin,
        r.attrs_restored,
        r.groups_removed
    )
}

/// `corral restore`: what a start of `corral run` does first, alone.
pub fn restore(paths: &HostPaths, args: &RestoreArgs) -> anyhow::Result<ExitCode> {
    if !rustix::process::geteuid().is_root() {
        bail!("corral restore changes cgroups and needs root");
    }
    if !args.group_name.starts_with("corral") || args.group_name.contains('/') {
        bail!(
            "--group-name must start with \"corral\" and hold no '/', not {:?}",
            args.group_name
        );
    }
    let mut choice = args.cgroup;
    let file = corral_linux::state::path_for(&args.state_dir, &args.group_name);
    // A record names the layout its daemon used: the per-thread one has
    // no groups to find.
    if choice == CgroupChoice::Auto {
        if let Ok(Some(record)) = corral_linux::state::load(&file) {
            if record.layout == Layout::Threads.name() {
                choice = CgroupChoice::Threads;
            }
        }
    }
    let mounts = CgroupMounts::discover(paths).context("cannot read the cgroup mounts")?;
    let layout = Layout::choose(&mounts, choice).map_err(anyhow::Error::msg)?;
    if let Some(found) = undo_other_layout(paths, &mounts, &file, &args.group_name, &layout)? {
        println!("corral restore: {}", describe_reconciled(&found));
    }
    let mut placer = corral_linux::placer::Placer::new(layout, &args.group_name, paths);
    placer.set_state_file(file.clone());
    let r = placer
        .reconcile()
        .with_context(|| format!("cannot restore from {}", file.display()))?;
    placer
        .drop_state_file()
        .with_context(|| format!("cannot remove {}", file.display()))?;
    if r.found_anything() {
        println!("corral restore: {}", describe_reconciled(&r));
    } else {
        println!(
            "corral restore: nothing to do (no record at {}, no {} groups)",
            file.display(),
            args.group_name
        );
    }
    Ok(ExitCode::SUCCESS)
}
