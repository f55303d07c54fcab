//! `hcsim man`: the manual pages (roff), generated from the clap definition:
//! `hcsim man | man -l -` (hcsim(1)), `hcsim man run | man -l -`
//! (hcsim-run(1), which hcsim(1) refers to), or `hcsim man --dir DIR` to
//! install them all as `DIR/hcsim.1`, `DIR/hcsim-run.1`, ….

use super::{Cli, ManArgs, emit};
use crate::error::Error;
use clap::CommandFactory;
use std::process::ExitCode;

pub(super) fn run(args: ManArgs) -> Result<ExitCode, Error> {
    let cli = Cli::command();
    if let Some(dir) = &args.dir {
        return write_all(cli, dir);
    }
    let cmd = match &args.subcommand {
        None => cli,
        Some(name) => subcommand(&cli, name)?,
    };
    emit(&String::from_utf8_lossy(&render(cmd)?))?;
    Ok(ExitCode::SUCCESS)
}

/// hcsim-NAME's command, named as its page is (`hcsim-run`), so that its
/// page's title and usage line read `hcsim-run` / `hcsim run`.
fn subcommand(cli: &clap::Command, name: &str) -> Result<clap::Command, Error> {
    let sub = cli.find_subcommand(name).ok_or_else(|| {
        let names: Vec<&str> = cli
            .get_subcommands()
            .map(clap::Command::get_name)
            .filter(|n| *n != "help")
            .collect();
        Error::Usage(format!(
            "hcsim man: no subcommand `{name}`; the pages are hcsim(1) and hcsim-NAME(1) for \
             NAME in {}",
            names.join(", ")
        ))
    })?;
    let page = format!("{}-{}", cli.get_name(), sub.get_name());
    let usage = format!("{} {}", cli.get_name(), sub.get_name());
    Ok(sub
        .clone()
        .name(page)
        .bin_name(usage)
        .version(cli.get_version().unwrap_or_default().to_string()))
}

fn render(cmd: clap::Command) -> Result<Vec<u8>, Error> {
    let mut page = vec![];
    clap_mangen::Man::new(cmd)
        .render(&mut page)
        .map_err(|e| Error::Usage(format!("cannot render the manual page: {e}")))?;
    Ok(page)
}

/// hcsim.1 and every hcsim-NAME.1 into `dir` (created if missing).
fn write_all(cli: clap::Command, dir: &std::path::Path) -> Result<ExitCode, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut pages = vec![("hcsim.1".to_string(), render(cli.clone())?)];
    for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
        let cmd = subcommand(&cli, sub.get_name())?;
        pages.push((format!("hcsim-{}.1", sub.get_name()), render(cmd)?));
    }
    for (name, page) in &pages {
        let path = dir.join(name);
        crate::atomic::write(&path, page).map_err(|source| Error::Write { path, source })?;
    }
    super::say(&format!(
        "wrote {} manual pages into {}",
        pages.len(),
        dir.display()
    ));
    Ok(ExitCode::SUCCESS)
}
