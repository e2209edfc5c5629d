//! The requests waiting for the person at the lead console, and how `y` / `n` answer them.
//!
//! A question is a `store::requests::Request`, shown and answered here, decided by
//! `requests::decide` like everywhere else. One question is current: it is the one shown in
//! full, and the prompt line under it names its id, so `y` and `n` answer exactly what the person
//! read. Questions that arrive meanwhile wait behind it with a one-line notice and are shown in
//! full when their turn comes. A request can also be decided elsewhere (`swarm permission
//! approve ID`, `swarm top`, the lead agent): before every pass and before every answer the
//! queue drops such requests, permission or plan, with a line saying who decided, so an answer
//! typed for one request never lands on another. What a permission question shows is the
//! pending record (what an approval would let run), not the message that announced it.

use std::collections::VecDeque;

use super::paint::shown;
use crate::error::{Error, Result};
use crate::output::terminal::visible;
use crate::store::names::TeamName;
use crate::store::paths::Store;
use crate::store::requests::{self, Decided, Decider, Request, Verdict};

/// The open questions, the current one first.
pub(super) struct Questions<'a> {
    store: &'a Store,
    team: &'a TeamName,
    /// Approve every request at once instead of asking.
    auto_approve: bool,
    open: VecDeque<Request>,
}

fn say(text: &str) {
    let _ = crate::output::line(shown(text));
}

impl<'a> Questions<'a> {
    pub(super) fn new(store: &'a Store, team: &'a TeamName, auto_approve: bool) -> Questions<'a> {
        Questions {
            store,
            team,
            auto_approve,
            open: VecDeque::new(),
        }
    }

    /// A request announced in the lead's inbox: asked, unless it is queued or decided already.
    pub(super) fn ask(&mut self, q: Request) -> Result<()> {
        if self.open.iter().any(|open| open.id() == q.id()) {
            return Ok(());
        }
        if let Some(decided) = requests::decided(self.store, self.team, &q)? {
            say(&decided_elsewhere(&decided));
            return Ok(());
        }
        if self.auto_approve {
            return self.answer(q, true, None);
        }
        self.open.push_back(q);
        if self.open.len() == 1 {
            self.show_current();
        } else if let (Some(current), Some(new)) = (self.open.front(), self.open.back()) {
            say(&format!(
                "  also waiting: {}; shown once {} is answered",
                brief(new),
                current.id()
            ));
            say(&prompt(current));
        }
        Ok(())
    }

    /// The open questions, the current one first.
    pub(super) fn waiting(&self) -> impl Iterator<Item = &Request> {
        self.open.iter()
    }

    fn show_current(&self) {
        if let Some(q) = self.open.front() {
            say(&full(q));
            say(&prompt(q));
        }
    }

    /// Drops the requests decided elsewhere, each with a line saying who decided; shows the
    /// next question if the current one went. Returns whether the current one went.
    pub(super) fn forget_decided(&mut self) -> Result<bool> {
        let mut current_went = false;
        let mut kept = VecDeque::new();
        for (i, q) in std::mem::take(&mut self.open).into_iter().enumerate() {
            match requests::decided(self.store, self.team, &q)? {
                Some(decided) => {
                    say(&format!(
                        "{}; it leaves the queue",
                        decided_elsewhere(&decided)
                    ));
                    current_went |= i == 0;
                }
                None => kept.push_back(q),
            }
        }
        self.open = kept;
        if current_went {
            self.show_current();
        }
        Ok(current_went)
    }

    /// `y` or `n [feedback]`: answers the current question, the one the prompt line named.
    pub(super) fn answer_current(&mut self, approve: bool, feedback: Option<String>) -> Result<()> {
        if self.open.is_empty() {
            return Err(Error::usage("no question is waiting for an answer"));
        }
        // Decided elsewhere since it was shown: this answer was meant for it, not the next one.
        if self.forget_decided()? {
            return Ok(());
        }
        let Some(q) = self.open.pop_front() else {
            return Ok(());
        };
        self.answer(q, approve, feedback)?;
        self.show_current();
        Ok(())
    }

    fn answer(&mut self, q: Request, approve: bool, feedback: Option<String>) -> Result<()> {
        let verdict = Verdict::new(approve, feedback);
        match requests::decide(self.store, self.team, &q, verdict, &Decider::Lead) {
            Ok(decided) => say(&decided.line()),
            // Someone decided from another shell first; theirs stands.
            Err(Error::AlreadyDecided { id, verdict, by }) => {
                say(&format!("{id} was {verdict} by {} elsewhere", visible(&by)))
            }
            Err(e @ (Error::NoSuchRequest(_) | Error::RequestChanged { .. })) => {
                say(&format!("! {e}"))
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

/// The whole question: who asks, for which tool, with which input (in full), or the whole plan.
fn full(q: &Request) -> String {
    match q {
        Request::Permission(r) => {
            let mut text = format!(
                "? {}: {} asks to use {} with {}",
                r.id,
                visible(&r.worker_name),
                visible(&r.tool_name),
                visible(&r.input.to_string())
            );
            if !r.description.is_empty() {
                text.push_str(&format!(
                    "\n{}'s description: {}",
                    visible(&r.worker_name),
                    visible(&r.description)
                ));
            }
            text
        }
        Request::Plan(r) => format!(
            "? {}: {} submitted a plan ({}):\n{}",
            visible(&r.id),
            visible(&r.worker_name),
            visible(&r.plan_file_path),
            r.plan_content
        ),
    }
}

/// One line for a question waiting behind the current one.
fn brief(q: &Request) -> String {
    match q {
        Request::Permission(r) => format!(
            "{} from {} ({})",
            r.id,
            visible(&r.worker_name),
            visible(&r.tool_name)
        ),
        Request::Plan(r) => format!("{} (a plan from {})", r.id, visible(&r.worker_name)),
    }
}

/// The line under the current question: which request `y` and `n` answer.
fn prompt(q: &Request) -> String {
    format!(
        "  answer y to approve {}, or n [feedback] to reject it",
        visible(q.id())
    )
}

/// `perm-… was approved by NAME elsewhere`.
fn decided_elsewhere(d: &Decided) -> String {
    format!(
        "{} was {} by {} elsewhere",
        d.request().id(),
        d.word(),
        visible(d.by())
    )
}
