//! `corral config`.

use corral_core::config::DEFAULT_TOML;
use std::path::Path;
use std::process::ExitCode;

pub fn default() -> anyhow::Result<ExitCode> {
    print!("{DEFAULT_TOML}");
    Ok(ExitCode::SUCCESS)
}

pub fn check(file: &Path) -> anyhow::Result<ExitCode> {
    super::load_config(file)?;
    println!("{}: ok", file.display());
    Ok(ExitCode::SUCCESS)
}
