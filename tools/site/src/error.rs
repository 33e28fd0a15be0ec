//! The one error type of `spotboard-site`.

use std::path::PathBuf;

/// What can go wrong in a step of the site build.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The splitter refused the wasm: most often it was linked without `--emit-relocs`
    /// (`.cargo/config.toml` sets it for wasm32) or has no split points.
    #[error("splitting {path}: {message}")]
    Split { path: PathBuf, message: String },
    /// wasm-bindgen refused the main module: most often it was built against another
    /// `wasm-bindgen` version than the one this tool links (both are `=` pinned in Cargo.toml).
    #[error("wasm-bindgen on {path}: {message}")]
    Bindgen { path: PathBuf, message: String },
    /// The built site differs from the committed list; one line per difference.
    #[error("the site under {dir} is not what tools/site/files.txt lists:\n{differences}")]
    Check { dir: PathBuf, differences: String },
}

/// The result of a step.
pub type Result<T> = std::result::Result<T, Error>;

/// Attaches the path to an I/O error.
pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
