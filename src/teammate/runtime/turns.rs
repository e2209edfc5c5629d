//! Choosing and starting turns, and handing their messages over.
//!
//! One turn runs at a time. Plan mode comes first (a planning turn, then the turn that carries
//! the approved plan out), then ordinary messages, then a task. A turn's messages are marked
//! delivered, by `msg_id`, once the agent has them (its process started, or the reply was
//! made), so a message that arrives meanwhile waits for the next turn instead of being lost,
//! and a message whose agent never started (a missing program, a failed exec) stays unread.

use std::time::Instant;

use super::{Current, Event, Runtime};
use crate::error::Result;
use crate::store::mailbox::InboxMessage;
use crate::store::roster::Roster;
use crate::store::shutdown_ask::{turn_token, TURN_TOKEN_VAR};
use crate::store::watcher::rescan_interval;
use crate::teammate::guide;
use crate::teammate::plan::PlanState;
use crate::teammate::process::TurnHandle;
use crate::teammate::turn::{Turn, TurnKind};
use crate::teammate::work::{Outcome, Work};

impl Runtime {
    /// Starts the next turn if there is one; `fresh` are the ordinary messages this wake's read
    /// of the inbox found. `true` if it already finished (no process ran), so the caller should
    /// look again before sleeping.
    pub(super) fn next_turn(&mut self, fresh: Vec<InboxMessage>) -> Result<bool> {
        if self.out_of_turns()? {
            return Ok(false);
        }
        match self.plan.clone() {
            PlanState::NotRequired | PlanState::Done => {}
            PlanState::Pending { .. } => return Ok(false),
            PlanState::Needed {
                previous,
                feedback,
                stalled,
            } => {
                if fresh.is_empty() && (stalled || self.plan_context.is_empty()) {
                    return Ok(false);
                }
                self.plan_context.extend(fresh.iter().cloned());
                let kind = TurnKind::Plan { previous, feedback };
                return self.start(kind, self.plan_context.clone(), &fresh);
            }
            PlanState::Approved { plan, feedback } => {
                self.plan_context.extend(fresh.iter().cloned());
                let messages = std::mem::take(&mut self.plan_context);
                return self.start(TurnKind::Execute { plan, feedback }, messages, &fresh);
            }
        }
        if let Some(kind) = self.feedback.take() {
            return self.start(kind, vec![], &[]);
        }
        let waiting = self.retry_messages_at.is_some_and(|at| Instant::now() < at);
        if !fresh.is_empty() && !waiting {
            return self.start(TurnKind::Messages, fresh.clone(), &fresh);
        }
        if let Some(task) = self.take_task()? {
            return self.start(TurnKind::Task(Box::new(task)), vec![], &[]);
        }
        Ok(false)
    }

    /// Starts a turn over `messages`; `deliver` are the inbox messages it hands over, marked
    /// delivered once the agent has them.
    fn start(
        &mut self,
        kind: TurnKind,
        messages: Vec<InboxMessage>,
        deliver: &[InboxMessage],
    ) -> Result<bool> {
        let first = self.turns == 0;
        let guide = match first {
            true => Some(self.first_turn_guide(&kind, &messages)?),
            false => None,
        };
        let memory = self.memory_note(first);
        let appendix = match (guide, memory) {
            (Some(guide), Some(memory)) => Some(format!("{guide}\n\n{memory}")),
            (guide, memory) => guide.or(memory),
        };
        let turn = Turn {
            kind,
            messages,
            appendix,
        };
        match &turn.kind {
            TurnKind::Task(t) => self
                .pane
                .say(format!("▶ claimed task #{}: {}", t.id, t.subject)),
            _ => self.pane.say(format!("▶ turn: {}", turn.describe())),
        }
        // A refusal of a shutdown counts for the turn that wrote it, never a later one.
        self.shutdown_ask().clear_refusal();
        // Remembered before anything acts on them: a runtime that dies mid-turn (or whose disk
        // is full, so the inbox cannot be marked) is never made to act on them again by a
        // restart; one that cannot write this yet starts nothing and tries again.
        self.acted.record(
            deliver
                .iter()
                .map(|m| m.key())
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )?;
        let work = self.cfg.agent.work(&turn, self.session.as_ref());
        let started = Instant::now();
        match work {
            Work::Reply { text, success } => {
                self.deliver(deliver)?;
                self.pane.say(&text);
                let failure = (!success).then(|| text.clone());
                let outcome = Outcome {
                    success,
                    output: text,
                    stderr: String::new(),
                    failure,
                };
                self.complete(turn, started, outcome)?;
                Ok(true)
            }
            Work::Run { steps, preface } => {
                let (tx, handed) = (self.tx.clone(), self.tx.clone());
                let token = turn_token()?;
                let mut launch = self.launch.clone();
                launch
                    .env
                    .push((TURN_TOKEN_VAR.into(), token.clone().into()));
                let handle = TurnHandle::start(
                    steps,
                    preface,
                    launch,
                    self.pane.clone(),
                    move || {
                        let _ = handed.send(Event::HandedOver);
                    },
                    move |outcome| {
                        let _ = tx.send(Event::TurnDone(outcome));
                    },
                );
                self.current = Some(Current {
                    turn,
                    handle,
                    started,
                    undelivered: deliver.to_vec(),
                    token,
                });
                Ok(false)
            }
        }
    }

