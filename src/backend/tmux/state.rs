//! A tmux pane's state, read together with the marks that say whose it is.
//!
//! `remain-on-exit on` keeps a finished teammate's pane with its exit status, so a pane is
//! alive (with its pid), dead (with its status or signal), or gone. Gone also covers no server
//! at all, an id that is not a pane id (`%N`), and a pane whose `@swarm-*` marks name another
//! root, team or member (see owner.rs): one tmux call reads the marks and the state.
//!
//! tmux can show a pane dead and never learn its exit status: built with libutempter (as
//! Debian's is), it swaps in utempter's own SIGCHLD handler while it closes a dead pane's
//! terminal, and the pane process's exit that lands meanwhile is never reaped until another
//! child of the server exits (tmux issue 311). On a busy machine, one of ten launches of twelve
//! contained agents that all exit at once left two such panes. So a pane read dead with
//! neither status nor signal is read once more after a `run-shell true`, whose job's exit makes
//! the server reap every child that has exited.

use tmux_interface::{ListPanes, RunShell};

use super::owner::PaneOwner;
use super::server::{server_missing, Client};
use crate::backend::pane::{PaneId, PaneState};
use crate::error::{Error, Result};

const LIST_FORMAT: &str =
    "#{pane_id}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{pane_pid}";

/// `%` and digits: what tmux prints for a pane, and the only target swarm addresses a pane by
/// (a name or `=` target could match something else).
pub(super) fn is_pane_id(id: &str) -> bool {
    id.strip_prefix('%')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The state of `pane` on the client's server if it is `member`'s of `owner`, else Gone.
pub(super) fn owned_pane_state(
    client: &Client,
    pane: &PaneId,
    owner: &PaneOwner,
    member: &str,
) -> Result<PaneState> {
    let id = pane.as_str();
    if !is_pane_id(id) {
        return Ok(PaneState::Gone);
    }
    match read_owned(client, id, owner, member, false)? {
        PaneState::Dead {
            code: None,
            signal: None,
        } => read_owned(client, id, owner, member, true),
        state => Ok(state),
    }
}

/// One read of the marks and the state of pane `id`, after a `run-shell true` when `reap`.
fn read_owned(
    client: &Client,
    id: &str,
    owner: &PaneOwner,
    member: &str,
    reap: bool,
) -> Result<PaneState> {
    let mut cmds = Vec::new();
    if reap {
        cmds.push(RunShell::new().shell_command("true").build());
    }
    cmds.extend(PaneOwner::read_marks(id));
    cmds.push(ListPanes::new().format(LIST_FORMAT).target(id).build());
    let out = match client.run(cmds) {
        Ok(out) => out,
        Err(Error::Command { detail, .. }) if server_missing(&detail) || pane_missing(&detail) => {
            return Ok(PaneState::Gone)
        }
        Err(e) => return Err(e),
    };
    let Some(listing) = out.strip_prefix(&owner.expected(member)) else {
        return Ok(PaneState::Gone);
    };
    Ok(listing
        .lines()
        .filter_map(parse_list_line)
        .find(|(found, _)| *found == id)
        .map_or(PaneState::Gone, |(_, state)| state))
}

fn pane_missing(stderr: &str) -> bool {
    stderr.contains("can't find pane") || stderr.contains("no such pane")
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

    /// A recorder standing in for tmux, a client of server `sock` on it, and team t's owner.
    fn fixture() -> (Arc<Recorder>, Client, PaneOwner) {
        let rec = Arc::new(Recorder::default());
        let client = Client::new(rec.clone(), TmuxServer::Name("sock".into()));
        let owner = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "t");
        (rec, client, owner)
    }

    #[test]
    fn a_pane_dead_without_its_status_is_read_again_after_a_job_makes_tmux_reap() {
        let (rec, client, owner) = fixture();
        let marks = owner.expected("coder");
        rec.answer(&format!("{marks}%5\t1\t\t\t0\n"));
        rec.answer(&format!("{marks}%5\t1\t3\t\t0\n"));
        let got = owned_pane_state(&client, &PaneId("%5".into()), &owner, "coder").unwrap();
        assert_eq!(
            got,
            PaneState::Dead {
                code: Some(3),
                signal: None
            }
        );
        let calls = rec.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[1][4..6],
            ["run".to_string(), "true".into()],
            "{calls:?}"
        );
        assert_eq!(calls[1][6], ";");
        assert_eq!(calls[1][7..], calls[0][4..], "then the same read");

        // A pane that stays so is dead with nothing more known, after one more read.
        rec.answer(&format!("{marks}%5\t1\t\t\t0\n"));
        rec.answer(&format!("{marks}%5\t1\t\t\t0\n"));
        let got = owned_pane_state(&client, &PaneId("%5".into()), &owner, "coder").unwrap();
        let unknown = PaneState::Dead {
            code: None,
            signal: None,
        };
        assert_eq!(got, unknown);
        assert_eq!(rec.calls().len(), 4);
    }

    #[test]
    fn pane_states_come_from_list_panes_only_for_panes_with_the_owners_marks() {
        let (rec, client, owner) = fixture();
        let marks = owner.expected("coder");
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
            rec.answer(&format!("{marks}{listing}"));
            let got = owned_pane_state(&client, &PaneId(pane.into()), &owner, "coder").unwrap();
            assert_eq!(got, state, "{pane}");
        }
        let show = |option: &str| ["show", "-p", "-q", "-v", "-t", "%1", option].map(String::from);
        let mut want = vec!["tmux".to_string(), "-u".into(), "-L".into(), "sock".into()];
        for option in ["@swarm-root", "@swarm-team", "@swarm-member"] {
            want.extend(show(option));
            want.push(";".into());
        }
        want.extend(["lsp", "-F", LIST_FORMAT, "-t", "%1"].map(String::from));
        assert_eq!(rec.calls()[0], want);

        // Another member's, team's or root's pane, or one without marks, is gone.
        let others = [
            owner.expected("tester"),
            PaneOwner::new(std::path::Path::new("/nonexistent/root"), "u").expected("coder"),
            PaneOwner::new(std::path::Path::new("/nonexistent/other"), "t").expected("coder"),
            String::new(),
        ];
        for marks in others {
            rec.answer(&format!("{marks}{listing}"));
            let got = owned_pane_state(&client, &PaneId("%1".into()), &owner, "coder").unwrap();
            assert_eq!(got, PaneState::Gone, "{marks:?}");
        }
        let calls = rec.calls().len();
        for bad in ["=swarm-t", "%", "%1;", "main:0.0", ""] {
            let got = owned_pane_state(&client, &PaneId(bad.into()), &owner, "coder").unwrap();
            assert_eq!(got, PaneState::Gone, "{bad}");
        }
        assert_eq!(rec.calls().len(), calls, "a bad id is never sent to tmux");
        for stderr in [
            "no server running on /tmp/tmux-0/sock",
            "can't find pane: %1",
        ] {
            rec.fail(stderr);
            let got = owned_pane_state(&client, &PaneId("%1".into()), &owner, "coder").unwrap();
            assert_eq!(got, PaneState::Gone, "{stderr}");
        }
    }
}
