//! `corral lab vm-guest` on a guest whose CPUs differ in capacity: the
//! arm64 guest of `scripts/vm-test` (issue 20), booted with a device tree
//! whose CPU nodes carry `capacity-dmips-mhz`, so that the kernel itself
//! reports big and little CPUs in `cpu_capacity` and builds its sched
//! domains with `SD_ASYM_CPUCAPACITY` (misfit migration, capacity-aware
//! wake-up placement).
//!
//! The checks: the capacities are the configured ones (the guest's
//! command line carries them as `corral.capacities=`), the kernel
//! schedules for asymmetric capacity, `corral cpus` tells big from
//! little, the daemon dedicates big cores to the heavy threads and keeps
//! the light ones on the little cores, re-plans when a big core goes
//! offline and again when it returns, and the simulator, given the
//! guest's own capacities and the same hot-plug, predicts the same
//! placement; and, before corral runs, that the kernel moves a hog
//! released from a little core to an idle big one (misfit migration), as
//! the simulator does.
//!
//! TCG runs every vCPU at the same speed, whatever its capacity says:
//! what is tested is the kernel's and corral's view of the machine, not
//! wall-clock speed. The report says so in its notes.

use crate::vmguest::{
    cgroup_of, last_cpu, online, placed, read, set_affinity, set_online, Guest, CGROUP, CPU_DIR,
    LIGHT, SETTLE,
};
use corral_core::cpuset::CpuSet;
use corral_core::plan::GroupKind;
use corral_daemon::api::Status;
use std::process::Command;
use std::time::Duration;

const S: &str = "big.LITTLE";

/// Each possible CPU's `cpu_capacity`, by CPU id (absent files: none).
fn capacities() -> Vec<u32> {
    let mut caps = Vec::new();
    for cpu in 0.. {
        let Some(c) = read(&format!("{CPU_DIR}/cpu{cpu}/cpu_capacity")) else {
            break;
        };
        match c.trim().parse() {
            Ok(v) => caps.push(v),
            Err(_) => break,
        }
    }
    caps
}

/// Whether the CPUs report different capacities.
pub fn heterogeneous() -> bool {
    let caps = capacities();
    caps.iter().any(|&c| Some(&c) != caps.first())
}

/// The capacities the guest was booted with (`corral.capacities=A,B,…`
/// on the kernel command line, written by `scripts/vm-test` from the
/// same list as the device tree's `capacity-dmips-mhz`).
fn configured() -> Option<Vec<u32>> {
    let cmdline = read("/proc/cmdline")?;
    let list = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("corral.capacities="))?;
    list.split(',').map(|c| c.parse().ok()).collect()
}

/// "big" for a CPU of the largest capacity, else "little".
fn kind(caps: &[u32], cpu: u32) -> &'static str {
    let max = caps.iter().copied().max().unwrap_or(0);
    if caps.get(cpu as usize) == Some(&max) {
        "big"
    } else {
        "little"
    }
}

/// A placement in terms of core types, which the live daemon and the
/// simulator can be compared by (which of two equal cores a thread gets
/// depends on where it happened to run).
#[derive(Debug, Clone, PartialEq)]
struct Shape {
    /// The heavy threads' dedicated cores' types, sorted.
    dedicated: Vec<&'static str>,
    /// The types of the CPUs the light threads may use, sorted, distinct.
    light: Vec<&'static str>,
}

impl Shape {
    fn of(caps: &[u32], dedicated: &[CpuSet], light: &[CpuSet]) -> Shape {
        let mut d: Vec<&'static str> = dedicated
            .iter()
            .map(|c| c.first().map_or("none", |cpu| kind(caps, cpu)))
            .collect();
        d.sort_unstable();
        let mut l: Vec<&'static str> = light
            .iter()
            .flat_map(|c| c.iter().map(|cpu| kind(caps, cpu)).collect::<Vec<_>>())
            .collect();
        l.sort_unstable();
        l.dedup();
        Shape {
            dedicated: d,
            light: l,
        }
    }

    /// The live daemon's, from its status.
    fn live(caps: &[u32], s: &Status, heavy: &[u32], light: &[u32]) -> Shape {
        let cpus = |tids: &[u32]| -> Vec<CpuSet> {
            tids.iter()
                .map(|&t| placed(s, t).map(|p| p.2).unwrap_or_default())
                .collect()
        };
        Shape::of(caps, &cpus(heavy), &cpus(light))
    }
}

