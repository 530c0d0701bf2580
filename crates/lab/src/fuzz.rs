//! `corral lab fuzz`: every parser that takes outside input, fed generated
//! and mutated inputs; a panic or a hang is a failure (issue 14).
//!
//! Coverage-guided fuzzing (cargo-fuzz, libFuzzer) needs a nightly
//! toolchain, which these machines cannot fetch; afl.rs needs its own
//! compiler wrapper. So this is a mutation fuzzer written here: each input
//! is a valid seed (the parser's own kind of file) changed by 1–8 random
//! edits — byte flips, insertions, deletions, duplicated or spliced runs,
//! and tokens parsers trip on (huge and negative numbers, brackets,
//! separators, NUL, non-UTF-8) — or, one case in eight, random bytes. A
//! watchdog ends the run with the input when one case takes over
//! [`HANG`]. proptest (a dev-dependency) shrinks failures in unit tests,
//! but its runner is built for tests, not a million cases a second.

use corral_sim::engine::Rng;
use serde::Serialize;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One case may take this long before it counts as a hang.
pub const HANG: Duration = Duration::from_secs(2);

/// A parser under test: its name, seeds, and a call that must not panic.
pub struct Target {
    pub name: &'static str,
    pub seeds: Vec<Vec<u8>>,
    pub call: fn(&[u8]),
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// Every parser of outside input.
///
/// (Over 120 lines on purpose: one table, a target per parser, its seeds
/// beside it; split, the list a reader checks for a missing parser would
/// be scattered.)
pub fn targets() -> Vec<Target> {
    let s = |v: &[&str]| v.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
    vec![
        Target {
            name: "config (TOML)",
            seeds: vec![
                corral_core::config::DEFAULT_TOML.as_bytes().to_vec(),
                b"[classify]\nheavy = 0.6\n[[rule]]\ncomm = \"a*\"\nclass = \"heavy\"\n".to_vec(),
                b"[plan]\nshared_shares = 2\n[guard]\nfloor = 0.1\n".to_vec(),
            ],
            call: |b| {
                let _ = corral_core::config::Config::parse(&text(b));
            },
        },
        Target {
            name: "rt-app workload (JSON)",
            seeds: s(&[
                r#"{"tasks":{"t":{"loop":-1,"run":1000,"timer":{"ref":"a","period":10000}},"h":{"instance":2,"run":5000}},"global":{"duration":1,"default_policy":"SCHED_OTHER"}}"#,
                r#"{"tasks":{"a":{"phases":{"p1":{"loop":2,"run":10,"sleep":20},"p2":{"run":5,"resume":"b"}}},"b":{"suspend":"b","run":7,"policy":"SCHED_FIFO","priority":10}}}"#,
                r#"{"tasks":{"x":{"cpus":[0,1],"taskgroup":"/g","lock":"m","run":3,"unlock":"m","barrier":"z"}},"global":{"duration":2,"calibration":"CPU0"}}"#,
            ]),
            call: |b| {
                // Only parse: a valid workload would run in the fuzzer.
                let _ = corral_sim::input::rtapp::parse(&text(b), "fuzz.json");
            },
        },
        Target {
            name: "JSON reader",
            seeds: s(&[r#"{"a":[1,2.5e3,-4,"x\u00e9\n"],/* c */"b":{"c":null,"d":true}}"#]),
            call: |b| {
                let _ = corral_sim::input::json::parse(&text(b));
            },
        },
        Target {
            name: "platform (TOML)",
            seeds: s(&[
                "kernel = \"eevdf\"\nhz = 250\ncpus = 4\nhotplug = \"1s:cpu1=off,2s:cpu1=on\"\n[groups]\n\"/bg\" = 52\n",
                "capacities = [1024, 1024, 446, 446]\n",
            ]),
            call: |b| {
                let _ = corral_sim::input::platform::parse(&text(b), "fuzz.toml");
            },
        },
        Target {
            name: "hot-plug spec",
            seeds: s(&["2s:cpu1=off,5s:cpu1=on", "10ms:cpu3=off"]),
            call: |b| {
                let _ = corral_sim::input::platform::parse_hotplug(&text(b), 4);
            },
        },
        Target {
            name: "socket request",
            seeds: s(&[
                r#"{"v":1,"cmd":"status"}"#,
                r#"{"v":1,"cmd":"explain","tid":42}"#,
                r#"{"v":1,"cmd":"boost","tid":7,"max_ms":100}"#,
            ]),
            call: |b| {
                let _ = corral_daemon::api::parse_request(&text(b));
            },
        },
        Target {
            name: "CPU list",
            seeds: s(&["0-3,8,10-11", "0", "1-4095", ""]),
            call: |b| {
                let _ = corral_core::CpuSet::parse(&text(b));
            },
        },
        Target {
            name: "schedstat",
            seeds: s(&["123456 7890 42\n"]),
            call: |b| {
                let _ = corral_linux::sampler::parse_schedstat(b);
            },
        },
        Target {
            name: "stat",
            seeds: s(&[
                "4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 987654 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
            ]),
            call: |b| {
                let t = text(b);
                let _ = corral_linux::sampler::parse_stat(&t);
                let _ = corral_linux::state::parse_start_time(&t);
            },
        },
        Target {
            name: "mountinfo",
            seeds: s(&[
                "30 1 0:26 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n31 1 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n40 1 0:30 /a\\040b /mnt/x\\134y rw - ext4 /dev/vda rw\n",
            ]),
            call: |b| {
                let _ = corral_linux::procfs::parse_mountinfo(&text(b), Path::new("mountinfo"));
            },
        },
        Target {
            name: "/proc/PID/cgroup",
            seeds: s(&["12:cpu,cpuacct:/a/b\n3:cpuset:/\n0::/user.slice\n"]),
            call: |b| {
                let _ = corral_linux::procfs::parse_cgroups(&text(b), Path::new("cgroup"));
            },
        },
        Target {
            name: "process connector messages",
            seeds: vec![vec![0u8; 64], {
                // A netlink header of one message of 76 bytes, then noise.
                let mut v = 76u32.to_ne_bytes().to_vec();
                v.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
                v.extend(std::iter::repeat_n(1u8, 64));
                v
            }],
            call: |b| {
                let mut out = Vec::new();
                corral_linux::procevents::parse_messages(b, &mut out);
            },
        },
        Target {
            name: "state record (JSON)",
            seeds: s(&[
                r#"{"version":1,"daemon_pid":7,"daemon_start":9,"layout":"v1","root_name":"corral","origins":[{"key":5,"pid":5,"start":11,"cpu":"/","cpuset":"/"}],"attrs":[{"tid":5,"pid":5,"start":11,"nice":0,"slice_ns":0}]}"#,
            ]),
            call: |b| {
                let _ = serde_json::from_slice::<corral_linux::state::State>(b);
            },
        },
    ]
}

/// Uniform in `0..n` (any n; 0 gives 0).
fn below(rng: &mut Rng, n: usize) -> usize {
    rng.below(n.max(1) as u64) as usize
}

const TOKENS: &[&[u8]] = &[
    b"99999999999999999999999",
    b"18446744073709551615",
    b"4294967296",
    b"-1",
    b"-9223372036854775808",
    b"1e308",
    b"NaN",
    b"-0",
    b"0x10",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"=",
    b"-",
    b"\n",
    b"\\",
    b"\0",
    b"\xff\xfe",
    b" - ",
    b"4095",
    b"4096",
    b")",
    b"(",
    b"[[",
    b"]]",
];

/// One input: a mutated seed, or random bytes.
pub fn input(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if below(rng, 8) == 0 {
        let n = below(rng, 256);
        return (0..n).map(|_| rng.next_u64() as u8).collect();
    }
    let mut v = seeds[below(rng, seeds.len())].clone();
    for _ in 0..1 + below(rng, 8) {
        let len = v.len();
        match below(rng, 7) {
            0 if len > 0 => {
                let i = below(rng, len);
                v[i] ^= 1 << below(rng, 8);
            }
            1 => {
                let i = below(rng, len + 1);
                v.insert(i, rng.next_u64() as u8);
            }
            2 if len > 0 => {
                let i = below(rng, len);
                let n = 1 + below(rng, (len - i).min(16));
                v.drain(i..i + n);
            }
            3 if len > 0 => {
                let i = below(rng, len);
                let n = 1 + below(rng, (len - i).min(32));
                let run: Vec<u8> = v[i..i + n].to_vec();
                let at = below(rng, len + 1);
                v.splice(at..at, run);
            }
            4 => {
                let t = TOKENS[below(rng, TOKENS.len())];
                let at = below(rng, len + 1);
                v.splice(at..at, t.iter().copied());
            }
            5 if len > 0 => {
                // Replace a digit run's neighbourhood with a token.
                let i = below(rng, len);
                let t = TOKENS[below(rng, TOKENS.len())];
                let end = (i + 1 + below(rng, 4)).min(len);
                v.splice(i..end, t.iter().copied());
            }
            _ => {
                let other = &seeds[below(rng, seeds.len())];
                if !other.is_empty() {
                    let i = below(rng, other.len());
                    let n = 1 + below(rng, (other.len() - i).min(64));
                    let at = below(rng, len + 1);
                    v.splice(at..at, other[i..i + n].iter().copied());
                }
            }
        }
        if v.len() > 64 * 1024 {
            v.truncate(64 * 1024);
        }
    }
    v
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TargetReport {
    pub name: String,
    pub cases: u64,
    pub panics: u64,
    pub seconds: f64,
    /// The slowest case, ms.
    pub slowest_ms: f64,
    /// The first panicking inputs (as lossy text), at most three.
    pub examples: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub seed: u64,
    pub cases_per_target: u64,
    pub targets: Vec<TargetReport>,
    pub panics: u64,
    pub hangs: u64,
}

/// Runs `cases` inputs through each target whose name contains `only`.
pub fn run(
    cases: u64,
    seed: u64,
    only: Option<&str>,
    stop: &AtomicBool,
    mut progress: impl FnMut(&str),
) -> Report {
    let mut report = Report {
        seed,
        cases_per_target: cases,
        ..Default::default()
    };
    // The watchdog: the current case's start (ms since `t0`, 0 = idle).
    let t0 = Instant::now();
    let started = Arc::new(AtomicU64::new(0));
    let current: Arc<std::sync::Mutex<(String, Vec<u8>)>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    {
        let (started, current, done) = (started.clone(), current.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
                let s = started.load(Ordering::SeqCst);
                let now = t0.elapsed().as_millis() as u64 + 1;
                if s != 0 && now.saturating_sub(s) > HANG.as_millis() as u64 {
                    let (name, input) = current.lock().map(|c| c.clone()).unwrap_or_default();
                    eprintln!(
                        "corral lab fuzz: HANG: {name} took over {} s on {:?}",
                        HANG.as_secs(),
                        String::from_utf8_lossy(&input)
                    );
                    std::process::exit(3);
                }
            }
        });
    }
    // Panics are expected findings here: keep their messages off stderr.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut rng = Rng::new(seed);
    for t in targets() {
        if only.is_some_and(|o| !t.name.contains(o)) {
            continue;
        }
        let mut r = TargetReport {
            name: t.name.into(),
            ..Default::default()
        };
        let start = Instant::now();
        for i in 0..cases {
            if i % 4096 == 0 && stop.load(Ordering::SeqCst) {
                break;
            }
            let inp = input(&mut rng, &t.seeds);
            if i % 1024 == 0 {
                if let Ok(mut c) = current.lock() {
                    *c = (t.name.to_string(), inp.clone());
                }
            }
            let c0 = Instant::now();
            started.store(t0.elapsed().as_millis() as u64 + 1, Ordering::SeqCst);
            let call = t.call;
            let ok = catch_unwind(AssertUnwindSafe(|| call(&inp))).is_ok();
            started.store(0, Ordering::SeqCst);
            r.slowest_ms = r.slowest_ms.max(c0.elapsed().as_secs_f64() * 1e3);
            r.cases += 1;
            if !ok {
                r.panics += 1;
                if r.examples.len() < 3 {
                    r.examples.push(String::from_utf8_lossy(&inp).into_owned());
                }
            }
        }
        r.seconds = start.elapsed().as_secs_f64();
        progress(&format!(
            "{}: {} inputs in {:.1} s, {} panics, slowest {:.2} ms",
            r.name, r.cases, r.seconds, r.panics, r.slowest_ms
        ));
        report.panics += r.panics;
        report.targets.push(r);
    }
    std::panic::set_hook(hook);
    done.store(true, Ordering::SeqCst);
    report
}
