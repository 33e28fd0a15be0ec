//! The pages other than the dashboard as lazy routes: each one's view, and what only it uses
//! (the create form's YAML and validation, the charts' options, the capacity ranking), is
//! split out of the main wasm by `cargo leptos build --split` and fetched when the route is
//! first visited; the dashboard at `/` loads with the main wasm alone.
//!
//! A page the server renders is hydrated once its part has arrived: the server names that
//! part in the page's `<head>` (`modulepreload`), so the browser fetches it beside the main
//! wasm rather than after it.
//!
//! Why a route struct per page rather than a macro over the list: the split's names come
//! from the struct's name and the source position of the `impl`, which a macro would share.

use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

/// `/pools/new`: the Create Spot Node Pool form.
pub struct CreatePoolRoute;

#[lazy_route]
impl LazyRoute for CreatePoolRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <super::CreatePoolPage /> }.into_any()
    }
}

/// `/capacity`: capacity by zone.
pub struct CapacityRoute;

#[lazy_route]
impl LazyRoute for CapacityRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <super::CapacityPage /> }.into_any()
    }
}

/// `/capacity-finder`: zones ranked for an instance type and node count.
pub struct CapacityFinderRoute;

#[lazy_route]
impl LazyRoute for CapacityFinderRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <super::CapacityFinderPage /> }.into_any()
    }
}

/// `/preemptions`: preemption timelines.
pub struct PreemptionsRoute;

#[lazy_route]
impl LazyRoute for PreemptionsRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <super::PreemptionsPage /> }.into_any()
    }
}

/// `/savings`: cost savings against on-demand.
pub struct SavingsRoute;

#[lazy_route]
impl LazyRoute for SavingsRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <super::SavingsPage /> }.into_any()
    }
}

/// `/pools/:cluster/:name`: one pool, its nodes and events.
pub struct PoolRoute;

#[lazy_route]
impl LazyRoute for PoolRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <super::PoolPage /> }.into_any()
    }
}