    /// The guide to the team (and the worktree notice) of the first turn (`teammate::guide`).
    fn first_turn_guide(&self, kind: &TurnKind, messages: &[InboxMessage]) -> Result<String> {
        let roster = Roster::new(&self.cfg.store, &self.cfg.team).load()?;
        let mut texts: Vec<&str> = messages.iter().map(|m| m.text.as_str()).collect();
        if let TurnKind::Task(task) = kind {
            texts.extend([task.subject.as_str(), task.description.as_str()]);
        }
        let (name, team) = (self.cfg.name.as_str(), self.cfg.team.as_str());
        Ok(guide::first_turn(
            name,
            team,
            &roster,
            &self.cfg.cwd,
            &texts,
        ))
    }

    /// Marks the turn's messages delivered (remembered as acted on since the turn started, so
    /// a copy put back unread is never run again).
    fn deliver(&mut self, messages: &[InboxMessage]) -> Result<()> {
        let keys: Vec<String> = messages.iter().map(InboxMessage::key).collect();
        let mut inbox = self.inbox.take();
        self.mailbox()
            .mark_delivered_in(&self.cfg.name, &keys, &mut inbox)?;
        self.inbox = inbox;
        for k in &keys {
            self.announced.remove(k);
        }
        Ok(())
    }

    /// The running turn's agent has started with its prompt: mark its messages delivered.
    pub(super) fn handed_over(&mut self) -> Result<()> {
        let messages = match self.current.as_mut() {
            Some(current) => std::mem::take(&mut current.undelivered),
            None => return Ok(()),
        };
        if let Some(session) = self.session.as_mut() {
            session.handed_over(&self.cfg.store, &self.cfg.team, &self.cfg.name)?;
        }
        self.retry_messages_at = None;
        self.deliver(&messages)
    }

    pub(super) fn finish_turn(&mut self, outcome: Outcome) -> Result<()> {
        let Some(current) = self.current.take() else {
            return Ok(());
        };
        // A CLI that names its own conversation said which one (codex): the next turn resumes it.
        if let (Some(session), Some(adapter)) = (self.session.as_mut(), self.cfg.agent.adapter()) {
            let (store, team, name) = (&self.cfg.store, &self.cfg.team, &self.cfg.name);
            session.after_turn(adapter, &outcome.output, &outcome.stderr, store, team, name)?;
        }
        if !current.undelivered.is_empty() {
            // The agent never started: the messages stay unread for a later turn, which acts
            // on them for the first time.
            let keys: Vec<String> = current.undelivered.iter().map(InboxMessage::key).collect();
            self.acted.forget(&keys)?;
            self.pane.say(format!(
                "the agent never got {} message(s); they stay unread and are tried again in {} s",
                current.undelivered.len(),
                rescan_interval().as_secs_f32()
            ));
            self.retry_messages_at = Some(Instant::now() + rescan_interval());
        }
        self.complete(current.turn, current.started, outcome)?;
        self.turn_refusal_over(&current.token)
    }
}
