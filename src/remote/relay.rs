//! The remote host's end: `swarm relay serve`, started by the link over ssh, one per connection.
//!
//! It keeps the team's mirror on this host (`mirrors/<id>` under the data directory) in step
//! with home: it applies what home sends (`mirror`) and sends home what the host's members
//! wrote (`outgoing`), as operations that home answers. Everything it must remember across
//! connections is in the mirror's `relay/` directory (`records`, `local`); what is in flight is
//! not, because after a break every unacknowledged operation is found again in the mirror's
//! files and sent again under the same id. The agents never wait for it: they read and write
//! the mirror as they would a local store, so while the host is cut off they go on with what
//! they can do there (messages between members on the host are delivered locally at once;
//! claims wait for home). It reports how each member on the host is doing, answers pings (which
//! is how home measures the clock difference) and exits when its connection ends or falls
//! silent for 45 s; a relay of an earlier connection still running holds the mirror's lock, and
//! a new one waits for it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufReader, Write};
use std::time::{Duration, Instant};

use fs4::fs_std::FileExt;
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use super::frame::{self, Down, Life, Up, VERSION};
use super::records::Records;
use super::{mirror_root, Host};
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::machine::Machine;
use crate::store::names::{AgentName, TaskId, TeamName};
use crate::store::paths::Store;
use crate::store::watcher::{rescan_interval, Subscription};

/// Longest silence from home before the relay gives up on its connection.
const SILENCE: Duration = Duration::from_secs(45);
/// How long a new relay waits for the one of an earlier connection to let go.
const TAKE_OVER: Duration = Duration::from_secs(60);
/// A report is sent on change, and at least this often.
const REPORT_EVERY: Duration = Duration::from_secs(15);

pub(super) enum Event {
    Changed,
    Frame(std::result::Result<Down, String>),
    Closed,
}

/// What to do when home answers an operation.
#[derive(Debug, Clone)]
pub(super) enum Pending {
    Deliver {
        to: AgentName,
        key: String,
        /// `to` is a member on this host (its inbox is home's; its read marks are its own).
        on_host: bool,
    },
    Delivered,
    Task {
        id: TaskId,
        /// The task as it was when the change was sent.
        sent: Value,
    },
    Create {
        local_id: TaskId,
        sent: Value,
    },
    Claim {
        request: String,
    },
    Active,
    Permission {
        id: String,
    },
}

pub(super) struct Relay<'a> {
    pub(super) store: &'a Store,
    pub(super) team: &'a TeamName,
    pub(super) alias: &'a Host,
    out: std::io::Stdout,
    pub(super) records: Records,
    /// Home said hello.
    hello: bool,
    /// Home finished its first round: only then can a task without a base be a new one.
    pub(super) synced_once: bool,
    /// Per member on this host: the keys home last called unread.
    pub(super) home_unread: HashMap<String, HashSet<String>>,
    pub(super) in_flight: HashMap<String, Pending>,
    /// Home's versions of tasks with a change of ours in flight, applied once it is answered.
    pub(super) stashed: HashMap<TaskId, Option<Value>>,
    last_report: BTreeMap<String, Life>,
    last_report_at: Instant,
    last_heard: Instant,
}

/// Serves mirror `mirror` of `team` for the host the lead's machine calls `alias`.
pub(crate) fn serve(mirror: &str, team: &TeamName, alias: &Host) -> Result<i32> {
    let root = mirror_root(mirror)?;
    create_private(&root)?;
    let store = Store::new(&root);
    for dir in [
        store.inboxes_dir(team),
        store.tasks_dir(team),
        store.relay_dir(team),
        store.pending_dir(team),
        store.resolved_dir(team),
        store.alive_dir(team),
    ] {
        fsio::ensure_dir(&dir)?;
    }
    let _lock = take_over(&store, team)?;
    crate::process::block_on(async {
        let (tx, rx) = unbounded_channel();
        let _watches = watch(&store, team, &tx)?;
        std::thread::spawn({
            let tx = tx.clone();
            move || {
                frame::read_all::<Down>(BufReader::new(std::io::stdin()), |f| {
                    tx.send(Event::Frame(f)).is_ok()
                });
                let _ = tx.send(Event::Closed);
            }
        });
        let mut relay = Relay {
            store: &store,
            team,
            alias,
            out: std::io::stdout(),
            records: Records::open(&store, team)?,
            hello: false,
            synced_once: false,
            home_unread: HashMap::new(),
            in_flight: HashMap::new(),
            stashed: HashMap::new(),
            last_report: BTreeMap::new(),
            last_report_at: Instant::now(),
            last_heard: Instant::now(),
        };
        relay.send(&Up::Hello {
            version: VERSION.into(),
            machine: Machine::this().clone(),
            now_ms: clock_ms(),
            root: root.display().to_string(),
        })?;
        relay.run(rx).await
    })
}

/// This host's clock as the relay reports it (home measures the difference from it). Built with
/// the `seams` feature, `SWARM_SEAM_CLOCK_OFFSET_MS` moves it, so a test can show a host whose
/// clock is off without changing any machine's.
pub(super) fn clock_ms() -> u64 {
    #[cfg(feature = "seams")]
    if let Some(offset) = std::env::var("SWARM_SEAM_CLOCK_OFFSET_MS")
        .ok()
        .and_then(|v| v.parse::<i64>().ok())
    {
        return fsio::now_ms().saturating_add_signed(offset);
    }
    fsio::now_ms()
}

