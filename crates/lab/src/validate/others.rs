//! The machine's other threads during a live run, replayed beside the
//! workload in the simulation.
//!
//! The kernel's own threads (kdamond, kworkers, RCU), other programs and
//! the lab itself run beside rt-app live, and they shape its tail: a
//! thread that runs briefly on a CPU makes the kernel pick that CPU's
//! task again, which renews its slice protection (RUN_TO_PARITY), and a
//! thread waking within it waits for the next tick. So the live run is
//! traced (every CPU's switches, forks, execs and exits, read with
//! `corral record`'s converter),
//! and what ran outside rt-app's process becomes background threads of
//! the simulated workload, each run at its live instant on the CPU it
//! used (`corral_until`, [`corral_sim::input::recording`]). Nothing is
//! fitted: what is replayed is what ran.

use super::*;
use corral_linux::tracefs::{self, Instance, Tracefs};
use corral_sim::input::recording::{Converter, Directive, Scope};
use corral_sim::input::rtapp::Event;

/// The events traced: the switches, which give each outsider's stretches
/// on a CPU, and the forks, which say which threads are rt-app's (its
/// process's tree), with exec and exit. Not the wake-ups and migrations
/// `corral record` also reads: the replay does not use them, and on a
/// busy case (hackbench-groups) they were most of the lines the reader
/// parsed, 1.6-2.0 CPU s of its 10 s.
const EVENTS: &[&str] = &[
    "sched_switch",
    "sched_process_fork",
    "sched_process_exec",
    "sched_process_exit",
];

/// Per-CPU trace buffer, KiB: drained every 100 ms by the reader thread,
/// it holds seconds of hackbench-groups' switches.
const BUFFER_KB: u32 = 8192;

/// The reader: drains the trace into the converter every 100 ms, on a
/// thread of its own (draining a busy case's trace on the lab's thread
/// made it miss the end of rt-app's run).
type Reader = (
    Arc<AtomicBool>,
    std::thread::JoinHandle<(Instance, Converter)>,
);

pub(super) struct Others {
    /// Until rt-app's PID is known; then the reader has it.
    inst: Option<Instance>,
    reader: Option<Reader>,
    // Dropped last (fields drop in order, after `Drop::drop` stopped the
    // reader): the instance is removed through the private tracefs mount
    // that `_fs` holds open.
    _fs: Tracefs,
    /// `sched_switch`'s filter file (see [`Others::ignore_among`]).
    switch_filter: std::path::PathBuf,
    /// When tracing began, CLOCK_MONOTONIC ns (the trace's clock).
    t0_ns: u64,
    online: usize,
}

/// The others as the simulation takes them.
pub(super) struct Replayed {
    /// Background tasks, their instants counted from the use case's start.
    pub(super) tasks: Vec<rtapp::Task>,
    /// Events the kernel dropped (the replay lacks what they said).
    pub(super) lost: u64,
}

impl Replayed {
    /// What is replayed, a line per thread (name, CPUs, then each run as
    /// `(start µs from the use case's start, run µs)`), and its CPU time
    /// in all, s.
    pub(super) fn describe(&self) -> (String, f64) {
        let mut text = String::from(
            "# the machine's other threads as replayed: name, CPUs, then (start µs from the use case's start, run µs)\n",
        );
        let mut cpu_us = 0;
        for t in &self.tasks {
            let _ = write!(text, "{} {:?}", t.name, t.cpus);
            let mut at = None;
            for e in t.phases.iter().flat_map(|p| p.events.iter()) {
                match e {
                    Event::Until(u) => at = Some(*u),
                    Event::Run(us) | Event::Runtime(us) => {
                        cpu_us += us;
                        let _ = write!(text, " ({},{us})", at.take().unwrap_or(0));
                    }
                    _ => {}
                }
            }
            text.push('\n');
        }
        (text, cpu_us as f64 / 1e6)
    }

