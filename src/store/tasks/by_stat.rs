//! How one-shot commands (`swarm task list`, `task next --claim`, ...) read the whole task list
//! without parsing every file: a sidecar of what each file held when last read, trusted only
//! while the file's `stat` is unchanged.
//!
//! A one-shot process has no index to keep, so it keeps the index on disk: `tasks/<team>/
//! .swarm-tasks-cache` (hidden: Claude Code reads only `*.json`, and watchers ignore dot files)
//! lists, for each task file, its stamp (device, inode, size, modification and change times) and
//! the task it held. Listing then costs one `stat` per file, and only files whose stamp changed
//! are read and parsed. Every writer changes the stamp: a rename brings a new inode, an in-place
//! write a new change time, which no one can set by hand. Two writes within one tick of the
//! file-system clock could share a change time, so, as git does with its index, an entry is only
//! kept once the file has not changed for [`SETTLED`]; a file written more recently is read
//! every time. The sidecar is a cache: written without fsync, read only if it parses, every
//! entry checked against the file; losing it costs one full read. Claims are still decided on
//! the file under the task's lock.

use std::collections::HashMap;
use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{Task, TaskList};
use crate::error::{Error, Result};
use crate::store::fsio::{self, Stamp};
use crate::store::guard;

/// The sidecar's name in `tasks/<team>/`.
const SIDECAR: &str = ".swarm-tasks-cache";
/// How long a file must have been left alone before what it holds is cached.
const SETTLED: Duration = Duration::from_secs(1);

#[derive(Serialize, Deserialize)]
struct Sidecar {
    entries: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    stamp: Stamp,
    task: Task,
}

impl TaskList<'_> {
    /// What `list` returns, reading only the files whose stamp differs from the sidecar's; each
    /// task with the stamp its file had when it was looked at (for the task index to start from).
    pub(super) fn list_by_stat(&self) -> Result<Vec<(Task, Stamp)>> {
        let dir = self.store.tasks_dir(self.team);
        guard::check_dirs(&dir)?;
        let sidecar = dir.join(SIDECAR);
        let mut cached = load(&sidecar);
        let started = SystemTime::now();
        let euid = guard::euid();
        let mut tasks = Vec::new();
        let mut keep = Vec::new();
        let mut learned = false;
        for id in self.ids()? {
            let path = self.store.task_path(self.team, &id);
            let meta = match fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io("inspect", &path)(e)),
            };
            let stamp = Stamp::of(&meta);
            let hit = cached
                .remove(&id.number())
                .filter(|e| e.stamp == stamp && meta.file_type().is_file());
            let task = match hit {
                Some(entry) => {
                    // What `fsio::read_file` checks of every file it opens (the uid fetched once).
                    if meta.uid() != euid || meta.nlink() != 1 {
                        guard::check_file(&path, &meta)?;
                    }
                    entry.task
                }
                None => match self.read_listed(&id)? {
                    Some(task) => {
                        learned |= settled(&meta, started);
                        task
                    }
                    None => continue,
                },
            };
            if settled(&meta, started) {
                keep.push(Entry {
                    stamp,
                    task: task.clone(),
                });
            }
            tasks.push((task, stamp));
        }
        // Rewritten only when it would now answer more, or holds files that are gone.
        if learned || !cached.is_empty() {
            save(&dir, &sidecar, &Sidecar { entries: keep });
        }
        Ok(tasks)
    }
}

/// Whether the file last changed at least [`SETTLED`] before `now`.
fn settled(meta: &fs::Metadata, now: SystemTime) -> bool {
    let changed = UNIX_EPOCH
        + Duration::new(
            meta.ctime().max(0) as u64,
            meta.ctime_nsec().clamp(0, 999_999_999) as u32,
        );
    now.duration_since(changed).is_ok_and(|age| age >= SETTLED)
}

/// The sidecar's entries by task number; empty if it is missing or does not parse.
fn load(path: &Path) -> HashMap<u64, Entry> {
    let Ok(Some(bytes)) = fsio::read_file(path) else {
        return HashMap::new();
    };
    serde_json::from_slice::<Sidecar>(&bytes)
        .map(|s| {
            s.entries
                .into_iter()
                .map(|e| (e.task.id.number(), e))
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces the sidecar (temp file and rename, no fsync: it is a cache). Best effort: a failure
/// only means the next listing reads more files.
fn save(dir: &Path, path: &Path, sidecar: &Sidecar) {
    let tmp = dir.join(format!(
        "{SIDECAR}{}{}-{}",
        fsio::TEMP_MARK,
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let written = (|| -> std::io::Result<()> {
        let bytes = serde_json::to_vec(sidecar)?;
        let mut file = fsio::create_new(&tmp).map_err(std::io::Error::other)?;
        file.write_all(&bytes)?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::names::{TaskId, TeamName};
    use crate::store::paths::Store;
    use crate::store::tasks::{NewTask, TaskPatch, TaskStatus};

    #[test]
    fn a_listing_by_stat_trusts_only_unchanged_settled_files_and_sees_every_writer() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let team: TeamName = "t".parse().unwrap();
        let tl = TaskList::by_stat(&store, &team);
        for s in ["a", "b", "c"] {
            tl.create(NewTask {
                subject: s.into(),
                ..Default::default()
            })
            .unwrap();
        }
        let subjects = |tl: &TaskList| -> Vec<String> {
            tl.list().unwrap().into_iter().map(|t| t.subject).collect()
        };
        assert_eq!(subjects(&tl), ["a", "b", "c"]);
        let sidecar = store.tasks_dir(&team).join(SIDECAR);
        assert!(
            load(&sidecar).is_empty(),
            "files written a moment ago are not cached"
        );
        // Let the files settle (not a timing assert: this only ages them).
        std::thread::sleep(SETTLED + Duration::from_millis(100));
        assert_eq!(subjects(&tl), ["a", "b", "c"]);
        assert_eq!(load(&sidecar).len(), 3, "settled files are cached");

        // The sidecar is trusted while a file's stamp is unchanged: a tampered entry shows...
        let mut side: Sidecar = serde_json::from_slice(&fs::read(&sidecar).unwrap()).unwrap();
        side.entries[0].task.subject = "from the sidecar".into();
        fs::write(&sidecar, serde_json::to_vec(&side).unwrap()).unwrap();
        assert_eq!(subjects(&tl)[0], "from the sidecar");
        // ...and every kind of write changes the stamp: a swarm rename, an in-place write of
        // the same size (as Claude Code writes), a removal.
        let first = TaskId::new(1);
        tl.update(
            &first,
            TaskPatch {
                status: Some(TaskStatus::Completed),
                ..Default::default()
            },
        )
        .unwrap();
        let third = store.task_path(&team, &TaskId::new(3));
        let text = fs::read_to_string(&third)
            .unwrap()
            .replace("\"c\"", "\"C\"");
        fs::write(&third, text).unwrap();
        fs::remove_file(store.task_path(&team, &TaskId::new(2))).unwrap();
        let listed = tl.list().unwrap();
        assert_eq!(
            listed
                .iter()
                .map(|t| (t.subject.as_str(), t.status))
                .collect::<Vec<_>>(),
            [("a", TaskStatus::Completed), ("C", TaskStatus::Pending)]
        );
        assert_eq!(listed, TaskList::new(&store, &team).list().unwrap());

        // A sidecar that does not parse is only a slower listing.
        fs::write(&sidecar, "{").unwrap();
        assert_eq!(tl.list().unwrap(), listed);
    }
}
