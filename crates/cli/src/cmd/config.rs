//! `corral config`.

use corral_core::config::DEFAULT_TOML;
use std::path::Path;
use std::process::ExitCode;

pub fn default() -> anyhow::Result<ExitCode> {
    print!("{DEFAULT_TOML}");
    Ok(ExitCode::SUCCESS)
}

/// Every complaint about the file, each as `FILE:LINE: key `K`: what`
/// (a TOML syntax or type error stops at that one); exit 2 if any.
pub fn check(file: &Path) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("cannot read the configuration {}: {e}", file.display()))?;
    match corral_core::config::Config::check(&text) {
        Ok(_) => {
            println!("{}: ok", file.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            for e in &errors {
                let err = super::ConfigFileError {
                    file: file.to_path_buf(),
                    line: e.line,
                    key: e.key.clone(),
                    message: e.message.clone(),
                };
                eprintln!("corral: error: {err}");
            }
            eprintln!(
                "corral: {}: {}",
                file.display(),
                corral_core::words::count(errors.len(), "error", "errors")
            );
            Ok(ExitCode::from(2))
        }
    }
}