    /// The same threads as an rt-app workload of corral's extensions (each
    /// run at its instant, `corral_until`, as `corral record` writes the
    /// threads beside its scope), which `corral sim --beside` runs beside
    /// the case: the simulation `lab validate` ran, reproduced.
    pub(super) fn to_json(&self) -> String {
        // Written by hand: the events' order is the keys' order in the
        // file (as rt-app reads it), which serde_json's map would sort.
        let quote = |s: &str| serde_json::Value::from(s).to_string();
        let mut out = String::from("{\n  \"tasks\": {");
        for (n, t) in self.tasks.iter().enumerate() {
            let _ = write!(
                out,
                "{}\n    {}: {{\"loop\": 1, \"policy\": \"{}\", \"priority\": {}, \"corral_background\": true",
                if n > 0 { "," } else { "" },
                quote(&t.name),
                t.policy.name(),
                t.priority
            );
            if let Some(c) = &t.cpus {
                let _ = write!(out, ", \"cpus\": {c:?}");
            }
            if let Some(m) = t.live_moves {
                let _ = write!(out, ", \"corral_moves\": {m}");
            }
            let events = t.phases.iter().flat_map(|p| p.events.iter());
            for (i, e) in events.enumerate() {
                let (key, v) = match e {
                    Event::Until(u) => ("corral_until", *u),
                    Event::Run(us) => ("run", *us),
                    Event::Runtime(us) => ("runtime", *us),
                    Event::Sleep(us) => ("sleep", *us),
                    // (An outsider's replay holds nothing else.)
                    _ => continue,
                };
                let _ = write!(out, ", \"{key}{i}\": {v}");
            }
            out.push('}');
        }
        out.push_str(
            "\n  },\n  \"global\": {\"default_policy\": \"SCHED_OTHER\", \"duration\": -1}\n}\n",
        );
        out
    }
}

