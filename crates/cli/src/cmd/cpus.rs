//! `corral cpus`.

use crate::args::CpusArgs;
use crate::table::Table;
use anyhow::Context;
use corral_core::words::count;
use corral_core::{CpuSet, Topology};
use corral_linux::cpucount::{detect, CpuReport};
use corral_linux::HostPaths;
use std::process::ExitCode;

pub fn run(paths: &HostPaths, args: &CpusArgs) -> anyhow::Result<ExitCode> {
    let report = detect(paths, args.pid).with_context(|| match args.pid {
        Some(pid) => format!("cannot count the CPUs of process {pid}"),
        None => "cannot count the CPUs".to_string(),
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(ExitCode::SUCCESS)
}

fn list(set: &CpuSet) -> String {
    if set.is_empty() {
        "-".to_string()
    } else {
        format!("{set} ({})", set.len())
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

fn cpu_table(t: &Topology) -> String {
    let mut table = Table::new(&[
        "CPU", "STATE", "CAPACITY", "TYPE", "PACKAGE", "DIE", "CLUSTER", "CORE", "SMT", "MAX MHZ",
    ]);
    for c in t.cpus.iter().filter(|c| c.present) {
        let mut state = if c.online { "online" } else { "offline" }.to_string();
        if c.isolated {
            state.push_str(",isolated");
        }
        table.row(vec![
            c.id.to_string(),
            state,
            c.capacity.to_string(),
            c.core_type.as_str().to_string(),
            opt(c.package_id),
            opt(c.die_id),
            opt(c.cluster_id),
            opt(c.core_id),
            opt(c.core_cpus.as_ref()),
            opt(c.max_freq_khz.map(|k| k / 1000)),
        ]);
    }
    table.render()
}

fn render(r: &CpuReport) -> String {
    let t = &r.topology;
    let i = &r.inputs;
    let rec = &r.recommendation;
    let mut out = cpu_table(t);
    let absent = t.possible.difference(&t.present);
    if !absent.is_empty() {
        out.push_str(&format!("possible but not present: {absent}\n"));
    }
    let beyond = t.beyond_nr_cpus();
    if !beyond.is_empty() {
        out.push_str(&format!(
            "reported by the firmware beyond the kernel's limit (unusable): {beyond}\n"
        ));
    }
    let perf = &t.performance;
    out.push_str(
        &match (perf.heterogeneous, perf.intel_hybrid, perf.source) {
            (true, true, _) => {
                "heterogeneous: Intel hybrid (cpu_core / cpu_atom lists)\n".to_string()
            }
            (true, false, Some(src)) => format!(
                "heterogeneous: fastest/slowest = {:.2} from {}\n",
                perf.ratio,
                src.file()
            ),
            (false, _, Some(src)) => format!(
            "uniform: {} differs by {:.2}x, below the 1.3x that makes a machine heterogeneous\n",
            src.file(),
            perf.ratio
        ),
            _ => "uniform: no per-CPU performance source differs between CPUs\n".to_string(),
        },
    );
    out.push('\n');

    let who = match r.pid {
        Some(pid) => format!("process {pid}"),
        None => "this process".to_string(),
    };
    let mut counts = Table::new(&["", "CPUS"]);
    counts.row(vec!["online".into(), list(&t.online)]);
    counts.row(vec!["present".into(), list(&t.present)]);
    counts.row(vec!["possible".into(), list(&t.possible)]);
    counts.row(vec!["offline".into(), list(&t.offline)]);
    counts.row(vec!["isolated".into(), list(&t.isolated)]);
    let mut affinity = opt(i.affinity.as_ref().map(list));
    if let Some(active) = &r.sched_getaffinity {
        affinity.push_str(&format!("  [sched_getaffinity: {active}]"));
    }
    counts.row(vec![format!("affinity of {who}"), affinity]);
    counts.row(vec![
        "cpuset".into(),
        match &i.cpuset {
            None => "none (root cpuset)".into(),
            Some(cs) => format!(
                "{} in {:?} {}{}",
                list(&cs.cpus),
                cs.version,
                cs.cgroup,
                cs.effective
                    .as_ref()
                    .map_or(String::new(), |e| format!(", effective {e}"))
            ),
        },
    ]);
    counts.row(vec![
        "CPU quota".into(),
        match &i.quota {
            None => "none".into(),
            Some(q) => format!(
                "{:.2} CPUs ({} us per {} us) set by {:?} {}",
                q.cpus(),
                q.quota_us,
                q.period_us,
                q.version,
                q.cgroup
            ),
        },
    ]);
    out.push_str(&counts.render());
    out.push('\n');
    out.push_str(&format!(
        "online-only detector: {}\nrecommended:          {}\n",
        count(rec.online_only as usize, "thread", "threads"),
        count(rec.threads as usize, "thread", "threads")
    ));
    for reason in &rec.reasons {
        out.push_str(&format!("  - {reason}\n"));
    }
    out
}
