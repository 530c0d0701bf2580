//! One module per subcommand.

mod cpus;
mod exec;
mod lab;

use crate::args::{Cli, Command, LabCommand, Roots};
use corral_linux::HostPaths;
use std::process::ExitCode;

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = host_paths(&cli.roots);
    match cli.command {
        Command::Cpus(args) => cpus::run(&paths, &args),
        Command::Exec(args) => exec::run(&paths, args),
        Command::Lab(LabCommand::Parallel(args)) => lab::parallel(&paths, &args),
    }
}

fn host_paths(roots: &Roots) -> HostPaths {
    HostPaths {
        sysfs: roots.sysfs_root.clone(),
        procfs: roots.proc_root.clone(),
        cgroup: roots.cgroup_root.clone(),
    }
}
