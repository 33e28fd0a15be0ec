//! `spotboard-site`: the two steps of building spotboard's site that are neither cargo nor a tool
//! from a package registry. `tasks.sh` (`build_site`) runs the whole build:
//!
//! 1. `cargo build -p app --lib --target wasm32-unknown-unknown --features hydrate` (with
//!    `-C link-args=--emit-relocs`, `.cargo/config.toml`), the wasm of every page;
//! 2. `spotboard-site split`: the lazy routes (`app::pages::lazy`) cut out of that wasm into parts
//!    of their own, a loader module, and the manifest the server reads to preload them;
//! 3. `spotboard-site bindgen`: wasm-bindgen's glue (`--target web --keep-lld-exports
//!    --no-demangle`, from wasm-bindgen's own library at the lock's version), then, for a release,
//!    `wasm-opt -Oz` (npm's binaryen) on every wasm file and esbuild's `--minify` on the JS;
//! 4. the CSS through lightningcss (npm), `public/` copied in;
//! 5. `spotboard-site precompress`: a `.br` and a `.gz` beside each file, which the server sends
//!    by `Accept-Encoding`;
//! 6. `spotboard-site check`: the built site against the committed list of what it holds
//!    (`tools/site/files.txt`), so that a step left out fails the build.
//!
//! These were cargo-leptos 0.3.10's `build --release --precompress --split`; the same splitter
//! library is linked here, with the same names, so the server and the browser see the same site.
//! cargo-leptos took 11 to 24.5 minutes to compile on two cores (it vendors OpenSSL, swc and
//! lightningcss to drive a build); this tool compiles in about a minute.
//!
//! Layout: `main.rs` (the command line), `split.rs`, `bindgen.rs`, `precompress.rs`, `check.rs`, `error.rs`.

mod bindgen;
mod check;
mod error;
mod precompress;
mod split;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Steps of spotboard's site build that cargo does not do (see the crate's doc).
#[derive(Debug, Parser)]
#[command(name = "spotboard-site", version)]
struct Cli {
    #[command(subcommand)]
    step: Step,
}

#[derive(Debug, Subcommand)]
enum Step {
    /// Split the wasm at its lazy routes: writes the parts, the loader module and
    /// `__wasm_split_manifest.json` into PKG_DIR, and the main module to MAIN_OUT (for
    /// wasm-bindgen). Prints the path of each part written, one a line.
    Split {
        /// The wasm cargo built (linked with `--emit-relocs`).
        input: PathBuf,
        /// The site's package directory (`target/site/pkg`).
        pkg_dir: PathBuf,
        /// Where the main module goes, for wasm-bindgen to read.
        main_out: PathBuf,
        /// The site's output name: the parts import `./{output_name}.js`.
        #[arg(long, default_value = "spotboard")]
        output_name: String,
    },
    /// wasm-bindgen's JS glue for the main module (`--target web --keep-lld-exports
    /// --no-demangle --no-typescript`): writes OUT_DIR/{out_name}.js and {out_name}_bg.wasm.
    Bindgen {
        /// The main module (`split`'s MAIN_OUT).
        input: PathBuf,
        /// The site's package directory (`target/site/pkg`).
        out_dir: PathBuf,
        /// The name of the JS and wasm files written.
        #[arg(long, default_value = "spotboard")]
        out_name: String,
    },
    /// Write FILE.br (brotli, quality 11) and FILE.gz (gzip, level 9) beside every file under DIR.
    Precompress {
        /// The site root (`target/site`).
        dir: PathBuf,
    },
    /// Check a built site against the list of files it must hold (one pattern a line, `#`
    /// comments; `*` matches any run of characters but `/`). Exit 1 with each difference.
    Check {
        /// The site root (`target/site`).
        dir: PathBuf,
        /// The list (`tools/site/files.txt`).
        list: PathBuf,
        /// The site was precompressed: every file must have its `.br` and `.gz`.
        #[arg(long)]
        precompressed: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.step {
        Step::Split {
            input,
            pkg_dir,
            main_out,
            output_name,
        } => split::split(&input, &pkg_dir, &main_out, &output_name).map(|parts| {
            for part in parts {
                println!("{}", part.display());
            }
        }),
        Step::Bindgen {
            input,
            out_dir,
            out_name,
        } => bindgen::bindgen(&input, &out_dir, &out_name),
        Step::Precompress { dir } => precompress::precompress_dir(&dir).map(|n| {
            eprintln!("precompressed {n} files under {}", dir.display());
        }),
        Step::Check {
            dir,
            list,
            precompressed,
        } => check::check_site(&dir, &list, precompressed),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spotboard-site: {e}");
            ExitCode::FAILURE
        }
    }
}
