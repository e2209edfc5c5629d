//! A host a teammate runs on: an ssh destination as the user's ssh configuration knows it.
//!
//! swarm keeps no host database: `box1`, `me@box1` or `ssh://me@box1:2222` means whatever
//! `ssh box1` means on this machine (`~/.ssh/config`, or the file `SWARM_SSH_CONFIG` names). The
//! name is checked once, where it enters (a swarm file's `host`, `--host NAME=HOST`): it must not
//! start with `-`, which ssh would read as an option, and holds only the characters of host
//! names, users, ports and IPv6 brackets, so it is safe as one argv word and in messages. Files
//! about a host (the link's state, its lock) are named by [`Host::slug`], which stays readable
//! and cannot collide for two hosts that differ only in punctuation.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

const MAX_LEN: usize = 255;

/// A validated ssh destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Host(String);

impl Host {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// A file-name form: the destination with anything but `[A-Za-z0-9._-]` as `_`, then 8 hex
    /// digits of its hash (`me_box1-3f2a9c01`).
    pub(crate) fn slug(&self) -> String {
        let readable: String = self
            .0
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect();
        let hash = Sha256::digest(self.0.as_bytes());
        format!(
            "{readable}-{:02x}{:02x}{:02x}{:02x}",
            hash[0], hash[1], hash[2], hash[3]
        )
    }
}

impl FromStr for Host {
    type Err = Error;

    fn from_str(s: &str) -> Result<Host> {
        let bad = |reason: &str| {
            Error::InvalidName {
            kind: "host",
            value: s.to_string(),
            reason: format!("{reason}; give an ssh destination such as box1, me@box1 or ssh://me@box1:2222, as `ssh HOST` takes it"),
        }
        };
        if s.is_empty() {
            return Err(bad("it is empty"));
        }
        if s.len() > MAX_LEN {
            return Err(bad("it is longer than 255 characters"));
        }
        if s.starts_with('-') {
            return Err(bad("it starts with '-', which ssh would read as an option"));
        }
        if !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@:/[]%".contains(c))
        {
            return Err(bad(
                "only letters, digits and . _ - @ : / [ ] % can appear in one",
            ));
        }
        Ok(Host(s.to_string()))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl Serialize for Host {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Host {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_parse_and_options_or_shell_words_do_not() {
        for good in [
            "box1",
            "me@box1",
            "ssh://me@box1:2222",
            "[::1]",
            "10.0.0.7",
            "a_b.c-d",
        ] {
            assert_eq!(good.parse::<Host>().unwrap().as_str(), good);
        }
        for bad in [
            "",
            "-oProxyCommand=id",
            "box 1",
            "box;id",
            "$(id)",
            "box\n",
            "a'b",
        ] {
            let e = bad.parse::<Host>().unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
            assert!(e.to_string().contains("ssh destination"), "{e}");
        }
    }

    #[test]
    fn slugs_are_file_names_and_tell_punctuation_apart() {
        let a: Host = "me@box1".parse().unwrap();
        let b: Host = "me_box1".parse().unwrap();
        assert!(a.slug().starts_with("me_box1-"));
        assert_ne!(a.slug(), b.slug());
        assert!(a
            .slug()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)));
    }
}
