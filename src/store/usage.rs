//! Tokens and estimated cost per member: what `swarm usage`, `swarm status --json` and `swarm
//! top` show.
//!
//! Two sources report usage, both Claude Code's: the session transcripts under the config
//! dir's `projects/` (`transcript`: native `claude` teammates, found by the `teamName` and
//! `agentName` their entries carry, a Claude lead by the roster's `leadSessionId`, a `claude -p`
//! runtime teammate by the conversation id swarm keeps in `teams/<team>/sessions/<name>.json`),
//! and the `--output-format json` results of `claude -p` turns, which the teammate runtime
//! records in `teams/<team>/usage/<name>.jsonl` (`turns`). A member's recorded turn results win
//! over its transcript (they carry Claude Code's own cost figure and exist without session
//! persistence). A member neither reports is "unknown", never zero: the shell agent and other
//! CLIs say nothing swarm can read. Costs come from `prices` and are always estimates.

mod prices;
mod transcript;
mod turns;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{json, Value};

pub(crate) use prices::{settings_path, Prices};
pub(crate) use turns::record_turn;

use crate::error::Result;
use crate::store::fsio;
use crate::store::memory::{project_base, project_key};
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Member, TeamConfig};

/// Token counts as the Messages API reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(from = "RawUsage")]
pub(crate) struct Tokens {
    pub(crate) input: u64,
    pub(crate) output: u64,
    /// Cache writes, all durations.
    pub(crate) cache_creation: u64,
    /// The part of `cache_creation` written for an hour (priced higher).
    pub(crate) cache_creation_1h: u64,
    pub(crate) cache_read: u64,
}

/// `usage` as the API (and Claude Code's transcripts) spell it.
#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_creation: Option<CacheCreation>,
}

#[derive(Deserialize)]
struct CacheCreation {
    #[serde(default)]
    ephemeral_1h_input_tokens: u64,
}

impl From<RawUsage> for Tokens {
    fn from(u: RawUsage) -> Tokens {
        Tokens {
            input: u.input_tokens,
            output: u.output_tokens,
            cache_creation: u.cache_creation_input_tokens,
            cache_creation_1h: u
                .cache_creation
                .map_or(0, |c| c.ephemeral_1h_input_tokens)
                .min(u.cache_creation_input_tokens),
            cache_read: u.cache_read_input_tokens,
        }
    }
}

impl Tokens {
    pub(crate) fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cache_creation += o.cache_creation;
        self.cache_creation_1h += o.cache_creation_1h;
        self.cache_read += o.cache_read;
    }

    /// Field by field, the larger of the two: one message's entries repeat its usage.
    fn widen(&mut self, o: &Tokens) {
        self.input = self.input.max(o.input);
        self.output = self.output.max(o.output);
        self.cache_creation = self.cache_creation.max(o.cache_creation);
        self.cache_creation_1h = self.cache_creation_1h.max(o.cache_creation_1h);
        self.cache_read = self.cache_read.max(o.cache_read);
    }

    /// The estimated cost in USD at `price`.
    fn cost(&self, price: &prices::Price) -> f64 {
        let m = 1_000_000.0;
        let five_min = self.cache_creation - self.cache_creation_1h;
        (self.input as f64 * price.input
            + self.output as f64 * price.output
            + five_min as f64 * price.cache_write()
            + self.cache_creation_1h as f64 * price.cache_write_1h()
            + self.cache_read as f64 * price.cache_read())
            / m
    }

    fn json(&self) -> Value {
        json!({
            "inputTokens": self.input,
            "outputTokens": self.output,
            "cacheCreationInputTokens": self.cache_creation,
            "cacheReadInputTokens": self.cache_read,
        })
    }
}

/// Where a member's figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Transcript,
    TurnResults,
}

impl Source {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Source::Transcript => "transcript",
            Source::TurnResults => "turn-results",
        }
    }
}

/// What one member used.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemberUsage {
    pub(crate) source: Source,
    pub(crate) by_model: BTreeMap<String, Tokens>,
    pub(crate) sessions: BTreeSet<String>,
    /// What Claude Code itself estimated (`total_cost_usd` of `claude -p` results).
    pub(crate) reported_cost: Option<f64>,
}

impl MemberUsage {
    pub(crate) fn total(&self) -> Tokens {
        let mut t = Tokens::default();
        for tokens in self.by_model.values() {
            t.add(tokens);
        }
        t
    }

    pub(crate) fn cost(&self, prices: &Prices) -> f64 {
        self.by_model
            .iter()
            .map(|(model, t)| t.cost(&prices.of(model).0))
            .sum()
    }
}

