//! Writers killed at random: sixteen `swarm debug append` processes append to one inbox while one
//! of them is SIGKILLed every 50 ms and restarted from its last acknowledged number, and a real
//! consumer reads along. Appends are group-committed, so a kill lands on senders waiting with an
//! entry in the spool as often as on the holder in the middle of taking the spool in; a second
//! run kills three times as often to hit holders mid-commit more. No acknowledged message may be lost or stored more often than the kills
//! allow, and every read of the live file must parse. The same harness with locking switched off
//! must report loss, which proves it can see loss at all.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{read_json_array, Rng};
use crate::support::*;

/// "w3:17" -> (3, 17)
fn writer_seq(text: &str) -> Option<(usize, u64)> {
    let (w, s) = text.strip_prefix('w')?.split_once(':')?;
    Some((w.parse().ok()?, s.parse().ok()?))
}

/// Writer processes (`swarm debug append`, which prints each sequence number only after its
/// append returned) appending to one inbox, while a random one is SIGKILLed every
/// `kill_every` and restarted from its last acknowledged number plus one. A real consumer
/// (`swarm inbox --follow --mark-read`) reads along, which keeps the live file small (delivered
/// messages move to the archive) and proves delivery end to end.
struct Writers {
    count: usize,
    messages: u64,
    kill_every: Duration,
    no_lock: bool,
}

/// What the harness saw. "Duplicated" is defined by the ack protocol: a writer killed after its
/// append but before printing the ack is restarted at that same number, so that one in-flight
/// message per kill may be stored twice (two different msg_ids); any copy beyond that is a
/// duplicate. Copies with the same msg_id (an archive write followed by a crash) are one message.
#[derive(Debug, Default)]
struct WriterReport {
    kills: usize,
    lost: Vec<(usize, u64)>,
    /// (writer, seq, distinct copies, copies allowed by the kills)
    over_duplicated: Vec<(usize, u64, usize, usize)>,
    resent_in_flight: usize,
    reads: usize,
    unparseable_reads: Vec<String>,
    unseen_by_consumer: usize,
}

struct Slot {
    child: Child,
    reader: Option<std::thread::JoinHandle<()>>,
    acks: Arc<Mutex<Vec<u64>>>,
    /// The first unacknowledged number at each kill: the one message that may be in flight.
    in_flight: Vec<u64>,
    done: bool,
    stderr: PathBuf,
}

