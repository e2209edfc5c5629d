//! Real OpenSSH servers on 127.0.0.1 standing in for remote hosts.
//!
//! Each [`Host`] is an `sshd` of its own, started by the test on a free port with its own host
//! key, config and `authorized_keys` in a temp dir, logging in as the test's own user but with a
//! second HOME (`SetEnv`), so its swarm keeps a different store directory and its tmux servers
//! a different socket directory from the lead's. [`Hosts`] writes one ssh client config naming
//! every host (`SWARM_SSH_CONFIG`, i.e. `ssh -F`): swarm keeps no host database of its own.
//! [`Host::cut`] ends every process the server started (its listener and each connection),
//! which is what a broken network does to a session; [`Host::restore`] starts it again on the
//! same port. Dropping a host stops its server, the remote tmux servers under its HOME and the
//! home side's links and ssh masters for the test (found by the test's own temp dir).

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::support::{clean_command, BIN};

const SSHD: &str = "/usr/sbin/sshd";

/// One remote host: an sshd and the HOME it logs into.
pub struct Host {
    pub alias: String,
    pub dir: TempDir,
    pub port: u16,
    /// The remote user's HOME.
    pub home: PathBuf,
    extra_env: Vec<(String, String)>,
}

impl Host {
    fn new(alias: &str, extra_env: &[(&str, &str)]) -> Host {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: run scripts/test, which installs openssh-server (or apt-get install openssh-server)"
        );
        if unsafe { libc::getuid() } == 0 {
            assert!(
                Path::new("/run/sshd").is_dir(),
                "/run/sshd is missing (sshd needs it when run as root): run scripts/test, or mkdir -p /run/sshd"
            );
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("tmux")).unwrap();
        let keygen = |name: &str| {
            let ok = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join(name))
                .status()
                .expect("ssh-keygen is installed with openssh-client");
            assert!(ok.success());
        };
        keygen("host_key");
        let port = free_port();
        let host = Host {
            alias: alias.to_string(),
            dir,
            port,
            home,
            extra_env: extra_env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        host.start();
        host
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes the server's config and starts it; returns once it accepts connections.
    fn start(&self) {
        let bin_dir = Path::new(BIN).parent().unwrap();
        // A PATH among the extra variables replaces the default one.
        let default_path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir.display());
        let given = |key: &str| self.extra_env.iter().any(|(k, _)| k == key);
        let mut set_env = format!(
            "SetEnv HOME={} TMUX_TMPDIR={}",
            self.home.display(),
            self.home.join("tmux").display()
        );
        if !given("PATH") {
            set_env.push_str(&format!(" PATH={default_path}"));
        }
        if !given("SWARM_RELAY_TRACE") {
            set_env.push_str(" SWARM_RELAY_TRACE=1");
        }
        for (k, v) in &self.extra_env {
            set_env.push_str(&format!(" {k}={v}"));
        }
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {key}\nAuthorizedKeysFile {keys}\n\
             PidFile {pid}\nUsePAM no\nStrictModes no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nAllowUsers {user}\n\
             {set_env}\n",
            port = self.port,
            key = self.path("host_key").display(),
            keys = self.path("authorized_keys").display(),
            pid = self.path("sshd.pid").display(),
        );
        std::fs::write(self.path("sshd_config"), config).unwrap();
        let _ = std::fs::remove_file(self.path("sshd.pid"));
        let status = Command::new(SSHD)
            .arg("-f")
            .arg(self.path("sshd_config"))
            .arg("-E")
            .arg(self.path("sshd.log"))
            .stdin(Stdio::null())
            .status()
            .expect("start sshd");
        assert!(status.success(), "sshd did not start: {}", self.log());
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "sshd on port {} never listened: {}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The host's side for a failure message: its mirrors' tasks and its panes' screens.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let mirrors = self.home.join(".local/share/swarm/mirrors");
        for m in std::fs::read_dir(&mirrors).into_iter().flatten().flatten() {
            let tasks = m.path().join("tasks/t");
            let bases = m.path().join("teams/t/relay/base");
            let files = std::fs::read_dir(&tasks).into_iter().flatten().flatten();
            let base_files = std::fs::read_dir(&bases).into_iter().flatten().flatten();
            for t in files.chain(base_files) {
                let text = std::fs::read_to_string(t.path()).unwrap_or_default();
                out.push_str(&format!(
                    "--- {} on {} ---\n{text}\n",
                    t.path().display(),
                    self.alias
                ));
            }
        }
        for user in std::fs::read_dir(self.home.join("tmux"))
            .into_iter()
            .flatten()
            .flatten()
        {
            for s in std::fs::read_dir(user.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let shown = clean_command("tmux")
                    .arg("-S")
                    .arg(s.path())
                    .args(["capture-pane", "-p", "-S", "-40"])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default();
                out.push_str(&format!(
                    "--- pane on {} ({}) ---\n{}\n",
                    self.alias,
                    s.path().display(),
                    shown.trim_end()
                ));
            }
        }
        out
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path("sshd.log")).unwrap_or_default()
    }

    fn listener(&self) -> Option<i32> {
        std::fs::read_to_string(self.path("sshd.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Every process this host's server runs now: its sessions and what they started.
    pub fn server_processes(&self) -> Vec<i32> {
        self.listener().map(descendants).unwrap_or_default()
    }

    /// Breaks the network to this host: its listener and every connection it serves (each a
    /// process the listener started) are killed, so nothing can connect until [`Host::restore`].
    pub fn cut(&self) {
        let Some(listener) = self.listener() else {
            return;
        };
        // Stopped first, it accepts no connection while its children are found and killed.
        unsafe { libc::kill(listener, libc::SIGSTOP) };
        for pid in descendants(listener) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        unsafe { libc::kill(listener, libc::SIGKILL) };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "sshd still listens"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The network is back: the server listens again on the same port.
    pub fn restore(&self) {
        self.start();
    }

    /// The mirror's root on this host for a home store (there is one mirror per store).
    pub fn mirror(&self) -> PathBuf {
        let mirrors = self.home.join(".local/share/swarm/mirrors");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&mirrors)
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        assert_eq!(found.len(), 1, "one mirror under {}", mirrors.display());
        found.remove(0)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(pid) = self.listener() {
            let mut doomed = descendants(pid);
            doomed.push(pid);
            for pid in doomed {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        // The remote teammates' tmux servers: their sockets are under this host's HOME.
        let sockets = self
            .home
            .join("tmux")
            .join(format!("tmux-{}", unsafe { libc::getuid() }));
        if let Ok(entries) = std::fs::read_dir(&sockets) {
            for e in entries.flatten() {
                let _ = clean_command("tmux")
                    .arg("-S")
                    .arg(e.path())
                    .arg("kill-server")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

/// Every process under `pid` (children, their children, ...).
fn descendants(pid: i32) -> Vec<i32> {
    let mut parent: HashMap<i32, i32> = HashMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if let Some(pp) = rest.split_whitespace().nth(1).and_then(|s| s.parse().ok()) {
            parent.insert(p, pp);
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(p) = frontier.pop() {
        for (child, pp) in &parent {
            if *pp == p && !out.contains(child) {
                out.push(*child);
                frontier.push(*child);
            }
        }
    }
    out
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The remote hosts of one test and the ssh client config that names them.
pub struct Hosts {
    pub hosts: Vec<Host>,
    pub dir: TempDir,
}

impl Hosts {
    /// One sshd per alias (`extra_env` is set in every session on them).
    pub fn start(aliases: &[&str], extra_env: &[(&str, &str)]) -> Hosts {
        let dir = tempfile::tempdir().expect("temp dir");
        let ok = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(dir.path().join("client_key"))
            .status()
            .unwrap();
        assert!(ok.success());
        let public = std::fs::read_to_string(dir.path().join("client_key.pub")).unwrap();
        let hosts: Vec<Host> = aliases
            .iter()
            .map(|a| {
                let h = Host::new(a, extra_env);
                std::fs::write(h.path("authorized_keys"), &public).unwrap();
                h
            })
            .collect();
        let mut config = String::new();
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        for h in &hosts {
            config.push_str(&format!(
                "Host {}\n  HostName 127.0.0.1\n  Port {}\n  User {user}\n  IdentityFile {}\n  \
                 IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  \
                 LogLevel ERROR\n",
                h.alias,
                h.port,
                dir.path().join("client_key").display()
            ));
        }
        // An alias that resolves but where nothing listens: the unreachable host.
        config.push_str(&format!(
            "Host nowhere\n  HostName 127.0.0.1\n  Port {}\n  User {user}\n  IdentityFile {}\n  LogLevel ERROR\n",
            free_port(),
            dir.path().join("client_key").display()
        ));
        std::fs::write(dir.path().join("ssh_config"), config).unwrap();
        std::fs::create_dir_all(dir.path().join("run")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.path().join("run"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        Hosts { hosts, dir }
    }

    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// The runtime directory holding the home side's ssh masters.
    pub fn runtime_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    pub fn get(&self, alias: &str) -> &Host {
        self.hosts.iter().find(|h| h.alias == alias).unwrap()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // The home side's links and ssh masters of this test, found by this test's temp dir
        // in their command lines (every one was started for it, through it).
        let mine = self.dir.path().display().to_string();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&cmdline);
            if cmdline.contains(&mine) && pid != std::process::id() as i32 {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}
