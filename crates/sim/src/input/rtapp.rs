//! Workloads in rt-app's JSON, the format scheduler developers use (LISA
//! drives rt-app; Debian ships it): see rt-app's `doc/tutorial.txt`.
//!
//! A file has `tasks` (each a thread, `instance` copies of it) and
//! `global`. A task runs its `phases` in order, `loop` times (−1: for
//! ever); a phase runs its events in order, `loop` times. Events are the
//! keys of an object, *in file order and possibly repeated*, and a key
//! names its event by prefix, so `run0` and `run1` are both `run` (rt-app
//! matches with `strncmp`). A task without `phases` is one phase made of
//! its own event keys.
//!
//! Supported: `tasks`, `instance`, `loop`, `phases`, `run`, `runtime`,
//! `sleep`, `timer` (`ref`, `period`, `mode` relative/absolute, `unique`
//! refs per instance), `suspend`/`resume`, `lock`/`unlock`,
//! `wait`/`signal`/`broad`/`sync`, `barrier`, `yield`, `cpus`, `priority`
//! (nice for fair policies), `policy` (SCHED_OTHER / IDLE / BATCH / FIFO /
//! RR), `taskgroup`, `delay` (µs before the thread starts; its timers
//! count from then), and `global` `duration` and `default_policy`.
//! As in rt-app, a timer's first expiry is a period after the thread's
//! start (`t_first`: the use case's start plus its `delay`), not after
//! its first use.
//!
//! One extension, for recordings of live runs (`corral record`), which
//! rt-app cannot express without losing wake-ups: `corral_wake` and
//! `corral_block`, a counting semaphore named by a string. `"corral_wake":
//! "T"` posts one wake-up to `T` (waking a thread blocked on it, else
//! kept); `"corral_block": "T"` takes one, blocking until there is one.
//! rt-app's `resume` is a condition variable's broadcast, lost when nobody
//! waits, so a recorded thread whose waker ran first in a replay would wait
//! for ever. And `corral_until`: `"corral_until": T` sleeps until T µs
//! after the workload's start (at once when that is past), a recorded
//! periodic thread's wake-up at the instant it had live; rt-app's `timer`
//! counts one period per call, which drifts once a late thread skipped a
//! period live. Three task keys: `corral_forked` (born at its first
//! `corral_block`'s wake-up, a recorded fork), `corral_background`
//! (outside the scope a simulated corral manages) and `corral_moves`
//! (its runs are CPU time measured live, the scheduler's costs already
//! in them, with this many migrations: see `sched::machine::Costs`).
//! rt-app refuses these keys; `corral record --rtapp` writes a file
//! without them.
//! `global` keys that only steer rt-app's own logging and set-up
//! (`calibration`, `logdir`, `log_basename`, `log_size`, `ftrace`,
//! `gnuplot`, `lock_pages`, `frag`, `io_device`, `mem_buffer_size`,
//! `cumulative_slack`, and `pi_enabled` when false) are accepted and have
//! no effect on a simulation. Anything else is an error naming the file,
//! the line, the task and the key — never skipped.

use crate::input::json::{self, Kind, Value};
use crate::sched::kernel::Policy;
use std::fmt;

/// How a timer's next expiry is computed (rt-app's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerMode {
    /// From the end of the phase that used it last (rt-app's default).
    Relative,
    /// From the first use, period after period, however late the thread.
    Absolute,
}

/// A resource's name (timer, mutex, condition, barrier, suspend queue):
/// shared, so events clone cheaply.
pub type Name = std::sync::Arc<str>;

/// One event of a phase. Times are microseconds, as in rt-app.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// CPU work that takes `us` on a CPU of capacity 1024 (longer on a
    /// smaller core).
    Run(u64),
    /// CPU work for `us` of CPU time whatever the core.
    Runtime(u64),
    Sleep(u64),
    Timer {
        name: Name,
        period_us: u64,
        mode: TimerMode,
    },
    Lock(Name),
    Unlock(Name),
    Wait {
        cond: Name,
        mutex: Name,
    },
    Signal(Name),
    Broad(Name),
    /// Signal `cond`, then wait on it (with `mutex` held as rt-app does).
    Sync {
        cond: Name,
        mutex: Name,
    },
    Suspend(Name),
    Resume(Name),
    Barrier(Name),
    Yield,
    /// corral's extension: post one wake-up to a semaphore.
    Wake(Name),
    /// corral's extension: take one wake-up from a semaphore, waiting for it.
    Block(Name),
    /// corral's extension: sleep until this many µs after the start.
    Until(u64),
}