impl Writers {
    fn spawn(&self, env: &Env, w: usize, start: u64, stderr: &Path) -> Child {
        let mut args = vec![
            "debug".to_string(),
            "append".into(),
            "--to".into(),
            "coder".into(),
            "--writer".into(),
            format!("w{w}"),
            "--start".into(),
            start.to_string(),
            "--count".into(),
            (self.messages - start).to_string(),
        ];
        if self.no_lock {
            args.push("--no-lock".into());
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(stderr)
            .unwrap();
        let mut cmd = env.swarm(args).cmd;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("spawn writer")
    }

    /// Starts writer `w` at `start`; its acks are appended to `acks` as they are printed.
    fn start(
        &self,
        env: &Env,
        w: usize,
        start: u64,
        stderr: &Path,
        acks: &Arc<Mutex<Vec<u64>>>,
    ) -> (Child, std::thread::JoinHandle<()>) {
        let mut child = self.spawn(env, w, start, stderr);
        let stdout = child.stdout.take().unwrap();
        let acks = acks.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                acks.lock()
                    .unwrap()
                    .push(line.trim().parse().expect("a sequence number"));
            }
        });
        (child, reader)
    }

    fn run(&self, test: &str) -> WriterReport {
        let env = Env::with_team(&["coder"]);
        let inbox = env.path("teams/t/inboxes/coder.json");
        let archive = env.path("teams/t/inboxes/coder.archive.jsonl");
        let logs = tempfile::tempdir().unwrap();
        let mut rng = Rng::new(test);
        let mut report = WriterReport::default();

        // The consumer prints each message once and marks it delivered.
        let seen: Arc<Mutex<HashSet<(usize, u64)>>> = Arc::default();
        let mut consumer = env
            .swarm([
                "--json",
                "inbox",
                "coder",
                "--follow",
                "--unread",
                "--mark-read",
            ])
            .spawn();
        let consumer_out = consumer.stdout.take().unwrap();
        let consumer_err = drain(consumer.stderr.take());
        let consumer = KillOnDrop(consumer);
        let consumer_reader = {
            let seen = seen.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(consumer_out).lines().map_while(|l| l.ok()) {
                    let m: Value = serde_json::from_str(&line).expect("the consumer prints JSON");
                    if let Some(k) = writer_seq(m["text"].as_str().unwrap_or_default()) {
                        seen.lock().unwrap().insert(k);
                    }
                }
            })
        };

        // Every read of the live inbox taken during the run must parse.
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (stop, inbox) = (stop.clone(), inbox.clone());
            std::thread::spawn(move || {
                let (mut reads, mut bad) = (0, Vec::new());
                while !stop.load(Ordering::SeqCst) {
                    if let Ok(bytes) = std::fs::read(&inbox) {
                        reads += 1;
                        if serde_json::from_slice::<Vec<Value>>(&bytes).is_err() {
                            bad.push(
                                String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into(),
                            );
                        }
                    }
                    std::thread::sleep(Duration::from_millis(3));
                }
                (reads, bad)
            })
        };

        let mut slots: Vec<Slot> = (0..self.count)
            .map(|w| {
                let acks = Arc::default();
                let stderr = logs.path().join(format!("w{w}.stderr"));
                let (child, reader) = self.start(&env, w, 0, &stderr, &acks);
                Slot {
                    child,
                    reader: Some(reader),
                    acks,
                    in_flight: vec![],
                    done: false,
                    stderr,
                }
            })
            .collect();
        let next_seq = |slot: &Slot| slot.acks.lock().unwrap().last().map_or(0, |a| a + 1);

        let deadline = Instant::now() + Duration::from_secs(600);
        let mut next_kill = Instant::now() + self.kill_every;
        loop {
            let mut running = Vec::new();
            for (w, slot) in slots.iter_mut().enumerate() {
                if slot.done {
                    continue;
                }
                match slot.child.try_wait().unwrap() {
                    Some(status) => {
                        slot.reader.take().unwrap().join().unwrap();
                        let log = std::fs::read_to_string(&slot.stderr).unwrap_or_default();
                        assert!(status.success(), "writer w{w} failed: {status}\n{log}");
                        assert_eq!(next_seq(slot), self.messages, "writer w{w} stopped early");
                        slot.done = true;
                    }
                    None => running.push(w),
                }
            }
            if running.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the writers did not finish in 10 minutes"
            );
            if Instant::now() >= next_kill {
                let w = running[rng.below(running.len() as u64) as usize];
                let slot = &mut slots[w];
                slot.child.kill().unwrap();
                slot.child.wait().unwrap();
                slot.reader.take().unwrap().join().unwrap();
                report.kills += 1;
                let next = next_seq(slot);
                if next < self.messages {
                    slot.in_flight.push(next);
                    let (child, reader) = self.start(&env, w, next, &slot.stderr, &slot.acks);
                    slot.child = child;
                    slot.reader = Some(reader);
                } else {
                    slot.done = true; // killed after its last ack, before it exited
                }
                next_kill += self.kill_every;
            }
            std::thread::sleep(Duration::from_millis(5));
        }

        // Each writer acknowledged every number exactly once, in order.
        for (w, slot) in slots.iter().enumerate() {
            let acks = slot.acks.lock().unwrap();
            assert!(
                acks.iter().copied().eq(0..self.messages),
                "writer w{w} acks are not 0..{}: {acks:?}",
                self.messages
            );
        }
        let acked: HashSet<(usize, u64)> = (0..self.count)
            .flat_map(|w| (0..self.messages).map(move |s| (w, s)))
            .collect();

        // Let the consumer catch up (with locking on it must see everything), then let it go
        // idle before it is killed.
        let patience = if self.no_lock { 5 } else { 120 };
        let until = Instant::now() + Duration::from_secs(patience);
        while Instant::now() < until && seen.lock().unwrap().len() < acked.len() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let until = Instant::now() + Duration::from_secs(patience);
        while Instant::now() < until {
            let live: Vec<Value> = read_json_array(&inbox);
            if live.iter().all(|m| m["read"] == true) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(consumer);
        consumer_reader.join().unwrap();
        let consumer_err = consumer_err.join().unwrap();
        stop.store(true, Ordering::SeqCst);
        let (reads, bad) = sampler.join().unwrap();
        report.reads = reads;
        report.unparseable_reads = bad;
        report.unseen_by_consumer = acked.difference(&seen.lock().unwrap()).count();
        if report.unseen_by_consumer > 0 && !self.no_lock {
            eprintln!("consumer stderr:\n{consumer_err}");
        }

        // Everything stored: the live file and the archive.
        let mut entries = read_json_array(&inbox);
        if let Ok(text) = std::fs::read_to_string(&archive) {
            for line in text.lines() {
                entries.push(serde_json::from_str(line).expect("archive lines parse"));
            }
        }
        let mut copies: HashMap<(usize, u64), HashSet<String>> = HashMap::new();
        for e in &entries {
            if let Some(k) = writer_seq(e["text"].as_str().unwrap_or_default()) {
                assert!(acked.contains(&k), "a message nobody sent: {k:?}");
                copies
                    .entry(k)
                    .or_default()
                    .insert(e["msg_id"].as_str().unwrap().to_string());
            }
        }
        let mut lost: Vec<(usize, u64)> = acked
            .iter()
            .filter(|k| !copies.contains_key(k))
            .copied()
            .collect();
        lost.sort();
        report.lost = lost;
        for (&(w, seq), ids) in &copies {
            let allowed = 1 + slots[w].in_flight.iter().filter(|s| **s == seq).count();
            if ids.len() > allowed {
                report.over_duplicated.push((w, seq, ids.len(), allowed));
            }
            report.resent_in_flight += ids.len() - 1;
        }
        eprintln!(
            "{test}: {} writers x {} messages, {} kills, {} in-flight messages stored twice, {} lost, {} reads sampled",
            self.count, self.messages, report.kills, report.resent_in_flight, report.lost.len(), report.reads
        );
        report
    }
}

