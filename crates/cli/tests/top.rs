//! `corral top` as a user sees it: in a terminal (tmux: send-keys and
//! capture-pane) beside a daemon managing a CPU hog, and `--once`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::BIN;

fn tmux(args: &[&str]) -> (bool, String) {
    let out = Command::new("tmux").args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

/// Waits until `ok` holds of the pane's text; returns the last text.
fn pane_until(session: &str, ok: impl Fn(&str) -> bool) -> String {
    let t0 = Instant::now();
    loop {
        let (_, text) = tmux(&["capture-pane", "-p", "-t", session]);
        if ok(&text) || t0.elapsed() > Duration::from_secs(20) {
            return text;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn top_shows_groups_threads_and_boosts_and_quits_on_q() {
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("SKIP top_shows_groups_threads_and_boosts_and_quits_on_q: tmux is not installed (scripts/setup installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    // A process with a CPU hog child, the daemon's scope.
    let mut work = Command::new("sh")
        .args(["-c", "sh -c 'while :; do :; done' & sleep 60"])
        .spawn()
        .unwrap();
    let mut d = Command::new(BIN)
        .args(["run", "--dry-run", "--interval", "200", "--socket"])
        .arg(&socket)
        .args(["--scope-pid", &work.id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let session = format!("corral-test-top-{}", std::process::id());
    let (started, _) = tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "120",
        "-y",
        "30",
        &format!("{BIN} top --refresh-ms 100 --socket {}", socket.display()),
    ]);
    assert!(started);
    // The hog is found heavy; then boosted, and the boost is listed.
    let hog_of = |t: &str| {
        t.lines()
            .filter(|l| l.contains(" heavy "))
            .filter_map(|l| l.split_whitespace().next())
            .find(|w| w.parse::<u32>().is_ok())
            .map(str::to_string)
    };
    let seen = pane_until(&session, |t| hog_of(t).is_some());
    let hog = hog_of(&seen).unwrap_or_default();
    let boost = Command::new(BIN)
        .args(["boost", &hog, "--max-ms", "50", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    // It lasts its 50 ms cap, ended at the first look after it (1 ms
    // polls, or after a step in progress).
    let lasted = |t: &str| -> Option<u64> {
        let at = t.find(&format!("{hog} (sh) boosted "))?;
        let rest = &t[at..].split("boosted ").nth(1)?;
        rest.split(" ms").next()?.parse().ok()
    };
    let boosted = pane_until(&session, |t| lasted(t).is_some());
    tmux(&["send-keys", "-t", &session, "s"]);
    let sorted = pane_until(&session, |t| t.contains("by peak"));
    let once = Command::new(BIN)
        .args(["top", "--once", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    tmux(&["send-keys", "-t", &session, "q"]);
    let t0 = Instant::now();
    let mut quit = false;
    while t0.elapsed() < Duration::from_secs(10) {
        if !tmux(&["has-session", "-t", &session]).0 {
            quit = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if !quit {
        tmux(&["kill-session", "-t", &session]);
    }
    let _ = d.kill();
    let _ = d.wait();
    let _ = Command::new("pkill")
        .args(["-P", &work.id().to_string()])
        .status();
    let _ = work.kill();
    let _ = work.wait();

    assert!(
        seen.contains("shared") && seen.contains("by utilisation"),
        "{seen}"
    );
    assert!(!hog.is_empty(), "{seen}");
    assert!(boost.status.success(), "{boost:?}");
    // A boost of at most 50 ms ends at the first look (every ms) past its
    // cap: it lasted 50 ms, or a little more when that look came late.
    let lasted = boosted
        .split(&format!("{hog} (sh) boosted "))
        .nth(1)
        .and_then(|t| t.split(" ms").next())
        .and_then(|n| n.parse::<u64>().ok());
    assert!(
        lasted.is_some_and(|ms| (50..=60).contains(&ms)),
        "{boosted}"
    );
    assert!(sorted.contains("by peak"), "{sorted}");
    assert!(quit, "q did not end corral top");
    let once = String::from_utf8_lossy(&once.stdout);
    assert!(once.contains("GROUP") && once.contains(&hog), "{once}");
}

#[test]
fn top_without_a_daemon_says_so() {
    let out = Command::new(BIN)
        .args([
            "top",
            "--once",
            "--socket",
            "/nonexistent-corral-test/s.sock",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("cannot reach the daemon at /nonexistent-corral-test/s.sock"),
        "{said}"
    );
}
