//! The error type of the `server` crate.

use std::net::SocketAddr;

/// What can stop spotboard from starting or serving.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading a kubeconfig or reaching a cluster failed.
    #[error("kubernetes client for {cluster}: {source}")]
    Kube {
        cluster: String,
        #[source]
        source: kube::Error,
    },
    /// A kubeconfig could not be read or did not have the named context.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// The NodePool CRD is not installed on a cluster that was asked for.
    #[error(
        "cluster {cluster} does not serve compute.coreweave.com/v1alpha1 NodePool. Is this a CKS \
         cluster? Install the CRD with `spotboard crd | kubectl apply -f -` to watch it anyway"
    )]
    CrdMissing { cluster: String },
    /// Binding the listen address failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// A configuration choice is unsafe or inconsistent; the text says what to change.
    #[error("configuration: {0}")]
    Config(String),
    /// Any other I/O failure (writing the embedded kubeconfig, serving).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The embedded cluster could not start, or a client of it could not be made.
    #[cfg(feature = "embedded")]
    #[error("embedded cluster: {0}")]
    Embedded(#[from] spotboard_embedded::Error),
    /// The ledger's database could not be opened, migrated, read or written.
    #[error("ledger: {0}")]
    Ledger(String),
    /// Another spotboard process owns the SQLite ledger file.
    #[error(
        "the ledger {path} is in use by another spotboard (pid {holder}). Give this one its own \
         file with --ledger FILE, or use PostgreSQL (--database-url postgres://…) for replicas \
         that share one ledger"
    )]
    LedgerBusy { path: String, holder: String },
    /// This replica does not hold the ledger's Lease, so it does not write; `writer` says who
    /// does. Not a failure of the database: the writes are the holder's.
    #[error("this replica does not write the ledger: {writer} does")]
    NotWriter { writer: String },
    /// A price file could not be read; the text names the line.
    #[error("prices: {0}")]
    Prices(String),
    /// A request's body was still arriving at its deadline (`--request-body-seconds` after
    /// its headers); the request fails and its connection closes.
    #[error("the request body did not arrive within {0:?}")]
    BodyTimedOut(std::time::Duration),
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// This crate's errors as a seam answers them (`spotboard_core::Error`): the one place a
/// server failure gets the kind that becomes its HTTP status. What reaches a seam is a
/// source that cannot answer now (the ledger's database, an API server, the disk), never the
/// request's fault: a request is checked before a source is asked (`Invalid`, 400).
impl From<Error> for spotboard_core::Error {
    fn from(e: Error) -> Self {
        spotboard_core::Error::Unavailable(e.to_string())
    }
}
