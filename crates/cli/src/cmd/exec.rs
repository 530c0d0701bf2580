//! `corral exec`.

use crate::args::{ExecArgs, Threads};
use anyhow::Context;
use corral_linux::cpucount::detect;
use corral_linux::HostPaths;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

/// The variables parallel runtimes read their thread count from.
pub const THREAD_VARIABLES: [&str; 3] = ["OMP_NUM_THREADS", "RAYON_NUM_THREADS", "GOMAXPROCS"];

pub fn run(paths: &HostPaths, args: ExecArgs) -> anyhow::Result<ExitCode> {
    let threads = match args.threads {
        Threads::Count(n) => n,
        Threads::Auto => {
            detect(paths, None)
                .context("cannot count the CPUs")?
                .recommendation
                .threads
        }
    };
    let (program, rest) = args
        .command
        .split_first()
        .context("no command given after --")?;
    let mut command = std::process::Command::new(program);
    command.args(rest);
    for var in THREAD_VARIABLES {
        if args.force || std::env::var_os(var).is_none() {
            command.env(var, threads.to_string());
        }
    }
    // exec only returns on failure.
    let err = command.exec();
    eprintln!(
        "corral: error: cannot run {}: {err}",
        program.to_string_lossy()
    );
    // The shell's convention: 127 for a command not found, 126 otherwise.
    Ok(ExitCode::from(
        if err.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        },
    ))
}
