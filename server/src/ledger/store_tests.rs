//! The settings each SQLite connection of the ledger gets.

use super::Ledger;

#[tokio::test]
async fn a_sqlite_ledger_runs_with_a_write_ahead_log_and_a_512_kib_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("ledger.sqlite").display());
    let ledger = Ledger::open(&url).await.unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&ledger.pool)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    // Negative: KiB, not pages (SQLite's "PRAGMA cache_size").
    let cache: i64 = sqlx::query_scalar("PRAGMA cache_size")
        .fetch_one(&ledger.pool)
        .await
        .unwrap();
    assert_eq!(cache, -512);
}
