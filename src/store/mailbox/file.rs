//! The inbox file itself: how one entry is printed in the array, splicing printed entries in
//! before the closing `]`, the repair of a damaged array (bad entries out, good ones kept) and
//! the append-only archive, which holds each message once.

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::InboxMessage;
use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::lock::FileLock;

/// `message` as the inbox array holds it: pretty-printed, every line indented two spaces, no
/// trailing newline. Spliced after `[` or `,` plus a newline, it gives the bytes a full rewrite
/// of the array would.
pub(super) fn print_entry(message: &InboxMessage) -> Result<Vec<u8>> {
    let entry = serde_json::to_string_pretty(message).map_err(|source| Error::Json {
        path: PathBuf::from("<message>"),
        source,
    })?;
    let mut out = Vec::with_capacity(entry.len() + entry.len() / 8);
    for (i, line) in entry.lines().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(b"  ");
        out.extend_from_slice(line.as_bytes());
    }
    Ok(out)
}

/// Splices entries printed by [`print_entry`] in before the closing `]` of `bytes`, without
/// parsing it: the caller knows it is a good array (the sidecar says swarm wrote it). `None` if
/// it does not even end like one.
pub(super) fn splice_printed(bytes: &[u8], new: &[&[u8]]) -> Option<Vec<u8>> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return None;
    }
    let close = bytes.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if bytes[close] != b']' {
        return None;
    }
    let before = &bytes[..close];
    let end = before.iter().rposition(|b| !b.is_ascii_whitespace())? + 1;
    let size = new.iter().map(|e| e.len() + 2).sum::<usize>();
    let mut out = Vec::with_capacity(end + size + 4);
    out.extend_from_slice(&before[..end]);
    let mut first = before[end - 1] == b'[';
    for entry in new {
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'\n');
        out.extend_from_slice(entry);
    }
    out.extend_from_slice(b"\n]\n");
    Some(out)
}

/// An inbox as one process last read or wrote it: its bytes and the messages they parse to.
/// Under the lock, an inbox whose bytes are still these is not parsed again (a byte compare
/// costs microseconds, a parse of a full inbox milliseconds), so a runtime that reads its inbox
/// and then marks some of it delivered parses it once.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed {
    /// `None` when the messages are not what some bytes parse to (a repaired or missing file):
    /// then they match no file.
    bytes: Option<Vec<u8>>,
    pub(crate) messages: Vec<InboxMessage>,
}

impl Parsed {
    pub(super) fn new(bytes: Vec<u8>, messages: Vec<InboxMessage>) -> Parsed {
        Parsed {
            bytes: Some(bytes),
            messages,
        }
    }

    /// Messages that stand for no bytes on disk.
    pub(super) fn unmatched(messages: Vec<InboxMessage>) -> Parsed {
        Parsed {
            bytes: None,
            messages,
        }
    }

    /// The bytes the messages were parsed from or written as (empty if none).
    pub(super) fn bytes(&self) -> &[u8] {
        self.bytes.as_deref().unwrap_or_default()
    }

    /// The messages not yet delivered, oldest first.
    pub(crate) fn unread(&self) -> impl Iterator<Item = &InboxMessage> {
        self.messages.iter().filter(|m| !m.read)
    }
}

/// Whether [`load_locked`] moved something aside.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Repaired {
    No,
    Yes,
}

