//! Writing results to stdout.
//!
//! Every command that prints state prints either text for people or, with `--json`, one JSON
//! document (or JSON lines when following). A closed stdout (`swarm inbox | head`) is not an
//! error: the write fails with a broken pipe and `main` exits 0. Text for people shows control
//! characters as escapes (`terminal`); JSON is written as it is.

pub(crate) mod table;
pub(crate) mod terminal;

use std::io::{self, Write};

use serde::Serialize;

use crate::error::{Error, Result};

/// A failed write to stdout, as every printer reports it (a broken pipe is success in `main`).
pub(crate) fn stdout_err(e: io::Error) -> Error {
    Error::Io {
        action: "write",
        path: "standard output".into(),
        source: e,
    }
}

/// One line of text, flushed at once so a follower (`swarm inbox --follow | ...`) sees it.
pub fn line(text: impl AsRef<str>) -> Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{}", text.as_ref())
        .and_then(|()| out.flush())
        .map_err(stdout_err)
}

/// Pretty JSON document.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("serializable");
    line(text)
}

/// One compact JSON object on one line (for streams).
pub fn json_line<T: Serialize + ?Sized>(value: &T) -> Result<()> {
    let text = serde_json::to_string(value).expect("serializable");
    line(text)
}

/// Whether `e` is a write to a closed stdout, which `main` treats as success.
pub(crate) fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
}
