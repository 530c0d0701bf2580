//! The kernel's process connector (`CONFIG_PROC_EVENTS`): a netlink
//! socket on which the kernel reports every fork (process or thread),
//! exec and exit as it happens. The daemon learns of a new thread at once
//! instead of at its next full pass over /proc, and of a placed thread's
//! exit before the next interval.
//!
//! Wire format (include/uapi/linux/{netlink,connector,cn_proc}.h), all in
//! host byte order:
//!
//! ```text
//!   struct nlmsghdr   { u32 len; u16 type; u16 flags; u32 seq; u32 pid; }        16 bytes
//!   struct cn_msg     { u32 idx; u32 val; u32 seq; u32 ack; u16 len; u16 flags; } 20 bytes
//!   struct proc_event { u32 what; u32 cpu; u64 timestamp_ns; union event_data; }
//!     fork: parent_pid, parent_tgid, child_pid, child_tgid    (u32 each)
//!     exec: process_pid, process_tgid
//!     exit: process_pid, process_tgid, exit_code, exit_signal, parent_pid, parent_tgid
//! ```
//!
//! `*_pid` are thread ids and `*_tgid` process ids: a new thread of an
//! existing process is a fork event with `child_pid != child_tgid`.
//! Listening needs CAP_NET_ADMIN; without it, [`Connector::open`] fails and
//! the daemon samples new threads only at its intervals.
//!
//! Written by hand: no maintained crate wraps the connector, and it is one
//! socket, one subscription message and one fixed record.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `NETLINK_CONNECTOR` (include/uapi/linux/netlink.h).
const NETLINK_CONNECTOR: libc::c_int = 11;
/// `CN_IDX_PROC`, `CN_VAL_PROC` (include/uapi/linux/connector.h).
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
/// `PROC_CN_MCAST_LISTEN` (include/uapi/linux/cn_proc.h).
const PROC_CN_MCAST_LISTEN: u32 = 1;
/// `enum what` values.
const PROC_EVENT_FORK: u32 = 0x0000_0001;
const PROC_EVENT_EXEC: u32 = 0x0000_0002;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;
const NLMSG_HDRLEN: usize = 16;
const CN_MSG_LEN: usize = 20;
/// `what`, `cpu`, `timestamp_ns`.
const PROC_EVENT_HEAD: usize = 16;
/// `NLMSG_DONE`: the connector sends each event as one.
const NLMSG_DONE: u16 = 3;

/// One event, as corral needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEvent {
    /// A new thread `tid` in process `pid` (a new process when equal),
    /// made by `parent_pid`; for a new process `parent_tid` is the thread
    /// that forked it (the kernel's `real_parent`).
    Fork {
        tid: u32,
        pid: u32,
        parent_pid: u32,
        parent_tid: u32,
    },
    /// Process `pid` ran a new program (its threads but `tid` are gone).
    Exec { tid: u32, pid: u32 },
    /// Thread `tid` of process `pid` exited.
    Exit { tid: u32, pid: u32 },
}

/// A subscribed connector socket, non-blocking.
#[derive(Debug)]
pub struct Connector {
    fd: OwnedFd,
    buf: Vec<u8>,
    /// Whether events were lost since the last [`Connector::drain`]
    /// (the socket's buffer overflowed: ENOBUFS).
    pub lost: bool,
}

impl Connector {
    /// Opens and subscribes. Fails without CAP_NET_ADMIN or without
    /// `CONFIG_PROC_EVENTS`.
    pub fn open() -> std::io::Result<Connector> {
        // SAFETY: plain socket(2); the result is checked before use.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                NETLINK_CONNECTOR,
            )
        };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // A fork storm (a parallel build) must not overflow the queue
        // between two drains: ask for 4 MiB (capped by rmem_max unless
        // root, which FORCE lifts).
        let size: libc::c_int = 4 << 20;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            // SAFETY: the option value is a c_int that lives across the call.
            let r = unsafe {
                libc::setsockopt(
                    raw,
                    libc::SOL_SOCKET,
                    opt,
                    (&size as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if r == 0 {
                break;
            }
        }
        // SAFETY: sockaddr_nl is plain data; zeroed is a valid value.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        addr.nl_groups = CN_IDX_PROC;
        addr.nl_pid = 0; // the kernel picks a unique port id
                         // SAFETY: `addr` is a valid sockaddr_nl of the size given.
        let r = unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let msg = subscribe_message(std::process::id());
        // SAFETY: sockaddr_nl is plain data; the kernel is port 0.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: `msg` and `kernel` are valid for the lengths given.
        let r = unsafe {
            libc::sendto(
                raw,
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Connector {
            fd,
            buf: vec![0; 64 * 1024],
            lost: false,
        })
    }

    /// Every event queued now (never blocks).
    pub fn drain(&mut self, out: &mut Vec<TaskEvent>) {
        loop {
            // SAFETY: `buf` is a valid writable buffer of its length.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::ENOBUFS) => {
                        self.lost = true;
                        continue;
                    }
                    _ => return, // EAGAIN: empty
                }
            }
            if n == 0 {
                return;
            }
            parse_messages(&self.buf[..n as usize], out);
        }
    }

    /// The socket, for an event loop to wait on.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// nlmsghdr + cn_msg + `PROC_CN_MCAST_LISTEN`.
