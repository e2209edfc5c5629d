//! Benchmark 2, contention: 16 writer processes appending 500 messages each into one inbox:
//! swarm's group commit, swarm's append from before it (one locked rewrite per message, kept in
//! `baseline.rs`), and Claude Code's `mkdir` lock that gives up after 11 tries, all
//! in one run. Then the realistic case, the two swarm appends again while a reader (`swarm inbox
//! --follow --mark-read`) marks messages delivered as they arrive. It counts what the claims
//! are about (sends that failed, messages lost after their ack, duplicates, torn reads seen by
//! a concurrent reader) as well as the rate.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use swarm::{claude_code, Result, Store};

use crate::cli::Impl;
use crate::harness::{load_1m, Bench};
use crate::report::{fmt_int, fmt_ratio, Section, Table};
use crate::worker::{spawn, writer_seq, Worker};

/// The texts of an inbox file's entries, read the way Claude Code reads (no lock), and of its
/// archive (where a reader's delivered messages go).
fn inbox_texts(path: &Path, archive: &Path) -> Vec<String> {
    let mut entries = claude_code::read(path);
    if let Ok(text) = std::fs::read_to_string(archive) {
        entries.extend(text.lines().filter_map(|l| serde_json::from_str(l).ok()));
    }
    entries
        .iter()
        .filter_map(|m| m["text"].as_str().map(str::to_string))
        .collect()
}

/// A `swarm inbox --follow --unread --mark-read` process reading along; counts what it printed.
struct Reader {
    worker: Worker,
    printed: std::thread::JoinHandle<u64>,
}

impl Reader {
    fn start(b: &Bench, store: &Store) -> Result<Reader> {
        let mut worker = spawn(
            b.swarm(store)
                .args([
                    "--json",
                    "inbox",
                    "coder",
                    "--follow",
                    "--unread",
                    "--mark-read",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        )?;
        let stdout = worker.child().stdout.take().expect("piped");
        let printed = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(|l| l.ok())
                .filter(|l| serde_json::from_str::<Value>(l).is_ok())
                .count() as u64
        });
        Ok(Reader { worker, printed })
    }

    /// Lets the reader catch up (everything in the live file marked), then stops it; returns
    /// how many messages it printed.
    fn finish(self, inbox: &Path) -> u64 {
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until && !claude_code::read(inbox).iter().all(|m| m["read"] == true)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(self.worker);
        self.printed.join().unwrap_or_default()
    }
}

/// Acknowledged and failed sequence numbers per writer, from `worker append` output.
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
    /// Messages the reader printed, if one read along.
    read: Option<u64>,
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

/// `writers` processes x `per` messages into one inbox with `imp`, a reader along if `reader`.
fn run(b: &Bench, imp: Impl, reader: bool, writers: u64, per: u64) -> Result<ContentionRun> {
    let name = format!(
        "contention-{}{}",
        imp.slug(),
        if reader { "-read" } else { "" }
    );
    let (store, team) = b.team(&name, &["coder"])?;
    let coder = "coder".parse()?;
    let inbox = store.inbox_path(&team, &coder);
    let archive = store.archive_path(&team, &coder);
    let reader = reader.then(|| Reader::start(b, &store)).transpose()?;
    let sampler = Sampler::start(inbox.clone());
    let load_start = load_1m();
    let started = Instant::now();
    let children = (0..writers)
        .map(|w| {
            spawn(
                b.worker(&store)
                    .args(imp.args())
                    .args(["--to", "coder"])
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
    let load = format!("{load_start} -> {}", load_1m());
    let (reads, torn) = sampler.finish();
    let read = reader.map(|r| r.finish(&inbox));
    let (lost, duplicated) = acks.lost_and_duplicated(&inbox_texts(&inbox, &archive));
    Ok(ContentionRun {
        imp,
        read,
        acked: acks.count(),
        failed: acks.failed,
        lost,
        duplicated,
        reads,
        torn,
        wall,
        load,
    })
}

/// 16 writer processes x 500 messages into one inbox: swarm's group commit against swarm's
/// append before it and Claude Code's, then the two swarm appends with a reader along.
pub(crate) fn contention(b: &Bench) -> Result<Section> {
    let writers = b.size(16, 4);
    let per = b.size(500, 20);
    let mut results = Vec::new();
    for (imp, reader) in [
        (Impl::ClaudeCode, false),
        (Impl::SwarmBaseline, false),
        (Impl::Swarm, false),
        (Impl::SwarmBaseline, true),
        (Impl::Swarm, true),
    ] {
        eprintln!(
            "swarm-bench: contention, {}{}",
            imp.name(),
            if reader { ", with a reader" } else { "" }
        );
        results.push(run(b, imp, reader, writers, per)?);
    }
    let rate_of = |imp: Impl, reader: bool| {
        results
            .iter()
            .find(|r| r.imp == imp && r.read.is_some() == reader)
            .map_or(f64::NAN, ContentionRun::rate)
    };
    let mut table = Table::new(&[
        "implementation",
        "reader",
        "delivered",
        "failed sends",
        "lost after ack",
        "duplicated",
        "torn reads / sampled",
        "wall s",
        "delivered/s",
        "vs before group commit",
        "vs Claude Code",
        "load 1m",
    ]);
    for r in &results {
        table.row(vec![
            r.imp.name().into(),
            r.read.map_or("none".into(), |n| {
                format!("marks delivered ({} seen)", fmt_int(n))
            }),
            fmt_int(r.acked),
            fmt_int(r.failed),
            r.lost.to_string(),
            r.duplicated.to_string(),
            format!("{} / {}", r.torn, r.reads),
            format!("{:.1}", r.wall.as_secs_f64()),
            format!("{:.0}", r.rate()),
            fmt_ratio(r.rate() / rate_of(Impl::SwarmBaseline, r.read.is_some())),
            fmt_ratio(r.rate() / rate_of(Impl::ClaudeCode, false)),
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
            "Each writer is one process appending in a loop (`swarm-bench worker append --impl IMPL`): `swarm` = `Mailbox::send`, as `swarm send` does (the group commit: a sender that meets a busy lock spools its entry and the holder takes every spooled entry in with one rewrite and one fsync); `before-group-commit` = swarm's append before the group commit (each message its own locked rewrite and fsync); `claude-code` = Claude Code's append.".into(),
            "Without a reader nobody reads the inbox, so it grows to every message and each rewrite copies all of it. With a reader, `swarm inbox --follow --mark-read` marks messages delivered as they arrive (the realistic case): the live file stays small (delivered messages beyond 100 move to the archive), and the reader takes the same lock.".into(),
            "A failed send is Claude Code giving up after 11 lock attempts (about 0.66 s of backoff); the message is dropped and the sender told. swarm waits instead (30 s limit). Lost after ack: acknowledged, yet absent from the final file and its archive.".into(),
            "Torn reads: a reader thread read the file every 2 ms during the run; a read that does not parse is what a Claude Code poller treats as an empty inbox.".into(),
            "The runs go one after the other in the order shown; if the load average moved between them (last column), so did the ratios.".into(),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
