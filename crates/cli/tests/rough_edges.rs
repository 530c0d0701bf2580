//! Issue 16's rough edges, each as a newcomer meets it: help text, the
//! socket's environment variable, a scope that does not exist or has
//! ended, a dry run as a user.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::BIN;

fn corral() -> Command {
    Command::new(BIN)
}

fn text(args: &[&str]) -> String {
    let out = corral().args(args).output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_fake_tree_roots_stay_out_of_the_subcommands_help() {
    for sub in ["status", "boost", "config", "run", "cpus"] {
        let help = text(&[sub, "--help"]);
        assert!(!help.contains("--sysfs-root"), "{sub}: {help}");
        assert!(!help.contains("--cgroup-root"), "{sub}: {help}");
    }
    // Named once, in the top-level help.
    let top = text(&["--help"]);
    assert!(top.contains("--sysfs-root DIR"), "{top}");
    // Still accepted anywhere.
    let out = corral()
        .args(["cpus", "--sysfs-root", "/nonexistent-corral-test"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("/nonexistent-corral-test"), "{said}");
}

#[test]
fn run_help_shows_the_defaults_and_status_honours_corral_socket() {
    let help = text(&["run", "--help"]);
    assert!(help.contains("[default: 1000]"), "{help}");
    assert!(help.contains("/run/corral.sock"), "{help}");
    assert!(!help.contains("paper 00"), "{help}");
    let help = text(&["boost", "--help"]);
    assert!(help.contains("CORRAL_SOCKET"), "{help}");
    let out = corral()
        .arg("status")
        .env("CORRAL_SOCKET", "/nonexistent-corral-test/c.sock")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("/nonexistent-corral-test/c.sock"), "{said}");
}

#[test]
fn a_scope_pid_that_does_not_exist_is_refused() {
    // A PID that existed a moment ago, waited for: gone.
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    let out = corral()
        .args([
            "run",
            "--dry-run",
            "--once",
            "--socket",
            "none",
            "--scope-pid",
        ])
        .arg(pid.to_string())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(&format!("--scope-pid {pid}: no such process")),
        "{said}"
    );
}

/// When every process in scope has exited the daemon says so and ends;
/// a dry run's end does not claim to have put anything back.
#[test]
fn the_daemon_ends_when_its_scope_has_ended() {
    let mut sleeper = Command::new("sleep").arg("1").spawn().unwrap();
    let pid = sleeper.id();
    let mut d = corral()
        .args(["run", "--dry-run", "--socket", "none", "--interval", "100"])
        .args(["--scope-pid", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    sleeper.wait().unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = d.try_wait().unwrap() {
            break Some(s);
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = d.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = d.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(status.is_some_and(|s| s.success()), "{status:?}: {said}");
    assert!(
        said.contains(&format!(
            "process {pid} and every thread in scope have exited"
        )),
        "{said}"
    );
    assert!(said.contains("a dry run changes nothing"), "{said}");
    assert!(!said.contains("put back"), "{said}");
    assert!(
        said.contains(&format!("managing process {pid} and its descendants")),
        "{said}"
    );
}

/// `--dry-run` needs no root: as a user, with no runtime directory, it
/// answers on no socket instead of failing on /run/corral.sock.
#[test]
fn a_dry_run_as_a_user_needs_no_socket_in_run() {
    let name = "a_dry_run_as_a_user_needs_no_socket_in_run";
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIP {name}: needs root to run the CLI as user nobody");
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("SKIP {name}: setpriv (util-linux) is not installed");
        return;
    }
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(BIN)
        .args(["run", "--dry-run", "--once", "--scope-pid"])
        .arg(sleeper.id().to_string())
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("CORRAL_SOCKET")
        .output()
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let said = String::from_utf8_lossy(&out.stderr);
    if said.contains("Permission denied") && said.contains(BIN) {
        eprintln!("SKIP {name}: user nobody cannot run {BIN} here");
        return;
    }
    assert!(out.status.success(), "{said}");
    assert!(said.contains("a dry run as a user: no socket"), "{said}");
}

const BROWSER: &str = "/usr/share/doc/rt-app/examples/browser-short.json";

/// A workload that starts late gets a chart with something in it, and
/// flags that would be ignored are refused.
#[test]
fn sim_charts_the_first_runs_and_refuses_flags_it_would_ignore() {
    let name = "sim_charts_the_first_runs_and_refuses_flags_it_would_ignore";
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("c.svg");
    // A workload that starts 400 ms in (browser-short's own is in
    // Debian's rt-app package; this one stands in where it is absent).
    let late = dir.path().join("late.json");
    std::fs::write(
        &late,
        r#"{"tasks": {"t": {"loop": 1, "phases": {
                "wait": {"loop": 1, "sleep": 400000},
                "work": {"loop": 100, "run": 2000, "sleep": 8000}}}},
            "global": {"duration": 1}}"#,
    )
    .unwrap();
    let mut workloads = vec![late.clone()];
    if std::path::Path::new(BROWSER).exists() {
        workloads.push(BROWSER.into());
    } else {
        eprintln!("note {name}: {BROWSER} missing (apt install rt-app); the stand-in only");
    }
    for w in &workloads {
        let out = corral()
            .arg("sim")
            .arg(w)
            .args(["--duration", "1", "--svg"])
            .arg(&svg)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let chart = std::fs::read_to_string(&svg).unwrap();
        assert!(chart.contains("<title>"), "{}: an empty chart", w.display());
    }
    let w = late.to_str().unwrap();
    let pinned = dir.path().join("pinned.json");
    std::fs::write(
        &pinned,
        r#"{"tasks": {"t": {"cpus": [0, 7], "loop": 10, "run": 1000, "sleep": 1000}}}"#,
    )
    .unwrap();
    let pinned = pinned.to_str().unwrap().to_string();
    let packing = dir.path().join("packing.toml");
    std::fs::write(&packing, "cpus = 2\nvcpu_pack_util = 705\n").unwrap();
    let packing = packing.to_str().unwrap().to_string();
    for (args, want) in [
        (
            vec!["sim", w, "--platform", &packing, "--kernel", "cfs"],
            "vcpu_pack_util = 705 packs wake-ups as a 6.x guest kernel does; the cfs model has no such rule",
        ),
        (vec!["sim", w, "--svg-window", "0..10ms"], "--svg"),
        (
            vec!["sim", w, "--svg", "/dev/null", "--svg-window", "5s..6s"],
            "past the end",
        ),
        (vec!["sim", w, "--config", "/dev/null"], "--policy corral"),
        (vec!["sim", w, "--kernel", "nope"], "eevdf, cfs"),
        (
            vec!["sim", w, "--group-shares", "/bg=52"],
            "group /bg: no task runs in it",
        ),
        (
            vec!["sim", &pinned, "--cpus", "2"],
            "names CPU 7, and the platform has 2",
        ),
    ] {
        let out = corral().args(&args).output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {said}");
        assert!(said.contains(want), "{args:?}: {said}");
    }
}

