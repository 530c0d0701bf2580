//! One module per subcommand.

mod config;
mod cpus;
mod docs;
mod exec;
mod lab;
mod packing;
mod record;
mod run;
mod sim;
mod status;
mod top;
mod whatif;

use crate::args::{Cli, Command, ConfigCommand, LabCommand, Roots};
use corral_linux::HostPaths;
use std::process::ExitCode;

/// Whether `program` names an executable file: a path, or a name found
/// in one of `PATH`'s directories (with no `PATH`, `/bin:/usr/bin`, as
/// `execvp` searches).
fn findable(program: &std::ffi::OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.as_bytes().contains(&b'/') {
        return runnable(std::path::Path::new(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
    std::env::split_paths(&path).any(|dir| runnable(&dir.join(program)))
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = host_paths(&cli.roots);
    match cli.command {
        Command::Cpus(args) => cpus::run(&paths, &args),
        Command::Exec(args) => exec::run(&paths, args),
        Command::Run(args) => run::run(&paths, &args),
        Command::Restore(args) => run::restore(&paths, &args),
        Command::Status(args) => status::status(&args),
        Command::Explain(args) => status::explain(&args),
        Command::Boost(args) => status::boost(&args),
        Command::Unboost(args) => status::unboost(&args),
        Command::Metrics(args) => status::metrics(&args),
        Command::Top(args) => top::run(&args),
        Command::Config(ConfigCommand::Default) => config::default(),
        Command::Config(ConfigCommand::Check { file }) => config::check(&file),
        Command::Sim(args) => sim::run(&args),
        Command::Record(args) => record::run(&paths, &args),
        Command::Completions { shell } => docs::completions(shell),
        Command::Man { dir } => docs::man(&dir),
        Command::Lab(LabCommand::Parallel(args)) => lab::parallel(&paths, &args),
        Command::Lab(LabCommand::LatencyCritical(args)) => lab::latency(&paths, &args),
        Command::Lab(LabCommand::Heavy(args)) => lab::heavy(&paths, &args),
        Command::Lab(LabCommand::Overhead(args)) => lab::overhead(&paths, &args),
        Command::Lab(LabCommand::Interactive(args)) => lab::interactive(&paths, &args),
        Command::Lab(LabCommand::BoostLatency {
            requests,
            gap_ms,
            json,
        }) => lab::boost_latency(&paths, requests, gap_ms, json),
        Command::Lab(LabCommand::Validate(args)) => lab::validate(&paths, &args),
        Command::Lab(LabCommand::Pelt(args)) => lab::pelt(&paths, &args),
        Command::Lab(LabCommand::Costs(args)) => lab::costs(&paths, &args),
        Command::Lab(LabCommand::Placement(args)) => lab::placement(&paths, &args),
        Command::Lab(LabCommand::Real(args)) => lab::real(&paths, &args),
        Command::Lab(LabCommand::Reaction(args)) => lab::reaction(&paths, &args),
        Command::Lab(LabCommand::Flood(args)) => lab::flood(&args),
        Command::Lab(LabCommand::Crash(args)) => lab::crash(&paths, &args),
        Command::Lab(LabCommand::Starve(args)) => lab::starve(&paths, &args),
        Command::Lab(LabCommand::Medium(args)) => lab::medium(&paths, &args),
        Command::Lab(LabCommand::Soak(args)) => lab::soak(&paths, &args),
        Command::Lab(LabCommand::Fuzz(args)) => lab::fuzz(&args),
        Command::Lab(LabCommand::VmGuest { out }) => lab::vm_guest(&out),
        Command::Lab(LabCommand::Work(w)) => lab::work(w),
    }
}

fn host_paths(roots: &Roots) -> HostPaths {
    HostPaths {
        sysfs: roots.sysfs_root.clone(),
        procfs: roots.proc_root.clone(),
        cgroup: roots.cgroup_root.clone(),
        ..HostPaths::default()
    }
}

/// The configuration `corral run` reads when no `--config` is given and
/// the file exists.
pub const ETC_CONFIG: &str = "/etc/corral/corral.toml";

/// A configuration file that does not parse or validate: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}{key}: {message}", file = .file.display(), line = .line.map_or(String::new(), |l| l.to_string()), key = .key.as_ref().map_or(String::new(), |k| format!(": key `{k}`")))]
pub struct ConfigFileError {
    pub file: std::path::PathBuf,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

/// Reads and validates a configuration file.
pub fn load_config(file: &std::path::Path) -> anyhow::Result<corral_core::config::Config> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("cannot read the configuration {}: {e}", file.display()))?;
    corral_core::config::Config::parse(&text).map_err(|e| {
        ConfigFileError {
            file: file.to_path_buf(),
            line: e.line,
            key: e.key,
            message: e.message,
        }
        .into()
    })
}

/// `--interval MS` of `run` and `lab`: the range the configuration takes.
fn check_interval(ms: u64) -> anyhow::Result<()> {
    let range = corral_core::config::INTERVAL_MS;
    anyhow::ensure!(
        range.contains(&ms),
        "--interval must be between {} and {} ms, not {ms}",
        range.start(),
        range.end()
    );
    Ok(())
}
