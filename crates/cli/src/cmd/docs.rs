//! `corral completions SHELL` and `corral man DIR`: shell completions and
//! man pages, generated from the command line's own definition so they
//! cannot drift from it.

use crate::args::Cli;
use anyhow::Context;
use clap::CommandFactory;
use std::path::Path;
use std::process::ExitCode;

pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "corral", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// corral.1, and corral-SUB.1 (corral-lab-heavy.1, …) for every visible
/// subcommand at any depth.
pub fn man(dir: &Path) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let cmd = Cli::command();
    let mut written = 0;
    write_pages(&cmd, "corral", dir, &mut written)?;
    eprintln!(
        "corral: {} in {}",
        corral_core::words::count(written, "man page", "man pages"),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn write_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut usize,
) -> anyhow::Result<()> {
    let cmd = cmd
        .clone()
        .name(name.to_string())
        .bin_name(name.replace('-', " "));
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .with_context(|| format!("cannot render {name}.1"))?;
    std::fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
    *written += 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
