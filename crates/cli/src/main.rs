//! The `corral` binary: parses the command line, dispatches, and turns
//! errors into exit codes. The work lives in the library crates.

mod args;
mod cmd;
mod log;
mod table;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    if !matches!(
        cli.command,
        args::Command::Run(_) | args::Command::Lab(_) | args::Command::Restore(_)
    ) {
        // A client command piped into `head` should end quietly when the
        // pipe closes, as Unix tools do. (Not the daemon or experiments:
        // a client leaving the socket early must not kill them.)
        // SAFETY: setting a signal's disposition to its default has no
        // preconditions; no handler is installed.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            log::error(&format!("{err:#}"));
            // A bad configuration is a usage error, as clap's are.
            if err.downcast_ref::<cmd::ConfigFileError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
