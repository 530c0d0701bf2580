//! Paper 001's boost on the live kernel, through `corral run`, the CLI and
//! the C client. Privileged tests skip without root or without cgroup v1
//! `cpu` and `cpuset` hierarchies; a guard kills every process a test
//! started and removes every group, whatever happens.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{remove_groups, serial, v1_mounts, BIN};

/// A test's cgroup with its processes and a daemon scoped to it.
struct Lab {
    mounts: (PathBuf, PathBuf),
    root: PathBuf,
    children: Vec<Child>,
    daemon: Option<Child>,
    daemon_name: String,
    socket: PathBuf,
    tmp: tempfile::TempDir,
}

impl Lab {
    fn new(name: &str, mounts: (PathBuf, PathBuf)) -> Lab {
        let root = mounts
            .0
            .join(format!("corral-test-{}-{name}", std::process::id()));
        std::fs::create_dir(&root).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        // Other users reach the socket (0666) through this directory.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Lab {
            daemon_name: format!("corral-test-{}-{name}-d", std::process::id()),
            socket: tmp.path().join("corral.sock"),
            tmp,
            mounts,
            root,
            children: vec![],
            daemon: None,
        }
    }

    /// Starts `cmd` in the test's cgroup; returns its PID.
    fn spawn(&mut self, mut cmd: Command) -> u32 {
        let child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let pid = child.id();
        std::fs::write(self.root.join("cgroup.procs"), pid.to_string()).unwrap();
        self.children.push(child);
        pid
    }

    fn corral(&mut self, args: &[&str]) -> u32 {
        let mut c = Command::new(BIN);
        c.args(args);
        self.spawn(c)
    }

    fn start_daemon(&mut self) {
        let scope = format!("/{}", self.root.file_name().unwrap().to_string_lossy());
        let d = Command::new(BIN)
            .args([
                "run",
                "--interval",
                "100",
                "--scope-cgroup",
                &scope,
                "--group-name",
                &self.daemon_name,
                "--socket",
            ])
            .arg(&self.socket)
            .stderr(std::fs::File::create(self.tmp.path().join("daemon.log")).unwrap())
            .spawn()
            .unwrap();
        self.daemon = Some(d);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.socket.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Let it sample everything twice and place it.
        std::thread::sleep(Duration::from_millis(600));
    }

    /// What the daemon says of itself (`status --json`) and its log, for
    /// a failure's message.
    fn status_json(&self) -> String {
        let status = Command::new(BIN)
            .args(["status", "--json", "--socket"])
            .arg(&self.socket)
            .output()
            .unwrap();
        let log = std::fs::read_to_string(self.tmp.path().join("daemon.log")).unwrap_or_default();
        format!(
            "{}\ndaemon log:\n{log}",
            String::from_utf8_lossy(&status.stdout)
        )
    }

    /// The daemon's threads and the CPU sets they may run on.
    fn daemon_threads(&self) -> Vec<(u32, String)> {
        let pid = self.daemon.as_ref().map_or(0, |d| d.id());
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .map(|t| (t, allowed(t)))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn boost(&self, tid: u32, max_ms: u64) -> Output {
        Command::new(BIN)
            .args([
                "boost",
                &tid.to_string(),
                "--max-ms",
                &max_ms.to_string(),
                "--socket",
            ])
            .arg(&self.socket)
            .output()
            .unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(mut d) = self.daemon.take() {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_child(&d),
                rustix::process::Signal::TERM,
            );
            let _ = d.wait();
        }
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir(&self.root);
        remove_groups(&self.mounts, &self.daemon_name);
    }
}

fn cpu_cgroup(tid: u32) -> String {
    let text = std::fs::read_to_string(format!("/proc/{tid}/cgroup")).unwrap_or_default();
    text.lines()
        .find(|l| l.contains(":cpu:"))
        .map(|l| l.rsplit(':').next().unwrap().to_string())
        .unwrap_or_default()
}