/// `--beside` runs another file's threads with the workload's (what
/// `lab validate --keep` writes as the others it replayed), and a bad one
/// is named.
#[test]
fn sim_runs_the_threads_of_a_file_beside_the_workload() {
    let dir = tempfile::tempdir().unwrap();
    let (w, o) = (dir.path().join("w.json"), dir.path().join("o.json"));
    std::fs::write(
        &w,
        r#"{"tasks": {"hog": {"cpus": [0], "run": 100000}}, "global": {"duration": 2}}"#,
    )
    .unwrap();
    std::fs::write(
        &o,
        r#"{"tasks": {"other": {"cpus": [0], "loop": 1, "corral_background": true,
            "corral_until0": 1000000, "run1": 500000}}}"#,
    )
    .unwrap();
    let (w, o) = (w.to_str().unwrap(), o.to_str().unwrap());
    let json = |args: &[&str]| -> serde_json::Value {
        let out = corral().args(args).arg("--json").output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let cpu = |v: &serde_json::Value, name: &str| {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["cpu_s"].as_f64().unwrap())
    };
    let alone = json(&["sim", w]);
    let beside = json(&["sim", w, "--beside", o]);
    assert_eq!(cpu(&alone, "other"), None);
    // The other thread runs its 0.5 s from 1 s on, on the hog's CPU:
    // the hog gets about half of that second.
    assert!(
        (cpu(&beside, "other").unwrap() - 0.5).abs() < 0.01,
        "{beside}"
    );
    let lost = cpu(&alone, "hog").unwrap() - cpu(&beside, "hog").unwrap();
    assert!((lost - 0.5).abs() < 0.01, "{alone} {beside}");
    let said = text(&["sim", w, "--beside", "/nonexistent/o.json"]);
    assert!(said.contains("cannot read /nonexistent/o.json"), "{said}");
    // A name in both would join the two (a task here; a timer, lock or
    // barrier alike): refused.
    let said = text(&["sim", w, "--beside", w]);
    assert!(said.contains("[\"hog\"] also named in"), "{said}");
}

/// What a newcomer reads points at files the repository has: every path
/// in backquotes in README.md and ARCHITECTURE.md that names a file of
/// ours exists, and none leaves the repository.
#[test]
fn the_docs_point_only_at_files_in_the_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let exts = [
        ".rs", ".md", ".toml", ".json", ".service", ".c", ".h", ".sh",
    ];
    for doc in ["README.md", "ARCHITECTURE.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for span in text.split('`').skip(1).step_by(2) {
            if span.contains(char::is_whitespace) {
                continue;
            }
            assert!(
                !span.starts_with("../"),
                "{doc}: `{span}` is outside the repository"
            );
            let ours = ["crates/", "scripts/", "dist/", "clients/", "docs/", ".ci/"]
                .iter()
                .any(|p| span.starts_with(p));
            if ours && exts.iter().any(|e| span.ends_with(e)) {
                assert!(root.join(span).exists(), "{doc}: `{span}` does not exist");
            }
        }
    }
}

