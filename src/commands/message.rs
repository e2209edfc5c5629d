//! `swarm send` and `swarm inbox`: the command-line ends of the mailbox.
//!
//! They let a person or a script talk to a team the way teammates do, by writing to and reading
//! from inbox files; `inbox --follow` keeps printing as messages arrive, and `--mark-read` marks
//! only what was printed, by `msg_id`. `send` refuses lifecycle frames as text (idle, task
//! completed, teammate terminated), as Claude Code's SendMessage does: only the process that
//! lived through the event reports it.

use std::collections::HashSet;
use std::io::Read;

use serde_json::json;

use super::Context;
use crate::commands::cli::{InboxArgs, Recipient, SendArgs};
use crate::error::{Error, Result};
use crate::lifecycle;
use crate::output;
use crate::output::terminal::{visible, visible_lines};
use crate::store::mailbox::{InboxMessage, Mailbox, MAX_MESSAGE_BYTES};
use crate::store::names::AgentName;
use crate::store::protocol::{lifecycle_frame, Payload};
use crate::store::roster::Roster;
use crate::store::watcher::DirWatcher;

pub(crate) fn send(ctx: &Context, args: SendArgs) -> Result<()> {
    let team = ctx.team()?;
    let from = args.from;
    super::identity::check_acting_as(from.as_str(), "--from")?;
    let text = if args.text == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .take(MAX_MESSAGE_BYTES as u64 + 1)
            .read_to_end(&mut buf)
            .map_err(Error::io("read", "standard input"))?;
        String::from_utf8(buf)
            .map_err(|_| Error::usage("the message on standard input is not UTF-8 text"))?
    } else {
        args.text
    };
    if text.trim().is_empty() {
        return Err(Error::usage("the message is empty; say something"));
    }
    if let Some(frame) = lifecycle_frame(&text) {
        return Err(Error::usage(format!(
            "refusing to send a {frame} frame as message text: message text must not be a \
             teammate lifecycle frame (idle_notification, task_completed, teammate_terminated), \
             which only swarm's runtime sends, for what it lived through; send plain text \
             instead"
        )));
    }
    // The roster is read once: it says the team exists, who the sender is and that the
    // recipient is a member (a cold `swarm send` is mostly start-up; see BENCHMARKS.md).
    let config = Roster::new(&ctx.store, &team).load()?;
    let member = |name: &str| {
        config.member(name).ok_or_else(|| Error::NoSuchMember {
            team: team.to_string(),
            name: name.to_string(),
        })
    };
    let sender = member(from.as_str())?;
    let mut message = InboxMessage::new(&from, text)
        .with_summary(args.summary)
        .with_color(Some(sender.color_or_default().to_string()));
    if let Some(id) = &args.id {
        message.msg_id = Some(id.to_string());
    }
    // The id to send again with: a broadcast without --id is known by its words instead.
    let id = match args.to {
        Recipient::Everyone => args.id.as_ref().map(ToString::to_string),
        Recipient::Agent(_) => message.msg_id.clone(),
    };
    // What a teammate tells other teammates reaches the lead as its next idle notification's
    // summary (`teammate::peers`): noted before the message moves into the inbox.
    let noted = (!from.is_lead()).then(|| message.clone());
    let mailbox = Mailbox::new(&ctx.store, &team);
    if args.wake {
        crate::store::authority::require_lead(&ctx.store, &team, "wake teammates")?;
    }
    let recipients: Vec<AgentName> = match (args.to, args.id.is_some()) {
        (Recipient::Everyone, false) => mailbox.broadcast(message)?,
        (Recipient::Everyone, true) => mailbox.broadcast_once(message)?,
        (Recipient::Agent(to), chosen) => {
            let member = member(to.as_str())?;
            match chosen {
                true => mailbox.send_once_to(member, message)?,
                false => mailbox.send_to(member, message)?,
            }
            vec![to]
        }
    };
    if let Some(message) = &noted {
        let peers: Vec<AgentName> = recipients
            .iter()
            .filter(|r| !r.is_lead())
            .cloned()
            .collect();
        if !peers.is_empty() {
            // A hint for the lead: a note that cannot be written loses nothing that was sent.
            let _ = crate::teammate::peers::note_sent(&ctx.store, &team, &from, &peers, message);
        }
    }
    for to in &recipients {
        let member = config.member(to.as_str()).expect("a recipient is a member");
        if let Some(stopped) = lifecycle::stopped_teammate(&ctx.store, &team, member) {
            if args.wake {
                eprintln!("swarm: {to} is not running ({stopped}); starting it again");
                super::up::start_again(ctx, member)?;
            } else {
                eprintln!(
                    "swarm: {to} is not running ({stopped}); the message waits in its inbox; \
                     `swarm send --wake` or `swarm up` starts it"
                );
            }
        }
    }
    let to: Vec<&str> = recipients.iter().map(AgentName::as_str).collect();
    if ctx.json {
        output::json(&json!({
            "team": team.as_str(),
            "from": from.as_str(),
            "to": to,
            "msgId": id,
        }))
    } else {
        output::line(format!(
            "sent to {}{}",
            if to.is_empty() {
                "nobody (no other members)".into()
            } else {
                to.join(", ")
            },
            id.map(|id| format!(" (id {id})")).unwrap_or_default()
        ))
    }
}

