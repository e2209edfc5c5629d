//! Claims by a teammate runtime on a remote host, decided at home.
//!
//! On the lead's machine a claim is decided on the task files under their locks (PROTOCOL.md
//! section 8), which is what makes it exactly-once. A mirror's task files are copies, and two
//! hosts' copies cannot exclude each other, so a runtime whose store is a mirror never claims
//! in it: it asks home. The request is a file in the mirror (`relay/claims/<id>.json`, naming
//! the member and the task); the relay sends it home as a `Claim` operation, home claims the
//! task for the member on its own files with the busy check (so the member never owns two
//! unfinished tasks, whichever host asks), and the answer comes back as `<id>.answer.json`
//! carrying home's copy of the task. Replaying a claim is harmless: a task already the
//! member's is granted again. A runtime that hears nothing (the host is disconnected) takes no
//! new task; if home did grant one, the task reaches the mirror as the member's and the runtime
//! resumes it as its own.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Result;
use crate::store::fsio;
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;

/// A runtime's request for one task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClaimRequest {
    pub(crate) member: AgentName,
    pub(crate) task: TaskId,
    pub(crate) at_ms: u64,
}

/// Home's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "camelCase")]
pub(crate) enum ClaimAnswer {
    /// The task is the member's; home's copy of it.
    Granted { task: Value },
    /// Not the member's: why, in home's words.
    Refused { reason: String },
}

/// Whether `team` in `store` is a remote host's mirror, whose claims are decided at home.
pub(crate) fn is_mirror(store: &Store, team: &TeamName) -> bool {
    store.mirror_marker_path(team).exists()
}

/// Whether a relay serves `team`'s mirror now (it holds the mirror's serve lock): without one,
/// a request would only wait.
pub(crate) fn relay_running(store: &Store, team: &TeamName) -> bool {
    use fs4::fs_std::FileExt;
    let path = store.relay_dir(team).join("serve.lock");
    let Ok(file) = std::fs::File::open(&path) else {
        return false;
    };
    match FileExt::try_lock_shared(&file) {
        Ok(true) => {
            let _ = FileExt::unlock(&file);
            false
        }
        Ok(false) => true,
        Err(_) => false,
    }
}

fn dir(store: &Store, team: &TeamName) -> PathBuf {
    store.relay_dir(team).join("claims")
}

/// Asks home for `task` on behalf of `member` and waits up to `wait` for the answer; `None`
/// when none came, or the relay went away meanwhile (the request is withdrawn).
pub(crate) fn ask(
    store: &Store,
    team: &TeamName,
    member: &AgentName,
    task: &TaskId,
    wait: Duration,
) -> Result<Option<ClaimAnswer>> {
    let dir = dir(store, team);
    fsio::ensure_dir(&dir)?;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let request = dir.join(format!("{id}.json"));
    let answer = dir.join(format!("{id}.answer.json"));
    fsio::write_json_new(
        &request,
        &ClaimRequest {
            member: member.clone(),
            task: task.clone(),
            at_ms: fsio::now_ms(),
        },
    )?;
    let deadline = Instant::now() + wait;
    let got = loop {
        if let Some(a) = fsio::read_json::<ClaimAnswer>(&answer)? {
            break Some(a);
        }
        // No relay (the connection ended): no answer can come now.
        if Instant::now() >= deadline || !relay_running(store, team) {
            break None;
        }
        // A poll, not a watch: a runtime asks rarely, and each watch would take one of the
        // user's few inotify instances (128 on a typical Linux) for as long as it waits.
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = std::fs::remove_file(&request);
    let _ = std::fs::remove_file(&answer);
    Ok(got)
}

/// Requests waiting for an answer, oldest first, by request id.
pub(crate) fn waiting(store: &Store, team: &TeamName) -> Vec<(String, ClaimRequest)> {
    let Ok(entries) = std::fs::read_dir(dir(store, team)) else {
        return vec![];
    };
    let mut found: Vec<(String, ClaimRequest)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let id = name.to_str()?.strip_suffix(".json")?;
            if id.ends_with(".answer") || id.contains(fsio::TEMP_MARK) || id.starts_with('.') {
                return None;
            }
            let request: ClaimRequest = fsio::read_json(&e.path()).ok().flatten()?;
            Some((id.to_string(), request))
        })
        .filter(|(id, _)| !dir(store, team).join(format!("{id}.answer.json")).exists())
        .collect();
    found.sort_by_key(|(_, r)| r.at_ms);
    found
}

/// Writes home's answer to request `id`, if the runtime still waits for it.
pub(crate) fn answer(store: &Store, team: &TeamName, id: &str, answer: &ClaimAnswer) -> Result<()> {
    let dir = dir(store, team);
    if !dir.join(format!("{id}.json")).exists() {
        return Ok(());
    }
    fsio::write_json(&dir.join(format!("{id}.answer.json")), answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::team_with;

    #[test]
    fn a_request_is_answered_through_the_mirror_and_withdrawn_without_one() {
        let (_dir, store, team) = team_with(&["coder"]);
        let coder: AgentName = "coder".parse().unwrap();
        let alone = ask(
            &store,
            &team,
            &coder,
            &TaskId::new(1),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(alone, None, "no relay: no wait");
        // A relay serves the mirror: it holds the serve lock.
        let lock = std::fs::File::create(store.relay_dir(&team).join("serve.lock")).unwrap();
        fs4::fs_std::FileExt::lock_exclusive(&lock).unwrap();
        let none = ask(
            &store,
            &team,
            &coder,
            &TaskId::new(1),
            Duration::from_millis(50),
        )
        .unwrap();
        assert_eq!(none, None);
        assert!(
            waiting(&store, &team).is_empty(),
            "a timed-out request is withdrawn"
        );
        let relay = {
            let store = store.clone();
            let team = team.clone();
            std::thread::spawn(move || loop {
                if let Some((id, r)) = waiting(&store, &team).pop() {
                    assert_eq!(r.task, TaskId::new(2));
                    let granted = ClaimAnswer::Granted {
                        task: serde_json::json!({"id": "2"}),
                    };
                    answer(&store, &team, &id, &granted).unwrap();
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            })
        };
        let got = ask(
            &store,
            &team,
            &coder,
            &TaskId::new(2),
            Duration::from_secs(20),
        )
        .unwrap();
        relay.join().unwrap();
        assert!(matches!(got, Some(ClaimAnswer::Granted { .. })), "{got:?}");
        assert_eq!(std::fs::read_dir(dir(&store, &team)).unwrap().count(), 0);
    }
}
