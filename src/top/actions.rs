//! Carrying out what a key asked for, through the code the rest of swarm uses for it: a
//! message through the mailbox as the lead (so it is signed as every lead entry is), a decision
//! through `store::requests::decide`, a shutdown through `lifecycle::shutdown` (the one
//! handshake), and attaching through `swarm attach` itself.
//!
//! Each returns the line to show under the dashboard; nothing a person does here ends the
//! dashboard with an error. Acting as the lead needs the lead's authority (`store::authority`: the
//! team's lead key): from a process that cannot use it the dashboard only watches, and says so.

use std::process::Stdio;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::model::Model;
use super::screen::Screen;
use crate::backend::tmux::TmuxEnv;
use crate::backend::{for_member, BackendKind};
use crate::error::{Error, Result};
use crate::lifecycle::{self, ShutdownOptions, ShutdownResult};
use crate::store::colour::LEAD_COLOR;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::requests::{self, Decider, Verdict};
use crate::store::roster::Roster;

/// How long a shutdown started from the dashboard waits for the teammate's answer.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(30);

pub(crate) struct Actor<'a> {
    pub(crate) store: &'a Store,
    pub(crate) team: &'a TeamName,
    /// Where a shutdown running in the background reports how it ended.
    pub(crate) finished: UnboundedSender<String>,
}

impl Actor<'_> {
    /// Refuses lead-only work to a teammate's shell.
    fn as_lead(&self, what: &str) -> Result<()> {
        crate::store::authority::require_lead(self.store, self.team, what)
    }

    pub(crate) fn send(&self, to: &str, text: &str) -> String {
        outcome((|| {
            self.as_lead("send as the lead")?;
            let to: AgentName = to.parse()?;
            let message =
                InboxMessage::new(&AgentName::lead(), text).with_color(Some(LEAD_COLOR.into()));
            Mailbox::new(self.store, self.team).send(&to, message)?;
            Ok(format!("sent to {to}"))
        })())
    }

    pub(crate) fn decide(
        &self,
        model: &Model,
        id: &str,
        approve: bool,
        feedback: Option<String>,
    ) -> String {
        outcome((|| {
            self.as_lead("decide requests")?;
            let request = model
                .requests
                .iter()
                .find(|r| r.id() == id)
                .ok_or_else(|| Error::NoSuchRequest(id.to_string()))?;
            let verdict = Verdict::new(approve, feedback);
            let decided =
                requests::decide(self.store, self.team, request, verdict, &Decider::Lead)?;
            Ok(decided.line())
        })())
    }

    /// Starts the shutdown handshake with `name` on a thread of its own (it waits up to
    /// [`SHUTDOWN_WAIT`] for the answer); its outcome arrives on `finished`.
    pub(crate) fn shutdown(&self, name: &str) -> String {
        outcome((|| {
            self.as_lead("shut teammates down")?;
            let who: AgentName = name.parse()?;
            Roster::new(self.store, self.team).require_member(who.as_str())?;
            let (store, team, finished) =
                (self.store.clone(), self.team.clone(), self.finished.clone());
            let opts = ShutdownOptions {
                timeout: SHUTDOWN_WAIT,
                ..ShutdownOptions::default()
            };
            std::thread::spawn(move || {
                let line =
                    match lifecycle::shutdown(&store, &team, std::slice::from_ref(&who), &opts) {
                        Ok(outcomes) => outcomes
                            .iter()
                            .map(|o| {
                                let how = match &o.outcome {
                                    ShutdownResult::Approved => "approved the shutdown".into(),
                                    ShutdownResult::Rejected { reason } => {
                                        format!("rejected the shutdown ({reason})")
                                    }
                                    ShutdownResult::TimedOut => "did not answer".into(),
                                    ShutdownResult::Exited => "exited before answering".into(),
                                    ShutdownResult::NotRunning => "was not running".into(),
                                    ShutdownResult::NotAsked => {
                                        "not asked (swarm cannot speak as this team's lead)".into()
                                    }
                                };
                                let stopped = if o.killed { "; stopped" } else { "" };
                                format!("{}: {how}{stopped}", o.name)
                            })
                            .collect::<Vec<_>>()
                            .join("; "),
                        Err(e) => format!("! shutting {who} down failed: {e}"),
                    };
                let _ = finished.send(line);
            });
            Ok(format!(
                "asked {name} to shut down; waiting up to {} s for its answer",
                SHUTDOWN_WAIT.as_secs()
            ))
        })())
    }

    /// Sends `name` an interrupt request (`swarm interrupt`); its answer shows in the feed
    /// like any idle notification.
    pub(crate) fn interrupt(&self, name: &str) -> String {
        outcome((|| {
            self.as_lead("interrupt a teammate's turn")?;
            let member = Roster::new(self.store, self.team).require_member(name)?;
            let opts = lifecycle::InterruptOptions::default();
            let sent = lifecycle::interrupt(self.store, self.team, &member, &opts)?;
            Ok(format!(
                "asked {name} to interrupt its turn ({}); its task goes back to pending",
                sent.request_id
            ))
        })())
    }

    /// Runs `swarm attach NAME` on the real screen and comes back when it ends (a tmux client
    /// detached, a log follow interrupted). Inside tmux that is a quick `switch-client`.
    pub(crate) fn attach(&self, screen: &mut Screen, name: &str) -> String {
        outcome((|| {
            let who: AgentName = name.parse()?;
            let member = Roster::new(self.store, self.team).require_member(who.as_str())?;
            let exe = crate::process::swarm_exe()?;
            let mut cmd = std::process::Command::new(exe);
            cmd.arg("--root").arg(self.store.root()).args([
                "--team",
                self.team.as_str(),
                "attach",
                who.as_str(),
            ]);
            let switches = TmuxEnv::from_process().inside()
                && for_member(self.store, self.team, &member).map(|b| b.kind())
                    == Some(BackendKind::Tmux);
            if switches {
                // `switch-client` needs no terminal; the dashboard stays on screen.
                let out = cmd
                    .stdin(Stdio::null())
                    .output()
                    .map_err(Error::io("run", "swarm attach"))?;
                return match out.status.success() {
                    true => Ok(format!("switched to {who}'s pane")),
                    false => Err(Error::Backend(
                        String::from_utf8_lossy(&out.stderr).trim().to_string(),
                    )),
                };
            }
            // Its error, if any, is kept for the notice line: the screen it was printed on
            // is gone once the dashboard is back.
            let out = screen
                .suspend(|| {
                    cmd.stdin(Stdio::inherit())
                        .stdout(Stdio::inherit())
                        .stderr(Stdio::piped())
                        .output()
                })?
                .map_err(Error::io("run", "swarm attach"))?;
            // Ended by Ctrl-C (a log follow) is the usual way back, and says nothing.
            let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
            match out.status.success() || said.is_empty() {
                true => Ok(format!("back from {who}")),
                false => Err(Error::Backend(said)),
            }
        })())
    }
}

fn outcome(result: Result<String>) -> String {
    match result {
        Ok(line) => line,
        Err(e) => format!("! {e}"),
    }
}
