//! Arguments of the commands that look back at what a team did: `swarm timeline` and `swarm
//! usage`.

use std::time::Duration;

use clap::Args;

use super::lifecycle::parse_age;
use crate::store::names::{AgentName, TaskId};
use crate::store::protocol::parse_timestamp;

#[derive(Debug, Args)]
pub(crate) struct TimelineArgs {
    /// Only events since this long ago (30s, 10m, 2h, 1d) or since this UTC time
    /// (2026-01-01T12:00:00Z).
    #[arg(long, value_name = "DURATION|TIME", value_parser = parse_since)]
    pub(crate) since: Option<Since>,
    /// Only what this member did or what was done to it (messages to it, tasks given to it).
    #[arg(long, value_name = "NAME")]
    pub(crate) member: Option<AgentName>,
    /// Only events about this task.
    #[arg(long, value_name = "ID")]
    pub(crate) task: Option<TaskId>,
    /// Keep printing events as they happen (Ctrl-C stops).
    #[arg(short, long)]
    pub(crate) follow: bool,
}

/// Where `--since` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Since {
    Ago(Duration),
    /// Milliseconds since the epoch.
    At(u64),
}

impl Since {
    /// The start in milliseconds since the epoch, for a command run at `now_ms`.
    pub(crate) fn ms(self, now_ms: u64) -> u64 {
        match self {
            Since::Ago(d) => now_ms.saturating_sub(d.as_millis() as u64),
            Since::At(ms) => ms,
        }
    }
}

fn parse_since(text: &str) -> Result<Since, String> {
    if text.contains('T') {
        return parse_timestamp(text).map(Since::At).ok_or_else(|| {
            format!(
                "{text:?} is not a UTC time; write it as 2026-01-01T12:00:00Z (or .000Z), or give \
                 a duration such as 10m"
            )
        });
    }
    parse_age(text)
        .map(Since::Ago)
        .map_err(|e| format!("{e}; --since also takes a UTC time such as 2026-01-01T12:00:00Z"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_duration_or_a_utc_time() {
        assert_eq!(parse_since("10m"), Ok(Since::Ago(Duration::from_secs(600))));
        assert_eq!(
            parse_since("2026-01-01T00:00:01Z"),
            Ok(Since::At(1_767_225_601_000))
        );
        assert!(parse_since("2026-01-01T00:00:01")
            .unwrap_err()
            .contains("UTC time"));
        assert!(parse_since("yesterday")
            .unwrap_err()
            .contains("--since also takes"));
        assert_eq!(Since::Ago(Duration::from_secs(1)).ms(5000), 4000);
    }
}
