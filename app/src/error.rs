//! The error type of the `app` crate.

/// What can go wrong in shared logic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A stream message or row could not be decoded; the text says where.
    #[error("could not decode {what}: {source}")]
    Decode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
