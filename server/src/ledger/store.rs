//! The ledger's storage: its connection, health, writes retried and heartbeats, in SQLite
//! (default, a file) or PostgreSQL (`--database-url postgres://…`), through sqlx's `Any`
//! driver with one schema (`server/migrations`). Times are stored as Unix seconds. What is
//! stored lives beside it: node lifetimes (`lifetimes.rs`), pods, conditions, savings.

use chrono::{DateTime, TimeZone, Utc};
use sqlx::{AnyPool, Row, any::AnyPoolOptions};

use super::lock::{lock_sqlite, sqlite_path};
use crate::leader::Leadership;
use crate::{Error, Result};

/// An open ledger.
#[derive(Clone)]
pub struct Ledger {
    pub(super) pool: AnyPool,
    /// `sqlite` or `postgres`, for the log and the health page.
    pub backend: &'static str,
    /// The SQLite file's owner lock, held while any clone of this ledger lives.
    _owner: Option<std::sync::Arc<std::fs::File>>,
    /// Whether the database answers, from the last reads and writes.
    health: std::sync::Arc<std::sync::Mutex<Health>>,
    /// The run this process records for: '' for real clusters, a per-run id for the embedded
    /// cluster ([`Ledger::with_identity`]).
    pub(super) identity: String,
    /// Whether this process writes (the Lease holder among replicas; a lone process always).
    /// Every write asks it first, so a replica that is not the writer never writes.
    writer: Leadership,
}

/// How long another run's heartbeat may be silent before its open lifetimes count as
/// abandoned (the recorder beats every second).
pub const ABANDONED_AFTER: chrono::Duration = chrono::Duration::seconds(60);

/// Since when the database has been failing, and why; `None` while it answers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Health {
    pub unavailable_since: Option<DateTime<Utc>>,
    pub error: Option<String>,
}

/// How long a request waits for a PostgreSQL connection before the ledger counts as away:
/// pages must answer quickly (from live data) whatever the database does.
pub const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a SQLite ledger's single connection is waited for (sqlx's default).
const SQLITE_ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Set on each SQLite connection. SQLite's defaults (a rollback journal, synced on every
/// commit) wrote a first list's 10,000 node lifetimes at about 800 a second, holding them
/// queued in memory for 13 s; with a write-ahead log synced at checkpoints, a commit costs no
/// disk flush. What this risks is the last commits before a power loss, not a process
/// crash (SQLite: "Write-Ahead Logging", "PRAGMA synchronous"). The page cache is held to
/// 512 KiB (default 2 MiB, "PRAGMA cache_size"): it was 2.3 MB of the dashboard's 23 MB heap
/// at 10k nodes, for a ledger mostly appended to, whose pages the OS's file cache keeps too.
const SQLITE_PRAGMAS: [&str; 3] = [
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA cache_size = -512",
];

/// How long [`Ledger::until_written`] keeps trying one write (the recorder's own queue
/// covers node lifetimes for longer, up to its size).
pub const RETRY_WRITES_FOR: std::time::Duration = std::time::Duration::from_secs(6 * 3600);

/// How often migrations are tried again when the database was away at start.
const MIGRATE_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// A run's heartbeat key in `ledger_meta`: `heartbeat` for real clusters (as before runs had
/// ids), `heartbeat:<id>` for an embedded run.
fn heartbeat_key(identity: &str) -> String {
    if identity.is_empty() {
        "heartbeat".into()
    } else {
        format!("heartbeat:{identity}")
    }
}