/// Reads an inbox under its lock, repairing what does not parse. Entries of an array that fail
/// the schema (a wrong type, nesting deeper than the parser allows, invalid UTF-8) are moved to
/// a quarantine file, byte for byte, and the good ones kept; a file with nothing to keep (not
/// an array, no good entry) is quarantined whole, and so is a file past the inbox size limit,
/// which is never read into memory.
///
/// `known`: the inbox as the caller last had it; when the bytes are still those, its messages
/// are taken as they are.
pub(super) fn load_locked(
    lock: &FileLock,
    path: &Path,
    known: Option<Parsed>,
) -> Result<(Vec<InboxMessage>, Repaired)> {
    if let Some(size) = oversize(path)? {
        lock.quarantine(path, &past_limit(size))?;
        return Ok((vec![], Repaired::Yes));
    }
    let Some(bytes) = fsio::read_file(path)? else {
        return Ok((vec![], Repaired::No));
    };
    if let Some(known) = known.filter(|k| k.bytes.as_ref() == Some(&bytes)) {
        return Ok((known.messages, Repaired::No));
    }
    let why = match fsio::parse_json(&bytes) {
        Ok(messages) => return Ok((messages, Repaired::No)),
        Err(why) => why,
    };
    let entries = Some(bytes.as_slice())
        .filter(|b| !b.starts_with(&[0xEF, 0xBB, 0xBF]))
        .and_then(split_array);
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    for entry in entries.unwrap_or_default() {
        match fsio::parse_json::<InboxMessage>(entry) {
            Ok(m) => good.push(m),
            Err(_) => bad.push(entry),
        }
    }
    if good.is_empty() {
        lock.quarantine(path, &why)?;
        return Ok((vec![], Repaired::Yes));
    }
    let target = format!("{}.corrupt-{}", path.display(), fsio::now_ms());
    let mut kept = b"[\n  ".to_vec();
    kept.extend_from_slice(&bad.join(&b",\n  "[..]));
    kept.extend_from_slice(b"\n]\n");
    fsio::write_atomic(Path::new(&target), &kept)?;
    eprintln!(
        "swarm: warning: {} had {} malformed message(s); moved them to {target}",
        path.display(),
        bad.len()
    );
    Ok((good, Repaired::Yes))
}

/// The largest inbox file swarm reads or adds to: 16 MiB, or `SWARM_INBOX_MAX_BYTES`.
pub(super) fn inbox_limit() -> u64 {
    std::env::var("SWARM_INBOX_MAX_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &u64| n > 0)
        .unwrap_or(16 * 1024 * 1024)
}

/// The size of the file at `path` when it is past [`inbox_limit`] (from its metadata: the file
/// is not read).
pub(super) fn oversize(path: &Path) -> Result<Option<u64>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() > inbox_limit() => Ok(Some(meta.len())),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("inspect", path)(e)),
    }
}

/// Why an inbox of `size` bytes was moved aside unread.
fn past_limit(size: u64) -> String {
    format!(
        "it is {size} bytes, past the inbox limit of {} bytes (SWARM_INBOX_MAX_BYTES)",
        inbox_limit()
    )
}

/// The raw bytes of each element of a top-level JSON array, found by tracking brackets and
/// strings only (all ASCII, so any bytes between them, valid UTF-8 or not, stay inside their
/// element), so an element nested deeper than the parser allows, or holding invalid UTF-8, is
/// still one element. `None` if `text` is not an array whose elements and brackets balance.
fn split_array(text: &[u8]) -> Option<Vec<&[u8]>> {
    let body = text.trim_ascii().strip_prefix(b"[")?.strip_suffix(b"]")?;
    let (mut entries, mut depth, mut start) = (Vec::new(), 0usize, 0);
    let (mut in_string, mut escaped) = (false, false);
    for (i, &b) in body.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.checked_sub(1)?,
            b',' if depth == 0 => {
                entries.push(body[start..i].trim_ascii());
                start = i + 1;
            }
            _ => {}
        }
    }
    if in_string || depth != 0 {
        return None;
    }
    let last = body[start..].trim_ascii();
    if !last.is_empty() {
        entries.push(last);
    } else if !entries.is_empty() {
        return None; // a trailing comma
    }
    Some(entries)
}

/// Appends to the archive at `path` the entries its last `lookback` lines do not hold already
/// (by key). A compaction killed between its archive append and its inbox write left those
/// entries in both files, and the next compaction archives them again: the ones it appended are
/// the archive's last lines, and they are among the `lookback` (the live file's delivered
/// entries), so the check reads only the end of the archive, never the whole history.
pub(super) fn append_jsonl(path: &Path, entries: &[InboxMessage], lookback: usize) -> Result<()> {
    fsio::check_regular(path)?;
    let have = last_keys(path, lookback)?;
    let mut buf = Vec::new();
    for e in entries.iter().filter(|e| !have.contains(&e.key())) {
        serde_json::to_writer(&mut buf, e).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
        buf.push(b'\n');
    }
    if buf.is_empty() {
        return Ok(());
    }
    let mut f = fsio::open_append(path)?;
    f.write_all(&buf).map_err(Error::io("append to", path))?;
    f.sync_all().map_err(Error::io("sync", path))
}