impl Event {
    /// The resources the event names (a timer, mutex, condition, suspend
    /// queue, barrier or semaphore), the condition before its mutex.
    pub fn resources(&self) -> (Option<&Name>, Option<&Name>) {
        match self {
            Event::Timer { name, .. }
            | Event::Lock(name)
            | Event::Unlock(name)
            | Event::Signal(name)
            | Event::Broad(name)
            | Event::Suspend(name)
            | Event::Resume(name)
            | Event::Wake(name)
            | Event::Block(name)
            | Event::Barrier(name) => (Some(name), None),
            Event::Wait { cond, mutex } | Event::Sync { cond, mutex } => (Some(cond), Some(mutex)),
            _ => (None, None),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    /// Times to run the phase's events; −1 is for ever.
    pub loops: i64,
    /// CPUs the thread may use during this phase.
    pub cpus: Option<Vec<u32>>,
    pub events: Vec<Event>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub name: String,
    pub instances: u32,
    pub policy: Policy,
    /// Nice value for fair policies, RT priority (1–99) for FIFO/RR.
    pub priority: i32,
    pub cpus: Option<Vec<u32>>,
    /// The cgroup (cpu controller) the thread runs in, `/` by default.
    pub taskgroup: Option<String>,
    /// Times to run all phases; −1 is for ever.
    pub loops: i64,
    pub phases: Vec<Phase>,
    /// corral's extension: born at its first `corral_wake` (a recorded
    /// fork), not at the start.
    pub forked: bool,
    /// rt-app's `delay`: µs after the use case's start that the thread
    /// starts, its timers' reference (`t_first`).
    pub delay_us: u64,
    /// corral's extension: what else ran on the recorded machine, outside
    /// the scope corral was asked to manage (the simulated daemon leaves
    /// it alone, as the live one does).
    pub background: bool,
    /// corral's extension: its runs are CPU time measured live (a
    /// recording's), the scheduler's costs in them, and this many
    /// migrations were among them (`corral_moves`).
    pub live_moves: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub tasks: Vec<Task>,
    /// How long the use case runs; `None` (rt-app's −1) until every task ends.
    pub duration_s: Option<f64>,
    pub default_policy: Policy,
}

/// Why a workload file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub file: String,
    pub line: usize,
    pub task: Option<String>,
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:", self.file, self.line)?;
        if let Some(t) = &self.task {
            write!(f, " task {t:?}:")?;
        }
        if let Some(k) = &self.key {
            write!(f, " key {k:?}:")?;
        }
        write!(f, " {}", self.message)
    }
}

impl std::error::Error for Error {}

/// `global` keys with no bearing on a simulation (rt-app's own logging,
/// calibration and memory set-up).
const GLOBAL_NO_OPS: &[&str] = &[
    "calibration",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "lock_pages",
    "frag",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
];

/// Event keys, longest prefix first (`runtime` before `run`).
const EVENT_PREFIXES: &[&str] = &[
    "runtime",
    "run",
    "sleep",
    "timer",
    "suspend",
    "resume",
    "lock",
    "unlock",
    "wait",
    "signal",
    "broad",
    "sync",
    "barrier",
    "yield",
    "corral_wake",
    "corral_block",
    "corral_until",
];

/// Keys of a task object that are not events.
const TASK_KEYS: &[&str] = &[
    "instance",
    "loop",
    "policy",
    "priority",
    "cpus",
    "taskgroup",
    "phases",
    "delay",
    "corral_forked",
    "corral_background",
    "corral_moves",
];

struct Ctx<'a> {
    file: &'a str,
    task: Option<String>,
}

