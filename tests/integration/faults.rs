//! The fault suite (issue 5): the store under SIGKILL, a full disk, an event storm, and bad input.
//!
//! Every test drives real `swarm` processes on real files, because every claim here is about
//! processes: a writer killed between its write and its acknowledgement, a decider killed
//! between two files, a watcher whose kernel queue overflowed. Each test can fail: the writer
//! harness runs a second time with locking switched off and must then report loss. Random
//! choices print their seed; `SWARM_FAULT_SEED=N cargo test faults` replays them. Sizes are set
//! for CI on two cores; where a size is below the issue's, its constant says so.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::support::*;

// ---------------------------------------------------------------------------------------------
// Helpers

/// xorshift, seeded from the clock or `SWARM_FAULT_SEED`; the seed is printed.
struct Rng(u64);

impl Rng {
    fn new(test: &str) -> Rng {
        let seed = std::env::var("SWARM_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{test}: SWARM_FAULT_SEED={seed}");
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn millis(&mut self, max: u64) -> Duration {
        Duration::from_millis(self.below(max))
    }
}

/// Kills (SIGKILL, which also ends a stopped process) and reaps the child on drop.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// Waits for `child` (stdout and stderr piped, or already taken), failing the test if it runs
/// longer than `limit`: a command that blocks on a FIFO must show up as a failure, not a hang.
#[track_caller]
fn wait_bounded(mut child: Child, limit: Duration, what: &str) -> Out {
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Out {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs a command with a hang guard.
#[track_caller]
fn run_bounded(swarm: Swarm, what: &str) -> Out {
    wait_bounded(swarm.spawn(), Duration::from_secs(30), what)
}

fn files_named(dir: &Path, pattern: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.file_name().unwrap().to_string_lossy().contains(pattern))
                .collect()
        })
        .unwrap_or_default()
}

/// "w3:17" -> (3, 17)
fn writer_seq(text: &str) -> Option<(usize, u64)> {
    let (w, s) = text.strip_prefix('w')?.split_once(':')?;
    Some((w.parse().ok()?, s.parse().ok()?))
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

// ---------------------------------------------------------------------------------------------
// Writers killed at random

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

fn read_json_array(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
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

// ---------------------------------------------------------------------------------------------
// Permission requests with kills on both sides

const REQUESTS: usize = 200;

struct Outcome {
    description: String,
    id: String,
    waiter: Out,
    requester_killed: bool,
    deciders_killed: usize,
}

/// The request whose description is `description`, pending or resolved.
fn find_request(env: &Env, description: &str) -> Option<String> {
    for dir in ["pending", "resolved"] {
        for path in files_named(&env.path(&format!("teams/t/permissions/{dir}")), ".json") {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            // Deciders in other threads remove pending files meanwhile.
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let record: Value = serde_json::from_slice(&bytes).expect("written atomically");
            if record["description"] == description {
                return Some(record["id"].as_str().unwrap().to_string());
            }
        }
    }
    None
}

fn one_request(env: &Env, i: usize, rng: &mut Rng) -> Outcome {
    let description = format!("req-{i}");
    let mut kill_requester = rng.below(3) == 0;
    let mut requester_killed = false;
    let (id, waiter) = loop {
        let mut requester = env
            .swarm([
                "permission",
                "request",
                "--tool",
                "Bash",
                "--from",
                "coder",
                "--description",
                &description,
                "--wait",
            ])
            .spawn();
        let stderr = requester.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
                if let Some(id) = line.strip_prefix("swarm: waiting for the lead to decide ") {
                    let _ = tx.send(id.to_string());
                }
            }
        });
        if kill_requester {
            // Killed at a random moment: before it filed, while it files, or while it waits.
            kill_requester = false;
            std::thread::sleep(rng.millis(80));
            requester.kill().unwrap();
            requester.wait().unwrap();
            requester_killed = true;
            match find_request(env, &description) {
                // It filed: wait for the decision again, as a restarted requester would.
                Some(id) => break (id.clone(), env.swarm(["permission", "wait", &id]).spawn()),
                // It died first: ask again.
                None => continue,
            }
        }
        let id = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the requester said which request it waits for");
        break (id, requester);
    };

    let mut deciders_killed = 0;
    loop {
        let verb = if rng.below(2) == 0 { "approve" } else { "deny" };
        let mut decider = env.swarm(["permission", verb, &id]).spawn();
        if deciders_killed < 2 && rng.below(3) == 0 {
            std::thread::sleep(rng.millis(40));
            decider.kill().unwrap();
            decider.wait().unwrap();
            deciders_killed += 1;
            continue; // a second decision follows; it finishes or is refused
        }
        let out = wait_bounded(decider, Duration::from_secs(60), "a decider");
        if out.code == 0 || (out.code == 2 && out.stderr.contains("already decided")) {
            break;
        }
        panic!("permission {verb} {id} failed: {out:?}");
    }
    Outcome {
        description,
        id,
        waiter: wait_bounded(waiter, Duration::from_secs(60), "a requester"),
        requester_killed,
        deciders_killed,
    }
}

