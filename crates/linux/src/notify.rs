//! systemd's service notification protocol (`sd_notify(3)`): datagrams of
//! newline-separated `KEY=VALUE` lines sent to the socket named in
//! `$NOTIFY_SOCKET`, a path or, with a leading `@`, an abstract name.
//!
//! Written here rather than taken from a crate: the protocol is one
//! `sendto(2)` of a short string, and std's Unix sockets reach abstract
//! names. `READY=1` once the daemon manages, `STATUS=` a line for
//! `systemctl status`, `WATCHDOG=1` at least every `$WATCHDOG_USEC / 2`,
//! `STOPPING=1` when it starts putting threads back.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::Path;
use std::time::Duration;

/// The way back to the service manager that started this process.
#[derive(Debug)]
pub struct Notifier {
    sock: UnixDatagram,
    addr: SocketAddr,
    watchdog: Option<Duration>,
}

impl Notifier {
    /// From the environment systemd sets for a `Type=notify` service;
    /// `None` when this process was not started that way.
    pub fn from_env() -> io::Result<Option<Notifier>> {
        let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else {
            return Ok(None);
        };
        let watchdog = watchdog_from(
            std::env::var("WATCHDOG_USEC").ok().as_deref(),
            std::env::var("WATCHDOG_PID").ok().as_deref(),
            std::process::id(),
        );
        Notifier::new(socket.as_encoded_bytes(), watchdog).map(Some)
    }

    /// To the socket `socket` (`@name` for an abstract one).
    pub fn new(socket: &[u8], watchdog: Option<Duration>) -> io::Result<Notifier> {
        let addr = match socket.strip_prefix(b"@") {
            Some(name) => SocketAddr::from_abstract_name(name)?,
            None => {
                let path = std::str::from_utf8(socket).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidInput, "$NOTIFY_SOCKET is not UTF-8")
                })?;
                SocketAddr::from_pathname(Path::new(path))?
            }
        };
        Ok(Notifier {
            sock: UnixDatagram::unbound()?,
            addr,
            watchdog,
        })
    }

    /// The watchdog's timeout (`WatchdogSec=`), when it watches this
    /// process: a keep-alive is due at least every half of it.
    pub fn watchdog(&self) -> Option<Duration> {
        self.watchdog
    }

    /// Sends `state` (`READY=1`, `STATUS=…`, …; lines joined by `\n`).
    pub fn send(&self, state: &str) -> io::Result<()> {
        self.sock
            .send_to_addr(state.as_bytes(), &self.addr)
            .map(|_| ())
    }
}

/// The watchdog timeout from `$WATCHDOG_USEC`, for process `pid` when
/// `$WATCHDOG_PID` is unset or names it (a child that inherited the
/// variables is not watched).
fn watchdog_from(usec: Option<&str>, for_pid: Option<&str>, pid: u32) -> Option<Duration> {
    if for_pid.is_some_and(|p| p.trim().parse::<u32>().ok() != Some(pid)) {
        return None;
    }
    let usec: u64 = usec?.trim().parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_watches_only_the_named_process() {
        let d = Some(Duration::from_secs(30));
        assert_eq!(watchdog_from(Some("30000000"), None, 7), d);
        assert_eq!(watchdog_from(Some("30000000"), Some("7"), 7), d);
        assert_eq!(watchdog_from(Some("30000000"), Some("8"), 7), None);
        assert_eq!(watchdog_from(Some("0"), None, 7), None);
        assert_eq!(watchdog_from(Some("soon"), None, 7), None);
        assert_eq!(watchdog_from(None, None, 7), None);
    }

    #[test]
    fn sends_datagrams_to_a_path_and_to_an_abstract_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let server = UnixDatagram::bind(&path).unwrap();
        let n = Notifier::new(path.to_str().unwrap().as_bytes(), None).unwrap();
        n.send("READY=1\nSTATUS=managing").unwrap();
        let mut buf = [0u8; 64];
        let len = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1\nSTATUS=managing");

        let name = format!("corral-test-notify-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let server = UnixDatagram::bind_addr(&addr).unwrap();
        let n = Notifier::new(format!("@{name}").as_bytes(), None).unwrap();
        n.send("WATCHDOG=1").unwrap();
        let len = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"WATCHDOG=1");
    }
}
