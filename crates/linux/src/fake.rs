//! Fake sysfs / procfs / cgroupfs trees for tests and demonstrations.
//!
//! One helper builds them all, so every test describes a machine in a few
//! lines and the layout lives in one place. Paths inside the tree mirror
//! the real ones: `sys/devices/system/cpu/online`, `proc/self/status`,
//! and cgroup mounts under `cgroup/` standing in for `/sys/fs/cgroup/`.
//!
//! ```
//! # let dir = std::env::temp_dir().join(format!("corral-doc-{}", std::process::id()));
//! use corral_linux::fake::FakeHost;
//! let host = FakeHost::new(&dir);
//! host.cpus("0-1,3", "0-127", "0-3").process("self", "0-127", &["0::/"]);
//! let report = corral_linux::cpucount::detect(&host.paths(), None).unwrap();
//! assert_eq!(report.recommendation.threads, 4);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
//!
//! Builders panic on I/O errors: they are for tests.

use crate::paths::HostPaths;
use corral_core::CpuSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A fake host rooted at a directory the caller owns (and removes).
#[derive(Debug, Clone)]
pub struct FakeHost {
    root: PathBuf,
}

impl FakeHost {
    /// Creates the skeleton under `root`.
    pub fn new(root: impl AsRef<Path>) -> FakeHost {
        let root = root.as_ref().to_path_buf();
        for d in ["sys/devices/system/cpu", "proc/self", "cgroup"] {
            fs::create_dir_all(root.join(d)).expect("create fake tree");
        }
        FakeHost { root }
    }

    /// The paths a reader should use for this tree.
    pub fn paths(&self) -> HostPaths {
        HostPaths {
            sysfs: self.root.join("sys"),
            procfs: self.root.join("proc"),
            cgroup: self.root.join("cgroup"),
            run: self.root.join("run"),
        }
    }

    /// The tree's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes `contents` to `rel` (relative to the root), creating parents.
    pub fn write(&self, rel: &str, contents: &str) -> &Self {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().expect("file has a parent")).expect("create dirs");
        fs::write(&path, contents).expect("write fake file");
        self
    }

    /// The CPU lists, and a `cpuN` directory for every possible CPU; online
    /// CPUs get a `topology/` (package 0, one core each), as the kernel
    /// removes it from offline ones.
    pub fn cpus(&self, online: &str, possible: &str, present: &str) -> &Self {
        let on = CpuSet::parse(online).expect("online");
        let pos = CpuSet::parse(possible).expect("possible");
        for (name, value) in [
            ("online", online),
            ("possible", possible),
            ("present", present),
        ] {
            self.write(
                &format!("sys/devices/system/cpu/{name}"),
                &format!("{value}\n"),
            );
        }
        let offline = pos.difference(&on);
        self.write("sys/devices/system/cpu/offline", &format!("{offline}\n"));
        self.write("sys/devices/system/cpu/isolated", "\n");
        for cpu in pos.iter() {
            let dir = format!("sys/devices/system/cpu/cpu{cpu}");
            fs::create_dir_all(self.root.join(&dir)).expect("cpu dir");
            if on.contains(cpu) {
                for (file, value) in [
                    ("physical_package_id", "0".to_string()),
                    ("die_id", "0".to_string()),
                    ("cluster_id", cpu.to_string()),
                    ("core_id", cpu.to_string()),
                    ("core_cpus_list", cpu.to_string()),
                    ("cluster_cpus_list", cpu.to_string()),
                    ("package_cpus_list", online.to_string()),
                ] {
                    self.write(&format!("{dir}/topology/{file}"), &format!("{value}\n"));
                }
            }
        }
        self
    }

    /// Writes `cpuN/<rel>` for every CPU in `cpus`, with the value `value(cpu)`.
    pub fn per_cpu(&self, cpus: &str, rel: &str, value: impl Fn(u32) -> String) -> &Self {
        for cpu in CpuSet::parse(cpus).expect("cpus").iter() {
            self.write(
                &format!("sys/devices/system/cpu/cpu{cpu}/{rel}"),
                &format!("{}\n", value(cpu)),
            );
        }
        self
    }

    /// A process (`"self"` or a PID): its `Cpus_allowed_list` and the lines
    /// of its `/proc/PID/cgroup`.
    pub fn process(&self, pid: &str, cpus_allowed: &str, cgroup_lines: &[&str]) -> &Self {
        self.write(
            &format!("proc/{pid}/status"),
            &format!("Name:\tfake\nState:\tS (sleeping)\nCpus_allowed_list:\t{cpus_allowed}\n"),
        );
        let mut cg = cgroup_lines.join("\n");
        cg.push('\n');
        self.write(&format!("proc/{pid}/cgroup"), &cg)
    }

    /// Mounts a v1 hierarchy with `controllers` (comma-separated) at
    /// `/sys/fs/cgroup/<name>` in the fake `mountinfo`.
    pub fn mount_v1(&self, name: &str, controllers: &str) -> &Self {
        self.mount(name, "cgroup", &format!("rw,{controllers}"))
    }

    /// Mounts the v2 hierarchy at `/sys/fs/cgroup/<name>` (`""` for the
    /// pure-v2 layout where it is `/sys/fs/cgroup` itself).
    pub fn mount_v2(&self, name: &str) -> &Self {
        self.mount(name, "cgroup2", "rw,nsdelegate")
    }

    fn mount(&self, name: &str, fstype: &str, super_options: &str) -> &Self {
        let path = self.root.join("proc/self/mountinfo");
        let mut text = fs::read_to_string(&path).unwrap_or_default();
        let id = 30 + text.lines().count();
        let point = if name.is_empty() {
            "/sys/fs/cgroup".to_string()
        } else {
            format!("/sys/fs/cgroup/{name}")
        };
        text.push_str(&format!(
            "{id} 25 0:{id} / {point} rw,nosuid,nodev,noexec,relatime shared:{id} - {fstype} cgroup {super_options}\n"
        ));
        fs::create_dir_all(self.root.join("cgroup").join(name)).expect("mount dir");
        fs::write(path, text).expect("write mountinfo");
        self
    }

    /// Writes `file` in cgroup `path` of the hierarchy mounted as `name`.
    pub fn cgroup_file(&self, name: &str, path: &str, file: &str, contents: &str) -> &Self {
        let dir = Path::new("cgroup")
            .join(name)
            .join(path.trim_start_matches('/'));
        self.write(
            dir.join(file).to_str().expect("utf-8 path"),
            &format!("{contents}\n"),
        )
    }
}
