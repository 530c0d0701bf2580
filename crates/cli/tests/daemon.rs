//! `corral run` on the live kernel: it moves real threads, and SIGTERM or
//! --dry-run leave nothing behind. Privileged tests skip without root or
//! without cgroup v1 `cpu` and `cpuset` hierarchies; every group and
//! process a test makes is removed by a guard, whatever happens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{remove_groups, serial, v1_mounts, BIN};

/// A test's workload groups (`corral-test-<pid>-<name>/{low,high}` in the
/// cpu hierarchy) and processes, removed on drop.
struct Workload {
    root: PathBuf,
    children: Vec<Child>,
    daemon_name: String,
    mounts: (PathBuf, PathBuf),
}

impl Workload {
    fn start(name: &str, mounts: (PathBuf, PathBuf)) -> Workload {
        let root = mounts
            .0
            .join(format!("corral-test-{}-{name}", std::process::id()));
        std::fs::create_dir(&root).unwrap();
        let mut w = Workload {
            daemon_name: format!("corral-test-{}-{name}-d", std::process::id()),
            root,
            children: vec![],
            mounts,
        };
        for (g, shares) in [("low", "52"), ("high", "1024")] {
            std::fs::create_dir(w.root.join(g)).unwrap();
            std::fs::write(w.root.join(g).join("cpu.shares"), shares).unwrap();
        }
        // Paper 002's situation: two hogs high, a 10 ms / 1 ms thread low.
        for _ in 0..2 {
            w.spawn("high", &["lab", "work", "hog"]);
        }
        w.spawn(
            "low",
            &[
                "lab",
                "work",
                "periodic",
                "--period-ms",
                "10",
                "--run-ms",
                "1",
                "--periods",
                "100000",
            ],
        );
        w
    }

    fn spawn(&mut self, group: &str, args: &[&str]) {
        let child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::fs::write(
            self.root.join(group).join("cgroup.procs"),
            child.id().to_string(),
        )
        .unwrap();
        self.children.push(child);
    }

    fn pids(&self) -> Vec<u32> {
        self.children.iter().map(|c| c.id()).collect()
    }

    fn scope(&self) -> String {
        format!("/{}", self.root.file_name().unwrap().to_string_lossy())
    }

    /// Where each workload thread is: its cgroup lines, affinity and slice.
    fn placement(&self) -> BTreeMap<u32, (String, String, u64)> {
        self.pids()
            .into_iter()
            .map(|pid| {
                let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
                let cg: String = cg
                    .lines()
                    .filter(|l| l.contains(":cpu:") || l.contains(":cpuset:"))
                    .collect();
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
                let allowed = status
                    .lines()
                    .find(|l| l.starts_with("Cpus_allowed_list"))
                    .unwrap()
                    .to_string();
                let slice = corral_linux::sched::sched_getattr(pid)
                    .unwrap()
                    .sched_runtime;
                (pid, (cg, allowed, slice))
            })
            .collect()
    }

    fn daemon_dirs(&self) -> Vec<PathBuf> {
        vec![
            self.mounts.0.join(&self.daemon_name),
            self.mounts.1.join(&self.daemon_name),
        ]
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for g in ["low", "high"] {
            let _ = std::fs::remove_dir(self.root.join(g));
        }
        let _ = std::fs::remove_dir(&self.root);
        // Should a test fail half-way, do not leave the daemon's groups.
        remove_groups(&self.mounts, &self.daemon_name);
    }
}

fn status(socket: &Path) -> Option<serde_json::Value> {
    let out = Command::new(BIN)
        .args(["status", "--json", "--socket"])
        .arg(socket)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())?
}

