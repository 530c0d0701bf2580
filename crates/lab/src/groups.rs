//! The experiments' own cgroups and the workload processes inside them.
//!
//! An experiment creates `corral-lab-<pid>/` under the cpu hierarchy (v1
//! `cpu`, or the v2 unified root), child groups with the shares it needs,
//! and starts each workload process directly inside its group: the child
//! writes `0` (itself) to the group's `cgroup.procs` between fork and
//! exec, so not one instruction of the workload runs elsewhere.
//! [`LabGroups`] kills the processes it started (by PID) and removes its
//! groups when dropped, whatever happened in between.

use crate::error::{Error, Result};
use corral_core::share::shares_to_weight;
use corral_linux::placer::Layout;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// An experiment's groups and processes.
#[derive(Debug)]
pub struct LabGroups {
    root: PathBuf,
    v1: bool,
    groups: Vec<PathBuf>,
    children: Vec<Child>,
}

impl LabGroups {
    /// Creates `<cpu hierarchy>/<name>`.
    pub fn create(layout: &Layout, name: &str) -> Result<LabGroups> {
        match layout {
            Layout::V1 { cpu, .. } => LabGroups::create_at(cpu, true, name),
            Layout::V2 { unified } => LabGroups::create_at(unified, false, name),
            Layout::Threads => Err(Error::Environment(
                "the lab's experiments make groups of their own and need a cgroup hierarchy \
                 (--cgroup v1 or v2)"
                    .into(),
            )),
        }
    }

    /// Creates `<mount>/<name>` in the hierarchy of the cpu controller
    /// mounted at `mount` (v1 `cpu` when `v1`, else the v2 root).
    pub fn create_at(mount: &Path, v1: bool, name: &str) -> Result<LabGroups> {
        assert!(
            name.starts_with("corral"),
            "lab groups live under a corral* root"
        );
        let root = mount.join(name);
        std::fs::create_dir(&root).map_err(Error::io(&root))?;
        if !v1 {
            let _ = std::fs::write(root.join("cgroup.subtree_control"), "+cpu");
        }
        Ok(LabGroups {
            root,
            v1,
            groups: Vec::new(),
            children: Vec::new(),
        })
    }

    /// Creates this experiment's own root, `corral-lab-<pid>`.
    pub fn for_experiment(layout: &Layout) -> Result<LabGroups> {
        let name = format!("corral-lab-{}", std::process::id());
        LabGroups::create(layout, &name)
    }

    /// The name the daemon's groups get in an experiment.
    pub fn daemon_group_name() -> String {
        format!("corral-test-lab-{}", std::process::id())
    }

    /// The root directory (the daemon's scope in experiments).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The cgroup path of `dir`, relative to the hierarchy's mount.
    pub fn cgroup_path(&self, name: &str) -> String {
        format!(
            "/{}/{name}",
            self.root.file_name().unwrap_or_default().to_string_lossy()
        )
    }

    /// Creates child group `name` with `shares` (v1 units).
    pub fn group(&mut self, name: &str, shares: u64) -> Result<PathBuf> {
        let dir = self.root.join(name);
        std::fs::create_dir(&dir).map_err(Error::io(&dir))?;
        self.groups.push(dir.clone());
        let (file, value) = if self.v1 {
            ("cpu.shares", shares)
        } else {
            ("cpu.weight", shares_to_weight(shares))
        };
        let file = dir.join(file);
        std::fs::write(&file, value.to_string()).map_err(Error::io(&file))?;
        Ok(dir)
    }

    /// Starts `cmd` inside `group` (stdout piped); returns its PID.
    pub fn spawn(&mut self, group: &Path, mut cmd: Command) -> Result<u32> {
        cmd.stdout(Stdio::piped()).stdin(Stdio::null());
        self.start(group, cmd)
    }

