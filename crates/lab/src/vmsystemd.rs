//! The systemd guest's scenario (`scripts/vm-test`'s `6.12-systemd`:
//! Debian with systemd as PID 1 and dbus, pure cgroup v2): corral as
//! `corral.service`, the unit file of `dist/systemd/`, installed by the
//! guest's start script as `/etc/systemd/system/corral.service`.
//!
//! What it checks today (ARCHITECTURE.md, "On a systemd host"):
//! - the unit file passes `systemd-analyze verify`;
//! - `corral run` refuses systemd's v2 tree: the service fails to start
//!   and writes nothing (no `corral` group, no attribute changed);
//! - with `--dry-run` (a drop-in), the service reaches `active` through
//!   `READY=1`, shows its status line, and is started again by systemd
//!   after `systemctl kill -s KILL`; `systemctl stop` ends it cleanly
//!   (`ExecStopPost=corral restore` included);
//! - every cgroup attribute file outside corral.service's own cgroup
//!   reads the same before and after.

use crate::vmguest::Check;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const CGROUP: &str = "/sys/fs/cgroup";
const UNIT: &str = "corral.service";
const DROP_IN: &str = "/run/systemd/system/corral.service.d";

/// `PROGRAM ARGS`: (success, stdout + stderr, trimmed).
fn output(program: &str, args: &[&str]) -> (bool, String) {
    match Command::new(program).args(args).output() {
        Ok(o) => (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
            .trim()
            .to_string(),
        ),
        Err(e) => (false, format!("cannot run {program}: {e}")),
    }
}

/// `systemctl ARGS`.
fn systemctl(args: &[&str]) -> (bool, String) {
    output("systemctl", args)
}

/// How long `corral run` from a shell may take to refuse.
const SHELL_LIMIT: Duration = Duration::from_secs(60);

/// `PROGRAM ARGS` with its stderr, killed after `limit`: (exit code,
/// stderr).
fn run_for(program: &str, args: &[&str], limit: Duration) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = match Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return (None, format!("cannot run {program}: {e}")),
    };
    let ended = wait_until(limit, || matches!(child.try_wait(), Ok(Some(_))));
    if !ended {
        let _ = child.kill();
    }
    let code = child.wait().ok().and_then(|s| s.code());
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    if !ended {
        err.push_str(&format!(
            " (still running after {} s: killed)",
            limit.as_secs()
        ));
    }
    (code, err)
}

/// One property of corral.service (`systemctl show -p NAME --value`).
fn prop(name: &str) -> String {
    systemctl(&["show", UNIT, "-p", name, "--value"]).1
}

/// Waits until `ok` holds (polling every 100 ms), up to `limit`.
fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if ok() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every cgroup attribute file someone may write (mode has a write bit),
/// with its contents, outside `skip` (a unit's own cgroup, which systemd
/// creates and removes with it). Left out: files whose contents change
/// by themselves, membership (`cgroup.procs`, `cgroup.threads`) as
/// processes come and go, pressure (`*.pressure`, writable to set a PSI
/// trigger) and `memory.peak` (writable to reset it).
fn snapshot(skip: &str) -> BTreeMap<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut dirs = vec![Path::new(CGROUP).to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let rel = dir
            .strip_prefix(CGROUP)
            .unwrap_or(&dir)
            .display()
            .to_string();
        if !skip.is_empty() && rel.starts_with(skip) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                dirs.push(path);
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if meta.permissions().mode() & 0o200 == 0
                || name.ends_with(".pressure")
                || matches!(
                    name.as_str(),
                    "cgroup.procs" | "cgroup.threads" | "memory.peak" | "memory.swap.peak"
                )
            {
                continue;
            }
            if let Ok(text) = std::fs::read_to_string(&path) {
                out.insert(format!("{rel}/{name}"), text);
            }
        }
    }
    out
}

/// What differs between two snapshots, a line per file.
fn changes(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            None => out.push(format!("{k}: gone")),
            Some(w) if w != v => out.push(format!("{k}: {:?} -> {:?}", v.trim(), w.trim())),
            _ => {}
        }
    }
    for k in after.keys().filter(|k| !before.contains_key(*k)) {
        out.push(format!("{k}: new"));
    }
    out
}