#[test]
fn privileged_sigterm_puts_every_thread_back_and_removes_the_groups() {
    let _serial = serial();
    let test = "privileged_sigterm_puts_every_thread_back_and_removes_the_groups";
    let Some(mounts) = v1_mounts(test) else {
        return;
    };
    let w = Workload::start("term", mounts);
    std::thread::sleep(Duration::from_millis(300));
    let before = w.placement();
    let sock_dir = tempfile::tempdir().unwrap();
    let socket = sock_dir.path().join("corral.sock");
    let daemon = Command::new(BIN)
        .args([
            "run",
            "--interval",
            "100",
            "--scope-cgroup",
            &w.scope(),
            "--group-name",
            &w.daemon_name,
            "--socket",
        ])
        .arg(&socket)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // Wait until the periodic thread sits in the latency group.
    let periodic = w.pids()[2];
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut placed = false;
    while Instant::now() < deadline && !placed {
        std::thread::sleep(Duration::from_millis(200));
        if let Some(s) = status(&socket) {
            placed = s["threads"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["tid"] == periodic && t["group"] == "latency");
        }
    }
    let during = w.placement();
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&daemon),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let out = daemon.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        placed,
        "the daemon never placed the periodic thread:\n{log}"
    );
    assert_ne!(
        during[&periodic], before[&periodic],
        "it was moved (and its slice set)"
    );
    assert!(out.status.success(), "daemon failed: {}\n{log}", out.status);
    assert!(log.contains("every thread put back"), "{log}");
    // What its steps cost it, for `corral sim --daemon-cost`.
    let cost = log
        .lines()
        .find_map(|l| {
            l.split_once("(corral sim --daemon-cost ")?
                .1
                .strip_suffix(')')
        })
        .unwrap_or_else(|| panic!("no own CPU line:\n{log}"));
    let (full, _quick) = cost.split_once(',').unwrap();
    assert!(full.parse::<u64>().unwrap() > 0, "{log}");
    for d in w.daemon_dirs() {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    assert_eq!(
        w.placement(),
        before,
        "every thread back in its groups, affinity and slice"
    );
}

/// Every readable file under `dir`, except counters the kernel updates by
/// itself.
fn tree(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.insert(p.clone(), b"<dir>".to_vec());
            tree(&p, out);
        } else {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("cpu.stat") || name == "cpuset.memory_pressure" {
                continue;
            }
            if let Ok(bytes) = std::fs::read(&p) {
                out.insert(p, bytes);
            }
        }
    }
}

/// The top-level groups of a mount, but those of other tests running now
/// (named `corral-test-…`), plus whether `ours` exists.
fn top_level(mount: &Path, ours: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(mount)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("corral-test-") || n == ours)
        .collect();
    v.sort();
    v
}

#[test]
fn privileged_dry_run_leaves_the_cgroup_trees_byte_identical() {
    let _serial = serial();
    let test = "privileged_dry_run_leaves_the_cgroup_trees_byte_identical";
    let Some(mounts) = v1_mounts(test) else {
        return;
    };
    let w = Workload::start("dry", mounts.clone());
    std::thread::sleep(Duration::from_millis(300));
    let snapshot = || {
        let mut t = BTreeMap::new();
        tree(&w.root, &mut t);
        (
            t,
            top_level(&mounts.0, &w.daemon_name),
            top_level(&mounts.1, &w.daemon_name),
            w.placement(),
        )
    };
    let before = snapshot();
    let out = Command::new(BIN)
        .args([
            "run",
            "--dry-run",
            "--once",
            "--interval",
            "300",
            "--socket",
            "none",
        ])
        .args(["--scope-cgroup", &w.scope(), "--group-name", &w.daemon_name])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("would move thread"),
        "the dry run planned nothing:\n{stdout}"
    );
    let after = snapshot();
    assert!(
        before.0 == after.0,
        "files under the workload's groups changed"
    );
    assert_eq!(before.1, after.1, "top-level cpu groups changed");
    assert_eq!(before.2, after.2, "top-level cpuset groups changed");
    assert_eq!(before.3, after.3, "threads moved");
}

