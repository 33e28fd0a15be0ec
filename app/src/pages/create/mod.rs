//! `/pools/new`: the Create Spot Node Pool form. Pre-filled from the query string
//! (`cluster`, `zone`, `instanceType`, `computeClass`, `targetNodes`, `name`), which is how the
//! Capacity Finder opens it.
//!
//! One draft is the truth ([`state::FormState`]); the shared validation runs on every change;
//! the YAML pane and the fields edit the same draft; the server dry-runs and creates it with the
//! user's identity.

mod fields;
mod side;
mod state;
mod submit;

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::create_api::load_create_access;
use crate::live::{LiveStore, use_live};
use crate::model::{CreateAccess, PoolDraft, Scope};
use crate::nodepool::{ComputeClass, NodePoolSpec};

use state::FormState;

/// The draft the query string asks for.
fn initial_draft(get: impl Fn(&str) -> Option<String>) -> PoolDraft {
    PoolDraft {
        cluster: get("cluster").unwrap_or_default(),
        name: get("name").unwrap_or_default(),
        spec: NodePoolSpec {
            compute_class: get("computeClass")
                .map(|c| ComputeClass::from(c.as_str()))
                .unwrap_or(ComputeClass::Spot),
            instance_type: get("instanceType").unwrap_or_default(),
            target_nodes: get("targetNodes").and_then(|n| n.parse().ok()).unwrap_or(1),
            ..Default::default()
        },
    }
}

/// The page.
#[component]
pub fn CreatePoolPage() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let snapshot = use_live(Scope::pools);
    let query = use_query_map();
    let wanted_zone = query.with_untracked(|q| q.get("zone"));
    let state = FormState::new(query.with_untracked(|q| initial_draft(|k| q.get(k))));
    let access = Resource::new(|| (), |_| load_create_access());

    // A form opened without a cluster (or with only a zone) gets the zone's cluster, else the
    // first one the user may create in.
    Effect::new(move |_| {
        let Some(Ok(a)) = access.get() else { return };
        if !state.draft.with_untracked(|d| d.cluster.is_empty()) {
            return;
        }
        let by_zone = wanted_zone.as_deref().and_then(|z| {
            a.clusters.iter().find(|c| {
                c.zone
                    .as_deref()
                    .is_some_and(|cz| cz.eq_ignore_ascii_case(z))
            })
        });
        if let Some(c) = by_zone.or_else(|| a.clusters.iter().find(|c| c.allowed)) {
            let cluster = c.cluster.clone();
            state.edit(|d| d.cluster = cluster);
        }
    });

    view! {
        <section class="page-head">
            <h1>"Create Spot Node Pool"</h1>
        </section>
        <Suspense fallback=|| view! { <p class="loading" role="status">"Loading…"</p> }>
            {move || {
                let snap = snapshot.get()?;
                let access = access.get()?;
                Some(match (snap, access) {
                    (Err(e), _) | (_, Err(e)) => view! {
                        <p class="error" role="alert">"Could not load the form: " {e.to_string()}</p>
                    }.into_any(),
                    (Ok(snap), Ok(access)) => {
                        live.adopt(&Scope::pools(), &snap);
                        form_or_reason(state, access).into_any()
                    }
                })
            }}
        </Suspense>
    }
}

fn form_or_reason(state: FormState, access: CreateAccess) -> impl IntoView {
    if access.read_only {
        return view! {
            <p class="notice" role="status" data-testid="read-only">
                "This spotboard runs with --read-only: creating node pools is turned off."
            </p>
        }
        .into_any();
    }
    crate::components::typed::keep_typed(
        "form.pool-form :is(input, select, textarea), textarea.yaml-text",
    );
    let access = StoredValue::new(access);
    let live = expect_context::<LiveStore>();
    let problems = Memo::new(move |_| {
        state.problems(|cluster, name| {
            live.pools
                .signals()
                .iter()
                .any(|s| s.with_untracked(|p| p.cluster == cluster && p.name == name))
        })
    });
    // What the fields show: the messages of touched fields, all after a submit attempt. The
    // buttons go by every problem.
    let shown = Memo::new(move |_| problems.with(|all| state.shown(all)));
    view! {
        <p class="muted identity">
            {move || access.with_value(|a| match &a.identity {
                Some(who) => format!("Creates go out as {who}, never with spotboard's own account."),
                None => "spotboard cannot tell who you are, so it cannot create for you.".to_string(),
            })}
        </p>
        <div class="create-grid">
            <fields::PoolForm state access problems=shown />
            <side::SidePanel state access />
        </div>
        <submit::SubmitBar state access problems />
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_prefills_the_draft() {
        let q = |k: &str| match k {
            "cluster" => Some("spotboard-us-east-04a".to_string()),
            "instanceType" => Some("gd-8xh100ib-i128".to_string()),
            "targetNodes" => Some("4".to_string()),
            _ => None,
        };
        let d = initial_draft(q);
        assert_eq!(d.cluster, "spotboard-us-east-04a");
        assert_eq!(d.spec.instance_type, "gd-8xh100ib-i128");
        assert_eq!(d.spec.target_nodes, 4);
        assert_eq!(d.spec.compute_class, ComputeClass::Spot, "spot by default");
        let d = initial_draft(|_| None);
        assert_eq!(d.spec.target_nodes, 1);
    }
}
