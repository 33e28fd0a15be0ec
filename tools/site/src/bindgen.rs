//! wasm-bindgen's JS glue for the main module, as `wasm-bindgen --target web --keep-lld-exports
//! --no-demangle --no-typescript --out-name NAME --out-dir DIR` writes it, from the CLI's own
//! library (`wasm-bindgen-cli-support`).
//!
//! Why a library and not the CLI: the CLI must be exactly the `wasm-bindgen` version in
//! `Cargo.lock`, and `cargo install wasm-bindgen-cli` compiled its test runner's HTTP server and
//! client as well: 530 s on two busy cores in a first run from nothing. Linked
//! here, the version is the lock's (`=0.2.130` in Cargo.toml, beside the `wasm-bindgen` crate the
//! wasm links), `--locked` holds, and only the code that writes the glue is compiled.

use std::path::Path;

use crate::error::{Error, Result};

/// Writes `{out_name}.js` and `{out_name}_bg.wasm` for `input` (the split main module) into
/// `out_dir`, with the options the CLI gets from the flags above; every other option at the
/// CLI's default (where the library's default differs, as `omit_default_module_path` does, the
/// CLI's is set here).
///
/// Errors: `Bindgen` when the module has no wasm-bindgen sections of this version (built with
/// another `wasm-bindgen` crate) or cannot be read or written.
pub fn bindgen(input: &Path, out_dir: &Path, out_name: &str) -> Result<()> {
    let mut b = wasm_bindgen_cli_support::Bindgen::new();
    b.web(true).map_err(failed(input))?;
    b.input_path(input)
        .out_name(out_name)
        .demangle(false)
        .keep_lld_exports(true)
        .typescript(false)
        .debug(false)
        .keep_debug(false)
        .remove_name_section(false)
        .remove_producers_section(false)
        .omit_imports(false)
        .omit_default_module_path(false)
        .split_linked_modules(false);
    // Deprecated (the library reads it from the module's target features), but the CLI still
    // calls it with its flag's default, which overrides WASM_BINDGEN_EXTERNREF in the
    // environment: the same here, so both write the same glue.
    #[allow(deprecated)]
    b.reference_types(false);
    b.generate(out_dir).map_err(failed(input))
}

/// The library's error (anyhow's, which it does not re-export) with its causes, one line.
fn failed<E: std::fmt::Display>(input: &Path) -> impl FnOnce(E) -> Error {
    let path = input.to_path_buf();
    move |e| Error::Bindgen {
        path,
        message: format!("{e:#}"),
    }
}