impl Ctx<'_> {
    fn err(&self, v: &Value, key: Option<&str>, message: impl Into<String>) -> Error {
        Error {
            file: self.file.to_string(),
            line: v.line,
            task: self.task.clone(),
            key: key.map(String::from),
            message: message.into(),
        }
    }

    fn int(&self, v: &Value, key: &str) -> Result<i64, Error> {
        v.as_i64().ok_or_else(|| {
            self.err(
                v,
                Some(key),
                format!("expected an integer, found {}", v.type_name()),
            )
        })
    }

    fn uint(&self, v: &Value, key: &str) -> Result<u64, Error> {
        let n = self.int(v, key)?;
        u64::try_from(n).map_err(|_| {
            self.err(
                v,
                Some(key),
                format!("expected a non-negative integer, found {n}"),
            )
        })
    }

    fn string(&self, v: &Value, key: &str) -> Result<String, Error> {
        v.as_str().map(String::from).ok_or_else(|| {
            self.err(
                v,
                Some(key),
                format!("expected a string, found {}", v.type_name()),
            )
        })
    }

    fn cpus(&self, v: &Value, key: &str) -> Result<Vec<u32>, Error> {
        let items = v
            .as_array()
            .ok_or_else(|| self.err(v, Some(key), "expected an array of CPU numbers"))?;
        items
            .iter()
            .map(|c| {
                let n = self.int(c, key)?;
                u32::try_from(n)
                    .map_err(|_| self.err(c, Some(key), format!("{n} is not a CPU number")))
            })
            .collect()
    }

    fn object<'v>(&self, v: &'v Value, key: &str) -> Result<&'v [(String, Value)], Error> {
        v.as_object().ok_or_else(|| {
            self.err(
                v,
                Some(key),
                format!("expected an object, found {}", v.type_name()),
            )
        })
    }

    /// `{ "ref": …, "mutex": … }`.
    fn ref_mutex(&self, v: &Value, key: &str) -> Result<(String, String), Error> {
        let o = self.object(v, key)?;
        let (mut r, mut m) = (None, None);
        for (k, x) in o {
            match k.as_str() {
                "ref" => r = Some(self.string(x, "ref")?),
                "mutex" => m = Some(self.string(x, "mutex")?),
                _ => {
                    return Err(self.err(
                        x,
                        Some(k),
                        format!("unsupported key in {key} (expected ref and mutex)"),
                    ))
                }
            }
        }
        match (r, m) {
            (Some(r), Some(m)) => Ok((r, m)),
            _ => Err(self.err(v, Some(key), "needs both \"ref\" and \"mutex\"")),
        }
    }

    fn event(&self, key: &str, v: &Value) -> Result<Option<Event>, Error> {
        let Some(kind) = EVENT_PREFIXES.iter().find(|p| key.starts_with(**p)) else {
            return Ok(None);
        };
        Ok(Some(match *kind {
            "runtime" => Event::Runtime(self.uint(v, key)?),
            "run" => Event::Run(self.uint(v, key)?),
            "sleep" => Event::Sleep(self.uint(v, key)?),
            "timer" => {
                let o = self.object(v, key)?;
                let (mut name, mut period, mut mode) = (None, None, TimerMode::Relative);
                for (k, x) in o {
                    match k.as_str() {
                        "ref" => name = Some(self.string(x, "ref")?),
                        "period" => period = Some(self.uint(x, "period")?),
                        "mode" => {
                            mode = match self.string(x, "mode")?.as_str() {
                                "relative" => TimerMode::Relative,
                                "absolute" => TimerMode::Absolute,
                                m => {
                                    return Err(self.err(
                                        x,
                                        Some("mode"),
                                        format!("timer mode {m:?} is not relative or absolute"),
                                    ))
                                }
                            }
                        }
                        _ => {
                            return Err(self.err(
                                x,
                                Some(k),
                                "unsupported key in a timer (expected ref, period, mode)",
                            ))
                        }
                    }
                }
                match (name, period) {
                    (Some(name), Some(period_us)) if period_us > 0 => Event::Timer {
                        name: Name::from(name),
                        period_us,
                        mode,
                    },
                    _ => {
                        return Err(self.err(
                            v,
                            Some(key),
                            "a timer needs \"ref\" and a positive \"period\"",
                        ))
                    }
                }
            }
            "suspend" => Event::Suspend(self.string(v, key)?.into()),
            "resume" => Event::Resume(self.string(v, key)?.into()),
            "lock" => Event::Lock(self.string(v, key)?.into()),
            "unlock" => Event::Unlock(self.string(v, key)?.into()),
            "signal" => Event::Signal(self.string(v, key)?.into()),
            "broad" => Event::Broad(self.string(v, key)?.into()),
            "barrier" => Event::Barrier(self.string(v, key)?.into()),
            "wait" => {
                let (cond, mutex) = self.ref_mutex(v, key)?;
                Event::Wait {
                    cond: cond.into(),
                    mutex: mutex.into(),
                }
            }
            "sync" => {
                let (cond, mutex) = self.ref_mutex(v, key)?;
                Event::Sync {
                    cond: cond.into(),
                    mutex: mutex.into(),
                }
            }
            "yield" => Event::Yield,
            "corral_wake" => Event::Wake(self.string(v, key)?.into()),
            "corral_block" => Event::Block(self.string(v, key)?.into()),
            "corral_until" => Event::Until(self.uint(v, key)?),
            _ => unreachable!("every prefix is handled"),
        }))
    }

    /// A phase object (or a task object without `phases`).
    fn phase(&self, name: &str, o: &[(String, Value)], task_level: bool) -> Result<Phase, Error> {
        let mut phase = Phase {
            name: name.to_string(),
            loops: 1,
            cpus: None,
            events: Vec::new(),
        };
        for (k, v) in o {
            if task_level && TASK_KEYS.contains(&k.as_str()) {
                continue;
            }
            match k.as_str() {
                "loop" => phase.loops = self.int(v, k)?,
                "cpus" => phase.cpus = Some(self.cpus(v, k)?),
                _ => match self.event(k, v)? {
                    Some(e) => phase.events.push(e),
                    None => {
                        return Err(self.err(
                            v,
                            Some(k),
                            if task_level {
                                "unsupported task key or event"
                            } else {
                                "unsupported phase key or event"
                            },
                        ))
                    }
                },
            }
        }
        if phase.loops == 0 || phase.loops < -1 {
            return Err(self.err(
                &o.iter()
                    .find(|(k, _)| k == "loop")
                    .map(|(_, v)| v.clone())
                    .unwrap_or(Value {
                        line: 0,
                        kind: Kind::Null,
                    }),
                Some("loop"),
                "must be -1 (for ever) or a positive count",
            ));
        }
        Ok(phase)
    }

    /// The `global` object: the run's duration and default policy; rt-app's
    /// own logging and calibration keys are accepted and ignored.
    fn global(&self, v: &Value, workload: &mut Workload) -> Result<(), Error> {
        for (gk, gv) in self.object(v, "global")? {
            match gk.as_str() {
                "duration" => {
                    let d = gv
                        .as_f64()
                        .ok_or_else(|| self.err(gv, Some(gk), "expected a number of seconds"))?;
                    workload.duration_s = (d >= 0.0).then_some(d);
                }
                "default_policy" => {
                    let s = self.string(gv, gk)?;
                    workload.default_policy = Policy::parse(&s).ok_or_else(|| {
                        self.err(gv, Some(gk), format!("unsupported policy {s:?}"))
                    })?;
                }
                "pi_enabled" if gv.as_bool() == Some(false) => {}
                k if GLOBAL_NO_OPS.contains(&k) => {}
                _ => return Err(self.err(gv, Some(gk), "unsupported global key")),
            }
        }
        Ok(())
    }

    /// One task object: its instances, policy and priority, CPUs, group,
    /// loops, and its phases (or its events as one phase).
    fn task(&self, name: &str, tv: &Value, default_policy: Policy) -> Result<Task, Error> {
        let o = self.object(tv, name)?;
        let mut task = Task {
            name: name.to_string(),
            instances: 1,
            policy: default_policy,
            priority: 0,
            cpus: None,
            taskgroup: None,
            loops: -1,
            phases: Vec::new(),
            delay_us: 0,
            forked: false,
            background: false,
            live_moves: None,
        };
        let mut priority = None;
        let mut phases = None;
        for (k, v) in o {
            match k.as_str() {
                "instance" => {
                    let n = self.uint(v, k)?;
                    task.instances = u32::try_from(n)
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| self.err(v, Some(k), "must be a positive count"))?;
                }
                "loop" => task.loops = self.int(v, k)?,
                "policy" => {
                    let s = self.string(v, k)?;
                    task.policy = Policy::parse(&s)
                        .ok_or_else(|| self.err(v, Some(k), format!("unsupported policy {s:?}")))?;
                }
                "priority" => priority = Some((self.int(v, k)?, v)),
                "cpus" => task.cpus = Some(self.cpus(v, k)?),
                "taskgroup" => task.taskgroup = Some(self.string(v, k)?),
                "phases" => phases = Some(self.object(v, k)?),
                "delay" => task.delay_us = self.uint(v, k)?,
                "corral_forked" => {
                    task.forked = v
                        .as_bool()
                        .ok_or_else(|| self.err(v, Some(k), "expected true or false"))?;
                }
                "corral_background" => {
                    task.background = v
                        .as_bool()
                        .ok_or_else(|| self.err(v, Some(k), "expected true or false"))?;
                }
                "corral_moves" => task.live_moves = Some(self.uint(v, k)?),
                _ => {}
            }
        }
        if let Some((p, v)) = priority {
            let ok = if task.policy.is_rt() {
                (1..=99).contains(&p)
            } else {
                (-20..=19).contains(&p)
            };
            if !ok {
                return Err(self.err(
                    v,
                    Some("priority"),
                    format!("{p} is out of range for {:?}", task.policy),
                ));
            }
            task.priority = p as i32;
        } else if task.policy.is_rt() {
            task.priority = 10;
        }
        match phases {
            Some(ps) => {
                // Events beside "phases" at task level are not allowed.
                if let Some((k, v)) = o.iter().find(|(k, _)| !TASK_KEYS.contains(&k.as_str())) {
                    return Err(self.err(
                        v,
                        Some(k),
                        "unsupported task key (events belong in a phase when there are phases)",
                    ));
                }
                for (pname, pv) in ps {
                    let po = self.object(pv, pname)?;
                    task.phases.push(self.phase(pname, po, false)?);
                }
            }
            None => task.phases.push(self.phase("p0", o, true)?),
        }
        if task.loops == 0 || task.loops < -1 {
            return Err(self.err(
                tv,
                Some("loop"),
                "must be -1 (for ever) or a positive count",
            ));
        }
        if task.phases.iter().all(|p| p.events.is_empty()) {
            return Err(self.err(tv, None, "has no events"));
        }
        if task.forked && !matches!(task.phases[0].events.first(), Some(Event::Block(_))) {
            return Err(self.err(
                tv,
                Some("corral_forked"),
                "a forked task's first event must be corral_block (it waits for its fork)",
            ));
        }
        Ok(task)
    }
}

