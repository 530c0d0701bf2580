//! The metrics endpoint as a Prometheus server scrapes it: a daemon started
//! with `[metrics] listen`, a GET of /metrics, the same text from `corral
//! metrics`, and promtool's verdict on it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::BIN;

/// promtool on PATH, or the one scripts/setup unpacked into target/tools.
fn promtool() -> Option<PathBuf> {
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/promtool");
    if local.is_file() {
        return Some(local);
    }
    let found = Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    found.then(|| PathBuf::from("promtool"))
}

fn get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

/// (Over 120 lines on purpose: one daemon's life, its scrapes and their
/// checks in the order they happen; each check depends on the state the
/// previous one left.)
#[test]
fn metrics_are_served_over_http_and_pass_promtool() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("c.toml");
    std::fs::write(
        &conf,
        "[daemon]\ninterval_ms = 100\n[metrics]\nlisten = \"127.0.0.1:0\"\n",
    )
    .unwrap();
    let socket = dir.path().join("s.sock");
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let mut d = Command::new(BIN)
        .args(["run", "--dry-run", "--config"])
        .arg(&conf)
        .arg("--socket")
        .arg(&socket)
        .args(["--scope-pid", &sleeper.id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The log names the bound address (port 0 picked a free one).
    let mut lines = BufReader::new(d.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("the daemon ended").unwrap();
        if let Some(rest) = line.split("metrics at http://").nth(1) {
            break rest.trim_end_matches("/metrics").to_string();
        }
    };
    // The rest of the log is drained, so the daemon never blocks on it.
    std::thread::spawn(move || lines.for_each(drop));
    // Wait for a few steps, then make a refused boost (pid 1 is not in scope).
    let t0 = Instant::now();
    let body = loop {
        let (head, body) = get(&addr, "/metrics");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains("text/plain; version=0.0.4"), "{head}");
        if body.lines().any(|l| {
            l.strip_prefix("corral_steps_total ")
                .is_some_and(|n| n.parse::<u64>().unwrap() >= 3)
        }) {
            break body;
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "{body}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let boost = Command::new(BIN)
        .args(["boost", "1", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    assert!(!boost.status.success());
    let printed = Command::new(BIN)
        .args(["metrics", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    // A client that trickles its request a byte a second holds the one
    // serving thread for at most its 5-s deadline, not for as long as it
    // keeps sending.
    let trickle_addr = addr.clone();
    let trickler = std::thread::spawn(move || {
        let mut s = TcpStream::connect(&trickle_addr).unwrap();
        for _ in 0..30 {
            if s.write_all(b"G").is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        false
    });
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    let (head, _) = get(&addr, "/metrics");
    let waited = t0.elapsed();
    let cut_off = trickler.join().unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        waited < Duration::from_secs(8),
        "a scrape waited {waited:?}"
    );
    assert!(cut_off, "the trickling client was never cut off");
    let (missing, _) = get(&addr, "/nothing");
    let mut post = TcpStream::connect(&addr).unwrap();
    write!(post, "POST /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut refused = String::new();
    post.read_to_string(&mut refused).unwrap();
    let _ = d.kill();
    let _ = d.wait();
    let _ = sleeper.kill();
    let _ = sleeper.wait();

    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    assert!(
        refused.starts_with("HTTP/1.1 405") && refused.contains("Allow: GET\r\n"),
        "{refused}"
    );
    assert!(body.contains("corral_threads{class=\"light\"}"), "{body}");
    assert!(
        body.contains("corral_step_duration_seconds_count"),
        "{body}"
    );
    assert!(body.contains("corral_boosts_refused_total 0"), "{body}");
    let printed = String::from_utf8_lossy(&printed.stdout).to_string();
    assert!(
        printed.contains("corral_boosts_requested_total 1\n")
            && printed.contains("corral_boosts_refused_total 1\n")
            && printed.contains("corral_boosts_granted_total 0\n"),
        "{printed}"
    );

    let Some(promtool) = promtool() else {
        println!(
            "SKIP metrics_pass_promtool: promtool is not installed (scripts/setup unpacks it)"
        );
        return;
    };
    for text in [&body, &printed] {
        let mut check = Command::new(&promtool)
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        check
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = check.wait_with_output().unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
            "promtool: {}{}\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_bad_listen_address_is_named_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("c.toml");
    std::fs::write(&conf, "[metrics]\nlisten = \"localhost\"\n").unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(":2: key `metrics.listen`"), "{said}");
    assert!(said.contains("127.0.0.1:9741"), "{said}");
}
