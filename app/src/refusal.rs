//! Server function errors that are the caller's fault or a passing outage, with the HTTP
//! status that says so. A server function's error is 500 unless its body sets another
//! status; a bad range or a malformed name is the caller's (400), an unreachable ledger is
//! ours but passing (503). 500 stays for defects only.

use leptos::prelude::ServerFnError;

/// The request's arguments are wrong: 400 with `message`.
pub fn invalid(message: impl Into<String>) -> ServerFnError {
    with_status(400, message)
}

/// A source the answer needs (the ledger's database) cannot be read now: 503 with `message`.
pub fn unavailable(message: impl Into<String>) -> ServerFnError {
    with_status(503, message)
}

fn with_status(status: u16, message: impl Into<String>) -> ServerFnError {
    // Outside a server function (a unit test) there is no response to set.
    if let (Some(options), Ok(status)) = (
        leptos::prelude::use_context::<leptos_axum::ResponseOptions>(),
        http::StatusCode::from_u16(status),
    ) {
        options.set_status(status);
    }
    ServerFnError::new(message.into())
}
