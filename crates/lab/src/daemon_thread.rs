//! The daemon, run in-process on a thread of its own during an experiment,
//! scoped to the experiment's cgroup. It is the same loop `corral run`
//! runs; only the thread and the scope differ.

use crate::error::{Error, Result};
use corral_core::config::Config;
use corral_daemon::api::{Command, Explain, Status};
use corral_daemon::server::{self, Msg, MsgSender};
use corral_daemon::Daemon;
use corral_linux::host::LinuxHost;
use corral_linux::placer::Layout;
use corral_linux::sampler::Scope;
use corral_linux::HostPaths;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running daemon.
pub struct DaemonThread {
    tx: MsgSender,
    _socket: Option<server::SocketGuard>,
    handle: JoinHandle<Result<()>>,
}

impl DaemonThread {
    /// Starts the daemon on `scope` with its groups under `group_name`;
    /// returns once it is ready (or why it could not start).
    pub fn start(
        paths: HostPaths,
        layout: Layout,
        scope: Vec<PathBuf>,
        group_name: String,
        config: Config,
        socket: Option<&std::path::Path>,
    ) -> Result<DaemonThread> {
        let (tx, mut inbox) = server::channel().map_err(Error::spawn("the daemon"))?;
        let guard = match socket {
            Some(p) => Some(
                server::listen(p, &mut inbox)
                    .map_err(Error::spawn(&format!("the daemon on {}", p.display())))?,
            ),
            None => None,
        };
        // Sent once the daemon is ready; dropped unsent when it could not
        // start, whose error the thread then returns.
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("corral-daemon".into())
            .spawn(move || -> Result<()> {
                let interval = Duration::from_millis(config.daemon.interval_ms);
                let mut daemon =
                    LinuxHost::new(paths, Scope::Cgroups(scope), layout, &group_name, false)
                        .and_then(|h| Daemon::new(h, config))
                        .map_err(Error::host("cannot start the daemon"))?;
                let _ = ready_tx.send(());
                let verbose = std::env::var_os("CORRAL_LAB_VERBOSE").is_some();
                let ran = server::run(&mut daemon, &mut inbox, interval, false, |r, _| {
                    for e in &r.errors {
                        eprintln!("corral lab: daemon: error: {e}");
                    }
                    if verbose {
                        for c in &r.changes {
                            eprintln!("corral lab: daemon step {}: {c:?}", r.step);
                        }
                    }
                });
                let restored = daemon.shutdown();
                ran.map_err(Error::host("the daemon stopped"))?;
                restored.map_err(Error::host("restore failed"))
            })
            .map_err(Error::spawn("the daemon"))?;
        match ready_rx.recv() {
            Ok(()) => Ok(DaemonThread {
                tx,
                _socket: guard,
                handle,
            }),
            Err(_) => match handle.join() {
                Ok(Err(e)) => Err(e),
                _ => Err(Error::Daemon(
                    "cannot start the daemon: the daemon thread died".into(),
                )),
            },
        }
    }

    fn ask(&self, cmd: Command) -> Option<serde_json::Value> {
        let (reply_tx, reply_rx) = mpsc::channel();
        let me = corral_daemon::Caller {
            uid: rustix::process::geteuid().as_raw(),
            pid: std::process::id(),
        };
        self.tx.send(Msg::Request(cmd, me, reply_tx)).ok()?;
        let r = reply_rx.recv_timeout(Duration::from_secs(10)).ok()?;
        r.result
    }

    /// The daemon's status now.
    pub fn status(&self) -> Option<Status> {
        serde_json::from_value(self.ask(Command::Status)?).ok()
    }

    /// The daemon's view of one thread.
    pub fn explain(&self, tid: u32) -> Option<Explain> {
        serde_json::from_value(self.ask(Command::Explain { tid })?).ok()
    }

    /// Stops the daemon, which puts every thread back and removes its groups.
    pub fn stop(self) -> Result<()> {
        let _ = self.tx.send(Msg::Stop("experiment over".into()));
        self.handle
            .join()
            .map_err(|_| Error::Daemon("the daemon thread panicked".into()))?
    }
}
