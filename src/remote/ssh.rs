//! The OpenSSH client, the one way swarm reaches another host.
//!
//! Every connection to a host goes through one multiplexed master (`ControlMaster=auto`, a
//! `ControlPath` in a private 0700 directory, `ControlPersist`), so the version check, the relay
//! stream, each teammate's pane and `swarm logs` share one TCP connection and one login, and a
//! call after the first costs a round trip, not a handshake. `BatchMode=yes` means nothing ever
//! waits for a password in a pane nobody watches (use keys or an agent), and `ServerAlive*`
//! notices a dead network in about 15 s. Which host and how is the user's ssh configuration:
//! `SWARM_SSH_CONFIG` names a file to use instead of `~/.ssh/config` (`ssh -F`).
//!
//! ssh hands the remote side one string, which the remote user's login shell parses. So that
//! string is built here and only here ([`remote_command`]): argv, each word single-quoted for a
//! POSIX shell, exactly once. The words are swarm's own (the remote swarm's path, a subcommand,
//! validated names and hex ids); whatever a user wrote (directories, prompts, environment)
//! travels on the connection's standard input as JSON, never on the command line. The master is
//! ssh's own process: swarm never signals it, and closes it with `ssh -O exit`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::host::Host;
use crate::error::{Error, Result};

/// Names a file to use as the ssh client configuration (`ssh -F FILE`).
pub(crate) const CONFIG_ENV: &str = "SWARM_SSH_CONFIG";

/// What a process started elsewhere (a pane, the relay link) needs from the launcher's
/// environment to reach hosts as the launcher did: the ssh config, the agent with the keys, and
/// the runtime directory holding the master's socket.
pub(crate) const FORWARDED_ENV: &[&str] = &[CONFIG_ENV, "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR"];

/// How long the master outlives its last session.
const PERSIST_SECS: u32 = 300;
/// How long a one-shot remote command may take before swarm gives up on it.
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// ssh's own exit status for "could not connect, or the connection broke".
pub(crate) const SSH_FAILED: i32 = 255;

/// How to reach one host.
#[derive(Debug, Clone)]
pub(crate) struct Ssh {
    host: Host,
    config: Option<PathBuf>,
    control_dir: PathBuf,
}

impl Ssh {
    /// The client for `host`, with this process's ssh configuration.
    pub(crate) fn to(host: &Host) -> Result<Ssh> {
        let config = std::env::var_os(CONFIG_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Ok(Ssh {
            host: host.clone(),
            config,
            control_dir: control_dir()?,
        })
    }

    pub(crate) fn host(&self) -> &Host {
        &self.host
    }

    /// The options every call shares: the config file, the master, no prompts, keepalives.
    fn options(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(config) = &self.config {
            args.extend(["-F".to_string(), config.display().to_string()]);
        }
        let path = self.control_dir.join("%C");
        for opt in [
            "ControlMaster=auto".to_string(),
            format!("ControlPath={}", path.display()),
            format!("ControlPersist={PERSIST_SECS}"),
            "BatchMode=yes".into(),
            "ConnectTimeout=10".into(),
            "ServerAliveInterval=5".into(),
            "ServerAliveCountMax=3".into(),
        ] {
            args.extend(["-o".to_string(), opt]);
        }
        args
    }

    /// `ssh OPTIONS -T|-tt -- HOST 'word' 'word' ...`: argv that runs `remote` on the host, with
    /// a terminal (`-tt`, for a pane) or without (`-T`, for a stream or a one-shot command).
    pub(crate) fn argv(&self, remote: &[String], tty: bool) -> Vec<String> {
        let mut argv = vec!["ssh".to_string()];
        argv.extend(self.options());
        argv.push(if tty { "-tt" } else { "-T" }.into());
        argv.extend(["--".into(), self.host.to_string(), remote_command(remote)]);
        argv
    }

    /// Runs `remote` on the host with `stdin` as its input; its standard output when it exits
    /// 0. An ssh failure (exit 255) is [`Error::Unreachable`]; a remote failure names the remote
    /// command and carries its error output.
    pub(crate) fn run(&self, remote: &[String], stdin: &[u8]) -> Result<String> {
        let argv = self.argv(remote, false);
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.not_started(e))?;
        let input = stdin.to_vec();
        let mut pipe = child.stdin.take();
        let writer = std::thread::spawn(move || {
            if let Some(p) = pipe.as_mut() {
                let _ = p.write_all(&input);
            }
        });
        let (code, out, err) = wait_bounded(child, RUN_LIMIT);
        let _ = writer.join();
        match code {
            Some(0) => Ok(out),
            Some(SSH_FAILED) | None => Err(self.unreachable(if code.is_none() {
                format!("no answer within {} s", RUN_LIMIT.as_secs())
            } else {
                err
            })),
            Some(code) => Err(Error::Command {
                program: format!("{} on {}", remote.get(1).map_or("swarm", |s| s), self.host),
                detail: if err.trim().is_empty() {
                    format!("it exited with status {code}")
                } else {
                    err.trim().to_string()
                },
            }),
        }
    }

