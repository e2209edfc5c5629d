//! Which machine a process runs on: its host name and its boot id, the identity a pid or a lock
//! holder has beyond its pid.
//!
//! A pid, a pid start time and a flock mean something only on the machine (and in the boot)
//! that made them. Once teammates run on other hosts (`remote/`), records cross machines: a
//! roster mirrored to a build box holds the lead machine's pids, and a store on a shared file
//! system holds lock records written by several hosts, whose flocks the file system may not
//! carry. So every record swarm keeps of a process (lock owner, liveness lock, pid record) also
//! says which machine wrote it, and a record from another machine is never judged by this
//! machine's process table or clock: not signalled, not called dead, never broken on age alone.
//! A record from this host with another boot id was written before a reboot, so its holder is
//! certainly gone.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// Host names longer than this are cut, so a record stays one short line.
const MAX_HOST: usize = 64;

/// A machine as records name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Machine {
    pub host: String,
    /// `/proc/sys/kernel/random/boot_id` on Linux; empty where there is none to read.
    #[serde(default)]
    pub boot: String,
}

/// How a record's machine relates to this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Whose {
    /// This machine, this boot: the record can be checked here.
    Here,
    /// This host before a reboot: whatever the record names is gone.
    EarlierBoot,
    /// Another machine: nothing here can judge it.
    Elsewhere,
}

impl Machine {
    /// This machine, read once per process.
    pub(crate) fn this() -> &'static Machine {
        static THIS: OnceLock<Machine> = OnceLock::new();
        THIS.get_or_init(|| {
            let mut host = rustix::system::uname()
                .nodename()
                .to_string_lossy()
                .into_owned();
            if host.len() > MAX_HOST {
                let mut cut = MAX_HOST;
                while !host.is_char_boundary(cut) {
                    cut -= 1;
                }
                host.truncate(cut);
            }
            let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            Machine { host, boot }
        })
    }

    /// Where a record written on `self` was written, seen from this machine.
    pub(crate) fn whose(&self) -> Whose {
        let here = Machine::this();
        if self.host != here.host {
            Whose::Elsewhere
        } else if self.boot.is_empty() || here.boot.is_empty() || self.boot == here.boot {
            Whose::Here
        } else {
            Whose::EarlierBoot
        }
    }

    /// `host` (with the boot id's first block when known), for messages.
    pub(crate) fn label(&self) -> String {
        match self.boot.split('-').next().filter(|b| !b.is_empty()) {
            Some(boot) => format!("{} (boot {boot})", self.host),
            None => self.host.clone(),
        }
    }
}

/// Where a record that may name a machine was written: a record without one predates this
/// field and was written by a swarm on the same store, which until remote hosts existed meant
/// this machine.
pub(crate) fn whose(machine: Option<&Machine>) -> Whose {
    machine.map_or(Whose::Here, Machine::whose)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_judged_only_on_its_own_machine_and_boot() {
        let here = Machine::this().clone();
        assert_eq!(here.whose(), Whose::Here);
        assert_eq!(whose(None), Whose::Here);
        let other = Machine {
            host: format!("{}-elsewhere", here.host),
            boot: here.boot.clone(),
        };
        assert_eq!(other.whose(), Whose::Elsewhere);
        if !here.boot.is_empty() {
            let before_reboot = Machine {
                host: here.host.clone(),
                boot: "00000000-0000-0000-0000-000000000000".into(),
            };
            assert_eq!(before_reboot.whose(), Whose::EarlierBoot);
        }
    }
}
