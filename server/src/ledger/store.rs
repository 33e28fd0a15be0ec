//! The ledger's storage: node lifetimes in SQLite (default, a file) or PostgreSQL
//! (`--database-url postgres://…`), through sqlx's `Any` driver with one schema
//! (`server/migrations`). Times are stored as Unix seconds.

use app::domain::preemption::CapacityType;
use app::domain::preemption::evictions::EvictionCounts;
use app::model::Lifetime;
use chrono::{DateTime, TimeZone, Utc};
use futures::TryStreamExt;
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
    identity: String,
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

/// A `node_lifetimes` row, its twelve columns first in the query (and `ready_at` anywhere).
pub(super) fn lifetime(r: &sqlx::any::AnyRow) -> Lifetime {
    Lifetime {
        uid: r.get(0),
        cluster: r.get(1),
        node: r.get(2),
        pool: r.get(3),
        instance_type: r.get(4),
        zone: r.get(5),
        capacity_type: CapacityType::parse(&r.get::<String, _>(6)),
        gpus: u32::try_from(r.get::<i64, _>(7)).unwrap_or(0),
        started_at: time(r.get(8)),
        ended_at: r.get::<Option<i64>, _>(9).map(time),
        end_reason: r.get(10),
        preemption_t0: r.get::<Option<i64>, _>(11).map(time),
        // By name: only the queries that need it select it.
        ready_at: r
            .try_get::<Option<i64>, _>("ready_at")
            .ok()
            .flatten()
            .map(time),
        evictions: EvictionCounts {
            refused: count(r, "evictions_refused"),
            past_grace: count(r, "pods_past_grace"),
            killed: count(r, "pods_killed"),
        },
    }
}

/// A count column by name; 0 when the query does not select it or it is NULL.
fn count(r: &sqlx::any::AnyRow, name: &str) -> u32 {
    r.try_get::<Option<i64>, _>(name)
        .ok()
        .flatten()
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0)
}

