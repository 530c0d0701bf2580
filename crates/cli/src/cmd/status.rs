//! `corral status` and `corral explain`: clients of the daemon's socket.

use crate::args::{BoostArgs, ExplainArgs, MetricsArgs, StatusArgs, UnboostArgs};
use crate::table::Table;
use anyhow::{bail, Context};
use corral_daemon::api::{Command, Explain, Status};
use corral_daemon::server::request;
use std::path::Path;
use std::process::ExitCode;

fn ask(socket: &Path, cmd: Command) -> anyhow::Result<serde_json::Value> {
    let response = request(socket, cmd).with_context(|| {
        format!(
            "cannot reach the daemon at {} (is `corral run` running?)",
            socket.display()
        )
    })?;
    if !response.ok {
        bail!(
            "{}",
            response
                .error
                .unwrap_or_else(|| "the daemon refused".into())
        );
    }
    Ok(response.result.unwrap_or_default())
}

pub fn metrics(args: &MetricsArgs) -> anyhow::Result<ExitCode> {
    let value = ask(&args.socket.path, Command::Metrics)?;
    let text = value
        .as_str()
        .context("unexpected metrics from the daemon (not text)")?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The daemon in a line: backend, step, interval, CPUs (`status`, `top`).
pub(crate) fn headline(s: &Status) -> String {
    format!(
        "{} — step {}, every {} ms, CPUs online {}{}",
        s.backend,
        s.step,
        s.interval_ms,
        s.online,
        if s.heterogeneous {
            " (heterogeneous)"
        } else {
            ""
        }
    )
}

/// Which configuration and scope are in force (`status`, `top`).
pub(crate) fn origin(s: &Status) -> String {
    format!(
        "config: {}; managing {}",
        s.config.as_deref().unwrap_or("the built-in defaults"),
        if s.scope.is_empty() { "-" } else { &s.scope }
    )
}

pub fn status(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let value = ask(&args.socket.path, Command::Status)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    let s: Status = serde_json::from_value(value).context("unexpected status from the daemon")?;
    println!("{}", headline(&s));
    println!("{}", origin(&s));
    let counts: Vec<String> = s.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    println!(
        "threads: {}  (last step {} us)\n",
        counts.join(", "),
        s.last_step_us
    );
    let mut t = Table::new(&["GROUP", "KIND", "CPUS", "SHARES", "THREADS"]);
    for g in &s.groups {
        t.row(vec![
            g.name.clone(),
            format!("{:?}", g.kind).to_lowercase(),
            g.cpus.to_string(),
            g.shares.to_string(),
            g.members.to_string(),
        ]);
    }
    print!("{}", t.render());
    if !s.boosted.is_empty() {
        let tids: Vec<String> = s.boosted.iter().map(|t| t.to_string()).collect();
        println!("boosted now: {}", tids.join(", "));
    }
    let mut busy: Vec<_> = s.threads.iter().filter(|t| t.group.is_some()).collect();
    busy.sort_by(|a, b| b.peak.total_cmp(&a.peak));
    if !busy.is_empty() {
        println!();
        let mut t = Table::new(&["TID", "PID", "COMM", "CLASS", "UTIL", "PEAK", "GROUP"]);
        for th in busy.iter().take(20) {
            t.row(vec![
                th.tid.to_string(),
                th.pid.to_string(),
                th.comm.clone(),
                th.class.map_or("-".into(), |c| c.as_str().to_string()),
                th.util.map_or("-".into(), |u| format!("{:.0}%", u * 100.0)),
                format!("{:.0}%", th.peak * 100.0),
                th.group.clone().unwrap_or_default(),
            ]);
        }
        print!("{}", t.render());
    }
    for n in &s.notes {
        println!("note: {n}");
    }
    for e in &s.errors {
        println!("error: {e}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn explain(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let value = ask(&args.socket.path, Command::Explain { tid: args.tid })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    let e: Explain = serde_json::from_value(value).context("unexpected answer from the daemon")?;
    println!(
        "thread {} ({}) of process {}, nice {}, last on CPU {}",
        e.tid, e.comm, e.pid, e.nice, e.cpu
    );
    println!("class: {}", e.class.map_or("-", |c| c.as_str()));
    println!("  why: {}", e.why);
    if let Some(s) = &e.stats {
        println!(
            "measured over {:.2} s: util {:.1} % (peak {:.1} %), {:.0} wake-ups/s, {:.2} ms run per wake-up,\n  \
             run-queue wait {:.2} ms per timeslice ({:.1} % of the time), {:.0} preemptions/s{}",
            s.interval_ns as f64 / 1e9,
            s.util * 100.0,
            e.peak * 100.0,
            s.wakeups_per_s,
            s.run_per_wakeup_ns / 1e6,
            s.wait_per_slice_ns / 1e6,
            s.wait_ratio * 100.0,
            s.preemptions_per_s,
            s.migrations.map_or(String::new(), |m| format!(", {m} migrations"))
        );
    }
    println!(
        "cgroup when first seen: {}; corral group: {}",
        e.cgroup.as_deref().unwrap_or("-"),
        e.group.as_deref().unwrap_or("none")
    );
    let chain: Vec<String> = e
        .share_levels
        .iter()
        .map(|l| format!("{}/{}", l.weight, l.total))
        .collect();
    println!(
        "effective CPU share: {:.1} % of a CPU = min(1, {} CPUs x {})  (weight/competing weight per level, runnable competitors only)",
        e.effective_share * 100.0,
        e.share_cpus,
        if chain.is_empty() { "1".into() } else { chain.join(" x ") }
    );
    Ok(ExitCode::SUCCESS)
}

pub fn boost(args: &BoostArgs) -> anyhow::Result<ExitCode> {
    let v = ask(
        &args.socket.path,
        Command::Boost {
            tid: args.tid,
            max_ms: args.max_ms,
        },
    )?;
    let r: corral_daemon::api::BoostReply =
        serde_json::from_value(v).context("unexpected answer from the daemon")?;
    println!(
        "thread {} boosted for at most {} ms{}{}",
        r.tid,
        r.max_ms,
        if r.extended { " (extended)" } else { "" },
        r.cpu
            .map_or(String::new(), |c| format!(", CPU {c} to itself"))
    );
    Ok(ExitCode::SUCCESS)
}

pub fn unboost(args: &UnboostArgs) -> anyhow::Result<ExitCode> {
    ask(&args.socket.path, Command::Unboost { tid: args.tid })?;
    println!("thread {} unboosted", args.tid);
    Ok(ExitCode::SUCCESS)
}
