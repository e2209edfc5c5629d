//! What the person types at the lead console: `@name text`, `@* text`, `/status`, `/tasks`,
//! `/shutdown [name]`, `/interrupt name`, `/wake name`, `/help`, `/quit`, and `y` / `n [feedback]` for the
//! question on screen. A message to a teammate that is not running is delivered and the console
//! says so, naming `/wake`, which starts it again through `swarm up` (the binary run again: the
//! console does not launch).
//!
//! A typo is reported on the console and never ends it; only a failure of the store does.

use serde_json::Value;

use super::console::Console;
use crate::error::{Error, Result};
use crate::lifecycle;
use crate::output::terminal::visible;
use crate::store::mailbox::{InboxMessage, Mailbox};
use crate::store::roster::{Member, Roster};

const HELP: &str = "\
@name text  message a teammate     @* text   message everyone
/status     members and health      /tasks    the task list
/shutdown [name]  ask one or all teammates to stop
/interrupt name   stop its running turn, keep it (its task goes back to pending)
/wake name  start a stopped teammate again (it reads what waited)
y | n [feedback]  answer the question on screen (named in its prompt line)
/quit       leave the console (teammates keep running)";

impl Console<'_> {
    /// Runs one typed line; returns false when the console should stop.
    pub(super) fn command(&mut self, line: &str) -> Result<bool> {
        if line.is_empty() {
            return Ok(true);
        }
        match self.command_inner(line) {
            Ok(go_on) => Ok(go_on),
            // A typo at the console is reported, never fatal.
            Err(e) if e.exit_code() == 2 || e.is_not_found() => {
                self.say(&format!("! {e}"));
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    fn command_inner(&mut self, line: &str) -> Result<bool> {
        if let Some(rest) = line.strip_prefix('@') {
            self.send(rest)?;
            return Ok(true);
        }
        let (word, arg) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let arg = arg.trim();
        match word {
            "/status" => self.print_status()?,
            "/tasks" => self.print_tasks()?,
            "/shutdown" => self.request_shutdown(arg)?,
            "/interrupt" => self.interrupt(arg)?,
            "/wake" => self.wake(arg)?,
            "/quit" | "/exit" => return Ok(false),
            "/help" => HELP.lines().for_each(|l| self.say(l)),
            "y" | "yes" | "n" | "no" => {
                let feedback = (!arg.is_empty()).then(|| arg.to_string());
                self.questions
                    .answer_current(word.starts_with('y'), feedback)?;
            }
            _ => {
                return Err(Error::usage(format!(
                    "unknown command {word:?}; type /help (messages start with @name)"
                )))
            }
        }
        Ok(true)
    }

    /// `name text` or `* text`, the part after the `@`.
    fn send(&self, rest: &str) -> Result<()> {
        let (to, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if text.trim().is_empty() {
            return Err(Error::usage("write @name followed by the message"));
        }
        let mailbox = Mailbox::new(self.store, self.team);
        let message = InboxMessage::new(&self.lead, text.trim()).with_color(Some("red".into()));
        if to == "*" {
            let sent = mailbox.broadcast(message)?;
            self.say(&format!("sent to {} teammates", sent.len()));
        } else {
            let to = to.parse()?;
            mailbox.send(&to, message)?;
            let config = Roster::new(self.store, self.team).load()?;
            let stopped = config
                .member(to.as_str())
                .and_then(|m| lifecycle::stopped_teammate(self.store, self.team, m));
            if let Some(ended) = stopped {
                self.say(&format!(
                    "! {to} is not running ({ended}); the message waits in its inbox. /wake {to} starts it again"
                ));
            }
        }
        Ok(())
    }

    /// `/wake name`: `swarm up` for that one teammate, if it is not running.
    fn wake(&self, who: &str) -> Result<()> {
        let config = Roster::new(self.store, self.team).load()?;
        let member = config.member(who).ok_or_else(|| Error::NoSuchMember {
            team: self.team.to_string(),
            name: who.to_string(),
        })?;
        if lifecycle::stopped_teammate(self.store, self.team, member).is_none() {
            return Err(Error::usage(format!(
                "{who} is not known to be stopped; /status shows the members"
            )));
        }
        let mut up = std::process::Command::new(crate::process::swarm_exe()?);
        up.arg("--root")
            .arg(self.store.root())
            .args(["--team", self.team.as_str(), "up", "--no-lead-pane"])
            .arg("--teammate")
            .arg(format!("{}=", member.name));
        if let Some(backend) = member.backend_type.as_deref() {
            up.args(["--backend", backend]);
        }
        let out = up
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| Error::Backend(format!("failed to run swarm up for {who}: {e}")))?;
        for line in String::from_utf8_lossy(&out.stdout)
            .lines()
            .chain(String::from_utf8_lossy(&out.stderr).lines())
        {
            self.say(line);
        }
        Ok(())
    }

    fn print_status(&self) -> Result<()> {
        let config = Roster::new(self.store, self.team).load()?;
        let tasks = self.tasks()?;
        for m in config.teammates() {
            let state = lifecycle::member_state(self.store, self.team, &config, m, &tasks);
            let current = lifecycle::current_task(&tasks, m.name.as_str())
                .map(|t| format!("#{} {}", t.id, t.subject))
                .unwrap_or_else(|| "-".into());
            let unread = Mailbox::new(self.store, self.team)
                .read(&m.name, true)?
                .len();
            let pad = 20usize.saturating_sub(visible(m.name.as_str()).chars().count());
            self.say_from(
                m.name.as_str(),
                m.color_or_default(),
                &format!(
                    "{:pad$} {:<18} unread {:<3} {current}",
                    "",
                    state.to_string(),
                    unread
                ),
            );
        }
        Ok(())
    }

    fn print_tasks(&self) -> Result<()> {
        let tasks = self.tasks()?;
        if tasks.is_empty() {
            self.say("no tasks");
        }
        for t in tasks {
            let owner = t.owner.map(|o| format!(" @{o}")).unwrap_or_default();
            let failed = if t.metadata.get("swarmFailed") == Some(&Value::Bool(true)) {
                " FAILED"
            } else {
                ""
            };
            self.say(&format!(
                "#{:<4} {:<11} {}{owner}{failed}",
                t.id,
                t.status.as_str(),
                t.subject
            ));
        }
        Ok(())
    }

    /// Sends the interrupt request and goes on: the teammate's answer (an idle notification)
    /// is printed when it comes, like any other.
    fn interrupt(&self, who: &str) -> Result<()> {
        if who.is_empty() {
            return Err(Error::usage("write /interrupt NAME"));
        }
        let member = Roster::new(self.store, self.team).require_member(who)?;
        let opts = lifecycle::InterruptOptions::default();
        let sent = lifecycle::interrupt(self.store, self.team, &member, &opts)?;
        self.say(&format!(
            "asked {} to interrupt its turn ({})",
            member.name, sent.request_id
        ));
        Ok(())
    }

    fn request_shutdown(&self, who: &str) -> Result<()> {
        let config = Roster::new(self.store, self.team).load()?;
        let targets: Vec<&Member> = if who.is_empty() {
            config.teammates().filter(|m| !m.retired()).collect()
        } else {
            vec![config.member(who).ok_or_else(|| Error::NoSuchMember {
                team: self.team.to_string(),
                name: who.to_string(),
            })?]
        };
        for m in targets {
            lifecycle::send_shutdown_request(self.store, self.team, &m.name, None, None)?;
            self.say(&format!("asked {} to shut down", m.name));
        }
        Ok(())
    }
}
