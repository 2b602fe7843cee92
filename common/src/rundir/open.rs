//! How every file of a run directory is opened: never through a symbolic link, only when it is a
//! regular file, and never blocking on a FIFO planted in its place.
//!
//! Two layers: [`refuse_links`] lists the run directory and its folders when a writer takes the
//! directory, naming every symbolic link (and where it points, when that is outside the run) so
//! nothing is read or written before the user removes it; and every open here carries
//! `O_NOFOLLOW`, so a link planted after that scan is refused by the kernel at the open itself
//! ([`RunDirError::Symlink`]). The folders a run creates (`raw/`, `artifacts/`, `checkpoints/`)
//! are checked by the scan only: std has no `openat`, and the workspace forbids `unsafe`.

use super::RunDirError;
use super::layout::{self, CHECKPOINTS};
use super::lines::JSON_FILE_BYTES;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Flags of every open: no link followed, no FIFO waited for, no controlling terminal taken.
const FLAGS: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

/// The folders of a run directory whose entries [`refuse_links`] checks, besides the top level.
const FOLDERS: [&str; 3] = ["raw", "artifacts", CHECKPOINTS];

/// Open options carrying the flags every run-directory open uses.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.custom_flags(FLAGS);
    options
}

/// Opens `path` with `options` (see [`options`]) and checks it is a regular file: a symbolic
/// link is [`RunDirError::Symlink`], a FIFO, device or folder [`RunDirError::NotRegular`].
pub fn open_with(options: &OpenOptions, path: &Path) -> Result<File, RunDirError> {
    let file = options.open(path).map_err(|source| opened(path, source))?;
    let meta = file.metadata().map_err(|source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.file_type().is_file() {
        return Err(RunDirError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(meta.file_type()),
        });
    }
    Ok(file)
}

/// Opens a run-directory file for reading ([`open_with`]'s rules).
pub fn open_read(path: &Path) -> Result<File, RunDirError> {
    let mut options = options();
    options.read(true);
    open_with(&options, path)
}

/// Opens a run-directory JSON artifact for reading ([`open_with`]'s rules), refusing one over
/// [`JSON_FILE_BYTES`]; the reader stops one byte past the bound (so a file that grows after the
/// check fails to parse rather than filling memory).
pub fn open_json(path: &Path) -> Result<std::io::Take<File>, RunDirError> {
    let file = open_read(path)?;
    let len = file.metadata().map_err(|source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if len.len() > JSON_FILE_BYTES {
        return Err(RunDirError::TooLarge {
            path: path.to_path_buf(),
            limit: JSON_FILE_BYTES,
        });
    }
    Ok(file.take(JSON_FILE_BYTES + 1))
}

/// Reads a whole run-directory JSON artifact ([`open_json`]'s rules and bound).
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, RunDirError> {
    let mut bytes = Vec::new();
    open_json(path)?
        .read_to_end(&mut bytes)
        .map_err(|source| RunDirError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > JSON_FILE_BYTES {
        return Err(RunDirError::TooLarge {
            path: path.to_path_buf(),
            limit: JSON_FILE_BYTES,
        });
    }
    Ok(bytes)
}

/// Maps an open's error: `ELOOP` under `O_NOFOLLOW` means the last component is a link, `ENXIO`
/// a FIFO opened for writing with no reader.
fn opened(path: &Path, source: std::io::Error) -> RunDirError {
    match source.raw_os_error() {
        Some(libc::ELOOP) => RunDirError::Symlink {
            path: path.to_path_buf(),
            target: describe_target(path),
        },
        Some(libc::ENXIO) => RunDirError::NotRegular {
            path: path.to_path_buf(),
            kind: "a FIFO or socket",
        },
        _ => RunDirError::Io {
            path: path.to_path_buf(),
            source,
        },
    }
}

fn kind_of(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Where a link points, as an error shows it.
fn describe_target(path: &Path) -> String {
    match std::fs::read_link(path) {
        Ok(target) => target.display().to_string(),
        Err(_) => "an unreadable target".to_string(),
    }
}

/// Refuses a run directory that holds a symbolic link at its top level or in one of its folders
/// (or a folder that is itself a link), naming every one and where it points; a link whose
/// target resolves outside the run directory says so.
pub fn refuse_links(run_dir: &Path) -> Result<(), RunDirError> {
    let mut links = Vec::new();
    let mut check = |path: &Path| {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            links.push(path.to_path_buf());
        }
    };
    let mut listed = vec![run_dir.to_path_buf()];
    for folder in FOLDERS {
        let folder = layout::path(run_dir, folder);
        check(&folder);
        if std::fs::symlink_metadata(&folder).is_ok_and(|m| m.file_type().is_dir()) {
            listed.push(folder);
        }
    }
    for dir in &listed {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                let path = entry.path();
                if !links.contains(&path) {
                    links.push(path);
                }
            }
        }
    }
    if links.is_empty() {
        return Ok(());
    }
    links.sort();
    let root = std::fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    let named: Vec<String> = links
        .iter()
        .map(|link| {
            let name = link.strip_prefix(run_dir).unwrap_or(link).display();
            let outside = match std::fs::canonicalize(link) {
                Ok(resolved) if resolved.starts_with(&root) => "",
                _ => ", outside the run directory",
            };
            format!("{name} -> {}{outside}", describe_target(link))
        })
        .collect();
    Err(RunDirError::Links {
        dir: run_dir.to_path_buf(),
        links: named.join("; "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
    }

    #[test]
    fn a_link_is_refused_at_open_and_named_by_the_scan() {
        let outside = tempdir();
        let target = outside.path().join("elsewhere.jsonl");
        std::fs::write(&target, b"keep\n").unwrap_or_else(|e| panic!("{e}"));
        let run = tempdir();
        std::fs::create_dir_all(run.path().join("raw")).unwrap_or_else(|e| panic!("{e}"));
        let link = run.path().join("raw/results.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap_or_else(|e| panic!("{e}"));
        let mut append = options();
        append.append(true);
        match open_with(&append, &link) {
            Err(RunDirError::Symlink { path, .. }) => assert_eq!(path, link),
            other => panic!("expected a refused link, got {other:?}"),
        }
        let message = refuse_links(run.path())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let expected = format!(
            "raw/results.jsonl -> {}, outside the run directory",
            target.display()
        );
        assert!(message.contains(&expected), "{message}");
        assert_eq!(std::fs::read(&target).unwrap_or_default(), b"keep\n");
        // A link that stays inside is still a link: named, without "outside".
        std::fs::remove_file(&link).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(run.path().join("raw/real.jsonl"), b"").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("real.jsonl", &link).unwrap_or_else(|e| panic!("{e}"));
        let message = refuse_links(run.path())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            message.contains("raw/results.jsonl -> real.jsonl") && !message.contains("outside"),
            "{message}"
        );
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let run = tempdir();
        let fifo = run.path().join("run-lock.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        match read_bytes(&fifo) {
            Err(RunDirError::NotRegular { kind, .. }) => assert_eq!(kind, "a FIFO"),
            other => panic!("expected a refused FIFO, got {other:?}"),
        }
        assert!(refuse_links(run.path()).is_ok());
    }
}
