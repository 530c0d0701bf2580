//! The kernel's tracing file system, for recording scheduler events
//! (`corral record`): an instance of corral's own, so the machine's main
//! trace buffer and anyone else's instances are left alone.
//!
//! - **Where.** tracefs where it is mounted (`/sys/kernel/tracing`, or
//!   debugfs's `tracing`); when it is mounted nowhere, a thread of ours
//!   enters a mount namespace of its own, mounts it there and keeps only a
//!   directory descriptor: nothing is mounted on the host, and the mount
//!   goes away with the descriptor. Files are then reached through
//!   `/proc/self/fd/N/…`.
//! - **What.** An instance `instances/corral-record-<pid>` with the
//!   monotonic clock (`trace_clock` `mono`: one clock for every CPU, and
//!   the one `clock_gettime` reads), the scheduler events asked for, and
//!   `set_event_pid` with `options/event-fork`: the kernel records only
//!   the listed tasks and adds every task they fork itself, so no fork is
//!   missed between two of our reads. A `sched_switch` is kept when
//!   either side is listed, a wake-up when the waker or the wakee is.
//! - **Cost.** Events go to per-CPU ring buffers of `buffer_kb` each; we
//!   read `trace_pipe` (text, formatted by the kernel as we read it)
//!   without blocking, every poll. When we fall behind, the kernel drops
//!   events and says so (`[LOST n EVENTS]`, and `per_cpu/cpuN/stats`).
//! - **Clean up.** Dropping the [`Instance`] turns tracing off and removes
//!   it; an instance left by a recorder that was killed is removed by the
//!   next one ([`remove_stale`]).

use crate::error::{Error, Result};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The scheduler events a recording reads.
pub const SCHED_EVENTS: &[&str] = &[
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_process_fork",
    "sched_process_exec",
    "sched_process_exit",
    "sched_migrate_task",
];

const PREFIX: &str = "corral-record-";

/// tracefs's root, mounted by the host or privately by us.
#[derive(Debug)]
pub struct Tracefs {
    root: PathBuf,
    /// Our private mount's directory, kept open (the mount lives as long
    /// as it does).
    _dir: Option<OwnedFd>,
}

impl Tracefs {
    /// tracefs as the host mounted it, else mounted privately.
    pub fn open() -> Result<Tracefs> {
        // From mountinfo, not by looking: touching debugfs's `tracing`
        // would make the kernel mount tracefs there (an automount).
        let path = Path::new("/proc/self/mountinfo");
        let text = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        if let Some(root) = tracefs_mount(&text) {
            return Ok(Tracefs { root, _dir: None });
        }
        // A thread of its own: unshare(CLONE_NEWNS) changes only the
        // calling thread's namespace, and the thread ends once the
        // directory is open; the rest of the process (and any command it
        // starts) keeps the host's.
        let dir = std::thread::spawn(mount_privately)
            .join()
            .map_err(|_| Error::Syscall {
                call: "mount tracefs",
                error: std::io::Error::other("the mounting thread panicked"),
            })??;
        Ok(Tracefs {
            root: PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())),
            _dir: Some(dir),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Where tracefs is mounted, from mountinfo's text (the fifth field is
/// the mount point, the filesystem type follows ` - `).
fn tracefs_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "tracefs")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    })
}

fn syscall(call: &'static str, rc: libc::c_int) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::Syscall {
            call,
            error: std::io::Error::last_os_error(),
        })
    }
}

/// In a new mount namespace (this thread's only): `/` made private, so
/// nothing propagates to the host, and tracefs mounted on
/// `/sys/kernel/tracing`; returns that directory, opened.
fn mount_privately() -> Result<OwnedFd> {
    // SAFETY: plain system calls with valid NUL-terminated strings.
    unsafe {
        syscall("unshare(CLONE_NEWNS)", libc::unshare(libc::CLONE_NEWNS))?;
        syscall(
            "mount(/, MS_REC|MS_PRIVATE)",
            libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ),
        )?;
        syscall(
            "mount tracefs on /sys/kernel/tracing",
            libc::mount(
                c"nodev".as_ptr(),
                c"/sys/kernel/tracing".as_ptr(),
                c"tracefs".as_ptr(),
                0,
                std::ptr::null(),
            ),
        )?;
    }
    let path = Path::new("/sys/kernel/tracing");
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(f.into())
}