/// The rt-app workload the simulator runs in place of the live one: two
/// hogs and two threads of 5 ms every 250 ms (`corral lab work hog` and
/// `periodic --period-ms 250 --run-ms 5`).
const WORKLOAD: &str = r#"{
  "global": {"duration": 8, "default_policy": "SCHED_OTHER"},
  "tasks": {
    "hog1": {"loop": -1, "run": 100000},
    "hog2": {"loop": -1, "run": 100000},
    "light1": {"loop": -1, "run": 5000, "timer": {"ref": "light1", "period": 250000}},
    "light2": {"loop": -1, "run": 5000, "timer": {"ref": "light2", "period": 250000}}
  }
}
"#;

impl Guest {
    /// The simulator's prediction on this guest's capacities, with the
    /// hot-plug events `hotplug` (`corral sim --hotplug`) when set: the
    /// placement at the end of 8 s, or why there is none.
    fn simulated(&self, caps: &[u32], hotplug: Option<&str>) -> Result<(Shape, String), String> {
        let mut args = vec!["--policy", "corral"];
        if let Some(h) = hotplug {
            args.extend(["--hotplug", h]);
        }
        let v = self.sim_json("/tmp/corral-biglittle.json", WORKLOAD, caps, &args)?;
        let p = &v["policy"];
        let cpus_of = |task: &str| -> CpuSet {
            p["groups"][task]
                .as_str()
                .and_then(|g| p["group_cpus"][g].as_str())
                .and_then(|c| CpuSet::parse(c).ok())
                .unwrap_or_default()
        };
        let heavy = [cpus_of("hog1"), cpus_of("hog2")];
        let light = [cpus_of("light1"), cpus_of("light2")];
        let words = format!(
            "hogs on {}, {}; light threads on {}, {}",
            heavy[0], heavy[1], light[0], light[1]
        );
        Ok((Shape::of(caps, &heavy, &light), words))
    }

    /// Compares the simulator's placement with the live one.
    fn same_as_simulated(&mut self, name: &str, caps: &[u32], live: &Shape, hotplug: Option<&str>) {
        match self.simulated(caps, hotplug) {
            Ok((sim, words)) => self.check(
                S,
                name,
                &sim == live && !sim.dedicated.is_empty(),
                format!("simulated {sim:?} ({words}); live {live:?}"),
            ),
            Err(e) => self.check(S, name, false, e),
        }
    }

