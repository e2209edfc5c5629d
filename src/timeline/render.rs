//! The timeline as people read it: one line per event, the time since the run's start, who did
//! it in their roster colour (on a terminal, without `NO_COLOR`), and what happened in words.
//!
//! Every field is teammate-written (names, summaries, subjects, reasons), so each goes through
//! `output::terminal::visible` before it is printed: a control sequence in a message must not
//! rewrite the lines around it.

use std::io::IsTerminal;

use super::event::{Event, Kind};
use crate::output::terminal::visible;
use crate::store::colour::Colour;
use crate::store::protocol::format_timestamp;
use crate::store::roster::TeamConfig;
use crate::store::tasks::history::Transition;

/// How names are painted.
pub(crate) struct Paint {
    on: bool,
    /// The widest name on the roster, so the descriptions line up.
    width: usize,
}

impl Paint {
    /// Colours only on a terminal and without `NO_COLOR`.
    pub(crate) fn detect(config: &TeamConfig) -> Paint {
        let mut paint = Paint {
            on: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
            width: 0,
        };
        paint.fit(config);
        paint
    }

    /// Widens the name column for the members `config` has now.
    pub(crate) fn fit(&mut self, config: &TeamConfig) {
        let widest = config
            .members
            .iter()
            .map(|m| visible(m.name.as_str()).chars().count());
        self.width = self.width.max(widest.max().unwrap_or(0)).clamp(9, 24);
    }

    /// `name` (made visible), padded to `pad` columns, in its roster colour.
    fn name(&self, config: &TeamConfig, name: &str, pad: usize) -> String {
        let shown = visible(name);
        let padded = format!("{shown:<pad$}");
        if !self.on {
            return padded;
        }
        let colour = config
            .member(name)
            .map(|m| m.color_or_default().to_string());
        match colour.as_deref().and_then(Colour::named) {
            Some(c) => format!("\x1b[{}m{padded}\x1b[0m", c.ansi),
            None => padded,
        }
    }
}

/// The first line: which team, and what the times are relative to.
pub(crate) fn header(config: &TeamConfig, start: u64) -> String {
    format!(
        "team {}: run started {} (team created); times below are since then",
        visible(&config.name),
        format_timestamp(start)
    )
}

/// `+1:02:03.456` (or `-0:00:01.000` before the start).
pub(crate) fn since(ms: i64) -> String {
    let sign = if ms < 0 { '-' } else { '+' };
    let ms = ms.unsigned_abs();
    let (h, m, s, milli) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    format!("{sign}{h}:{m:02}:{s:02}.{milli:03}")
}

/// One event as a line.
pub(crate) fn line(e: &Event, start: u64, config: &TeamConfig, paint: &Paint) -> String {
    let actor = paint.name(config, e.actor.as_deref().unwrap_or("?"), paint.width);
    let to = || {
        e.to.as_deref()
            .map_or_else(|| "?".to_string(), |t| paint.name(config, t, 0))
    };
    let text = visible(&e.text);
    let task = e
        .task
        .as_ref()
        .map(|t| format!("task #{t} \"{text}\""))
        .unwrap_or_else(|| format!("\"{text}\""));
    let request = e
        .request
        .as_deref()
        .map(|r| format!(" [{}]", visible(r)))
        .unwrap_or_default();
    let detail = |sep: &str| {
        e.detail
            .as_deref()
            .map(|d| format!("{sep}{}", visible(d)))
            .unwrap_or_default()
    };
    let said = |what: &str| {
        if text.is_empty() {
            String::new()
        } else {
            format!("{what}{text}")
        }
    };
    let mut words = match e.kind {
        Kind::TeamCreated => format!("created the team{}", said(": ")),
        Kind::MemberJoined => format!("joined the team{}", said(" as ")),
        // The sentence the idle notification reads as everywhere (`finished task #3 ...`).
        Kind::MemberIdle => text.to_string(),
        Kind::MemberLeft => format!("left the team{}", said(": ")),
        Kind::Message => format!("→ {}: {text}", to()),
        Kind::Task(Transition::Assigned) => format!("assigned {task} to {}", to()),
        Kind::Task(t) => {
            let whose = match (&e.to, t) {
                (None, _) => String::new(),
                (Some(_), Transition::Released | Transition::Failed) => {
                    format!(" (it was {}'s)", to())
                }
                (Some(_), _) => format!(" (owner {})", to()),
            };
            let verb = match t {
                Transition::Created => "created",
                Transition::Claimed => "claimed",
                Transition::Started => "started",
                Transition::Completed => "completed",
                Transition::Failed => "failed",
                Transition::Released => "released",
                Transition::Stopped => "put back to pending",
                Transition::Reopened => "reopened",
                Transition::Retried => "cleared the failure of",
                Transition::Assigned => "assigned",
                Transition::Deleted => "deleted",
            };
            format!("{verb} {task}{whose}{}", detail(": "))
        }
        Kind::PermissionRequested => format!("asks to use {text}{}{request}", detail(": ")),
        Kind::PermissionApproved | Kind::PermissionRejected => {
            let verb = if e.kind == Kind::PermissionApproved {
                "approved"
            } else {
                "rejected"
            };
            let whose = match &e.to {
                Some(_) => format!("{}'s request", to()),
                None => "a request".to_string(),
            };
            let tool = if text.is_empty() {
                String::new()
            } else {
                format!(" to use {text}")
            };
            format!("{verb} {whose}{tool}{request}{}", detail(": "))
        }
        Kind::PlanRequested => format!("asks to approve a plan{}{request}", said(": ")),
        Kind::PlanApproved | Kind::PlanRejected => {
            let verb = if e.kind == Kind::PlanApproved {
                "approved"
            } else {
                "rejected"
            };
            let whose = match &e.to {
                Some(_) => format!("{}'s plan", to()),
                None => "a plan".to_string(),
            };
            format!("{verb} {whose}{request}{}", detail(": "))
        }
        Kind::ShutdownRequested => format!("asks {} to shut down{}", to(), detail(": ")),
        Kind::ShutdownApproved => format!("agreed to shut down{request}"),
        Kind::ShutdownRejected => format!("refused to shut down{}", detail(": ")),
    };
    if e.seen {
        words.push_str(match e.source {
            super::event::Source::TaskFile => "  (from the task file, as of its last change)",
            _ => "  (seen later; nobody recorded who)",
        });
    }
    format!(
        "{:>14}  {actor}  {words}",
        since(e.at as i64 - start as i64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::event::Source;

    #[test]
    fn times_count_from_the_start_and_names_are_made_visible() {
        assert_eq!(since(0), "+0:00:00.000");
        assert_eq!(since(3_723_456), "+1:02:03.456");
        assert_eq!(since(-1000), "-0:00:01.000");
        let config: TeamConfig = serde_json::from_value(serde_json::json!({
            "name": "t", "createdAt": 1000, "leadAgentId": "team-lead@t", "members": []}))
        .unwrap();
        let paint = Paint {
            on: false,
            width: 9,
        };
        let e = Event::new(2500, Kind::Message, Source::Inbox)
            .by("co\x1b[2Kder")
            .to("team-lead")
            .text("done\r");
        assert_eq!(
            line(&e, 1000, &config, &paint),
            "  +0:00:01.500  co\\e[2Kder  → team-lead: done\\r"
        );
    }
}
