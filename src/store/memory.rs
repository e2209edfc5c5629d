//! Team memory (PROTOCOL.md, "Team memory"): what a team working on one project has learned,
//! in Claude Code's layout, `<root>/projects/<project key>/memory/team/`, one Markdown file per
//! topic and `MEMORY.md`, the index of them, one line per topic.
//!
//! Without it a shell or codex teammate learns nothing its peers wrote down except through
//! messages. A write has Claude Code's two steps, the topic file and then the index, both
//! atomic replaces, and both under the index's lock (`MEMORY.md.lock/`, the store's lock), so
//! sixteen teammates writing different topics at once lose no index line. Every write rebuilds
//! the index from what is on disk: a topic file without a line (its writer died between the
//! two steps) gets one, and a line whose topic file is gone (a delete that died) is dropped, so
//! a crash costs at most the next write's repair. Names pass [`safety`] before they become
//! paths, so no name reaches a file outside the team directory. The project key is [`key`]'s.
//!
//! `SWARM_MEMORY_FAULT` is a hook for the fault tests (with the `seams` feature only): `no-lock` writes the index the way a
//! writer without the lock does (read it, add the line, write it back: no lock, no repair), the
//! negative control that must lose lines; `exit-between-steps` ends the process after the topic
//! file is written and before the index is.

mod key;
mod safety;

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lock::FileLock;
use crate::store::paths::Store;
use crate::store::protocol::{format_timestamp, parse_timestamp, timestamp_now};
use crate::store::roster::TeamConfig;
pub(crate) use key::{project_base, project_key};
pub(crate) use safety::INDEX;

/// Topic files deeper than this are not looked for (a guard against a pathological tree).
const MAX_DEPTH: usize = 8;

/// The team memory of one project.
#[derive(Debug, Clone)]
pub(crate) struct TeamMemory {
    dir: PathBuf,
    project: PathBuf,
}

/// One topic, as `swarm memory list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Topic {
    /// What `swarm memory show` takes: the path under the team directory without `.md`.
    pub(crate) name: String,
    pub(crate) file: PathBuf,
    pub(crate) description: String,
    pub(crate) written_by: Option<String>,
    pub(crate) written_at: Option<String>,
    /// Whether `MEMORY.md` has a line for it.
    pub(crate) indexed: bool,
}

/// A topic with its text.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TopicText {
    #[serde(flatten)]
    pub(crate) topic: Topic,
    pub(crate) text: String,
}

/// What `swarm status` and `swarm top` show.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Figures {
    pub(crate) topics: usize,
    pub(crate) last_write_by: Option<String>,
    pub(crate) last_write_at: Option<String>,
}

impl Figures {
    /// `3 topics, last written by coder at 2026-01-01T00:00:00.000Z`, or `no topics`.
    pub(crate) fn text(&self) -> String {
        if self.topics == 0 {
            return "no topics".to_string();
        }
        let mut s = format!(
            "{} topic{}",
            self.topics,
            if self.topics == 1 { "" } else { "s" }
        );
        if let Some(at) = &self.last_write_at {
            let by = self
                .last_write_by
                .as_deref()
                .unwrap_or("someone outside swarm");
            s.push_str(&format!(", last written by {by} at {at}"));
        }
        s
    }
}

impl TeamMemory {
    /// The team memory `swarm status` and `swarm top` report for a team: its lead's project
    /// (the launch's directory); `None` when the roster records none.
    pub(crate) fn of_team(store: &Store, config: &TeamConfig) -> Option<TeamMemory> {
        let lead = config.members.iter().find(|m| m.is_lead())?;
        let cwd = Path::new(&lead.cwd);
        cwd.is_absolute()
            .then(|| TeamMemory::for_project(store, cwd))
    }