/// Creates the mirror's root (and its parents) private to this user.
fn create_private(root: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root)
        .map_err(Error::io("create", root))
}

/// The mirror's relay lock, once an earlier connection's relay has let go of it.
fn take_over(store: &Store, team: &TeamName) -> Result<std::fs::File> {
    let path = store.relay_dir(team).join("serve.lock");
    let file = fsio::open_or_create(&path)?;
    let start = Instant::now();
    while !FileExt::try_lock_exclusive(&file).map_err(Error::io("lock", &path))? {
        if start.elapsed() > TAKE_OVER {
            return Err(Error::Backend(format!(
                "another relay still serves this mirror ({}); it ends once its connection does",
                path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(file)
}

/// File events on everything the host's members write wake the relay.
fn watch(store: &Store, team: &TeamName, tx: &UnboundedSender<Event>) -> Result<Vec<Subscription>> {
    let claims = store.relay_dir(team).join("claims");
    fsio::ensure_dir(&claims)?;
    let dirs = [
        store.team_dir(team),
        store.inboxes_dir(team),
        store.tasks_dir(team),
        store.pending_dir(team),
        claims,
    ];
    // One subscriber per directory, all through the process's one watch hub.
    let mut watches: Vec<Result<Subscription>> = dirs
        .iter()
        .map(|dir| {
            let changed = tx.clone();
            Subscription::changes(dir, move || {
                let _ = changed.send(Event::Changed);
            })
        })
        .collect();
    let exited = tx.clone();
    watches.push(Subscription::exits(&store.alive_dir(team), move || {
        let _ = exited.send(Event::Changed);
    }));
    // Without file events (no inotify instance left) the re-scan timer still finds everything.
    let mut subs = Vec::new();
    for w in watches {
        match w {
            Ok(s) => subs.push(s),
            Err(e) => eprintln!("swarm relay: warning: {e}; looking every few seconds instead"),
        }
    }
    Ok(subs)
}

impl Relay<'_> {
    async fn run(&mut self, mut rx: UnboundedReceiver<Event>) -> Result<i32> {
        let mut tick = tokio::time::interval(rescan_interval().min(Duration::from_secs(2)));
        loop {
            tokio::select! {
                event = rx.recv() => {
                    let Some(event) = event else { return Ok(0) };
                    // Every event that piled up is handled in order (frames come in bursts);
                    // one scan follows them all.
                    let mut batch = vec![event];
                    while let Ok(more) = rx.try_recv() {
                        batch.push(more);
                    }
                    for event in batch {
                        match event {
                            Event::Closed => return Ok(0),
                            Event::Frame(Err(e)) => {
                                eprintln!("swarm relay: {e}");
                                return Ok(1);
                            }
                            Event::Frame(Ok(frame)) => {
                                self.last_heard = Instant::now();
                                if let Some(code) = self.on_frame(frame)? {
                                    return Ok(code);
                                }
                            }
                            Event::Changed => {}
                        }
                    }
                    self.scan()?;
                }
                _ = tick.tick() => {
                    if self.last_heard.elapsed() > SILENCE {
                        eprintln!("swarm relay: nothing from home for 45 s; ending");
                        return Ok(0);
                    }
                    self.scan()?;
                }
            }
        }
    }

    pub(super) fn send(&mut self, frame: &Up) -> Result<()> {
        frame::send(&mut self.out, frame)
    }

    fn on_frame(&mut self, frame: Down) -> Result<Option<i32>> {
        if let Down::Hello {
            version,
            team,
            host,
            home,
            ..
        } = &frame
        {
            if version != VERSION {
                eprintln!(
                    "swarm relay: the lead's machine runs swarm {version} and this host swarm {VERSION}; both must run the same version"
                );
                return Ok(Some(1));
            }
            if team != self.team || host != self.alias {
                return Err(Error::usage("the lead's hello names another team or host"));
            }
            self.hello = true;
            let marker = serde_json::json!({
                "team": team, "host": host, "home": home, "since": fsio::now_ms(),
            });
            fsio::write_json(&self.store.mirror_marker_path(self.team), &marker)?;
            return Ok(None);
        }
        if !self.hello {
            return Err(Error::usage(
                "the lead's machine sent state before its hello",
            ));
        }
        self.apply(frame)?;
        Ok(None)
    }

    /// Finds what the host's members wrote and sends it home, and reports their state.
    fn scan(&mut self) -> Result<()> {
        if !self.hello {
            return Ok(());
        }
        let ops = self.outgoing()?;
        for (id, op, pending) in ops {
            self.in_flight.insert(id.clone(), pending);
            self.send(&Up::Op { op: id, body: op })?;
        }
        self.stop_retired()?;
        let report = self.report();
        if report != self.last_report || self.last_report_at.elapsed() > REPORT_EVERY {
            self.last_report = report.clone();
            self.last_report_at = Instant::now();
            self.send(&Up::Report { members: report })?;
        }
        self.out
            .flush()
            .map_err(Error::io("write", "the relay connection"))?;
        Ok(())
    }
}
