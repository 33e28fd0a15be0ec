//! spotboard's ground floor: the data shapes and the pure logic every other crate stands on.
//! No Leptos, no tokio, no web-sys: the browser's wasm, the server and the embedded cluster
//! all compile it (the `kube` feature adds the NodePool CRD derive, server-side only).
//!
//! # Layout
//! - [`nodepool`]: CoreWeave's `NodePool` CRD (`compute.coreweave.com/v1alpha1`) as Rust types.
//! - [`labels`]: CKS, GKE and Karpenter label, annotation, taint and event names, with sources.
//! - [`catalog`]: the shipped instance types and zones, with their source and date (`data/`).
//! - [`model`]: the rows and stream messages the browser receives (the wire types).
//! - [`domain`]: the pure logic: conditions, the pools view, preemption timelines and rates,
//!   capacity scores, cost and savings, prices, validation, the manifest reader, selectors.
//! - [`provider`]: [`Provider`] (CKS, GKE, Karpenter) and [`CapacityType`] (spot, on-demand,
//!   reserved), at the top: every view groups by them.
//! - [`error`]: this crate's error type.

pub mod catalog;
pub mod domain;
pub mod error;
pub mod labels;
pub mod model;
pub mod nodepool;
pub mod provider;

pub use error::{Error, Result};
pub use provider::{CapacityType, Provider};
