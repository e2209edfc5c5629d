//! The one error type of swarm.
//!
//! Every failure a user can see is a variant here, and every message says what failed and, where
//! there is something to do about it, what to do. `main` alone turns an error into an exit code:
//! bad input (a name, a flag, a missing team) exits 2, a failure of the world (I/O, tmux, a lock
//! that never freed) exits 1, and a change that was made but not confirmed durable exits 3.

use std::io;
use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid {kind} {value:?}: {reason}")]
    InvalidName {
        kind: &'static str,
        value: String,
        reason: String,
    },

    /// Bad input that is not a name: a flag combination, a value out of range, a malformed file
    /// given on the command line.
    #[error("{0}")]
    Usage(String),

    /// `hint` is empty, or says where else the team is (`commands::demo::elsewhere`).
    #[error("team {team:?} does not exist under {root}; create it with `swarm team create {team}` or pass --root{hint}")]
    NoSuchTeam {
        team: String,
        root: PathBuf,
        hint: String,
    },

    #[error(
        "team {0:?} already exists; pick another name or delete it with `swarm team delete {0}`"
    )]
    TeamExists(String),

    #[error(
        "{name:?} is not a member of team {team:?}; `swarm team show {team}` lists the members"
    )]
    NoSuchMember { team: String, name: String },

    /// A roster that still does not parse after a few reads: damaged, not caught mid-write.
    #[error("{} is not valid ({detail}); repair it or move it aside", path.display())]
    InvalidRoster { path: PathBuf, detail: String },

    #[error("team {team:?} already has a member named {name:?} (names are unique ignoring case)")]
    MemberExists { team: String, name: String },

    #[error("team {team:?} still has active teammates ({names}); shut them down with `swarm shutdown --all` or pass --force")]
    TeamActive { team: String, names: String },

    /// A lead-only operation in a process that cannot use the team's lead key; `why` says what
    /// this process lacks.
    #[error("refusing to {what} (team {team:?}): only the team lead may, and this process {why}; run it from the lead's own shell (the one that created or launched the team), which can read the team's lead key")]
    NotTheLead {
        what: String,
        team: String,
        why: String,
    },

    #[error("task #{id} does not exist in team {team:?}; `swarm task list` shows the tasks")]
    NoSuchTask { team: String, id: String },

    #[error("cannot claim task #{id}: {reason}")]
    ClaimRefused { id: String, reason: ClaimFailure },

    #[error("task #{from} cannot be blocked by #{to}: that would close a dependency cycle")]
    DependencyCycle { from: String, to: String },

    #[error("no permission or plan request {0:?} is waiting for the lead; `swarm permission list` shows the open ones")]
    NoSuchRequest(String),

    /// The pending record changed between being shown and being decided: what was signed must be
    /// what the lead read.
    #[error("{id} changed after it was shown: its pending record no longer says what was read (someone rewrote it); nothing was decided, look at it again with `swarm permission list`")]
    RequestChanged { id: String },

    /// A second decision on a request: `verdict` and `by` are the first one's.
    #[error("{id} was already decided: {verdict} by {by}; nothing changed (`swarm permission list --all` shows every decision)")]
    AlreadyDecided {
        id: String,
        verdict: &'static str,
        by: String,
    },

    #[error("refusing team memory topic {name:?}: {reason}; a topic name is a relative path inside the team memory directory, like `build` or `ci/flaky-tests`")]
    UnsafeMemoryName { name: String, reason: String },

    #[error("team memory has no topic {name:?} in {}; `swarm memory list` shows the topics", dir.display())]
    NoSuchTopic { name: String, dir: PathBuf },

    #[error("message is {size} bytes, over the {limit} byte limit; put large content in a file and send its path")]
    MessageTooLarge { size: usize, limit: usize },

    #[error("the inbox {path} is {size} bytes, past the limit of {limit} bytes (SWARM_INBOX_MAX_BYTES), so the message was not delivered; its reader must catch up first (`swarm inbox NAME` moves an inbox this large aside, and `swarm status` lists it)")]
    InboxFull {
        path: PathBuf,
        size: u64,
        limit: u64,
    },

    #[error("the spool of {to} holds {entries} waiting messages ({bytes} bytes), past the limit of {max_entries} or {max_bytes} bytes, so the message was not delivered; wait until its inbox's writers catch up, then send again")]
    SpoolFull {
        to: String,
        entries: usize,
        bytes: u64,
        max_entries: usize,
        max_bytes: u64,
    },

    #[error("refusing to use {path}: it is a {found} where a regular file or directory belongs; move it away and retry")]
    NotARegularFile { path: PathBuf, found: &'static str },

    #[error("refusing to use {path}: other users can write to it (mode {mode:o}), so they could plant or swap store files; run `chmod 700 {path}` or pass another --root")]
    InsecureDir { path: PathBuf, mode: u32 },

    #[error("refusing to use {path}: it belongs to uid {owner}, not to you (uid {me}), so that user could plant or swap store files; remove it (`rm -r {path}`) or, if you trust it, run `chown -R {me} {path}`")]
    NotOwned { path: PathBuf, owner: u32, me: u32 },

    #[error("refusing to use {path}: it has {links} hard links, so writing it would change another file too; remove it (`rm {path}`) and retry")]
    HardLinked { path: PathBuf, links: u64 },

    #[error("failed to {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("failed to parse {path}: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    /// A spooled message the inbox lock holder found is not a message (damaged on disk).
    #[error("the message was rejected, not delivered: its spool entry {} did not parse as a message when it was taken in, so it was moved to {}; send it again", entry.display(), aside.display())]
    SpoolEntryRejected { entry: PathBuf, aside: PathBuf },

    #[error("lost the lock {path} while writing: a waiter took it over after this process stopped; the write did not happen")]
    LockTakenOver { path: PathBuf },

    #[error("gave up waiting for {path} after {waited_ms} ms: another process keeps it locked, where a runtime starting again holds it only for a moment; `lslocks` names the holder: end it if it is not one of this team's runtimes")]
    GateHeld { path: PathBuf, waited_ms: u128 },

    #[error("gave up waiting for the lock on {path} after {waited_ms} ms: it is held by {holder}; if that process is not writing there, end it, or remove the directory {path} if no process holds it")]
    LockTimeout {
        path: PathBuf,
        waited_ms: u128,
        holder: String,
    },

    #[error("broadcast not delivered to {}; delivered to {}. Fix those inboxes and run the same command again: members that have it already are skipped", failed.iter().map(|(n, e)| format!("{n} ({e})")).collect::<Vec<_>>().join(", "), if delivered.is_empty() { "nobody".to_string() } else { delivered.join(", ") })]
    BroadcastIncomplete {
        delivered: Vec<String>,
        failed: Vec<(String, String)>,
    },

    #[error("{program} failed: {detail}")]
    Command { program: String, detail: String },

    /// ssh could not connect to a teammate's host (or the connection broke).
    #[error("cannot reach host {host} over ssh: {detail}; check that `ssh {host} true` works from this shell (swarm uses your ssh configuration, or the file SWARM_SSH_CONFIG names, and needs a key or an agent: it never asks for a password)")]
    Unreachable { host: String, detail: String },

    /// A path a contained teammate must not replace is, or lies under, a symlink in a directory
    /// the teammate may write: no mount holds a symlink in place (`launch::sandbox::pins`).
    #[error("cannot contain teammate {name}: {} is a symlink (to {}) in a directory the teammate may write, so it could put a file of its own there, which swarm and Claude Code read outside its sandbox; replace the link by what it names (for a file: cp --remove-destination \"$(readlink -f {})\" {}), or pass --no-sandbox", link.display(), target.display(), link.display(), link.display())]
    Uncontainable {
        name: String,
        link: PathBuf,
        target: PathBuf,
    },

    #[error("{0}")]
    Backend(String),

    /// A Claude Code hook (`.claude/settings*.json`) exited 2; `reason` is its stderr.
    #[error("the {event} hook refused {what}: {reason}")]
    HookBlocked {
        event: &'static str,
        what: String,
        reason: String,
    },

    #[error("git: {0}")]
    Git(#[from] git2::Error),

    /// Not a failure: the change was made and is visible, but the directory sync after its
    /// rename failed (`fsio::unconfirmed`). A one-shot command's outcome, said as a warning.
    #[error("done, but not confirmed durable: the change is made and everyone sees it, but the sync of the directory {} after it failed ({detail}), so a crash of the machine could still undo it; check the disk (`dmesg`, free space). Trying again is safe for a claim, which gets the task it already owns, and for a send given the same --id (the id it printed), which is not stored twice; either exits 0 once the directory syncs. Look before running anything else again: it is done (a second `task create` makes a second task)", dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "))]
    NotDurable { dirs: Vec<PathBuf>, detail: String },
}

/// Why a claim did not go through; the names match Claude Code's claim results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimFailure {
    AlreadyClaimed,
    AlreadyResolved,
    Blocked,
    AgentBusy,
}

