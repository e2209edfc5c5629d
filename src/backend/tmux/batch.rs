//! Opening every pane of a launch in as few tmux calls as possible, usually one.
//!
//! Each pane is created already running its command (`swarm pane-exec SPEC`), by a
//! `split-window` without `-d` (or the `new-session` or `new-window` that makes a window of the
//! team), which makes it the current pane of its window; the commands after it in the same
//! call mark it (owner.rs), keep it on exit, title and colour it, and `select-layout tiled`
//! makes room for the next. tmux runs the commands of one call back to back before it serves
//! any other client, so nothing can address a pane of ours before its marks are on, and only
//! the `;` words swarm puts between commands separate them ([`Client::run_words`]). The user's
//! focus is given back at the end of the last call.
//!
//! A window takes at most [`Layout::per_window`] panes; the next goes into a further window of
//! the team's session (placement.rs). A window can also run out of room before that (a small
//! terminal): tmux then fails the split with "no space for new pane" and runs nothing after it,
//! so the panes the call made before it are found by their spec files (below) and the rest go
//! on in a new window. That error never fails a launch.
//!
//! tmux refuses a command line of more than 16 KiB, so a big launch goes out in calls of at most
//! [`CALL_BUDGET`] bytes, each continuing after the last pane of the one before. Every spec file
//! of a launch carries a nonce in its name, and tmux keeps the spec path in each pane's
//! `pane_start_command`: when a call fails, the panes whose start command holds the nonce (this
//! launch's, whether their marks got on or not) are killed, and no other pane.

use tmux_interface::{NewWindow, SelectLayout, SelectPane, SetOption, SplitWindow, TmuxCommand};

use super::owner::PaneOwner;
use super::placement::{
    new_session, window_name, Existing, Layout, Placement, BORDER_FORMAT, NEW_PANE_FORMAT,
};
use super::server::{literal, words_of, Client};
use super::spec_panes;
use crate::error::{Error, Result};

/// The most bytes of commands one tmux call carries; tmux's own limit is 16 KiB.
const CALL_BUDGET: usize = 12 * 1024;

/// One pane of a launch: whose it is, how it looks and the words it runs.
#[derive(Debug, Clone)]
pub(super) struct BatchPane {
    pub(super) member: String,
    /// tmux colour (`colour208`).
    pub(super) colour: String,
    pub(super) argv: Vec<String>,
    /// A string only this pane's start command holds (its spec file's name), by which the pane
    /// is found when the call that made it failed part way.
    pub(super) tag: String,
}

/// How the next pane of a call is created. Every way leaves the new pane the active pane of
/// its window, so the window's target (`window`) names the new pane to the commands after it:
/// commands without a target would go to the pane `$TMUX_PANE` names, whichever server it is on.
#[derive(Debug, Clone)]
enum Create {
    /// The team's detached session; `=NAME:` is its window.
    NewSession { name: String },
    /// A window of the team in `session` (`$1`, `=NAME`), after its last window:
    /// `<session>:{end}` names it until the call ends.
    NewWindow { session: String, name: String },
    /// A split after pane `after`, in `window` (`-h` beside the user's pane for `--split`).
    After {
        after: String,
        window: String,
        horizontal: bool,
    },
}

/// What the whole launch does around its panes.
struct Plan {
    create: Create,
    /// Border labels on the window the first pane is in (a window swarm made gets them anyway).
    border: bool,
    /// The pane to give the focus back to at the end (a split makes the new pane active);
    /// `None` for the window's first pane, once it is known.
    focus: Option<String>,
}

