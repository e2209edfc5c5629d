//! The lead machine's end of a host's relay: `swarm relay link --team T --host H`.
//!
//! One link per team and host, started by the launch that first places a teammate there
//! (`daemon`). It opens `swarm relay serve` on the host over the multiplexed ssh connection and
//! keeps the mirror there in step with the home store, which stays the source of truth: on
//! every change it sees (file events on the roster, the inboxes, the tasks and the permission
//! decisions, plus a slow re-scan) it sends what the relay has not had on this connection, and
//! it applies the relay's operations through [`super::admit`], answering each once applied. A
//! `Sync` after each round marks a point the launch can wait for. When the connection breaks it
//! says so in its state file (`state`), waits (0.5 s doubling to 30 s) and connects again; the
//! new relay replays whatever was not acknowledged and the link sends everything afresh, both
//! idempotent. A host that runs another swarm version ends the link with that as its state.
//! It exits on SIGTERM (`swarm down`) or once no member on the host is left on the roster.

use std::io::BufReader;
use std::process::{Child, ChildStdin};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use super::admit::{self, Applied};
use super::daemon::LinkLock;
use super::downstream::{self, members_on, Scope, Sent};
use super::frame::{self, Down, Up, VERSION};
use super::ssh::Ssh;
use super::state::{LinkState, RemoteEnd};
use super::{host_of, mirror_id, Host};
use crate::error::{Error, Result};
use crate::process::signals::Signals;
use crate::store::fsio;
use crate::store::machine::Machine;
use crate::store::names::{AgentName, TeamName};
use crate::store::paths::Store;
use crate::store::roster::Roster;
use crate::store::watcher::{rescan_interval, Subscription};

/// Longest silence from the relay before the connection is taken for dead.
const SILENCE: Duration = Duration::from_secs(45);
const PING_EVERY: Duration = Duration::from_secs(10);
const FIRST_RETRY: Duration = Duration::from_millis(500);
const LAST_RETRY: Duration = Duration::from_secs(30);
/// How long the link stays once no member on its host is left.
const LINGER: Duration = Duration::from_secs(10);

enum Event {
    Changed,
    /// A launch wants a sync mark now (`daemon::poke`).
    Poked,
    Frame(u64, Box<std::result::Result<Up, String>>),
    Closed(u64),
}

/// Runs the link until it is stopped or has nothing left to serve; the exit code.
pub(crate) fn run(store: &Store, team: &TeamName, host: &Host, remote_swarm: &str) -> Result<i32> {
    let Some(_lock) = LinkLock::hold(store, team, host)? else {
        eprintln!("swarm: a link to {host} for team {team} runs already");
        return Ok(0);
    };
    crate::process::block_on(async {
        let (tx, rx) = unbounded_channel();
        let _watches = watch(store, team, &tx)?;
        let mut link = Link {
            store,
            team,
            host,
            remote_swarm,
            ssh: Ssh::to(host)?,
            applied: Applied::load(store, team, host)?,
            state: LinkState::new(host),
            tx,
            session: None,
            generation: 0,
        };
        link.state.save(store, team)?;
        link.serve(rx).await
    })
}

/// File events on everything a mirror follows wake the link.
fn watch(store: &Store, team: &TeamName, tx: &UnboundedSender<Event>) -> Result<Vec<Subscription>> {
    let dirs = [
        store.team_dir(team),
        store.inboxes_dir(team),
        store.tasks_dir(team),
        store.resolved_dir(team),
    ];
    let poke = super::daemon::poke_dir(store, team);
    for dir in dirs.iter().chain([&poke]) {
        fsio::ensure_dir(dir)?;
    }
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
    let poked = tx.clone();
    watches.push(Subscription::changes(&poke, move || {
        let _ = poked.send(Event::Poked);
    }));
    // Without file events (no inotify instance left) the re-scan timer still finds everything.
    let mut subs = Vec::new();
    for w in watches {
        match w {
            Ok(s) => subs.push(s),
            Err(e) => eprintln!(
                "swarm: warning: {e}; looking every {:?} instead",
                rescan_interval()
            ),
        }
    }
    Ok(subs)
}

struct Link<'a> {
    store: &'a Store,
    team: &'a TeamName,
    host: &'a Host,
    remote_swarm: &'a str,
    ssh: Ssh,
    applied: Applied,
    state: LinkState,
    tx: UnboundedSender<Event>,
    session: Option<Session>,
    generation: u64,
}

/// One connection to the relay, and what was sent on it.
struct Session {
    generation: u64,
    child: Child,
    stdin: ChildStdin,
    /// The relay said hello (same version): state may flow.
    live: bool,
    sent: Sent,
    last_heard: Instant,
    last_ping: Instant,
}

