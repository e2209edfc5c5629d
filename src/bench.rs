//! `swarm bench`: the store benchmarks, each against a baseline measured in the same run.
//!
//! The claims worth measuring are about processes: many writers on one inbox, many claimers on
//! one task list, a receiver in another process. So the driver is a hidden subcommand of the
//! `swarm` binary itself, and it re-runs its own executable (`swarm debug append`, `debug
//! cc-append`, `debug claim-loop`, `swarm send`, `swarm inbox --follow`) for every worker: the
//! driver and the workers are always the same build, and `scripts/bench` needs nothing but
//! `cargo build --release`. The Claude Code baseline (`claude_code.rs`) is a re-implementation
//! of its inbox append and poll loop, run in the same processes, on the same files, on the same
//! machine, minutes apart, so the ratios printed next to each table mean something even on a
//! noisy two-core box where absolute numbers do not.
//!
//! Each benchmark is a function returning a [`Section`] (a title, an aligned Markdown table and
//! notes); [`BENCHMARKS`] lists them. Benchmarks that need the launcher or the teammate runtime
//! (spawn, idle footprint, and the runtime as a second receiver in `latency`) are added there
//! once those land; see the comments at [`BENCHMARKS`] and in [`latency`].

pub mod claude_code;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::commands::cli::BenchArgs;
use crate::error::{Error, Result};
use crate::output;
use crate::store::fsio;
use crate::store::mailbox::InboxMessage;
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::roster::{Member, Roster};
use crate::store::tasks::{Task, TaskStatus};

type BenchFn = fn(&Bench) -> Result<Section>;

/// Every benchmark, in the order they run. To come after the launcher and runtime merge:
/// `("spawn", ..)` (benchmark 5: 16 shell teammates vs raw `tmux split-window`) and
/// `("footprint", ..)` (the idle-teammate half of benchmark 6: RSS and CPU over 10 s).
pub const BENCHMARKS: &[(&str, BenchFn)] = &[
    ("latency", latency),
    ("contention", contention),
    ("inbox-size", inbox_size),
    ("claims", claims),
    ("cold-send", cold_send),
];

/// Runs the benchmarks named in `args` (all when none) and prints each table as it completes.
pub fn run(args: BenchArgs, json: bool) -> Result<()> {
    let known: Vec<&str> = BENCHMARKS.iter().map(|(n, _)| *n).collect();
    for name in &args.names {
        if !known.contains(&name.as_str()) {
            return Err(Error::usage(format!(
                "unknown benchmark {name:?}; choose from {}",
                known.join(", ")
            )));
        }
    }
    let bench = Bench::new(&args)?;
    if cfg!(debug_assertions) {
        eprintln!("swarm bench: warning: this is a debug build; use scripts/bench (release) for numbers worth keeping");
    }
    for (name, f) in BENCHMARKS {
        if !args.names.is_empty() && !args.names.iter().any(|n| n == name) {
            continue;
        }
        eprintln!("swarm bench: running {name}...");
        let started = Instant::now();
        let section = f(&bench)?;
        eprintln!(
            "swarm bench: {name} took {:.0} s",
            started.elapsed().as_secs_f64()
        );
        if json {
            output::json_line(&section)?;
        } else {
            output::line(section.to_markdown())?;
        }
    }
    Ok(())
}

/// What every benchmark needs: the binary to re-run, a scratch directory, the sizes.
pub struct Bench {
    exe: PathBuf,
    scratch: Scratch,
    quick: bool,
    rng: AtomicU64,
}

