//! `swarm timeline`: one chronological view of what a team did, built from its files alone.
//!
//! The sources are the files PROTOCOL.md describes plus swarm's own records: messages from the
//! inboxes and their archives (`messages`), the task history and the task files, permission
//! records, the lead agent's decisions and the roster (`records`). Each becomes [`Event`]s of
//! one shape (`event`); [`Timeline::look`] reads what is new in every source since the last
//! look, so the same reader prints the whole story once and then, with `--follow`, what happens
//! next. The same request can show in several files (a permission request is a pending file and
//! a message; a decision is a resolved file, a response message and maybe a line in
//! `decisions.jsonl`): the first source read wins, and records are read before messages because
//! they say more (who decided). Times are shown relative to the run's start, the team's
//! `createdAt`.

mod event;
mod messages;
mod records;
pub(crate) mod render;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

pub(crate) use event::Event;
use event::Kind;
use messages::Inboxes;
use records::Tasks;

use crate::error::Result;
use crate::store::names::{TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Roster, TeamConfig};
use crate::store::tasks::history::State;

/// How long a follower lets a task file disagree with the history before it shows the change
/// as seen: a swarm writer appends its history line just after its write.
const SETTLE: Duration = Duration::from_millis(500);

/// Which events to keep.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// Only events at or after this time (ms).
    pub(crate) since: Option<u64>,
    /// Only events this member did or that were done to it.
    pub(crate) member: Option<String>,
    pub(crate) task: Option<TaskId>,
}

impl Filter {
    fn keeps(&self, e: &Event) -> bool {
        self.since.is_none_or(|s| e.at >= s)
            && self.member.as_deref().is_none_or(|m| e.involves(m))
            && self
                .task
                .as_ref()
                .is_none_or(|t| e.task.as_ref() == Some(t))
    }
}

/// Reads a team's events, each once, from where the last look stopped.
pub(crate) struct Timeline<'a> {
    store: &'a Store,
    team: &'a TeamName,
    filter: Filter,
    roster_shown: HashSet<(String, u64)>,
    inboxes: Inboxes,
    tasks: Tasks,
    decisions_offset: u64,
    /// Permission and plan requests (`false`) and decisions (`true`) already shown, by id.
    requests: HashSet<(bool, String)>,
    /// Task files that disagreed with the history, and since when (following only).
    unsettled: HashMap<TaskId, (State, Instant)>,
    /// The roster as last read: the run's start and the members' colours.
    pub(crate) config: TeamConfig,
}

impl<'a> Timeline<'a> {
    pub(crate) fn new(
        store: &'a Store,
        team: &'a TeamName,
        filter: Filter,
    ) -> Result<Timeline<'a>> {
        Ok(Timeline {
            store,
            team,
            filter,
            roster_shown: HashSet::new(),
            inboxes: Inboxes::default(),
            tasks: Tasks::default(),
            decisions_offset: 0,
            requests: HashSet::new(),
            unsettled: HashMap::new(),
            config: Roster::new(store, team).load()?,
        })
    }

    /// When the run started: the team's creation (ms).
    pub(crate) fn start(&self) -> u64 {
        self.config.created_at
    }

    /// Entries left out so far because their time could not be read.
    pub(crate) fn undated(&self) -> usize {
        self.inboxes.undated + self.tasks.undated
    }

    /// Everything new since the last look, oldest first. `following`: a task file that
    /// disagrees with the history is shown only once it has for [`SETTLE`] (the writer's
    /// history line may be on its way); the first look of a one-shot command shows it at once.
    pub(crate) fn look(&mut self, following: bool) -> Result<Vec<Event>> {
        if let Ok(config) = Roster::new(self.store, self.team).load() {
            self.config = config;
        }
        let mut out = Vec::new();
        let (filter, requests) = (&self.filter, &mut self.requests);
        let mut emit = |e: Event| {
            let request = match e.kind {
                Kind::PermissionRequested | Kind::PlanRequested => Some(false),
                Kind::PermissionApproved
                | Kind::PermissionRejected
                | Kind::PlanApproved
                | Kind::PlanRejected => Some(true),
                _ => None,
            };
            if let (Some(decided), Some(id)) = (request, &e.request) {
                if !requests.insert((decided, id.clone())) {
                    return;
                }
            }
            if filter.keeps(&e) {
                out.push(e);
            }
        };
        for e in records::roster(&self.config, &mut self.roster_shown) {
            emit(e);
        }
        self.tasks.read_history(self.store, self.team, &mut emit)?;
        records::requests(self.store, self.team, &mut emit)?;
        self.decisions_offset =
            records::decisions(self.store, self.team, self.decisions_offset, &mut emit)?;
        self.inboxes
            .read(&self.store.inboxes_dir(self.team), &mut emit)?;
        let (unsettled, mut disagreeing) = (&mut self.unsettled, HashSet::new());
        let now = Instant::now();
        let mut settled = |id: &TaskId, state: &State| {
            if !following {
                return true;
            }
            let shown = match unsettled.get(id) {
                Some((s, since)) if s == state => now.duration_since(*since) >= SETTLE,
                _ => {
                    unsettled.insert(id.clone(), (state.clone(), now));
                    false
                }
            };
            if !shown {
                disagreeing.insert(id.clone());
            }
            shown
        };
        self.tasks
            .read_files(self.store, self.team, &mut settled, &mut emit)?;
        // Explained by the history meanwhile, or shown: nothing to wait for.
        self.unsettled.retain(|id, _| disagreeing.contains(id));
        out.sort_by_key(|e| e.at);
        Ok(out)
    }

    /// When the next look should come at the latest, so a settling task file is shown on time.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.unsettled
            .values()
            .map(|(_, since)| *since + SETTLE)
            .min()
    }
}