/// The keys of the last `lines` lines of the archive at `path`, read backwards a block at a time.
pub(super) fn last_keys(path: &Path, lines: usize) -> Result<HashSet<String>> {
    const BLOCK: u64 = 64 * 1024;
    let Some(mut file) = fsio::open_read(path)? else {
        return Ok(HashSet::new());
    };
    let mut start = file.metadata().map_err(Error::io("inspect", path))?.len();
    let mut tail: Vec<u8> = Vec::new();
    while start > 0 && tail.iter().filter(|&&b| b == b'\n').count() <= lines {
        let from = start.saturating_sub(BLOCK);
        let mut block = vec![0; (start - from) as usize];
        file.seek(SeekFrom::Start(from))
            .and_then(|_| file.read_exact(&mut block))
            .map_err(Error::io("read", path))?;
        block.extend_from_slice(&tail);
        tail = block;
        start = from;
    }
    // With more newlines than `lines`, the first piece (perhaps part of a line) is not taken.
    Ok(tail
        .split(|&b| b == b'\n')
        .rev()
        .filter(|l| !l.is_empty())
        .take(lines)
        .filter_map(|l| serde_json::from_slice::<InboxMessage>(l).ok())
        .map(|m| m.key())
        .collect())
}

/// Every entry of the archive at `path`, oldest first, each key once (the first copy): a line
/// that does not parse (torn by a crash mid-append) is left out.
pub(super) fn read_archive(path: &Path) -> Result<Vec<InboxMessage>> {
    let Some(bytes) = fsio::read_file(path)? else {
        return Ok(vec![]);
    };
    let mut seen = HashSet::new();
    Ok(bytes
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<InboxMessage>(l).ok())
        .filter(|m| seen.insert(m.key()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixture::agent;
    use crate::store::names::AgentName;

    #[test]
    fn several_entries_spliced_at_once_are_byte_for_byte_a_full_rewrite() {
        let ms: Vec<InboxMessage> = (0..3)
            .map(|i| InboxMessage::new(&agent("coder"), format!("m{i}")))
            .collect();
        let printed: Vec<Vec<u8>> = ms.iter().map(|m| print_entry(m).unwrap()).collect();
        let refs: Vec<&[u8]> = printed.iter().map(Vec::as_slice).collect();
        let mut full = serde_json::to_vec_pretty(&ms).unwrap();
        full.push(b'\n');
        assert_eq!(splice_printed(b"[]\n", &refs).unwrap(), full);
        let one = splice_printed(b"[]\n", &refs[..1]).unwrap();
        assert_eq!(splice_printed(&one, &refs[1..]).unwrap(), full);
        assert!(splice_printed(b"[1", &refs).is_none());
    }

    #[test]
    fn a_printed_entry_parses_back_to_the_message() {
        let m = InboxMessage::new(&AgentName::lead(), "a \"quoted\"\nline")
            .with_summary(Some("s".into()));
        let printed = print_entry(&m).unwrap();
        assert!(printed.starts_with(b"  {\n    \"from\""));
        assert!(printed.ends_with(b"\n  }"));
        assert_eq!(fsio::parse_json::<InboxMessage>(&printed).unwrap(), m);
    }

    #[test]
    fn an_array_splits_into_its_elements_however_deep() {
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        let text = format!(r#"[{{"a": "x,]\"}}"}}, {deep} , 3]"#);
        assert_eq!(
            split_array(text.as_bytes()).unwrap(),
            [r#"{"a": "x,]\"}"}"#.as_bytes(), deep.as_bytes(), b"3"]
        );
        assert_eq!(split_array(b"[ ]").unwrap(), Vec::<&[u8]>::new());
        assert_eq!(
            split_array(b"[\"\xff,\", 1]").unwrap(),
            [&b"\"\xff,\""[..], b"1"]
        );
        for bad in ["[1,]", "[[1]", "[\"]", "{}", "[1]]"] {
            assert!(split_array(bad.as_bytes()).is_none(), "{bad}");
        }
    }
}
