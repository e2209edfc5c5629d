//! What a roster holds: the team ([`TeamConfig`]) and its members ([`Member`]), typed.
//!
//! The fields are those of PROTOCOL.md section 5; everything else rides along in `extra`, so a
//! roster Claude Code wrote keeps its fields (`leadProcess`, and whatever comes next). Three
//! things about a member are kept apart here because Claude Code 2.1.328 taught us to: whether
//! it is busy (`isActive`, which Claude flips on every turn), whether swarm retired it
//! ([`RETIRED_FIELD`], swarm's own mark), and whether it runs (not in the roster at all: that
//! is `lifecycle::member_health`, from panes, pids and liveness locks).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::colour::{Colour, LEAD_COLOR};
use crate::store::fsio::now_ms;
use crate::store::names::{AgentName, TeamName, LEAD};

/// Swarm-only member field: when swarm retired the member (ms since the epoch). Set when a
/// shutdown, a kill or the lead console's reaper retires it; removed when a runtime rejoins or
/// the member is started again.
pub(crate) const RETIRED_FIELD: &str = "swarmRetiredAt";

/// Swarm-only roster field: the agent kind a member was launched with (`claude`, `shell`, or
/// the command).
pub(crate) const AGENT_FIELD: &str = "swarmAgent";

/// The `tmuxPaneId` Claude Code's own lead records for itself: the lead runs in the user's
/// terminal, not in a pane Claude made.
pub(crate) const CLAUDE_LEAD_PANE: &str = "leader";

/// Top-level roster field a Claude Code lead writes: the lead process that claims the team.
pub(super) const LEAD_PROCESS_FIELD: &str = "leadProcess";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub created_at: u64,
    pub lead_agent_id: String,
    #[serde(default)]
    pub lead_session_id: String,
    #[serde(default)]
    pub members: Vec<Member>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub agent_id: String,
    /// Parsed when the roster is read: a roster with a name that breaks the rule is invalid.
    pub name: AgentName,
    #[serde(default)]
    pub agent_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_mode_required: Option<bool>,
    #[serde(default)]
    pub joined_at: u64,
    #[serde(default)]
    pub tmux_pane_id: String,
    #[serde(default)]
    pub cwd: String,
    #[serde(default)]
    pub subscriptions: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<String>,
    /// Busy (in a turn) or idle, as Claude Code means it: never whether the member runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_active: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Member {
    /// A teammate with swarm's defaults; the launcher fills in the rest.
    pub fn teammate(team: &TeamName, name: &AgentName, color: &str, cwd: &str) -> Member {
        Member {
            agent_id: name.agent_id(team),
            name: name.clone(),
            agent_type: "general-purpose".into(),
            model: None,
            prompt: None,
            color: Some(color.into()),
            plan_mode_required: Some(false),
            joined_at: now_ms(),
            tmux_pane_id: String::new(),
            cwd: cwd.into(),
            subscriptions: vec![],
            backend_type: None,
            is_active: Some(false),
            mode: Some("default".into()),
            extra: Map::new(),
        }
    }

    /// The lead's entry as swarm writes it.
    pub fn lead(team: &TeamName, cwd: &str, joined_at: u64) -> Member {
        let lead = AgentName::lead();
        Member {
            agent_id: lead.agent_id(team),
            name: lead,
            agent_type: LEAD.into(),
            model: None,
            prompt: None,
            color: None,
            plan_mode_required: None,
            joined_at,
            tmux_pane_id: std::env::var("TMUX_PANE").unwrap_or_default(),
            cwd: cwd.into(),
            subscriptions: vec![],
            backend_type: None,
            is_active: None,
            mode: None,
            extra: Map::new(),
        }
    }

    pub fn is_lead(&self) -> bool {
        self.name.is_lead()
    }

    /// Whether swarm retired this teammate (a shutdown, a kill, or its death seen by the lead
    /// console). Not whether it runs, and not `isActive`.
    pub fn retired(&self) -> bool {
        self.extra.contains_key(RETIRED_FIELD)
    }

    /// Marks the member retired by swarm; `true` if it was not already.
    pub fn retire(&mut self) -> bool {
        let was = self.retired();
        // Not busy any more, in Claude Code's sense of `isActive`.
        self.is_active = Some(false);
        self.extra
            .entry(RETIRED_FIELD)
            .or_insert_with(|| Value::from(now_ms()));
        !was
    }

    /// Counts the member in again (a runtime rejoined, or it was started again); `true` if it
    /// had been retired.
    pub fn reinstate(&mut self) -> bool {
        self.extra.remove(RETIRED_FIELD).is_some()
    }

    /// The agent kind swarm launched it with ([`AGENT_FIELD`]), if swarm did.
    pub fn agent_label(&self) -> Option<&str> {
        self.extra.get(AGENT_FIELD).and_then(|v| v.as_str())
    }

    /// Whether swarm launched it as a native Claude Code teammate (`--agent claude`).
    pub(crate) fn runs_claude(&self) -> bool {
        self.agent_label() == Some("claude")
    }

    /// `busy`, `idle`, or `None` when the roster does not say.
    pub fn busy_text(&self) -> Option<&'static str> {
        self.is_active
            .map(|busy| if busy { "busy" } else { "idle" })
    }

    pub fn color_or_default(&self) -> &str {
        self.color
            .as_deref()
            .unwrap_or(if self.is_lead() { LEAD_COLOR } else { "blue" })
    }
}

