//! The Unix socket and the loop that serves it between steps.
//!
//! One thread does everything, as an event loop (epoll): it runs a step
//! every interval, looks at boosted threads every millisecond while boosts
//! are in force, accepts connections, reads request lines, answers them
//! from the daemon's state and writes the replies. Nothing else touches
//! the daemon's state, so there are no locks, and a request costs two
//! wake-ups (the loop's and the client's) — a thread per client and a
//! channel between them cost ~0.5 ms more per boost on this VM.
//!
//! Other threads (a signal handler, an experiment in the same process)
//! reach the loop through a [`MsgSender`], which wakes it with an eventfd.

use crate::api::{parse_request, Command, Request, Response, PROTOCOL_VERSION};
use crate::schedule::{Due, Schedule};
use crate::{Caller, Daemon, StepReport};
use corral_core::host::Host;
use rustix::event::epoll;
use rustix::event::{eventfd, EventfdFlags};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A message to the control loop from another thread.
pub enum Msg {
    Request(Command, Caller, Sender<Response>),
    Stop(String),
}

/// Sends messages to the loop and wakes it.
#[derive(Clone)]
pub struct MsgSender {
    tx: Sender<Msg>,
    wake: Arc<OwnedFd>,
}

impl MsgSender {
    pub fn send(&self, msg: Msg) -> Result<(), mpsc::SendError<Msg>> {
        self.tx.send(msg)?;
        let _ = rustix::io::write(&*self.wake, &1u64.to_ne_bytes());
        Ok(())
    }
}

/// At most this many clients at once; more are told so and closed (each
/// client holds a file descriptor). Root is always served: when the table
/// is full, the client idle the longest gives way to it.
const MAX_CLIENTS: usize = 256;
/// At most this many clients of one non-root user at once, so one user's
/// idle connections cannot lock out the others.
pub const MAX_CLIENTS_PER_UID: usize = 16;
/// A client that sends nothing and takes no output this long is closed
/// (an idle or a slow client; corral's own clients send one line and read
/// one reply).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest request line.
const MAX_LINE: usize = 64 * 1024;

const WAKE: u64 = 0;
const LISTENER: u64 = 1;

struct Client {
    stream: UnixStream,
    caller: Caller,
    input: Vec<u8>,
    output: Vec<u8>,
    /// Whether the loop waits for the socket to take more output.
    writing: bool,
    /// It closed its side: it goes once its replies are written.
    closing: bool,
    /// When it last sent a byte or took one.
    active: Instant,
}

/// The loop's inbox: messages from other threads and, once [`listen`] was
/// called, the socket and its clients.
pub struct Inbox {
    rx: Receiver<Msg>,
    wake: Arc<OwnedFd>,
    epoll: OwnedFd,
    listener: Option<UnixListener>,
    clients: HashMap<u64, Client>,
    next_token: u64,
}