#[test]
fn two_hundred_permission_requests_with_kills_on_both_sides_end_in_one_decision_each() {
    let env = Env::with_team(&["coder"]);
    let seed = Rng::new("permissions").next();
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (env, next, outcomes) = (&env, &next, &outcomes);
            s.spawn(move || {
                let mut rng = Rng((seed ^ (t + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= REQUESTS {
                        break;
                    }
                    let outcome = one_request(env, i, &mut rng);
                    outcomes.lock().unwrap().push(outcome);
                }
            });
        }
    });
    let outcomes = outcomes.into_inner().unwrap();
    assert_eq!(outcomes.len(), REQUESTS);

    let mut resolved: HashMap<String, Vec<Value>> = HashMap::new();
    for path in files_named(&env.path("teams/t/permissions/resolved"), ".json") {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with('.') && name.ends_with(".json") {
            let record = read_json(&path);
            let d = record["description"].as_str().unwrap().to_string();
            resolved.entry(d).or_default().push(record);
        }
    }
    let pending: Vec<PathBuf> = files_named(&env.path("teams/t/permissions/pending"), ".json")
        .into_iter()
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(pending, Vec::<PathBuf>::new(), "requests left pending");

    // Every answer the requester's inbox received, by request id.
    let mut answers: HashMap<String, Vec<String>> = HashMap::new();
    for m in read_json_array(&env.path("teams/t/inboxes/coder.json")) {
        let Ok(p) = serde_json::from_str::<Value>(m["text"].as_str().unwrap()) else {
            continue;
        };
        if p["type"] == "permission_response" {
            answers
                .entry(p["request_id"].as_str().unwrap().to_string())
                .or_default()
                .push(p["subtype"].as_str().unwrap().to_string());
        }
    }

    let (mut approved, mut requesters_killed, mut deciders_killed) = (0, 0, 0);
    for o in &outcomes {
        let records = resolved.get(&o.description).map_or(&[][..], Vec::as_slice);
        assert_eq!(
            records.len(),
            1,
            "{}: resolved files {records:?}",
            o.description
        );
        let record = &records[0];
        assert_eq!(record["id"], o.id.as_str());
        let status = record["status"].as_str().unwrap();
        let (code, subtype) = match status {
            "approved" => (0, "success"),
            "rejected" => (1, "error"),
            other => panic!("{}: status {other}", o.id),
        };
        assert_eq!(o.waiter.code, code, "{} is {status}: {:?}", o.id, o.waiter);
        assert!(
            o.waiter.stdout.contains(&o.id) && o.waiter.stdout.contains(status),
            "{}: the requester printed {:?}",
            o.id,
            o.waiter.stdout
        );
        let got = answers.get(&o.id).cloned().unwrap_or_default();
        assert!(
            !got.is_empty() && got.iter().all(|s| s == subtype),
            "{} is {status} but the requester's inbox answered {got:?}",
            o.id
        );
        approved += usize::from(code == 0);
        requesters_killed += usize::from(o.requester_killed);
        deciders_killed += o.deciders_killed;
    }
    eprintln!(
        "permissions: {REQUESTS} requests, {approved} approved, {requesters_killed} requesters and {deciders_killed} deciders killed"
    );
    assert!(
        0 < approved && approved < REQUESTS,
        "both decisions were made"
    );
    assert!(
        requesters_killed > 0 && deciders_killed > 0,
        "kills on both sides"
    );
    read_json_array(&env.path("teams/t/inboxes/team-lead.json"));
}

