//! The pages other than the dashboard as lazy routes: each one's view, and what only it uses
//! (the create form's YAML and validation, the charts' options, the capacity ranking), is
//! split out of the main wasm by the site build (`spotboard-site split`) and fetched when the route is
//! first visited; the dashboard at `/` loads with the main wasm alone.
//!
//! A page the server renders is hydrated once its part has arrived: the server names that
//! part in the page's `<head>` (`modulepreload`), so the browser fetches it beside the main
//! wasm rather than after it.

use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

/// A route struct whose view is `$page`, loaded lazily. The split part is named after the
/// struct, so each route needs a struct of its own.
macro_rules! lazy_page {
    ($(#[$doc:meta])* $route:ident => $page:ident) => {
        $(#[$doc])*
        pub struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            fn view(_this: Self) -> AnyView {
                view! { <super::$page /> }.into_any()
            }
        }
    };
}

lazy_page!(
    /// `/pools/new`: the Create Spot Node Pool form.
    CreatePoolRoute => CreatePoolPage
);
lazy_page!(
    /// `/capacity`: capacity by zone.
    CapacityRoute => CapacityPage
);
lazy_page!(
    /// `/capacity-finder`: zones ranked for an instance type and node count.
    CapacityFinderRoute => CapacityFinderPage
);
lazy_page!(
    /// `/preemptions`: preemption timelines.
    PreemptionsRoute => PreemptionsPage
);
lazy_page!(
    /// `/savings`: cost savings against on-demand.
    SavingsRoute => SavingsPage
);
lazy_page!(
    /// `/pools/:cluster/:name`: one pool, its nodes and events.
    PoolRoute => PoolPage
);
