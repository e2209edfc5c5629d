//! Which kind of request an id names, checked where an id comes in.
//!
//! Both kinds share `permissions/resolved/`, so the two id shapes must never meet: a plan id is
//! `plan_approval-<ms>@<name>@<team>` (what Claude Code and swarm's runtime mint), a permission
//! id is anything else of letters, digits, `-` and `_` (`perm-<ms>-<7 base36>` from both). The
//! `@` a plan id holds is what keeps a teammate from naming a permission request after a plan,
//! and neither shape can hold a `/` or a leading dot, so an id is always one plain file name.

use crate::error::{Error, Result};

/// What every plan request id starts with.
const PLAN_PREFIX: &str = "plan_approval-";
const MAX_LEN: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Permission,
    Plan,
}

impl Kind {
    /// The kind `id` names, or a usage error saying what ids look like.
    pub(crate) fn of(id: &str) -> Result<Kind> {
        let plain = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        let kind = match id.strip_prefix(PLAN_PREFIX) {
            Some(rest) if rest.bytes().all(|b| plain(b) || b == b'@') && rest.contains('@') => {
                Some(Kind::Plan)
            }
            Some(_) => None,
            None if !id.is_empty() && id.bytes().all(plain) => Some(Kind::Permission),
            None => None,
        };
        match kind {
            Some(kind) if id.len() <= MAX_LEN => Ok(kind),
            _ => Err(Error::usage(format!(
                "invalid request id {id:?}: permission request ids look like \
                 perm-1767225600000-k3j9x2a, plan ids like plan_approval-1767225600000@coder@team \
                 (`swarm permission list` shows them)"
            ))),
        }
    }

    /// `permission` or `plan`, as `decisions.jsonl` records it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Permission => "permission",
            Kind::Plan => "plan",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_and_permission_ids_never_share_a_shape() {
        assert_eq!(
            Kind::of("perm-1767225600000-k3j9x2a").unwrap(),
            Kind::Permission
        );
        assert_eq!(Kind::of("perm-1-claude").unwrap(), Kind::Permission);
        assert_eq!(Kind::of("plan_approval-1@coder@t").unwrap(), Kind::Plan);
        for bad in [
            "",
            "plan_approval-1",
            "plan_approval-../x@y",
            "perm/1",
            ".hidden",
            "a@b",
            &"x".repeat(201),
        ] {
            assert!(Kind::of(bad).is_err(), "{bad:?}");
        }
    }
}