/// Parses an rt-app workload; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Workload, Error> {
    let root = json::parse(text).map_err(|e| Error {
        file: file.to_string(),
        line: e.line,
        task: None,
        key: None,
        message: format!("column {}: {}", e.column, e.message),
    })?;
    let mut ctx = Ctx { file, task: None };
    let top = ctx.object(&root, "(top level)")?;
    let mut workload = Workload {
        tasks: Vec::new(),
        duration_s: None,
        default_policy: Policy::Other,
    };
    let mut tasks_value = None;
    for (k, v) in top {
        match k.as_str() {
            "tasks" => tasks_value = Some(v),
            "global" => ctx.global(v, &mut workload)?,
            // A recording's live figures (`corral record`), for comparison.
            "corral_recording" => {}
            _ => {
                return Err(ctx.err(
                    v,
                    Some(k),
                    "unsupported top-level key (expected tasks and global)",
                ))
            }
        }
    }
    let tasks_value =
        tasks_value.ok_or_else(|| ctx.err(&root, Some("tasks"), "no \"tasks\" object"))?;
    for (name, tv) in ctx.object(tasks_value, "tasks")? {
        ctx.task = Some(name.clone());
        let task = ctx.task(name, tv, workload.default_policy)?;
        workload.tasks.push(task);
    }
    if workload.tasks.is_empty() {
        ctx.task = None;
        return Err(ctx.err(tasks_value, Some("tasks"), "no tasks"));
    }
    Ok(workload)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MP3: &str = r#"{
        "tasks" : {
            "AudioOut" : { "priority" : -19, "loop" : -1, "run" : 275, "resume" : "AudioTrack", "run" : 4725, "suspend" : "AudioOut" },
            "Tick" : { "cpus" : [0], "phases" : {
                "p1" : { "loop" : 1, "timer" : { "ref" : "tick", "period" : 6000 } },
                "p2" : { "loop" : 4, "run1" : 10, "timer" : { "ref" : "tick", "period": 6000, "mode": "absolute" } } } }
        },
        "global" : { "default_policy" : "SCHED_OTHER", "duration" : 6, "ftrace" : false, "calibration" : "CPU0" }
    }"#;

    #[test]
    fn events_keep_order_and_repeats() {
        let w = parse(MP3, "mp3.json").unwrap();
        assert_eq!(w.duration_s, Some(6.0));
        let out = &w.tasks[0];
        assert_eq!((out.priority, out.loops), (-19, -1));
        assert_eq!(
            out.phases[0].events,
            vec![
                Event::Run(275),
                Event::Resume("AudioTrack".into()),
                Event::Run(4725),
                Event::Suspend("AudioOut".into())
            ]
        );
        let tick = &w.tasks[1];
        assert_eq!(tick.cpus, Some(vec![0]));
        assert_eq!(tick.phases[1].loops, 4);
        assert_eq!(tick.phases[1].events[0], Event::Run(10), "run1 is a run");
        assert!(matches!(
            tick.phases[1].events[1],
            Event::Timer {
                mode: TimerMode::Absolute,
                period_us: 6000,
                ..
            }
        ));
    }

    #[test]
    fn unsupported_keys_name_file_line_task_and_key() {
        let e = parse(
            "{\"tasks\": {\"t\": {\n\"run\": 1,\n\"mem\": 100}}}",
            "w.json",
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.task.as_deref(), e.key.as_deref()),
            (3, Some("t"), Some("mem"))
        );
        assert_eq!(
            e.to_string(),
            "w.json:3: task \"t\": key \"mem\": unsupported task key or event"
        );
        let e = parse(
            "{\"tasks\": {\"t\": {\"run\": 1}}, \"global\": {\"pi_enabled\": true}}",
            "w.json",
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("pi_enabled"));
        let e = parse("{\"resources\": {}, \"tasks\": {}}", "w.json").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("resources"));
        let e = parse(
            "{\"tasks\": {\"t\": {\"policy\": \"SCHED_FIFO\", \"priority\": 0, \"run\": 1}}}",
            "w",
        )
        .unwrap_err();
        assert!(e.message.contains("out of range"), "{e}");
        let e = parse("{\"tasks\": {\"t\": {\"timer\": {\"ref\": \"x\"}}}}", "w").unwrap_err();
        assert!(e.message.contains("period"), "{e}");
        assert!(parse("{\"tasks\": {\"t\": {\"run\": -5}}}", "w").is_err());
        assert!(parse("{\"tasks\": {\"t\": {\"loop\": 0, \"run\": 5}}}", "w").is_err());
    }

    #[test]
    fn defaults() {
        let w = parse(
            "{\"tasks\": {\"t\": {\"run\": 1000, \"sleep\": 1000}}}",
            "w",
        )
        .unwrap();
        let t = &w.tasks[0];
        assert_eq!(
            (t.instances, t.loops, t.policy, t.priority),
            (1, -1, Policy::Other, 0)
        );
        assert_eq!(w.duration_s, None);
        let w = parse("{\"tasks\": {\"t\": {\"policy\": \"SCHED_RR\", \"instance\": 3, \"taskgroup\": \"/bg\", \"run\": 1}}}", "w").unwrap();
        assert_eq!(
            (
                w.tasks[0].instances,
                w.tasks[0].priority,
                w.tasks[0].taskgroup.as_deref()
            ),
            (3, 10, Some("/bg"))
        );
    }
}
