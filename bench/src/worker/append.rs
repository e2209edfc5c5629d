//! `swarm-bench worker append`: one writer process of the contention and inbox-size benchmarks.
//! It appends messages from the lead in a loop, the way `--impl` says, and prints each sequence
//! number only once its append has returned, so what the driver counts as acknowledged is what
//! a sender was told was delivered.

use std::time::Instant;

use swarm::{claude_code, output, AgentName, Error, InboxMessage, Mailbox, Result};

use super::message_text;
use crate::baseline;
use crate::cli::{AppendArgs, Impl};
use crate::Target;

pub(super) fn run(target: &Target, args: &AppendArgs) -> Result<()> {
    let (store, team, to) = (&target.store, &target.team, &args.to);
    let mailbox = Mailbox::new(store, team);
    let inbox = store.inbox_path(team, to);
    let lead = AgentName::lead();
    for seq in 0..args.count {
        let message = InboxMessage::new(&lead, message_text(&args.writer, seq));
        let started = Instant::now();
        let delivered = match args.imp {
            Impl::Swarm => mailbox.send(to, message).map(|()| true)?,
            Impl::SwarmBaseline => baseline::send(store, team, to, message).map(|()| true)?,
            Impl::ClaudeCode => claude_code::append(&inbox, &message)
                .map_err(Error::io("append (Claude Code baseline) to", &inbox))?,
        };
        match (delivered, args.timings) {
            (false, _) => output::line(format!("fail {seq}"))?,
            (true, true) => output::line(format!("{seq} {}", started.elapsed().as_micros()))?,
            (true, false) => output::line(seq.to_string())?,
        }
    }
    Ok(())
}
