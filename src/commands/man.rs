//! `swarm man [--dir DIR]`: man pages made from the command line definition (clap_mangen).
//!
//! The pages come from the same clap types as `--help`, so they cannot drift from it. Without
//! `--dir` the page of `swarm` itself goes to stdout (`swarm man | man -l -`); with it, every
//! visible command gets its own page, named the way man looks them up (`swarm-team-create.1`).

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use super::Context;
use crate::commands::cli::{Cli, ManArgs};
use crate::error::{Error, Result};
use crate::output;

pub(crate) fn run(ctx: &Context, args: &ManArgs) -> Result<()> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let Some(dir) = &args.dir else {
        let mut page = Vec::new();
        render(&cmd, &mut page)?;
        return output::line(String::from_utf8_lossy(&page).trim_end());
    };
    if dir.exists() && !dir.is_dir() {
        return Err(Error::usage(format!(
            "--dir {} is not a directory; name a directory to write the pages into",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(Error::io("create", dir))?;
    let mut written = Vec::new();
    write_pages(&cmd, dir, &mut written)?;
    if ctx.json {
        return output::json(&written);
    }
    output::line(format!(
        "wrote {} man pages to {}; read one with `man -l {}`",
        written.len(),
        dir.display(),
        dir.join("swarm.1").display()
    ))
}

/// Writes the page of `cmd` and of each visible subcommand under it, depth first.
fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    render(cmd, &mut page)?;
    crate::store::fsio::write_atomic(&path, &page)?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}

fn render(cmd: &clap::Command, out: &mut Vec<u8>) -> Result<()> {
    clap_mangen::Man::new(cmd.clone())
        .render(out)
        .map_err(Error::io("render", "the man page"))
}
