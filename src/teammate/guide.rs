//! What a runtime teammate is told in its first turn: who it is, its team, how to use swarm from
//! its shell, and, in a worktree, where its copy of the repository is.
//!
//! Agent CLIs remember nothing between processes, so the first prompt carries what Claude Code
//! puts in a teammate's system prompt ("Agent Teammate Communication": who to message and
//! how, that the user talks to the lead): the roster as names, roles (`agentType`) and who
//! leads, so a teammate can message a peer by name without reading `config.json`. A teammate
//! in a worktree also gets the notice Claude Code gives an agent it isolates in one (its path
//! and branch, and that paths from elsewhere must be translated), and any path in the turn
//! that points into the main checkout is named with its copy in the worktree: a prompt
//! written for the lead's directory is otherwise silently wrong there (issue 28).

use std::path::{Path, PathBuf};

use crate::lifecycle::worktree::Worktree;
use crate::store::roster::TeamConfig;

/// What the first prompt of `name` carries: the guide to the team, and the worktree notice when
/// its roster entry has a worktree it runs in; `texts` are the turn's messages and task, whose
/// paths into the main checkout are flagged.
pub(crate) fn first_turn(
    name: &str,
    team: &str,
    roster: &TeamConfig,
    cwd: &Path,
    texts: &[&str],
) -> String {
    let guide = appendix(name, team, roster);
    let worktree = roster
        .member(name)
        .and_then(Worktree::of_member)
        .filter(|wt| cwd.starts_with(&wt.path));
    match worktree {
        Some(wt) => format!("{guide}\n{}", worktree_notice(&wt, texts)),
        None => guide,
    }
}

/// The guide to the team the first prompt carries.
pub(crate) fn appendix(name: &str, team: &str, roster: &TeamConfig) -> String {
    format!(
        "---\n\
         You are \"{name}\", a teammate in the swarm team \"{team}\"; the lead is \"team-lead\".\n\
         {}\n\
         The person you work for talks to the lead; you are coordinated through the task list\n\
         and messages. What you print is not seen by your teammates: message them.\n\
         Your shell already knows who you are (SWARM_TEAM, SWARM_AGENT_NAME), so from it:\n\
         \x20 swarm send --to team-lead \"text\"            message the lead (or a teammate by name;\n\
         \x20                                              '*' for everyone, sparingly)\n\
         \x20 swarm task list                              the shared task list\n\
         \x20 swarm task claim ID                          take a task (you become its owner)\n\
         \x20 swarm task update ID --status completed      mark a task you finished\n\
         \x20 swarm task create \"subject\" --description \"...\"   add a task\n\
         \x20 swarm shutdown-request show                  whether the lead asked you to stop, and why\n\
         \x20 swarm shutdown-request reject \"why\"          refuse to stop; you keep running\n\
         What you print is your answer: it goes to the lead when your turn ends. New messages\n\
         reach you as <teammate-message> blocks in your next turn. Tasks swarm gives you are\n\
         marked completed when you exit with status 0 and failed otherwise. A shutdown the lead\n\
         asks for while you work lets this turn finish (for a while), then you stop.",
        team_list(name, roster)
    )
}

/// The roster as the teammate reads it: one line per member still on the team, the lead first,
/// with its role (`agentType`) and who is who.
fn team_list(name: &str, roster: &TeamConfig) -> String {
    let mut members: Vec<_> = roster
        .members
        .iter()
        .filter(|m| m.is_lead() || !m.retired())
        .collect();
    members.sort_by_key(|m| !m.is_lead());
    let width = members
        .iter()
        .map(|m| m.name.as_str().len())
        .max()
        .unwrap_or(0);
    let lines: Vec<String> = members
        .iter()
        .map(|m| {
            let role = if m.agent_type.is_empty() {
                "teammate"
            } else {
                &m.agent_type
            };
            let who = if m.is_lead() {
                " (leads the team)"
            } else if m.name.as_str() == name {
                " (you)"
            } else {
                ""
            };
            format!("  {:width$}  {role}{who}", m.name.as_str())
        })
        .collect();
    format!("Your team (name, role):\n{}", lines.join("\n"))
}

/// The notice of a teammate working in `wt`, with every path in `texts` that points into the
/// main checkout named beside its copy in the worktree.
pub(crate) fn worktree_notice(wt: &Worktree, texts: &[&str]) -> String {
    let mut notice = format!(
        "You work in a git worktree of your own: {} on branch {}. It is the repository of {}\n\
         (the main checkout) with the same files, as a separate working copy: edit, build and\n\
         commit here, on your branch; your changes do not reach the main checkout, and paths\n\
         that point into it are another copy: use the same path under your worktree.",
        wt.path.display(),
        wt.branch,
        wt.repo.display()
    );
    let mut flagged: Vec<(String, PathBuf)> = Vec::new();
    for text in texts {
        for (path, copy) in main_checkout_paths(wt, text) {
            if !flagged.iter().any(|(p, _)| *p == path) {
                flagged.push((path, copy));
            }
        }
    }
    if !flagged.is_empty() {
        notice.push_str(
            "\nWhat you were given names paths in the main checkout, not in your worktree:",
        );
        for (path, copy) in flagged {
            notice.push_str(&format!(
                "\n  {path} is, in your worktree, {}",
                copy.display()
            ));
        }
    }
    notice
}

