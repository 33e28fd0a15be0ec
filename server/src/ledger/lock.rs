//! One spotboard per SQLite ledger: an operating-system lock on a `.lock` file beside it.

use crate::{Error, Result};

/// The SQLite file's path in a `sqlite://PATH[?…]` URL (`None` for in-memory databases).
pub(super) fn sqlite_path(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| path.into())
}

/// Takes the exclusive owner lock of the SQLite ledger at `db` (a `.lock` file beside it).
///
/// Why: two spotboard processes on one SQLite file each "close" the other's open lifetimes
/// for clusters of the same name at start, so the savings history would mix two runs. The
/// lock is the operating system's, so it goes with the process, however that ends.
///
/// Errors: another process holds it (the message names its pid and what to do), or the lock
/// file cannot be created.
pub(super) async fn lock_sqlite(db: &std::path::Path) -> Result<std::fs::File> {
    use std::io::{Read, Seek, Write};
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    let lock_path = std::path::PathBuf::from(name);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|e| Error::Ledger(format!("creating {}: {e}", lock_path.display())))?;
    // A restart in the same place may find the old process's lock for a moment longer.
    let mut tries = 0;
    let locked = loop {
        match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock) if tries < 30 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            other => break other,
        }
    };
    match locked {
        Ok(()) => {
            let _ = file.set_len(0);
            let _ = file.rewind();
            let _ = write!(file, "{}", std::process::id());
            Ok(file)
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            Err(Error::LedgerBusy {
                path: db.display().to_string(),
                holder: holder.trim().to_string(),
            })
        }
        Err(std::fs::TryLockError::Error(e)) => Err(Error::Ledger(format!(
            "locking {}: {e}",
            lock_path.display()
        ))),
    }
}
