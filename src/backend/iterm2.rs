//! Teammates in iTerm2 split panes, through the `it2` command-line tool.
//!
//! `it2 session split` opens a pane (splitting the lead's session first, then the previous
//! teammate's), `it2 session run` starts a command in it and `it2 session close -f` kills it.
//! `it2 session run` types a command line into the pane's shell, so the only thing typed is
//! `'<swarm exe>' pane-exec '<spec file>'`: the argv, environment and working directory travel
//! in a 0600 JSON spec file that the hidden `swarm pane-exec` reads, deletes and `exec`s. No user
//! text is ever part of a shell string. iTerm2 cannot report a pane's exit status, so
//! `pane-exec` records the teammate's pid in the roster and health comes from the pid and the
//! liveness lock.

use std::sync::Arc;

use super::pane::{BackendKind, Launch, PaneBackend, PaneId, PaneSpec, PaneState, Started};
use super::pane_exec::{ExecSpec, Iterm2Pane, Trampoline};
use crate::error::{Error, Result};
use crate::process::exec::Exec;

/// `swarm pane-exec`, which commands.rs runs for the hidden command; it serves every backend.

#[derive(Debug)]
pub(crate) struct Iterm2Backend {
    exec: Arc<dyn Exec>,
    it2: String,
    /// The lead's session (the UUID part of `$ITERM_SESSION_ID`).
    lead_session: String,
    last: Option<String>,
    /// `<swarm exe>` and where spec files go.
    trampoline: Trampoline,
    root: std::path::PathBuf,
    team: String,
    titles: Vec<(String, String, String)>,
}

impl Iterm2Backend {
    pub(crate) fn new(
        exec: Arc<dyn Exec>,
        iterm_session_id: &str,
        trampoline: Trampoline,
        root: std::path::PathBuf,
        team: String,
    ) -> Iterm2Backend {
        let lead_session = iterm_session_id
            .split_once(':')
            .map_or(iterm_session_id, |(_, uuid)| uuid)
            .to_string();
        Iterm2Backend {
            exec,
            it2: "it2".into(),
            lead_session,
            last: None,
            trampoline,
            root,
            team,
            titles: vec![],
        }
    }

    /// A handle for closing panes that already exist.
    pub(crate) fn for_ops(exec: Arc<dyn Exec>) -> Iterm2Backend {
        let trampoline = Trampoline {
            swarm_exe: Default::default(),
            spec_dir: Default::default(),
        };
        Iterm2Backend::new(exec, "", trampoline, Default::default(), String::new())
    }

    fn it2(&self, args: &[&str]) -> Result<String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        self.exec.run(&self.it2, &args)
    }
}

/// `'word'` for a POSIX shell: the only shell text swarm ever writes is its own exe and a spec
/// path, always quoted this way.
fn single_quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The new session id from `it2 session split`: "Created new pane: <id>", or a bare id.
fn parse_split_output(out: &str) -> Option<String> {
    for line in out.lines().rev() {
        let line = line.trim();
        if let Some((_, id)) = line.split_once("Created new pane:") {
            let id = id.trim();
            if !id.is_empty() {
                return Some(id.to_string());
            }
        }
    }
    let last = out.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    (!last.contains(char::is_whitespace)).then(|| last.to_string())
}

impl PaneBackend for Iterm2Backend {
    fn kind(&self) -> BackendKind {
        BackendKind::Iterm2
    }

    fn open_pane(&mut self, spec: &PaneSpec) -> Result<PaneId> {
        let (parent, direction) = match &self.last {
            None => (self.lead_session.clone(), "-v"),
            Some(last) => (last.clone(), "-h"),
        };
        let out = self.it2(&["session", "split", direction, "-s", &parent])?;
        let id = parse_split_output(&out).ok_or_else(|| Error::Command {
            program: "it2 session split".into(),
            detail: format!("no session id in its output: {:?}", out.trim()),
        })?;
        self.last = Some(id.clone());
        self.titles
            .push((id.clone(), spec.name.clone(), spec.color.clone()));
        Ok(PaneId(id))
    }

