//! The Unix socket and the loop that serves it between steps.
//!
//! The listener runs on its own thread and hands each request, with a
//! channel for the answer, to the control loop, which owns the daemon and
//! answers between steps. Nothing else touches the daemon's state, so there
//! are no locks. A stop message (from a signal handler, say) ends the loop.

use crate::api::{parse_request, Command, Request, Response, PROTOCOL_VERSION};
use crate::{Caller, Daemon, StepReport};
use corral_core::host::Host;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// A message to the control loop.
pub enum Msg {
    Request(Command, Caller, Sender<Response>),
    Stop(String),
}

/// The socket file; removed on drop.
pub struct SocketGuard {
    path: PathBuf,
}

impl Drop for SocketGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds `path` (replacing a stale socket no one answers on) and serves it
/// on a thread. The socket is world-readable and -writable (0666): status
/// and explain reveal only what /proc already shows every user.
pub fn listen(path: &Path, tx: Sender<Msg>) -> std::io::Result<SocketGuard> {
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("{} is served by another corral daemon", path.display()),
            ));
        }
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    std::thread::Builder::new()
        .name("corral-socket".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let tx = tx.clone();
                let _ = std::thread::Builder::new()
                    .name("corral-client".into())
                    .spawn(move || serve_client(stream, tx));
            }
        })?;
    Ok(SocketGuard {
        path: path.to_path_buf(),
    })
}

/// Who is at the other end of the socket (SO_PEERCRED: the kernel's word,
/// not the client's).
fn peer(stream: &UnixStream) -> Option<Caller> {
    let cred = rustix::net::sockopt::socket_peercred(stream).ok()?;
    Some(Caller {
        uid: cred.uid.as_raw(),
        pid: cred.pid.as_raw_nonzero().get() as u32,
    })
}

fn serve_client(stream: UnixStream, tx: Sender<Msg>) {
    let Some(caller) = peer(&stream) else {
        return;
    };
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let reader = BufReader::new(stream);
    for line in reader.lines() {
        let Ok(line) = line else { return };
        if line.trim().is_empty() {
            continue;
        }
        let response = match parse_request(&line) {
            Err(e) => Response::error(e),
            Ok(cmd) => {
                let (reply_tx, reply_rx) = std::sync::mpsc::channel();
                if tx.send(Msg::Request(cmd, caller, reply_tx)).is_err() {
                    Response::error("the daemon is shutting down")
                } else {
                    reply_rx
                        .recv_timeout(Duration::from_secs(10))
                        .unwrap_or_else(|_| Response::error("the daemon did not answer in 10 s"))
                }
            }
        };
        let mut text = serde_json::to_string(&response).unwrap_or_default();
        text.push('\n');
        if writer.write_all(text.as_bytes()).is_err() {
            return;
        }
    }
}

/// Sends one request to the daemon at `path` and returns its response.
pub fn request(path: &Path, command: Command) -> std::io::Result<Response> {
    let mut stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(Duration::from_secs(15)))?;
    let mut line = serde_json::to_string(&Request {
        v: PROTOCOL_VERSION,
        command,
    })?;
    line.push('\n');
    stream.write_all(line.as_bytes())?;
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply)?;
    serde_json::from_str(&reply)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Asks the daemon at `path` to boost `tid` (for clients such as a
/// framework's input dispatcher); `Err` carries the daemon's reason.
pub fn boost(path: &Path, tid: u32, max_ms: Option<u64>) -> Result<(), String> {
    let r = request(path, Command::Boost { tid, max_ms })
        .map_err(|e| format!("cannot reach the daemon at {}: {e}", path.display()))?;
    if r.ok {
        Ok(())
    } else {
        Err(r.error.unwrap_or_else(|| "refused".into()))
    }
}

/// Answers one request from the daemon's state.
pub fn answer<H: Host>(daemon: &mut Daemon<H>, cmd: Command, caller: Caller) -> Response {
    match cmd {
        Command::Status => Response::ok(daemon.status()),
        Command::Explain { tid } => match daemon.explain(tid) {
            Ok(e) => Response::ok(e),
            Err(e) => Response::error(e),
        },
        Command::Boost { tid, max_ms } => match daemon.boost(tid, max_ms, caller) {
            Ok(r) => Response::ok(r),
            Err(e) => Response::error(e),
        },
        Command::Unboost { tid } => match daemon.unboost(tid, caller) {
            Ok(()) => Response::ok(serde_json::json!({ "tid": tid })),
            Err(e) => Response::error(e),
        },
    }
}

/// How often boosted threads are looked at.
const BOOST_POLL: Duration = Duration::from_millis(1);

/// Why the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// `once` was asked and one step ran.
    Once,
    /// A stop message arrived.
    Stopped(String),
}

/// Runs steps every `interval` until a stop message, answering requests in
/// between; `on_step` sees each step's report. Restoring the host is the
/// caller's choice ([`Daemon::shutdown`]).
pub fn run<H: Host>(
    daemon: &mut Daemon<H>,
    rx: &Receiver<Msg>,
    interval: Duration,
    once: bool,
    mut on_step: impl FnMut(&StepReport, &Daemon<H>),
) -> Result<Ended, H::Error> {
    loop {
        let started = Instant::now();
        let report = daemon.step()?.clone();
        on_step(&report, daemon);
        if once {
            return Ok(Ended::Once);
        }
        let deadline = started + interval;
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            // While boosts are in force, look at the boosted threads every
            // millisecond: a boost ends as soon as its thread blocks.
            let wait = if daemon.has_boosts() {
                (deadline - now).min(BOOST_POLL)
            } else {
                deadline - now
            };
            let msg = rx.recv_timeout(wait);
            if daemon.has_boosts() {
                daemon.check_boosts();
            }
            match msg {
                Ok(Msg::Request(cmd, caller, reply)) => {
                    let _ = reply.send(answer(daemon, cmd, caller));
                    daemon.settle();
                }
                Ok(Msg::Stop(why)) => return Ok(Ended::Stopped(why)),
                Err(RecvTimeoutError::Timeout) => {
                    if Instant::now() >= deadline {
                        break;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // No one can send any more: just keep time.
                    std::thread::sleep(deadline - now);
                    break;
                }
            }
        }
    }
}
