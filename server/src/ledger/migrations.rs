//! The ledger's schema migrations (`server/migrations/*.sql`), compiled into the binary.
//!
//! sqlx's `migrate!` macro does the same at compile time, but it needs sqlx's `macros`
//! feature, which compiles sqlx's drivers (and SQLite's C source) a second time for the
//! proc macro in every build configuration. The files are read here with `include_str!` and
//! named as sqlx names them (`<version>_<description>.sql`, `_` read as a space), so a
//! database migrated by either way validates against the other: a test compares this list
//! with sqlx's own reading of the directory.

use std::borrow::Cow;

use futures::future::BoxFuture;
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migration, MigrationSource, MigrationType};

/// Every migration: file name and SQL, oldest first. A new file in `server/migrations` must be
/// added here (a test fails until it is).
const FILES: &[(&str, &str)] = &[
    (
        "20261121000000_node_lifetimes.sql",
        include_str!("../../migrations/20261121000000_node_lifetimes.sql"),
    ),
    (
        "20261121000100_preemption_pods.sql",
        include_str!("../../migrations/20261121000100_preemption_pods.sql"),
    ),
    (
        "20261121000200_preemption_pods_budget.sql",
        include_str!("../../migrations/20261121000200_preemption_pods_budget.sql"),
    ),
    (
        "20261123000000_lookup_indexes.sql",
        include_str!("../../migrations/20261123000000_lookup_indexes.sql"),
    ),
    (
        "20261123000100_cluster_identity.sql",
        include_str!("../../migrations/20261123000100_cluster_identity.sql"),
    ),
    (
        "20261124000000_pool_conditions.sql",
        include_str!("../../migrations/20261124000000_pool_conditions.sql"),
    ),
    (
        "20261125000000_node_ready.sql",
        include_str!("../../migrations/20261125000000_node_ready.sql"),
    ),
    (
        "20261126000000_eviction_errors.sql",
        include_str!("../../migrations/20261126000000_eviction_errors.sql"),
    ),
    (
        "20261127000000_drills.sql",
        include_str!("../../migrations/20261127000000_drills.sql"),
    ),
    (
        "20261128000000_pod_work.sql",
        include_str!("../../migrations/20261128000000_pod_work.sql"),
    ),
    (
        "20261129000000_launch_failures.sql",
        include_str!("../../migrations/20261129000000_launch_failures.sql"),
    ),
    (
        "20261129000100_end_evidence.sql",
        include_str!("../../migrations/20261129000100_end_evidence.sql"),
    ),
    (
        "20261130000000_pod_intervals.sql",
        include_str!("../../migrations/20261130000000_pod_intervals.sql"),
    ),
    (
        "20261201000000_last_known.sql",
        include_str!("../../migrations/20261201000000_last_known.sql"),
    ),
];

/// The migrations of [`FILES`], as sqlx's `Migrator::new` takes them.
#[derive(Debug, Clone, Copy)]
pub struct Embedded;

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        Box::pin(async {
            FILES
                .iter()
                .map(|(name, sql)| migration(name, sql))
                .collect()
        })
    }
}

/// One migration from its file name and SQL, read as sqlx reads a migrations directory.
///
/// Errors: a name that is not `<integer version>_<description>.sql`.
fn migration(name: &str, sql: &'static str) -> Result<Migration, BoxDynError> {
    let (version, rest) = name
        .split_once('_')
        .filter(|(_, rest)| rest.ends_with(".sql"))
        .ok_or_else(|| format!("migration file {name:?} is not <version>_<description>.sql"))?;
    let version: i64 = version
        .parse()
        .map_err(|_| format!("migration file {name:?} has no integer version"))?;
    let migration_type = MigrationType::from_filename(rest);
    let description = rest
        .trim_end_matches(migration_type.suffix())
        .replace('_', " ");
    Ok(Migration::new(
        version,
        Cow::Owned(description),
        migration_type,
        Cow::Borrowed(sql),
        // sqlx's marker for a migration that must run outside a transaction.
        sql.starts_with("-- no-transaction"),
    ))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sqlx::migrate::Migrator;

    use super::*;

    #[tokio::test]
    async fn the_embedded_migrations_are_sqlxs_reading_of_the_directory() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let from_dir = Migrator::new(dir.as_path())
            .await
            .expect("sqlx reads the directory");
        let embedded = Migrator::new(Embedded)
            .await
            .expect("the embedded list reads");
        let key = |m: &Migration| {
            (
                m.version,
                m.description.to_string(),
                m.checksum.to_vec(),
                m.no_tx,
                m.migration_type.is_up_migration(),
            )
        };
        let a: Vec<_> = from_dir.iter().map(key).collect();
        let b: Vec<_> = embedded.iter().map(key).collect();
        assert!(!a.is_empty());
        assert_eq!(
            a, b,
            "server/migrations and ledger::migrations::FILES differ (a file not listed, or changed)"
        );
    }

    #[test]
    fn a_malformed_name_is_an_error() {
        assert!(migration("node_lifetimes.sql", "").is_err());
        assert!(migration("20261121_node_lifetimes.txt", "").is_err());
        let m = migration(
            "20261121000000_node_lifetimes.sql",
            "-- no-transaction\nSELECT 1",
        )
        .unwrap();
        assert_eq!(
            (m.version, m.description.as_ref(), m.no_tx),
            (20261121000000, "node lifetimes", true)
        );
    }
}
