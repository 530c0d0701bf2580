//! The metrics endpoint: `GET /metrics` over HTTP/1.1 on `[metrics] listen`.
//!
//! One thread accepts scrapes one at a time and asks the control loop for
//! the exposition through a [`MsgSender`], as a socket client would: the
//! loop stays the only owner of the daemon's state. A scrape is one GET of
//! one small document every 15 s or so, so the server is written here on
//! `std::net` (~100 lines) rather than brought in (tiny_http or hyper would
//! add a dependency tree, and hyper an async runtime, to serve one path).

use crate::api::Command;
use crate::server::{Msg, MsgSender};
use crate::Caller;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The longest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// A client gets this long, in all, to send its request and take the
/// answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// The loop answers between steps; a step takes milliseconds.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// The scraper, as the loop sees it: no user's rights (metrics check none).
const SCRAPER: Caller = Caller {
    uid: u32::MAX - 1,
    pid: 0,
};

/// Binds `addr` (`127.0.0.1:9741`, `[::1]:9741`) and serves it from a
/// thread of its own until the process ends; returns the bound address
/// (port 0 picks a free one).
pub fn serve(addr: &str, loop_: MsgSender) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("corral-metrics".into())
        .spawn(move || {
            for stream in listener.incoming() {
                match stream {
                    // A client that errs (reset, timeout) costs nothing more.
                    Ok(stream) => {
                        let _ = answer(stream, &loop_);
                    }
                    // Out of file descriptors, say: no busy loop.
                    Err(_) => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        })?;
    Ok(bound)
}

/// What the request head asks for: the method and path of its first line.
fn request_line(head: &str) -> Option<(&str, &str)> {
    let mut words = head.lines().next()?.split_whitespace();
    let method = words.next()?;
    let target = words.next()?;
    words.next().filter(|v| v.starts_with("HTTP/1."))?;
    // A query (`?name[]=…`) is allowed and ignored.
    Some((method, target.split('?').next().unwrap_or(target)))
}

fn answer(mut stream: TcpStream, loop_: &MsgSender) -> std::io::Result<()> {
    // One deadline for the whole exchange, not per read: a client that
    // trickles a byte at a time must not hold the one serving thread.
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| std::io::Error::new(ErrorKind::TimedOut, "the client took too long"))
    };
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        stream.set_read_timeout(Some(left()?))?;
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_HEAD {
            stream.set_write_timeout(Some(left()?))?;
            return reply(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                "",
            );
        }
    }
    let head = String::from_utf8_lossy(&head);
    let (status, kind, body) = match request_line(&head) {
        None => ("400 Bad Request", "text/plain", String::new()),
        Some((m, _)) if m != "GET" => ("405 Method Not Allowed", "text/plain", String::new()),
        Some((_, "/metrics")) => match exposition(loop_) {
            Some(text) => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", text),
            None => (
                "503 Service Unavailable",
                "text/plain",
                "the control loop did not answer\n".into(),
            ),
        },
        Some((_, "/")) => (
            "200 OK",
            "text/plain; charset=utf-8",
            "corral: metrics at /metrics\n".into(),
        ),
        Some(_) => ("404 Not Found", "text/plain", "see /metrics\n".into()),
    };
    // The answer fits the socket's buffer: one write, its own timeout
    // (the loop may have taken a while to render it).
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    reply(&mut stream, status, kind, &body)
}

/// Asks the loop for the exposition.
fn exposition(loop_: &MsgSender) -> Option<String> {
    let (tx, rx) = mpsc::channel();
    loop_
        .send(Msg::Request(Command::Metrics, SCRAPER, tx))
        .ok()?;
    let response = rx.recv_timeout(ANSWER_TIMEOUT).ok()?;
    response.result?.as_str().map(str::to_string)
}

/// The whole response in one write (`Allow` on a 405, as RFC 9110 asks).
fn reply(stream: &mut TcpStream, status: &str, kind: &str, body: &str) -> std::io::Result<()> {
    let allow = if status.starts_with("405") {
        "Allow: GET\r\n"
    } else {
        ""
    };
    let out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(out.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_read() {
        assert_eq!(
            request_line("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Some(("GET", "/metrics"))
        );
        assert_eq!(
            request_line("GET /metrics?x=1 HTTP/1.0\r\n\r\n"),
            Some(("GET", "/metrics"))
        );
        assert_eq!(request_line("GET /metrics\r\n"), None);
        assert_eq!(request_line(""), None);
    }
}