    /// Starts `cmd` inside `group` with the standard streams it was given;
    /// returns its PID.
    pub fn start(&mut self, group: &Path, mut cmd: Command) -> Result<u32> {
        let program = command_line(&cmd);
        let procs_path = group.join("cgroup.procs");
        let procs = CString::new(procs_path.as_os_str().as_bytes()).map_err(|e| Error::Io {
            path: procs_path.clone(),
            error: std::io::Error::other(e),
        })?;
        // SAFETY: between fork and exec only async-signal-safe work: two
        // raw system calls on a path built before the fork; no allocation.
        unsafe {
            cmd.pre_exec(move || {
                let fd = rustix::fs::open(
                    procs.as_c_str(),
                    rustix::fs::OFlags::WRONLY,
                    rustix::fs::Mode::empty(),
                )?;
                rustix::io::write(&fd, b"0")?;
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(Error::spawn(&program))?;
        let pid = child.id();
        self.children.push(child);
        Ok(pid)
    }

    /// Where process `pid` is among the children started here.
    fn index(&self, pid: u32) -> Result<usize> {
        self.children
            .iter()
            .position(|c| c.id() == pid)
            .ok_or_else(|| Error::Invalid(format!("process {pid} was not started here")))
    }

    /// Waits for process `pid` (started here) and returns its stdout.
    pub fn wait_output(&mut self, pid: u32) -> Result<String> {
        let i = self.index(pid)?;
        let child = self.children.remove(i);
        let out = child.wait_with_output().map_err(|e| unwaited(pid, e))?;
        if !out.status.success() {
            return Err(Error::Command {
                program: format!("workload {pid}"),
                why: format!("failed: {}", out.status),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Whether process `pid` (started here) has ended: its status once it
    /// has (it is reaped and forgotten), `None` while it runs.
    pub fn try_wait(&mut self, pid: u32) -> Result<Option<std::process::ExitStatus>> {
        let i = self.index(pid)?;
        let status = self.children[i].try_wait().map_err(|e| unwaited(pid, e))?;
        if status.is_some() {
            // Reaped by try_wait above.
            #[allow(clippy::zombie_processes)]
            self.children.remove(i);
        }
        Ok(status)
    }

    /// Sends `sig` to process `pid`, if it was started here and still runs.
    pub fn signal(&self, pid: u32, sig: rustix::process::Signal) -> Result<()> {
        self.index(pid)?;
        let p = rustix::process::Pid::from_raw(pid as i32)
            .ok_or_else(|| Error::Invalid(format!("process {pid} has no valid PID")))?;
        rustix::process::kill_process(p, sig).map_err(|e| Error::Command {
            program: format!("workload {pid}"),
            why: format!("could not be signalled: {e}"),
        })
    }

    /// Kills process `pid` (started here) and reaps it.
    pub fn kill(&mut self, pid: u32) {
        if let Some(i) = self.children.iter().position(|c| c.id() == pid) {
            let mut c = self.children.remove(i);
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kills every process started here and removes the groups.
    pub fn cleanup(&mut self) {
        for mut c in self.children.drain(..) {
            let _ = c.kill();
            let _ = c.wait();
        }
        // What our programs left in our groups (stress-ng's forked
        // workers outlive their parent's SIGKILL) is ours too: killed by
        // PID, read from our own groups only, until the group is empty.
        let mut dirs: Vec<PathBuf> = self.groups.drain(..).rev().collect();
        if self.root.exists() {
            dirs.push(self.root.clone());
        }
        for dir in dirs {
            let mut last = None;
            for _ in 0..100 {
                match std::fs::remove_dir(&dir) {
                    Ok(()) => {
                        last = None;
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        last = None;
                        break;
                    }
                    Err(e) => last = Some(e),
                }
                let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in procs
                    .split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok())
                {
                    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if let Some(e) = last {
                eprintln!("corral lab: could not remove {}: {e}", dir.display());
            }
        }
    }
}

impl Drop for LabGroups {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// A wait for process `pid` that failed.
fn unwaited(pid: u32, e: std::io::Error) -> Error {
    Error::Command {
        program: format!("workload {pid}"),
        why: format!("could not be waited for: {e}"),
    }
}

/// How `cmd` reads in a message: its program's file name and its
/// arguments, in backquotes (`` `corral lab work hog` ``).
pub fn command_line(cmd: &Command) -> String {
    let program = Path::new(cmd.get_program());
    let mut line = program
        .file_name()
        .unwrap_or(program.as_os_str())
        .to_string_lossy()
        .into_owned();
    for a in cmd.get_args() {
        line.push(' ');
        line.push_str(&a.to_string_lossy());
    }
    format!("`{line}`")
}

/// An experiment's scratch directory, `$TMPDIR/corral-lab-<what>-<pid>`,
/// created.
pub fn scratch_dir(what: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("corral-lab-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(Error::io(&dir))?;
    Ok(dir)
}

/// Parses the JSON line a workload program printed last.
pub fn parse_output<T: serde::de::DeserializeOwned>(out: &str) -> Result<T> {
    let line = out.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| Error::Command {
        program: "workload".into(),
        why: format!("output {line:?}: {e}"),
    })
}

impl LabGroups {
    /// Starts `n` CPU hogs (`corral lab work hog`) in `group`.
    pub fn spawn_hogs(&mut self, exe: &Path, group: &Path, n: u32) -> Result<()> {
        for _ in 0..n {
            let mut c = Command::new(exe);
            c.args(["lab", "work", "hog"]);
            self.spawn(group, c)?;
        }
        Ok(())
    }
}

/// The daemon configuration experiments use by default: the defaults with a
/// 250 ms interval, so classification settles within a second or two.
pub fn lab_config() -> corral_core::config::Config {
    let mut config = corral_core::config::Config::default();
    config.daemon.interval_ms = 250;
    config
}

/// CPU time of a thread or process so far, from schedstat, ns.
pub fn run_ns(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    corral_linux::sampler::parse_schedstat(text.as_bytes()).map(|(run, _, _)| run)
}