// ---------------------------------------------------------------------------------------------
// The watcher

/// Starts `swarm inbox coder --follow --unread --json` and returns it with a channel of texts.
fn follower(env: &Env, vars: &[(&str, &str)]) -> (KillOnDrop, mpsc::Receiver<String>) {
    let mut cmd = env.swarm(["--json", "inbox", "coder", "--follow", "--unread"]);
    for (k, v) in vars {
        cmd = cmd.env(k, v);
    }
    let mut child = cmd.spawn();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            let m: Value = serde_json::from_str(&line).unwrap();
            let _ = tx.send(m["text"].as_str().unwrap().to_string());
        }
    });
    (KillOnDrop(child), rx)
}

#[track_caller]
fn expect_text(rx: &mpsc::Receiver<String>, text: &str, within: Duration) {
    let until = Instant::now() + within;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(t) if t == text => return,
            Ok(_) => continue,
            Err(_) => panic!("{text:?} was not delivered within {within:?}"),
        }
    }
}

/// CPU time (user + system, in clock ticks) a process has used so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Waits until `pid` has used no CPU for a second: it has drained whatever it was processing.
fn wait_until_idle(pid: u32) {
    let until = Instant::now() + Duration::from_secs(60);
    let mut last = cpu_ticks(pid);
    let mut still = 0;
    while still < 5 {
        assert!(Instant::now() < until, "process {pid} never went idle");
        std::thread::sleep(Duration::from_millis(200));
        let now = cpu_ticks(pid);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
}

/// The kernel's inotify queue holds `max_queued_events` (16,384 by default). The follower is
/// stopped (SIGSTOP) while 20,000 files are created in its directory, four events each (create,
/// open, modify, close), so the queue overflows for certain and ends with IN_Q_OVERFLOW, which
/// notify turns into a rescan event (an instrumented run showed 16,384 events, then that one);
/// a message is sent in the middle of the burst. Every wake re-reads the inbox, so that message
/// arrives; the question is whether the watch survives the overflow. So once the follower has
/// drained its queue (idle again), one more message is sent with the rescan timer at ten
/// minutes: only a working watch delivers it within the bound.
#[test]
fn a_20000_file_burst_overflowing_the_event_queue_loses_no_message() {
    let env = Env::with_team(&["coder"]);
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16_384);
    let files = 20_000usize.max(queue / 4 + 1000);
    let (follower, rx) = follower(&env, &[("SWARM_RESCAN_MS", "600000")]);
    env.swarm(["send", "--to", "coder", "before"]).ok();
    expect_text(&rx, "before", Duration::from_secs(30));

    let pid = follower.0.id() as libc::pid_t;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let dir = env.path("teams/t/inboxes");
    for i in 0..files {
        std::fs::write(dir.join(format!("burst-{i}")), b"x").unwrap();
        if i == files / 2 {
            env.swarm(["send", "--to", "coder", "during"]).ok();
        }
    }
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
    expect_text(&rx, "during", Duration::from_secs(60));
    wait_until_idle(follower.0.id());
    env.swarm(["send", "--to", "coder", "after"]).ok();
    expect_text(&rx, "after", Duration::from_secs(60));
}

/// With file events switched off the slow re-scan alone delivers (the follower would otherwise
/// wait forever); the bound is generous next to the 300 ms interval.
#[test]
fn with_file_events_off_the_rescan_timer_still_delivers() {
    let env = Env::with_team(&["coder"]);
    let (_follower, rx) = follower(
        &env,
        &[("SWARM_NO_FS_EVENTS", "1"), ("SWARM_RESCAN_MS", "300")],
    );
    for text in ["one", "two", "three"] {
        env.swarm(["send", "--to", "coder", text]).ok();
        expect_text(&rx, text, Duration::from_secs(15));
    }
}

