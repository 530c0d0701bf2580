//! The scheduler's trace events as text: the kernel's own `trace_pipe`
//! format (what `corral record` reads, and what `trace-cmd report` and
//! `perf script` print for the same events), parsed into [`TraceEvent`]s.
//!
//! A line is a header and a body:
//!
//! ```text
//!             bash-8418    [000] d.s4. 76723.420061: sched_waking: comm=kworker/0:0 pid=26181 prio=120 target_cpu=000
//! ```
//!
//! - the header: the current task's comm and PID (`comm-pid`; `perf
//!   script` writes `comm pid`), the CPU in brackets, the flags when the
//!   trace has `irq-info` (the third says hardirq `h`/`H`, softirq `s` or
//!   NMI `z`/`Z`: then the current task is not the one acting), and the
//!   timestamp in seconds;
//! - the body: the event's name (perf's `sched:` prefix dropped) and its
//!   fields, `key=value` as the event's `print fmt` writes them. A comm
//!   may hold spaces, so a word without `=` continues the value before it.
//!   trace-cmd's sched plugin writes `sched_switch` and the wake-ups in
//!   its own form (`comm:pid [prio] S ==> comm:pid [prio]`, `comm:pid
//!   [prio] CPU:001`); both forms are read.
//!
//! Only the events a recording needs are parsed (`sched_switch`,
//! `sched_waking`, `sched_wakeup`, `sched_wakeup_new`,
//! `sched_process_fork`, `sched_process_exec`, `sched_process_exit`,
//! `sched_migrate_task`); other events and comment lines give `None`, a
//! malformed line of one of these an error naming what was wrong.

/// One scheduler event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// Nanoseconds, as the trace clock gave them (µs resolution in text).
    pub ts: u64,
    pub cpu: u32,
    /// The task the CPU was running (the header's PID).
    pub current: u32,
    /// Its comm as the header gives it (`<...>` when the trace had no
    /// record of it).
    pub comm: String,
    /// The event happened in interrupt context (hardirq, softirq or NMI):
    /// `current` only happened to be there.
    pub irq: bool,
    pub kind: Kind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `prev` left the CPU for `next`; `prev_runnable` when it was
    /// preempted (state `R`/`R+`), not blocked.
    Switch {
        prev: Task,
        prev_runnable: bool,
        next: Task,
    },
    /// `try_to_wake_up` on `task` (in the waker's context).
    Waking { task: Task, target_cpu: u32 },
    /// `task` made runnable (possibly in another CPU's context).
    Wakeup { task: Task, target_cpu: u32 },
    /// A new task's first wake-up.
    WakeupNew { task: Task, target_cpu: u32 },
    /// `parent` created `child` (a process or a thread).
    Fork { parent: Task, child: Task },
    /// `pid` called exec; `filename` is the program.
    Exec { pid: u32, filename: String },
    /// `task` is exiting.
    Exit { task: Task },
    Migrate {
        task: Task,
        orig_cpu: u32,
        dest_cpu: u32,
    },
}

/// A task as an event names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub comm: String,
    pub pid: u32,
    /// The kernel's `prio`: 0–99 real-time (99 − rt_priority), 100–139
    /// fair (120 + nice); −1 for deadline tasks. Absent in fork events.
    pub prio: Option<i32>,
}

