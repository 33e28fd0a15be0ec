//! A bare embedded API server with an admin and a read-only client.

use std::time::Duration;

use futures::StreamExt;
use kube::api::WatchEvent;
use kube::{Client, ResourceExt};
use spotboard_core::nodepool::NodePool;
use spotboard_embedded::api::{ApiOptions, ApiServer, Tokens};
use spotboard_embedded::client_for;

pub struct Fixture {
    pub server: ApiServer,
    pub tokens: Tokens,
    pub admin: Client,
    pub reader: Client,
}

pub async fn fixture_with(options: ApiOptions) -> Fixture {
    let tokens = Tokens::generate();
    let crds = spotboard_embedded::sim::crds::for_zone(None);
    let server = ApiServer::start_with("TEST-01A", tokens.clone(), options, &crds)
        .await
        .unwrap();
    let admin = client_for(&server.url(), &tokens.admin, "test").unwrap();
    let reader = client_for(&server.url(), &tokens.reader, "test").unwrap();
    Fixture {
        server,
        tokens,
        admin,
        reader,
    }
}

pub async fn fixture() -> Fixture {
    fixture_with(ApiOptions::default()).await
}

/// The next event of a watch, within 5 s.
pub async fn next_event<K: Clone + std::fmt::Debug>(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin),
) -> WatchEvent<K> {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("an event in time")
        .expect("the stream is open")
        .expect("a decodable event")
}

/// A watch event as (type, object name or error code).
pub fn event_name(e: &WatchEvent<NodePool>) -> (&'static str, String) {
    match e {
        WatchEvent::Added(o) => ("ADDED", o.name_any()),
        WatchEvent::Modified(o) => ("MODIFIED", o.name_any()),
        WatchEvent::Deleted(o) => ("DELETED", o.name_any()),
        WatchEvent::Bookmark(_) => ("BOOKMARK", String::new()),
        WatchEvent::Error(s) => ("ERROR", s.code.to_string()),
    }
}

/// `GET url` with a bearer token (and an `Accept` header, for `Table` output), as JSON.
pub async fn get_json(url: &str, token: &str, accept: Option<&str>) -> serde_json::Value {
    let mut req = reqwest::Client::new().get(url).bearer_auth(token);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    req.send().await.unwrap().json().await.unwrap()
}
