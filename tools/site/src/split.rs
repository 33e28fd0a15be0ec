//! Cutting the wasm at its lazy routes, as `cargo leptos build --split` does.
//!
//! Leptos' `#[lazy_route]` marks split points in the wasm; the splitter moves each route's code
//! into a part of its own (`{route}_{hash}.wasm`, shared code in `chunk_*.wasm`), leaves the rest
//! in the main module, and writes a loader module (`__wasm_split.*.js`) that the main module
//! imports to fetch a part on first use. The manifest maps each route to the parts it needs, so
//! the server can tell the browser to preload them (leptos' `HydrationScripts`).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result, io};

/// The loader's module name, as the main module imports it. cargo-leptos writes this name (the
/// underscores stand where its `hash-files` option puts a hash; spotboard does not hash).
const LINK_NAME: &str = "./__wasm_split.______________________.js";

/// The manifest leptos reads, beside the parts.
pub const MANIFEST: &str = "__wasm_split_manifest.json";

/// Splits `input` into `pkg_dir` and writes the main module to `main_out`; returns the parts
/// written (wasm files under `pkg_dir`).
///
/// Errors: `Io` when a file cannot be read or written; `Split` when the splitter refuses the
/// module.
pub fn split(
    input: &Path,
    pkg_dir: &Path,
    main_out: &Path,
    output_name: &str,
) -> Result<Vec<PathBuf>> {
    let wasm = std::fs::read(input).map_err(io(input))?;
    std::fs::create_dir_all(pkg_dir).map_err(io(pkg_dir))?;
    // The parts import the main module's JS (wasm-bindgen's output) by this path.
    let main_module = format!("./{output_name}.js");
    let split = wasm_split_cli_support::transform({
        let mut opts = wasm_split_cli_support::Options::new(&wasm);
        opts.output_dir = pkg_dir;
        opts.main_out_path = main_out;
        opts.main_module = &main_module;
        opts.link_name = LINK_NAME;
        opts
    })
    .map_err(|e| Error::Split {
        path: input.to_path_buf(),
        message: format!("{e:#}"),
    })?;
    let manifest = pkg_dir.join(MANIFEST);
    let text = serde_json::to_string_pretty(&sorted(split.prefetch_map))
        .expect("a map of strings serializes");
    std::fs::write(&manifest, text).map_err(io(&manifest))?;
    Ok(split.split_modules)
}

/// The manifest with its keys in order, so that two builds of the same code write the same file.
fn sorted(
    map: std::collections::HashMap<String, Vec<String>>,
) -> std::collections::BTreeMap<String, Vec<String>> {
    map.into_iter().collect()
}
