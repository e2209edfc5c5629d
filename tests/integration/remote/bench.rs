//! What a remote host costs, measured over loopback ssh against the same work done locally:
//! a message from a teammate to the lead (p50/p99, remote and local teammates sending at once),
//! tasks claimed and completed per second by two runtimes on a host against two local ones,
//! and the CPU and memory one extra host takes while its team is idle.
//!
//! These are benchmarks, not checks: they are ignored in the ordinary run and print Markdown
//! tables. Run them (the release profile would be faster still; the figures in the report were
//! taken from this debug build) with
//! `cargo test --test integration remote::bench -- --ignored --nocapture --test-threads 1`.
//! `SWARM_BENCH_N` sets the messages per sender and the tasks per case (default 100),
//! `SWARM_BENCH_IDLE_S` the idle window (default 30). Both "hosts" share this machine's clock,
//! so a timestamp taken on the host is compared with one taken at home.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::RemoteTeam;
use crate::support::*;

fn setting(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The 1-minute load average: other work on a shared machine moves the figures, and this
/// says when it did.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[test]
#[ignore = "a benchmark: run with --ignored --nocapture"]
fn bench_a_message_to_the_lead_from_a_remote_teammate_and_from_a_local_one() {
    let n = setting("SWARM_BENCH_N", 100);
    let team = RemoteTeam::untraced(&["box1"]);
    // Each sender stamps the time just before it starts `swarm send`; this test notes when
    // the entry is in the lead's inbox at home.
    let sender = format!(
        "$ for i in $(seq 1 {n}); do swarm send --to team-lead \"lat $i $(date +%s%N)\"; sleep 0.1; done"
    );
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
                "teammates": [{"name": "far", "host": "box1", "prompt": sender},
                              {"name": "near", "prompt": sender}]}),
    );
    team.launch(&file);
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut latencies: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60 + n * 2);
    while seen.len() < 2 * n as usize {
        assert!(
            Instant::now() < deadline,
            "only {} of {} messages arrived\n{}",
            seen.len(),
            2 * n,
            team.diagnose()
        );
        let at = now_ns();
        for m in team.inbox("team-lead") {
            let (Some(from), Some(text)) = (m["from"].as_str(), m["text"].as_str()) else {
                continue;
            };
            let mut words = text.split(' ');
            let (Some("lat"), Some(seq), Some(stamp)) = (words.next(), words.next(), words.next())
            else {
                continue;
            };
            if seen.insert((from.to_string(), seq.to_string())) {
                let sent: u128 = stamp.parse().unwrap();
                let ms = at.saturating_sub(sent) as f64 / 1e6;
                latencies.entry(from.to_string()).or_default().push(ms);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    println!("\n| sender | messages | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|");
    for (who, v) in &mut latencies {
        v.sort_by(f64::total_cmp);
        let place = if who == "far" {
            "remote (box1, loopback ssh)"
        } else {
            "local"
        };
        println!(
            "| {who}, {place} | {} | {:.1} | {:.1} | {:.1} |",
            v.len(),
            quantile(v, 0.5),
            quantile(v, 0.99),
            v.last().unwrap()
        );
    }
    println!("(from the sender's clock before `swarm send` starts to the entry in the lead's inbox at home, polled every 2 ms; both senders at once; load average {})", load());
    team.swarm(["down", "--timeout", "30"]).ok();
}

#[test]
#[ignore = "a benchmark: run with --ignored --nocapture"]
fn bench_tasks_claimed_and_completed_per_second_by_remote_and_local_runtimes() {
    let n = setting("SWARM_BENCH_N", 100);
    let tasks: Vec<_> = (1..=n)
        .map(|i| json!({"subject": format!("t{i}"), "description": "true"}))
        .collect();
    println!("\n| runtimes | tasks | seconds | tasks/s |\n|---|---|---|---|");
    for (case, host) in [
        ("2 on box1 (loopback ssh)", Some("box1")),
        ("2 local", None),
    ] {
        let team = RemoteTeam::untraced(&["box1"]);
        let teammates: Vec<_> = ["w1", "w2"]
            .iter()
            .map(|name| match host {
                Some(h) => json!({"name": name, "host": h}),
                None => json!({"name": name}),
            })
            .collect();
        let file = team.file(
            "team.json",
            &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
                    "teammates": teammates, "tasks": tasks}),
        );
        team.launch(&file);
        // From the launch returning (teammates started, the mirror in step) to every task
        // completed at home.
        let start = Instant::now();
        let deadline = start + Duration::from_secs(60 + n * 2);
        let tasks_dir = team.env.path("tasks/t");
        loop {
            let done = std::fs::read_dir(&tasks_dir)
                .unwrap()
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .filter(|e| read_json(&e.path())["status"] == "completed")
                .count();
            if done == n as usize {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{done} of {n} tasks completed\n{}",
                team.diagnose()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let secs = start.elapsed().as_secs_f64();
        println!("| {case} | {n} | {secs:.2} | {:.1} |", n as f64 / secs);
        team.swarm(["down", "--timeout", "30"]).ok();
    }
    println!(
        "(shell runtimes; each task runs `true`; a remote claim is a request to home over the relay; load average {})",
        load()
    );
}

/// CPU ticks (1/100 s) and resident KiB of a process, if it still runs.
fn usage(pid: i32) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields[11].parse::<u64>().ok()? + fields[12].parse::<u64>().ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Some((ticks, rss))
}

fn cmdline(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw).replace('\0', " ")
}

