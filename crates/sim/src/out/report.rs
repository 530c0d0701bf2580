//! What a simulation run reports, for people (tables) and programs (JSON).

use crate::sched::kernel::SchedClass;
use crate::sched::machine::Machine;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TaskSummary {
    pub name: String,
    pub cpu_s: f64,
    /// CPU time over simulated time (1.0 = a whole CPU).
    pub share: f64,
    pub wakeups: u64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_max_us: f64,
    pub migrations: u64,
    pub preemptions: u64,
    pub switches: u64,
    /// rt-app timer slack (expiry − arrival at the timer): median and
    /// worst, µs; absent for threads without timers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slack_p50_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slack_min_us: Option<f64>,
    /// When the task exited (simulated seconds); absent while it lives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exited_s: Option<f64>,
}

/// Time two tasks spent queued on the same CPU.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Shared {
    pub a: String,
    pub b: String,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub kernel: String,
    pub cpus: usize,
    pub simulated_s: f64,
    pub events: u64,
    pub tasks: Vec<TaskSummary>,
    /// Busy time over simulated time, per CPU.
    pub cpu_utilisation: Vec<f64>,
    /// Jain's fairness index of the tasks' CPU time,
    /// (Σx)² / (n · Σx²): 1 when all got the same.
    pub jain_fairness: f64,
    /// Pairs of tasks that shared a CPU's run queue, and for how long
    /// (when tracked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sharing: Vec<Shared>,
}

/// Summarises a machine after a run.
pub fn summarise<K: SchedClass>(m: &Machine<K>) -> Summary {
    let t = m.time().max(1) as f64;
    let tasks: Vec<TaskSummary> = m
        .stats()
        .into_iter()
        .map(|s| {
            let lat = &s.wakeup_latency;
            let slack_p50_us = s.slack.percentile(50.0).map(|v| v as f64 / 1e3);
            let slack_min_us = s.slack.min().map(|v| v as f64 / 1e3);
            TaskSummary {
                cpu_s: s.cpu_ns as f64 / 1e9,
                share: s.cpu_ns as f64 / t,
                wakeups: s.wakeups,
                latency_p50_us: lat.percentile(50.0) as f64 / 1e3,
                latency_p99_us: lat.percentile(99.0) as f64 / 1e3,
                latency_max_us: lat.max as f64 / 1e3,
                migrations: s.migrations,
                preemptions: s.preemptions,
                switches: s.switches,
                slack_p50_us,
                slack_min_us,
                exited_s: s.exited_at.map(|ns| ns as f64 / 1e9),
                name: s.name,
            }
        })
        .collect();
    let sharing = m
        .sharing()
        .unwrap_or_default()
        .into_iter()
        .map(|((a, b), ns)| Shared {
            a: tasks[a].name.clone(),
            b: tasks[b].name.clone(),
            seconds: ns as f64 / 1e9,
        })
        .collect();
    let xs: Vec<f64> = tasks.iter().map(|t| t.cpu_s).collect();
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    Summary {
        kernel: m.kernel().name().to_string(),
        cpus: m.cpu_busy().len(),
        simulated_s: t / 1e9,
        events: m.events(),
        cpu_utilisation: m.cpu_busy().iter().map(|&b| b as f64 / t).collect(),
        jain_fairness: if sq == 0.0 {
            1.0
        } else {
            sum * sum / (xs.len() as f64 * sq)
        },
        tasks,
        sharing,
    }
}