    /// Starts `remote` on the host with its standard input and output piped to this process
    /// (the relay stream); its error output goes to this process's.
    pub(crate) fn spawn(&self, remote: &[String]) -> Result<Child> {
        let argv = self.argv(remote, false);
        Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| self.not_started(e))
    }

    /// The error for a host ssh cannot reach; `detail` is what ssh said.
    pub(crate) fn unreachable(&self, detail: impl Into<String>) -> Error {
        let detail = detail.into();
        let detail = detail.trim();
        Error::Unreachable {
            host: self.host.to_string(),
            detail: if detail.is_empty() {
                "ssh exited with status 255 and said nothing".into()
            } else {
                detail.lines().last().unwrap_or(detail).to_string()
            },
        }
    }

    fn not_started(&self, e: std::io::Error) -> Error {
        self.unreachable(if e.kind() == std::io::ErrorKind::NotFound {
            "the OpenSSH client (ssh) is not installed or not on PATH".to_string()
        } else {
            format!("could not start ssh: {e}")
        })
    }
}

/// The command string ssh hands the remote login shell: every word of `argv` in single quotes
/// (a `'` inside becomes `'\''`), joined by spaces. The one place swarm builds a shell string;
/// it is parsed once, by the remote user's POSIX shell, back into exactly `argv`.
pub(crate) fn remote_command(argv: &[String]) -> String {
    argv.iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `$XDG_RUNTIME_DIR/swarm-ssh`, else `/tmp/swarm-ssh-<uid>`: made 0700 and refused when it is
/// a symlink, not a directory, or another user's (its sockets are logins to other hosts).
fn control_dir() -> Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = rustix::process::getuid().as_raw();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(run) => PathBuf::from(run).join("swarm-ssh"),
        None => std::env::temp_dir().join(format!("swarm-ssh-{uid}")),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io("create", &dir)(e)),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(Error::io("inspect", &dir))?;
    if !meta.is_dir() {
        return Err(Error::NotARegularFile {
            path: dir,
            found: "symlink or file",
        });
    }
    if meta.uid() != uid {
        return Err(Error::NotOwned {
            path: dir,
            owner: meta.uid(),
            me: uid,
        });
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(Error::io("chmod", &dir))?;
    }
    Ok(dir)
}

/// Waits for `child` (all three pipes taken here) up to `limit`; its exit code (`None` when
/// it was still running and was killed), standard output and error output.
fn wait_bounded(mut child: Child, limit: Duration) -> (Option<i32>, String, String) {
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status.code().unwrap_or(SSH_FAILED)),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                // Our own child, by its handle: the ssh client we started for this call.
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    (
        code,
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a POSIX shell makes of the command string is exactly the argv, whatever it holds.
    #[test]
    fn the_remote_command_is_parsed_back_into_exactly_the_argv() {
        let words: Vec<String> = [
            "/opt/my swarm/bin/swarm",
            "it's",
            "$(touch pwned)",
            "`id`",
            "a;b",
            "x && y",
            "back\\slash",
            "*",
            "~",
            "",
            "new\nline",
            "#not a comment",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let dir = tempfile::tempdir().unwrap();
        let script = format!("printf '%s\\0' {}", remote_command(&words));
        let out = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        let mut back: Vec<String> = out
            .stdout
            .split(|b| *b == 0)
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        assert_eq!(back.pop().as_deref(), Some(""), "each word ends in a NUL");
        assert_eq!(back, words);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing ran"
        );
        assert_eq!(remote_command(&["''".into()]), r"''\'''\'''");
    }

    #[test]
    fn every_call_goes_through_the_one_master_without_prompts() {
        let ssh = Ssh {
            host: "box1".parse().unwrap(),
            config: Some("/cfg".into()),
            control_dir: "/run/swarm-ssh".into(),
        };
        let argv = ssh.argv(&["swarm".into(), "--version".into()], false);
        let text = argv.join(" ");
        assert!(
            text.starts_with("ssh -F /cfg -o ControlMaster=auto"),
            "{text}"
        );
        assert!(text.contains("ControlPath=/run/swarm-ssh/%C"), "{text}");
        assert!(text.contains("BatchMode=yes"), "{text}");
        assert_eq!(
            argv[argv.len() - 3..],
            ["--", "box1", "'swarm' '--version'"]
        );
        assert!(ssh.argv(&[], true).contains(&"-tt".to_string()));
    }
}
