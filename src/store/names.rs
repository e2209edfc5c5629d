//! Validated identifiers: team names, agent names, agent ids, task ids and message ids.
//!
//! A name reaches a path, a tmux title and a shell's environment, so it is checked once, where
//! it enters, and after that the type says it is safe. A name that breaks the rule is refused,
//! never rewritten: Claude Code lowercases some path parts and not others, which loses teams.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// The lead's name in every team.
pub(crate) const LEAD: &str = "team-lead";
/// The sender of swarm's own notices to the lead (a member retired, its tasks returned).
pub(crate) const SYSTEM: &str = "system";
const RESERVED: &[&str] = &["team-lead", "user", "system", "main"];
const MAX_LEN: usize = 64;

fn invalid(kind: &'static str, value: &str, reason: impl Into<String>) -> Error {
    Error::InvalidName {
        kind,
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn check_chars(
    kind: &'static str,
    value: &str,
    first_ok: fn(char) -> bool,
    rest_ok: fn(char) -> bool,
    rule: &str,
) -> Result<()> {
    if value.is_empty() {
        return Err(invalid(kind, value, format!("it is empty; {rule}")));
    }
    if value.len() > MAX_LEN {
        return Err(invalid(
            kind,
            value,
            format!("it has {} characters, the limit is {MAX_LEN}", value.len()),
        ));
    }
    let mut chars = value.chars();
    let first = chars.next().unwrap_or_default();
    if !first_ok(first) || !chars.all(rest_ok) {
        return Err(invalid(kind, value, rule.to_string()));
    }
    Ok(())
}

macro_rules! string_newtype {
    ($name:ident) => {
        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(&self.0)
            }
        }
        /// As the string it is (`"coder"`), so a message that quotes a name with `{:?}` reads
        /// the same whether the name is typed or not.
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }
        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// `^[a-z0-9][a-z0-9-]{0,63}$`
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TeamName(String);
string_newtype!(TeamName);

/// Lets `Option<TeamName>::as_deref()` give the text, as code written against the old
/// `Option<String>` team of the command context expects.
impl FromStr for TeamName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        check_chars(
            "team name",
            s,
            |c| c.is_ascii_lowercase() || c.is_ascii_digit(),
            |c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-',
            "use lowercase letters, digits and '-', starting with a letter or digit (at most 64)",
        )?;
        Ok(TeamName(s.to_string()))
    }
}

/// `^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`. `team-lead` is a valid agent name (it is the lead);
/// [`AgentName::teammate`] additionally refuses every reserved name.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentName(String);
string_newtype!(AgentName);

impl FromStr for AgentName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        check_chars(
            "agent name",
            s,
            |c| c.is_ascii_alphanumeric(),
            |c| c.is_ascii_alphanumeric() || c == '-' || c == '_',
            "use letters, digits, '-' and '_', starting with a letter or digit (at most 64)",
        )?;
        Ok(AgentName(s.to_string()))
    }
}

impl AgentName {
    pub fn lead() -> AgentName {
        AgentName(LEAD.to_string())
    }

    /// The sender of swarm's own notices ([`SYSTEM`]).
    pub fn system() -> AgentName {
        AgentName(SYSTEM.to_string())
    }

    /// A name a new teammate may take: valid and not reserved in any case.
    pub fn teammate(s: &str) -> Result<AgentName> {
        let name: AgentName = s.parse()?;
        if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s)) {
            return Err(invalid(
                "agent name",
                s,
                format!("{} are reserved; pick another name", RESERVED.join(", ")),
            ));
        }
        Ok(name)
    }

    pub fn is_lead(&self) -> bool {
        self.0 == LEAD
    }

    pub fn same_as(&self, other: &str) -> bool {
        self.0.eq_ignore_ascii_case(other)
    }

    /// `<name>@<team>`
    pub fn agent_id(&self, team: &TeamName) -> String {
        format!("{}@{}", self.0, team)
    }
}

