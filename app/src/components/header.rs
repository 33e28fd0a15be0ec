//! The page header: navigation, the stream's state, and the theme switch.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_use::{ColorMode, UseColorModeReturn, use_color_mode};

use crate::{
    components::time::clock,
    live::{ConnState, LiveStore},
};

/// The header on every page.
#[component]
pub fn Header() -> impl IntoView {
    view! {
        <header class="topbar">
            <a class="skip" href="#main">"Skip to content"</a>
            <A href="/" attr:class="brand">"spotboard"</A>
            <nav aria-label="Main">
                <A href="/">"Node Pools"</A>
                <A href="/preemptions">"Preemptions"</A>
                <A href="/capacity">"Capacity"</A>
                <A href="/savings">"Savings"</A>
                <A href="/capacity-finder">"Capacity Finder"</A>
                <A href="/pools/new">"Create Spot Node Pool"</A>
            </nav>
            <div class="spacer"></div>
            <AlertsBadge />
            <PreemptingBadge />
            <ConnBadge />
            <ThemeToggle />
        </header>
    }
}

/// The stream's state: live, connecting, or reconnecting with the time of the last data.
#[component]
fn ConnBadge() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let text = move || match live.conn.get() {
        ConnState::Live => "live".to_string(),
        ConnState::Connecting => "connecting".to_string(),
        ConnState::Reconnecting => match live.last_message.get() {
            Some(t) => format!("reconnecting · stale since {}", clock(t)),
            None => "reconnecting".to_string(),
        },
    };
    let class = move || format!("badge conn conn-{}", live.conn.get().as_str());
    view! {
        <span class=class role="status" aria-live="polite" data-testid="conn">
            {text}
        </span>
    }
}

/// The alerts firing now, on every page, linking to their list on `/preemptions`; the title
/// lists them. Hidden at zero, like the preempting badge.
#[component]
fn AlertsBadge() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let summaries = Memo::new(move |_| {
        let mut s: Vec<String> = live
            .firing
            .values()
            .into_iter()
            .map(|a| a.summary)
            .collect();
        s.sort();
        s
    });
    view! {
        <a href="/preemptions#alerts" class="badge alerting" data-testid="alerts-firing"
            title=move || summaries.get().join("\n")
            hidden=move || summaries.with(Vec::is_empty).then_some("")>
            {move || match summaries.with(Vec::len) {
                1 => "1 alert firing".to_string(),
                n => format!("{n} alerts firing"),
            }}
        </a>
    }
}

/// Nodes under a preemption notice now, across the watched pools, on every page: the in-app
/// notification of a preemption (a wave shows as one growing count), linking to the timelines.
/// Always rendered, hidden at zero, so server and browser render the same element.
#[component]
fn PreemptingBadge() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let count = Memo::new(move |_| {
        // Per-row reads: a changed row re-sums without copying every row.
        live.pools
            .signals()
            .iter()
            .map(|p| p.with(|r| r.nodes_preempting))
            .sum::<u32>()
    });
    view! {
        <A href="/preemptions" attr:class="badge preempting" attr:data-testid="preempting-now" attr:hidden=move || (count.get() == 0).then_some("")>
            {move || match count.get() {
                1 => "1 node preempting".to_string(),
                n => format!("{n} nodes preempting"),
            }}
        </A>
    }
}

/// The page's color mode (light, dark, or the system's), remembered in local storage: one per
/// tab, provided by the app so the switch and the charts agree.
#[derive(Clone, Copy)]
pub struct Theme {
    /// The mode in force, the system's preference resolved.
    pub mode: Signal<ColorMode>,
    set_mode: WriteSignal<ColorMode>,
}

impl Theme {
    pub fn new() -> Self {
        let UseColorModeReturn { mode, set_mode, .. } = use_color_mode();
        Self { mode, set_mode }
    }

    /// Whether pages are drawn dark now (reactive).
    pub fn is_dark(&self) -> bool {
        self.mode.get() == ColorMode::Dark
    }
}

impl Default for Theme {
    fn default() -> Self {
        Self::new()
    }
}

/// Light / dark / system theme switch.
#[component]
fn ThemeToggle() -> impl IntoView {
    let Theme { mode, set_mode } = expect_context::<Theme>();
    let next = move || match mode.get() {
        ColorMode::Dark => ColorMode::Light,
        _ => ColorMode::Dark,
    };
    let label = move || match mode.get() {
        ColorMode::Dark => "Light theme",
        _ => "Dark theme",
    };
    view! {
        <button class="theme" type="button" on:click=move |_| set_mode.set(next())>
            {label}
        </button>
    }
}
