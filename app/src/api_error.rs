//! The error every server function returns. Its variant says whose fault it is, and on the
//! server it sets the HTTP status that says so: a server function's error is otherwise 500,
//! which should mean a defect only.

use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

/// What went wrong in a server function, as the browser receives it (JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ApiError {
    /// The request's arguments are wrong (400): a bad range, a malformed name.
    #[error("{0}")]
    Invalid(String),
    /// A source the answer needs cannot be read now (503): the ledger's database is away.
    #[error("{0}")]
    Unavailable(String),
    /// What was asked for does not exist (404).
    #[error("{0}")]
    NotFound(String),
    /// A defect (500): the server was wired without what the function needs.
    #[error("{0}")]
    Internal(String),
    /// The request or its answer could not be carried (encoding, network), from the server
    /// function layer itself.
    #[error("{0}")]
    Transport(String),
}

/// `Result` with this crate's [`ApiError`].
pub type Result<T, E = ApiError> = std::result::Result<T, E>;

impl ApiError {
    /// A 400 with `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into()).respond()
    }

    /// A 503 with `message`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::Unavailable(message.into()).respond()
    }

    /// A 404 with `message`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound(message.into()).respond()
    }

    /// A 500 with `message`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal(message.into()).respond()
    }

    /// The HTTP status of this error.
    pub fn status(&self) -> u16 {
        match self {
            Self::Invalid(_) => 400,
            Self::Unavailable(_) => 503,
            Self::NotFound(_) => 404,
            Self::Internal(_) | Self::Transport(_) => 500,
        }
    }

    /// Sets this error's status on the response being built, when there is one (inside a
    /// server function on the server; a unit test has none).
    fn respond(self) -> Self {
        #[cfg(feature = "ssr")]
        if let (Some(options), Ok(status)) = (
            leptos::prelude::use_context::<leptos_axum::ResponseOptions>(),
            http::StatusCode::from_u16(self.status()),
        ) {
            options.set_status(status);
        }
        self
    }
}

/// A seam's failure (`spotboard_core::Error`, from the ledger, the feeds, the API servers) by
/// its kind: the one place a source's error becomes a status.
impl From<spotboard_core::Error> for ApiError {
    fn from(e: spotboard_core::Error) -> Self {
        use spotboard_core::Error as E;
        match e {
            E::Invalid(m) => Self::Invalid(m),
            E::Unavailable(m) => Self::Unavailable(m),
            E::NotFound(m) => Self::NotFound(m),
            // A row that does not decode on the server is its own defect.
            e @ E::Decode { .. } => Self::Internal(e.to_string()),
        }
        .respond()
    }
}

impl FromServerFnError for ApiError {
    type Encoder = crate::json_text::JsonText;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            // Arguments that do not decode are the caller's; the server sets no status for
            // them (they fail before the function runs), so its guard turns this variant's
            // 500 into 400.
            ServerFnErrorErr::Args(m) | ServerFnErrorErr::Deserialization(m) => Self::Invalid(m),
            other => Self::Transport(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_the_wire() {
        assert_eq!(ApiError::invalid("bad range").status(), 400);
        assert_eq!(ApiError::unavailable("ledger away").status(), 503);
        assert_eq!(ApiError::internal("no source").status(), 500);
        let e = ApiError::invalid("bad range");
        let back = ApiError::de(e.ser());
        assert_eq!(back, e, "the browser gets the same variant");
        assert_eq!(back.to_string(), "bad range");
        // Arguments that do not decode are the caller's, whatever else fails is transport.
        let args = ApiError::from_server_fn_error(ServerFnErrorErr::Args("missing field".into()));
        assert_eq!(args.status(), 400);
        assert!(
            ApiError::ser(&args).starts_with(br#"{"Invalid":"#),
            "the guard reads this"
        );
        let lost = ApiError::from_server_fn_error(ServerFnErrorErr::Request("reset".into()));
        assert_eq!(lost.status(), 500);
        // A seam's kinds, each to its status.
        use spotboard_core::Error as E;
        for (e, status) in [
            (E::Invalid("backwards range".into()), 400),
            (E::NotFound("no pool c/p".into()), 404),
            (E::Unavailable("ledger unavailable since 12:00".into()), 503),
        ] {
            let text = e.to_string();
            let api = ApiError::from(e);
            assert_eq!((api.status(), api.to_string()), (status, text));
        }
    }
}