/// Opens `panes` in order after the panes of `layout` (or where its placement says), each
/// running its argv; returns their ids. On error, panes this call made may be left: the caller
/// kills them with [`spec_panes::kill_launch`].
pub(super) fn open_all(
    layout: &mut Layout,
    client: &Client,
    owner: &PaneOwner,
    panes: &[BatchPane],
) -> Result<Vec<(String, Option<u32>)>> {
    let mut plan = plan(layout, client)?;
    let mut ids: Vec<(String, Option<u32>)> = Vec::with_capacity(panes.len());
    let mut first_pane: Option<String> = None;
    while ids.len() < panes.len() {
        let rest = &panes[ids.len()..];
        let room = Room {
            per_window: layout.per_window.max(1),
            in_window: layout.window_panes,
            number: layout.window_number,
        };
        let (mut cmds, taken, first_window) =
            call(&plan, owner, rest, ids.is_empty(), &room, layout);
        if taken == rest.len() && (ids.len() + taken > 1 || plan.focus.is_some()) {
            let focus = plan
                .focus
                .clone()
                .or_else(|| first_pane.clone())
                .unwrap_or_else(|| format!("{first_window}.{{top-left}}"));
            cmds.push(words_of(SelectPane::new().target_pane(focus).build()));
        }
        let out = match client.run_words(cmds) {
            Err(Error::Command { detail, .. })
                if ids.is_empty()
                    && matches!(plan.create, Create::NewSession { .. })
                    && detail.contains("duplicate session") =>
            {
                // The session is there already (a second launch into the team): nothing of this
                // call ran, since `new-session` was its first command. Split it instead.
                let found = match &layout.placement {
                    Some(placement) => placement.existing(client)?,
                    None => None,
                };
                let existing = found.ok_or_else(|| {
                    Error::Backend(format!(
                        "tmux said the session exists, then did not: {detail}"
                    ))
                })?;
                layout.found(&existing);
                plan = after_existing(existing);
                continue;
            }
            Err(Error::Command { detail, .. }) if no_space(&detail) => {
                // The window had no room for the next split: keep what the call made before
                // it, and go on in a new window.
                let tags: Vec<&str> = rest[..taken].iter().map(|p| p.tag.as_str()).collect();
                let made = spec_panes::made_before_failure(client, &tags)?;
                for line in &made {
                    ids.push(layout.take_new_pane(line)?);
                }
                if made.is_empty() && layout.window.is_none() {
                    // Not even the first pane fitted beside the user's (`--split`).
                    layout.window = Some(String::new());
                }
                layout.window_panes = usize::MAX;
                first_pane = first_pane.or_else(|| ids.first().map(|(id, _)| id.clone()));
                plan.create = next_create(layout);
                continue;
            }
            other => other?,
        };
        let made: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
        if made.len() != taken {
            return Err(Error::Backend(format!(
                "tmux reported {} new panes instead of {taken} (got {out:?})",
                made.len()
            )));
        }
        for line in made {
            ids.push(layout.take_new_pane(line)?);
        }
        first_pane.get_or_insert_with(|| ids[0].0.clone());
        // The next call goes on after the last pane, in its window by id, or in a new window.
        plan.create = next_create(layout);
    }
    Ok(ids)
}

/// How the pane after the layout's last one is made: a split after it, or a new window when
/// its window is full.
fn next_create(layout: &Layout) -> Create {
    match &layout.placement {
        Some(placement) if layout.window_full() => Create::NewWindow {
            session: placement.session_target(),
            name: window_name(placement.base_name(), layout.window_number + 1),
        },
        _ => Create::After {
            after: layout.last_pane.clone().unwrap_or_default(),
            window: layout.window.clone().unwrap_or_default(),
            horizontal: false,
        },
    }
}

/// tmux's ways of saying a window has no room for another pane.
fn no_space(stderr: &str) -> bool {
    stderr.contains("no space for new pane") || stderr.contains("pane too small")
}

/// Splitting a window that is already there, after its last pane (or in a new window when it
/// is full); its active pane keeps the focus.
fn after_existing(existing: Existing) -> Plan {
    Plan {
        create: Create::After {
            after: existing.last_pane,
            window: existing.window,
            horizontal: false,
        },
        border: false,
        focus: Some(existing.active_pane),
    }
}

/// Where the first pane goes, from what the layout holds so far and its placement.
fn plan(layout: &mut Layout, client: &Client) -> Result<Plan> {
    if layout.last_pane.is_some() && layout.window.is_some() {
        return Ok(Plan {
            create: next_create(layout),
            border: false,
            focus: None,
        });
    }
    let placement = layout
        .placement
        .clone()
        .ok_or_else(|| Error::Backend("tmux backend has no placement".into()))?;
    Ok(match placement {
        // Tried as new; `open_all` falls back to splitting the session if it exists.
        Placement::Session { name } => Plan {
            create: Create::NewSession { name },
            border: true,
            focus: None,
        },
        Placement::Window { .. } => match placement.existing(client)? {
            Some(existing) => {
                layout.found(&existing);
                after_existing(existing)
            }
            None => {
                let Placement::Window { session, name } = placement else {
                    unreachable!("matched above")
                };
                Plan {
                    create: Create::NewWindow { session, name },
                    border: true,
                    focus: None,
                }
            }
        },
        Placement::Split { pane, window, .. } => Plan {
            create: Create::After {
                after: pane.clone(),
                window,
                horizontal: true,
            },
            border: true,
            focus: Some(pane),
        },
    })
}