    /// The scenario (see the module's comment).
    pub(crate) fn big_little(&mut self) {
        self.notes.push(
            "TCG runs every vCPU at the same speed whatever its capacity: these checks test the \
             kernel's and corral's view of the machine (capacities, sched domains, placement), \
             not wall-clock speed"
                .into(),
        );
        let caps = capacities();
        let want = configured();
        self.check(
            S,
            "cpu_capacity as configured in the device tree",
            want.as_ref() == Some(&caps),
            format!("cpu_capacity {caps:?}; configured {want:?}"),
        );
        self.asym_domains();
        let big: CpuSet = (0..caps.len() as u32)
            .filter(|&c| kind(&caps, c) == "big")
            .collect();
        let little: CpuSet = (0..caps.len() as u32)
            .filter(|&c| kind(&caps, c) == "little")
            .collect();
        self.corral_cpus(&big, &little);
        self.kernel_misfit(&caps, &big, &little);

        let hogs = [self.work("hog1", &["hog"]), self.work("hog2", &["hog"])];
        let lights = [self.work("light1", LIGHT), self.work("light2", LIGHT)];
        let all: Vec<u32> = hogs.iter().chain(&lights).copied().collect();
        if !self.start_daemon(&all) {
            self.check(S, "daemon starts", false, "no answer on its socket".into());
            self.end_workloads();
            return;
        }
        let settled = |s: &Status| {
            hogs.iter().all(
                |&h| matches!(placed(s, h), Some((_, GroupKind::Dedicated, ref c)) if c.len() == 1),
            ) && lights.iter().all(|&l| placed(s, l).is_some())
        };
        let (s, took, ok) = self.wait_for(SETTLE, settled);
        let Some(s) = s else {
            self.check(S, "daemon answers status", false, "no status".into());
            self.end_workloads();
            return;
        };
        self.placed_big_and_little(
            "heavy threads get big cores",
            ok,
            &s,
            &hogs,
            &lights,
            &big,
            &little,
        );
        eprintln!("{S}: planned after {:.1} s", took.as_secs_f64());
        self.running_where_planned(&hogs, &lights, &little);
        self.groups_as_planned(S, &s);
        let live = Shape::live(&caps, &s, &hogs, &lights);
        self.same_as_simulated(
            "the simulator on this guest's capacities predicts the same placement",
            &caps,
            &live,
            None,
        );

        // A big core that holds a heavy thread goes offline (CPU 0 stays:
        // not every arm64 platform can take it down).
        let target = hogs
            .iter()
            .filter_map(|&h| placed(&s, h).and_then(|p| p.2.first()))
            .filter(|&c| c != 0 && big.contains(c))
            .max();
        let Some(cpu) = target else {
            self.check(
                S,
                "a big core other than CPU 0 holds a heavy thread",
                false,
                format!("{:?}", s.groups),
            );
            self.stop_and_check(S);
            self.end_workloads();
            return;
        };
        if let Err(e) = set_online(cpu, false) {
            self.check(S, &format!("cpu{cpu} offline"), false, e.to_string());
            self.stop_and_check(S);
            self.end_workloads();
            return;
        }
        let now_online = online();
        let (s2, took, ok) = self.wait_for(SETTLE, |s| {
            s.online == now_online
                && s.groups.iter().all(|g| g.cpus.is_subset(&now_online))
                && settled(s)
        });
        match &s2 {
            Some(s2) => {
                let live2 = Shape::live(&caps, s2, &hogs, &lights);
                let big_left = big.intersection(&now_online);
                let big_used = hogs.iter().any(|&h| {
                    placed(s2, h).is_some_and(|p| !p.2.intersection(&big_left).is_empty())
                });
                // The heavy thread that lost its core now owns a little
                // one: the light threads keep off it.
                let owned: CpuSet = hogs
                    .iter()
                    .filter_map(|&h| placed(s2, h).and_then(|p| p.2.first()))
                    .collect();
                let apart = lights
                    .iter()
                    .all(|&l| placed(s2, l).is_some_and(|p| p.2.intersection(&owned).is_empty()));
                self.check(
                    S,
                    &format!("big core cpu{cpu} offline: re-planned, the big core left still goes to a heavy thread, the light threads keep off the dedicated cores"),
                    ok && big_used && apart,
                    format!(
                        "online {now_online}; after {:.1} s: {}",
                        took.as_secs_f64(),
                        describe(s2, &hogs, &lights)
                    ),
                );
                self.same_as_simulated(
                    &format!("the simulator predicts the re-plan after cpu{cpu} goes offline"),
                    &caps,
                    &live2,
                    Some(&format!("4s:cpu{cpu}=off")),
                );
            }
            None => self.check(S, "daemon answers status", false, "no status".into()),
        }

        // The big core returns: the heavy threads go back to big cores.
        if let Err(e) = set_online(cpu, true) {
            self.check(S, &format!("cpu{cpu} online"), false, e.to_string());
        } else {
            let (s3, took, ok) = self.wait_for(SETTLE, |s| {
                s.online.contains(cpu)
                    && settled(s)
                    && hogs.iter().all(|&h| {
                        placed(s, h).is_some_and(|p| p.2.first().is_some_and(|c| big.contains(c)))
                    })
            });
            self.check(
                S,
                &format!("cpu{cpu} back online: the heavy threads are on big cores again"),
                ok,
                format!(
                    "after {:.1} s: {}",
                    took.as_secs_f64(),
                    s3.as_ref()
                        .map_or("no status".into(), |s| describe(s, &hogs, &lights))
                ),
            );
            if let Some(s3) = &s3 {
                let live3 = Shape::live(&caps, s3, &hogs, &lights);
                self.same_as_simulated(
                    &format!("the simulator predicts the re-plan when cpu{cpu} returns"),
                    &caps,
                    &live3,
                    Some(&format!("3s:cpu{cpu}=off,5s:cpu{cpu}=on")),
                );
            }
        }
        self.stop_and_check(S);
        self.end_workloads();
    }