impl Others {
    /// Starts tracing every CPU, before rt-app starts so its forks are
    /// seen.
    pub(super) fn start() -> corral_linux::Result<Others> {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| corral_core::cpuset::CpuSet::parse(s.trim()).ok())
            .map_or(1, |c| c.len() as usize);
        let fs = Tracefs::open()?;
        // An instance a killed run left behind (`corral record`'s prefix).
        let _ = tracefs::remove_stale(&fs);
        let inst = Instance::create(&fs, BUFFER_KB, EVENTS)?;
        let t0_ns = crate::work::mono_ns();
        inst.start()?;
        Ok(Others {
            switch_filter: inst.filter_path("sched_switch"),
            inst: Some(inst),
            reader: None,
            _fs: fs,
            t0_ns,
            online,
        })
    }

    /// rt-app's process: its threads are the workload, every other the
    /// others. The reader starts.
    pub(super) fn scope(&mut self, pid: u32) {
        let Some(mut inst) = self.inst.take() else {
            return;
        };
        let mut conv = Converter::new(Scope::Tree([pid].into_iter().collect()), Some(self.t0_ns));
        // Every one that ran a µs or more: each run renews the slice
        // protection of the task it interrupts (a recording's default,
        // 1 ms in all, left out rcu_preempt's 30-40 runs in 10 s).
        conv.keep_outsiders_from(0);
        conv.directive(Directive::Start {
            t0: self.t0_ns,
            online: self.online,
            scope: vec![pid],
        });
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let reader = std::thread::spawn(move || {
            loop {
                let last = flag.load(Ordering::SeqCst);
                let _ = inst.drain(|l| {
                    let _ = conv.line(l);
                });
                if last {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            (inst, conv)
        });
        self.reader = Some((stop, reader));
    }

    /// Once rt-app's threads are known: the kernel drops the switches
    /// among them (and to or from idle), which say nothing of the
    /// others. On a busy case they were most of the trace, and reading
    /// them cost a CPU's time that moved the workload's threads live:
    /// hackbench-groups' reader ran 403 ms in the run and the case's
    /// threads migrated 494 times, against 180-194 with rt-app alone
    /// (see docs/sim.md). Fails when the kernel refuses the filter; the trace
    /// then stays whole.
    pub(super) fn ignore_among(&self, tids: &[u32]) -> corral_linux::Result<bool> {
        let Some(expr) = tracefs::switches_outside(tids) else {
            return Ok(false);
        };
        tracefs::set_filter(&self.switch_filter, &expr)?;
        Ok(true)
    }

    /// Stops tracing; the others as background tasks whose instants count
    /// from `start_ns` (the use case's start, CLOCK_MONOTONIC), which is
    /// the simulation's time 0. What ran before it is replayed at 0, in
    /// the warm-up that neither side measures.
    pub(super) fn finish(mut self, start_ns: u64) -> Result<Replayed> {
        let none = |lost| {
            Ok(Replayed {
                tasks: Vec::new(),
                lost,
            })
        };
        let Some((stop, reader)) = self.reader.take() else {
            return none(0);
        };
        // The reader drains once more after it sees the flag.
        stop.store(true, Ordering::SeqCst);
        let Ok((inst, conv)) = reader.join() else {
            return none(0);
        };
        let _ = inst.stop();
        let lost = inst.lost();
        drop(inst);
        let rec = conv.finish();
        // (A recording with nothing to replay is no workload.)
        if !rec.kept().contains(&true) {
            return none(lost);
        }
        let json = rec.to_json(false, "corral lab validate's live run");
        let work = rtapp::parse(&json, "the live run's other threads")?;
        let early_us = start_ns.saturating_sub(self.t0_ns) / 1000;
        let mut tasks: Vec<rtapp::Task> = work.tasks.into_iter().filter(|t| t.background).collect();
        for t in &mut tasks {
            for e in t.phases.iter_mut().flat_map(|p| p.events.iter_mut()) {
                if let Event::Until(at) = e {
                    *at = at.saturating_sub(early_us);
                }
            }
        }
        Ok(Replayed { tasks, lost })
    }
}

impl Drop for Others {
    /// On an error or Ctrl-C: the reader stops and its instance goes.
    fn drop(&mut self) {
        if let Some((stop, reader)) = self.reader.take() {
            stop.store(true, Ordering::SeqCst);
            let _ = reader.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `others.json` reads back as the tasks that were simulated, each
    /// event in its place (ten and more of them: a sorted map would put
    /// `run11` before `run3`).
    #[test]
    fn the_others_written_read_back_as_they_were_replayed() {
        let mut events = Vec::new();
        for i in 0..7 {
            events.push(Event::Until(1000 * i + 7));
            events.push(Event::Run(10 + i));
        }
        let text = r#"{"tasks": {"x": {"loop": 1, "corral_background": true, "cpus": [1],
            "corral_moves": 3, "corral_until0": 5, "run1": 1}}}"#;
        let mut task = rtapp::parse(text, "t").unwrap().tasks.remove(0);
        task.name = "kworker/0:1H \"q\"-44".into();
        task.phases[0].events = events;
        let r = Replayed {
            tasks: vec![task],
            lost: 0,
        };
        let back = rtapp::parse(&r.to_json(), "others.json").unwrap();
        assert_eq!(back.tasks.len(), 1);
        let t = &back.tasks[0];
        assert_eq!(t.name, r.tasks[0].name);
        assert_eq!(t.cpus, Some(vec![1]));
        assert!(t.background);
        assert_eq!(t.live_moves, Some(3));
        let ev: Vec<&Event> = t.phases.iter().flat_map(|p| p.events.iter()).collect();
        let want: Vec<&Event> = r.tasks[0].phases[0].events.iter().collect();
        assert_eq!(ev, want);
    }

    /// The trace instance goes with its run: `lab validate` traces each
    /// live run in turn, in one process (the instance's name is the
    /// process's), and a run whose instance outlived it left every later
    /// one untraced.
    #[test]
    fn privileged_each_run_s_trace_is_removed_so_the_next_can_start() {
        let name = "privileged_each_run_s_trace_is_removed_so_the_next_can_start";
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIP {name}: tracing needs root");
            return;
        }
        for run in 0..2 {
            let mut others = match Others::start() {
                Ok(o) => o,
                Err(e) if run == 0 => {
                    eprintln!("SKIP {name}: no tracefs here ({e})");
                    return;
                }
                Err(e) => panic!("the second run could not trace: {e}"),
            };
            others.scope(std::process::id());
            std::thread::sleep(Duration::from_millis(150));
            others.finish(crate::work::mono_ns()).unwrap();
        }
    }
}
