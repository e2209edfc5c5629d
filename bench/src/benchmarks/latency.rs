//! Benchmark 1, delivery latency: how long from starting a `swarm send` process until a
//! waiting receiver has the message, for swarm's `inbox --follow` (inotify plus a rescan) and
//! for Claude Code's 1000 ms and 500 ms poll loops, all watching the same stream of messages in
//! the same run. The teammate runtime as a receiver needs panes and is measured by
//! `scripts/bench-runtime` instead.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use swarm::{claude_code, AgentName, Error, Result};

use crate::harness::Bench;
use crate::report::{fmt_ms, fmt_ratio, Section, Table};
use crate::stats::{ms, quantile, sorted};
use crate::worker::spawn;

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
/// Code's poll loop at 1000 ms and 500 ms, all watching one stream of messages at once.
pub(crate) fn latency(b: &Bench) -> Result<Section> {
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
