//! Arguments of the commands that bring a team back or take it away: `swarm restart`,
//! `swarm down` and `swarm prune` (`swarm up` shares `swarm launch`'s), and a teammate's side of
//! a shutdown, `swarm shutdown-request`.

use clap::{Args, Subcommand};

use crate::store::names::{AgentName, TeamName};

#[derive(Debug, Args)]
pub(crate) struct RestartArgs {
    /// The teammate to restart.
    pub(crate) name: AgentName,
    /// Seconds to wait for its answer to the shutdown request before stopping it anyway.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub(crate) timeout: u64,
    /// Restart it even if it rejects the shutdown request.
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DownArgs {
    /// Seconds to wait for teammates' answers before stopping them anyway (default 30, or the
    /// grace plus 5).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) timeout: Option<u64>,
    /// Seconds a busy teammate's running turn may take to finish before it is stopped (default:
    /// the wait less 5, so 25).
    #[arg(long, value_name = "SECONDS", conflicts_with = "force")]
    pub(crate) grace: Option<u64>,
    /// Do not wait: stop running turns at once, and stop even teammates that reject the
    /// shutdown request.
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ShutdownRequestCommand {
    /// Show the lead's shutdown request waiting for this teammate's running turn: the lead's
    /// reason and when the turn is stopped. Exit 1 when none waits.
    ///
    /// Example: until swarm shutdown-request show; do make -k step; done
    Show {
        /// The teammate asked (default: $SWARM_AGENT_NAME, so an agent's shell needs no flag).
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        from: AgentName,
    },
    /// Refuse the shutdown, saying why, from inside the running turn: the teammate's runtime
    /// answers the lead with `shutdown_rejected` and REASON and goes on. It also refuses a
    /// request that comes later in the same turn; the next turn starts with none.
    ///
    /// Example: swarm shutdown-request reject "half way through the migration"
    Reject {
        /// Why, for the lead.
        reason: String,
        /// The teammate refusing (default: $SWARM_AGENT_NAME).
        #[arg(long, env = "SWARM_AGENT_NAME", value_name = "NAME")]
        from: AgentName,
    },
}

#[derive(Debug, Args)]
pub(crate) struct PruneArgs {
    /// Teams to delete (their files and tasks); refused while one has a running teammate.
    pub(crate) teams: Vec<TeamName>,
    /// Also delete teams with no running teammate whose files have not changed for this long
    /// (e.g. 90m, 12h, 7d).
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub(crate) older_than: Option<std::time::Duration>,
    /// Do it without asking.
    #[arg(long, short)]
    pub(crate) yes: bool,
}

/// `30s`, `90m`, `12h`, `7d` (a bare number is seconds).
pub(crate) fn parse_age(text: &str) -> Result<std::time::Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| {
        format!("{text:?} is not an age; use a number and a unit, e.g. 90m, 12h or 7d")
    })?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?}; use s, m, h, d or w, e.g. 7d"
            ))
        }
    };
    Ok(std::time::Duration::from_secs(n.saturating_mul(secs)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_take_a_unit() {
        use std::time::Duration;
        assert_eq!(super::parse_age("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(super::parse_age("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(super::parse_age("15"), Ok(Duration::from_secs(15)));
        assert!(super::parse_age("7y").unwrap_err().contains("unknown unit"));
        assert!(super::parse_age("d").is_err());
    }
}