/// A sender for other threads and the inbox the loop reads.
pub fn channel() -> std::io::Result<(MsgSender, Inbox)> {
    let (tx, rx) = mpsc::channel();
    let wake = Arc::new(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?);
    let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    epoll::add(
        &epoll,
        &*wake,
        epoll::EventData::new_u64(WAKE),
        epoll::EventFlags::IN,
    )?;
    Ok((
        MsgSender {
            tx,
            wake: wake.clone(),
        },
        Inbox {
            rx,
            wake,
            epoll,
            listener: None,
            clients: HashMap::new(),
            next_token: LISTENER + 1,
        },
    ))
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

/// Binds `path` (replacing a stale socket no one answers on); the loop
/// reading `inbox` serves it. The socket is world-readable and -writable
/// (0666): status and explain reveal only what /proc already shows every
/// user, and boost checks the caller (SO_PEERCRED).
pub fn listen(path: &Path, inbox: &mut Inbox) -> std::io::Result<SocketGuard> {
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(std::io::Error::new(
                ErrorKind::AddrInUse,
                format!("{} is served by another corral daemon", path.display()),
            ));
        }
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    listener.set_nonblocking(true)?;
    epoll::add(
        &inbox.epoll,
        &listener,
        epoll::EventData::new_u64(LISTENER),
        epoll::EventFlags::IN,
    )?;
    inbox.listener = Some(listener);
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

/// What the loop must do after a wait.
enum Event {
    Msg(Msg),
    /// A request line from a socket client.
    Line(u64, String),
    /// A client that may take more output.
    Writable(u64),
}

impl Inbox {
    /// Waits up to `timeout` for something to do; returns what came.
    fn wait(&mut self, timeout: Duration) -> std::io::Result<Vec<Event>> {
        let mut out = Vec::new();
        // Messages first: a stop must not wait behind a busy socket.
        while let Ok(m) = self.rx.try_recv() {
            out.push(Event::Msg(m));
        }
        let ts = rustix::time::Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: timeout.subsec_nanos() as i64,
        };
        let ts = if out.is_empty() {
            ts
        } else {
            rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            }
        };
        // (epoll's events hold a pointer-sized union, which is not Send:
        // a fresh buffer keeps the inbox movable to the loop's thread.)
        let mut events: Vec<epoll::Event> = Vec::with_capacity(32);
        match epoll::wait(
            &self.epoll,
            rustix::buffer::spare_capacity(&mut events),
            Some(&ts),
        ) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(out),
            Err(e) => return Err(e.into()),
        }
        let ready: Vec<(u64, epoll::EventFlags)> =
            events.iter().map(|e| (e.data.u64(), e.flags)).collect();
        for (token, flags) in ready {
            match token {
                WAKE => {
                    let mut buf = [0u8; 8];
                    let _ = rustix::io::read(&*self.wake, &mut buf);
                    while let Ok(m) = self.rx.try_recv() {
                        out.push(Event::Msg(m));
                    }
                }
                LISTENER => self.accept(),
                t => {
                    if flags.contains(epoll::EventFlags::OUT) {
                        out.push(Event::Writable(t));
                    }
                    if flags.intersects(
                        epoll::EventFlags::IN | epoll::EventFlags::HUP | epoll::EventFlags::ERR,
                    ) {
                        self.read(t, &mut out);
                    }
                }
            }
        }
        Ok(out)
    }

    fn accept(&mut self) {
        loop {
            let Some(listener) = &self.listener else {
                return;
            };
            let stream = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => return,
            };
            let Some(caller) = peer(&stream) else {
                continue;
            };
            let refuse = |why: String| {
                let mut line = serde_json::to_string(&Response::error(why)).unwrap_or_default();
                line.push('\n');
                let _ = stream.set_nonblocking(true);
                let _ = (&stream).write(line.as_bytes());
            };
            if caller.uid != 0
                && self
                    .clients
                    .values()
                    .filter(|c| c.caller.uid == caller.uid)
                    .count()
                    >= MAX_CLIENTS_PER_UID
            {
                refuse(format!(
                    "too many connections from uid {} ({MAX_CLIENTS_PER_UID}): close some and try again",
                    caller.uid
                ));
                continue;
            }
            if self.clients.len() >= MAX_CLIENTS {
                // Root gets the place of the longest-idle client.
                let idlest = self
                    .clients
                    .iter()
                    .filter(|(_, c)| c.caller.uid != 0)
                    .min_by_key(|(_, c)| c.active)
                    .map(|(&t, _)| t);
                match idlest {
                    Some(t) if caller.uid == 0 => self.close(t),
                    _ => {
                        refuse(format!("too many clients ({MAX_CLIENTS}): try again"));
                        continue;
                    }
                }
            }
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let token = self.next_token;
            self.next_token += 1;
            if epoll::add(
                &self.epoll,
                &stream,
                epoll::EventData::new_u64(token),
                epoll::EventFlags::IN | epoll::EventFlags::RDHUP,
            )
            .is_err()
            {
                continue;
            }
            self.clients.insert(
                token,
                Client {
                    stream,
                    caller,
                    input: Vec::new(),
                    output: Vec::new(),
                    writing: false,
                    closing: false,
                    active: Instant::now(),
                },
            );
        }
    }

    /// Reads what a client sent; complete lines become events. A client
    /// that closed (with nothing left to answer) or broke the rules goes.
    fn read(&mut self, token: u64, out: &mut Vec<Event>) {
        let Some(c) = self.clients.get_mut(&token) else {
            return;
        };
        let mut buf = [0u8; 4096];
        let mut closed = false;
        loop {
            match c.stream.read(&mut buf) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(n) => {
                    c.input.extend_from_slice(&buf[..n]);
                    c.active = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => {
                    closed = true;
                    break;
                }
            }
            if c.input.len() > MAX_LINE {
                break;
            }
        }
        while let Some(nl) = c.input.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = c.input.drain(..=nl).collect();
            let text = String::from_utf8_lossy(&line).trim().to_string();
            if !text.is_empty() {
                out.push(Event::Line(token, text));
            }
        }
        if c.input.len() > MAX_LINE {
            let mut line = serde_json::to_string(&Response::error(format!(
                "request line longer than {MAX_LINE} bytes"
            )))
            .unwrap_or_default();
            line.push('\n');
            let _ = c.stream.write(line.as_bytes());
            self.close(token);
            return;
        }
        if closed {
            // Lines already read are still answered (the client may have
            // shut down only its writing side); then it goes ([`reap`]).
            c.closing = true;
            c.input.clear();
            c.writing = true;
            let _ = epoll::modify(
                &self.epoll,
                &c.stream,
                epoll::EventData::new_u64(token),
                epoll::EventFlags::OUT,
            );
        }
    }

    /// Closes the clients that closed their side and have had every
    /// reply, and those idle (or too slow to take their output) for
    /// [`IDLE_TIMEOUT`].
    fn reap(&mut self) {
        let now = Instant::now();
        let done: Vec<u64> = self
            .clients
            .iter()
            .filter(|(_, c)| {
                (c.closing && c.output.is_empty()) || now.duration_since(c.active) >= IDLE_TIMEOUT
            })
            .map(|(&t, _)| t)
            .collect();
        for t in done {
            self.close(t);
        }
    }

    fn close(&mut self, token: u64) {
        if let Some(c) = self.clients.remove(&token) {
            let _ = epoll::delete(&self.epoll, &c.stream);
        }
    }

    /// Queues a reply for a client and writes what the socket takes.
    fn reply(&mut self, token: u64, response: &Response) {
        let Some(c) = self.clients.get_mut(&token) else {
            return;
        };
        let mut text = serde_json::to_string(response).unwrap_or_default();
        text.push('\n');
        c.output.extend_from_slice(text.as_bytes());
        self.flush(token);
    }

    /// Writes a client's pending output; waits for the socket (EPOLLOUT)
    /// when it is full.
    fn flush(&mut self, token: u64) {
        let Some(c) = self.clients.get_mut(&token) else {
            return;
        };
        while !c.output.is_empty() {
            match c.stream.write(&c.output) {
                Ok(0) => break,
                Ok(n) => {
                    c.output.drain(..n);
                    c.active = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.close(token);
                    return;
                }
            }
        }
        let want = !c.output.is_empty();
        if want != c.writing && !c.closing {
            c.writing = want;
            let flags = if want {
                epoll::EventFlags::IN | epoll::EventFlags::RDHUP | epoll::EventFlags::OUT
            } else {
                epoll::EventFlags::IN | epoll::EventFlags::RDHUP
            };
            let _ = epoll::modify(
                &self.epoll,
                &c.stream,
                epoll::EventData::new_u64(token),
                flags,
            );
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
        Command::Metrics => Response::ok(daemon.metrics()),
    }
}

