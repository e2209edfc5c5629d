//! `swarm bench --quick`: the benchmark code itself runs end to end and its tables say what the
//! store guarantees (no loss, exactly-once claims), so the benchmarks cannot rot unnoticed
//! between runs of `scripts/bench`. The numbers of a quick debug run mean nothing and are not
//! looked at.

use serde_json::Value;

use crate::support::*;

fn column(section: &Value, header: &str) -> Vec<String> {
    let headers = section["table"]["headers"].as_array().unwrap();
    let i = headers
        .iter()
        .position(|h| h == header)
        .unwrap_or_else(|| panic!("no column {header:?} in {headers:?}"));
    section["table"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[i].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn bench_quick_runs_every_benchmark_and_reports_no_loss() {
    let env = Env::new();
    let out = env
        .swarm([
            std::ffi::OsStr::new("--json"),
            "bench".as_ref(),
            "--quick".as_ref(),
            "--scratch".as_ref(),
            env.root().as_os_str(),
        ])
        .ok();
    let sections: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = sections
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["latency", "contention", "inbox-size", "claims", "cold-send"]
    );
    let by = |name: &str| sections.iter().find(|s| s["name"] == name).unwrap();
    assert_eq!(
        column(by("latency"), "missed")[0],
        "0",
        "swarm missed messages"
    );
    let contention = by("contention");
    let implementations = column(contention, "implementation");
    let swarm = implementations.iter().position(|i| i == "swarm").unwrap();
    assert_eq!(column(contention, "lost after ack")[swarm], "0");
    assert_eq!(column(contention, "failed sends")[swarm], "0");
    assert_eq!(
        column(contention, "torn reads / sampled")[swarm]
            .split(' ')
            .next(),
        Some("0")
    );
    assert!(column(by("claims"), "exactly once")
        .iter()
        .all(|c| c == "yes"));
    assert_eq!(column(by("inbox-size"), "implementation").len(), 5);
    // The scratch stores are removed afterwards (`state` is the tests' XDG_STATE_HOME, where
    // the lead keys go).
    let left = std::fs::read_dir(env.root())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name() != "state")
        .count();
    assert_eq!(left, 0);
    env.swarm(["bench", "nonsense"])
        .refused("unknown benchmark \"nonsense\"");
}
