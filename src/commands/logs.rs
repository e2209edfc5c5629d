//! `swarm logs NAME [-f]`: a teammate's output, from its in-process log file or its tmux pane,
//! or once that pane is closed, from the last lines swarm kept of it in the same log file
//! (`lifecycle::kept_output`).
//!
//! The text is printed with control characters made visible (`output::terminal`), since a
//! teammate's output may hold anything; with `--json` it is one document `{"name", "lines"}`,
//! or with `-f` one `{"name", "line"}` object per line as lines arrive.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::Context;
use crate::backend::{for_member, BackendKind, PaneBackend as _, PaneId, PaneState};
use crate::error::{Error, Result};
use crate::lifecycle::kept_output::trimmed_lines;
use crate::output;
use crate::output::terminal::{visible, visible_lines};
use crate::store::fsio;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster};

pub(crate) fn logs(ctx: &Context, name: &AgentName, follow: bool) -> Result<()> {
    let team = ctx.existing_team()?;
    let m = Roster::new(&ctx.store, &team).require_member(name.as_str())?;
    let who = m.name.clone();
    let mut sink = LogSink::new(ctx.json, follow, who.as_str());
    let result = match for_member(&ctx.store, &team, &m).map(|b| b.kind()) {
        Some(BackendKind::Tmux) => tmux_logs(&ctx.store, &team, &m, follow, &mut sink),
        Some(BackendKind::Iterm2) => Err(Error::usage(format!(
            "{who} runs in iTerm2 session {}; its output is in that pane",
            visible(&m.tmux_pane_id)
        ))),
        _ => {
            let path = ctx.store.log_path(&team, &who);
            file_logs(&ctx.store, &team, &who, &path, follow, &mut sink)
        }
    };
    result.and_then(|()| sink.finish())
}

/// Where `swarm logs` output goes: text with control characters made visible, or with
/// `--json` one document `{"name", "lines"}` (with `-f`, one `{"name", "line"}` per line).
struct LogSink {
    json: bool,
    follow: bool,
    name: String,
    lines: Vec<String>,
    /// Text of an unfinished last line (JSON only: lines are emitted whole).
    partial: String,
}

impl LogSink {
    fn new(json: bool, follow: bool, name: &str) -> LogSink {
        LogSink {
            json,
            follow,
            name: name.to_string(),
            lines: Vec::new(),
            partial: String::new(),
        }
    }

    /// Output text, possibly several lines, possibly ending mid-line.
    fn text(&mut self, text: &str) -> Result<()> {
        use std::io::Write;
        if !self.json {
            let mut out = std::io::stdout().lock();
            return out
                .write_all(visible_lines(text).as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| Error::Io {
                    action: "write",
                    path: "standard output".into(),
                    source: e,
                });
        }
        self.partial.push_str(text);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            self.line(line.trim_end_matches('\n'))?;
        }
        Ok(())
    }

    /// One whole line.
    fn line(&mut self, line: &str) -> Result<()> {
        match (self.json, self.follow) {
            (false, _) => output::line(visible_lines(line)),
            (true, true) => output::json_line(&json!({"name": self.name, "line": line})),
            (true, false) => {
                self.lines.push(line.to_string());
                Ok(())
            }
        }
    }

    fn finish(mut self) -> Result<()> {
        if !self.json {
            return Ok(());
        }
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.line(&rest)?;
        }
        if self.follow {
            return Ok(());
        }
        output::json(&json!({"name": self.name, "lines": self.lines}))
    }
}

fn file_logs(
    store: &Store,
    team: &TeamName,
    who: &AgentName,
    path: &Path,
    follow: bool,
    sink: &mut LogSink,
) -> Result<()> {
    let Some(mut file) = fsio::open_read(path)? else {
        return Err(Error::usage(format!(
            "{who} has no log at {} (only in-process teammates write one)",
            path.display()
        )));
    };
    let mut pos = 0u64;
    let mut buf = Vec::new();
    loop {
        file.seek(SeekFrom::Start(pos))
            .map_err(Error::io("read", path))?;
        buf.clear();
        file.read_to_end(&mut buf)
            .map_err(Error::io("read", path))?;
        // When following, a character cut in half by the writer is printed once its rest is in.
        let whole = match std::str::from_utf8(&buf) {
            Err(e) if follow && e.error_len().is_none() => e.valid_up_to(),
            _ => buf.len(),
        };
        if whole > 0 {
            pos += whole as u64;
            sink.text(&String::from_utf8_lossy(&buf[..whole]))?;
        }
        if !follow {
            return Ok(());
        }
        let member = Roster::new(store, team).require_member(who.as_str())?;
        let done = member.retired() && crate::backend::pid_state(&member).is_dead();
        if done && whole == 0 {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn tmux_logs(
    store: &Store,
    team: &TeamName,
    m: &Member,
    follow: bool,
    sink: &mut LogSink,
) -> Result<()> {
    let member_backend = for_member(store, team, m);
    let Some(backend) = member_backend.as_ref().and_then(|b| b.tmux()) else {
        return Err(Error::usage(format!("{} does not run in tmux", m.name)));
    };
    let pane = PaneId(m.tmux_pane_id.clone());
    let mut shown: Vec<String> = Vec::new();
    loop {
        if backend.state(&pane)? == PaneState::Gone {
            if !shown.is_empty() {
                return Ok(());
            }
            // Swarm kept the pane's last lines when it closed it.
            let path = store.log_path(team, &m.name);
            return match fsio::read_file(&path)? {
                Some(bytes) => sink.text(&String::from_utf8_lossy(&bytes)),
                None => Err(Error::usage(format!(
                    "{}'s pane {pane} no longer exists and swarm kept none of its output \
                     (it keeps a pane's last lines in {} when it closes the pane)",
                    m.name,
                    path.display()
                ))),
            };
        }
        let lines = trimmed_lines(&backend.capture(&pane)?);
        let start = if lines.starts_with(&shown) {
            shown.len()
        } else {
            // The screen changed above what was shown: print from the longest overlap.
            (0..=shown.len().min(lines.len()))
                .rev()
                .find(|&k| shown[shown.len() - k..] == lines[..k])
                .unwrap_or(0)
        };
        for l in &lines[start..] {
            sink.line(l)?;
        }
        shown = lines;
        if !follow {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
