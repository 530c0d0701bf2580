//! The socket's verbs on D-Bus, on a private bus daemon of the test's own
//! (this machine has no system bus; `DBUS_SYSTEM_BUS_ADDRESS` points the
//! daemon at it): Status, a boost granted to root, and a boost of root's
//! thread refused to another user with AccessDenied — the uid the bus
//! tells, not one the caller claims.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::BIN;

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `dbus-send` of a method of corral's object, as `uid` when given.
fn call(address: &str, uid: Option<u32>, method: &str, args: &[&str]) -> (bool, String) {
    let mut cmd = match uid {
        Some(u) => {
            let mut c = Command::new("setpriv");
            c.args([
                &format!("--reuid={u}"),
                &format!("--regid={u}"),
                "--clear-groups",
                "dbus-send",
            ]);
            c
        }
        None => Command::new("dbus-send"),
    };
    let out = cmd
        .arg(format!("--bus={address}"))
        .args([
            "--print-reply",
            "--dest=org.corral.Daemon1",
            "/org/corral/Daemon1",
            &format!("org.corral.Daemon1.{method}"),
        ])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn verbs_on_the_bus_check_the_callers_uid() {
    if Command::new("dbus-daemon")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIP verbs_on_the_bus_check_the_callers_uid: dbus-daemon is not installed");
        return;
    }
    let root = rustix::process::geteuid().is_root();
    let dir = tempfile::tempdir().unwrap();
    // Another user must reach the bus's socket.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = dir.path().join("bus.conf");
    std::fs::write(
        &conf,
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path={}/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="org.corral.Daemon1"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"#,
            dir.path().display()
        ),
    )
    .unwrap();
    let mut bus = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", conf.display()))
        .args(["--nofork", "--nopidfile", "--print-address"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(bus.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _bus = Kill(bus);
    let address = line.trim().to_string();
    assert!(address.starts_with("unix:"), "{address}");

    let socket = dir.path().join("s.sock");
    let sleeper = Kill(Command::new("sleep").arg("60").spawn().unwrap());
    let tid = sleeper.0.id().to_string();
    let mut d = Command::new(BIN)
        .args(["run", "--dry-run", "--interval", "200", "--socket"])
        .arg(&socket)
        .args(["--scope-pid", &tid])
        .env("DBUS_SYSTEM_BUS_ADDRESS", &address)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = BufReader::new(d.stderr.take().unwrap()).lines();
    let _d = Kill(d);
    let serving = loop {
        let Some(Ok(l)) = log.next() else {
            break String::new();
        };
        if l.contains("D-Bus") {
            break l;
        }
    };
    // The rest of the log is drained, so the daemon never blocks on it.
    std::thread::spawn(move || log.for_each(drop));
    assert!(
        serving.contains("org.corral.Daemon1 on the system bus"),
        "{serving}"
    );

    let t0 = Instant::now();
    let status = loop {
        let (ok, said) = call(&address, None, "Status", &[]);
        if ok && said.contains(&format!("\"tid\":{tid},")) || t0.elapsed() > Duration::from_secs(15)
        {
            break said;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.contains(&format!("\"tid\":{tid},")), "{status}");
    let (ok, granted) = call(
        &address,
        None,
        "Boost",
        &[&format!("uint32:{tid}"), "uint64:50"],
    );
    assert!(ok, "{granted}");
    assert!(granted.contains("uint64 50"), "{granted}");
    let (ok, metrics) = call(&address, None, "Metrics", &[]);
    assert!(
        ok && metrics.contains("corral_boosts_granted_total 1"),
        "{metrics}"
    );

    if !root {
        println!("SKIP verbs_on_the_bus_check_the_callers_uid (another user's call): needs root (setpriv)");
        return;
    }
    let (ok, refused) = call(
        &address,
        Some(65534),
        "Boost",
        &[&format!("uint32:{tid}"), "uint64:50"],
    );
    assert!(!ok, "{refused}");
    assert!(
        refused.contains("org.freedesktop.DBus.Error.AccessDenied")
            && refused.contains("the caller is uid 65534"),
        "{refused}"
    );
}
