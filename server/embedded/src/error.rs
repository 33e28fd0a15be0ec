//! The error type of the embedded cluster.

use std::net::SocketAddr;

/// What can stop the embedded cluster from starting, or a client of it from being made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A kube-rs client could not be built, or the behaviour model's first requests failed
    /// (seeding a zone, listing what it watches).
    #[error("embedded zone {zone}: {source}")]
    Kube {
        zone: String,
        #[source]
        source: kube::Error,
    },
    /// An API server could not bind its loopback port.
    #[error("embedded API server cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// Writing the kubeconfig, or reading a bound address, failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A CustomResourceDefinition given to an API server at start lacks what discovery needs.
    #[error("embedded zone {zone}: {reason}")]
    BadCrd { zone: String, reason: String },
    /// A zone that is not part of this embedded cluster was asked for.
    #[error("no embedded zone {0}")]
    NoZone(String),
    /// A client URL that kube-rs cannot read.
    #[error("bad url {url}: {reason}")]
    BadUrl { url: String, reason: String },
    /// The behaviour model's watches did not sync within two minutes of start.
    #[error("embedded zone {0}: the behaviour model's watches did not sync")]
    NotSynced(String),
    /// The kubeconfig could not be serialized (it is built from strings, so only a bug).
    #[error("serializing the kubeconfig: {0}")]
    Kubeconfig(#[source] serde_yaml::Error),
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