/// `config check` names every error, not just the first, with its line
/// and key (a rule by its index), in words rather than Rust's types.
#[test]
fn config_check_reports_every_error_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.toml");
    std::fs::write(
        &f,
        "[classify]\nheavy = 1.5\nhysteresis = 2\n[daemon]\ninterval_ms = 5\n[plan]\nboost_nice = 40\n",
    )
    .unwrap();
    let out = corral().args(["config", "check"]).arg(&f).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    for want in [
        ":2: key `classify.heavy`",
        ":3: key `classify.hysteresis`",
        ":5: key `daemon.interval_ms`",
        ":7: key `plan.boost_nice`",
    ] {
        assert!(said.contains(want), "{want}: {said}");
    }
    assert!(said.contains(" errors"), "{said}");
    // In file order.
    let at = |k: &str| said.find(k).unwrap();
    assert!(at("classify.heavy") < at("daemon.interval_ms"));
    // A type error: words, and the rule's index.
    std::fs::write(
        &f,
        "[[rule]]\ncomm = \"a\"\nclass = \"heavy\"\n[[rule]]\ncomm = \"b\"\nclass = 7\n",
    )
    .unwrap();
    let out = corral().args(["config", "check"]).arg(&f).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(":6: key `rule[1].class`"), "{said}");
    std::fs::write(&f, "[daemon]\ninterval_ms = -5\n").unwrap();
    let out = corral().args(["config", "check"]).arg(&f).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("a whole number ≥ 0"), "{said}");
    assert!(!said.contains("u64"), "{said}");
}

/// `status` says which configuration file and which scope are in force.
#[test]
fn status_names_the_configuration_and_the_scope() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("c.toml");
    std::fs::write(&conf, "[daemon]\ninterval_ms = 100\n").unwrap();
    let socket = dir.path().join("s.sock");
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let mut d = corral()
        .args(["run", "--dry-run", "--config"])
        .arg(&conf)
        .arg("--socket")
        .arg(&socket)
        .args(["--scope-pid", &sleeper.id().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let said = loop {
        let out = corral()
            .arg("status")
            .arg("--socket")
            .arg(&socket)
            .output()
            .unwrap();
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).to_string();
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "no status");
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = d.kill();
    let _ = d.wait();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(
        said.contains(&format!(
            "config: {}; managing process {} and its descendants",
            conf.display(),
            sleeper.id()
        )),
        "{said}"
    );
}

/// The man pages and completions come from the command line's definition.
#[test]
fn man_pages_and_completions_are_generated() {
    let dir = tempfile::tempdir().unwrap();
    let out = corral().arg("man").arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let run = std::fs::read_to_string(dir.path().join("corral-run.1")).unwrap();
    assert!(run.contains(".TH corral-run 1"), "{run}");
    assert!(run.contains("scope\\-pid"), "{run}");
    let top = std::fs::read_to_string(dir.path().join("corral.1")).unwrap();
    assert!(top.contains("corral\\-metrics(1)"), "{top}");
    assert!(dir.path().join("corral-lab-heavy.1").is_file());
    // The hidden subcommand has no page of its own.
    assert!(!dir.path().join("corral-man.1").exists());
    for (shell, says) in [
        ("bash", "complete -F _corral"),
        ("zsh", "#compdef corral"),
        ("fish", "complete -c corral"),
    ] {
        let script = text(&["completions", shell]);
        assert!(script.contains(says), "{shell}: {script}");
        assert!(script.contains("scope-pid"), "{shell}");
    }
    // bash loads it and completes a subcommand.
    let script = dir.path().join("corral.bash");
    std::fs::write(&script, text(&["completions", "bash"])).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(corral met); COMP_CWORD=1; _corral corral met corral; echo ${{COMPREPLY[@]}}",
            script.display()
        ))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "metrics",
        "{out:?}"
    );
}

/// `lab validate --from DIR` simulates kept runs again: it runs nothing
/// live (no root needed), names a directory that `--keep` did not write,
/// a kept settings file it cannot read by file and line, and refuses the
/// options that only a live run takes.
#[test]
fn validate_from_names_what_it_cannot_read_and_refuses_live_options() {
    let dir = tempfile::tempdir().unwrap();
    let out = corral()
        .args(["lab", "validate", "--from"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&dir.path().join("validate.json").display().to_string())
            && said.contains("--keep"),
        "{said}"
    );
    std::fs::write(dir.path().join("validate.json"), "{\n  \"machine\": 3\n}\n").unwrap();
    let out = corral()
        .args(["lab", "validate", "--from"])
        .arg(dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(said.contains("validate.json:2"), "{said}");
    for live_only in [
        &["--seconds", "5"][..],
        &["--runs", "2"],
        &["--keep", "/tmp/x"],
        &["--no-others"],
    ] {
        let out = corral()
            .args(["lab", "validate", "--from"])
            .arg(dir.path())
            .args(live_only)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            said.contains("cannot be used with") && said.contains(live_only[0]),
            "{said}"
        );
    }
}