/// The CPU time this thread has used, ns (`CLOCK_THREAD_CPUTIME_ID`): what
/// a step costs the daemon, its caller's part (`on_step`: the log, the
/// scope's end, systemd's watchdog) included and blocked time (a cgroup
/// write waiting on a lock) left out, as the simulated daemon's
/// `--daemon-cost` counts it. Answers to clients and boost looks between
/// steps are not counted.
fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Why the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// `once` was asked and one step ran.
    Once,
    /// A stop message arrived.
    Stopped(String),
}

/// Runs steps every `interval` until a stop message, answering requests in
/// between; `on_step` sees each step's report. When each step, quick step
/// and boost look happens is [`Schedule`]'s, which the simulator's loop
/// follows too. Restoring the host is the caller's choice
/// ([`Daemon::shutdown`]).
pub fn run<H: Host>(
    daemon: &mut Daemon<H>,
    inbox: &mut Inbox,
    interval: Duration,
    once: bool,
    mut on_step: impl FnMut(&StepReport, &Daemon<H>),
) -> Result<Ended, H::Error> {
    // The schedule runs on the monotonic clock, from the loop's start.
    let t0 = Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    let mut schedule = Schedule::new(interval.as_nanos() as u64, daemon.fast_interval_ns(), 0);
    loop {
        let at = now();
        match schedule.due(at) {
            Due::Step => {
                let cpu = thread_cpu_ns();
                let report = daemon.step()?.clone();
                schedule.stepped(at);
                on_step(&report, daemon);
                daemon.observe_cpu(false, thread_cpu_ns().saturating_sub(cpu));
                if once {
                    return Ok(Ended::Once);
                }
                continue;
            }
            // New threads and exits between full steps.
            Due::Quick => {
                let cpu = thread_cpu_ns();
                if let Some(report) = daemon.quick_step()? {
                    on_step(&report, daemon);
                }
                daemon.observe_cpu(true, thread_cpu_ns().saturating_sub(cpu));
                schedule.quick_stepped(now());
                continue;
            }
            Due::Wait => {}
        }
        let wake = schedule.wake_at(at, daemon.has_boosts());
        let events = match inbox.wait(Duration::from_nanos(wake.saturating_sub(at))) {
            Ok(e) => e,
            // Not expected; the caller restores the host and reports it.
            Err(e) => return Ok(Ended::Stopped(format!("the event loop failed: {e}"))),
        };
        if daemon.has_boosts() {
            daemon.check_boosts();
        }
        for event in events {
            match event {
                Event::Msg(Msg::Stop(why)) => return Ok(Ended::Stopped(why)),
                Event::Msg(Msg::Request(cmd, caller, reply)) => {
                    let _ = reply.send(answer(daemon, cmd, caller));
                    daemon.settle();
                }
                Event::Line(token, line) => {
                    let Some(caller) = inbox.clients.get(&token).map(|c| c.caller) else {
                        continue;
                    };
                    let response = match parse_request(&line) {
                        Err(e) => Response::error(e),
                        Ok(cmd) => answer(daemon, cmd, caller),
                    };
                    // The reply goes out first; a boost's eviction follows.
                    inbox.reply(token, &response);
                    daemon.settle();
                }
                Event::Writable(token) => inbox.flush(token),
            }
        }
        inbox.reap();
    }
}