/// Issue 5 asks for 16 x 1,000. A debug build on two cores stores about 75 messages a second
/// under this kill rate, so the suite runs 16 x 150 (about 30 s, 600 kills);
/// `SWARM_FAULT_MESSAGES=1000 cargo test sixteen_writers` runs the full size.
fn messages_per_writer() -> u64 {
    std::env::var("SWARM_FAULT_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150)
}

#[test]
fn sixteen_writers_killed_at_random_lose_no_acknowledged_message() {
    let report = Writers {
        count: 16,
        messages: messages_per_writer(),
        kill_every: Duration::from_millis(50),
        no_lock: false,
    }
    .run("writers");
    assert!(report.kills >= 10, "the harness killed writers: {report:?}");
    assert!(report.reads >= 50, "the inbox was sampled: {report:?}");
    assert_eq!(report.lost, vec![], "acknowledged messages lost");
    assert_eq!(
        report.over_duplicated,
        vec![],
        "duplicates beyond one per kill"
    );
    assert_eq!(report.unparseable_reads, Vec::<String>::new());
    assert_eq!(
        report.unseen_by_consumer, 0,
        "the consumer saw every message"
    );
}

/// Group-commit holders killed mid-commit (between reading the spool, writing the inbox, noting
/// the sidecar and removing the spool files): fewer writers, killed every 15 ms.
#[test]
fn holders_killed_mid_commit_lose_and_duplicate_nothing() {
    let report = Writers {
        count: 8,
        messages: 50,
        kill_every: Duration::from_millis(15),
        no_lock: false,
    }
    .run("holders killed mid-commit");
    assert!(report.kills >= 10, "the harness killed writers: {report:?}");
    assert_eq!(report.lost, vec![], "acknowledged messages lost");
    assert_eq!(
        report.over_duplicated,
        vec![],
        "duplicates beyond one per kill"
    );
    assert_eq!(report.unparseable_reads, Vec::<String>::new());
    assert_eq!(
        report.unseen_by_consumer, 0,
        "the consumer saw every message"
    );
}

/// Proof that the harness can fail: with the lock switched off (on the debug writer only) the
/// very same run must report lost messages.
#[test]
fn without_the_lock_the_same_harness_reports_lost_messages() {
    let report = Writers {
        count: 16,
        messages: 40,
        kill_every: Duration::from_millis(50),
        no_lock: true,
    }
    .run("writers without lock");
    assert!(
        !report.lost.is_empty(),
        "unlocked writers lost nothing, so the harness cannot see loss: {report:?}"
    );
}