/// The throwaway directory; removed on drop, even when a benchmark fails.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Bench {
    fn new(args: &BenchArgs) -> Result<Bench> {
        let exe = std::env::current_exe().map_err(Error::io("find", "the swarm executable"))?;
        let base = args.scratch.clone().unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!("swarm-bench-{}", std::process::id()));
        fsio::ensure_dir(&dir)?;
        Ok(Bench {
            exe,
            scratch: Scratch(dir),
            quick: args.quick,
            rng: AtomicU64::new(fsio::now_ms() ^ (u64::from(std::process::id()) << 32) | 1),
        })
    }

    /// `full` normally, `quick` with `--quick`.
    fn size(&self, full: u64, quick: u64) -> u64 {
        if self.quick {
            quick
        } else {
            full
        }
    }

    /// A uniform pseudo-random number in `lo..hi` (xorshift; only jitter and kill choices).
    fn random(&self, lo: u64, hi: u64) -> u64 {
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::Relaxed);
        lo + x % (hi - lo).max(1)
    }

    /// A fresh store under the scratch directory with team `bench` and the given teammates.
    fn team(&self, name: &str, members: &[&str]) -> Result<(Store, TeamName)> {
        let root = self.scratch.0.join(name);
        if root.exists() {
            std::fs::remove_dir_all(&root).map_err(Error::io("clear", &root))?;
        }
        let store = Store::new(root);
        let team: TeamName = "bench".parse()?;
        let roster = Roster::new(&store, &team);
        roster.create("benchmark", "/", "")?;
        for m in members {
            let agent: AgentName = m.parse()?;
            roster.add_member(Member::teammate(&team, &agent, "blue", "/"))?;
        }
        Ok((store, team))
    }

    /// `swarm --root R --team bench` with the caller's session variables removed. Its stderr is
    /// captured (a contended writer says "waiting for lock" now and then) and shown only if the
    /// worker fails.
    fn swarm(&self, store: &Store) -> Command {
        let mut cmd = Command::new(&self.exe);
        for var in [
            "SWARM_ROOT",
            "SWARM_TEAM",
            "SWARM_AGENT_NAME",
            "CLAUDE_CONFIG_DIR",
        ] {
            cmd.env_remove(var);
        }
        cmd.arg("--root")
            .arg(store.root())
            .args(["--team", "bench"])
            .stdin(Stdio::null())
            .stderr(Stdio::piped());
        cmd
    }
}

/// A worker process. Dropped before [`Worker::finish`] (a benchmark that fails halfway), it is
/// killed and reaped, so nothing is left running.
struct Worker(Option<Child>);

