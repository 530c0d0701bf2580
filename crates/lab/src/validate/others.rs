//! The machine's other threads during a live run, replayed beside the
//! workload in the simulation.
//!
//! The kernel's own threads (kdamond, kworkers, RCU), other programs and
//! the lab itself run beside rt-app live, and they shape its tail: a
//! thread that runs briefly on a CPU makes the kernel pick that CPU's
//! task again, which renews its slice protection (RUN_TO_PARITY), and a
//! thread waking within it waits for the next tick. So the live run is
//! traced (every CPU's scheduler events, as `corral record` reads them),
//! and what ran outside rt-app's process becomes background threads of
//! the simulated workload, each run at its live instant on the CPU it
//! used (`corral_until`, [`corral_sim::input::recording`]). Nothing is
//! fitted: what is replayed is what ran.

use super::*;
use corral_linux::tracefs::{self, Instance, Tracefs, SCHED_EVENTS};
use corral_sim::input::recording::{Converter, Directive, Scope};
use corral_sim::input::rtapp::Event;

/// Per-CPU trace buffer, KiB: drained every 100 ms by [`live::wait_until`]'s
/// callback, it holds a few seconds of hackbench-groups' switches.
const BUFFER_KB: u32 = 8192;

pub(super) struct Others {
    // Dropped first (fields drop in order): the instance is removed
    // through the private tracefs mount that `_fs` holds open.
    inst: Instance,
    _fs: Tracefs,
    /// Made once rt-app's PID is known; until then the lines wait.
    conv: Option<Converter>,
    pending: Vec<String>,
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
        let inst = Instance::create(&fs, BUFFER_KB, SCHED_EVENTS)?;
        let t0_ns = crate::work::mono_ns();
        inst.start()?;
        Ok(Others {
            inst,
            _fs: fs,
            conv: None,
            pending: Vec::new(),
            t0_ns,
            online,
        })
    }

    /// rt-app's process: its threads are the workload, every other the
    /// others.
    pub(super) fn scope(&mut self, pid: u32) {
        let mut conv = Converter::new(Scope::Tree([pid].into_iter().collect()), Some(self.t0_ns));
        conv.directive(Directive::Start {
            t0: self.t0_ns,
            online: self.online,
            scope: vec![pid],
        });
        for l in self.pending.drain(..) {
            let _ = conv.line(&l);
        }
        self.conv = Some(conv);
    }

    /// Reads what the kernel has so far.
    pub(super) fn drain(&mut self) {
        let (conv, pending) = (&mut self.conv, &mut self.pending);
        let _ = self.inst.drain(|l| match conv {
            Some(c) => {
                let _ = c.line(l);
            }
            None => pending.push(l.to_string()),
        });
    }

    /// Stops tracing; the others as background tasks whose instants count
    /// from `start_ns` (the use case's start, CLOCK_MONOTONIC), which is
    /// the simulation's time 0. What ran before it is replayed at 0, in
    /// the warm-up that neither side measures.
    pub(super) fn finish(mut self, start_ns: u64) -> Result<Replayed> {
        let _ = self.inst.stop();
        self.drain();
        let lost = self.inst.lost();
        let Some(conv) = self.conv.take() else {
            return Ok(Replayed {
                tasks: Vec::new(),
                lost,
            });
        };
        let rec = conv.finish();
        // (A recording with nothing to replay is no workload.)
        if !rec.kept().contains(&true) {
            return Ok(Replayed {
                tasks: Vec::new(),
                lost,
            });
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

#[cfg(test)]
mod tests {
    use super::*;

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
            std::thread::sleep(Duration::from_millis(50));
            others.drain();
            others.finish(crate::work::mono_ns()).unwrap();
        }
    }
}
