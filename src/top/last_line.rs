//! The last line a member printed: the tail of an in-process teammate's log, or the bottom of
//! a tmux teammate's pane. `None` when there is no output swarm can read (iTerm2, a pane that
//! is gone, nothing printed yet), and the dashboard shows the member's last message instead,
//! cut to its first line the same way (a lifecycle frame as its sentence).

use std::io::{Read, Seek, SeekFrom};

use crate::backend::{for_member, BackendKind};
use crate::store::fsio;
use crate::store::mailbox::InboxMessage;
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::protocol::Payload;
use crate::store::roster::Member;

/// How much of a log's end is read to find its last line.
const TAIL_BYTES: u64 = 4096;

pub(crate) fn last_line(store: &Store, team: &TeamName, member: &Member) -> Option<String> {
    let backend = for_member(store, team, member)?;
    let text = match backend.kind() {
        BackendKind::InProcess => tail(&store.log_path(team, &member.name))?,
        BackendKind::Tmux => {
            // A pane that is gone (or no longer swarm's) is refused by `capture`.
            backend.tmux()?.capture(&backend.pane()?).ok()?
        }
        BackendKind::Iterm2 => return None,
    };
    text.lines()
        .rev()
        .map(str::trim_end)
        .find(|l| !l.trim().is_empty())
        .map(str::to_string)
}

fn tail(path: &std::path::Path) -> Option<String> {
    let mut file = fsio::open_read(path).ok()??;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))
        .ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A message as one cell: a lifecycle frame as its sentence (`finished task #3 (resolved)`,
/// `completed task #3 (Add tests)`), anything else as its summary or first line.
pub(crate) fn message_line(msg: &InboxMessage) -> String {
    if let Payload::Protocol(p) = msg.payload() {
        if let Some(sentence) = p.describe() {
            return sentence;
        }
    }
    first_line(msg.summary.as_deref().unwrap_or(&msg.text))
}

/// The first non-empty line of `text`, for a one-line cell (a message, a plan).
pub(crate) fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::protocol::{Protocol, TaskCompleted, TeammateTerminated};

    #[test]
    fn a_lifecycle_frame_is_shown_as_its_sentence() {
        let done = Protocol::TaskCompleted(TaskCompleted::new("a", "3", "Add tests"));
        assert_eq!(
            message_line(&InboxMessage::protocol(
                &crate::store::fixture::agent("a"),
                &done
            )),
            "completed task #3 (Add tests)"
        );
        let gone = Protocol::TeammateTerminated(TeammateTerminated {
            message: "a has shut down.".into(),
            extra: Default::default(),
        });
        assert_eq!(
            message_line(&InboxMessage::protocol(
                &crate::store::fixture::agent("system"),
                &gone
            )),
            "terminated: a has shut down."
        );
        let text = InboxMessage::new(&crate::store::fixture::agent("a"), "line one\nline two")
            .with_summary(None);
        assert_eq!(message_line(&text), "line one");
    }
}
