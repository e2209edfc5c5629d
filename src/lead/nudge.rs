//! Telling the person that a teammate waits on them: a permission or plan request still open at
//! the console after a few seconds (`--notify-after`, 5 by default) rings the terminal bell
//! once, shows a message on the tmux clients watching the console's pane, and runs Claude Code's
//! `Notification` hooks.
//!
//! A teammate parked on the lead does nothing until someone answers, and the person may be in
//! another window; a request answered within the delay (at the console, or elsewhere: `swarm
//! permission approve`, `swarm top`) causes none of it. Each request is told once per console
//! run, counted from when this console first asked it. The bell and the line are printed at
//! once; tmux and the hooks run on a thread of their own, so a slow hook (Claude Code allows one
//! 600 s) or a hung tmux server never holds up the console. The tmux message touches only the
//! clients of the console's own session (`backend::tmux::OwnPane`), with the text disarmed for
//! tmux's format expansion; the hooks are those Claude Code would run (the user's settings, the
//! project's where trusted), with the JSON Claude Code 2.1.328 sends: `notification_type`
//! `worker_permission_prompt` and `NAME needs permission for TOOL` for a permission, as a
//! Claude Code lead sends for its teammates', and `agent_needs_input` for a plan.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::paint::shown;
use crate::backend::tmux::OwnPane;
use crate::backend::SystemExec;
use crate::output::terminal::visible;
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::requests::Request;
use crate::store::roster::Roster;
use crate::teammate::hooks::Notification;

/// How long a request waits before the person is told, unless `--notify-after` says otherwise.
pub(crate) const DEFAULT_AFTER: Duration = Duration::from_secs(5);

/// The longest request detail a message carries; tmux cuts it at the client's width anyway.
const DETAIL_LIMIT: usize = 120;

/// The open requests' clocks and what is needed to tell the person.
pub(super) struct Nudge {
    /// `None`: never tell (`--notify-after 0`, `--auto-approve`).
    after: Option<Duration>,
    /// Each open request: when this console first asked it, and whether it was told already.
    seen: HashMap<String, (Instant, bool)>,
    /// The `Notification` hook's `session_id`: the lead's, when the roster records one.
    session_id: String,
    pane: Option<OwnPane>,
}

impl Nudge {
    pub(super) fn new(store: &Store, team: &TeamName, after: Option<Duration>) -> Nudge {
        let session_id = Roster::new(store, team)
            .load()
            .map(|c| c.lead_session_id)
            .unwrap_or_default();
        Nudge {
            after,
            seen: HashMap::new(),
            session_id,
            pane: OwnPane::from_env(),
        }
    }

    /// Tells the person about every request in `open` whose time has come.
    pub(super) fn check<'r>(&mut self, open: impl Iterator<Item = &'r Request>) {
        for request in self.due(open, Instant::now()) {
            self.tell(&request);
        }
    }

    /// The requests of `open` that have waited `after` since this console first saw them and
    /// were not told yet, each marked told; requests no longer open are forgotten.
    fn due<'r>(&mut self, open: impl Iterator<Item = &'r Request>, now: Instant) -> Vec<Request> {
        let Some(after) = self.after else {
            return Vec::new();
        };
        let open: Vec<&Request> = open.collect();
        self.seen
            .retain(|id, _| open.iter().any(|r| r.id() == id.as_str()));
        let mut due = Vec::new();
        for request in open {
            let (since, told) = self
                .seen
                .entry(request.id().to_string())
                .or_insert((now, false));
            if !*told && now.duration_since(*since) >= after {
                *told = true;
                due.push(request.clone());
            }
        }
        due
    }

    /// How long until the next open request is due, for the console's timer.
    pub(super) fn next_due(&self) -> Option<Duration> {
        let after = self.after?;
        let now = Instant::now();
        self.seen
            .values()
            .filter(|(_, told)| !told)
            .map(|(since, _)| (*since + after).saturating_duration_since(now))
            .min()
    }

    /// The bell and the console line now; the tmux message and the hooks on their own thread.
    fn tell(&self, request: &Request) {
        let text = waits_line(request);
        let _ = crate::output::line(format!("\x07🔔 {}", shown(&text)));
        let pane = self.pane.clone();
        let tmux_text = format!("swarm: {text}");
        let (message, notification_type) = hook_message(request);
        let hook = Notification {
            project_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            session_id: self.session_id.clone(),
            message,
            notification_type,
        };
        std::thread::spawn(move || {
            if let Some(pane) = pane {
                if let Err(e) = pane.tell_watchers(Arc::new(SystemExec), &tmux_text) {
                    say(&format!("! could not show the request in tmux: {e}"));
                }
            }
            hook.run(&|line: &str| say(&format!("! {line}")));
        });
    }
}

