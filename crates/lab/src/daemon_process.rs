//! The daemon as a user starts it: `corral run` as a process of its own,
//! scoped with `--scope-pid` to the experiment's process (its ancestor, as
//! a user's shell is when they run `corral run --scope-pid $$`), answering
//! on a socket of its own, its output in a log file. It is stopped with
//! SIGTERM, as a service manager stops it, and its exit status checked.
//!
//! Its groups get the experiment's name (`--group-name
//! corral-test-lab-<pid>`), so that it never touches the groups of a corral
//! that may be running on the machine.

use crate::error::{Error, Result};
use crate::groups::LabGroups;
use corral_daemon::api::{Command as Request, Explain, Status};
use corral_daemon::server;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the daemon may take to answer its first `status`.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// How long it may take to put everything back after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// A running `corral run`.
#[derive(Debug)]
pub struct DaemonProcess {
    child: Option<Child>,
    socket: PathBuf,
    log: PathBuf,
}

impl DaemonProcess {
    /// Starts `exe run --scope-pid <scope_pid> --socket <socket>` (with
    /// `--interval` and `--config` when given), its stdout and stderr in
    /// `log`, and waits until it answers `status`.
    pub fn start(
        exe: &Path,
        scope_pid: u32,
        socket: &Path,
        interval_ms: Option<u64>,
        config: Option<&Path>,
        log: &Path,
        stop: &AtomicBool,
    ) -> Result<DaemonProcess> {
        let file = std::fs::File::create(log).map_err(Error::io(log))?;
        let file2 = file.try_clone().map_err(Error::io(log))?;
        let mut cmd = Command::new(exe);
        cmd.args(["run", "--scope-pid", &scope_pid.to_string(), "--socket"])
            .arg(socket)
            .args(["--group-name", &LabGroups::daemon_group_name()]);
        if let Some(ms) = interval_ms {
            cmd.args(["--interval", &ms.to_string()]);
        }
        if let Some(config) = config {
            cmd.arg("--config").arg(config);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(file2)
            .spawn()
            .map_err(Error::spawn(&format!("{} run", exe.display())))?;
        let mut d = DaemonProcess {
            child: Some(child),
            socket: socket.to_path_buf(),
            log: log.to_path_buf(),
        };
        let t0 = Instant::now();
        loop {
            if d.status().is_ok() {
                return Ok(d);
            }
            if let Some(s) = d.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                d.child = None;
                return Err(Error::Daemon(format!(
                    "corral run ended before it answered ({s}); its log, {}:\n{}",
                    d.log.display(),
                    tail(&d.log, 10)
                )));
            }
            if stop.load(Ordering::SeqCst) {
                return Err(Error::Interrupted);
            }
            if t0.elapsed() > READY_TIMEOUT {
                return Err(Error::Daemon(format!(
                    "corral run did not answer on {} within {} s; its log: {}",
                    d.socket.display(),
                    READY_TIMEOUT.as_secs(),
                    d.log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The daemon's PID.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    fn ask(&self, cmd: Request) -> Result<serde_json::Value> {
        let r = server::request(&self.socket, cmd).map_err(|e| {
            Error::Daemon(format!(
                "cannot reach the daemon at {}: {e}",
                self.socket.display()
            ))
        })?;
        if !r.ok {
            return Err(Error::Daemon(
                r.error.unwrap_or_else(|| "the daemon refused".into()),
            ));
        }
        Ok(r.result.unwrap_or_default())
    }

    /// `status`, as `corral status --socket …` asks it.
    pub fn status(&self) -> Result<Status> {
        serde_json::from_value(self.ask(Request::Status)?)
            .map_err(|e| Error::Daemon(format!("unexpected status from the daemon: {e}")))
    }

    /// `explain TID`.
    pub fn explain(&self, tid: u32) -> Result<Explain> {
        serde_json::from_value(self.ask(Request::Explain { tid })?)
            .map_err(|e| Error::Daemon(format!("unexpected explain from the daemon: {e}")))
    }

    /// SIGTERM (by PID); `Ok` once it has exited with status 0, which it
    /// does after putting every thread back and removing its groups.
    pub fn stop(mut self) -> Result<()> {
        match self.terminate() {
            Some(s) if s.success() => Ok(()),
            Some(s) => Err(Error::Daemon(format!(
                "corral run ended with {s} after SIGTERM; its log, {}:\n{}",
                self.log.display(),
                tail(&self.log, 10)
            ))),
            None => Err(Error::Daemon(format!(
                "corral run did not end within {} s of SIGTERM (killed); its log: {}",
                STOP_TIMEOUT.as_secs(),
                self.log.display()
            ))),
        }
    }

    /// SIGKILL (by PID), as a crash or the OOM killer ends it: nothing is
    /// put back. Waits for it to be gone.
    pub fn kill9(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(&self.socket);
    }

    /// SIGTERM, then SIGKILL if it has not ended after [`STOP_TIMEOUT`];
    /// its exit status when it ended by itself.
    fn terminate(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let status = match child.try_wait() {
            Ok(Some(s)) => Some(s),
            _ => {
                if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                }
                let t0 = Instant::now();
                loop {
                    match child.try_wait() {
                        Ok(Some(s)) => break Some(s),
                        Ok(None) if t0.elapsed() < STOP_TIMEOUT => {
                            std::thread::sleep(Duration::from_millis(10))
                        }
                        _ => {
                            let _ = child.kill();
                            let _ = child.wait();
                            break None;
                        }
                    }
                }
            }
        };
        // It removes its socket when it ends normally; not when killed.
        let _ = std::fs::remove_file(&self.socket);
        status
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        if self.child.is_some() && self.terminate().is_none_or(|s| !s.success()) {
            eprintln!(
                "corral lab: corral run did not end cleanly; its log: {}",
                self.log.display()
            );
        }
    }
}

/// The last `n` lines of a text file (for error messages).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