// ---------------------------------------------------------------------------------------------
// A full disk

/// Asserts a send that ran out of space: a clear error, the inbox byte for byte as it was, and
/// no temp file or lock directory left behind.
#[track_caller]
fn assert_failed_cleanly(out: &Out, errno_text: &str, inbox: &Path, before: &[u8]) {
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.starts_with("swarm: error: failed to ") && out.stderr.contains(errno_text),
        "unclear error: {}",
        out.stderr
    );
    assert_eq!(std::fs::read(inbox).unwrap(), before, "the inbox changed");
    let dir = inbox.parent().unwrap();
    assert_eq!(files_named(dir, ".tmp-"), Vec::<PathBuf>::new());
    assert_eq!(files_named(dir, ".lock"), Vec::<PathBuf>::new());
}

/// A tmpfs mounted for the test, lazily unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(dir).unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(Tmpfs(dir.to_path_buf()))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// A 64 KiB tmpfs filled to the last page: every send fails cleanly; then pages are freed one
/// at a time, each send failing cleanly (wherever it ran out: the lock owner file or the new
/// inbox) until one fits.
fn full_tmpfs(env: &Env) -> Result<(), String> {
    let small = env.path("small");
    let _mounted = Tmpfs::mount(&small)?;
    let swarm = |args: &[&str]| env.swarm(args).env("SWARM_ROOT", &small);
    swarm(&["team", "create", "t"]).ok();
    swarm(&["team", "add", "coder"]).ok();
    for i in 0..12 {
        swarm(&[
            "send",
            "--to",
            "coder",
            &format!("message {i} before the disk filled"),
        ])
        .ok();
    }
    let inbox = small.join("teams/t/inboxes/coder.json");
    let before = std::fs::read(&inbox).unwrap();
    let filler_path = small.join("filler");
    let mut filler = std::fs::File::create(&filler_path).unwrap();
    let mut size = 0u64;
    loop {
        match std::io::Write::write(&mut filler, &[0u8; 4096]) {
            Ok(n) => size += n as u64,
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
                break;
            }
        }
    }
    let mut failures = 0;
    loop {
        let out = swarm(&["send", "--to", "coder", "after the disk filled"]).run();
        if out.code == 0 {
            break;
        }
        assert_failed_cleanly(&out, "No space left on device", &inbox, &before);
        failures += 1;
        assert!(failures < 32, "still failing with 32 pages freed");
        size = size.saturating_sub(4096);
        filler.set_len(size).unwrap();
    }
    eprintln!("disk full (tmpfs): {failures} clean failures before the send fit");
    assert!(failures >= 2, "the full disk made the send fail");
    let after = read_json_array(&inbox);
    assert_eq!(after.len(), 13);
    assert_eq!(after[12]["text"], "after the disk filled");
    Ok(())
}