/// Removes instances of earlier recorders whose process is gone (killed
/// before they could); returns their names.
pub fn remove_stale(fs: &Tracefs) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(fs.root.join("instances")) else {
        return removed;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        // rmdir alone: it fails (EBUSY) while a recorder (one in another
        // PID namespace, say) still reads the instance.
        let dir = e.path();
        if fs::remove_dir(&dir).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// corral's trace instance; removed when dropped.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    pipe: Option<File>,
    /// A line cut by the end of a read, completed by the next.
    partial: Vec<u8>,
    buf: Vec<u8>,
}

impl Instance {
    /// Creates `instances/corral-record-<our pid>` with the monotonic
    /// clock, `buffer_kb` of buffer per CPU and `events` (names under
    /// `events/sched/`) enabled. Tracing is off until [`Instance::start`]
    /// (or a child writes `1` to [`Instance::on_file`]).
    pub fn create(fs: &Tracefs, buffer_kb: u32, events: &[&str]) -> Result<Instance> {
        let dir = fs
            .root
            .join("instances")
            .join(format!("{PREFIX}{}", std::process::id()));
        fs::create_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        let mut inst = Instance {
            dir,
            pipe: None,
            partial: Vec::new(),
            buf: vec![0; 1 << 20],
        };
        inst.write("tracing_on", "0")?;
        inst.write("trace_clock", "mono")?;
        inst.write("buffer_size_kb", &buffer_kb.to_string())?;
        inst.write("options/event-fork", "1")?;
        for ev in events {
            inst.write(&format!("events/sched/{ev}/enable"), "1")?;
        }
        inst.write("trace", "")?;
        let pipe_path = inst.dir.join("trace_pipe");
        let pipe = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&pipe_path)
            .map_err(|e| Error::io(&pipe_path, e))?;
        inst.pipe = Some(pipe);
        Ok(inst)
    }

    /// Adds tasks to the ones recorded (an empty list records every task:
    /// list before [`Instance::start`]).
    pub fn follow(&self, tids: &[u32]) -> Result<()> {
        let path = self.dir.join("set_event_pid");
        let mut f = self.pid_file()?;
        // One write per thousand, each a line the kernel parses whole.
        for chunk in tids.chunks(1000) {
            let line: Vec<String> = chunk.iter().map(u32::to_string).collect();
            f.write_all(format!("{}\n", line.join(" ")).as_bytes())
                .map_err(|e| Error::io(&path, e))?;
        }
        Ok(())
    }

    /// `set_event_pid` opened for appending, close-on-exec: a child
    /// lists itself there before it execs (see [`start_child`]).
    pub fn pid_file(&self) -> Result<File> {
        let path = self.dir.join("set_event_pid");
        OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))
    }

    /// The `filter` file of one of the events enabled (see
    /// [`set_filter`]): kept by a caller that hands the instance on.
    pub fn filter_path(&self, event: &str) -> PathBuf {
        self.dir.join("events/sched").join(event).join("filter")
    }

    /// Starts recording.
    pub fn start(&self) -> Result<()> {
        self.write("tracing_on", "1")
    }

    /// `tracing_on` opened for writing, close-on-exec: a child started
    /// under the recording writes `1` there once it has listed itself.
    pub fn on_file(&self) -> Result<File> {
        let path = self.dir.join("tracing_on");
        OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        let path = self.dir.join(file);
        fs::write(&path, value).map_err(|e| Error::io(&path, e))
    }

    /// Reads what the kernel has, without waiting, and calls `line` for
    /// each complete line; returns the bytes read.
    pub fn drain(&mut self, mut line: impl FnMut(&str)) -> Result<usize> {
        let mut total = 0;
        let Some(pipe) = self.pipe.as_mut() else {
            return Ok(0);
        };
        loop {
            let n = match pipe.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.dir.join("trace_pipe"), e)),
            };
            total += n;
            let data = &self.buf[..n];
            let mut start = 0;
            for (i, &b) in data.iter().enumerate() {
                if b == b'\n' {
                    if self.partial.is_empty() {
                        line(&String::from_utf8_lossy(&data[start..i]));
                    } else {
                        self.partial.extend_from_slice(&data[start..i]);
                        line(&String::from_utf8_lossy(&self.partial));
                        self.partial.clear();
                    }
                    start = i + 1;
                }
            }
            self.partial.extend_from_slice(&data[start..]);
        }
        Ok(total)
    }

    /// Stops recording (what is in the buffers can still be drained).
    pub fn stop(&self) -> Result<()> {
        self.write("tracing_on", "0")
    }

    /// Events the kernel dropped or overwrote, over every CPU
    /// (`per_cpu/cpuN/stats`: `overrun` and `dropped events`).
    pub fn lost(&self) -> u64 {
        let Ok(cpus) = fs::read_dir(self.dir.join("per_cpu")) else {
            return 0;
        };
        let mut lost = 0;
        for c in cpus.flatten() {
            let Ok(text) = fs::read_to_string(c.path().join("stats")) else {
                continue;
            };
            for l in text.lines() {
                if let Some(v) = l
                    .strip_prefix("overrun:")
                    .or_else(|| l.strip_prefix("dropped events:"))
                {
                    lost += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
        lost
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        self.pipe = None;
        // Removing the instance frees its buffers and turns its events off.
        if let Err(e) = fs::remove_dir(&self.dir) {
            eprintln!(
                "corral: warning: cannot remove the trace instance {}: {e} (the next `corral record` removes it)",
                self.dir.display()
            );
        }
    }
}

/// For a child between fork and exec: writes its PID to `pids`
/// (`set_event_pid`, opened for appending), then `1` to `on`
/// (`tracing_on`), so that its exec and everything after are recorded.
/// Only async-signal-safe calls, no allocation.
pub fn start_child(pids: libc::c_int, on: libc::c_int) -> std::io::Result<()> {
    // SAFETY: getpid and write are async-signal-safe; the buffers are ours.
    let pid = unsafe { libc::getpid() } as u32;
    let mut buf = [0u8; 12];
    let mut i = buf.len() - 1;
    buf[i] = b'\n';
    let mut p = pid;
    loop {
        i -= 1;
        buf[i] = b'0' + (p % 10) as u8;
        p /= 10;
        if p == 0 {
            break;
        }
    }
    for (fd, bytes) in [(pids, &buf[i..]), (on, &b"1"[..])] {
        // SAFETY: as above.
        if unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Every thread of `pid` and of its descendants, as `/proc` lists them
/// now (threads' `children` files; a process that exits meanwhile is
/// skipped).
pub fn tree_tids(proc_root: &Path, pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    let mut seen = std::collections::HashSet::new();
    while let Some(p) = todo.pop() {
        if !seen.insert(p) {
            continue;
        }
        let Ok(tasks) = fs::read_dir(proc_root.join(p.to_string()).join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            out.push(tid);
            if let Ok(kids) = fs::read_to_string(t.path().join("children")) {
                todo.extend(
                    kids.split_whitespace()
                        .filter_map(|k| k.parse::<u32>().ok()),
                );
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Writes an event filter (the kernel's predicate syntax, evaluated
/// before an event is kept: what it drops costs the reader nothing) to
/// `path` from [`Instance::filter_path`].
pub fn set_filter(path: &Path, expr: &str) -> Result<()> {
    fs::write(path, expr).map_err(|e| Error::io(path, e))
}

/// A `sched_switch` filter that drops the switches between two of `tids`
/// (and to or from idle, pid 0): what is kept has a task outside them on
/// one side. `None` when the list would be longer than the kernel takes
/// in one write (a page).
pub fn switches_outside(tids: &[u32]) -> Option<String> {
    let side = |field: &str| {
        let mut ors: Vec<String> = vec![format!("{field} == 0")];
        ors.extend(tids.iter().map(|t| format!("{field} == {t}")));
        ors.join(" || ")
    };
    let expr = format!("!(({}) && ({}))", side("prev_pid"), side("next_pid"));
    (expr.len() < 4000).then_some(expr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracefs_is_found_in_mountinfo() {
        let text = "22 1 0:20 / /proc rw,nosuid - proc proc rw\n\
                    42 23 0:13 / /sys/kernel/tracing rw,relatime - tracefs none rw\n";
        assert_eq!(
            tracefs_mount(text),
            Some(PathBuf::from("/sys/kernel/tracing"))
        );
        assert_eq!(tracefs_mount("22 1 0:20 / /proc rw - proc proc rw\n"), None);
    }

    #[test]
    fn a_process_tree_s_threads() {
        let dir = tempfile::tempdir().unwrap();
        let fake = crate::fake::FakeHost::new(dir.path());
        let tids = tree_tids(&fake.paths().procfs, std::process::id());
        assert!(tids.is_empty(), "not in the fake tree");
        // This process, in the real /proc: at least this thread.
        let me = tree_tids(Path::new("/proc"), std::process::id());
        let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
        assert!(me.contains(&tid), "{me:?}");
    }

    #[test]
    fn a_switch_filter_names_both_sides_and_idle() {
        assert_eq!(
            switches_outside(&[7, 9]).unwrap(),
            "!((prev_pid == 0 || prev_pid == 7 || prev_pid == 9) && \
             (next_pid == 0 || next_pid == 7 || next_pid == 9))"
        );
        let many: Vec<u32> = (100_000..100_200).collect();
        assert_eq!(switches_outside(&many), None);
    }

    /// Two threads of ours ping-pong on one CPU: their switches to each
    /// other are traced, then, with the filter naming them, not.
    #[test]
    fn privileged_the_kernel_drops_the_switches_among_filtered_threads() {
        let name = "privileged_the_kernel_drops_the_switches_among_filtered_threads";
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIP {name}: needs root");
            return;
        }
        let fs = match Tracefs::open() {
            Ok(f) => f,
            Err(e) => {
                eprintln!("SKIP {name}: no tracefs ({e})");
                return;
            }
        };
        let mut inst = Instance::create(&fs, 1024, &["sched_switch"]).unwrap();
        let filter = inst.filter_path("sched_switch");
        inst.start().unwrap();
        let cpu = rustix::thread::sched_getcpu();
        // A pair on `cpu`: `a` hands to `b` and waits for it, 200 times,
        // once `filtered` (given their tids) has run; then the switches
        // traced with both sides in the pair.
        let mut pair = |filtered: bool| {
            let pin = move || {
                let mut set = rustix::thread::CpuSet::new();
                set.set(cpu);
                rustix::thread::sched_setaffinity(None, &set).unwrap();
                rustix::thread::gettid().as_raw_nonzero().get() as u32
            };
            let (to_b, from_a) = std::sync::mpsc::channel::<()>();
            let (to_a, from_b) = std::sync::mpsc::channel::<()>();
            let (tid_tx, tid_rx) = std::sync::mpsc::channel::<u32>();
            let go = std::sync::Arc::new(std::sync::Barrier::new(3));
            let (tb, gb) = (tid_tx.clone(), go.clone());
            let b = std::thread::spawn(move || {
                tb.send(pin()).unwrap();
                gb.wait();
                while from_a.recv().is_ok() {
                    let _ = to_a.send(());
                }
            });
            let ga = go.clone();
            let a = std::thread::spawn(move || {
                tid_tx.send(pin()).unwrap();
                ga.wait();
                for _ in 0..200 {
                    to_b.send(()).unwrap();
                    from_b.recv().unwrap();
                }
            });
            let tids = [tid_rx.recv().unwrap(), tid_rx.recv().unwrap()];
            if filtered {
                set_filter(&filter, &switches_outside(&tids).unwrap()).unwrap();
            }
            // (What the two did on their way to the barrier, before the
            // filter, is left out.)
            inst.drain(|_| {}).unwrap();
            go.wait();
            a.join().unwrap();
            b.join().unwrap();
            let ours = |f: &str, l: &str| tids.iter().any(|t| l.contains(&format!("{f}={t} ")));
            let mut n = 0;
            inst.drain(|l| n += (ours("prev_pid", l) && ours("next_pid", l)) as usize)
                .unwrap();
            n
        };
        let unfiltered = pair(false);
        assert!(unfiltered >= 200, "{unfiltered} switches within the pair");
        assert_eq!(pair(true), 0);
    }

    #[test]
    fn a_recorded_child_lists_itself_and_turns_tracing_on_before_exec() {
        let dir = tempfile::tempdir().unwrap();
        let (pids, on) = (dir.path().join("pids"), dir.path().join("on"));
        let (pf, of) = (File::create(&pids).unwrap(), File::create(&on).unwrap());
        let (pfd, ofd) = (pf.as_raw_fd(), of.as_raw_fd());
        let mut cmd = std::process::Command::new("true");
        // SAFETY: start_child is async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || start_child(pfd, ofd));
        }
        let mut child = cmd.spawn().unwrap();
        let pid = child.id();
        assert!(child.wait().unwrap().success());
        assert_eq!(fs::read_to_string(&pids).unwrap(), format!("{pid}\n"));
        assert_eq!(fs::read_to_string(&on).unwrap(), "1");
    }
}
