//! Why work is waiting: pending pods read from the pod watch, the scheduler's reasons, and
//! the pools that could take them (issue "Why is my GPU work waiting?").

pub mod pools;
pub mod scheduler_message;

#[cfg(test)]
mod pools_tests;