/// The same refusal through the kernel's file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored, so
/// writes past the limit fail with EFBIG): works without mount rights.
fn file_size_limit(env: &Env) {
    for i in 0..12 {
        env.swarm(["send", "--to", "coder", &format!("message {i}")])
            .ok();
    }
    let inbox = env.path("teams/t/inboxes/coder.json");
    let before = std::fs::read(&inbox).unwrap();
    let limit = before.len() as libc::rlim_t;
    let mut send = env.swarm(["send", "--to", "coder", "one too many"]);
    unsafe {
        send.cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let rl = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = send.run();
    assert_failed_cleanly(&out, "File too large", &inbox, &before);
    env.swarm(["send", "--to", "coder", "after"]).ok();
    assert_eq!(read_json_array(&inbox).len(), 13);
}

/// Issue 5: a send on a full disk reports an error and the existing inbox is intact. Both
/// methods run when the tmpfs can be mounted (root); the file-size limit always runs, so this
/// test never passes without having filled something.
#[test]
fn a_full_disk_fails_the_send_and_leaves_the_inbox_intact() {
    let env = Env::with_team(&["coder"]);
    if let Err(why) = full_tmpfs(&env) {
        eprintln!("disk full: no tmpfs ({why}); the RLIMIT_FSIZE case alone runs");
    }
    file_size_limit(&env);
}

// ---------------------------------------------------------------------------------------------
// Bad input

/// JSON that is not what a store file should hold. Duplicate keys are not here: they parse
/// (last one wins, as with `JSON.parse`), see `duplicate_keys_keep_the_last_value`.
fn bad_json() -> Vec<(&'static str, Vec<u8>)> {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    vec![
        ("empty", b"".to_vec()),
        (
            "truncated",
            b"[{\"from\": \"team-lead\", \"text\": \"tor".to_vec(),
        ),
        ("10,000-deep nesting", deep.into_bytes()),
        (
            "wrong types",
            b"{\"from\": 5, \"members\": 7, \"status\": 9}".to_vec(),
        ),
        ("byte-order mark", b"\xEF\xBB\xBF[]".to_vec()),
        ("invalid UTF-8", b"[\"\xff\xfe\"]".to_vec()),
    ]
}

/// `Env::snapshot` without lock gates: a command that takes a lock creates the empty hidden file
/// `.F.gate` beside `F` once (see `lock.rs`); that is plumbing, not store content.
fn snapshot(env: &Env) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = env.snapshot();
    files.retain(|path, bytes| {
        let name = path.file_name().unwrap().to_string_lossy();
        !(name.starts_with('.') && name.ends_with(".gate") && bytes.is_empty())
    });
    files
}

/// Runs `args`, which must be refused with exit 2 and `message` on stderr, changing nothing.
#[track_caller]
fn refused(env: &Env, row: &str, args: &[&str], message: &str) {
    let before = snapshot(env);
    let out = run_bounded(env.swarm(args), row);
    assert_eq!(out.code, 2, "{row}: {args:?} {out:?}");
    assert!(
        out.stderr.contains(message),
        "{row}: {args:?} stderr lacks {message:?}: {}",
        out.stderr
    );
    assert_eq!(snapshot(env), before, "{row}: {args:?} changed the store");
}

/// Runs `args`, which must succeed after moving `file` aside byte for byte; apart from `file`
/// (rewritten or gone) and the new `.corrupt-` file, nothing may differ.
#[track_caller]
fn quarantined(env: &Env, row: &str, args: &[&str], file: &str) -> Out {
    let path = env.path(file);
    let bad = std::fs::read(&path).unwrap();
    let mut before = snapshot(env);
    let out = run_bounded(env.swarm(args), row);
    assert_eq!(out.code, 0, "{row}: {args:?} {out:?}");
    assert!(
        out.stderr.contains("could not be read") && out.stderr.contains(".corrupt-"),
        "{row}: {args:?} did not say it moved the file: {}",
        out.stderr
    );
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let moved = files_named(path.parent().unwrap(), &format!("{name}.corrupt-"));
    assert_eq!(moved.len(), 1, "{row}: {moved:?}");
    assert_eq!(std::fs::read(&moved[0]).unwrap(), bad, "{row}: bytes kept");
    let mut after = snapshot(env);
    for p in [path.clone(), moved[0].clone()] {
        before.remove(&p);
        after.remove(&p);
    }
    assert_eq!(after, before, "{row}: other files changed");
    out
}