impl std::fmt::Display for ClaimFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClaimFailure::AlreadyClaimed => {
                "another teammate already owns it (`swarm task show ID` says who)"
            }
            ClaimFailure::AlreadyResolved => "it is already completed",
            ClaimFailure::Blocked => "it is blocked: a task it depends on is not completed yet",
            ClaimFailure::AgentBusy => {
                "the agent already owns an unfinished task; finish or release that one first \
                 (or pass --no-busy-check)"
            }
        })
    }
}

impl Error {
    /// 2 for input the user can correct (a usage error), 3 for a change made but not confirmed
    /// durable, 1 for everything else: a runtime failure, and a team, member, task, request or
    /// topic that is not there (as gh and kubectl exit). README "Exit status" lists them.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::NotDurable { .. } => 3,
            Error::InvalidName { .. }
            | Error::Usage(_)
            | Error::TeamExists(_)
            | Error::MemberExists { .. }
            | Error::TeamActive { .. }
            | Error::NotTheLead { .. }
            | Error::InvalidRoster { .. }
            | Error::DependencyCycle { .. }
            | Error::AlreadyDecided { .. }
            | Error::RequestChanged { .. }
            | Error::MessageTooLarge { .. }
            | Error::UnsafeMemoryName { .. }
            | Error::NotARegularFile { .. }
            | Error::InsecureDir { .. }
            | Error::NotOwned { .. }
            | Error::HardLinked { .. }
            | Error::ClaimRefused { .. }
            | Error::HookBlocked { .. } => 2,
            _ => 1,
        }
    }

    /// A team, member, task, request or topic that is not there: exit 1 like any runtime
    /// failure, but the person's to correct, so an interactive view (the lead console) reports
    /// it and goes on, as it does a usage error.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Error::NoSuchTeam { .. }
                | Error::NoSuchMember { .. }
                | Error::NoSuchTask { .. }
                | Error::NoSuchRequest(_)
                | Error::NoSuchTopic { .. }
        )
    }

    pub fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io {
            action,
            path,
            source,
        }
    }

    pub fn usage(msg: impl Into<String>) -> Error {
        Error::Usage(msg.into())
    }
}
