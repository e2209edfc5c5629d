//! The lock's own tests: what a contender breaks, honours and waits for.

use std::os::unix::fs::FileExt as _;

use super::record::RECORD_LEN;
use super::*;
use crate::store::machine::Machine;

#[test]
fn lock_creates_and_removes_the_directory_and_records_itself_in_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("inbox.json");
    let gate = dir.path().join(".inbox.json.gate");
    {
        let _l = FileLock::acquire(&target).unwrap();
        let lock_dir = dir.path().join("inbox.json.lock");
        assert_eq!(fs::read_dir(&lock_dir).unwrap().count(), 0);
        let record: OwnerRecord =
            serde_json::from_slice(fs::read(&gate).unwrap().trim_ascii()).unwrap();
        assert_eq!(record.pid, std::process::id());
        assert!(record.dir.same(&dir_id(&lock_dir).unwrap()));
    }
    assert!(!dir.path().join("inbox.json.lock").exists());
    assert_eq!(fs::read(&gate).unwrap(), b"", "a released gate is empty");
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the gate"
    );
}

#[test]
fn a_held_gate_makes_try_acquire_say_none() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("inbox.json");
    let held = FileLock::acquire(&target).unwrap();
    assert!(FileLock::try_acquire(&target).unwrap().is_none());
    drop(held);
    assert!(FileLock::try_acquire(&target).unwrap().is_some());
}

#[test]
fn a_fresh_lock_directory_no_record_names_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("inbox.json");
    fs::create_dir(lock_dir_of(&target)).unwrap();
    let err = FileLock::acquire_with(&target, Duration::from_millis(200)).unwrap_err();
    assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
}

#[test]
fn an_unnamed_lock_older_than_ten_seconds_is_broken() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("inbox.json");
    let lock_dir = lock_dir_of(&target);
    fs::create_dir(&lock_dir).unwrap();
    let old = SystemTime::now() - Duration::from_secs(11);
    File::open(&lock_dir).unwrap().set_modified(old).unwrap();
    let _l = FileLock::acquire_with(&target, Duration::from_millis(200)).unwrap();
}

/// A holder killed while holding: its directory is named by the gate's record and the gate
/// is free, so the next taker breaks it at once (fresh, so the 10 s rule alone would wait).
#[test]
fn a_directory_the_free_gate_names_means_a_dead_holder() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("inbox.json");
    let lock_dir = lock_dir_of(&target);
    let gate = open_gate(&target).unwrap();
    FileExt::lock_exclusive(&gate).unwrap();
    assert!(try_place_dir(&gate, &lock_dir).unwrap().is_some());
    drop(gate); // the kernel releases a killed holder's flock the same way
    assert!(lock_dir.exists());
    let _l = FileLock::acquire_with(&target, Duration::from_millis(500)).unwrap();
}

/// A directory of the same name made after the recorded one (another inode or birth) is
/// not the dead holder's: it is honoured.
#[test]
fn a_record_naming_an_earlier_directory_breaks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("inbox.json");
    let lock_dir = lock_dir_of(&target);
    drop(FileLock::acquire(&target).unwrap());
    fs::create_dir(&lock_dir).unwrap();
    let gate = open_gate(&target).unwrap();
    write_record(
        &gate,
        DirId {
            ino: 1,
            dev: 1,
            born: 1,
        },
    )
    .unwrap();
    drop(gate);
    let err = FileLock::acquire_with(&target, Duration::from_millis(200)).unwrap_err();
    assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
}

/// On a store another host shares, a free gate says nothing about that host's holder and its
/// clock is not ours: its directory is waited for, even when it looks older than 10 s.
#[test]
fn a_directory_another_host_records_is_never_broken_on_age() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("inbox.json");
    let lock_dir = lock_dir_of(&target);
    let gate = open_gate(&target).unwrap();
    FileExt::lock_exclusive(&gate).unwrap();
    assert!(try_place_dir(&gate, &lock_dir).unwrap().is_some());
    let mut record = read_record(&gate).unwrap();
    record.machine = Some(Machine {
        host: "build-box-7".into(),
        boot: "b".into(),
    });
    let mut bytes = serde_json::to_vec(&record).unwrap();
    bytes.resize(RECORD_LEN, b' ');
    gate.write_all_at(&bytes, 0).unwrap();
    drop(gate);
    let old = SystemTime::now() - Duration::from_secs(60);
    File::open(&lock_dir).unwrap().set_modified(old).unwrap();
    let err = FileLock::acquire_with(&target, Duration::from_millis(300)).unwrap_err();
    assert!(err.to_string().contains("on host build-box-7"), "{err}");
    assert!(lock_dir.exists());
    // Once that host releases it (its directory goes), the lock is ours.
    fs::remove_dir(&lock_dir).unwrap();
    let _l = FileLock::acquire_with(&target, Duration::from_millis(300)).unwrap();
}

/// A gate deleted under a live holder: its directory, named by no record and made to look
/// a minute old, is still never broken, since the holder flocks it.
#[test]
fn a_live_holders_directory_is_never_broken_when_its_gate_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("inbox.json");
    let held = FileLock::acquire(&target).unwrap();
    fs::remove_file(gate_path(&target)).unwrap();
    let old = SystemTime::now() - Duration::from_secs(60);
    File::open(lock_dir_of(&target))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let err = FileLock::acquire_with(&target, Duration::from_millis(300)).unwrap_err();
    assert!(matches!(err, Error::LockTimeout { .. }), "{err}");
    drop(held);
    let _l = FileLock::acquire_with(&target, Duration::from_millis(300)).unwrap();
}

#[test]
fn the_older_layout_left_by_a_dead_holder_is_broken() {
    for leftover in ["owner.tmp-4242", "owner"] {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("inbox.json");
        let lock_dir = lock_dir_of(&target);
        fs::create_dir(&lock_dir).unwrap();
        fs::write(lock_dir.join(leftover), "{\"pid\": 1}").unwrap();
        let _l = FileLock::acquire_with(&target, Duration::from_millis(200)).unwrap();
    }
}

#[test]
fn a_fifo_gate_is_moved_aside() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("inbox.json");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        gate_path(&target),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let _l = FileLock::acquire_with(&target, Duration::from_millis(500)).unwrap();
    assert!(fs::metadata(gate_path(&target)).unwrap().is_file());
}
