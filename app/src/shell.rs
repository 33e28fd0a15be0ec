//! The HTML shell and the router.

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::{
    Lazy,
    components::{Route, Router, Routes},
    path,
};

use crate::{components::header::Header, live::LiveStore, pages};

/// The whole HTML document, rendered by the server around [`App`].
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <AutoReload options=options.clone() />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The application: one [`LiveStore`] per tab, a header, and the pages.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(LiveStore::new());
    crate::components::time::provide_now();
    // One color mode for the page: the header's switch sets it, the charts draw in it.
    provide_context(crate::components::header::Theme::new());

    view! {
        <Stylesheet id="leptos" href="/pkg/spotboard.css" />
        <Title text="spotboard" />
        <Router>
            <Header />
            <main id="main">
                <Routes fallback=|| view! { <pages::NotFound /> }>
                    <Route path=path!("/") view=pages::Dashboard />
                    // The other pages load their part of the wasm when first visited
                    // (`pages::lazy`).
                    <Route
                        path=path!("/pools/new")
                        view={Lazy::<pages::CreatePoolRoute>::new()}
                    />
                    <Route path=path!("/capacity") view={Lazy::<pages::CapacityRoute>::new()} />
                    <Route
                        path=path!("/preemptions")
                        view={Lazy::<pages::PreemptionsRoute>::new()}
                    />
                    <Route path=path!("/savings") view={Lazy::<pages::SavingsRoute>::new()} />
                    <Route
                        path=path!("/capacity-finder")
                        view={Lazy::<pages::CapacityFinderRoute>::new()}
                    />
                    <Route
                        path=path!("/pools/:cluster/:name")
                        view={Lazy::<pages::PoolRoute>::new()}
                    />
                </Routes>
            </main>
        </Router>
    }
}