fn allowed(tid: u32) -> String {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn nice(tid: u32) -> i32 {
    corral_linux::sched::sched_getattr(tid).unwrap().sched_nice
}

/// Raised: in its own boost group with the boost's nice value (between
/// boosts it stays in that group, at its own nice).
fn boosted(tid: u32) -> bool {
    cpu_cgroup(tid).ends_with(&format!("/boost-{tid}")) && nice(tid) == -20
}

/// Waits up to `limit` for `cond`; returns how long it took.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if cond() {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

#[test]
fn privileged_a_spinning_boosted_thread_is_unboosted_at_max_ms_and_hogs_get_their_affinity_back() {
    let _serial = serial();
    let test = "privileged_a_spinning_boosted_thread_is_unboosted_at_max_ms_and_hogs_get_their_affinity_back";
    let Some(mounts) = v1_mounts(test) else {
        return;
    };
    let mut lab = Lab::new("spin", mounts);
    let hogs: Vec<u32> = (0..3)
        .map(|_| lab.corral(&["lab", "work", "hog"]))
        .collect();
    let spinner = lab.corral(&["lab", "work", "hog"]);
    lab.start_daemon();
    let before: Vec<String> = hogs.iter().map(|&h| allowed(h)).collect();
    let t0 = Instant::now();
    let out = lab.boost(spinner, 400);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        boosted(spinner),
        "boosted once answered: cpu cgroup {}, nice {}, status {}",
        cpu_cgroup(spinner),
        nice(spinner),
        lab.status_json()
    );
    // Eviction: within a moment no hog may run on the spinner's CPU.
    let cpu = allowed(spinner);
    let evicted = wait_for(Duration::from_millis(300), || {
        hogs.iter()
            .all(|&h| !allowed(h).split(',').any(|c| c == cpu))
    });
    assert!(
        evicted.is_some(),
        "hogs still on CPU {cpu}: {:?}",
        hogs.iter().map(|&h| allowed(h)).collect::<Vec<_>>()
    );
    // corral's own threads stay off it too (LinuxHost::keep_self_off_dedicated).
    let own = lab.daemon_threads();
    assert!(
        !own.is_empty()
            && own.iter().all(|(_, m)| {
                !corral_core::CpuSet::parse(m)
                    .unwrap()
                    .contains(cpu.parse().unwrap())
            }),
        "corral's threads on CPU {cpu}: {own:?}"
    );
    // It never blocks, so the cap ends it.
    let ended = wait_for(Duration::from_secs(3), || !boosted(spinner));
    let at = t0.elapsed();
    assert!(ended.is_some(), "still boosted after 3 s");
    assert!(at >= Duration::from_millis(390), "ended early, at {at:?}");
    assert!(at < Duration::from_millis(1000), "ended late, at {at:?}");
    assert_eq!(nice(spinner), 0, "nice restored");
    let restored = wait_for(Duration::from_millis(500), || {
        hogs.iter().map(|&h| allowed(h)).collect::<Vec<_>>() == before
    });
    assert!(
        restored.is_some(),
        "hogs' affinity {:?}, before {before:?}",
        hogs.iter().map(|&h| allowed(h)).collect::<Vec<_>>()
    );
}

#[test]
fn privileged_a_boosted_thread_that_sleeps_is_restored_within_a_few_ms() {
    let _serial = serial();
    let test = "privileged_a_boosted_thread_that_sleeps_is_restored_within_a_few_ms";
    let Some(mounts) = v1_mounts(test) else {
        return;
    };
    let mut lab = Lab::new("sleep", mounts);
    // Runs 20 ms, sleeps 480 ms.
    let worker = lab.corral(&[
        "lab",
        "work",
        "periodic",
        "--period-ms",
        "500",
        "--run-ms",
        "20",
        "--periods",
        "1000",
    ]);
    lab.start_daemon();
    let out = lab.boost(worker, 5000);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(boosted(worker));
    // Within one period it wakes, runs 20 ms and blocks: the boost must end
    // then, not at the 5 s cap.
    let ended = wait_for(Duration::from_millis(1500), || !boosted(worker));
    assert!(
        ended.is_some(),
        "still boosted: blocking did not end the boost"
    );
    assert!(
        ended.unwrap() < Duration::from_millis(600),
        "ended after {:?}",
        ended.unwrap()
    );
    assert_eq!(nice(worker), 0);
    // How soon after it blocked: sample its state while boosted again.
    let out = lab.boost(worker, 5000);
    assert!(out.status.success());
    let mut blocked_at = None;
    let mut restored_at = None;
    let t0 = Instant::now();
    let mut ran = false;
    while t0.elapsed() < Duration::from_millis(1500) && restored_at.is_none() {
        let stat = std::fs::read_to_string(format!("/proc/{worker}/stat")).unwrap();
        let state = stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap();
        ran |= state == 'R';
        if ran && state != 'R' && blocked_at.is_none() {
            blocked_at = Some(Instant::now());
        }
        if !boosted(worker) {
            restored_at = Some(Instant::now());
        }
    }
    let (b, r) = (
        blocked_at.expect("saw it run and block"),
        restored_at.expect("restored"),
    );
    let lag = r.saturating_duration_since(b);
    println!("restored {lag:?} after it was seen to block");
    assert!(
        lag < Duration::from_millis(20),
        "restored {lag:?} after it blocked"
    );
}

