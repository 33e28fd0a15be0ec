//! Watching clusters: one kube-rs watcher per kind per cluster, trimming each object to a
//! record before it reaches the hub.
//!
//! # Layout
//! - `records`: the trimmed objects.
//! - `trim`: pure functions from Kubernetes objects to records.
//! - `lenient`: objects decoded one by one, so a malformed one is skipped, not the list.
//! - `slim_pod`: the Pod fields spotboard decodes (the pod watch and the blast radius).
//! - `names`: one shared copy of repeated values.
//! - `runner`: the watch tasks, their backoff, and the per-cluster health probe.

mod lenient;
pub mod names;
pub mod records;
mod runner;
pub mod slim_pod;
pub mod trim;

pub use runner::{ClusterSource, spawn_cluster};
