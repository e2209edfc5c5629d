//! Pid records: which process swarm started for a member, and whether it is still that one.
//!
//! A pid alone is not an identity: pids are recycled, and a roster can be edited. So swarm
//! records a member's pid together with its start time (`swarmPid`, `swarmPidStart` in the
//! member's roster entry; PROTOCOL.md section 5 allows extra fields) and only believes the pid
//! while the process with that pid started at that time. When the launcher reaps a teammate it
//! also records how it ended (`swarmExit`), which is all `swarm status` can learn afterwards.
//! The record also names the machine (`swarmPidHost`: host and boot id): a roster travels to
//! other hosts (`remote/` mirrors it), and there this pid is someone else's process, so a record
//! from another machine or an earlier boot is not a record of anything running here.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use serde_json::{json, Value};

use crate::store::machine::{Machine, Whose};
pub(crate) use crate::store::process_id::{start_time, PidRecord};
use crate::store::roster::Member;

pub(crate) const PID_FIELD: &str = "swarmPid";
pub(crate) const PID_START_FIELD: &str = "swarmPidStart";
pub(crate) const PID_HOST_FIELD: &str = "swarmPidHost";
pub(crate) const EXIT_FIELD: &str = "swarmExit";

/// Where the member's pid record was written, seen from here (a record without a machine is
/// this machine's: it predates the field).
pub(crate) fn recorded_where(member: &Member) -> Whose {
    let machine = member
        .extra
        .get(PID_HOST_FIELD)
        .and_then(|v| serde_json::from_value::<Machine>(v.clone()).ok());
    crate::store::machine::whose(machine.as_ref())
}

/// Records `pid` (with its start time) on a member that was just started, forgetting how an
/// earlier process of the member ended.
pub(crate) fn record_pid(member: &mut Member, pid: u32) {
    PidRecord::of(pid).save(member);
    member.extra.remove(EXIT_FIELD);
}

/// Records how the member's process ended: `{"code": N}` or `{"signal": N}`.
pub(crate) fn record_exit(member: &mut Member, status: ExitStatus) {
    let exit = match (status.code(), status.signal()) {
        (Some(c), _) => json!({"code": c}),
        (None, Some(s)) => json!({"signal": s}),
        _ => json!({}),
    };
    member.extra.insert(EXIT_FIELD.into(), exit);
}

/// How the member's process ended, if swarm saw it end: `(code, signal)`.
pub(crate) fn recorded_exit(member: &Member) -> Option<(Option<i32>, Option<i32>)> {
    let exit = member.extra.get(EXIT_FIELD)?;
    let field = |k: &str| exit.get(k).and_then(Value::as_i64).map(|n| n as i32);
    Some((field("code"), field("signal")))
}

/// The roster side of a [`PidRecord`] (the record itself is the store's: `store::process_id`).
impl PidRecord {
    /// The record kept on a member, if any, and only if it was written on this machine in this
    /// boot: anywhere else its pid names another process.
    pub(crate) fn of_member(member: &Member) -> Option<PidRecord> {
        if recorded_where(member) != Whose::Here {
            return None;
        }
        let pid = u32::try_from(member.extra.get(PID_FIELD)?.as_u64()?).ok()?;
        let start = member.extra.get(PID_START_FIELD).and_then(Value::as_u64);
        Some(PidRecord { pid, start })
    }

    /// Stores the record on a member.
    pub(crate) fn save(&self, member: &mut Member) {
        member.extra.insert(PID_FIELD.into(), Value::from(self.pid));
        match self.start {
            Some(t) => member.extra.insert(PID_START_FIELD.into(), Value::from(t)),
            None => member.extra.remove(PID_START_FIELD),
        };
        let here = serde_json::to_value(Machine::this()).expect("a machine serializes");
        member.extra.insert(PID_HOST_FIELD.into(), here);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_pid_is_alive_only_while_it_is_the_same_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let record = PidRecord::of(child.id());
        assert!(record.start.is_some(), "Linux has /proc start times");
        assert!(record.alive());
        let wrong = PidRecord {
            start: record.start.map(|t| t + 1),
            ..record
        };
        assert!(!wrong.alive(), "another start time is another process");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!record.alive());
        assert!(!PidRecord {
            pid: 0,
            start: None
        }
        .alive());
    }

    #[test]
    fn a_pid_recorded_on_another_machine_is_no_record_here() {
        let me = std::process::id();
        let team: crate::store::names::TeamName = "t".parse().unwrap();
        let name: crate::store::names::AgentName = "coder".parse().unwrap();
        let mut member = Member::teammate(&team, &name, "blue", "/");
        record_pid(&mut member, me);
        assert_eq!(PidRecord::of_member(&member), Some(PidRecord::of(me)));
        let elsewhere = Machine {
            host: format!("{}-elsewhere", Machine::this().host),
            boot: String::new(),
        };
        member.extra.insert(
            PID_HOST_FIELD.into(),
            serde_json::to_value(&elsewhere).unwrap(),
        );
        assert_eq!(recorded_where(&member), Whose::Elsewhere);
        assert_eq!(PidRecord::of_member(&member), None, "never signalled here");
    }
}