    /// The kernel builds its sched domains for asymmetric capacity
    /// (`SD_ASYM_CPUCAPACITY`, shown in debugfs).
    fn asym_domains(&mut self) {
        let dir = "/sys/kernel/debug/sched/domains/cpu0";
        let flags: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|d| read(&d.path().join("flags").display().to_string()))
            .map(|f| f.trim().to_string())
            .collect();
        self.check(
            S,
            "the kernel's sched domains carry SD_ASYM_CPUCAPACITY",
            flags.iter().any(|f| f.contains("SD_ASYM_CPUCAPACITY")),
            format!("{dir}/*/flags: {flags:?}"),
        );
    }

    /// The kernel alone (no corral): a hog held on a little core for
    /// 0.5 s, then allowed every CPU, is moved to an idle big core by
    /// misfit migration (its util_avg, scaled by the little core's
    /// capacity, passes 80 % of it); the simulator on this guest's
    /// capacities, given the same hold, moves it too.
    fn kernel_misfit(&mut self, caps: &[u32], big: &CpuSet, little: &CpuSet) {
        let name = "the kernel moves a hog released from a little core to an idle big one (misfit), as the simulator does";
        let Some(held) = little.iter().last() else {
            self.check(S, name, false, "no little core".into());
            return;
        };
        let mut child = match Command::new(&self.exe)
            .args(["lab", "work", "hog"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                self.check(S, name, false, format!("cannot start a hog: {e}"));
                return;
            }
        };
        let pid = child.id();
        let pinned = set_affinity(pid, &[held]);
        std::thread::sleep(Duration::from_millis(500));
        let before = last_cpu(pid);
        let all: Vec<u32> = (0..caps.len() as u32).collect();
        let released = set_affinity(pid, &all);
        let t0 = std::time::Instant::now();
        let mut now = last_cpu(pid);
        while t0.elapsed() < Duration::from_secs(3) && !now.is_some_and(|c| big.contains(c)) {
            std::thread::sleep(Duration::from_millis(20));
            now = last_cpu(pid);
        }
        let took = t0.elapsed();
        let live = now.is_some_and(|c| big.contains(c));
        let _ = child.kill();
        let _ = child.wait();
        // The same in the simulator: held on that core for 0.2 s of its
        // work (longer in time: the little core runs it slower), then free.
        let work = format!(
            r#"{{"global": {{"duration": 3, "default_policy": "SCHED_OTHER"}},
  "tasks": {{"hog": {{"loop": 1, "phases": {{
    "held": {{"loop": 1, "run": 200000, "cpus": [{held}]}},
    "free": {{"loop": -1, "run": 100000}}}}}}}}}}"#
        );
        let sim = self.simulated_utilisation(caps, &work);
        let sim_big = sim.as_ref().ok().map(|u| {
            let on_big: f64 = big.iter().map(|c| u[c as usize]).sum();
            on_big / u.iter().sum::<f64>().max(1e-9)
        });
        self.check(
            S,
            name,
            pinned && released && before == Some(held) && live && sim_big.is_some_and(|b| b > 0.7),
            format!(
                "live: held on cpu{held} (ran on {before:?}), released, on {now:?} after {:.2} s; simulated: {}",
                took.as_secs_f64(),
                match (&sim, sim_big) {
                    (Ok(u), Some(b)) => format!("utilisation {u:?}, {:.0} % of it on big cores", b * 100.0),
                    (Err(e), _) => e.clone(),
                    _ => "no figures".into(),
                }
            ),
        );
    }

    /// `corral sim --json` of the workload `work` (written to `file`) on
    /// `caps`, with `args` besides: its summary.
    fn sim_json(
        &self,
        file: &str,
        work: &str,
        caps: &[u32],
        args: &[&str],
    ) -> Result<serde_json::Value, String> {
        std::fs::write(file, work).map_err(|e| format!("{file}: {e}"))?;
        let list: Vec<String> = caps.iter().map(u32::to_string).collect();
        let out = Command::new(&self.exe)
            .args(["sim", file, "--json", "--capacities", &list.join(",")])
            .args(args)
            .output()
            .map_err(|e| format!("corral sim: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "corral sim: {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        serde_json::from_slice(&out.stdout).map_err(|e| format!("corral sim --json: {e}"))
    }

    /// `corral sim --json` of `work` on `caps` without corral: each CPU's
    /// utilisation.
    fn simulated_utilisation(&self, caps: &[u32], work: &str) -> Result<Vec<f64>, String> {
        let v = self.sim_json("/tmp/corral-misfit.json", work, caps, &[])?;
        v["cpu_utilisation"]
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
            .ok_or_else(|| "corral sim --json: no cpu_utilisation".into())
    }

    /// `corral cpus --json` tells big from little.
    fn corral_cpus(&mut self, big: &CpuSet, little: &CpuSet) {
        let out = Command::new(&self.exe).args(["cpus", "--json"]).output();
        let v: Option<serde_json::Value> = out
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| serde_json::from_slice(&o.stdout).ok());
        let Some(v) = v else {
            self.check(S, "corral cpus --json runs", false, "no JSON".into());
            return;
        };
        let topo = &v["topology"];
        let of = |t: &str| -> CpuSet {
            topo["cpus"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|c| c["core_type"] == t)
                .filter_map(|c| c["id"].as_u64().map(|i| i as u32))
                .collect()
        };
        let (b, l) = (of("big"), of("little"));
        let source = topo["performance"]["source"].as_str().unwrap_or("none");
        self.check(
            S,
            "corral cpus reports the big and the little cores",
            &b == big && &l == little && topo["performance"]["heterogeneous"] == true,
            format!(
                "big {b}, little {l} (from {source}); the kernel's: big {big}, little {little}"
            ),
        );
    }

    /// The plan gives each heavy thread a big core of its own and the
    /// light threads only little cores, on disk too.
    #[allow(clippy::too_many_arguments)]
    fn placed_big_and_little(
        &mut self,
        name: &str,
        ok: bool,
        s: &Status,
        hogs: &[u32],
        lights: &[u32],
        big: &CpuSet,
        little: &CpuSet,
    ) {
        let cores: Vec<CpuSet> = hogs
            .iter()
            .filter_map(|&h| placed(s, h).map(|p| p.2))
            .collect();
        let distinct = cores.len() == hogs.len()
            && cores.iter().all(|c| c.len() == 1)
            && cores.first() != cores.get(1);
        self.check(
            S,
            name,
            ok && distinct && cores.iter().all(|c| c.is_subset(big)),
            describe(s, hogs, lights),
        );
        let on_disk: Vec<(String, Option<CpuSet>)> = lights
            .iter()
            .map(|&l| {
                let cg = cgroup_of(l);
                let eff = read(&format!("{CGROUP}{cg}/cpuset.cpus.effective"))
                    .and_then(|t| CpuSet::parse(t.trim()).ok());
                (cg, eff)
            })
            .collect();
        let planned_little = lights.iter().all(|&l| {
            placed(s, l).is_some_and(|p| p.1 != GroupKind::Dedicated && p.2.is_subset(little))
        });
        let disk_little = on_disk.iter().all(|(cg, eff)| {
            cg.starts_with("/corral/") && eff.as_ref().is_some_and(|e| e.is_subset(little))
        });
        self.check(
            S,
            "light threads stay on the little cores (they suffice)",
            planned_little && disk_little,
            format!(
                "planned {}; their cgroups and effective CPUs: {on_disk:?}",
                describe(s, &[], lights)
            ),
        );
    }

    /// A second later, the kernel runs each hog on its core and the light
    /// threads on little cores.
    fn running_where_planned(&mut self, hogs: &[u32], lights: &[u32], little: &CpuSet) {
        std::thread::sleep(Duration::from_secs(1));
        let Some(s) = self.status() else {
            return;
        };
        let hog_cpus: Vec<(Option<u32>, Option<u32>)> = hogs
            .iter()
            .map(|&h| (last_cpu(h), placed(&s, h).and_then(|p| p.2.first())))
            .collect();
        let light_cpus: Vec<Option<u32>> = lights.iter().map(|&l| last_cpu(l)).collect();
        self.check(
            S,
            "the kernel runs each heavy thread on its big core, the light ones on little cores",
            hog_cpus
                .iter()
                .all(|(at, planned)| at.is_some() && at == planned)
                && light_cpus
                    .iter()
                    .all(|c| c.is_some_and(|c| little.contains(c))),
            format!("heavy (runs on, planned): {hog_cpus:?}; light run on {light_cpus:?}"),
        );
    }
}

/// "hog 123 → dedicated-cpu1 (1); …" for a check's detail.
fn describe(s: &Status, hogs: &[u32], lights: &[u32]) -> String {
    hogs.iter()
        .map(|&t| ("heavy", t))
        .chain(lights.iter().map(|&t| ("light", t)))
        .map(|(what, t)| match placed(s, t) {
            Some((g, _, c)) => format!("{what} {t} in {g} ({c})"),
            None => format!("{what} {t} unplaced"),
        })
        .collect::<Vec<_>>()
        .join("; ")
}
