use leptos::prelude::*;
use leptos_router::components::A;

/// Shown for an unknown path.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
            resp.set_status(http_status_not_found());
        }
    }
    view! {
        <section class="empty">
            <h1>"Not found"</h1>
            <p>"There is no page here. " <A href="/">"Back to the Node Pools"</A></p>
        </section>
    }
}

#[cfg(feature = "ssr")]
fn http_status_not_found() -> http::StatusCode {
    http::StatusCode::NOT_FOUND
}