#[test]
fn config_errors_name_file_line_and_key_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[classify]\nmedium = 0.3\nhevy = 0.7\n").unwrap();
    for args in [
        vec!["config", "check"],
        vec!["run", "--dry-run", "--once", "--socket", "none", "--config"],
    ] {
        let out = Command::new(BIN).args(&args).arg(&bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{}:3: key `classify.hevy`", bad.display())),
            "{err}"
        );
        assert!(
            out.stdout.is_empty(),
            "nothing planned or applied: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    std::fs::write(&bad, "[classify]\nmedium = 0.4\nheavy = 0.35\n").unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains(":3: key `classify.heavy`: the heavy threshold"));
    // The printed defaults pass.
    let defaults = Command::new(BIN)
        .args(["config", "default"])
        .output()
        .unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, defaults.stdout).unwrap();
    let out = Command::new(BIN)
        .args(["config", "check"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 13: `corral run --scope-pid $$` started from a shell managed
/// nothing — the sampler never looked past corral's ancestors. The shell
/// itself must stay unmanaged; its other descendants are in scope. Run as
/// a user would: the shell starts the daemon, then a hog. (`--dry-run`
/// changes nothing, so this runs without root.)
#[test]
fn issue_13_scope_pid_of_the_starting_shell_manages_its_other_descendants() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("sock");
    let script = format!(
        "\"{BIN}\" run --dry-run --scope-pid $$ --interval 100 --socket '{}' >/dev/null 2>'{}' &\n\
         echo $!\n\
         sh -c 'while :; do :; done' &\n\
         echo $!\n\
         wait",
        socket.display(),
        tmp.path().join("err").display()
    );
    let mut shell = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(shell.stdout.take().unwrap());
    let mut line = String::new();
    let mut pid = || {
        use std::io::BufRead;
        line.clear();
        out.read_line(&mut line).unwrap();
        line.trim().parse::<i32>().unwrap()
    };
    let (daemon, hog) = (pid(), pid());
    let kill = |pid: i32, sig| unsafe { libc::kill(pid, sig) };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut found = None;
    while Instant::now() < deadline && found.is_none() {
        std::thread::sleep(Duration::from_millis(100));
        found = status(&socket).and_then(|s| {
            let threads = s["threads"].as_array()?.clone();
            let pids: Vec<u64> = threads.iter().filter_map(|t| t["pid"].as_u64()).collect();
            pids.contains(&(hog as u64)).then_some(pids)
        });
    }
    kill(hog, libc::SIGKILL);
    kill(daemon, libc::SIGTERM);
    let _ = shell.wait();
    let err = std::fs::read_to_string(tmp.path().join("err")).unwrap_or_default();
    let pids = found
        .unwrap_or_else(|| panic!("the hog {hog} never showed up in status; daemon said:\n{err}"));
    assert!(
        !pids.contains(&(shell.id() as u64)),
        "the shell that started corral is managed: {pids:?}"
    );
    assert!(
        err.contains("never managed itself; its other descendants are"),
        "no note about the ancestor scope root:\n{err}"
    );
}

/// A scope root that cannot be used is refused at start, saying why.
#[test]
fn issue_13_a_bad_scope_root_is_reported_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |pid: &str| {
        Command::new(BIN)
            .args([
                "run",
                "--dry-run",
                "--once",
                "--socket",
                "none",
                "--scope-pid",
                pid,
            ])
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    // PID_MAX_LIMIT is 2^22: a larger PID never exists.
    let out = run("4194304");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--scope-pid 4194304: no such process"),
        "{err}"
    );
    // kthreadd (PID 2) is a kernel thread.
    let out = run("2");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("kernel thread"), "{err}");
}

/// Starts `corral run` on `w` with its record in `state`; waits until the
/// periodic thread sits in the latency group. If it never does, the
/// daemon is ended (SIGTERM: it puts back what it moved) before the test
/// fails with `what` and the daemon's log.
fn start_placed(w: &Workload, state: &Path, socket: &Path, what: &str) -> Child {
    let mut daemon = Command::new(BIN)
        .args([
            "run",
            "--interval",
            "100",
            "--scope-cgroup",
            &w.scope(),
            "--group-name",
            &w.daemon_name,
            "--state-dir",
        ])
        .arg(state)
        .arg("--socket")
        .arg(socket)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let periodic = w.pids()[2];
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        if let Some(s) = status(socket) {
            if s["threads"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["tid"] == periodic && t["group"] == "latency")
            {
                return daemon;
            }
        }
    }
    // SIGTERM, then SIGKILL if it has not ended within 10 s.
    signal(&daemon, rustix::process::Signal::TERM);
    let t0 = Instant::now();
    while daemon.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = daemon.kill();
    let out = daemon.wait_with_output().unwrap();
    panic!("{what}:\n{}", String::from_utf8_lossy(&out.stderr));
}

fn signal(child: &Child, sig: rustix::process::Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), sig).unwrap();
}