/// Parses one line; `Ok(None)` for comments, blank lines and events a
/// recording does not use.
pub fn parse_line(line: &str) -> Result<Option<TraceEvent>, String> {
    let line = line.trim_end();
    if line.trim_start().is_empty() || line.trim_start().starts_with('#') {
        return Ok(None);
    }
    // trace_pipe reports dropped events on a line of their own.
    if line.contains("[LOST ") {
        return Ok(None);
    }
    let Some(open) = line.find(" [") else {
        return Ok(None);
    };
    let close = line[open..]
        .find(']')
        .map(|i| open + i)
        .ok_or("no closing bracket after the CPU")?;
    let who = line[..open].trim();
    let (comm, current) = split_pid(who, '-')
        .or_else(|| split_pid(who, ' '))
        .ok_or_else(|| format!("no PID in {who:?}"))?;
    let cpu: u32 = line[open + 2..close]
        .trim()
        .parse()
        .map_err(|_| format!("bad CPU {:?}", &line[open + 2..close]))?;
    let mut rest = line[close + 1..].trim_start();
    // Flags (irq-info), then the timestamp ending in ':'.
    let mut irq = false;
    let mut ts = None;
    while let Some((word, after)) = rest.split_once(char::is_whitespace) {
        rest = after.trim_start();
        if let Some(t) = word.strip_suffix(':') {
            ts = Some(parse_ts(t)?);
            break;
        }
        if word.len() >= 4 && word.len() <= 6 {
            irq |= matches!(word.as_bytes()[2], b'h' | b'H' | b's' | b'z' | b'Z');
        }
    }
    let ts = ts.ok_or("no timestamp")?;
    let rest = rest.strip_prefix("sched:").unwrap_or(rest);
    let (name, body) = rest.split_once(':').ok_or("no event name")?;
    let name = name.trim();
    let body = body.trim();
    let kind = match name {
        "sched_switch" => switch(body)?,
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            let (task, target_cpu) = wakeup(body)?;
            match name {
                "sched_waking" => Kind::Waking { task, target_cpu },
                "sched_wakeup" => Kind::Wakeup { task, target_cpu },
                _ => Kind::WakeupNew { task, target_cpu },
            }
        }
        "sched_process_fork" => {
            let f = Fields::new(body);
            Kind::Fork {
                parent: Task {
                    comm: f.str("comm")?.to_string(),
                    pid: f.num("pid")?,
                    prio: None,
                },
                child: Task {
                    comm: f.str("child_comm")?.to_string(),
                    pid: f.num("child_pid")?,
                    prio: None,
                },
            }
        }
        "sched_process_exec" => {
            let f = Fields::new(body);
            Kind::Exec {
                pid: f.num("pid")?,
                filename: f.str("filename")?.to_string(),
            }
        }
        "sched_process_exit" => Kind::Exit {
            task: Fields::new(body).task("comm", "pid", "prio")?,
        },
        "sched_migrate_task" => {
            let f = Fields::new(body);
            Kind::Migrate {
                task: f.task("comm", "pid", "prio")?,
                orig_cpu: f.num("orig_cpu")?,
                dest_cpu: f.num("dest_cpu")?,
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(TraceEvent {
        ts,
        cpu,
        current,
        comm: comm.trim().to_string(),
        irq,
        kind,
    }))
}

/// `comm<sep>pid` with the PID after the last separator (`pid/tid`, as
/// `perf script -F +pid` writes it, gives the TID).
fn split_pid(s: &str, sep: char) -> Option<(&str, u32)> {
    let (comm, pid) = s.rsplit_once(sep)?;
    let pid = pid.trim();
    let tid = pid.rsplit_once('/').map_or(pid, |(_, t)| t);
    Some((comm, tid.parse().ok()?))
}

/// Seconds with up to 9 decimals → ns, without going through a float.
fn parse_ts(t: &str) -> Result<u64, String> {
    let bad = || format!("bad timestamp {t:?}");
    let (s, frac) = t.split_once('.').unwrap_or((t, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let s: u64 = s.parse().map_err(|_| bad())?;
    let f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().map_err(|_| bad())? * 10u64.pow(9 - frac.len() as u32)
    };
    Ok(s * 1_000_000_000 + f)
}

/// A body's `key=value` fields; a word without `=` belongs to the value
/// before it (a comm with a space).
struct Fields<'a> {
    /// Each key and its value, a slice of the body (no copy: this runs
    /// for every event the recorder reads).
    kv: Vec<(&'a str, &'a str)>,
}

impl<'a> Fields<'a> {
    fn new(body: &'a str) -> Fields<'a> {
        let mut kv: Vec<(&str, &str)> = Vec::new();
        // (key, start of its value) of the field being read.
        let mut open: Option<(&str, usize)> = None;
        let mut offset = 0;
        for word in body.split(' ') {
            let at = offset;
            offset += word.len() + 1;
            match word.split_once('=') {
                Some((k, _))
                    if !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') =>
                {
                    if let Some((key, from)) = open.take() {
                        kv.push((key, body[from..at].trim_end()));
                    }
                    open = Some((k, at + k.len() + 1));
                }
                _ => {}
            }
        }
        if let Some((key, from)) = open {
            kv.push((key, body[from..].trim_end()));
        }
        Fields { kv }
    }

    fn str(&self, key: &str) -> Result<&'a str, String> {
        self.kv
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("no field {key}"))
    }

    fn num<T: std::str::FromStr>(&self, key: &str) -> Result<T, String> {
        let v = self.str(key)?;
        v.trim()
            .parse()
            .map_err(|_| format!("field {key}: bad number {v:?}"))
    }

    fn task(&self, comm: &str, pid: &str, prio: &str) -> Result<Task, String> {
        Ok(Task {
            comm: self.str(comm)?.to_string(),
            pid: self.num(pid)?,
            prio: Some(self.num(prio)?),
        })
    }
}