/// How full the team's window is when a call begins.
struct Room {
    per_window: usize,
    /// Panes in the window the plan's first create goes into (0 for a new one).
    in_window: usize,
    /// Which of the team's windows that is.
    number: usize,
}

/// The commands of one call: as many of `panes` as fit in [`CALL_BUDGET`] (at least one), how
/// many that is, and the target of the first pane's window. `first_call` puts the border
/// labels on with the first pane; a window that fills up hands the next pane to a new one.
fn call(
    plan: &Plan,
    owner: &PaneOwner,
    panes: &[BatchPane],
    first_call: bool,
    room: &Room,
    layout: &Layout,
) -> (Vec<Vec<String>>, usize, String) {
    let mut cmds: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0;
    let mut create = plan.create.clone();
    let mut taken = 0;
    let mut first_window = String::new();
    let (mut in_window, mut number) = (room.in_window, room.number);
    for pane in panes {
        if matches!(create, Create::After { .. }) && in_window >= room.per_window {
            if let Some(placement) = &layout.placement {
                create = Create::NewWindow {
                    session: placement.session_target(),
                    name: window_name(placement.base_name(), number + 1),
                };
            }
        }
        let border =
            (first_call && taken == 0 && plan.border) || matches!(create, Create::NewWindow { .. });
        let new_window = !matches!(create, Create::After { .. });
        let (these, in_its_window) = pane_commands(&create, owner, pane, border);
        let size: usize = these.iter().flatten().map(|w| w.len() + 2).sum();
        if taken > 0 && bytes + size > CALL_BUDGET {
            break;
        }
        bytes += size;
        cmds.extend(these);
        if new_window {
            in_window = 1;
            number += 1;
        } else {
            in_window += 1;
        }
        if taken == 0 {
            first_window.clone_from(&in_its_window);
        }
        create = Create::After {
            after: in_its_window.clone(),
            window: in_its_window,
            horizontal: false,
        };
        taken += 1;
    }
    (cmds, taken, first_window)
}

