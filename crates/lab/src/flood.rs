//! `corral lab flood`: one unprivileged user opens many idle connections
//! to the daemon's socket (issue 14: 256 of them used to lock everybody
//! out, root included); how many the daemon keeps, how many it refuses,
//! and how fast root's `status` is answered meanwhile.
//!
//! The daemon is `corral run --scope-pid <this process>` with a socket of
//! its own; the clients are `corral lab work clients --uid UID`, a process
//! that drops to UID before connecting.

use crate::daemon_process::DaemonProcess;
use crate::error::{Error, Result};
use crate::work::ClientsResult;
use serde::Serialize;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Root's answer must come within this (issue 14's goal), ms.
pub const GOAL_MS: f64 = 100.0;

pub struct Options<'a> {
    pub clients: usize,
    pub uid: u32,
    /// `status` requests root makes while the clients are held.
    pub requests: u32,
    pub stop: &'a AtomicBool,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub clients: usize,
    pub uid: u32,
    /// Connections the daemon kept and refused.
    pub held: usize,
    pub refused: usize,
    /// Root's `status` round trips, ms, in order.
    pub status_ms: Vec<f64>,
    pub median_ms: f64,
    pub max_ms: f64,
    /// Root's requests that failed.
    pub failed: u32,
    pub goal_met: bool,
}

pub fn run(exe: &Path, o: &Options, progress: impl Fn(&str)) -> Result<Report> {
    let me = std::process::id();
    let dir = crate::groups::scratch_dir("flood")?;
    let socket = dir.join("corral.sock");
    let daemon = DaemonProcess::start(
        exe,
        me,
        &socket,
        None,
        None,
        &dir.join("daemon.log"),
        o.stop,
    )?;
    progress(&format!(
        "corral run (PID {}) answers on {}; {} clients as uid {} connect",
        daemon.pid().unwrap_or_default(),
        socket.display(),
        o.clients,
        o.uid
    ));
    let result = (|| -> Result<Report> {
        let mut child = Command::new(exe)
            .args(["lab", "work", "clients", "--socket"])
            .arg(&socket)
            .args(["--count", &o.clients.to_string()])
            .args(["--uid", &o.uid.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(Error::spawn("the clients"))?;
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut line));
        let held: Result<ClientsResult> = match read {
            Some(Ok(n)) if n > 0 => serde_json::from_str(&line).map_err(|e| Error::Command {
                program: "clients".into(),
                why: format!("said {line:?}: {e}"),
            }),
            _ => {
                let _ = child.kill();
                let out = child.wait_with_output().ok();
                return Err(Error::Command {
                    program: "the clients".into(),
                    why: format!(
                        "ended without a report: {}",
                        out.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                            .unwrap_or_default()
                    ),
                });
            }
        };
        let mut r = Report {
            clients: o.clients,
            uid: o.uid,
            ..Default::default()
        };
        match held {
            Ok(c) => {
                r.held = c.held;
                r.refused = c.refused;
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e);
            }
        }
        for _ in 0..o.requests {
            if o.stop.load(Ordering::SeqCst) {
                break;
            }
            let t0 = Instant::now();
            match daemon.status() {
                Ok(_) => r.status_ms.push(t0.elapsed().as_secs_f64() * 1e3),
                Err(_) => r.failed += 1,
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        let mut sorted = r.status_ms.clone();
        sorted.sort_by(f64::total_cmp);
        r.median_ms = sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN);
        r.max_ms = sorted.last().copied().unwrap_or(f64::NAN);
        r.goal_met = r.failed == 0 && !sorted.is_empty() && r.max_ms < GOAL_MS;
        Ok(r)
    })();
    let stopped = daemon.stop();
    let _ = std::fs::remove_dir_all(&dir);
    let r = result?;
    stopped?;
    Ok(r)
}