pub(super) fn secs(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

pub(super) fn time(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(s, 0).single().unwrap_or_default()
}

/// `s` without NUL characters: PostgreSQL refuses them in `TEXT` ("invalid byte sequence"),
/// and a write the ledger refuses would hold up every write queued behind it. Text from the
/// clusters (event and condition messages) may carry anything.
pub(super) fn text(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\0') {
        std::borrow::Cow::Owned(s.replace('\0', ""))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

pub(super) fn db(context: &str) -> impl Fn(sqlx::Error) -> Error + '_ {
    move |e| Error::Ledger(format!("{context}: {e}"))
}

impl Ledger {
    /// Opens (creating when needed) the ledger at `url` and applies the migrations.
    /// `url` is `sqlite://PATH` (the file is created) or `postgres://…`. A database that
    /// cannot be reached or written now does not stop spotboard: the ledger reports itself
    /// unavailable ([`Ledger::health`]) and the migrations are tried again until they pass.
    ///
    /// Errors: another spotboard owns the SQLite file ([`Error::LedgerBusy`]), or the URL is
    /// not one sqlx understands.
    pub async fn open(url: &str) -> Result<Self> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("postgres") {
            "postgres"
        } else {
            "sqlite"
        };
        let owner = match sqlite_path(url).filter(|_| backend == "sqlite") {
            Some(path) => match lock_sqlite(&path).await {
                Ok(f) => Some(std::sync::Arc::new(f)),
                Err(e @ Error::LedgerBusy { .. }) => return Err(e),
                // A read-only or full disk: the database will not open either, and the
                // dashboard serves live data without it.
                Err(e) => {
                    tracing::error!(error = %e, "cannot lock the ledger file");
                    None
                }
            },
            None => None,
        };
        let url = if backend == "sqlite" && !url.contains("mode=") {
            format!("{url}{}mode=rwc", if url.contains('?') { '&' } else { '?' })
        } else {
            url.to_string()
        };
        let pool = AnyPoolOptions::new()
            .max_connections(if backend == "sqlite" { 1 } else { 4 })
            // SQLite has one connection: waiting for it is contention, not an outage.
            .acquire_timeout(if backend == "sqlite" {
                SQLITE_ACQUIRE_TIMEOUT
            } else {
                ACQUIRE_TIMEOUT
            })
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == "sqlite" {
                        for pragma in SQLITE_PRAGMAS {
                            sqlx::query(pragma).execute(&mut *conn).await?;
                        }
                    }
                    Ok(())
                })
            })
            .connect_lazy(&url)
            .map_err(db("opening the ledger"))?;
        let ledger = Ledger {
            pool,
            backend,
            _owner: owner,
            health: Default::default(),
            identity: String::new(),
            writer: Leadership::sole(),
        };
        if let Err(e) = ledger.migrate().await {
            tracing::error!(error = %e, "the ledger is unavailable; spotboard serves live data and keeps trying");
            let retry = ledger.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(MIGRATE_RETRY).await;
                    if retry.migrate().await.is_ok() {
                        tracing::info!("the ledger is available again");
                        return;
                    }
                }
            });
        }
        Ok(ledger)
    }

    async fn migrate(&self) -> Result<()> {
        let result = async {
            sqlx::migrate::Migrator::new(super::migrations::Embedded)
                .await?
                .run(&self.pool)
                .await
        }
        .await
        .map_err(|e| Error::Ledger(format!("migrating the ledger: {e}")));
        self.track(result)
    }

    /// Whether the database answered the last reads and writes.
    pub fn health(&self) -> Health {
        self.health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Notes `result` in the ledger's health and passes it on: the first failure starts
    /// "unavailable since", a success ends it.
    pub fn track<T>(&self, result: Result<T>) -> Result<T> {
        let mut h = self.health.lock().unwrap_or_else(|p| p.into_inner());
        match &result {
            Ok(_) => *h = Health::default(),
            // Not writing is this replica's part, not the database's health.
            Err(Error::NotWriter { .. }) => {}
            Err(e) => {
                h.unavailable_since.get_or_insert_with(Utc::now);
                h.error = Some(e.to_string());
            }
        }
        result
    }

    /// The same ledger recording for run `id` of its clusters. The embedded cluster's
    /// clusters have the same names every run (and two processes may share a PostgreSQL
    /// ledger): with an id per run, a run never closes or prices another run's nodes.
    pub fn with_identity(mut self, id: impl Into<String>) -> Self {
        self.identity = id.into();
        self
    }

    /// The same ledger written only while `writer` holds (replicas sharing one PostgreSQL).
    pub fn with_writer(mut self, writer: Leadership) -> Self {
        self.writer = writer;
        self
    }

    /// Who writes this ledger now (see [`Leadership`]).
    pub fn writer(&self) -> &Leadership {
        &self.writer
    }

    /// A connection of the pool, for a write (see the `_on` writes).
    ///
    /// Errors: the database cannot be reached.
    pub(super) async fn connection(&self) -> Result<sqlx::pool::PoolConnection<sqlx::Any>> {
        self.pool.acquire().await.map_err(db("connecting"))
    }

    /// A transaction for a batch of writes, committed by the caller (dropped: rolled back).
    ///
    /// Errors: this replica is not the writer, or the database cannot be reached.
    pub(super) async fn begin(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        self.writable()?;
        self.pool
            .begin()
            .await
            .map_err(db("starting a transaction"))
    }

    /// `Ok` when this process may write now.
    ///
    /// Errors: [`Error::NotWriter`] on a replica that does not hold the Lease (or whose
    /// renewal deadline has passed).
    pub(super) fn writable(&self) -> Result<()> {
        if self.writer.holds() {
            Ok(())
        } else {
            Err(Error::NotWriter {
                writer: self.writer.describe(),
            })
        }
    }

    /// Runs the idempotent `write` until it goes through: every 2 s at first, doubling to once
    /// a minute, for up to [`RETRY_WRITES_FOR`]. Why: a preemption's pods are read once, at
    /// T=0, and the node is gone minutes later; a database away then must not lose them. On a
    /// replica that does not write, it waits up to [`super::FOLLOWER_KEEPS`] to become the
    /// writer, then leaves the write to the holder (`Ok`).
    ///
    /// Errors: the last failure, once [`RETRY_WRITES_FOR`] has passed.
    pub async fn until_written<F, Fut>(&self, what: &str, mut write: F) -> Result<()>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<()>>,
    {
        let started = std::time::Instant::now();
        let mut wait = std::time::Duration::from_secs(2);
        loop {
            match self.track(write().await) {
                Ok(()) => return Ok(()),
                // A replica that does not write keeps the write for a takeover: when the
                // holder stops, what it had not written yet is written here.
                Err(Error::NotWriter { .. }) => {
                    let left = super::FOLLOWER_KEEPS.saturating_sub(started.elapsed());
                    if !self.writer.wait_to_hold(left).await {
                        tracing::debug!("{what}: written by the replica that holds the Lease");
                        return Ok(());
                    }
                }
                Err(e) if started.elapsed() >= RETRY_WRITES_FOR => return Err(e),
                Err(e) => {
                    tracing::warn!(error = %e, retry_in_s = wait.as_secs(), "{what}: the ledger is away; retrying");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(std::time::Duration::from_secs(60));
                }
            }
        }
    }

    /// Stores the recorder's heartbeat (this run's).
    pub async fn beat(&self, at: DateTime<Utc>) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "INSERT INTO ledger_meta (key, value) VALUES ($2, $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(secs(at))
        .bind(heartbeat_key(&self.identity))
        .execute(&self.pool)
        .await
        .map_err(db("writing the heartbeat"))?;
        Ok(())
    }

    /// This run's last heartbeat, if any.
    pub async fn last_beat(&self) -> Result<Option<DateTime<Utc>>> {
        self.beat_of(&self.identity).await
    }

    pub(super) async fn beat_of(&self, identity: &str) -> Result<Option<DateTime<Utc>>> {
        let row = sqlx::query("SELECT value FROM ledger_meta WHERE key = $1")
            .bind(heartbeat_key(identity))
            .fetch_optional(&self.pool)
            .await
            .map_err(db("reading the heartbeat"))?;
        Ok(row.map(|r| time(r.get(0))))
    }
}