/// Issue 14: a `kill -9` leaves threads in corral's groups; the next start
/// puts them back from the record before anything else, and `corral
/// restore` does the same alone. SIGHUP ends the daemon cleanly.
#[test]
fn privileged_kill9_is_undone_by_the_next_start_and_by_restore() {
    let _serial = serial();
    let test = "privileged_kill9_is_undone_by_the_next_start_and_by_restore";
    let Some(mounts) = v1_mounts(test) else {
        return;
    };
    let w = Workload::start("kill", mounts);
    std::thread::sleep(Duration::from_millis(300));
    let before = w.placement();
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let record = state.join(format!("{}.json", w.daemon_name));
    let socket = tmp.path().join("corral.sock");

    // 1. kill -9, then a new start: it reconciles, and SIGTERM ends clean.
    let mut d = start_placed(
        &w,
        &state,
        &socket,
        "the daemon never placed the periodic thread",
    );
    signal(&d, rustix::process::Signal::KILL);
    let _ = d.wait();
    assert_ne!(w.placement(), before, "the kill left threads moved");
    assert!(record.exists(), "no record at {}", record.display());
    let d = start_placed(
        &w,
        &state,
        &socket,
        "the restarted daemon never placed the thread",
    );
    signal(&d, rustix::process::Signal::TERM);
    let out = d.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("found what corral PID"), "{log}");
    assert_eq!(w.placement(), before, "after restart + SIGTERM:\n{log}");
    for dir in w.daemon_dirs() {
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
    assert!(!record.exists(), "the record outlived a clean stop");

    // 2. kill -9, then `corral restore`.
    let mut d = start_placed(&w, &state, &socket, "before restore: never placed");
    signal(&d, rustix::process::Signal::KILL);
    let _ = d.wait();
    let out = Command::new(BIN)
        .args(["restore", "--group-name", &w.daemon_name, "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("found what corral PID"), "{said}");
    assert_eq!(w.placement(), before, "after restore: {said}");
    for dir in w.daemon_dirs() {
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
    assert!(!record.exists());

    // 3. SIGHUP (a closed terminal) ends it cleanly; a second daemon on the
    // same group is refused while the first runs.
    let d = start_placed(&w, &state, &socket, "before SIGHUP: never placed");
    let second = Command::new(BIN)
        .args([
            "run",
            "--scope-cgroup",
            &w.scope(),
            "--group-name",
            &w.daemon_name,
            "--socket",
            "none",
            "--state-dir",
        ])
        .arg(&state)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "a second daemon ran: {err}");
    assert!(err.contains("already manages group"), "{err}");
    signal(&d, rustix::process::Signal::HUP);
    let out = d.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "SIGHUP: {}\n{log}", out.status);
    assert!(log.contains("SIGHUP"), "{log}");
    assert_eq!(w.placement(), before, "after SIGHUP:\n{log}");
}

/// A program started in a shell corral manages may make itself real-time
/// (cgroup v1 with real-time group scheduling: a group without real-time
/// time refuses `sched_setscheduler`, EPERM — cyclictest stopped with
/// "Unable to change scheduling policy!"). corral's groups have a little;
/// the daemon then sends the real-time thread, born in the shell's group
/// and never placed, out of its cpu groups. The shell's own group has no
/// real-time time either (as a systemd slice on v1), so the kernel
/// refuses it there (EINVAL) and the thread goes to the nearest group
/// that takes it, the root; its cpuset, inherited, goes home too.
#[test]
fn privileged_a_program_in_a_managed_shell_may_turn_real_time() {
    let _serial = serial();
    let test = "privileged_a_program_in_a_managed_shell_may_turn_real_time";
    let Some(mounts) = v1_mounts(test) else {
        return;
    };
    if !mounts.0.join("cpu.rt_runtime_us").exists() {
        eprintln!("SKIP {test}: no real-time group scheduling (cpu.rt_runtime_us)");
        return;
    }
    if Command::new("chrt").arg("--version").output().is_err() {
        eprintln!("SKIP {test}: chrt (util-linux) is not installed");
        return;
    }
    /// Ends what the test started and removes its groups, however it ends.
    struct Cleanup {
        pids: Vec<i32>,
        mounts: (PathBuf, PathBuf),
        groups: Vec<String>,
    }
    impl Drop for Cleanup {
        fn drop(&mut self) {
            for &p in &self.pids {
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(200));
            for g in &self.groups {
                remove_groups(&self.mounts, g);
                let _ = std::fs::remove_dir(self.mounts.0.join(g));
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let (socket, go) = (tmp.path().join("sock"), tmp.path().join("go"));
    let name = format!("corral-test-{}-rt", std::process::id());
    // The shell's own cpu group: no real-time time, as the kernel makes it.
    let home = format!("corral-test-{}-rthome", std::process::id());
    std::fs::create_dir(mounts.0.join(&home)).unwrap();
    let mut cleanup = Cleanup {
        pids: vec![],
        mounts: mounts.clone(),
        groups: vec![name.clone(), home.clone()],
    };
    // The shell waits until corral has placed it, then starts a program
    // that makes itself SCHED_FIFO (chrt sets its own policy, then execs)
    // and says its PID once it is.
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done\n\
         chrt -f 10 sh -c 'echo $$; exec sleep 30'",
        go.display()
    );
    let mut shell = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let shell_pid = shell.id();
    cleanup.pids.push(shell_pid as i32);
    std::fs::write(mounts.0.join(&home).join("tasks"), shell_pid.to_string()).unwrap();
    let mut daemon = Command::new(BIN)
        .args(["run", "--interval", "100", "--group-name", &name])
        .args(["--scope-pid", &shell_pid.to_string()])
        .arg("--state-dir")
        .arg(tmp.path())
        .arg("--socket")
        .arg(&socket)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    cleanup.pids.push(daemon.id() as i32);
    // The task's path in the hierarchy carrying `controller`.
    let cgroup_of = |pid: u32, controller: &str| -> String {
        std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| {
                let mut f = l.splitn(3, ':');
                let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
                ctrl.split(',')
                    .any(|c| c == controller)
                    .then(|| path.to_string())
            })
            .unwrap_or_default()
    };
    let inside = |path: &str| path.starts_with(&format!("/{name}/"));
    let shell_cpuset = cgroup_of(shell_pid, "cpuset");
    let deadline = Instant::now() + Duration::from_secs(15);
    while !inside(&cgroup_of(shell_pid, "cpu")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let placed = cgroup_of(shell_pid, "cpu");
    let mut rt_pid = None;
    let mut sent = (String::new(), String::new());
    let mut policy = u32::MAX;
    if inside(&placed) {
        std::fs::write(&go, "").unwrap();
        use std::io::BufRead;
        let mut line = String::new();
        let mut lines = std::io::BufReader::new(shell.stdout.take().unwrap());
        let _ = lines.read_line(&mut line);
        rt_pid = line.trim().parse::<u32>().ok();
        if let Some(pid) = rt_pid {
            cleanup.pids.push(pid as i32);
            policy = corral_linux::sched::sched_getattr(pid)
                .map(|a| a.sched_policy)
                .unwrap_or(u32::MAX);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                sent = (cgroup_of(pid, "cpu"), cgroup_of(pid, "cpuset"));
                if !inside(&sent.0) && !inside(&sent.1) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    // corral stops while the program runs (its thread left corral's
    // groups; SIGTERM must still remove them all).
    signal(&daemon, rustix::process::Signal::TERM);
    let t0 = Instant::now();
    while daemon.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = daemon.kill();
    let log = String::from_utf8_lossy(&daemon.wait_with_output().unwrap().stderr).to_string();
    let left: Vec<bool> = [&mounts.0, &mounts.1]
        .iter()
        .map(|m| m.join(&name).exists())
        .collect();
    if let Some(pid) = rt_pid {
        // (It holds the shell's output open.)
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    let _ = shell.kill();
    let shell_out = shell.wait_with_output().unwrap();
    drop(cleanup);
    assert!(
        inside(&placed),
        "corral never placed the shell ({placed:?}):\n{log}"
    );
    let Some(rt_pid) = rt_pid else {
        panic!(
            "the program could not make itself real-time: {}\n{log}",
            String::from_utf8_lossy(&shell_out.stderr)
        );
    };
    assert_eq!(policy, libc::SCHED_FIFO as u32, "not SCHED_FIFO:\n{log}");
    // The log says it was found inside corral's groups.
    assert!(
        log.contains(&format!("send real-time thread {rt_pid} ")),
        "not sent out:\n{log}"
    );
    assert_eq!(
        sent.0, "/",
        "the real-time thread is not in the root cpu group (its home, /{home}, takes no real-time task):\n{log}"
    );
    assert_eq!(
        sent.1, shell_cpuset,
        "its inherited cpuset did not go home:\n{log}"
    );
    assert_eq!(left, [false, false], "groups left after SIGTERM:\n{log}");
}
