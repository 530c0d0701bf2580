//! The `corral` binary: parses the command line, dispatches, and turns
//! errors into exit codes. The work lives in the library crates.

mod args;
mod cmd;
mod table;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("corral: error: {err:#}");
            // A bad configuration is a usage error, as clap's are.
            if err.downcast_ref::<cmd::ConfigFileError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