/// A message id a sender chose (`swarm send --id`), so that it can send again without the
/// message being stored twice: `^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`, which the UUIDs swarm and
/// Claude Code mint fit.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(String);
string_newtype!(MessageId);

impl FromStr for MessageId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        check_chars(
            "message id",
            s,
            |c| c.is_ascii_alphanumeric(),
            |c| c.is_ascii_alphanumeric() || "._:-".contains(c),
            "use letters, digits and '.', '_', ':', '-', starting with a letter or digit (at \
             most 64), such as the id a send printed",
        )?;
        Ok(MessageId(s.to_string()))
    }
}

/// The largest task id: 2^53 - 1, the largest integer Claude Code (JavaScript) reads exactly.
/// Past it two ids would read as one number, and past `u64` they would wrap to 0.
pub(crate) const MAX_TASK_ID: u64 = (1 << 53) - 1;

/// Decimal task ids, "1", "2", ... up to [`MAX_TASK_ID`]; never reused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskId(u64);

impl TaskId {
    pub fn new(n: u64) -> TaskId {
        TaskId(n)
    }
    pub fn number(&self) -> u64 {
        self.0
    }
}

impl PartialOrd for TaskId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for TaskId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl FromStr for TaskId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let digits = s.strip_prefix('#').unwrap_or(s);
        if digits.is_empty()
            || digits.len() > 19
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || digits.starts_with('0')
        {
            return Err(invalid(
                "task id",
                s,
                "task ids are positive decimal numbers such as 1 or 42",
            ));
        }
        digits
            .parse()
            .ok()
            .filter(|n| *n <= MAX_TASK_ID)
            .map(TaskId)
            .ok_or_else(|| {
                invalid(
                "task id",
                s,
                "task ids are positive decimal numbers such as 1 or 42, at most 9007199254740991",
            )
            })
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0.to_string())
    }
}

impl Serialize for TaskId {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_string())
    }
}
impl<'de> Deserialize<'de> for TaskId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_names_follow_the_rule() {
        for ok in ["a", "refactor", "team-1", "0x"] {
            assert!(ok.parse::<TeamName>().is_ok(), "{ok}");
        }
        let long = "a".repeat(65);
        for bad in [
            "",
            "-a",
            "A",
            "a/b",
            "..",
            "a b",
            "$(id)",
            "a\0b",
            long.as_str(),
            "é",
        ] {
            assert!(bad.parse::<TeamName>().is_err(), "{bad:?}");
        }
        assert!("a".repeat(64).parse::<TeamName>().is_ok());
    }

    #[test]
    fn agent_names_follow_the_rule_and_reserved_names_are_refused_for_teammates() {
        for ok in ["coder", "Coder_2", "a-b", "X"] {
            assert!(AgentName::teammate(ok).is_ok(), "{ok}");
        }
        for bad in [
            "..",
            "a/b",
            "$(id)",
            "-x",
            "_x",
            "a;b",
            "a\nb",
            &"b".repeat(65),
        ] {
            assert!(bad.parse::<AgentName>().is_err(), "{bad:?}");
        }
        for reserved in ["team-lead", "Team-Lead", "USER", "system", "Main"] {
            assert!(AgentName::teammate(reserved).is_err(), "{reserved}");
        }
        assert!("team-lead".parse::<AgentName>().unwrap().is_lead());
    }

    #[test]
    fn task_ids_are_positive_decimals() {
        assert_eq!("42".parse::<TaskId>().unwrap().number(), 42);
        assert_eq!("#7".parse::<TaskId>().unwrap().to_string(), "7");
        for bad in [
            "",
            "0",
            "01",
            "-1",
            "1.5",
            "a",
            "99999999999999999999",
            "9007199254740992",
        ] {
            assert!(bad.parse::<TaskId>().is_err(), "{bad:?}");
        }
    }
}
