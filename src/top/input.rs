//! What the keys do: the selection, the prompt line, and the action a key asks for.
//!
//! Keys only change this state or return an [`Action`]; carrying the action out (which writes
//! the store or runs `swarm attach`) is `actions.rs`'s, so this file is plain logic with unit
//! tests. An action on a member or request names it by name or id, not by row, so a redraw
//! that moves rows between the key and the action cannot aim it at someone else.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::model::Model;

pub(crate) const HELP: &str = "tab switch list  j/k move  a attach  m message  y approve  \
n deny  i interrupt  s shut down  r refresh  q quit";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Focus {
    #[default]
    Members,
    Requests,
}

/// A line being typed at the bottom of the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Prompt {
    Message { to: String, text: String },
    Deny { id: String, text: String },
    ConfirmShutdown { name: String },
}

impl Prompt {
    /// The prompt as shown, cursor at the end.
    pub(crate) fn line(&self) -> String {
        match self {
            Prompt::Message { to, text } => {
                format!("message to {to} (enter sends, esc cancels): {text}")
            }
            Prompt::Deny { id, text } => {
                format!("deny {id}; feedback (enter denies, esc cancels): {text}")
            }
            Prompt::ConfirmShutdown { name } => format!("shut {name} down? y/n"),
        }
    }
}

/// What the event loop should do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Only the screen changed (selection, prompt).
    Redraw,
    Quit,
    Refresh,
    Attach(String),
    Send {
        to: String,
        text: String,
    },
    Decide {
        id: String,
        approve: bool,
        feedback: Option<String>,
    },
    Shutdown(String),
    /// Stop the member's running turn, keep the member (`swarm interrupt`).
    Interrupt(String),
}

#[derive(Debug, Default)]
pub(crate) struct Ui {
    pub(crate) focus: Focus,
    pub(crate) member: usize,
    pub(crate) request: usize,
    pub(crate) prompt: Option<Prompt>,
    /// The outcome of the last action, until the next key.
    pub(crate) notice: Option<String>,
}

impl Ui {
    /// Keeps the selections on rows that exist.
    pub(crate) fn clamp(&mut self, model: &Model) {
        self.member = self.member.min(model.members.len().saturating_sub(1));
        self.request = self.request.min(model.requests.len().saturating_sub(1));
    }

    pub(crate) fn key(&mut self, key: KeyEvent, model: &Model) -> Action {
        if key.kind != KeyEventKind::Press {
            return Action::Redraw;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Action::Quit;
        }
        self.notice = None;
        if let Some(prompt) = self.prompt.take() {
            return self.prompt_key(prompt, key);
        }
        let member = model.members.get(self.member).map(|m| m.name.clone());
        let request = model.requests.get(self.request).map(|r| r.id().to_string());
        match key.code {
            KeyCode::Char('q') => Action::Quit,
            KeyCode::Char('r') => Action::Refresh,
            KeyCode::Tab | KeyCode::BackTab => {
                self.focus = match self.focus {
                    Focus::Members => Focus::Requests,
                    Focus::Requests => Focus::Members,
                };
                Action::Redraw
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.step(model, 1);
                Action::Redraw
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.step(model, -1);
                Action::Redraw
            }
            KeyCode::Enter | KeyCode::Char('a') if self.focus == Focus::Members => {
                member.map_or(Action::Redraw, Action::Attach)
            }
            KeyCode::Char('m') => {
                if let Some(to) = member {
                    self.prompt = Some(Prompt::Message {
                        to,
                        text: String::new(),
                    });
                }
                Action::Redraw
            }
            KeyCode::Char('i') => match member {
                Some(name) => Action::Interrupt(name),
                None => Action::Redraw,
            },
            KeyCode::Char('s') => {
                if let Some(name) = member {
                    self.prompt = Some(Prompt::ConfirmShutdown { name });
                }
                Action::Redraw
            }
            KeyCode::Char('y') => match request {
                Some(id) => Action::Decide {
                    id,
                    approve: true,
                    feedback: None,
                },
                None => self.say("no request is waiting"),
            },
            KeyCode::Char('n') => match request {
                Some(id) => {
                    self.prompt = Some(Prompt::Deny {
                        id,
                        text: String::new(),
                    });
                    Action::Redraw
                }
                None => self.say("no request is waiting"),
            },
            _ => Action::Redraw,
        }
    }

    fn say(&mut self, text: &str) -> Action {
        self.notice = Some(text.to_string());
        Action::Redraw
    }