fn subscribe_message(port: u32) -> Vec<u8> {
    let payload = 4usize;
    let len = NLMSG_HDRLEN + CN_MSG_LEN + payload;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
    m.extend_from_slice(&0u16.to_ne_bytes()); // flags
    m.extend_from_slice(&0u32.to_ne_bytes()); // seq
    m.extend_from_slice(&port.to_ne_bytes());
    m.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    m.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // seq
    m.extend_from_slice(&0u32.to_ne_bytes()); // ack
    m.extend_from_slice(&(payload as u16).to_ne_bytes());
    m.extend_from_slice(&0u16.to_ne_bytes()); // flags
    m.extend_from_slice(&PROC_CN_MCAST_LISTEN.to_ne_bytes());
    m
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Parses one datagram (one or more netlink messages); ignores what it
/// does not know and anything truncated.
pub fn parse_messages(mut b: &[u8], out: &mut Vec<TaskEvent>) {
    while b.len() >= NLMSG_HDRLEN {
        let Some(len) = u32_at(b, 0).map(|l| l as usize) else {
            return;
        };
        if len < NLMSG_HDRLEN || len > b.len() {
            return;
        }
        let msg = &b[..len];
        let ev = NLMSG_HDRLEN + CN_MSG_LEN;
        let is_proc = u32_at(msg, NLMSG_HDRLEN) == Some(CN_IDX_PROC)
            && u32_at(msg, NLMSG_HDRLEN + 4) == Some(CN_VAL_PROC);
        if is_proc {
            let data = ev + PROC_EVENT_HEAD;
            let field = |i: usize| u32_at(msg, data + 4 * i);
            let event = match u32_at(msg, ev) {
                Some(PROC_EVENT_FORK) => match (field(0), field(1), field(2), field(3)) {
                    (Some(parent_tid), Some(parent_pid), Some(tid), Some(pid)) => {
                        Some(TaskEvent::Fork {
                            tid,
                            pid,
                            parent_pid,
                            parent_tid,
                        })
                    }
                    _ => None,
                },
                Some(PROC_EVENT_EXEC) => match (field(0), field(1)) {
                    (Some(tid), Some(pid)) => Some(TaskEvent::Exec { tid, pid }),
                    _ => None,
                },
                Some(PROC_EVENT_EXIT) => match (field(0), field(1)) {
                    (Some(tid), Some(pid)) => Some(TaskEvent::Exit { tid, pid }),
                    _ => None,
                },
                _ => None,
            };
            out.extend(event);
        }
        // NLMSG_ALIGN(len)
        let next = (len + 3) & !3;
        if next >= b.len() {
            return;
        }
        b = &b[next..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message as the kernel sends it (cn_proc.c, send_msg).
    fn event(what: u32, fields: &[u32]) -> Vec<u8> {
        let mut data = Vec::new();
        data.extend_from_slice(&what.to_ne_bytes());
        data.extend_from_slice(&1u32.to_ne_bytes()); // cpu
        data.extend_from_slice(&123u64.to_ne_bytes()); // timestamp
        for f in fields {
            data.extend_from_slice(&f.to_ne_bytes());
        }
        let mut m = subscribe_message(0);
        m.truncate(NLMSG_HDRLEN + CN_MSG_LEN);
        m[NLMSG_HDRLEN + 16..NLMSG_HDRLEN + 18].copy_from_slice(&(data.len() as u16).to_ne_bytes());
        m.extend_from_slice(&data);
        let len = m.len() as u32;
        m[..4].copy_from_slice(&len.to_ne_bytes());
        m
    }

    #[test]
    fn fork_exec_exit_and_unknown_events() {
        let mut b = event(PROC_EVENT_FORK, &[10, 10, 12, 11]);
        b.extend(event(PROC_EVENT_EXEC, &[11, 11]));
        b.extend(event(0x40, &[1, 2, 3])); // PROC_EVENT_COMM: ignored
        b.extend(event(PROC_EVENT_EXIT, &[12, 11, 0, 17, 10, 10]));
        let mut out = Vec::new();
        parse_messages(&b, &mut out);
        assert_eq!(
            out,
            vec![
                TaskEvent::Fork {
                    tid: 12,
                    pid: 11,
                    parent_pid: 10,
                    parent_tid: 10
                },
                TaskEvent::Exec { tid: 11, pid: 11 },
                TaskEvent::Exit { tid: 12, pid: 11 },
            ]
        );
    }

    #[test]
    fn truncated_or_garbage_input_is_ignored() {
        let full = event(PROC_EVENT_FORK, &[10, 10, 12, 11]);
        for cut in 0..full.len() {
            let mut out = Vec::new();
            parse_messages(&full[..cut], &mut out);
            assert!(out.is_empty(), "cut at {cut}: {out:?}");
        }
        let mut out = Vec::new();
        parse_messages(&[0xff; 64], &mut out);
        parse_messages(&[0; 64], &mut out);
        assert!(out.is_empty());
    }
}
