//! One writer per run directory: an advisory lock (`flock`/`LockFileEx` through std's
//! `File::try_lock`) on `.writer.lock`, held for the life of the command. A second `run`, `smoke`
//! or `report` on the same directory is refused at once, naming the process that holds it. The OS
//! releases the lock when the holder exits, however it exits, so a crash never leaves a stale lock.

use super::RunDirError;
use super::layout::{self, WRITER_LOCK};
use super::write::io;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The held writer lock; dropping it releases the directory.
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

impl WriterLock {
    /// Takes the writer lock of `run_dir`, recording this process (pid and `command`) as holder,
    /// or fails at once with [`RunDirError::Busy`] naming the current holder.
    pub fn acquire(run_dir: &Path, command: &str) -> Result<WriterLock, RunDirError> {
        let path = layout::path(run_dir, WRITER_LOCK);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(RunDirError::Busy {
                    dir: run_dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        "a process that has not yet recorded its pid".into()
                    } else {
                        holder.to_string()
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(&path)(e)),
        }
        let me = format!("pid {} ({command})\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(me.as_bytes()))
            .and_then(|()| file.sync_data())
            .map_err(io(&path))?;
        Ok(WriterLock { _file: file })
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
}
