//! The work of a turn, as agents describe it and the process runner carries it out.
//!
//! An agent (the shell agent, or an agent CLI) turns a turn into [`Work`]: steps to run, or a
//! reply with nothing to run. `process.rs` runs the steps and reports an [`Outcome`]. These types
//! sit in a file of their own so the agents and the runner share them without importing each
//! other or the runtime.

use std::ffi::OsString;
use std::path::PathBuf;

/// Most bytes of a turn's output kept in memory (the pane still sees everything).
pub(crate) const MAX_CAPTURE: usize = 1 << 20;
/// Most bytes of a step's stderr kept, when it is kept at all: what is read there (codex's
/// `session id:` line) comes first.
pub(crate) const MAX_STDERR_CAPTURE: usize = 64 << 10;

/// One process of a turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    /// Written to the process's stdin (then closed); `None` gives it /dev/null.
    pub(crate) stdin: Option<Vec<u8>>,
    /// A line printed to the pane before the step starts, e.g. `$ make test`.
    pub(crate) echo: Option<String>,
    /// Keep the start of its stderr too (it still goes to the pane): an agent CLI that says
    /// there which conversation it used (codex).
    pub(crate) keep_stderr: bool,
}

/// What an agent makes of a turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Work {
    /// Run these steps; `preface` starts the result (e.g. notes about skipped messages).
    Run { steps: Vec<Step>, preface: String },
    /// Nothing to run: the turn ends at once with this result.
    Reply { text: String, success: bool },
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    pub(crate) success: bool,
    /// Everything the turn printed on stdout (up to [`MAX_CAPTURE`] bytes).
    pub(crate) output: String,
    /// The start of what steps with `keep_stderr` printed on stderr (up to
    /// [`MAX_STDERR_CAPTURE`] bytes each).
    pub(crate) stderr: String,
    /// Why it failed: "exit status 2", "killed by signal 9", "could not start ...".
    pub(crate) failure: Option<String>,
}

/// Where and with what environment the steps run.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub(crate) cwd: PathBuf,
    pub(crate) env: Vec<(String, OsString)>,
}