/// The absolute paths in `text` that are in the main checkout of `wt` but not in the worktree
/// (which lives inside it), each with the same path in the worktree.
fn main_checkout_paths(wt: &Worktree, text: &str) -> Vec<(String, PathBuf)> {
    let repo = wt.repo.to_string_lossy();
    let repo = repo.trim_end_matches('/');
    if repo.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(repo) {
        let starts_word = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !is_path_char(c));
        let tail = &rest[at..];
        let end = tail.find(|c: char| !is_path_char(c)).unwrap_or(tail.len());
        let token = tail[..end].trim_end_matches(['.', ',', ':', ';']);
        rest = &tail[end.max(1)..];
        let after = &token[repo.len()..];
        if !starts_word || !(after.is_empty() || after.starts_with('/')) {
            continue;
        }
        let path = Path::new(token);
        if path.starts_with(&wt.path) {
            continue;
        }
        let copy = match path.strip_prefix(&wt.repo) {
            Ok(relative) if !relative.as_os_str().is_empty() => wt.path.join(relative),
            _ => wt.path.clone(),
        };
        found.push((token.to_string(), copy));
    }
    found
}

/// Characters a path in prose is made of (it ends at whitespace, quotes, brackets).
fn is_path_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '"' | '\'' | '`' | '(' | ')' | '<' | '>' | '[' | ']')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::agent;
    use crate::store::names::TeamName;
    use crate::store::roster::Member;

    fn roster() -> TeamConfig {
        let team: TeamName = "t".parse().unwrap();
        let lead = Member::lead(&team, "/w", 0);
        let mut coder = Member::teammate(&team, &agent("coder"), "blue", "/w");
        coder.agent_type = "implementer".into();
        let tester = Member::teammate(&team, &agent("tester"), "green", "/w");
        let mut gone = Member::teammate(&team, &agent("gone"), "red", "/w");
        gone.retire();
        serde_json::from_value(serde_json::json!({
            "name": "t", "createdAt": 0, "leadAgentId": "team-lead@t", "leadSessionId": "",
            "members": [coder, lead, tester, gone],
        }))
        .unwrap()
    }

    fn worktree() -> Worktree {
        Worktree {
            repo: "/src/app".into(),
            path: "/src/app/.swarm/worktrees/coder".into(),
            branch: "swarm/t/coder".into(),
            base: "abc".into(),
            admin: "coder".into(),
            cwd: "/src/app/.swarm/worktrees/coder".into(),
        }
    }

    #[test]
    fn the_first_turn_lists_the_team_with_roles_and_the_lead() {
        let guide = appendix("coder", "t", &roster());
        assert!(guide.contains("Your team (name, role):"), "{guide}");
        let lines: Vec<&str> = guide
            .lines()
            .skip_while(|l| !l.starts_with("Your team"))
            .skip(1)
            .take(3)
            .collect();
        assert_eq!(
            lines,
            [
                "  team-lead  team-lead (leads the team)",
                "  coder      implementer (you)",
                "  tester     general-purpose",
            ],
            "{guide}"
        );
        assert!(!guide.contains("gone"), "a retired member is not listed");
        assert!(guide.contains("swarm send --to team-lead"));
    }

    #[test]
    fn the_worktree_notice_has_the_path_and_the_branch() {
        let notice = worktree_notice(&worktree(), &["fix the parser"]);
        assert!(
            notice.contains("/src/app/.swarm/worktrees/coder on branch swarm/t/coder"),
            "{notice}"
        );
        assert!(notice.contains("main checkout"), "{notice}");
        assert!(!notice.contains("names paths"), "nothing flagged: {notice}");
    }

    #[test]
    fn a_path_into_the_main_checkout_is_flagged_with_its_copy() {
        let notice = worktree_notice(
            &worktree(),
            &[
                "Fix /src/app/src/parser.rs, then run `/src/app/scripts/test`.",
                "Also /src/app/src/parser.rs and /src/application/x (another tree), \
                 /src/app/.swarm/worktrees/coder/ok.rs (already yours), /src/app.",
            ],
        );
        let flagged: Vec<&str> = notice
            .lines()
            .skip_while(|l| !l.contains("names paths"))
            .skip(1)
            .collect();
        assert_eq!(
            flagged,
            [
                "  /src/app/src/parser.rs is, in your worktree, /src/app/.swarm/worktrees/coder/src/parser.rs",
                "  /src/app/scripts/test is, in your worktree, /src/app/.swarm/worktrees/coder/scripts/test",
                "  /src/app is, in your worktree, /src/app/.swarm/worktrees/coder",
            ],
            "{notice}"
        );
    }
}
