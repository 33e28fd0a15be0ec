//! Logging: `RUST_LOG` decides what is written, except the audit trail.
//!
//! Every dry run and create writes one record under the target [`AUDIT_TARGET`]. An operator
//! who quiets the logs (`RUST_LOG=error`, or `off`) must not silence who created what, so
//! that target is written whatever `RUST_LOG` says.

use tracing::level_filters::LevelFilter;
use tracing_subscriber::{
    EnvFilter, Layer,
    filter::{FilterExt, Targets},
    fmt::MakeWriter,
    layer::SubscriberExt,
};

/// The audit trail's target.
pub const AUDIT_TARGET: &str = "spotboard::audit";

/// What is logged when `RUST_LOG` is unset.
pub const DEFAULT_DIRECTIVES: &str = "info,kube=warn,tower_http=warn";

/// A subscriber writing to `writer` what `directives` (RUST_LOG syntax) enable, and the
/// audit trail always. Directives that do not parse fall back to [`DEFAULT_DIRECTIVES`].
/// `ansi`: colour the level and target with terminal escapes (for a person at a terminal;
/// never in a file or a pod's log, where they are bytes to filter out, and where a record
/// with control characters in it could not be told apart from an injected one).
pub fn subscriber<W>(
    directives: &str,
    writer: W,
    ansi: bool,
) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let env = EnvFilter::try_new(directives).unwrap_or_else(|_| EnvFilter::new(DEFAULT_DIRECTIVES));
    let audit = Targets::new().with_target(AUDIT_TARGET, LevelFilter::INFO);
    tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_ansi(ansi)
            .with_writer(writer)
            .with_filter(env.or(audit)),
    )
}

/// Installs [`subscriber`] for the process, reading `RUST_LOG`, writing to stdout, in
/// colour only when stdout is a terminal.
pub fn init() {
    use std::io::IsTerminal;
    let directives = std::env::var("RUST_LOG").unwrap_or_else(|_| DEFAULT_DIRECTIVES.into());
    let ansi = std::io::stdout().is_terminal();
    let _ = tracing::subscriber::set_global_default(subscriber(&directives, std::io::stdout, ansi));
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// What a subscriber wrote, shared with the test.
    #[derive(Clone, Default)]
    pub struct Buffer(pub Arc<Mutex<Vec<u8>>>);

    impl Buffer {
        pub fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    impl std::io::Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn logged(directives: &str) -> String {
        let buf = Buffer::default();
        let out = buf.clone();
        let sub = subscriber(directives, move || out.clone(), false);
        tracing::subscriber::with_default(sub, || {
            tracing::info!(target: "spotboard::audit", user = "alice", "nodepool create");
            tracing::info!(target: "server::hub", "an ordinary line");
            tracing::warn!(target: "server::hub", "a warning");
        });
        String::from_utf8(buf.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn the_audit_trail_survives_a_silenced_log() {
        for quiet in ["off", "error", "spotboard=off", "spotboard::audit=off"] {
            let text = logged(quiet);
            assert!(text.contains("nodepool create"), "{quiet}: {text}");
            assert!(!text.contains("an ordinary line"), "{quiet}: {text}");
        }
    }

    #[test]
    fn ordinary_lines_follow_rust_log() {
        let text = logged("info");
        assert!(text.contains("an ordinary line") && text.contains("nodepool create"));
        let text = logged("warn");
        assert!(text.contains("a warning") && !text.contains("an ordinary line"));
        assert_eq!(
            text.matches("nodepool create").count(),
            1,
            "written once even when both filters pass it"
        );
    }
}
