//! `swarm timeline`: prints what a team did (see `timeline`), and with `--follow` keeps
//! printing what it does next.
//!
//! The whole story is written through one buffer and flushed at the end (100,000 lines one
//! `write` each would cost more than reading them); a follower flushes after every look. The
//! follower wakes on file events from one watcher (one inotify instance) over every directory
//! the sources live in, and on the slow re-scan timer, since events can be lost or absent.

use std::io::{BufWriter, Write};

use super::Context;
use crate::commands::cli::TimelineArgs;
use crate::error::{Error, Result};
use crate::output::stdout_err;
use crate::store::fsio::now_ms;
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::roster::Roster;
use crate::store::watcher::DirWatcher;
use crate::timeline::render::{self, Paint};
use crate::timeline::{Event, Filter, Timeline};

pub(crate) fn run(ctx: &Context, args: TimelineArgs) -> Result<()> {
    let team = ctx.existing_team()?;
    let config = Roster::new(&ctx.store, &team).load()?;
    if let Some(name) = &args.member {
        if !config.members.iter().any(|m| name.same_as(m.name.as_str())) {
            let names: Vec<&str> = config.members.iter().map(|m| m.name.as_str()).collect();
            return Err(Error::usage(format!(
                "team {team} has no member \"{name}\" (its members: {}); --member takes a name on \
                 the roster",
                names.join(", ")
            )));
        }
    }
    let filter = Filter {
        since: args.since.map(|s| s.ms(now_ms())),
        member: args.member.map(|m| m.to_string()),
        task: args.task,
    };
    let mut timeline = Timeline::new(&ctx.store, &team, filter)?;
    let mut out = Printer {
        json: ctx.json,
        paint: Paint::detect(&timeline.config),
        out: BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
    };
    let events = timeline.look(false)?;
    if !ctx.json {
        out.text(&render::header(&timeline.config, timeline.start()))?;
    }
    out.events(&events, &timeline)?;
    out.flush()?;
    if timeline.undated() > 0 {
        eprintln!(
            "swarm: {} entries have no timestamp swarm can read and are left out",
            timeline.undated()
        );
    }
    if args.follow {
        follow(&ctx.store, &team, &mut timeline, &mut out)?;
    }
    Ok(())
}

/// Prints what happens next until the team is deleted (or a signal stops the process).
fn follow(
    store: &Store,
    team: &TeamName,
    timeline: &mut Timeline,
    out: &mut Printer,
) -> Result<()> {
    let dirs = [
        store.team_dir(team),
        store.inboxes_dir(team),
        store.tasks_dir(team),
        store.team_dir(team).join("permissions"),
        store.pending_dir(team),
        store.resolved_dir(team),
        store.team_dir(team).join("lead"),
    ];
    let mut watcher = DirWatcher::records(&dirs[0])?;
    let mut watched = vec![false; dirs.len()];
    watched[0] = true;
    loop {
        // Directories made after the follow began (the first permission request makes
        // `permissions/`) are watched from the look that finds them.
        for (dir, on) in dirs.iter().zip(watched.iter_mut()) {
            if !*on && dir.is_dir() {
                watcher.add(dir)?;
                *on = true;
            }
        }
        let events = timeline.look(true)?;
        out.paint.fit(&timeline.config);
        out.events(&events, timeline)?;
        out.flush()?;
        if !store.config_path(team).exists() {
            if !out.json {
                out.text(&format!("team {team} was deleted"))?;
                out.flush()?;
            }
            return Ok(());
        }
        watcher.wait(timeline.due());
    }
}

struct Printer {
    json: bool,
    paint: Paint,
    out: BufWriter<std::io::StdoutLock<'static>>,
}

impl Printer {
    fn text(&mut self, line: &str) -> Result<()> {
        writeln!(self.out, "{line}").map_err(stdout_err)
    }

    fn events(&mut self, events: &[Event], timeline: &Timeline) -> Result<()> {
        let start = timeline.start();
        for e in events {
            if self.json {
                serde_json::to_writer(&mut self.out, &e.json(start))
                    .map_err(|e| stdout_err(e.into()))?;
                self.out.write_all(b"\n").map_err(stdout_err)?;
            } else {
                let line = render::line(e, start, &timeline.config, &self.paint);
                writeln!(self.out, "{line}").map_err(stdout_err)?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(stdout_err)
    }
}