pub(crate) fn inbox(ctx: &Context, args: InboxArgs) -> Result<()> {
    let team = ctx.existing_team()?;
    let who = args.name;
    if args.mark_read {
        super::identity::check_acting_as(who.as_str(), "inbox --mark-read for")?;
    }
    Roster::new(&ctx.store, &team).require_member(who.as_str())?;
    let mailbox = Mailbox::new(&ctx.store, &team);
    // Watched before the first read: a message that lands between the two is in the read or
    // wakes the wait. Watched after it, such a message waited for the slow re-scan (with the
    // re-scan out of reach, for ever: a test flaked so under load).
    let watcher = match args.follow {
        true => Some(DirWatcher::new(&ctx.store.inboxes_dir(&team))?),
        false => None,
    };
    let messages = if args.all {
        mailbox.history(&who)?
    } else {
        mailbox.read(&who, args.unread)?
    };
    if ctx.json && !args.follow {
        output::json(&messages)?;
    } else {
        for m in &messages {
            print_message(ctx.json, m)?;
        }
    }
    if args.mark_read {
        let keys: Vec<String> = messages
            .iter()
            .filter(|m| !m.read)
            .map(InboxMessage::key)
            .collect();
        mailbox.mark_delivered(&who, &keys)?;
    }
    let Some(watcher) = watcher else {
        if messages.is_empty() && !ctx.json {
            eprintln!(
                "(no {}messages for {who})",
                if args.unread { "unread " } else { "" }
            );
        }
        return Ok(());
    };
    let mut seen: HashSet<String> = messages.iter().map(InboxMessage::key).collect();
    loop {
        watcher.wait(None);
        let fresh: Vec<InboxMessage> = mailbox
            .read(&who, args.unread)?
            .into_iter()
            .filter(|m| !seen.contains(&m.key()))
            .collect();
        for m in &fresh {
            seen.insert(m.key());
            print_message(ctx.json, m)?;
        }
        if args.mark_read {
            let keys: Vec<String> = fresh.iter().map(InboxMessage::key).collect();
            mailbox.mark_delivered(&who, &keys)?;
        }
    }
}

fn print_message(json: bool, m: &InboxMessage) -> Result<()> {
    if json {
        return output::json_line(m);
    }
    let mark = if m.read { " " } else { "*" };
    let body = match m.payload() {
        Payload::Protocol(p) => format!(
            "[{}] {}",
            p.type_name(),
            p.describe().unwrap_or_else(|| m.text.clone())
        ),
        Payload::Text(t) => t,
    };
    // Everything here came from a file any member can write: make control characters visible.
    let summary = m
        .summary
        .as_deref()
        .map(|s| format!(" ({})", visible(s)))
        .unwrap_or_default();
    output::line(format!(
        "{mark} {} {}{summary}: {}",
        visible(&m.timestamp),
        visible(m.from.as_str()),
        visible_lines(&body)
    ))
}
