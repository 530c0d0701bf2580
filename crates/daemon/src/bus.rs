//! The socket's verbs on the D-Bus system bus: `org.corral.Daemon1`.
//!
//! Desktop frameworks and sandboxed apps reach daemons such as gamemode
//! and system76-scheduler over the system bus, which names every caller:
//! the bus daemon tells who sent a message (`GetConnectionCredentials`,
//! the kernel's SO_PEERCRED of the caller's bus connection), so a boost
//! checks the caller's uid as the socket does. Each method hands its
//! request to the control loop through a [`MsgSender`], as a socket client
//! would, and waits for the answer; the loop stays the only owner of the
//! daemon's state.
//!
//! ```text
//! bus name  org.corral.Daemon1      object  /org/corral/Daemon1
//! Boost(u tid, t max_ms) -> (t max_ms, b extended, i cpu)   max_ms 0: the default; cpu -1: none
//! Unboost(u tid)
//! Status() -> s   Explain(u tid) -> s   Metrics() -> s      (the socket's JSON / text)
//! property ProtocolVersion u
//! ```
//!
//! Errors: `org.freedesktop.DBus.Error.AccessDenied` (another user's
//! thread), `…LimitsExceeded` (the rate limit), `…Failed` (the rest), each
//! with the daemon's words.

use crate::api::{BoostReply, Command, Response, PROTOCOL_VERSION};
use crate::server::{Msg, MsgSender};
use crate::Caller;
use std::sync::mpsc;
use std::time::Duration;
use zbus::fdo;
use zbus::message::Header;

pub const BUS_NAME: &str = "org.corral.Daemon1";
pub const OBJECT_PATH: &str = "/org/corral/Daemon1";

/// The loop answers between steps; a step takes milliseconds.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

struct Daemon1 {
    loop_: MsgSender,
}

/// Who sent the message, as the bus daemon knows it.
async fn caller(conn: &zbus::Connection, hdr: &Header<'_>) -> fdo::Result<Caller> {
    let sender = hdr
        .sender()
        .ok_or_else(|| fdo::Error::AccessDenied("the message names no sender".into()))?;
    let bus = fdo::DBusProxy::new(conn).await?;
    let cred = bus
        .get_connection_credentials(sender.clone().into())
        .await?;
    let uid = cred
        .unix_user_id()
        .ok_or_else(|| fdo::Error::AccessDenied("the bus does not know the caller's uid".into()))?;
    Ok(Caller {
        uid,
        pid: cred.process_id().unwrap_or(0),
    })
}

/// The daemon's refusal as a D-Bus error.
fn error(message: String) -> fdo::Error {
    if message.starts_with("permission denied") {
        fdo::Error::AccessDenied(message)
    } else if message.starts_with("rate limit") {
        fdo::Error::LimitsExceeded(message)
    } else {
        fdo::Error::Failed(message)
    }
}

impl Daemon1 {
    /// Sends `cmd` to the loop and waits for its answer.
    fn ask(&self, cmd: Command, caller: Caller) -> fdo::Result<serde_json::Value> {
        let (tx, rx) = mpsc::channel();
        self.loop_
            .send(Msg::Request(cmd, caller, tx))
            .map_err(|_| fdo::Error::Failed("the daemon is stopping".into()))?;
        let r: Response = rx
            .recv_timeout(ANSWER_TIMEOUT)
            .map_err(|_| fdo::Error::Failed("the control loop did not answer".into()))?;
        if r.ok {
            Ok(r.result.unwrap_or_default())
        } else {
            Err(error(r.error.unwrap_or_else(|| "refused".into())))
        }
    }

    fn ask_text(&self, cmd: Command, caller: Caller) -> fdo::Result<String> {
        let v = self.ask(cmd, caller)?;
        Ok(match v {
            serde_json::Value::String(s) => s,
            v => v.to_string(),
        })
    }
}

#[zbus::interface(name = "org.corral.Daemon1")]
impl Daemon1 {
    /// Boosts thread `tid` for at most `max_ms` (0: the configured default).
    #[zbus(out_args("max_ms", "extended", "cpu"))]
    async fn boost(
        &self,
        tid: u32,
        max_ms: u64,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> fdo::Result<(u64, bool, i32)> {
        let caller = caller(conn, &hdr).await?;
        let max_ms = (max_ms > 0).then_some(max_ms);
        let v = self.ask(Command::Boost { tid, max_ms }, caller)?;
        let r: BoostReply = serde_json::from_value(v)
            .map_err(|e| fdo::Error::Failed(format!("unexpected answer: {e}")))?;
        Ok((r.max_ms, r.extended, r.cpu.map_or(-1, |c| c as i32)))
    }

    async fn unboost(
        &self,
        tid: u32,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> fdo::Result<()> {
        let caller = caller(conn, &hdr).await?;
        self.ask(Command::Unboost { tid }, caller).map(|_| ())
    }

    /// `status` as JSON (docs/api.md).
    async fn status(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> fdo::Result<String> {
        let caller = caller(conn, &hdr).await?;
        self.ask_text(Command::Status, caller)
    }

    /// `explain` of one thread as JSON.
    async fn explain(
        &self,
        tid: u32,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> fdo::Result<String> {
        let caller = caller(conn, &hdr).await?;
        self.ask_text(Command::Explain { tid }, caller)
    }

    /// The Prometheus text exposition.
    async fn metrics(
        &self,
        #[zbus(header)] hdr: Header<'_>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> fdo::Result<String> {
        let caller = caller(conn, &hdr).await?;
        self.ask_text(Command::Metrics, caller)
    }

    /// The socket protocol's version these verbs follow.
    #[zbus(property)]
    fn protocol_version(&self) -> u32 {
        PROTOCOL_VERSION
    }
}

/// Serves `org.corral.Daemon1` on the system bus (`DBUS_SYSTEM_BUS_ADDRESS`
/// when set) until the returned connection is dropped. Fails when there
/// is no system bus or its policy does not let this process own the name
/// (`dist/dbus/org.corral.Daemon1.conf` lets root own it).
pub fn serve(loop_: MsgSender) -> zbus::Result<zbus::blocking::Connection> {
    zbus::blocking::connection::Builder::system()?
        .method_timeout(ANSWER_TIMEOUT)
        .name(BUS_NAME)?
        .serve_at(OBJECT_PATH, Daemon1 { loop_ })?
        .build()
}