/// The eviction-error columns of a lifetime in `between`: refusals as recorded, and the
/// pods held at T=0 by how they stood when the node went, DaemonSet pods aside (see
/// `app::domain::preemption::evictions`).
const EVICTION_COLUMNS: &str = "evictions_refused,
    (SELECT COUNT(*) FROM preemption_pods p WHERE p.node_uid = node_lifetimes.uid
       AND (p.owner_kind IS NULL OR p.owner_kind <> 'DaemonSet')
       AND p.outcome IN ('still running', 'terminating')) AS pods_killed,
    (SELECT COUNT(*) FROM preemption_pods p WHERE p.node_uid = node_lifetimes.uid
       AND (p.owner_kind IS NULL OR p.owner_kind <> 'DaemonSet')
       AND p.outcome = 'terminating past its grace period') AS pods_past_grace";

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
        let result = sqlx::migrate!("./migrations")
            .run(&self.pool)
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

    /// Records a node that started (or is seen for the first time). A known uid keeps its
    /// start; its pool, type and zone are refreshed.
    pub async fn started(&self, l: &Lifetime) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "INSERT INTO node_lifetimes (uid, cluster, node, pool, instance_type, zone, capacity_type, gpus, started_at, cluster_uid)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (uid) DO UPDATE SET pool = excluded.pool, instance_type = excluded.instance_type,
                 zone = excluded.zone, capacity_type = excluded.capacity_type, gpus = excluded.gpus",
        )
        .bind(&l.uid)
        .bind(&l.cluster)
        .bind(&l.node)
        .bind(l.pool.clone())
        .bind(l.instance_type.clone())
        .bind(l.zone.clone())
        .bind(l.capacity_type.as_str())
        .bind(i64::from(l.gpus))
        .bind(secs(l.started_at))
        .bind(&self.identity)
        .execute(&self.pool)
        .await
        .map_err(db("recording a node"))?;
        Ok(())
    }

    /// Records T=0 of a preemption, once.
    pub async fn preempting(&self, uid: &str, t0: DateTime<Utc>) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "UPDATE node_lifetimes SET preemption_t0 = $1 WHERE uid = $2 AND preemption_t0 IS NULL",
        )
        .bind(secs(t0))
        .bind(uid)
        .execute(&self.pool)
        .await
        .map_err(db("recording a preemption"))?;
        Ok(())
    }

    /// Records that `refused` evictions were refused on preempted node `uid` (a count of its
    /// refusal events); only ever raises the recorded count, so a replay or a replica that saw
    /// fewer changes nothing.
    ///
    /// Errors: the database refused the write, or this replica is not the writer.
    pub async fn evictions_refused(&self, uid: &str, refused: u32) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "UPDATE node_lifetimes SET evictions_refused = $1
             WHERE uid = $2 AND (evictions_refused IS NULL OR evictions_refused < $1)",
        )
        .bind(i64::from(refused))
        .bind(uid)
        .execute(&self.pool)
        .await
        .map_err(db("recording refused evictions"))?;
        Ok(())
    }

    /// Records when a node first turned Ready (its Ready condition's lastTransitionTime), once.
    pub async fn ready(&self, uid: &str, at: DateTime<Utc>) -> Result<()> {
        self.writable()?;
        sqlx::query("UPDATE node_lifetimes SET ready_at = $1 WHERE uid = $2 AND ready_at IS NULL")
            .bind(secs(at))
            .bind(uid)
            .execute(&self.pool)
            .await
            .map_err(db("recording a node's Ready time"))?;
        Ok(())
    }

    /// Ends an open lifetime.
    pub async fn ended(&self, uid: &str, at: DateTime<Utc>, reason: &str) -> Result<()> {
        self.writable()?;
        sqlx::query("UPDATE node_lifetimes SET ended_at = $1, end_reason = $2 WHERE uid = $3 AND ended_at IS NULL")
            .bind(secs(at))
            .bind(reason)
            .bind(uid)
            .execute(&self.pool)
            .await
            .map_err(db("ending a node"))?;
        Ok(())
    }

    /// Uids of this run's open lifetimes of `cluster`.
    pub async fn open_uids(&self, cluster: &str) -> Result<Vec<String>> {
        sqlx::query(
            "SELECT uid FROM node_lifetimes WHERE cluster = $1 AND cluster_uid = $2 AND ended_at IS NULL",
        )
        .bind(cluster)
        .bind(&self.identity)
        .fetch(&self.pool)
        .map_ok(|r| r.get::<String, _>(0))
        .try_collect()
        .await
        .map_err(db("listing open nodes"))
    }

    /// Ends the lifetimes of `cluster` that other embedded runs left open, once that run's
    /// heartbeat has been silent for [`ABANDONED_AFTER`]: at its last heartbeat (or at their
    /// start, when it never beat). A run still beating is left alone. Returns how many ended.
    pub async fn end_abandoned(&self, cluster: &str, now: DateTime<Utc>) -> Result<u64> {
        self.writable()?;
        let runs = sqlx::query(
            "SELECT DISTINCT cluster_uid FROM node_lifetimes
             WHERE cluster = $1 AND ended_at IS NULL AND cluster_uid <> '' AND cluster_uid <> $2",
        )
        .bind(cluster)
        .bind(&self.identity)
        .fetch_all(&self.pool)
        .await
        .map_err(db("listing other runs"))?;
        let mut ended = 0;
        for run in runs.iter().map(|r| r.get::<String, _>(0)) {
            let beat = self.beat_of(&run).await?;
            if beat.is_some_and(|b| now - b < ABANDONED_AFTER) {
                continue;
            }
            // CASE rather than max()/greatest(): one statement for SQLite and PostgreSQL.
            let done = sqlx::query(
                "UPDATE node_lifetimes
                 SET ended_at = CASE WHEN started_at > $1 THEN started_at ELSE $1 END,
                     end_reason = 'deleted'
                 WHERE cluster = $2 AND cluster_uid = $3 AND ended_at IS NULL",
            )
            .bind(beat.map(secs).unwrap_or(0))
            .bind(cluster)
            .bind(&run)
            .execute(&self.pool)
            .await
            .map_err(db("ending another run's nodes"))?;
            ended += done.rows_affected();
        }
        Ok(ended)
    }

    /// Lifetimes overlapping `[from, to]`, oldest first.
    ///
    /// Rows are converted as they arrive: collected first, 10k rows of the driver's own
    /// representation were 16 MB of a dashboard's 58 MB peak heap, on every savings read.
    pub async fn between(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<Lifetime>> {
        let query = format!(
            "SELECT uid, cluster, node, pool, instance_type, zone, capacity_type, gpus, started_at, ended_at, end_reason, preemption_t0, ready_at,
             {EVICTION_COLUMNS}
             FROM node_lifetimes WHERE started_at < $1 AND (ended_at IS NULL OR ended_at > $2)
             ORDER BY started_at, uid"
        );
        sqlx::query(&query)
            .bind(secs(to))
            .bind(secs(from))
            .fetch(&self.pool)
            .map_ok(|r| lifetime(&r))
            .try_collect()
            .await
            .map_err(db("reading the ledger"))
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

    async fn beat_of(&self, identity: &str) -> Result<Option<DateTime<Utc>>> {
        let row = sqlx::query("SELECT value FROM ledger_meta WHERE key = $1")
            .bind(heartbeat_key(identity))
            .fetch_optional(&self.pool)
            .await
            .map_err(db("reading the heartbeat"))?;
        Ok(row.map(|r| time(r.get(0))))
    }
}
