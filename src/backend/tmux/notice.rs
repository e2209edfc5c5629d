//! A message on the status line of the tmux clients that show a pane's session: how the lead
//! console, running in a pane, tells the person that a teammate waits on them.
//!
//! The pane is the caller's own (`$TMUX_PANE`, or `SWARM_TMUX_PANE` where a sandbox passed it
//! on), on the server `$TMUX` names (else `SWARM_TMUX_SOCKET`): a pane id means nothing on
//! another server. Only clients attached to a session that holds the pane get the message, never
//! those of another session, and control-mode clients are left out (tmux prints a message for one
//! to the caller instead). `display-message` expands its message as a format, where `#(cmd)` runs
//! a shell command and `#{...}` reads tmux's state, so the text goes through [`literal`] (every
//! `#` doubled) after its control characters are made visible: tmux shows exactly the words
//! swarm chose. `-d 0` keeps the message until the person presses a key, so one glance away
//! does not miss it.

use std::sync::Arc;

use super::server::{literal, Client, TmuxServer};
use crate::error::Result;
use crate::output::terminal::visible;
use crate::process::exec::Exec;

/// The caller's own pane and the server it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnPane {
    server: TmuxServer,
    pane: String,
}

impl OwnPane {
    /// The pane this process runs in, from its environment; `None` outside tmux.
    pub(crate) fn from_env() -> Option<OwnPane> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let pane = var("TMUX_PANE").or_else(|| var("SWARM_TMUX_PANE"))?;
        let server = match var("TMUX").as_deref().and_then(|t| t.split_once(',')) {
            Some((path, _)) if !path.is_empty() => TmuxServer::Path(path.into()),
            _ => TmuxServer::Name(var(super::SOCKET_ENV)?),
        };
        Some(OwnPane { server, pane })
    }

    /// Shows `text` on every client attached to a session holding this pane; how many got it.
    pub(crate) fn tell_watchers(&self, exec: Arc<dyn Exec>, text: &str) -> Result<usize> {
        let client = Client::new(exec, self.server.clone());
        let listed = client.run_words(vec![
            words(&["list-panes", "-a", "-F", "P\t#{pane_id}\t#{session_id}"]),
            words(&[
                "list-clients",
                "-F",
                "C\t#{client_name}\t#{session_id}\t#{client_control_mode}",
            ]),
        ])?;
        let watchers = watchers(&listed, &self.pane);
        if watchers.is_empty() {
            return Ok(0);
        }
        let message = literal(&visible(text));
        let cmds = watchers
            .iter()
            .map(|name| {
                words(&[
                    "display-message",
                    "-c",
                    name,
                    "-t",
                    &self.pane,
                    "-d",
                    "0",
                    "--",
                    &message,
                ])
            })
            .collect();
        client.run_words(cmds)?;
        Ok(watchers.len())
    }
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

/// The clients (not in control mode) attached to a session that holds `pane`, from the lines
/// [`OwnPane::tell_watchers`] lists.
fn watchers(listed: &str, pane: &str) -> Vec<String> {
    let rows: Vec<Vec<&str>> = listed.lines().map(|l| l.split('\t').collect()).collect();
    let sessions: Vec<&str> = rows
        .iter()
        .filter(|r| r.len() == 3 && r[0] == "P" && r[1] == pane)
        .map(|r| r[2])
        .collect();
    rows.iter()
        .filter(|r| r.len() == 4 && r[0] == "C" && r[3] != "1" && sessions.contains(&r[2]))
        .map(|r| r[1].to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::exec::testing::Recorder;

    #[test]
    fn only_the_clients_of_the_panes_sessions_get_the_text_with_formats_disarmed() {
        let exec = Arc::new(Recorder::default());
        exec.answer(
            "P\t%0\t$0\nP\t%1\t$1\nP\t%0\t$2\n\
             C\t/dev/pts/2\t$0\t0\nC\t/dev/pts/3\t$1\t0\nC\tclient-9\t$0\t1\nC\t/dev/pts/4\t$2\t0\n",
        );
        let own = OwnPane {
            server: TmuxServer::Path("/tmp/tmux-1/s".into()),
            pane: "%0".into(),
        };
        let told = own
            .tell_watchers(exec.clone(), "coder: #(touch /tmp/x) #{pane_id}\x1b[2J;")
            .unwrap();
        assert_eq!(told, 2);
        let calls = exec.calls();
        let shown = r"coder: ##(touch /tmp/x) ##{pane_id}\e[2J\;";
        let display = |client: &str| {
            [
                "display-message",
                "-c",
                client,
                "-t",
                "%0",
                "-d",
                "0",
                "--",
                shown,
            ]
            .map(String::from)
        };
        let mut expected = ["tmux", "-u", "-S", "/tmp/tmux-1/s"]
            .map(String::from)
            .to_vec();
        expected.extend(display("/dev/pts/2"));
        expected.push(";".into());
        expected.extend(display("/dev/pts/4"));
        assert_eq!(calls[1], expected);
    }

    #[test]
    fn no_watcher_means_no_message() {
        assert!(watchers("P\t%0\t$0\nC\t/dev/pts/3\t$1\t0\n", "%0").is_empty());
    }
}