/// Every member's usage, as far as anything reports it.
pub(crate) struct TeamUsage {
    /// In roster order: the member, and its usage or why it is unknown.
    pub(crate) members: Vec<(String, std::result::Result<MemberUsage, String>)>,
    pub(crate) prices: Prices,
}

impl TeamUsage {
    /// Reads every member's usage. Prices that cannot be loaded are an error.
    pub(crate) fn read(store: &Store, team: &TeamName, config: &TeamConfig) -> Result<TeamUsage> {
        let prices = Prices::load()?;
        let mut members = Vec::new();
        for m in &config.members {
            let usage = member_usage(store, team, config, m)?;
            members.push((m.name.to_string(), usage));
        }
        Ok(TeamUsage { members, prices })
    }

    /// `name`'s figures for `--json`: an object (every cost an estimate), or `"unknown"`.
    pub(crate) fn member_json(&self, name: &str) -> Value {
        match self.members.iter().find(|(n, _)| n == name) {
            Some((_, Ok(u))) => {
                let mut v = u.total().json();
                v["estimate"] = json!(true);
                v["source"] = json!(u.source.name());
                v["estimatedCostUsd"] = json!(round(u.cost(&self.prices)));
                v["sessions"] = json!(u.sessions);
                v["models"] = u
                    .by_model
                    .iter()
                    .map(|(model, t)| {
                        let mut m = t.json();
                        m["estimatedCostUsd"] = json!(round(t.cost(&self.prices.of(model).0)));
                        (model.clone(), m)
                    })
                    .collect::<serde_json::Map<_, _>>()
                    .into();
                if let Some(c) = u.reported_cost {
                    v["reportedCostUsd"] = json!(round(c));
                }
                v
            }
            _ => json!("unknown"),
        }
    }

    /// The known members' sum, and who is unknown; `"unknown"` when nobody reports anything.
    pub(crate) fn total_json(&self) -> Value {
        let known: Vec<&MemberUsage> = self
            .members
            .iter()
            .filter_map(|(_, u)| u.as_ref().ok())
            .collect();
        if known.is_empty() {
            return json!("unknown");
        }
        let mut total = Tokens::default();
        for u in &known {
            total.add(&u.total());
        }
        let mut v = total.json();
        v["estimate"] = json!(true);
        v["estimatedCostUsd"] = json!(round(self.cost()));
        v["unknownMembers"] = json!(self.unknown());
        v
    }

    /// One line for `swarm top`: the team's estimated cost, then each reporting member's.
    pub(crate) fn summary(&self) -> String {
        let each: Vec<String> = self
            .members
            .iter()
            .filter_map(|(name, u)| {
                let u = u.as_ref().ok()?;
                let t = u.total();
                Some(format!(
                    "{name} {} in/{} out ~${:.2}",
                    short(t.input + t.cache_creation + t.cache_read),
                    short(t.output),
                    u.cost(&self.prices)
                ))
            })
            .collect();
        if each.is_empty() {
            return "usage: unknown (no member reports any)".into();
        }
        let unknown = self.unknown().len();
        let unknown = if unknown > 0 {
            format!("; {unknown} unknown")
        } else {
            String::new()
        };
        format!(
            "usage (estimate): ~${:.2}; {}{unknown}",
            self.cost(),
            each.join(", ")
        )
    }

    /// The estimated cost of every member that reports usage.
    pub(crate) fn cost(&self) -> f64 {
        self.members
            .iter()
            .filter_map(|(_, u)| u.as_ref().ok())
            .map(|u| u.cost(&self.prices))
            .sum()
    }

