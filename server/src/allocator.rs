//! The allocator's settings, which it reads from the environment once, before `main`.

use std::os::unix::process::CommandExt;

/// mimalloc's purge delay, milliseconds (`MIMALLOC_PURGE_DELAY`; mimalloc v3's default is
/// 1,000).
pub const PURGE_DELAY_VAR: &str = "MIMALLOC_PURGE_DELAY";

/// Runs this binary again with `MIMALLOC_PURGE_DELAY=0` unless the variable is already set
/// (by the operator, or by this re-run); returns only when that is not needed or fails (the
/// failure is printed and the process goes on with the default).
///
/// Why: mimalloc gives a freed page back to the system a second after it was freed, and only
/// when the thread that freed it allocates again. The threads that decode the first lists
/// and write the ledger go quiet afterwards, so their freed pages stayed resident for good:
/// measured at 10k nodes and 50k pods, the dashboard's RSS climbed from 82 to 100 MB after
/// its first list and stayed there; with the delay at 0 it held at 77–78 MB. mimalloc reads
/// its options before `main` runs, so the variable has to be in the environment the process
/// starts with; `exec` keeps the process id, the open files and the arguments.
pub fn purge_freed_pages_at_once() {
    if std::env::var_os(PURGE_DELAY_VAR).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
    let error = std::process::Command::new(&exe)
        .arg0(arg0)
        .args(args)
        .env(PURGE_DELAY_VAR, "0")
        .exec();
    eprintln!(
        "spotboard: running with the allocator's default purge delay ({PURGE_DELAY_VAR}=0 could not be set: {error})"
    );
}