/// `leadProcess` as a Claude Code lead writes it: `pid`, `pidSpace` (`<hostname>#<pid
/// namespace>`), `claimedAt` (ms) and, on Linux, `procStart` (the pid's start time in clock ticks
/// since boot, `/proc/<pid>/stat` field 22, as a string).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeadProcess {
    pub pid: u32,
    pub pid_space: String,
    pub claimed_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proc_start: Option<String>,
}

/// Roster fields Claude Code once read and no longer does, with what to say of each: swarm
/// keeps them byte for byte (`extra`) and applies none, as the newest Claude Code does.
const IGNORED_FIELDS: &[(&str, &str)] = &[(
    "teamAllowedPaths",
    "Claude Code 2.1.329 and later ignore it (2.1.328 turned it into allow rules for its \
     teammates) and swarm never applied it; give teammates those paths as allow rules in their \
     settings (`permissions.allow`, e.g. \"Edit(/path/**)\") instead",
)];

impl TeamConfig {
    /// The fields of this roster that nobody applies ([`IGNORED_FIELDS`]), each with why.
    pub(crate) fn ignored_fields(&self) -> Vec<(&'static str, &'static str)> {
        IGNORED_FIELDS
            .iter()
            .filter(|(field, _)| self.extra.contains_key(*field))
            .copied()
            .collect()
    }

    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    pub fn member_mut(&mut self, name: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.name == name)
    }

    /// The colour the next teammate gets.
    pub fn next_color(&self) -> &'static str {
        let teammates = self.members.iter().filter(|m| !m.is_lead()).count();
        Colour::nth(teammates).name
    }

    pub fn teammates(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| !m.is_lead())
    }

    /// The lead process a Claude Code lead recorded, if it did (and the record is well formed).
    pub fn lead_process(&self) -> Option<LeadProcess> {
        serde_json::from_value(self.extra.get(LEAD_PROCESS_FIELD)?.clone()).ok()
    }

    /// Whether a Claude Code lead made this team (it records its process, and calls its own pane
    /// `leader`). Its teammates obey only lead entries signed with that lead's key, which swarm
    /// does not have, so swarm cannot speak as this team's lead.
    pub fn led_by_claude(&self) -> bool {
        self.extra.contains_key(LEAD_PROCESS_FIELD)
            || self
                .members
                .iter()
                .any(|m| m.is_lead() && m.tmux_pane_id == CLAUDE_LEAD_PANE)
    }
}
