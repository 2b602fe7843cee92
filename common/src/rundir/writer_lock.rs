//! One writer per run directory: an advisory lock (`flock`, through std's `File::try_lock`) on the
//! run directory itself, held for the life of the command. A second `run`, `smoke` or `report` on
//! the same directory is refused at once, naming the process that holds it. The OS releases the
//! lock when the holder exits, however it exits, so a crash never leaves a stale lock.
//!
//! The lock is on the directory, not on a file in it: a file can be unlinked or replaced while
//! held, and a second writer would then lock the new one. `.writer.lock` only tells who holds the
//! lock (pid and command); it is opened like every run file ([`super::open`]), so a link planted
//! in its place is refused rather than truncated. Taking the lock also refuses a directory that
//! holds symbolic links ([`super::open::refuse_links`]), before anything in it is read.

use super::RunDirError;
use super::layout::{self, WRITER_LOCK};
use super::open::{open_with, options, refuse_links};
use super::write::io;
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The held writer lock; dropping it releases the directory.
#[derive(Debug)]
pub struct WriterLock {
    _dir: File,
}

impl WriterLock {
    /// Takes the writer lock of `run_dir`, recording this process (pid and `command`) as holder,
    /// or fails at once with [`RunDirError::Busy`] naming the current holder, or with
    /// [`RunDirError::Links`] when the directory holds symbolic links.
    pub fn acquire(run_dir: &Path, command: &str) -> Result<WriterLock, RunDirError> {
        // Opened without waiting: a FIFO named as the run directory is refused below, not
        // waited on.
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
            .open(run_dir)
            .map_err(io(run_dir))?;
        if !dir.metadata().map_err(io(run_dir))?.is_dir() {
            return Err(RunDirError::NotRegular {
                path: run_dir.to_path_buf(),
                kind: "not a folder",
            });
        }
        match dir.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(RunDirError::Busy {
                    dir: run_dir.to_path_buf(),
                    holder: holder(run_dir),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(run_dir)(e)),
        }
        refuse_links(run_dir)?;
        let path = layout::path(run_dir, WRITER_LOCK);
        let mut open = options();
        open.read(true).write(true).create(true).truncate(false);
        let mut file = open_with(&open, &path)?;
        let me = format!("pid {} ({command})\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(me.as_bytes()))
            .and_then(|()| file.sync_data())
            .map_err(io(&path))?;
        Ok(WriterLock { _dir: dir })
    }
}

/// Who holds the lock, as its holder recorded it.
fn holder(run_dir: &Path) -> String {
    let mut holder = String::new();
    let path = layout::path(run_dir, WRITER_LOCK);
    let mut read = options();
    read.read(true);
    if let Ok(file) = open_with(&read, &path) {
        let _ = file.take(256).read_to_string(&mut holder);
    }
    let holder = holder.trim();
    if holder.is_empty() {
        "a process that has not recorded its pid".into()
    } else {
        holder.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_naming_the_first_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let first = WriterLock::acquire(dir.path(), "run").unwrap_or_else(|e| panic!("{e}"));
        let refused = WriterLock::acquire(dir.path(), "report");
        let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
        let pid = format!("pid {} (run)", std::process::id());
        assert!(message.contains(&pid), "{message}");
        drop(first);
        assert!(WriterLock::acquire(dir.path(), "report").is_ok());
    }

    #[test]
    fn a_deleted_or_replaced_lock_file_never_admits_a_second_writer() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let first = WriterLock::acquire(dir.path(), "run").unwrap_or_else(|e| panic!("{e}"));
        let lock_file = layout::path(dir.path(), WRITER_LOCK);
        std::fs::remove_file(&lock_file).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            WriterLock::acquire(dir.path(), "run"),
            Err(RunDirError::Busy { .. })
        ));
        std::fs::write(&lock_file, b"pid 1 (forged)\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            WriterLock::acquire(dir.path(), "run"),
            Err(RunDirError::Busy { .. })
        ));
        drop(first);
        assert!(WriterLock::acquire(dir.path(), "run").is_ok());
    }

    #[test]
    fn a_lock_file_linked_elsewhere_is_refused_and_its_target_left_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let target = outside.path().join("precious.txt");
        std::fs::write(&target, b"precious\n").unwrap_or_else(|e| panic!("{e}"));
        let lock_file = layout::path(dir.path(), WRITER_LOCK);
        std::os::unix::fs::symlink(&target, &lock_file).unwrap_or_else(|e| panic!("{e}"));
        let message = WriterLock::acquire(dir.path(), "report")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains(".writer.lock ->"), "{message}");
        assert_eq!(std::fs::read(&target).unwrap_or_default(), b"precious\n");
    }
}
