//! Benchmark 3, append cost against inbox size: one process appending into inboxes that
//! already hold 100 or 10,000 messages. swarm archives delivered messages beyond a bound, so
//! its steady-state append should not grow with history; the undelivered row shows the case
//! where it must (nothing may be lost), and Claude Code's rewrite-everything append is the
//! baseline.

use std::path::Path;
use std::process::Stdio;

use swarm::{claude_code, fsio, AgentName, Error, InboxMessage, Result, KEEP_DELIVERED};

use crate::cli::Impl;
use crate::harness::Bench;
use crate::report::{fmt_int, fmt_ms, fmt_ratio, Section, Table};
use crate::stats::{quantile, sorted};
use crate::worker::spawn;

fn seed_inbox(path: &Path, count: u64, delivered: bool) -> Result<()> {
    let coder: AgentName = "coder".parse()?;
    let messages: Vec<InboxMessage> = (0..count)
        .map(|i| {
            let mut m = InboxMessage::new(
                &coder,
                format!("seed message {i}: the parser is done, tests pass, please review the diff"),
            );
            m.read = delivered;
            m
        })
        .collect();
    fsio::write_json(path, &messages)
}

/// Appends into inboxes that already hold 100 or 10,000 delivered messages.
pub(crate) fn inbox_size(b: &Bench) -> Result<Section> {
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
            b.worker(&store)
                .args(imp.args())
                .args(["--to", "coder", "--timings"])
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
            format!("swarm keeps at most {} delivered messages in the live file and moves older ones to `<agent>.archive.jsonl`. So the first append to an inbox seeded with {} delivered messages pays once for archiving the surplus (the `first append` column), and every later append works on a file of about {} entries: the steady state does not depend on how much history there is.", KEEP_DELIVERED, fmt_int(large), KEEP_DELIVERED),
            "Undelivered messages are never archived (nothing may be lost), so a recipient that stops reading makes swarm's appends grow like Claude Code's; the `undelivered` row shows that case.".into(),
            "The Claude Code baseline keeps every entry in the file (as the brief specifies; PROTOCOL.md notes that real Claude Code deletes entries it has delivered, which would keep its file small too, at the price of losing them). swarm's appends fsync the file and its directory; Claude Code's `writeFileSync` does not, which is most of the remaining difference at small sizes.".into(),
        ],
    })
}
