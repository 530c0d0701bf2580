//! What the live placer tests share: a shell that forks a child when
//! told, found among its children, and ended with it.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub fn children(pid: u32) -> Vec<u32> {
    let text =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    text.split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// `sh` that forks a `sleep` once file `go` exists ([`go`]): the child
/// inherits whatever affinity the shell has then. (A fixed delay before
/// the fork left the order of fork and move to the machine's load.)
pub fn forker(go: &std::path::Path) -> Child {
    Command::new("sh")
        .args([
            "-c",
            &format!(
                "while [ ! -e '{}' ]; do sleep 0.01; done; sleep 30 & wait",
                go.display()
            ),
        ])
        .spawn()
        .unwrap()
}

/// Lets the shell of [`forker`] fork.
pub fn go(file: &std::path::Path) {
    std::fs::write(file, "").unwrap();
}

pub fn wait_for_child(pid: u32) -> u32 {
    let t0 = Instant::now();
    loop {
        // The shell's own `sleep 0.01` come and go first, each a copy of
        // the shell until its exec, with the shell's command line (which
        // holds "30"): only `sleep 30` itself is the child. (A match on
        // "30" took such a copy, forked before the move, in a CI run.)
        if let Some(&c) = children(pid).iter().find(|&&c| {
            std::fs::read_to_string(format!("/proc/{c}/cmdline"))
                .is_ok_and(|s| s == "sleep\x0030\0")
        }) {
            return c;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the shell forked no sleep"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ends the shell and its children.
pub fn end(mut c: Child, pid: u32) {
    for k in children(pid) {
        let _ = Command::new("kill").arg(k.to_string()).status();
    }
    let _ = c.kill();
    let _ = c.wait();
}