/// Runs the scenario; its checks.
pub fn run() -> Vec<Check> {
    let mut checks = Vec::new();
    let mut check = |name: &str, pass: bool, detail: String| {
        eprintln!(
            "{} systemd: {name}: {detail}",
            if pass { "PASS" } else { "FAIL" }
        );
        checks.push(Check {
            scenario: "systemd",
            name: name.into(),
            pass,
            detail,
        });
    };
    let own = format!("/{}", prop("ControlGroup").trim_start_matches('/'));
    let own = if own == "/" {
        "/system.slice/corral.service".to_string()
    } else {
        own
    };
    let before = snapshot(&own);

    let (ok, out) = output(
        "systemd-analyze",
        &["verify", &format!("/etc/systemd/system/{UNIT}")],
    );
    check(
        "the unit file passes systemd-analyze verify",
        ok,
        format!("{out:?}"),
    );

    // As shipped: corral refuses systemd's v2 tree, from a shell and as
    // the service (whose journal lines a process this short-lived may
    // lose: its exit status says it).
    let (code, said) = run_for("/usr/bin/corral", &["run", "--socket", "none"], SHELL_LIMIT);
    let refused = said.contains("systemd runs this host and owns its cgroup v2 tree");
    check(
        "corral run from a shell refuses systemd's v2 tree (exit 78, EX_CONFIG)",
        code == Some(78) && refused,
        format!("exit {code:?}: {:?}", said.trim()),
    );
    let (started, out) = systemctl(&["start", UNIT]);
    let (result, restarts) = (prop("Result"), prop("NRestarts"));
    let ours = Path::new(CGROUP).join("corral").exists();
    check(
        "as corral.service it fails to start, is not restarted, and creates no group",
        !started && result == "exit-code" && restarts == "0" && !ours,
        format!(
            "systemctl start: {}; Result {result}; NRestarts {restarts}; {CGROUP}/corral exists: {ours}",
            if started { "succeeded".into() } else { out }
        ),
    );
    let _ = systemctl(&["stop", UNIT]);
    let _ = systemctl(&["reset-failed", UNIT]);

    // The service's life cycle, with --dry-run (it writes nothing).
    let dropped = std::fs::create_dir_all(DROP_IN).and_then(|_| {
        std::fs::write(
            format!("{DROP_IN}/dry-run.conf"),
            "[Service]\nExecStart=\nExecStart=/usr/bin/corral run --dry-run\n",
        )
    });
    let _ = systemctl(&["daemon-reload"]);
    let (started, out) = systemctl(&["start", UNIT]);
    let status = prop("StatusText");
    check(
        "with --dry-run the service becomes active through READY=1 and shows its status",
        dropped.is_ok()
            && started
            && prop("ActiveState") == "active"
            && status.starts_with("managing"),
        format!("start: {out:?}; StatusText {status:?}; drop-in: {dropped:?}"),
    );
    let pid0 = prop("MainPID");
    let _ = systemctl(&["kill", "-s", "KILL", UNIT]);
    let restarted = wait_until(Duration::from_secs(60), || {
        prop("ActiveState") == "active" && prop("MainPID") != pid0 && prop("NRestarts") == "1"
    });
    check(
        "after systemctl kill -s KILL, systemd starts it again",
        restarted,
        format!(
            "MainPID {pid0} -> {}, NRestarts {}, ActiveState {}",
            prop("MainPID"),
            prop("NRestarts"),
            prop("ActiveState")
        ),
    );
    let (stopped, out) = systemctl(&["stop", UNIT]);
    check(
        "systemctl stop ends it cleanly",
        stopped && prop("ActiveState") == "inactive" && prop("Result") == "success",
        format!(
            "stop: {out:?}; ActiveState {}, Result {}",
            prop("ActiveState"),
            prop("Result")
        ),
    );
    let _ = std::fs::remove_dir_all(DROP_IN);
    let _ = systemctl(&["daemon-reload"]);

    let diff = changes(&before, &snapshot(&own));
    check(
        "no cgroup attribute outside corral.service's own cgroup changed",
        diff.is_empty() && !before.is_empty(),
        if diff.is_empty() {
            format!("{} attribute files compared", before.len())
        } else {
            diff.join("; ")
        },
    );
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_lists_changed_gone_and_new_files() {
        let a: BTreeMap<String, String> = [("/a/cpu.weight", "100\n"), ("/b/cpu.max", "max\n")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut b = a.clone();
        assert!(changes(&a, &b).is_empty());
        b.insert("/a/cpu.weight".into(), "200\n".into());
        b.remove("/b/cpu.max");
        b.insert("/c/cpu.idle".into(), "0\n".into());
        assert_eq!(
            changes(&a, &b),
            [
                "/a/cpu.weight: \"100\" -> \"200\"",
                "/b/cpu.max: gone",
                "/c/cpu.idle: new"
            ]
        );
    }
}
