//! A tmux pane's state, read from `list-panes -a`.
//!
//! `remain-on-exit on` keeps a finished teammate's pane with its exit status, so a pane is
//! alive (with its pid), dead (with its status or signal), or gone; no server at all means every
//! pane is gone.

use tmux_interface::ListPanes;

use super::server::{server_missing, Client};
use crate::backend::pane::{PaneId, PaneState};
use crate::error::{Error, Result};

const LIST_FORMAT: &str =
    "#{pane_id}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{pane_pid}";

/// The state of `pane` on the client's server.
pub(super) fn pane_state(client: &Client, pane: &PaneId) -> Result<PaneState> {
    let out = match client.run(vec![ListPanes::new().format(LIST_FORMAT).all().build()]) {
        Ok(out) => out,
        Err(Error::Command { detail, .. }) if server_missing(&detail) => {
            return Ok(PaneState::Gone)
        }
        Err(e) => return Err(e),
    };
    Ok(out
        .lines()
        .filter_map(parse_list_line)
        .find(|(id, _)| *id == pane.as_str())
        .map_or(PaneState::Gone, |(_, state)| state))
}

fn parse_list_line(line: &str) -> Option<(&str, PaneState)> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() < 5 || !f[0].starts_with('%') {
        return None;
    }
    let state = if f[1] == "1" {
        PaneState::Dead {
            code: f[2].parse().ok(),
            signal: f[3].parse().ok(),
        }
    } else {
        PaneState::Alive {
            pid: f[4].parse().ok(),
        }
    };
    Some((f[0], state))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::backend::tmux::server::TmuxServer;
    use crate::process::exec::testing::Recorder;

    #[test]
    fn pane_states_come_from_list_panes() {
        let rec = Arc::new(Recorder::default());
        let client = Client::new(rec.clone(), TmuxServer::Name("sock".into()));
        let listing = "%1\t0\t\t\t123\n%2\t1\t3\t\t0\n%4\t1\t\t9\t0\n";
        let expect = [
            ("%1", PaneState::Alive { pid: Some(123) }),
            (
                "%2",
                PaneState::Dead {
                    code: Some(3),
                    signal: None,
                },
            ),
            (
                "%4",
                PaneState::Dead {
                    code: None,
                    signal: Some(9),
                },
            ),
            ("%9", PaneState::Gone),
        ];
        for (pane, state) in expect {
            rec.answer(listing);
            assert_eq!(pane_state(&client, &PaneId(pane.into())).unwrap(), state);
        }
        assert_eq!(
            rec.calls()[0],
            ["tmux", "-L", "sock", "lsp", "-a", "-F", LIST_FORMAT]
        );
        rec.fail("no server running on /tmp/tmux-0/sock");
        assert_eq!(
            pane_state(&client, &PaneId("%1".into())).unwrap(),
            PaneState::Gone
        );
    }
}
