//! The embedded cluster's integration tests, as one test binary, through clients a user has:
//! kube-rs, kubectl, and Python's official `kubernetes` client and kr8s.

mod common;

mod agreement;
mod api;
mod behaviour;
mod custom;
mod demo;
mod eviction;
mod kubectl;
mod kubectl_drain;
mod preemption;
mod watch;
