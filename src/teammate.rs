//! The teammate runtime: the process inside each pane that gives any agent CLI the team
//! protocol a real `claude` teammate speaks by itself.
//!
//! It holds the member's liveness lock for its whole life and sleeps until the inbox or the task
//! list changes. Protocol messages are handled by the runtime itself: shutdown, plan approval,
//! permission answers, task assignments. Ordinary messages go to the agent as one turn and are
//! marked delivered, by `msg_id`, once handed over; messages that arrive during a turn wait for
//! the next. When there is nothing to answer the runtime claims the next available task and
//! runs it as a turn. Before a task is marked completed and before the teammate goes idle, the
//! team hooks from Claude Code's settings run (`hooks`); one that exits 2 makes its feedback the
//! next turn. After every turn the lead gets an `idle_notification`.
//!
//! `runtime` owns the state and the event loop; `agent` and `shell_agent` turn a `turn` into
//! `work`, `process` runs it in a process group of its own, `session` keeps one conversation for
//! CLIs that can resume one, `pane` prints, `guide` is what the first turn is told, `plan` tracks plan mode and `config` is what
//! `swarm teammate` validated. The lead agent's runtime (`lead::agent`) reuses `agent`,
//! `process`, `session` and `pane`.

pub(crate) mod agent;
pub(crate) mod args;
pub(crate) mod config;
pub(crate) mod guide;
pub(crate) mod hooks;
pub(crate) mod pane;
pub(crate) mod peers;
mod plan;
pub(crate) mod process;
mod runtime;
pub(crate) mod session;
mod shell_agent;
pub(crate) mod trust;
pub(crate) mod turn;
pub(crate) mod work;

pub(crate) use agent::Agent;
pub(crate) use config::Config;
pub(crate) use runtime::run;