fn say(text: &str) {
    let _ = crate::output::line(shown(text));
}

/// `coder waits for your decision on Bash: make test (request perm-…)`, control characters made
/// visible.
fn waits_line(request: &Request) -> String {
    let on = match request {
        Request::Permission(r) => {
            let detail = match r.input.get("command").and_then(|c| c.as_str()) {
                Some(command) => command.to_string(),
                None if !r.description.is_empty() => r.description.clone(),
                None => r.input.to_string(),
            };
            format!("{}: {}", visible(&r.tool_name), cut(&visible(&detail)))
        }
        Request::Plan(r) => format!("its plan: {}", cut(&visible(r.first_line()))),
    };
    format!(
        "{} waits for your decision on {on} (request {})",
        visible(request.from()),
        visible(request.id())
    )
}

/// The `Notification` hook's message and type, in Claude Code's words.
fn hook_message(request: &Request) -> (String, &'static str) {
    match request {
        Request::Permission(r) => (
            format!("{} needs permission for {}", r.worker_name, r.tool_name),
            "worker_permission_prompt",
        ),
        Request::Plan(r) => (
            format!(
                "{} needs your input: approve or reject its plan",
                r.worker_name
            ),
            "agent_needs_input",
        ),
    }
}

/// `text` cut to [`DETAIL_LIMIT`] characters, with `…` where it was cut.
fn cut(text: &str) -> String {
    match text.char_indices().nth(DETAIL_LIMIT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nudge(after: Option<Duration>) -> Nudge {
        Nudge {
            after,
            seen: HashMap::new(),
            session_id: String::new(),
            pane: None,
        }
    }

    fn request(id: &str) -> Request {
        let json = serde_json::json!({
            "id": id, "workerId": "coder@t", "workerName": "coder", "workerColor": "blue",
            "teamName": "t", "toolName": "Bash", "toolUseId": "u", "description": "",
            "input": {"command": "make test"}, "permissionSuggestions": [], "status": "pending",
            "createdAt": 0
        });
        Request::Permission(Box::new(serde_json::from_value(json).unwrap()))
    }

    #[test]
    fn a_request_is_due_once_after_the_delay_and_never_when_off() {
        let start = Instant::now();
        let (a, b) = (request("perm-a"), request("perm-b"));
        let mut n = nudge(Some(Duration::from_secs(5)));
        assert!(n.due([&a].into_iter(), start).is_empty());
        assert!(n
            .due([&a, &b].into_iter(), start + Duration::from_secs(3))
            .is_empty());
        let due = n.due([&a, &b].into_iter(), start + Duration::from_secs(5));
        assert_eq!(due, std::slice::from_ref(&a));
        assert!(n
            .due([&a, &b].into_iter(), start + Duration::from_secs(7))
            .is_empty());
        assert_eq!(
            n.due([&a, &b].into_iter(), start + Duration::from_secs(8)),
            std::slice::from_ref(&b)
        );
        assert!(n
            .due([&a, &b].into_iter(), start + Duration::from_secs(60))
            .is_empty());
        // Gone (decided) and forgotten.
        n.due(std::iter::empty(), start + Duration::from_secs(61));
        assert!(n.seen.is_empty());

        let mut off = nudge(None);
        assert!(off.due([&a].into_iter(), start).is_empty());
        assert!(off
            .due([&a].into_iter(), start + Duration::from_secs(600))
            .is_empty());
        assert_eq!(off.next_due(), None);
    }

    #[test]
    fn the_line_names_who_waits_on_what() {
        assert_eq!(
            waits_line(&request("perm-a")),
            "coder waits for your decision on Bash: make test (request perm-a)"
        );
        assert_eq!(
            hook_message(&request("perm-a")),
            (
                "coder needs permission for Bash".to_string(),
                "worker_permission_prompt"
            )
        );
        assert_eq!(cut(&"x".repeat(200)).chars().count(), DETAIL_LIMIT + 1);
    }
}
