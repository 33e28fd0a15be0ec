//! The built site the pages load (wasm, JS, CSS under `{site_root}/pkg`), checked at start.
//!
//! Leptos names the wasm file it asks for at compile time: `{output_name}.wasm` when
//! `LEPTOS_OUTPUT_NAME` is set (`.cargo/config.toml` sets it for every build of the workspace),
//! `{output_name}_bg.wasm` when it is not (a build from outside the workspace, or with the
//! variable removed). The site build writes only the first, so such a binary's pages would never
//! hydrate, with nothing on the page to say why. The server says it at start instead.

use std::path::{Path, PathBuf};

/// The wasm file this binary's pages will ask for, under `site_root`.
pub fn wasm_path(site_root: &Path, pkg_dir: &str, output_name: &str) -> PathBuf {
    let suffix = if option_env!("LEPTOS_OUTPUT_NAME").is_some() {
        ""
    } else {
        "_bg"
    };
    site_root
        .join(pkg_dir)
        .join(format!("{output_name}{suffix}.wasm"))
}

/// The manifest of the wasm's lazily loaded parts under `site_root`, which the site build's split
/// step (`spotboard-site split`, `./tasks.sh serve`/`release`) writes beside the loader the wasm
/// imports.
pub fn split_manifest_path(site_root: &Path, pkg_dir: &str) -> PathBuf {
    site_root.join(pkg_dir).join("__wasm_split_manifest.json")
}

/// `None` when the wasm the pages ask for exists and was split; otherwise what to tell the
/// person starting the server (the dashboard's API and streams still work without it).
///
/// The pages other than `/` are lazy routes (`app::pages::lazy`): a wasm built without
/// `--split` imports a loader that is not there, and no page hydrates.
pub fn missing_wasm(site_root: &Path, pkg_dir: &str, output_name: &str) -> Option<String> {
    let path = wasm_path(site_root, pkg_dir, output_name);
    if path.is_file() {
        let manifest = split_manifest_path(site_root, pkg_dir);
        return (!manifest.is_file()).then(|| {
            format!(
                "the pages will not become interactive: {} does not exist, so the site was built \
                 without its split step; build it with `./tasks.sh release` (or `./tasks.sh serve`)",
                manifest.display()
            )
        });
    }
    let how = if option_env!("LEPTOS_OUTPUT_NAME").is_some() {
        "build the site with `./tasks.sh release` (`./tasks.sh serve` does too), or point --site-root \
         at a built one"
    } else {
        "this binary was built without LEPTOS_OUTPUT_NAME (set by the workspace's \
         .cargo/config.toml), which makes the pages ask for `*_bg.wasm`; build it from the \
         workspace with `./tasks.sh release`"
    };
    Some(format!(
        "the pages will not become interactive: {} does not exist; {how}",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_without_the_wasm_or_its_split_is_reported_with_the_path_and_a_split_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let msg = missing_wasm(dir.path(), "pkg", "spotboard").expect("nothing is built here");
        let expected = wasm_path(dir.path(), "pkg", "spotboard");
        assert!(msg.contains(&expected.display().to_string()), "{msg}");
        std::fs::create_dir_all(expected.parent().unwrap()).unwrap();
        std::fs::write(&expected, b"\0asm").unwrap();
        let msg = missing_wasm(dir.path(), "pkg", "spotboard").expect("built without the split");
        assert!(msg.contains("split step"), "{msg}");
        std::fs::write(split_manifest_path(dir.path(), "pkg"), b"{}").unwrap();
        assert_eq!(missing_wasm(dir.path(), "pkg", "spotboard"), None);
    }
}