/// A state that is still runnable: preempted, not blocked.
fn runnable(state: &str) -> bool {
    state.trim().trim_end_matches('+') == "R"
}

fn switch(body: &str) -> Result<Kind, String> {
    if body.contains("prev_pid=") {
        let f = Fields::new(body);
        let state = f.str("prev_state")?;
        let state = state.trim_end_matches(" ==>").trim_end_matches("==>");
        return Ok(Kind::Switch {
            prev: f.task("prev_comm", "prev_pid", "prev_prio")?,
            prev_runnable: runnable(state),
            next: f.task("next_comm", "next_pid", "next_prio")?,
        });
    }
    // trace-cmd's plugin: `prev:pid [prio] STATE ==> next:pid [prio]`.
    let (prev, next) = body.split_once("==>").ok_or("no ==> in sched_switch")?;
    let prev = prev.trim();
    let (prev_task, state) = prev.rsplit_once(']').ok_or("no [prio] before the state")?;
    let prev = plugin_task(&format!("{prev_task}]"))?;
    Ok(Kind::Switch {
        prev,
        prev_runnable: runnable(state),
        next: plugin_task(next.trim())?,
    })
}

/// trace-cmd's `comm:pid [prio]`.
fn plugin_task(s: &str) -> Result<Task, String> {
    let (who, prio) = s
        .rsplit_once('[')
        .ok_or_else(|| format!("no [prio] in {s:?}"))?;
    let (comm, pid) = split_pid(who.trim(), ':').ok_or_else(|| format!("no comm:pid in {s:?}"))?;
    let prio = prio.trim_end_matches(']').trim();
    Ok(Task {
        comm: comm.to_string(),
        pid,
        prio: Some(prio.parse().map_err(|_| format!("bad prio {prio:?}"))?),
    })
}