impl Worker {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("a running worker")
    }

    /// Waits for the worker and returns its stdout lines; a failed worker fails the benchmark.
    fn finish(mut self, what: &str) -> Result<Vec<String>> {
        let child = self.0.take().expect("a running worker");
        let out = child
            .wait_with_output()
            .map_err(Error::io("wait for", what))?;
        if !out.status.success() {
            return Err(Error::Command {
                program: what.to_string(),
                detail: format!(
                    "exited with {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn spawn(cmd: &mut Command) -> Result<Worker> {
    cmd.spawn()
        .map(|c| Worker(Some(c)))
        .map_err(|e| Error::Command {
            program: format!("{cmd:?}"),
            detail: e.to_string(),
        })
}

// ---------------------------------------------------------------------------------------------
// Results

/// One benchmark's result.
#[derive(Debug, Serialize)]
pub struct Section {
    pub name: &'static str,
    pub title: String,
    pub table: Table,
    pub notes: Vec<String>,
}

impl Section {
    pub fn to_markdown(&self) -> String {
        let mut out = format!("### {}\n\n{}", self.title, self.table.to_markdown());
        for note in &self.notes {
            out.push_str(&format!("\n- {note}"));
        }
        out.push('\n');
        out
    }
}

/// A table whose Markdown is also aligned for a terminal.
#[derive(Debug, Serialize)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: vec![],
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn to_markdown(&self) -> String {
        let cols = self.headers.len();
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                width[i] = width[i].max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let padded: Vec<String> = (0..cols)
                .map(|i| {
                    let cell = cells.get(i).map_or("", String::as_str);
                    format!("{cell:<w$}", w = width[i])
                })
                .collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let mut out = line(&self.headers);
        let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&format!("|-{}-|\n", rule.join("-|-")));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }
}

/// The value at quantile `q` of sorted `v` (nearest rank).
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Milliseconds with as many decimals as are meaningful.
fn fmt_ms(x: f64) -> String {
    if x.is_nan() {
        "-".into()
    } else if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

fn fmt_ratio(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x < 10.0 {
        format!("{x:.2}x")
    } else {
        format!("{x:.0}x")
    }
}

fn fmt_int(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The 1-minute load average now, as text: long runs print it at their start and end, because
/// other work on a shared machine moves the numbers and this shows when it did.
fn load_1m() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// Parses "WRITER:SEQ" message texts (see `commands::debug::message_text`).
fn writer_seq(text: &str) -> Option<(String, u64)> {
    let (w, s) = text.rsplit_once(':')?;
    Some((w.to_string(), s.parse().ok()?))
}

/// The texts of an inbox file's entries, read the way Claude Code reads (no lock).
fn inbox_texts(path: &Path) -> Vec<String> {
    claude_code::read(path)
        .iter()
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Delivery latency

/// Shared record of when a receiver first saw each message.
type Seen = Arc<Mutex<HashMap<u64, Instant>>>;

fn record(seen: &Seen, text: &str) {
    if let Some(seq) = text.strip_prefix("lat-").and_then(|s| s.parse().ok()) {
        seen.lock()
            .expect("no panics while held")
            .entry(seq)
            .or_insert_with(Instant::now);
    }
}

/// `swarm send` -> receivers waiting on the same inbox: `swarm inbox --follow` and Claude
/// Code's poll loop at 1000 ms and 500 ms, all watching one stream of messages at once. The
/// teammate runtime joins as a fourth receiver once it is on main (record its first sight of
/// each `lat-N` text into its own `Seen`, like the follower below).
fn latency(b: &Bench) -> Result<Section> {
    let n = b.size(1000, 30);
    let (store, team) = b.team("latency", &["coder"])?;
    let coder: AgentName = "coder".parse()?;
    let inbox = store.inbox_path(&team, &coder);

    // swarm's receiver: a real `swarm inbox --follow` process.
    let follower_seen: Seen = Arc::default();
    let warm = Arc::new(AtomicBool::new(false));
    let mut follower = spawn(
        b.swarm(&store)
            .args(["--json", "inbox", "coder", "--follow", "--unread"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )?;
    let follower_reader = {
        let stdout = follower.child().stdout.take().expect("piped");
        let (seen, warm) = (follower_seen.clone(), warm.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                let Ok(m) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let text = m["text"].as_str().unwrap_or_default();
                if text == "warm-up" {
                    warm.store(true, Ordering::SeqCst);
                }
                record(&seen, text);
            }
        })
    };
    let send = |text: &str| -> Result<()> {
        let child = spawn(
            b.swarm(&store)
                .args(["send", "--to", "coder", text])
                .stdout(Stdio::null()),
        )?;
        child.finish("swarm send").map(drop)
    };
    // The follower is watching once it has printed a message sent after it started.
    let warm_deadline = Instant::now() + Duration::from_secs(30);
    send("warm-up")?;
    while !warm.load(Ordering::SeqCst) {
        if Instant::now() > warm_deadline {
            return Err(Error::Backend(
                "swarm inbox --follow never printed the warm-up message".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }

    // Claude Code's receivers: read and parse the whole file every period, on a fixed rate,
    // starting at a random phase.
    let stop = Arc::new(AtomicBool::new(false));
    let mut pollers = Vec::new();
    let mut poll_seen = Vec::new();
    for period_ms in [1000u64, 500] {
        let seen: Seen = Arc::default();
        poll_seen.push((period_ms, seen.clone()));
        let (stop, inbox) = (stop.clone(), inbox.clone());
        let phase = Duration::from_millis(b.random(0, period_ms));
        pollers.push(std::thread::spawn(move || {
            let period = Duration::from_millis(period_ms);
            let mut next = Instant::now() + phase;
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                for m in claude_code::read(&inbox) {
                    record(&seen, m["text"].as_str().unwrap_or_default());
                }
                next += period;
            }
        }));
    }

    let mut sent: Vec<(Instant, Duration)> = Vec::with_capacity(n as usize);
    for seq in 0..n {
        let t0 = Instant::now();
        send(&format!("lat-{seq}"))?;
        sent.push((t0, t0.elapsed()));
        std::thread::sleep(Duration::from_millis(b.random(10, 40)));
    }
    // Let the slowest receiver catch up, then stop everyone.
    let all_seen = |s: &Seen| s.lock().expect("no panics while held").len() as u64 >= n;
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline
        && !(all_seen(&follower_seen) && poll_seen.iter().all(|(_, s)| all_seen(s)))
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::SeqCst);
    drop(follower);
    let _ = follower_reader.join();
    for p in pollers {
        let _ = p.join();
    }

    let latencies = |seen: &Seen| -> (Vec<f64>, u64) {
        let seen = seen.lock().expect("no panics while held");
        let mut v = Vec::new();
        let mut missed = 0;
        for (seq, (t0, _)) in sent.iter().enumerate() {
            match seen.get(&(seq as u64)) {
                Some(t) => v.push(ms(t.saturating_duration_since(*t0))),
                None => missed += 1,
            }
        }
        (sorted(v), missed)
    };
    let mut receivers = vec![(
        "swarm inbox --follow".to_string(),
        "inotify + 2 s rescan".to_string(),
        latencies(&follower_seen),
    )];
    for (period, seen) in &poll_seen {
        receivers.push((
            format!("Claude Code poll {period} ms"),
            format!("read every {period} ms"),
            latencies(seen),
        ));
    }
    let swarm_p50 = quantile(&receivers[0].2 .0, 0.5);
    let mut table = Table::new(&[
        "receiver",
        "wakes on",
        "p50 ms",
        "p99 ms",
        "max ms",
        "missed",
        "p50 vs swarm",
    ]);
    for (name, wakes, (v, missed)) in &receivers {
        table.row(vec![
            name.clone(),
            wakes.clone(),
            fmt_ms(quantile(v, 0.5)),
            fmt_ms(quantile(v, 0.99)),
            fmt_ms(v.last().copied().unwrap_or(f64::NAN)),
            missed.to_string(),
            fmt_ratio(quantile(v, 0.5) / swarm_p50),
        ]);
    }
    let send_wall = sorted(sent.iter().map(|(_, d)| ms(*d)).collect());
    Ok(Section {
        name: "latency",
        title: format!("1. Delivery latency: `swarm send` -> a waiting receiver, {n} messages"),
        table,
        notes: vec![
            "Latency runs from starting the `swarm send` process to the receiver having the message, so it includes the sender's own wall time (p50 ".to_string()
                + &fmt_ms(quantile(&send_wall, 0.5))
                + " ms, p99 "
                + &fmt_ms(quantile(&send_wall, 0.99))
                + " ms here). All three receivers watch the same messages in the same run; sends are 10-40 ms apart at random, so a poller's phase is uniformly distributed.",
            "A teammate runtime as the receiver (the other half of benchmark 1) is measured by `scripts/bench-runtime`: see BENCHMARKS-runtime.md.".into(),
        ],
    })
}

// ---------------------------------------------------------------------------------------------
// 2. Contention

#[derive(Clone, Copy, PartialEq)]
enum Impl {
    Swarm,
    ClaudeCode,
}

impl Impl {
    fn name(self) -> &'static str {
        match self {
            Impl::Swarm => "swarm",
            Impl::ClaudeCode => "Claude Code (re-implemented)",
        }
    }

    fn command(self) -> &'static str {
        match self {
            Impl::Swarm => "append",
            Impl::ClaudeCode => "cc-append",
        }
    }
}

/// Acknowledged and failed sequence numbers per writer, from `debug append` output.
#[derive(Default)]
struct Acks {
    acked: BTreeMap<String, Vec<u64>>,
    failed: u64,
}

impl Acks {
    fn add(&mut self, writer: &str, lines: &[String]) {
        for line in lines {
            if line.starts_with("fail ") {
                self.failed += 1;
            } else if let Some(seq) = line.split_whitespace().next().and_then(|s| s.parse().ok()) {
                self.acked.entry(writer.to_string()).or_default().push(seq);
            }
        }
    }

    fn count(&self) -> u64 {
        self.acked.values().map(|v| v.len() as u64).sum()
    }

    /// Acknowledged messages missing from `texts`, and messages present more than once.
    fn lost_and_duplicated(&self, texts: &[String]) -> (u64, u64) {
        let mut present: HashMap<(String, u64), u64> = HashMap::new();
        for t in texts {
            if let Some(k) = writer_seq(t) {
                *present.entry(k).or_default() += 1;
            }
        }
        let lost = self
            .acked
            .iter()
            .flat_map(|(w, seqs)| seqs.iter().map(move |s| (w.clone(), *s)))
            .filter(|k| !present.contains_key(k))
            .count() as u64;
        let duplicated = present.values().filter(|c| **c > 1).count() as u64;
        (lost, duplicated)
    }
}

/// Reads `path` every 2 ms until stopped; counts reads and reads that did not parse.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<(u64, u64)>,
}

impl Sampler {
    fn start(path: PathBuf) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let (mut reads, mut torn) = (0, 0);
            while !flag.load(Ordering::SeqCst) {
                if let Ok(bytes) = std::fs::read(&path) {
                    reads += 1;
                    if serde_json::from_slice::<Vec<Value>>(&bytes).is_err() {
                        torn += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            (reads, torn)
        });
        Sampler { stop, handle }
    }

    fn finish(self) -> (u64, u64) {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().unwrap_or_default()
    }
}

/// One implementation's contention run.
struct ContentionRun {
    imp: Impl,
    acked: u64,
    failed: u64,
    lost: u64,
    duplicated: u64,
    reads: u64,
    torn: u64,
    wall: Duration,
    load: String,
}

impl ContentionRun {
    fn rate(&self) -> f64 {
        self.acked as f64 / self.wall.as_secs_f64()
    }
}

/// 16 writer processes x 500 messages into one inbox, swarm's append against Claude Code's.
fn contention(b: &Bench) -> Result<Section> {
    let writers = b.size(16, 4);
    let per = b.size(500, 20);
    let mut results = Vec::new();
    for imp in [Impl::ClaudeCode, Impl::Swarm] {
        let (store, team) = b.team(&format!("contention-{}", imp.command()), &["coder"])?;
        let inbox = store.inbox_path(&team, &"coder".parse()?);
        let sampler = Sampler::start(inbox.clone());
        let load_start = load_1m();
        let started = Instant::now();
        let children = (0..writers)
            .map(|w| {
                spawn(
                    b.swarm(&store)
                        .args(["debug", imp.command(), "--to", "coder"])
                        .args(["--count", &per.to_string(), "--writer", &format!("w{w}")])
                        .stdout(Stdio::piped()),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let mut acks = Acks::default();
        for (w, child) in children.into_iter().enumerate() {
            let lines = child.finish(&format!("writer w{w}"))?;
            acks.add(&format!("w{w}"), &lines);
        }
        let wall = started.elapsed();
        let (reads, torn) = sampler.finish();
        let texts = inbox_texts(&inbox);
        let (lost, duplicated) = acks.lost_and_duplicated(&texts);
        results.push(ContentionRun {
            imp,
            acked: acks.count(),
            failed: acks.failed,
            lost,
            duplicated,
            reads,
            torn,
            wall,
            load: format!("{load_start} -> {}", load_1m()),
        });
    }
    let baseline_rate = results
        .iter()
        .find(|r| r.imp == Impl::ClaudeCode)
        .map_or(f64::NAN, ContentionRun::rate);
    let mut table = Table::new(&[
        "implementation",
        "delivered",
        "failed sends",
        "lost after ack",
        "duplicated",
        "torn reads / sampled",
        "wall s",
        "delivered/s",
        "vs Claude Code",
        "load 1m",
    ]);
    for r in &results {
        table.row(vec![
            r.imp.name().into(),
            fmt_int(r.acked),
            fmt_int(r.failed),
            r.lost.to_string(),
            r.duplicated.to_string(),
            format!("{} / {}", r.torn, r.reads),
            format!("{:.1}", r.wall.as_secs_f64()),
            format!("{:.0}", r.rate()),
            fmt_ratio(r.rate() / baseline_rate),
            r.load.clone(),
        ]);
    }
    Ok(Section {
        name: "contention",
        title: format!(
            "2. Contention: {writers} writer processes x {per} messages into one inbox"
        ),
        table,
        notes: vec![
            "Each writer is one process appending in a loop (`swarm debug append` = `Mailbox::send`, as `swarm send` does; `swarm debug cc-append` = Claude Code's append). Nobody reads the inbox, so it grows to every message and each append rewrites all of it, for both.".into(),
            "A failed send is Claude Code giving up after 11 lock attempts (about 0.66 s of backoff); the message is dropped and the sender told. swarm waits in a kernel queue instead (30 s limit). Lost after ack: acknowledged, yet absent from the final file.".into(),
            "Torn reads: a reader thread read the file every 2 ms during the run; a read that does not parse is what a Claude Code poller treats as an empty inbox.".into(),
            "The Claude Code run goes first; if the load average moved between the two (last column), so did the ratio.".into(),
        ],
    })
}

// ---------------------------------------------------------------------------------------------
// 3. Append cost vs inbox size

fn seed_inbox(path: &Path, count: u64, delivered: bool) -> Result<()> {
    let messages: Vec<InboxMessage> = (0..count)
        .map(|i| {
            let mut m = InboxMessage::new(
                "coder",
                format!("seed message {i}: the parser is done, tests pass, please review the diff"),
            );
            m.read = delivered;
            m
        })
        .collect();
    fsio::write_json(path, &messages)
}

/// Appends into inboxes that already hold 100 or 10,000 delivered messages.
fn inbox_size(b: &Bench) -> Result<Section> {
    let small = b.size(100, 10);
    let large = b.size(10_000, 300);
    let appends = b.size(100, 5);
    let cases = [
        (Impl::Swarm, small, true),
        (Impl::Swarm, large, true),
        (Impl::Swarm, large, false),
        (Impl::ClaudeCode, small, true),
        (Impl::ClaudeCode, large, true),
    ];
    let mut results = Vec::new();
    for (i, (imp, present, delivered)) in cases.into_iter().enumerate() {
        let (store, team) = b.team(&format!("inbox-size-{i}"), &["coder"])?;
        let coder: AgentName = "coder".parse()?;
        let inbox = store.inbox_path(&team, &coder);
        seed_inbox(&inbox, present, delivered)?;
        let child = spawn(
            b.swarm(&store)
                .args(["debug", imp.command(), "--to", "coder", "--timings"])
                .args(["--count", &appends.to_string()])
                .stdout(Stdio::piped()),
        )?;
        let lines = child.finish("the appending writer")?;
        let micros: Vec<f64> = lines
            .iter()
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .collect();
        if micros.len() as u64 != appends {
            return Err(Error::Backend(format!(
                "expected {appends} timed appends, got {}",
                micros.len()
            )));
        }
        let first = micros[0] / 1000.0;
        let rest = sorted(micros[1..].iter().map(|u| u / 1000.0).collect());
        let live = std::fs::metadata(&inbox).map(|m| m.len()).unwrap_or(0);
        let entries = claude_code::read(&inbox).len() as u64;
        let archived = std::fs::read(store.archive_path(&team, &coder))
            .map(|b| b.iter().filter(|c| **c == b'\n').count() as u64)
            .unwrap_or(0);
        results.push((
            imp, present, delivered, first, rest, entries, live, archived,
        ));
    }
    let mut table = Table::new(&[
        "implementation",
        "already in inbox",
        "first append ms",
        "median ms (rest)",
        "p99 ms (rest)",
        "live file after",
        "archived",
        "median vs 100 present",
    ]);
    let median_small = |imp: Impl| {
        results
            .iter()
            .find(|r| r.0 == imp && r.1 == small)
            .map_or(f64::NAN, |r| quantile(&r.4, 0.5))
    };
    for (imp, present, delivered, first, rest, entries, live, archived) in &results {
        table.row(vec![
            imp.name().into(),
            format!(
                "{} {}",
                fmt_int(*present),
                if *delivered {
                    "delivered"
                } else {
                    "undelivered"
                }
            ),
            fmt_ms(*first),
            fmt_ms(quantile(rest, 0.5)),
            fmt_ms(quantile(rest, 0.99)),
            format!("{} entries, {} KB", fmt_int(*entries), live / 1024),
            fmt_int(*archived),
            fmt_ratio(quantile(rest, 0.5) / median_small(*imp)),
        ]);
    }
    Ok(Section {
        name: "inbox-size",
        title: format!(
            "3. Append cost vs inbox size: {appends} sequential appends by one process"
        ),
        table,
        notes: vec![
            format!("swarm keeps at most {} delivered messages in the live file and moves older ones to `<agent>.archive.jsonl`. So the first append to an inbox seeded with {} delivered messages pays once for archiving the surplus (the `first append` column), and every later append works on a file of about {} entries: the steady state does not depend on how much history there is.", crate::store::mailbox::KEEP_DELIVERED, fmt_int(large), crate::store::mailbox::KEEP_DELIVERED),
            "Undelivered messages are never archived (nothing may be lost), so a recipient that stops reading makes swarm's appends grow like Claude Code's; the `undelivered` row shows that case.".into(),
            "The Claude Code baseline keeps every entry in the file (as the brief specifies; PROTOCOL.md notes that real Claude Code deletes entries it has delivered, which would keep its file small too, at the price of losing them). swarm's appends fsync the file and its directory; Claude Code's `writeFileSync` does not, which is most of the remaining difference at small sizes.".into(),
        ],
    })
}

// ---------------------------------------------------------------------------------------------
// 4. Claims

fn seed_tasks(store: &Store, team: &TeamName, n: u64) -> Result<()> {
    let dir = store.tasks_dir(team);
    fsio::ensure_dir(&dir)?;
    for i in 1..=n {
        let task = Task {
            id: TaskId::new(i),
            subject: format!("task {i}"),
            description: "benchmark task".into(),
            active_form: None,
            owner: None,
            status: TaskStatus::Pending,
            blocks: vec![],
            blocked_by: vec![],
            metadata: serde_json::Map::new(),
            extra: serde_json::Map::new(),
        };
        let path = store.task_path(team, &task.id);
        let bytes = serde_json::to_vec_pretty(&task).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        std::fs::write(&path, bytes).map_err(Error::io("write", &path))?;
    }
    Ok(())
}

/// Claimer processes over one task list: claims/s, and each task claimed exactly once.
fn claims(b: &Bench) -> Result<Section> {
    let tasks = b.size(2000, 40);
    let many = b.size(16, 4);
    // The single claimer stops after a tenth of the list: with the busy check every claim reads
    // the whole list, so its rate depends on the list's size, not on how far it got.
    let single = tasks / 10;
    let cases = [(1, true, single), (many, true, tasks), (many, false, tasks)];
    let mut results = Vec::new();
    for (i, (claimers, busy_check, claims)) in cases.into_iter().enumerate() {
        let (store, team) = b.team(&format!("claims-{i}"), &[])?;
        seed_tasks(&store, &team, tasks)?;
        let load_start = load_1m();
        let started = Instant::now();
        let children = (0..claimers)
            .map(|c| {
                let mut cmd = b.swarm(&store);
                cmd.args(["debug", "claim-loop", "--agent", &format!("c{c}")])
                    .stdout(Stdio::piped());
                if !busy_check {
                    cmd.arg("--no-busy-check");
                }
                if claims < tasks {
                    cmd.args(["--max", &claims.to_string()]);
                }
                spawn(&mut cmd)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut claimed: HashMap<u64, Vec<String>> = HashMap::new();
        for (c, child) in children.into_iter().enumerate() {
            for line in child.finish(&format!("claimer c{c}"))? {
                let id: u64 = line.trim().parse().map_err(|_| {
                    Error::Backend(format!("claimer c{c} printed {line:?}, not a task id"))
                })?;
                claimed.entry(id).or_default().push(format!("c{c}"));
            }
        }
        let wall = started.elapsed();
        // Exactly once: every claimed id claimed by one claimer, and the file agrees on owner and
        // status; the ids claimed are the lowest ones, and every other task is still pending.
        let mut exactly_once = claimed.len() as u64 == claims;
        for id in 1..=tasks {
            let by = claimed.get(&id).map_or(&[][..], Vec::as_slice);
            let file: Option<Task> = fsio::read_json(&store.task_path(&team, &TaskId::new(id)))?;
            let agrees = file.is_some_and(|t| {
                if id <= claims {
                    t.status == TaskStatus::Completed
                        && by.len() == 1
                        && t.owner.as_ref() == by.first()
                } else {
                    t.status == TaskStatus::Pending && by.is_empty()
                }
            });
            exactly_once &= agrees;
        }
        let winners = claimed
            .values()
            .flatten()
            .collect::<std::collections::HashSet<_>>()
            .len();
        let load = format!("{load_start} -> {}", load_1m());
        results.push((
            claimers,
            busy_check,
            claims,
            wall,
            exactly_once,
            winners,
            load,
        ));
    }
    let rate = |claims: u64, wall: &Duration| claims as f64 / wall.as_secs_f64();
    let baseline = rate(results[0].2, &results[0].3);
    let mut table = Table::new(&[
        "claimer processes",
        "busy check",
        "claims",
        "wall s",
        "claims/s",
        "exactly once",
        "claimers that won",
        "vs 1 claimer",
        "load 1m",
    ]);
    for (claimers, busy, claims, wall, once, winners, load) in &results {
        table.row(vec![
            claimers.to_string(),
            if *busy { "yes" } else { "no" }.into(),
            fmt_int(*claims),
            format!("{:.1}", wall.as_secs_f64()),
            format!("{:.0}", rate(*claims, wall)),
            if *once { "yes" } else { "NO" }.into(),
            winners.to_string(),
            fmt_ratio(rate(*claims, wall) / baseline),
            load.clone(),
        ]);
    }
    Ok(Section {
        name: "claims",
        title: format!("4. Claims: claimer processes over {} tasks", fmt_int(tasks)),
        table,
        notes: vec![
            "Each claimer is `swarm debug claim-loop`: `TaskList::claim_next` (what `swarm task next --claim` does), print the id, mark it completed, repeat until nothing is available. With the busy check (the default, as in Claude Code) every claim also takes the list lock. Exactly once: every task id printed by exactly one claimer, and its file completed and owned by that claimer.".into(),
            format!("The baseline is one claimer process on the same {}-task list in the same run, stopped after {} claims: with the busy check each claim reads every task file, so the rate depends on the list's size, not on progress.", fmt_int(tasks), fmt_int(single)),
            "With the busy check, claims serialize on the list lock and each one reads the whole list under it, so 16 claimers go no faster than one (Claude Code has the same design). Without it, claimers only contend per task and the scan stops at the first claimable task.".into(),
        ],
    })
}

// ---------------------------------------------------------------------------------------------
// 6 (half). Cold `swarm send`

/// Wall time of a cold `swarm send` process, against spawning `/bin/true`.
fn cold_send(b: &Bench) -> Result<Section> {
    let runs = b.size(200, 10);
    let (store, _team) = b.team("cold-send", &["coder"])?;
    let time = |mut cmd: Command| -> Result<Vec<f64>> {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let mut v = Vec::with_capacity(runs as usize);
        for _ in 0..runs {
            let t0 = Instant::now();
            let status = cmd.status().map_err(Error::io("run", format!("{cmd:?}")))?;
            v.push(ms(t0.elapsed()));
            if !status.success() {
                return Err(Error::Command {
                    program: format!("{cmd:?}"),
                    detail: format!("exited with {status}"),
                });
            }
        }
        Ok(sorted(v))
    };
    let true_bin = if Path::new("/bin/true").exists() {
        "/bin/true"
    } else {
        "true"
    };
    let mut version = Command::new(&b.exe);
    version.arg("--version");
    let mut send = b.swarm(&store);
    send.args(["send", "--to", "coder", "a cold send"]);
    let results = [
        ("/bin/true", time(Command::new(true_bin))?),
        ("swarm --version", time(version)?),
        ("swarm send --to coder TEXT", time(send)?),
    ];
    let base = quantile(&results[0].1, 0.5);
    let mut table = Table::new(&["command", "p50 ms", "p99 ms", "max ms", "p50 vs /bin/true"]);
    for (name, v) in &results {
        table.row(vec![
            name.to_string(),
            fmt_ms(quantile(v, 0.5)),
            fmt_ms(quantile(v, 0.99)),
            fmt_ms(v.last().copied().unwrap_or(f64::NAN)),
            fmt_ratio(quantile(v, 0.5) / base),
        ]);
    }
    Ok(Section {
        name: "cold-send",
        title: format!("6. Cold start: {runs} sequential runs of each command (release binary)"),
        table,
        notes: vec![
            "`swarm send` reads the roster, takes the inbox lock, rewrites the inbox and fsyncs the file and its directory; the inbox grows to the number of runs. `swarm --version` is process start-up alone.".into(),
            "The idle-teammate half of benchmark 6 (RSS and CPU of `swarm teammate` over 10 s) is in BENCHMARKS-runtime.md (`scripts/bench-runtime`).".into(),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_aligned_markdown() {
        let mut t = Table::new(&["a", "long header"]);
        t.row(vec!["wide cell".into(), "1".into()]);
        assert_eq!(
            t.to_markdown(),
            "| a         | long header |\n|-----------|-------------|\n| wide cell | 1           |\n"
        );
    }

    #[test]
    fn quantiles_use_the_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
    }

    #[test]
    fn lost_and_duplicated_are_counted_against_acks() {
        let mut acks = Acks::default();
        acks.add(
            "w0",
            &["0".into(), "1".into(), "fail 2".into(), "3 120".into()],
        );
        let texts: Vec<String> = ["w0:0", "w0:1", "w0:1", "other"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(acks.count(), 3);
        assert_eq!(acks.failed, 1);
        assert_eq!(acks.lost_and_duplicated(&texts), (1, 1));
    }

    #[test]
    fn thousands_get_separators() {
        assert_eq!(fmt_int(7), "7");
        assert_eq!(fmt_int(10_000), "10,000");
        assert_eq!(fmt_int(1_234_567), "1,234,567");
    }
}
