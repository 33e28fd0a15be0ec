//! The CoreWeave `NodePool` (`compute.coreweave.com/v1alpha1`, cluster-scoped) as Rust types.
//!
//! Source: CoreWeave's Node Pool reference
//! (<https://docs.coreweave.com/products/cks/reference/node-pool>; all sources are listed in
//! `docs/sources.md`). Every spec and status field of that page is here. Under the `kube`
//! feature the spec derives `kube::CustomResource`, which makes the `NodePool` object type and
//! the CRD; the browser build sees only the plain serde types.
//!
//! Forward compatibility: enums are [`open_enum!`](crate::open_enum) types, and fields this build
//! does not know are kept in `extra` maps, so a newer CoreWeave object still deserializes and
//! its unknown parts can be shown as they are.

mod open_enum;
mod types;

pub use types::*;

#[cfg(test)]
mod tests;