    pub(crate) fn unknown(&self) -> Vec<&str> {
        self.members
            .iter()
            .filter(|(_, u)| u.is_err())
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

/// `950`, `12.3k`, `4.5M`.
fn short(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// Cents and their hundredths: estimates need no more.
fn round(usd: f64) -> f64 {
    (usd * 10_000.0).round() / 10_000.0
}

/// One member's usage, or why there is none to read.
fn member_usage(
    store: &Store,
    team: &TeamName,
    config: &TeamConfig,
    m: &Member,
) -> Result<std::result::Result<MemberUsage, String>> {
    let name = &m.name;
    if let Some(usage) = turns::read(&store.turn_usage_path(team, name))? {
        return Ok(Ok(usage));
    }
    let dirs = project_dirs(store, &m.cwd);
    let mut files: Vec<PathBuf> = Vec::new();
    let mut named = Vec::new();
    if let Some(id) = runtime_session(store, team, name)? {
        named.push(id);
    }
    if m.is_lead() && !config.lead_session_id.is_empty() {
        named.push(config.lead_session_id.clone());
    }
    for id in named.iter().filter(|id| uuid::Uuid::parse_str(id).is_ok()) {
        for dir in &dirs {
            let path = dir.join(format!("{id}.jsonl"));
            if path.is_file() {
                files.extend(transcript::with_subagents(vec![path]));
            }
        }
    }
    for dir in &dirs {
        for path in transcript::sessions_of(dir, team.as_str(), name.as_str(), config.created_at)? {
            if !files.contains(&path) {
                files.push(path);
            }
        }
    }
    if files.is_empty() {
        return Ok(Err(why_unknown(config, m)));
    }
    let mut usage = MemberUsage {
        source: Source::Transcript,
        by_model: BTreeMap::new(),
        sessions: BTreeSet::new(),
        reported_cost: None,
    };
    for path in files {
        let Some(read) = transcript::tally(&path)? else {
            continue;
        };
        for (model, t) in read.by_model {
            usage.by_model.entry(model).or_default().add(&t);
        }
        usage.sessions.extend(read.session);
    }
    Ok(Ok(usage))
}

/// The project directories a member's sessions may be under: the key of its cwd as recorded,
/// of that path resolved, and of its repository's root (what team memory is keyed by), in case
/// Claude Code keyed the session by either.
fn project_dirs(store: &Store, cwd: &str) -> Vec<PathBuf> {
    let cwd = std::path::Path::new(cwd);
    let mut keys = vec![project_key(cwd)];
    let resolved = std::fs::canonicalize(cwd).ok();
    for base in resolved.into_iter().chain([project_base(cwd)]) {
        let key = project_key(&base);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|k| store.projects_dir().join(k))
        .collect()
}

/// The session a native `claude` teammate last wrote (the newest of its transcripts since the
/// team was made, by modification time), which `claude --resume` carries on when the teammate
/// is started again (`launch::again`). A sub-agent's transcript is not a session of its own.
pub(crate) fn last_claude_session(
    store: &Store,
    config: &TeamConfig,
    m: &Member,
) -> Result<Option<String>> {
    let mut newest: Option<(std::time::SystemTime, String)> = None;
    for dir in project_dirs(store, &m.cwd) {
        let found =
            transcript::sessions_of(&dir, &config.name, m.name.as_str(), config.created_at)?;
        for path in found.iter().filter(|p| p.parent() == Some(dir.as_path())) {
            let Some(id) = path
                .file_stem()
                .and_then(|s| s.to_str())
                .filter(|s| uuid::Uuid::parse_str(s).is_ok())
            else {
                continue;
            };
            let Ok(modified) = path.metadata().and_then(|md| md.modified()) else {
                continue;
            };
            if newest.as_ref().is_none_or(|(t, _)| modified > *t) {
                newest = Some((modified, id.to_string()));
            }
        }
    }
    Ok(newest.map(|(_, id)| id))
}

/// The conversation a `claude -p` runtime teammate keeps (`teammate::session`).
fn runtime_session(store: &Store, team: &TeamName, name: &AgentName) -> Result<Option<String>> {
    let bytes = match fsio::read_file(&store.session_path(team, name))? {
        Some(bytes) => bytes,
        None => match fsio::read_file(&store.earlier_session_path(team, name))? {
            Some(bytes) => bytes,
            None => return Ok(None),
        },
    };
    let Ok(session) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(None);
    };
    Ok((session["adapter"] == "claude")
        .then(|| session["sessionId"].as_str().map(str::to_string))
        .flatten())
}

/// Why a member reports nothing, in words.
fn why_unknown(config: &TeamConfig, m: &Member) -> String {
    match m.agent_label() {
        Some("shell") => "the shell agent reports no usage".into(),
        Some("claude") => "no Claude Code transcript of its session was found".into(),
        None if config.led_by_claude() => {
            "no Claude Code transcript of its session was found".into()
        }
        Some(_) => "its agent reports no usage swarm can read".into(),
        None if m.is_lead() => "no transcript of the lead's session was found".into(),
        None => "nothing it wrote reports usage".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_writes_for_an_hour_cost_more_and_unknown_models_are_priced_as_sonnet() {
        let t: Tokens = serde_json::from_value(json!({"input_tokens": 1_000_000,
            "output_tokens": 1_000_000, "cache_creation_input_tokens": 2_000_000,
            "cache_read_input_tokens": 1_000_000,
            "cache_creation": {"ephemeral_1h_input_tokens": 1_000_000}}))
        .unwrap();
        let prices = Prices::default();
        // Sonnet: 3 + 15 + 3.75 (5 min) + 6 (1 h) + 0.3.
        assert!((t.cost(&prices.of("claude-sonnet-4-5").0) - 28.05).abs() < 1e-9);
        assert_eq!(
            t.cost(&prices.of("mystery").0),
            t.cost(&prices.of("sonnet").0)
        );
    }
}