#[test]
fn privileged_a_client_killed_mid_boost_leaves_nothing_behind() {
    let _serial = serial();
    let test = "privileged_a_client_killed_mid_boost_leaves_nothing_behind";
    let Some(mounts) = v1_mounts(test) else {
        return;
    };
    let mut lab = Lab::new("kill", mounts);
    let spinner = lab.corral(&["lab", "work", "hog"]);
    lab.start_daemon();
    // A client that boosts and then hangs; it is killed mid-boost. The
    // boost lasts long enough to be seen on a loaded CI host (a 300 ms one
    // once went unseen there).
    let mut client = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{BIN} boost {spinner} --max-ms 1000 --socket {} && sleep 30",
            lab.socket.display()
        ))
        .spawn()
        .unwrap();
    let seen = wait_for(Duration::from_secs(3), || boosted(spinner));
    assert!(
        seen.is_some(),
        "never seen boosted: cpu cgroup {}, nice {}, status {}",
        cpu_cgroup(spinner),
        nice(spinner),
        lab.status_json()
    );
    client.kill().unwrap();
    client.wait().unwrap();
    let ended = wait_for(Duration::from_secs(3), || !boosted(spinner));
    assert!(ended.is_some(), "the boost outlived its client and its cap");
    assert_eq!(nice(spinner), 0);
    let s = Command::new(BIN)
        .args(["status", "--json", "--socket"])
        .arg(&lab.socket)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    assert_eq!(v["boosted"], serde_json::json!([]), "{v}");
    // Its own group is no longer raised: at rest it is as its class would
    // place it (a CPU hog's group has the dedicated core's weight when it
    // wins one, issue 16), never at the boost's.
    let raised: Vec<&serde_json::Value> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| {
            g["kind"] == "boost" && g["shares"].as_u64() == Some(corral_core::share::MAX_SHARES)
        })
        .collect();
    assert!(raised.is_empty(), "{raised:?}");
}

#[test]
fn privileged_nobody_cannot_boost_a_root_thread() {
    let _serial = serial();
    let test = "privileged_nobody_cannot_boost_a_root_thread";
    let Some(mounts) = v1_mounts(test) else {
        return;
    };
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("SKIP {test}: setpriv (util-linux) is missing");
        return;
    }
    let mut lab = Lab::new("perm", mounts);
    let spinner = lab.corral(&["lab", "work", "hog"]);
    lab.start_daemon();
    let out = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            BIN,
            "boost",
            &spinner.to_string(),
            "--socket",
        ])
        .arg(&lab.socket)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("permission denied"), "{err}");
    assert!(
        err.contains("only root may boost other users' threads"),
        "{err}"
    );
    assert!(!boosted(spinner));
}

#[test]
fn privileged_the_c_example_compiles_and_boosts() {
    let _serial = serial();
    let test = "privileged_the_c_example_compiles_and_boosts";
    let Some(mounts) = v1_mounts(test) else {
        return;
    };
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("SKIP {test}: no C compiler");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/c");
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("corral-example");
    let cc = Command::new("cc")
        .args(["-Wall", "-Wextra", "-Werror", "-O2", "-o"])
        .arg(&exe)
        .arg(dir.join("example.c"))
        .arg(dir.join("corral_client.c"))
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let mut lab = Lab::new("c", mounts);
    lab.start_daemon();
    // The example boosts its own thread, so it must be in scope first:
    // start it paused behind a shell that joins the test's cgroup.
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!(
            "echo $$ > {}/cgroup.procs; sleep 0.5; exec {} 0 3",
            lab.root.display(),
            exe.display()
        ))
        .env("CORRAL_SOCKET", &lab.socket);
    let child = c.stdout(Stdio::piped()).spawn().unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("boosted thread"), "{stdout}");
}