    fn start(&mut self, pane: &PaneId, launch: &Launch) -> Result<Started> {
        let (title, color) = self
            .titles
            .iter()
            .find(|(id, _, _)| id == pane.as_str())
            .map(|(_, t, c)| (t.clone(), c.clone()))
            .unwrap_or_default();
        let spec = ExecSpec {
            iterm2: Some(Iterm2Pane {
                title: title.clone(),
                color,
                root: self.root.clone(),
                team: self.team.clone(),
                name: title.clone(),
            }),
            ..ExecSpec::of(launch)
        };
        let path = self.trampoline.write(&title, &spec)?;
        let line = format!(
            "{} pane-exec {}",
            single_quoted(&self.trampoline.swarm_exe.to_string_lossy()),
            single_quoted(&path.to_string_lossy())
        );
        if let Err(e) = self.it2(&["session", "run", "-s", pane.as_str(), &line]) {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(Started::default())
    }

    fn state(&self, _pane: &PaneId) -> Result<PaneState> {
        Ok(PaneState::Unknown)
    }

    fn kill(&mut self, pane: &PaneId) -> Result<()> {
        match self.it2(&["session", "close", "-f", "-s", pane.as_str()]) {
            Ok(_) => Ok(()),
            // A session that is already closed is what we wanted.
            Err(Error::Command { detail, .. })
                if detail.contains("not found") || detail.contains("No such session") =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn attach_hint(&self) -> Option<String> {
        Some("the teammates are split into this iTerm2 tab".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::exec::testing::Recorder;

    #[test]
    fn split_output_is_parsed_in_both_shapes() {
        assert_eq!(
            parse_split_output("Created new pane: ABCD-1234\n").as_deref(),
            Some("ABCD-1234")
        );
        assert_eq!(
            parse_split_output("ABCD-1234\n").as_deref(),
            Some("ABCD-1234")
        );
        assert_eq!(parse_split_output("error: no such thing\n"), None);
    }

    #[test]
    fn panes_split_from_the_lead_then_from_each_other_and_run_only_pane_exec() {
        let dir = tempfile::tempdir().unwrap();
        let rec = Arc::new(Recorder::default());
        rec.answer("Created new pane: S1\n");
        rec.answer("");
        rec.answer("Created new pane: S2\n");
        let mut b = Iterm2Backend::new(
            rec.clone(),
            "w0t0p0:LEAD",
            Trampoline {
                swarm_exe: "/opt/swarm dir/swarm".into(),
                spec_dir: dir.path().join("spawn"),
            },
            dir.path().into(),
            "t".into(),
        );
        let spec = |n: &str| PaneSpec {
            name: n.into(),
            color: "blue".into(),
        };
        let p1 = b.open_pane(&spec("coder")).unwrap();
        b.start(
            &p1,
            &Launch {
                argv: vec!["/bin/agent".into(), "$(rm -rf /)".into()],
                env: vec![],
                cwd: "/".into(),
                log: None,
            },
        )
        .unwrap();
        b.open_pane(&spec("tester")).unwrap();
        let calls = rec.calls();
        assert_eq!(calls[0], ["it2", "session", "split", "-v", "-s", "LEAD"]);
        let run_line = &calls[1][5];
        assert_eq!(
            run_line,
            &format!(
                "'/opt/swarm dir/swarm' pane-exec {}",
                single_quoted(&dir.path().join("spawn/coder.json").to_string_lossy())
            )
        );
        assert!(!run_line.contains("rm -rf"));
        assert_eq!(calls[2], ["it2", "session", "split", "-h", "-s", "S1"]);
        let written: ExecSpec = crate::store::fsio::read_json(&dir.path().join("spawn/coder.json"))
            .unwrap()
            .unwrap();
        assert_eq!(written.argv[1], "$(rm -rf /)");
    }
}
