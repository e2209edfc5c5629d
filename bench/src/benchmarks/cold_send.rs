//! The cold-start half of benchmark 6: the wall time of a whole `swarm send` process, against
//! spawning `/bin/true` and `swarm --version`, because every agent message is one such process
//! and start-up is most of it. The idle-teammate half needs a runtime and is in
//! `scripts/bench-runtime`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use swarm::{Error, Result};

use crate::harness::Bench;
use crate::report::{fmt_ms, fmt_ratio, Section, Table};
use crate::stats::{ms, quantile, sorted};

/// Wall time of a cold `swarm send` process, against spawning `/bin/true`.
pub(crate) fn cold_send(b: &Bench) -> Result<Section> {
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
    let mut version = Command::new(b.exe());
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
            "`swarm send` reads the roster once, takes the inbox lock, rewrites the inbox and fsyncs the file and its directory; the inbox grows to the number of runs. `swarm --version` is process start-up alone (loading, relocations, the clap tree). Target: `swarm send` within 2x `/bin/true` at p50 on a quiet machine (what the release profile was tried with is in Cargo.toml).".into(),
            "The idle-teammate half of benchmark 6 (RSS and CPU of `swarm teammate` over 10 s) is in BENCHMARKS-runtime.md (`scripts/bench-runtime`).".into(),
        ],
    })
}
