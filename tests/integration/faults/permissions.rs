//! Permission requests with kills on both sides: 200 requests, each requester and up to two
//! deciders SIGKILLed at random moments (before filing, while filing, while waiting, while
//! deciding). Every request must end with exactly one resolved record, and the requester and its
//! inbox must agree with that decision.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::{files_named, read_json_array, Rng};
use crate::support::*;

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