    fn step(&mut self, model: &Model, by: isize) {
        let (at, len) = match self.focus {
            Focus::Members => (&mut self.member, model.members.len()),
            Focus::Requests => (&mut self.request, model.requests.len()),
        };
        if len > 0 {
            *at = (*at as isize + by).clamp(0, len as isize - 1) as usize;
        }
    }

    /// A key while a prompt is open; the prompt was taken out and is put back unless the key
    /// ends it.
    fn prompt_key(&mut self, mut prompt: Prompt, key: KeyEvent) -> Action {
        if let Prompt::ConfirmShutdown { name } = &prompt {
            return match key.code {
                KeyCode::Char('y') => Action::Shutdown(name.clone()),
                _ => self.say("shutdown cancelled"),
            };
        }
        let (Prompt::Message { text, .. } | Prompt::Deny { text, .. }) = &mut prompt else {
            return Action::Redraw;
        };
        match key.code {
            KeyCode::Esc => return Action::Redraw,
            KeyCode::Enter => {
                let typed = text.trim().to_string();
                return match prompt {
                    Prompt::Message { .. } if typed.is_empty() => self.say("nothing sent"),
                    Prompt::Message { to, .. } => Action::Send { to, text: typed },
                    Prompt::Deny { id, .. } => Action::Decide {
                        id,
                        approve: false,
                        feedback: (!typed.is_empty()).then_some(typed),
                    },
                    Prompt::ConfirmShutdown { .. } => Action::Redraw,
                };
            }
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Char(c) => text.push(c),
            _ => {}
        }
        self.prompt = Some(prompt);
        Action::Redraw
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::MemberState;
    use crate::top::model::{MemberRow, Progress};

    fn model(members: &[&str]) -> Model {
        Model {
            team: "t".parse().unwrap(),
            description: String::new(),
            members: members
                .iter()
                .map(|n| MemberRow {
                    name: n.to_string(),
                    host: None,
                    color: "blue".into(),
                    state: MemberState::Idle,
                    task: None,
                    last: None,
                    unread: 0,
                })
                .collect(),
            tasks: vec![],
            progress: Progress::default(),
            requests: vec![],
            memory: None,
            usage: String::new(),
        }
    }

    fn press(ui: &mut Ui, m: &Model, code: KeyCode) -> Action {
        ui.key(KeyEvent::new(code, KeyModifiers::NONE), m)
    }

    #[test]
    fn a_message_is_typed_then_sent_to_the_member_selected_when_it_began() {
        let m = model(&["team-lead", "coder", "tester"]);
        let mut ui = Ui::default();
        press(&mut ui, &m, KeyCode::Char('j'));
        press(&mut ui, &m, KeyCode::Char('m'));
        for c in "hi q".chars() {
            assert_eq!(
                press(&mut ui, &m, KeyCode::Char(c)),
                Action::Redraw,
                "typed, not a key"
            );
        }
        press(&mut ui, &m, KeyCode::Backspace);
        assert_eq!(
            press(&mut ui, &m, KeyCode::Enter),
            Action::Send {
                to: "coder".into(),
                text: "hi".into()
            }
        );
        assert_eq!(ui.prompt, None);
    }

    #[test]
    fn shutdown_asks_first_and_anything_but_y_cancels() {
        let m = model(&["coder"]);
        let mut ui = Ui::default();
        press(&mut ui, &m, KeyCode::Char('s'));
        assert_eq!(press(&mut ui, &m, KeyCode::Char('x')), Action::Redraw);
        assert_eq!(ui.notice.as_deref(), Some("shutdown cancelled"));
        press(&mut ui, &m, KeyCode::Char('s'));
        assert_eq!(
            press(&mut ui, &m, KeyCode::Char('y')),
            Action::Shutdown("coder".into())
        );
    }

    #[test]
    fn i_interrupts_the_selected_members_turn() {
        let m = model(&["coder", "tester"]);
        let mut ui = Ui::default();
        press(&mut ui, &m, KeyCode::Down);
        assert_eq!(
            press(&mut ui, &m, KeyCode::Char('i')),
            Action::Interrupt("tester".into())
        );
    }

    #[test]
    fn selection_stays_on_rows_that_exist() {
        let m = model(&["a", "b"]);
        let mut ui = Ui::default();
        for _ in 0..5 {
            press(&mut ui, &m, KeyCode::Down);
        }
        assert_eq!(ui.member, 1);
        ui.clamp(&model(&["a"]));
        assert_eq!(ui.member, 0);
        assert_eq!(press(&mut ui, &m, KeyCode::Char('y')), Action::Redraw);
        assert_eq!(ui.notice.as_deref(), Some("no request is waiting"));
    }
}
