//! The error type of `spotboard-core`: what a source behind one of the server's seams (the
//! ledger, the capacity feeds, the API servers' pod lists) answers when it cannot answer, with
//! the kind that decides the HTTP status (`app::api_error::ApiError` maps it in one place), and
//! a stream row that does not decode.

/// Why a read behind a seam failed. The text is for a person: it names what was asked and
/// what went wrong, never a secret.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source cannot be read now and may be later (HTTP 503): a database away, an API
    /// server not answering.
    #[error("{0}")]
    Unavailable(String),
    /// The request itself is wrong (HTTP 400): a range backwards, a malformed name.
    #[error("{0}")]
    Invalid(String),
    /// What was asked for does not exist (HTTP 404): an unknown pool or cluster.
    #[error("{0}")]
    NotFound(String),
    /// A stream row or patch could not be decoded (`model::patch`): a server and a browser
    /// of different versions, or a row that is not a JSON object.
    #[error("could not decode {what}: {source}")]
    Decode {
        /// What was being decoded, e.g. "a patched row".
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