    /// The team memory of the project `dir` belongs to (see [`key::project_base`]).
    pub(crate) fn for_project(store: &Store, dir: &Path) -> TeamMemory {
        let project = key::project_base(dir);
        let dir = store
            .root()
            .join("projects")
            .join(key::project_key(&project))
            .join("memory")
            .join("team");
        TeamMemory { dir, project }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The project directory the key was made from.
    pub(crate) fn project(&self) -> &Path {
        &self.project
    }

    pub(crate) fn index_path(&self) -> PathBuf {
        self.dir.join(INDEX)
    }

    /// `MEMORY.md` as it is now; `None` when there is none.
    pub(crate) fn index(&self) -> Result<Option<String>> {
        Ok(fsio::read_file(&self.index_path())?.map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Every topic file, by name.
    pub(crate) fn list(&self) -> Result<Vec<Topic>> {
        let indexed: HashSet<String> = self
            .index()?
            .unwrap_or_default()
            .lines()
            .filter_map(|l| parse_line(l).map(|(_, file, _)| file))
            .collect();
        let mut topics = Vec::new();
        self.scan(&self.dir, 0, &mut topics)?;
        for t in &mut topics {
            t.indexed = indexed.contains(&self.relative_file(&t.file));
        }
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(topics)
    }

    pub(crate) fn show(&self, name: &str) -> Result<TopicText> {
        let (name, path) = self.topic_path(name)?;
        let Some(bytes) = fsio::read_file(&path)? else {
            return Err(self.no_such(&name));
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut topic = topic_of(&name, &path, &text);
        topic.indexed = self
            .index()?
            .unwrap_or_default()
            .lines()
            .any(|l| parse_line(l).is_some_and(|(_, f, _)| f == self.relative_file(&path)));
        Ok(TopicText {
            topic,
            text: body_of(&text).to_string(),
        })
    }

    /// Writes topic `name` (the two steps, under the lock) and returns it.
    pub(crate) fn write(
        &self,
        name: &str,
        text: &str,
        description: &str,
        author: &str,
    ) -> Result<Topic> {
        let (name, path) = self.topic_path(name)?;
        let description = one_line(description);
        if description.is_empty() {
            return Err(Error::usage(
                "--description is empty; give the one line the index shows for this topic",
            ));
        }
        if text.trim().is_empty() {
            return Err(Error::usage(
                "the topic text is empty; say what to remember",
            ));
        }
        let written_at = timestamp_now();
        let file = render_topic(&name, &description, author, &written_at, text);
        fsio::ensure_dir(path.parent().unwrap_or(&self.dir))?;
        let topic = Topic {
            indexed: true,
            ..topic_of(&name, &path, &file)
        };
        if fault() == Some(Fault::NoLock) {
            fsio::write_atomic(&path, file.as_bytes())?;
            let mut index = self.index()?.unwrap_or_default();
            index.push_str(&index_line(&topic, &self.relative_file(&path)));
            index.push('\n');
            return fsio::write_atomic(&self.index_path(), index.as_bytes()).map(|()| topic);
        }
        let _lock = self.lock()?;
        fsio::write_atomic(&path, file.as_bytes())?;
        if fault() == Some(Fault::ExitBetweenSteps) {
            std::process::exit(70);
        }
        self.reindex()?;
        Ok(topic)
    }

    /// Deletes topic `name`: the file, then its index line.
    pub(crate) fn delete(&self, name: &str) -> Result<Topic> {
        let (name, path) = self.topic_path(name)?;
        let _lock = self.lock()?;
        let Some(bytes) = fsio::read_file(&path)? else {
            return Err(self.no_such(&name));
        };
        let topic = topic_of(&name, &path, &String::from_utf8_lossy(&bytes));
        fs::remove_file(&path).map_err(Error::io("remove", &path))?;
        self.reindex()?;
        Ok(topic)
    }

    /// The number of topics and the newest write.
    pub(crate) fn figures(&self) -> Result<Figures> {
        let topics = self.list()?;
        let newest = topics
            .iter()
            .max_by_key(|t| t.written_at.as_deref().and_then(parse_timestamp));
        Ok(Figures {
            topics: topics.len(),
            last_write_by: newest.and_then(|t| t.written_by.clone()),
            last_write_at: newest.and_then(|t| t.written_at.clone()),
        })
    }

    /// Rewrites `MEMORY.md` from what is on disk, keeping its lines and their order: a line per
    /// topic file (written now for a file that has none, and rewritten for one whose
    /// description changed), none for a topic file that is gone. Lines that are not topic
    /// entries are kept as they are. Called under the lock.
    fn reindex(&self) -> Result<()> {
        let old = self.index()?.unwrap_or_default();
        let mut topics = Vec::new();
        self.scan(&self.dir, 0, &mut topics)?;
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        let by_file: std::collections::HashMap<String, &Topic> = topics
            .iter()
            .map(|t| (self.relative_file(&t.file), t))
            .collect();
        let mut seen = HashSet::new();
        let mut lines = Vec::new();
        for line in old.lines() {
            match parse_line(line) {
                Some((_, file, _)) if by_file.contains_key(&file) => {
                    if seen.insert(file.clone()) {
                        lines.push(index_line(by_file[&file], &file));
                    }
                }
                // A topic entry whose file is gone: deleted, or its delete died half way.
                Some((_, file, _)) if is_topic_link(&file) => {}
                _ => lines.push(line.to_string()),
            }
        }
        for t in &topics {
            let file = self.relative_file(&t.file);
            if seen.insert(file.clone()) {
                lines.push(index_line(t, &file));
            }
        }
        let mut text = lines.join("\n");
        text.push('\n');
        fsio::write_atomic(&self.index_path(), text.as_bytes())
    }

    fn lock(&self) -> Result<FileLock> {
        fsio::ensure_dir(&self.dir)?;
        FileLock::acquire(&self.index_path())
    }

    /// The checked name (the path under the team directory, without `.md`) and the file.
    fn topic_path(&self, name: &str) -> Result<(String, PathBuf)> {
        let stem = name.strip_suffix(".md").unwrap_or(name);
        let path = safety::resolve_in(&self.dir, name, &format!("{stem}.md"))?;
        let rel = self.relative_file(&path);
        let name = rel.strip_suffix(".md").unwrap_or(&rel).to_string();
        safety::check_name(&name)?;
        Ok((name, path))
    }

    /// `path` relative to the team directory, with `/` separators.
    fn relative_file(&self, path: &Path) -> String {
        path.strip_prefix(&self.dir)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    fn no_such(&self, name: &str) -> Error {
        Error::NoSuchTopic {
            name: name.to_string(),
            dir: self.dir.clone(),
        }
    }

    /// Topic files under `dir`: regular `*.md` files other than the index, in directories that
    /// are not links; hidden names (locks, temp files) are skipped.
    fn scan(&self, dir: &Path, depth: usize, out: &mut Vec<Topic>) -> Result<()> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("list", dir)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(Error::io("list", dir))?;
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if file_name.starts_with('.') || file_name.ends_with(".lock") {
                continue;
            }
            if kind.is_dir() && depth < MAX_DEPTH {
                self.scan(&path, depth + 1, out)?;
            } else if kind.is_file()
                && file_name.ends_with(".md")
                && !(depth == 0 && file_name == INDEX)
            {
                let Some(bytes) = fsio::read_file(&path)? else {
                    continue;
                };
                let rel = self.relative_file(&path);
                let name = rel.strip_suffix(".md").unwrap_or(&rel);
                out.push(topic_of(name, &path, &String::from_utf8_lossy(&bytes)));
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    NoLock,
    ExitBetweenSteps,
}

/// Only with the `seams` feature (the tests'): an installed swarm ignores the variable.
fn fault() -> Option<Fault> {
    if !cfg!(feature = "seams") {
        return None;
    }
    match std::env::var("SWARM_MEMORY_FAULT").as_deref() {
        Ok("no-lock") => Some(Fault::NoLock),
        Ok("exit-between-steps") => Some(Fault::ExitBetweenSteps),
        _ => None,
    }
}

/// A topic file: Claude Code's frontmatter (`name`, `description`, `metadata.type`) with who
/// wrote it and when in `metadata` (swarm's; Claude Code ignores them), then the text. Values
/// are JSON strings, which YAML reads as double-quoted scalars, so a `:` or `#` in a
/// description cannot break the frontmatter.
fn render_topic(name: &str, description: &str, author: &str, at: &str, text: &str) -> String {
    let q = |s: &str| serde_json::to_string(s).expect("strings serialize");
    let mut out = format!(
        "---\nname: {}\ndescription: {}\nmetadata:\n  type: project\n  writtenBy: {}\n  writtenAt: {}\n---\n\n{}",
        q(name),
        q(description),
        q(author),
        q(at),
        text
    );
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// What a topic file says about itself; a file without frontmatter (written by hand or by a
/// model) is described by its first line and dated by its modification time.
fn topic_of(name: &str, path: &Path, text: &str) -> Topic {
    let mut topic = Topic {
        name: name.to_string(),
        file: path.to_path_buf(),
        description: String::new(),
        written_by: None,
        written_at: None,
        indexed: false,
    };
    for (key, value) in frontmatter(text) {
        match key {
            "description" => topic.description = one_line(&value),
            "writtenBy" => topic.written_by = Some(value),
            "writtenAt" => topic.written_at = Some(value),
            _ => {}
        }
    }
    if topic.description.is_empty() {
        topic.description = one_line(
            body_of(text)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or(""),
        );
    }
    if topic.written_at.is_none() {
        topic.written_at = fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| format_timestamp(d.as_millis() as u64));
    }
    topic
}

/// The `key: value` lines of a leading `---` block (nested keys too), values unquoted.
fn frontmatter(text: &str) -> Vec<(&str, String)> {
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return vec![];
    }
    lines
        .take_while(|l| l.trim_end() != "---")
        .filter_map(|l| {
            let (key, value) = l.trim_start().split_once(':')?;
            let value = value.trim();
            let value = if value.starts_with('"') {
                serde_json::from_str::<String>(value).unwrap_or_else(|_| value.to_string())
            } else {
                value.trim_matches('\'').to_string()
            };
            Some((key.trim(), value))
        })
        .collect()
}

/// The text after the frontmatter (and the blank line after it).
fn body_of(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("---\n") else {
        return text;
    };
    match rest.find("\n---\n") {
        Some(end) => rest[end + 5..]
            .strip_prefix('\n')
            .unwrap_or(&rest[end + 5..]),
        None => text,
    }
}

/// Claude Code's index entry: `- [Title](file.md) — one-line hook`.
fn index_line(topic: &Topic, file: &str) -> String {
    format!("- [{}]({file}) — {}", topic.name, topic.description)
}

/// (title, file, hook) of an index entry.
fn parse_line(line: &str) -> Option<(String, String, String)> {
    let rest = line.trim_start().strip_prefix("- [")?;
    let (title, rest) = rest.split_once("](")?;
    let (file, rest) = rest.split_once(')')?;
    let hook = rest.trim_start().trim_start_matches(['—', '-', ':']).trim();
    Some((title.to_string(), file.to_string(), hook.to_string()))
}

/// Whether an index link names a topic file of this directory (not a URL, not outside).
fn is_topic_link(file: &str) -> bool {
    file.ends_with(".md")
        && safety::check_name(file.strip_suffix(".md").unwrap_or(file)).is_ok()
        && !file.split('/').any(|p| p == "..")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_file_round_trips_its_frontmatter() {
        let text = render_topic(
            "ci/flaky",
            "a: tricky # line",
            "coder",
            "2026-01-01T00:00:00.000Z",
            "body\n",
        );
        let t = topic_of("ci/flaky", Path::new("/nonexistent"), &text);
        assert_eq!(t.description, "a: tricky # line");
        assert_eq!(t.written_by.as_deref(), Some("coder"));
        assert_eq!(t.written_at.as_deref(), Some("2026-01-01T00:00:00.000Z"));
        assert_eq!(body_of(&text), "body\n");
    }

    #[test]
    fn index_lines_are_claude_codes() {
        let line = "- [build](build.md) — how to build";
        assert_eq!(
            parse_line(line),
            Some(("build".into(), "build.md".into(), "how to build".into()))
        );
        assert_eq!(parse_line("# Team memory"), None);
        assert!(is_topic_link("ci/flaky.md"));
        assert!(!is_topic_link("https://example.com"));
        assert!(!is_topic_link("../private.md"));
    }
}