impl Link<'_> {
    async fn serve(&mut self, mut rx: UnboundedReceiver<Event>) -> Result<i32> {
        let mut signals = Signals::catch()?;
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        let mut backoff = FIRST_RETRY;
        let mut retry_at = Instant::now();
        let mut last_scan = Instant::now();
        let mut alone_since: Option<Instant> = None;
        loop {
            if self.session.is_none() && Instant::now() >= retry_at {
                if let Err(e) = self.connect() {
                    self.disconnected(e.to_string());
                    retry_at = Instant::now() + backoff;
                    backoff = (backoff * 2).min(LAST_RETRY);
                }
            }
            tokio::select! {
                caught = signals.recv() => {
                    self.close(&format!("stopped ({caught:?})"));
                    return Ok(0);
                }
                event = rx.recv() => {
                    let Some(event) = event else { return Ok(0) };
                    // Every event that piled up is handled in order; the file events among
                    // them take one round, after the frames.
                    let mut batch = vec![event];
                    while let Ok(more) = rx.try_recv() {
                        batch.push(more);
                    }
                    let (mut changed, mut poked) = (false, false);
                    for event in batch {
                        match event {
                            Event::Changed => changed = true,
                            Event::Poked => poked = true,
                            Event::Frame(g, frame) if Some(g) == self.live_generation() => {
                                match *frame {
                                    Ok(frame) => {
                                        if let Some(code) = self.on_frame(frame, &mut backoff)? {
                                            return Ok(code);
                                        }
                                    }
                                    Err(e) => self.drop_session(&e),
                                }
                            }
                            Event::Closed(g) if Some(g) == self.live_generation() => {
                                self.drop_session("the connection closed");
                                retry_at = Instant::now() + backoff;
                                backoff = (backoff * 2).min(LAST_RETRY);
                            }
                            Event::Frame(..) | Event::Closed(_) => {}
                        }
                    }
                    if changed || poked {
                        self.round(poked);
                        last_scan = Instant::now();
                    }
                }
                _ = tick.tick() => {
                    self.keepalive();
                    if last_scan.elapsed() >= rescan_interval() {
                        self.round(false);
                        last_scan = Instant::now();
                        if self.serving() {
                            alone_since = None;
                        } else if alone_since.get_or_insert_with(Instant::now).elapsed() > LINGER {
                            self.close("no member of the team is on this host any more");
                            return Ok(0);
                        }
                    }
                }
            }
        }
    }

    fn live_generation(&self) -> Option<u64> {
        self.session.as_ref().map(|s| s.generation)
    }

    /// The members placed on this host.
    fn members(&self) -> Vec<AgentName> {
        let Ok(config) = Roster::new(self.store, self.team).load() else {
            return vec![];
        };
        members_on(&config, self.host)
    }

    /// Whether any member placed on this host is still counted in (not retired).
    fn serving(&self) -> bool {
        Roster::new(self.store, self.team).load().is_ok_and(|c| {
            c.teammates()
                .any(|m| host_of(m).as_ref() == Some(self.host) && !m.retired())
        })
    }

    /// Starts `swarm relay serve` on the host and says hello.
    fn connect(&mut self) -> Result<()> {
        self.generation += 1;
        let generation = self.generation;
        let remote = vec![
            self.remote_swarm.to_string(),
            "relay".into(),
            "serve".into(),
            "--mirror".into(),
            mirror_id(self.store),
            "--team".into(),
            self.team.to_string(),
            "--host".into(),
            self.host.to_string(),
        ];
        let mut child = self.ssh.spawn(&remote)?;
        let stdout = child.stdout.take().expect("piped");
        let Some(stdin) = child.stdin.take() else {
            return Err(Error::Backend("ssh has no standard input".into()));
        };
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            frame::read_all::<Up>(BufReader::new(stdout), |f| {
                tx.send(Event::Frame(generation, Box::new(f))).is_ok()
            });
            let _ = tx.send(Event::Closed(generation));
        });
        let mut session = Session {
            generation,
            child,
            stdin,
            live: false,
            sent: Sent::default(),
            last_heard: Instant::now(),
            last_ping: Instant::now(),
        };
        let hello = Down::Hello {
            version: VERSION.into(),
            team: self.team.clone(),
            host: self.host.clone(),
            home: Machine::this().clone(),
            now_ms: fsio::now_ms(),
            members: self.members(),
        };
        frame::send(&mut session.stdin, &hello)?;
        self.session = Some(session);
        Ok(())
    }

    /// Handles one frame from the relay; `Some(code)` ends the link.
    fn on_frame(&mut self, frame: Up, backoff: &mut Duration) -> Result<Option<i32>> {
        if let Some(s) = self.session.as_mut() {
            s.last_heard = Instant::now();
        }
        match frame {
            Up::Hello {
                version,
                machine,
                now_ms,
                root,
            } => {
                if version != VERSION {
                    let why = format!(
                        "host {} runs swarm {version} and this machine swarm {VERSION}: install swarm {VERSION} on {} (or point remoteSwarm / --remote-swarm at it)",
                        self.host, self.host
                    );
                    self.state.fatal = Some(why.clone());
                    self.close(&why);
                    return Ok(Some(1));
                }
                *backoff = FIRST_RETRY;
                let skew = now_ms as i64 - fsio::now_ms() as i64;
                self.state.connected = true;
                self.state.since_ms = fsio::now_ms();
                self.state.last_error = None;
                self.state.skew_ms.get_or_insert(skew);
                self.state.remote = Some(RemoteEnd {
                    machine,
                    version,
                    root,
                });
                self.save_state();
                if let Some(s) = self.session.as_mut() {
                    s.live = true;
                }
                eprintln!("swarm: connected to {}", self.host);
                self.round(true);
            }
            Up::Op { op, body } => {
                let scope = Scope::of(&body);
                match admit::apply(
                    self.store,
                    self.team,
                    self.host,
                    &mut self.applied,
                    &op,
                    body,
                ) {
                    Ok(outcome) => {
                        if let frame::Outcome::Refused { reason } = &outcome {
                            eprintln!("swarm: refused {op} from {}: {reason}", self.host);
                        }
                        // What the operation changed goes down before its answer, so the
                        // relay writes a granted task before it tells the claimer.
                        self.send_scope(scope);
                        self.send(&Down::Answer { op, outcome });
                    }
                    // Not answered: the relay sends it again on the next connection.
                    Err(e) => eprintln!("swarm: could not apply {op} from {}: {e}", self.host),
                }
            }
            Up::Synced { mark } => {
                if mark > self.state.synced_ms {
                    self.state.synced_ms = mark;
                    self.save_state();
                }
            }
            Up::Report { members } => {
                if members != self.state.members {
                    self.state.members = members;
                    self.state.members_ms = fsio::now_ms();
                    self.save_state();
                }
            }
            Up::Pong { now_ms, echo } => {
                let back = fsio::now_ms();
                let mid = echo + back.saturating_sub(echo) / 2;
                let skew = now_ms as i64 - mid as i64;
                if self.state.skew_ms.is_none_or(|s| (s - skew).abs() > 100) {
                    self.state.skew_ms = Some(skew);
                    self.save_state();
                }
            }
        }
        Ok(None)
    }

    fn keepalive(&mut self) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        if s.last_heard.elapsed() > SILENCE {
            self.drop_session("no answer from the relay for 45 s");
            return;
        }
        if s.live && s.last_ping.elapsed() >= PING_EVERY {
            s.last_ping = Instant::now();
            self.send(&Down::Ping {
                now_ms: fsio::now_ms(),
            });
        }
    }

    fn send(&mut self, frame: &Down) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        if let Err(e) = frame::send(&mut s.stdin, frame) {
            self.drop_session(&e.to_string());
        }
    }

    /// Sends whatever changed at home since this connection last sent it, then (when it sent
    /// anything, or `mark`) a `Sync` the relay echoes once it has applied all of it.
    fn round(&mut self, mark: bool) {
        if !self.session.as_ref().is_some_and(|s| s.live) {
            return;
        }
        let started = fsio::now_ms();
        let frames = match self.changes(Scope::All) {
            Ok(frames) => frames,
            Err(e) => {
                eprintln!("swarm: could not read the team for {}: {e}", self.host);
                return;
            }
        };
        for f in &frames {
            self.send(f);
        }
        if mark || !frames.is_empty() {
            self.send(&Down::Sync { mark: started });
        }
    }

    fn send_scope(&mut self, scope: Scope) {
        match self.changes(scope) {
            Ok(frames) => {
                for f in &frames {
                    self.send(f);
                }
            }
            Err(e) => eprintln!("swarm: could not read the team for {}: {e}", self.host),
        }
    }

    /// The frames that bring the mirror up to home, within `scope`, noted as sent.
    fn changes(&mut self, scope: Scope) -> Result<Vec<Down>> {
        match self.session.as_mut() {
            Some(s) => downstream::changes(self.store, self.team, self.host, &mut s.sent, scope),
            None => Ok(vec![]),
        }
    }

    fn drop_session(&mut self, why: &str) {
        if let Some(mut s) = self.session.take() {
            // Our own ssh client, by its handle.
            let _ = s.child.kill();
            let _ = s.child.wait();
            eprintln!("swarm: lost {}: {why}", self.host);
        }
        self.disconnected(why.to_string());
    }

    fn disconnected(&mut self, why: String) {
        if self.state.connected || self.state.last_error.as_deref() != Some(why.as_str()) {
            if self.state.connected {
                self.state.since_ms = fsio::now_ms();
            }
            self.state.connected = false;
            self.state.last_error = Some(why);
            self.save_state();
        }
    }

    fn close(&mut self, why: &str) {
        if let Some(mut s) = self.session.take() {
            drop(s.stdin);
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
        self.state.connected = false;
        self.state.since_ms = fsio::now_ms();
        self.state.last_error = Some(why.to_string());
        self.save_state();
    }

    fn save_state(&self) {
        if let Err(e) = self.state.save(self.store, self.team) {
            eprintln!("swarm: could not write the state of {}: {e}", self.host);
        }
    }
}
