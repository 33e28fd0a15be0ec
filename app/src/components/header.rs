//! The page header: navigation, the stream's state, and the theme switch.

use leptos::prelude::*;
use leptos_router::components::A;

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

/// Alerts the badge's title names; the rest are counted.
const TITLE_ALERTS: usize = 10;

/// The alerts firing now, on every page, linking to their list on `/preemptions`; the title
/// lists them. Hidden at zero, like the preempting badge.
#[component]
fn AlertsBadge() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let summaries = Memo::new(move |_| {
        let mut s: Vec<String> = Vec::new();
        live.firing.for_each(|a| s.push(a.summary.clone()));
        s.sort();
        s
    });
    // A wave can fire hundreds: the title names the first few, the list has them all.
    let title = move || {
        summaries.with(|s| {
            let mut t = s[..s.len().min(TITLE_ALERTS)].join("\n");
            if s.len() > TITLE_ALERTS {
                t.push_str(&format!("\n… and {} more", s.len() - TITLE_ALERTS));
            }
            t
        })
    };
    view! {
        <a href="/preemptions#alerts" class="badge alerting" data-testid="alerts-firing"
            title=title
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
    // The clusters' sums (the hub keeps them): a pool page holds only its own pool's row.
    let count = Memo::new(move |_| {
        let mut n = 0;
        live.clusters.for_each(|c| n += c.nodes_preempting);
        n
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

/// The page's color mode: light or dark as chosen on the switch, remembered in local storage,
/// or the system's preference until a choice is made. One per tab, provided by the app so the
/// switch and the charts agree.
///
/// The choice is written to `<html class="light|dark">` (the stylesheet's `light-dark()`
/// colours follow it; with neither class the system preference applies) and kept under the
/// storage key leptos-use's `use_color_mode` used, so a choice made before survives. Built
/// from `use_preferred_dark` and `use_local_storage` rather than `use_color_mode`, whose cookie
/// support (the `cookie` and `time` crates) was some 50 KB of the dashboard's wasm before
/// wasm-opt though spotboard sets no cookie.
#[derive(Clone, Copy)]
pub struct Theme {
    /// Whether the system prefers dark (`prefers-color-scheme`); false on the server and
    /// until the page is hydrated.
    system_dark: RwSignal<bool>,
    /// `"light"`, `"dark"`, or empty (no choice: the system's preference).
    choice: Signal<String>,
    set_choice: WriteSignal<String>,
}

/// The local-storage key of the chosen mode (leptos-use's default for `use_color_mode`).
const STORAGE_KEY: &str = "leptos-use-color-scheme";

impl Theme {
    pub fn new() -> Self {
        // The server knows neither the system's preference nor local storage, so both start
        // as the server rendered them and are read once the page is hydrated (an effect runs
        // after hydration; storage waits a frame): the switch's label hydrates as rendered.
        let preferred_dark = leptos_use::use_preferred_dark();
        let system_dark = RwSignal::new(false);
        let (choice, set_choice, _) = leptos_use::storage::use_local_storage_with_options::<
            String,
            codee::string::FromToStringCodec,
        >(
            STORAGE_KEY,
            leptos_use::storage::UseStorageOptions::default().delay_during_hydration(true),
        );
        #[cfg(feature = "hydrate")]
        Effect::new(move || system_dark.set(preferred_dark.get()));
        #[cfg(not(feature = "hydrate"))]
        let _ = preferred_dark;
        #[cfg(feature = "hydrate")]
        Effect::new(move || choice.with(|c| set_html_class(c)));
        Self {
            system_dark,
            choice,
            set_choice,
        }
    }

    /// Whether pages are drawn dark now (reactive).
    pub fn is_dark(&self) -> bool {
        let chosen = self.choice.with(|c| match c.as_str() {
            "dark" => Some(true),
            "light" => Some(false),
            _ => None,
        });
        chosen.unwrap_or_else(|| self.system_dark.get())
    }

    /// Chooses dark (`true`) or light; remembered in local storage.
    pub fn choose_dark(&self, dark: bool) {
        self.set_choice
            .set(if dark { "dark" } else { "light" }.to_string());
    }
}

/// Puts `choice` on `<html>` when it is `light` or `dark`, and neither class otherwise.
#[cfg(feature = "hydrate")]
fn set_html_class(choice: &str) {
    let Some(html) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    else {
        return;
    };
    let list = html.class_list();
    for c in ["light", "dark"] {
        let _ = list.toggle_with_force(c, choice == c);
    }
}

impl Default for Theme {
    fn default() -> Self {
        Self::new()
    }
}

/// Light / dark theme switch (the system's preference until it is used).
#[component]
fn ThemeToggle() -> impl IntoView {
    let theme = expect_context::<Theme>();
    let label = move || {
        if theme.is_dark() {
            "Light theme"
        } else {
            "Dark theme"
        }
    };
    view! {
        <button class="theme" type="button" on:click=move |_| theme.choose_dark(!theme.is_dark())>
            {label}
        </button>
    }
}
