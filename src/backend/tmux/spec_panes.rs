//! A launch's panes found by what tmux keeps of their command: the spec file each one starts
//! from (`swarm pane-exec <spawn>/<member>.<nonce>.json`, in `pane_start_command`).
//!
//! When a batched tmux call fails part way, tmux has printed nothing for the panes it made
//! before the failing command, and their marks may or may not be on. The spec file's name is
//! on every one of them from the moment tmux made it, and no other pane has it: the nonce is
//! this launch's. So a failed launch kills exactly its own panes ([`kill_launch`]), and a call
//! that ran out of room in a window learns which of its panes exist ([`made_before_failure`]).

use tmux_interface::{KillPane, ListPanes};

use super::placement::NEW_PANE_FORMAT;
use super::server::Client;
use super::state::is_pane_id;
use crate::error::Result;

/// Every pane on the server as `NEW_PANE_FORMAT` fields plus its start command.
fn listing(client: &Client) -> Result<String> {
    client.run(vec![ListPanes::new()
        .all()
        .format(format!("{NEW_PANE_FORMAT}\t#{{pane_start_command}}"))
        .build()])
}

/// The pane id and the `NEW_PANE_FORMAT` part of a [`listing`] line whose command holds `tag`.
fn line_with<'l>(listing: &'l str, tag: &str) -> Option<(&'l str, String)> {
    listing.lines().find_map(|line| {
        let f: Vec<&str> = line.splitn(5, '\t').collect();
        let [id, window, socket, pid, command] = f[..] else {
            return None;
        };
        (is_pane_id(id) && command.contains(tag))
            .then(|| (id, format!("{id}\t{window}\t{socket}\t{pid}")))
    })
}

/// Of `tags` (one call's panes, in order), the panes tmux made before the call failed, as the
/// `NEW_PANE_FORMAT` lines it would have printed: tmux stops a call at its first failing
/// command, so they are the first few.
pub(super) fn made_before_failure(client: &Client, tags: &[&str]) -> Result<Vec<String>> {
    let listing = listing(client)?;
    Ok(tags
        .iter()
        .map_while(|tag| line_with(&listing, tag).map(|(_, line)| line))
        .collect())
}

/// Kills every pane on the client's server whose start command holds `nonce`: the panes of one
/// launch, marked or not. Best effort (this runs while another error is reported).
pub(super) fn kill_launch(client: &Client, nonce: &str) {
    let Ok(listing) = listing(client) else {
        return;
    };
    for line in listing.lines() {
        if let Some((pane, _)) = line_with(line, nonce) {
            let _ = client.run(vec![KillPane::new().target_pane(pane.to_string()).build()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::backend::tmux::server::TmuxServer;
    use crate::process::exec::testing::Recorder;

    #[test]
    fn the_panes_a_failed_call_made_are_the_first_ones_found_by_their_spec_file() {
        let rec = Arc::new(Recorder::default());
        let client = Client::new(rec.clone(), TmuxServer::Name("s".into()));
        let listing = "%0\t@0\t/t/s\t10\tsleep 600\n\
                       %4\t@1\t/t/s\t14\t/opt/swarm pane-exec /r/spawn/b.n1.json\n\
                       %3\t@1\t/t/s\t13\t/opt/swarm pane-exec /r/spawn/a.n1.json\n\
                       %9\t@1\t/t/s\t19\t/opt/swarm pane-exec /r/spawn/d.n1.json\n";
        rec.answer(listing);
        let made = made_before_failure(
            &client,
            &["/a.n1.json", "/b.n1.json", "/c.n1.json", "/d.n1.json"],
        )
        .unwrap();
        assert_eq!(
            made,
            ["%3\t@1\t/t/s\t13", "%4\t@1\t/t/s\t14"],
            "up to the first one missing"
        );
        rec.answer(listing);
        kill_launch(&client, ".n1.json");
        let killed: Vec<String> = rec.calls()[2..]
            .iter()
            .map(|c| c.last().unwrap().clone())
            .collect();
        assert_eq!(killed, ["%4", "%3", "%9"], "never the user's %0");
    }
}