#[test]
#[ignore = "a benchmark: run with --ignored --nocapture"]
fn bench_what_one_extra_host_costs_at_idle() {
    let idle = setting("SWARM_BENCH_IDLE_S", 30);
    let team = RemoteTeam::untraced(&["box1"]);
    let file = team.file(
        "team.json",
        &json!({"team": "t", "agent": "shell", "remoteSwarm": BIN,
                "teammates": [{"name": "idler", "host": "box1"}]}),
    );
    team.launch(&file);
    std::thread::sleep(Duration::from_secs(5));
    // The host's share: at home the link and the ssh clients (the master, the link's session,
    // the member's attach pane); on the host every process its sshd runs (the relay, the
    // session servers). The teammate's own runtime and its tmux server are not the host's cost.
    let root = team.env.root().display().to_string();
    let ssh_config = team.hosts.ssh_config().display().to_string();
    let mut parts: Vec<(&str, i32)> = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = cmdline(pid);
        if cmd.contains(" relay link ") && cmd.contains(&root) {
            parts.push(("home: swarm relay link", pid));
        } else if cmd.contains(" relay attach ") && cmd.contains(&root) {
            parts.push(("home: swarm relay attach (the member's pane)", pid));
        } else if cmd.starts_with("ssh ") && cmd.contains(&ssh_config) {
            parts.push(("home: ssh clients and master", pid));
        }
    }
    for pid in team.hosts.get("box1").server_processes() {
        let cmd = cmdline(pid);
        if cmd.contains("tmux") || cmd.contains(" teammate ") {
            continue;
        }
        let part = if cmd.contains(" relay serve ") {
            "box1: swarm relay serve"
        } else {
            "box1: sshd sessions and their shells"
        };
        parts.push((part, pid));
    }
    assert!(
        parts.iter().any(|(p, _)| p.contains("relay link"))
            && parts.iter().any(|(p, _)| p.contains("relay serve")),
        "the link and the relay run: {parts:?}"
    );
    let before: Vec<_> = parts.iter().map(|(_, pid)| usage(*pid)).collect();
    std::thread::sleep(Duration::from_secs(idle));
    let mut rows: BTreeMap<&str, (usize, u64, u64)> = BTreeMap::new();
    for ((part, pid), was) in parts.iter().zip(before) {
        let (Some((t0, _)), Some((t1, rss))) = (was, usage(*pid)) else {
            continue;
        };
        let row = rows.entry(part).or_default();
        row.0 += 1;
        row.1 += t1 - t0;
        row.2 += rss;
    }
    println!(
        "\n| part | processes | CPU ms in {idle} s | CPU % | RSS MiB |\n|---|---|---|---|---|"
    );
    let mut total = (0, 0, 0);
    for (part, (procs, ticks, rss)) in &rows {
        total = (total.0 + procs, total.1 + ticks, total.2 + rss);
        println!(
            "| {part} | {procs} | {} | {:.2} | {:.1} |",
            ticks * 10,
            *ticks as f64 / idle as f64,
            *rss as f64 / 1024.0
        );
    }
    println!(
        "| all | {} | {} | {:.2} | {:.1} |",
        total.0,
        total.1 * 10,
        total.1 as f64 / idle as f64,
        total.2 as f64 / 1024.0
    );
    println!(
        "(one idle shell teammate on box1; its own runtime and tmux server are left out; load average {})",
        load()
    );
    team.swarm(["down", "--timeout", "30"]).ok();
}