#[test]
fn bad_json_in_an_inbox_is_quarantined_and_the_send_still_delivered() {
    for (row, bytes) in bad_json() {
        for (verb, args) in [
            ("send", &["send", "--to", "coder", "hi"][..]),
            ("read", &["inbox", "coder"][..]),
        ] {
            let env = Env::with_team(&["coder"]);
            env.swarm(["send", "--to", "coder", "warm-up"]).ok();
            std::fs::write(env.path("teams/t/inboxes/coder.json"), &bytes).unwrap();
            let row = format!("inbox, {row}, {verb}");
            quarantined(&env, &row, args, "teams/t/inboxes/coder.json");
            let live = read_json_array(&env.path("teams/t/inboxes/coder.json"));
            let texts: Vec<&str> = live.iter().map(|m| m["text"].as_str().unwrap()).collect();
            assert_eq!(
                texts,
                if verb == "send" { vec!["hi"] } else { vec![] },
                "{row}"
            );
        }
    }
    // One bad entry in a good array: the entry is moved aside, the others kept.
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    std::fs::write(
        &inbox,
        br#"[{"from": "a", "text": "good", "timestamp": "t"}, {"from": 5}]"#,
    )
    .unwrap();
    let out = env.swarm(["send", "--to", "coder", "new"]).ok();
    out.stderr_has("had 1 malformed message(s)");
    let texts: Vec<String> = read_json_array(&inbox)
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, ["good", "new"]);
    let moved = files_named(&env.path("teams/t/inboxes"), "coder.json.corrupt-");
    assert_eq!(
        read_json_array(&moved[0]),
        vec![serde_json::json!({"from": 5})]
    );
}

#[test]
fn bad_json_in_a_roster_task_or_permission_is_refused_or_quarantined() {
    for (row, bytes) in bad_json() {
        // The roster is never rewritten from a guess: every command refuses it.
        let env = Env::with_team(&["coder"]);
        std::fs::write(env.path("teams/t/config.json"), &bytes).unwrap();
        let msg = "config.json is not valid";
        refused(&env, row, &["send", "--to", "coder", "hi"], msg);
        refused(&env, row, &["team", "show"], "repair it or move it aside");
        refused(&env, row, &["team", "add", "tester"], msg);

        // A task: `show` refuses it, `list` moves it aside, and its id is never issued again.
        let env = Env::with_team(&["coder"]);
        env.swarm(["task", "create", "one"]).ok();
        env.swarm(["task", "create", "two"]).ok();
        std::fs::write(env.path("tasks/t/2.json"), &bytes).unwrap();
        refused(&env, row, &["task", "show", "2"], "2.json is not valid");
        refused(
            &env,
            row,
            &["task", "update", "2", "--status", "completed"],
            "2.json is not valid",
        );
        let out = quarantined(&env, row, &["task", "list"], "tasks/t/2.json");
        assert!(
            out.stdout.contains("one") && !out.stdout.contains("two"),
            "{row}"
        );
        let created = env.swarm(["--json", "task", "create", "three"]).ok().json();
        assert_eq!(
            created["id"], "3",
            "{row}: a quarantined task's id was reused"
        );

        // A pending permission request: deciding it is refused, listing skips it with a warning.
        let env = Env::with_team(&["coder"]);
        let id = env
            .swarm([
                "--json",
                "permission",
                "request",
                "--tool",
                "Bash",
                "--from",
                "coder",
            ])
            .ok()
            .json()["id"]
            .as_str()
            .unwrap()
            .to_string();
        std::fs::write(
            env.path(&format!("teams/t/permissions/pending/{id}.json")),
            &bytes,
        )
        .unwrap();
        refused(&env, row, &["permission", "approve", &id], "is not valid");
        let before = snapshot(&env);
        run_bounded(env.swarm(["permission", "list"]), row).stderr_has("warning: skipping");
        assert_eq!(
            snapshot(&env),
            before,
            "{row}: permission list changed the store"
        );
    }

    // The high-water mark is plain text; garbage there could reissue a deleted id.
    let env = Env::with_team(&["coder"]);
    env.swarm(["task", "create", "one"]).ok();
    std::fs::write(env.path("tasks/t/.highwatermark"), "seven").unwrap();
    refused(
        &env,
        "garbage high-water mark",
        &["task", "create", "two"],
        "holds \"seven\", not a task number",
    );
}