/// The commands that create `pane` and dress it, and the target of its window, which names
/// the new pane (its active one) until the next pane is made.
fn pane_commands(
    create: &Create,
    owner: &PaneOwner,
    pane: &BatchPane,
    border: bool,
) -> (Vec<Vec<String>>, String) {
    let (made, window, split) = match create {
        Create::NewSession { name } => (new_session(name), format!("={name}:"), false),
        Create::NewWindow { session, name } => {
            let end = format!("{session}:{{end}}");
            let cmd = NewWindow::new()
                .detached()
                .after()
                .print()
                .format(NEW_PANE_FORMAT)
                .window_name(literal(name))
                .target_window(end.clone())
                .build();
            (cmd, end, false)
        }
        Create::After {
            after,
            window,
            horizontal,
        } => {
            // Without -d: the new pane becomes its window's active pane.
            let cmd = SplitWindow::new()
                .print()
                .format(NEW_PANE_FORMAT)
                .target_pane(after.as_str());
            let cmd = if *horizontal { cmd.horizontal() } else { cmd };
            (cmd.build(), window.clone(), true)
        }
    };
    let mut words = words_of(made);
    words.push("--".into());
    words.extend(pane.argv.iter().cloned());
    let mut cmds = vec![words];
    let set = |option: &str, value: &str, whole_window: bool| -> TmuxCommand<'static> {
        let cmd = SetOption::new()
            .option(option.to_string())
            .value(value.to_string())
            .target_pane(window.clone());
        if whole_window {
            cmd.window().build()
        } else {
            cmd.pane().build()
        }
    };
    let mut dress: Vec<TmuxCommand<'static>> = owner
        .marks(&pane.member)
        .iter()
        .map(|(option, value)| set(option, value, false))
        .collect();
    dress.extend([
        set("remain-on-exit", "on", false),
        set("@swarm_name", &pane.member, false),
        set("@swarm_color", &pane.colour, false),
        SelectPane::new()
            .title(literal(&pane.member))
            .target_pane(window.clone())
            .build(),
    ]);
    if border {
        dress.extend([
            set("pane-border-status", "top", true),
            set("pane-border-format", BORDER_FORMAT, true),
        ]);
    }
    if split {
        dress.push(
            SelectLayout::new()
                .target_pane(window.clone())
                .layout_name("tiled")
                .build(),
        );
    }
    cmds.extend(dress.into_iter().map(words_of));
    (cmds, window)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::backend::tmux::server::TmuxServer;
    use crate::process::exec::testing::Recorder;

    fn pane(member: &str) -> BatchPane {
        BatchPane {
            member: member.into(),
            colour: "x;".into(),
            argv: vec!["/opt/swarm".into(), "pane-exec".into(), "/s/a;".into()],
            tag: format!("/{member}.nonce.json"),
        }
    }

    fn ids_of(opened: &[(String, Option<u32>)]) -> Vec<&str> {
        opened.iter().map(|(id, _)| id.as_str()).collect()
    }

    #[test]
    fn one_call_makes_every_pane_and_addresses_each_through_its_window() {
        let rec = Arc::new(Recorder::default());
        let client = Client::new(rec.clone(), TmuxServer::Name("sock".into()));
        let owner = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "t");
        let name = owner.session_name();
        let mut layout = Layout::default();
        layout.placement = Some(Placement::Session { name: name.clone() });
        rec.answer("%3\t@2\t/tmp/tmux-0/sock\t101\n%4\t@2\t/tmp/tmux-0/sock\t102\n");
        let ids = open_all(&mut layout, &client, &owner, &[pane("a"), pane("b#{x}")]).unwrap();
        // Each pane with its process, from the call that made it.
        assert_eq!(ids, [("%3".into(), Some(101)), ("%4".into(), Some(102))]);
        assert_eq!(layout.window.as_deref(), Some("@2"));
        let calls = rec.calls();
        assert_eq!(calls.len(), 1, "{calls:?}");
        let argv = &calls[0];
        let commands: Vec<&[String]> = argv[4..].split(|w| w == ";").collect();
        let window = format!("={name}:");
        assert_eq!(commands[0][0], "new");
        assert_eq!(
            &commands[0][commands[0].len() - 4..],
            ["--", "/opt/swarm", "pane-exec", r"/s/a\;"]
        );
        // Every other command names its target: the team's window, never tmux's current pane.
        for cmd in &commands[1..] {
            let t = cmd
                .iter()
                .position(|w| w == "-t")
                .unwrap_or_else(|| panic!("{cmd:?}"));
            assert!(
                cmd[t + 1] == window || cmd[t + 1] == format!("{window}.{{top-left}}"),
                "{cmd:?}"
            );
        }
        assert!(commands
            .iter()
            .any(|c| c.first().map(String::as_str) == Some("splitw")));
        assert!(
            argv.contains(&"b##{x}".to_string()),
            "titles are not formats"
        );
        assert!(
            argv.contains(&r"x\;".to_string()),
            "a value's final ; is escaped"
        );
        assert_eq!(
            commands.last().unwrap().to_vec(),
            ["selectp", "-t", &format!("{window}.{{top-left}}")]
        );
    }

    #[test]
    fn an_existing_session_is_split_after_its_last_pane_and_its_focus_kept() {
        let rec = Arc::new(Recorder::default());
        let client = Client::new(rec.clone(), TmuxServer::Name("sock".into()));
        let owner = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "t");
        let name = owner.session_name();
        let mut layout = Layout::default();
        layout.placement = Some(Placement::Session { name: name.clone() });
        rec.fail(&format!("duplicate session: {name}"));
        rec.answer(&format!("@1\t{name}\t%0\t1\n@1\t{name}\t%1\t0\n"));
        rec.answer("%5\t@1\t/tmp/tmux-0/sock\n");
        let ids = open_all(&mut layout, &client, &owner, &[pane("c")]).unwrap();
        assert_eq!(ids_of(&ids), ["%5"]);
        let calls = rec.calls();
        assert_eq!(calls.len(), 3);
        let last: Vec<&[String]> = calls[2][4..].split(|w| w == ";").collect();
        assert_eq!(last[0][..3], ["splitw", "-P", "-F"].map(String::from));
        assert!(
            last[0].windows(2).any(|w| w == ["-t", "%1"]),
            "{:?}",
            last[0]
        );
        assert_eq!(last.last().unwrap().to_vec(), ["selectp", "-t", "%0"]);
    }

    #[test]
    fn a_launch_too_long_for_one_call_goes_on_after_the_last_pane_by_window_id() {
        let rec = Arc::new(Recorder::default());
        let client = Client::new(rec.clone(), TmuxServer::Name("sock".into()));
        let owner = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "t");
        let mut layout = Layout::default();
        layout.placement = Some(Placement::Session {
            name: owner.session_name(),
        });
        let mut big = pane("a");
        big.argv.push("x".repeat(CALL_BUDGET * 2 / 3));
        rec.answer("%3\t@2\t/tmp/tmux-0/sock\n");
        rec.answer("%4\t@2\t/tmp/tmux-0/sock\n");
        let ids = open_all(&mut layout, &client, &owner, &[big.clone(), big]).unwrap();
        assert_eq!(ids_of(&ids), ["%3", "%4"]);
        let calls = rec.calls();
        assert_eq!(calls.len(), 2, "two calls");
        let second: Vec<&[String]> = calls[1][4..].split(|w| w == ";").collect();
        assert!(
            second[0].windows(2).any(|w| w == ["-t", "%3"]),
            "{:?}",
            second[0]
        );
        assert!(
            second[1].windows(2).any(|w| w == ["-t", "@2"]),
            "{:?}",
            second[1]
        );
        assert_eq!(second.last().unwrap().to_vec(), ["selectp", "-t", "%3"]);
    }

    #[test]
    fn a_full_window_hands_the_next_pane_to_a_new_window_of_the_session() {
        let rec = Arc::new(Recorder::default());
        let client = Client::new(rec.clone(), TmuxServer::Name("sock".into()));
        let owner = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "t");
        let name = owner.session_name();
        let mut layout = Layout::default();
        layout.placement = Some(Placement::Session { name: name.clone() });
        layout.per_window = 2;
        rec.answer("%3\t@2\t/s\n%4\t@2\t/s\n%5\t@3\t/s\n");
        let ids = open_all(
            &mut layout,
            &client,
            &owner,
            &[pane("a"), pane("b"), pane("c")],
        )
        .unwrap();
        assert_eq!(ids_of(&ids), ["%3", "%4", "%5"]);
        assert_eq!(
            (
                layout.window.as_deref(),
                layout.window_panes,
                layout.window_number
            ),
            (Some("@3"), 1, 2)
        );
        let calls = rec.calls();
        assert_eq!(calls.len(), 1, "still one call: {calls:?}");
        let commands: Vec<&[String]> = calls[0][4..].split(|w| w == ";").collect();
        let second = format!("{name}-2");
        let end = format!("={name}:{{end}}");
        let neww = commands
            .iter()
            .find(|c| c[0] == "neww")
            .unwrap_or_else(|| panic!("{commands:?}"));
        assert!(
            neww.windows(2).any(|w| w == ["-n", second.as_str()]),
            "{neww:?}"
        );
        assert!(
            neww.windows(2).any(|w| w == ["-t", end.as_str()]),
            "{neww:?}"
        );
        // The third pane's marks go to the new window, and it gets its border labels.
        let after: Vec<&&[String]> = commands.iter().skip_while(|c| c[0] != "neww").collect();
        assert!(after
            .iter()
            .any(|c| c.contains(&"c".to_string()) && c.contains(&end)));
        assert!(after
            .iter()
            .any(|c| c.contains(&"pane-border-status".to_string())));
    }

    #[test]
    fn no_space_for_a_pane_keeps_what_the_call_made_and_goes_on_in_a_new_window() {
        let rec = Arc::new(Recorder::default());
        let client = Client::new(rec.clone(), TmuxServer::Name("sock".into()));
        let owner = PaneOwner::new(std::path::Path::new("/nonexistent/root"), "t");
        let name = owner.session_name();
        let mut layout = Layout::default();
        layout.placement = Some(Placement::Session { name: name.clone() });
        rec.fail("no space for new pane");
        rec.answer(
            "%3\t@2\t/s\t13\t/opt/swarm pane-exec /r/a.nonce.json\n%4\t@2\t/s\t14\t/opt/swarm pane-exec /r/b.nonce.json\n",
        );
        rec.answer("%7\t@4\t/s\n%8\t@4\t/s\n");
        let panes = [pane("a"), pane("b"), pane("c"), pane("d")];
        let ids = open_all(&mut layout, &client, &owner, &panes).unwrap();
        assert_eq!(ids_of(&ids), ["%3", "%4", "%7", "%8"]);
        let calls = rec.calls();
        assert_eq!(calls.len(), 3, "{calls:?}");
        let third: Vec<&[String]> = calls[2][4..].split(|w| w == ";").collect();
        assert_eq!(third[0][0], "neww", "{third:?}");
        assert!(third[0]
            .windows(2)
            .any(|w| w == ["-n", format!("{name}-2").as_str()]));
        assert_eq!(third.last().unwrap().to_vec(), ["selectp", "-t", "%3"]);
        assert_eq!(layout.window_number, 2);
    }
}