fn wakeup(body: &str) -> Result<(Task, u32), String> {
    if body.contains("pid=") {
        let f = Fields::new(body);
        return Ok((f.task("comm", "pid", "prio")?, f.num("target_cpu")?));
    }
    // trace-cmd's plugin: `comm:pid [prio] CPU:001` (older: `success=1`).
    let (task, rest) = body
        .split_once(']')
        .ok_or_else(|| format!("no [prio] in {body:?}"))?;
    let task = plugin_task(&format!("{task}]"))?;
    let cpu = rest
        .split_whitespace()
        .find_map(|w| w.strip_prefix("CPU:"))
        .ok_or("no CPU: in the wake-up")?;
    Ok((task, cpu.parse().map_err(|_| format!("bad CPU {cpu:?}"))?))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as this machine's 6.18 kernel wrote them (trace_pipe, irq-info on).
    const SWITCH: &str = "            bash-8418    [000] d..2. 76723.420095: sched_switch: prev_comm=bash prev_pid=8418 prev_prio=120 prev_state=R ==> next_comm=kworker/0:0 next_pid=26181 next_prio=120";

    #[test]
    fn the_kernel_s_own_lines() {
        let e = parse_line(SWITCH).unwrap().unwrap();
        assert_eq!(
            (e.ts, e.cpu, e.current, e.irq),
            (76_723_420_095_000, 0, 8418, false)
        );
        let Kind::Switch {
            prev,
            prev_runnable,
            next,
        } = e.kind
        else {
            panic!("{e:?}")
        };
        assert_eq!(
            (prev.pid, prev.prio, prev_runnable),
            (8418, Some(120), true)
        );
        assert_eq!((next.comm.as_str(), next.pid), ("kworker/0:0", 26181));
        let e = parse_line("          <idle>-0       [001] d.s4. 76723.399703: sched_waking: comm=bash pid=8418 prio=120 target_cpu=000").unwrap().unwrap();
        assert!(e.irq, "softirq context");
        assert_eq!(e.current, 0);
        assert!(matches!(e.kind, Kind::Waking { ref task, target_cpu: 0 } if task.pid == 8418));
        let e = parse_line("           sleep-8419    [001] dN.5. 76723.414493: sched_waking: comm=bash pid=8418 prio=120 target_cpu=001").unwrap().unwrap();
        assert!(!e.irq, "process context (need-resched set)");
        let e = parse_line("            bash-8418    [001] ..... 76723.401845: sched_process_fork: comm=bash pid=8418 child_comm=bash child_pid=8419").unwrap().unwrap();
        assert!(
            matches!(e.kind, Kind::Fork { ref parent, ref child } if parent.pid == 8418 && child.pid == 8419)
        );
        let e = parse_line("           sleep-8419    [000] ..... 76723.402216: sched_process_exec: filename=/usr/bin/sleep pid=8419 old_pid=8419").unwrap().unwrap();
        assert_eq!(
            e.kind,
            Kind::Exec {
                pid: 8419,
                filename: "/usr/bin/sleep".into()
            }
        );
        let e = parse_line("              ls-8420    [001] ..... 76723.419455: sched_process_exit: comm=ls pid=8420 prio=120 group_dead=true").unwrap().unwrap();
        assert!(matches!(e.kind, Kind::Exit { ref task } if task.pid == 8420));
        let e = parse_line("     migration/1-21      [001] d..3. 76723.397060: sched_migrate_task: comm=sh pid=8418 prio=120 orig_cpu=1 dest_cpu=0").unwrap().unwrap();
        assert!(matches!(
            e.kind,
            Kind::Migrate {
                orig_cpu: 1,
                dest_cpu: 0,
                ..
            }
        ));
        let e = parse_line("              sh-8413    [001] d..2. 76723.396969: sched_switch: prev_comm=sh prev_pid=8413 prev_prio=120 prev_state=D ==> next_comm=sh next_pid=8418 next_prio=120").unwrap().unwrap();
        assert!(matches!(
            e.kind,
            Kind::Switch {
                prev_runnable: false,
                ..
            }
        ));
    }

    #[test]
    fn comms_with_spaces_and_dashes_and_other_tools_forms() {
        let e = parse_line("  Web Content-3121  [001] d..2. 5.000001: sched_switch: prev_comm=Web Content prev_pid=3121 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120").unwrap().unwrap();
        assert_eq!(e.current, 3121);
        let Kind::Switch {
            prev,
            prev_runnable,
            ..
        } = e.kind
        else {
            panic!()
        };
        assert_eq!((prev.comm.as_str(), prev_runnable), ("Web Content", false));
        // trace-cmd report, sched plugin, no irq-info.
        let e = parse_line("     cc1-3990  [001]  1234.567890: sched_switch:         cc1:3990 [120] R+ ==> rt-app:4001 [19]").unwrap().unwrap();
        let Kind::Switch {
            prev,
            prev_runnable,
            next,
        } = e.kind
        else {
            panic!()
        };
        assert_eq!(
            (prev.comm.as_str(), prev.pid, prev_runnable),
            ("cc1", 3990, true)
        );
        assert_eq!((next.pid, next.prio), (4001, Some(19)));
        let e = parse_line(
            "  <idle>-0     [000]  1234.567891: sched_wakeup:         my:proc:77 [120] CPU:001",
        )
        .unwrap()
        .unwrap();
        assert!(
            matches!(e.kind, Kind::Wakeup { ref task, target_cpu: 1 } if task.pid == 77 && task.comm == "my:proc")
        );
        // perf script: `comm pid [cpu] ts: sched:event: fields`.
        let e = parse_line("         cc1  3990 [001]  1234.567892: sched:sched_waking: comm=as pid=3991 prio=120 target_cpu=000").unwrap().unwrap();
        assert_eq!((e.current, e.ts), (3990, 1_234_567_892_000));
        let e = parse_line("         cc1  3988/3990 [001]  1234.567892: sched:sched_waking: comm=as pid=3991 prio=120 target_cpu=000").unwrap().unwrap();
        assert_eq!(e.current, 3990, "perf script -F +pid: pid/tid");
        // Other events, comments and lost-event notes are skipped.
        assert_eq!(parse_line("# tracer: nop").unwrap(), None);
        assert_eq!(parse_line("CPU:1 [LOST 42 EVENTS]").unwrap(), None);
        assert_eq!(
            parse_line("  a-1 [000] ..... 1.0: irq_handler_entry: irq=1 name=x").unwrap(),
            None
        );
        // A malformed line of a known event says what is wrong.
        let e = parse_line("  a-1 [000] ..... 1.0: sched_waking: comm=a pid=x prio=1 target_cpu=0")
            .unwrap_err();
        assert!(e.contains("pid"), "{e}");
    }
}