/// Decided: a key repeated inside one object keeps its last value, as `JSON.parse` (Claude
/// Code) reads it, so both programs see the same message, roster and task; nothing is
/// quarantined for it, and the next locked write stores it once.
#[test]
fn duplicate_keys_keep_the_last_value() {
    let env = Env::with_team(&["coder"]);
    let inbox = env.path("teams/t/inboxes/coder.json");
    std::fs::write(
        &inbox,
        br#"[{"from": "a", "text": "first", "text": "second", "timestamp": "t", "x": 1, "x": 2}]"#,
    )
    .unwrap();
    let before = snapshot(&env);
    let read = env.swarm(["--json", "inbox", "coder"]).ok();
    assert_eq!(read.json()[0]["text"], "second");
    assert_eq!(read.json()[0]["x"], 2);
    assert_eq!(snapshot(&env), before, "a read changed nothing");
    let out = env.swarm(["send", "--to", "coder", "new"]).ok();
    assert!(!out.stderr.contains("malformed"), "{}", out.stderr);
    assert_eq!(
        files_named(&env.path("teams/t/inboxes"), ".corrupt-"),
        Vec::<PathBuf>::new()
    );
    let raw = std::fs::read_to_string(&inbox).unwrap();
    assert!(!raw.contains("first") && raw.contains("second"), "{raw}");

    let config = env.path("teams/t/config.json");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replacen("{", "{\"description\": \"old\",", 1)).unwrap();
    let shown = env.swarm(["--json", "team", "show"]).ok().json();
    assert_eq!(shown["description"], "", "the later (original) value wins");

    env.swarm(["task", "create", "one"]).ok();
    let task = env.path("tasks/t/1.json");
    let text = std::fs::read_to_string(&task).unwrap();
    std::fs::write(&task, text.replacen("{", "{\"status\": \"completed\",", 1)).unwrap();
    let shown = env.swarm(["--json", "task", "show", "1"]).ok().json();
    assert_eq!(shown["status"], "pending");
}

