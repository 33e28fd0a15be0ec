//! Command-line flags and environment. Placeholder until the spine wires it.