/// A symlink or a FIFO where a store file belongs is refused with exit 2 and changes nothing;
/// nothing blocks on a FIFO. (Rows that need one file to exist first create it.)
#[test]
fn symlinks_and_fifos_where_files_belong_are_refused_without_hanging() {
    struct Place {
        name: &'static str,
        file: &'static str,
        commands: &'static [&'static [&'static str]],
    }
    let places = [
        Place {
            name: "inbox",
            file: "teams/t/inboxes/coder.json",
            commands: &[&["send", "--to", "coder", "hi"], &["inbox", "coder"]],
        },
        Place {
            name: "roster",
            file: "teams/t/config.json",
            commands: &[&["send", "--to", "coder", "hi"], &["team", "show"]],
        },
        Place {
            name: "task",
            file: "tasks/t/1.json",
            commands: &[
                &["task", "show", "1"],
                &["task", "list"],
                &["task", "update", "1", "--status", "completed"],
            ],
        },
        Place {
            name: "high-water mark",
            file: "tasks/t/.highwatermark",
            commands: &[&["task", "create", "two"]],
        },
        Place {
            name: "archive",
            file: "teams/t/inboxes/coder.archive.jsonl",
            // The inbox holds 101 delivered messages, so this send archives one.
            commands: &[&["send", "--to", "coder", "hi"]],
        },
    ];
    for place in &places {
        for kind in ["symlink", "FIFO"] {
            let env = Env::with_team(&["coder"]);
            env.swarm(["task", "create", "one"]).ok();
            let delivered: Vec<Value> = (0..101)
                .map(|i| serde_json::json!({"from": "a", "text": format!("m{i}"), "timestamp": "t", "read": true}))
                .collect();
            std::fs::write(
                env.path("teams/t/inboxes/coder.json"),
                serde_json::to_vec(&delivered).unwrap(),
            )
            .unwrap();
            let path = env.path(place.file);
            let elsewhere = env.path("elsewhere");
            if let Ok(bytes) = std::fs::read(&path) {
                std::fs::write(&elsewhere, bytes).unwrap();
            } else {
                std::fs::write(&elsewhere, b"[]").unwrap();
            }
            let _ = std::fs::remove_file(&path);
            if kind == "symlink" {
                std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
            } else {
                let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            }
            for args in place.commands {
                let row = format!("{} is a {kind}", place.name);
                refused(&env, &row, args, &format!("it is a {kind}"));
            }
        }
    }

    // Directories too: an inboxes directory that is a symlink is refused for writes.
    let env = Env::with_team(&["coder"]);
    let inboxes = env.path("teams/t/inboxes");
    std::fs::rename(&inboxes, env.path("teams/t/real-inboxes")).unwrap();
    std::os::unix::fs::symlink("real-inboxes", &inboxes).unwrap();
    refused(
        &env,
        "inboxes directory is a symlink",
        &["send", "--to", "coder", "hi"],
        "it is a symlink",
    );

    // The lock gate is only ever opened read-write and flocked, which a FIFO allows: no hang,
    // and the message is delivered.
    let env = Env::with_team(&["coder"]);
    let gate = env.path("teams/t/inboxes/.coder.json.gate");
    let c = std::ffi::CString::new(gate.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = run_bounded(env.swarm(["send", "--to", "coder", "hi"]), "gate is a FIFO");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        read_json_array(&env.path("teams/t/inboxes/coder.json"))[0]["text"],
        "hi"
    );
}

/// Decided: a store directory other users can write to is set back to 0700, with a warning,
/// before swarm writes in it (refused with exit 2 only if the mode cannot be changed).
#[test]
fn world_writable_store_directories_are_set_back_to_0700() {
    let rows: [(&str, &[&str]); 4] = [
        ("teams/t/inboxes", &["send", "--to", "coder", "hi"]),
        ("teams/t", &["team", "add", "tester"]),
        ("tasks/t", &["task", "create", "one"]),
        (
            "teams/t/permissions/pending",
            &["permission", "request", "--tool", "Bash", "--from", "coder"],
        ),
    ];
    for (dir, args) in rows {
        let env = Env::with_team(&["coder"]);
        // Make the permission folders exist first.
        env.swarm(["permission", "request", "--tool", "Edit", "--from", "coder"])
            .ok();
        let path = env.path(dir);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let out = run_bounded(env.swarm(args), dir);
        assert_eq!(out.code, 0, "{dir}: {out:?}");
        out.stderr_has(&format!(
            "{} was writable by other users (mode 777); set it to 0700",
            path.display()
        ));
        assert_eq!(mode_of(&path), 0o700, "{dir}");
    }
}

#[test]
fn bad_names_are_refused_with_what_to_do() {
    let env = Env::with_team(&["coder"]);
    let rows: [(&[&str], &str); 5] = [
        (
            &["team", "add", "team-lead"],
            "are reserved; pick another name",
        ),
        (&["team", "add", "USER"], "are reserved; pick another name"),
        (&["team", "add", "a/b"], "use letters, digits, '-' and '_'"),
        (
            &["send", "--to", "../coder", "hi"],
            "invalid agent name \"../coder\"",
        ),
        (&["--team", "T", "task", "list"], "invalid team name \"T\""),
    ];
    for (args, message) in rows {
        refused(&env, "bad name", args, message);
    }
}

/// Regression: a process killed after creating `owner.tmp-<pid>` in a lock directory but before
/// renaming it to `owner` left a lock that looked like Claude Code's, honoured for 10 s; the
/// permission test above hit this often. The next swarm process now breaks it at once.
#[test]
fn a_lock_left_half_installed_by_a_killed_process_is_broken_at_once() {
    let env = Env::with_team(&["coder"]);
    let lock = env.path("teams/t/inboxes/coder.json.lock");
    std::fs::create_dir(&lock).unwrap();
    std::fs::write(lock.join("owner.tmp-4242"), "").unwrap();
    let out = run_bounded(env.swarm(["send", "--to", "coder", "hi"]), "send");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        !out.stderr.contains("waiting for lock"),
        "the dead half-installed lock was waited on: {}",
        out.stderr
    );
    assert!(!lock.exists());
}
