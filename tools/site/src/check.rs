//! The built site against the committed list of what it holds (`tools/site/files.txt`).
//!
//! The server and the browser depend on the site's file names (leptos asks for
//! `pkg/spotboard.wasm`, the main module imports the split loader by name, the manifest names the
//! parts), and a build step left out leaves a site that serves but does not work: no split and
//! no page but `/` hydrates; no precompression and every visitor downloads the wasm three times
//! larger. The check fails the build instead.

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{Error, Result, io};
use crate::split::MANIFEST;

/// Checks `dir` against the patterns in `list`: every file matches a pattern, every pattern
/// matches a file, the split manifest's parts exist, and with `precompressed` every file has its
/// `.br` and `.gz` (without it, none has).
///
/// Errors: `Io` when the site or the list cannot be read; `Check` with every difference found.
pub fn check_site(dir: &Path, list: &Path, precompressed: bool) -> Result<()> {
    let text = std::fs::read_to_string(list).map_err(io(list))?;
    let patterns: Vec<&str> = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .collect();
    let mut all = BTreeSet::new();
    walk(dir, dir, &mut all)?;
    let (compressed, files): (BTreeSet<String>, BTreeSet<String>) = all
        .into_iter()
        .partition(|f| f.ends_with(".br") || f.ends_with(".gz"));

    let mut differences = Vec::new();
    for file in &files {
        if !patterns.iter().any(|p| matches(p, file)) {
            differences.push(format!("unexpected file {file}"));
        }
    }
    for pattern in &patterns {
        if !files.iter().any(|f| matches(pattern, f)) {
            differences.push(format!("missing {pattern}"));
        }
    }
    for file in &files {
        for extension in ["br", "gz"] {
            let sibling = format!("{file}.{extension}");
            if precompressed && !compressed.contains(&sibling) {
                differences.push(format!("missing {sibling}"));
            }
        }
    }
    if !precompressed {
        differences.extend(compressed.iter().map(|f| format!("unexpected file {f}")));
    }
    differences.extend(manifest_parts_missing(dir, &files)?);

    if differences.is_empty() {
        Ok(())
    } else {
        Err(Error::Check {
            dir: dir.to_path_buf(),
            differences: differences.join("\n"),
        })
    }
}

/// The parts the split manifest names that the site does not hold.
fn manifest_parts_missing(dir: &Path, files: &BTreeSet<String>) -> Result<Vec<String>> {
    let path = dir.join("pkg").join(MANIFEST);
    let Ok(text) = std::fs::read_to_string(&path) else {
        // Reported as a missing file by the list.
        return Ok(Vec::new());
    };
    let manifest: std::collections::BTreeMap<String, Vec<String>> = serde_json::from_str(&text)
        .map_err(|e| Error::Check {
            dir: dir.to_path_buf(),
            differences: format!("{}: not a split manifest: {e}", path.display()),
        })?;
    let mut missing = Vec::new();
    for (route, parts) in &manifest {
        for part in parts {
            let file = format!("pkg/{part}.wasm");
            if !files.contains(&file) {
                missing.push(format!(
                    "the manifest's route {route} needs {file}, which is missing"
                ));
            }
        }
    }
    if manifest.is_empty() {
        missing.push("the split manifest names no lazy route".to_string());
    }
    Ok(missing)
}

/// Every file under `dir`, as a path relative to `root` with `/` separators.
fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            walk(root, &path, out)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            out.insert(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// `*` matches any run of characters but `/`; everything else matches itself.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            let Some(rest) = name.strip_prefix(head) else {
                return false;
            };
            // Try every split of `rest` at which the star's run ends (no `/` inside it).
            (0..=rest.len())
                .filter(|&i| rest.is_char_boundary(i))
                .take_while(|&i| !rest[..i].contains('/'))
                .any(|i| matches(tail, &rest[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_matches_within_one_path_segment() {
        assert!(matches("pkg/split_*.wasm", "pkg/split_pool_page.wasm"));
        assert!(matches("pkg/chunk_*.wasm", "pkg/chunk_12.wasm"));
        assert!(!matches("pkg/*.wasm", "pkg/x/y.wasm"));
        assert!(!matches("pkg/split_*.wasm", "pkg/split_a.js"));
        assert!(matches("favicon.svg", "favicon.svg"));
        assert!(!matches("favicon.svg", "favicon.svgz"));
    }

    fn site(files: &[&str]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "spotboard-site-check-{}-{}",
            std::process::id(),
            files.len()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for f in files {
            let path = dir.join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let body = if f.ends_with(MANIFEST) {
                r#"{"pool": ["chunk_1", "split_pool"]}"#
            } else {
                "x"
            };
            std::fs::write(path, body).unwrap();
        }
        dir
    }

    #[test]
    fn a_step_left_out_is_named() {
        let list = std::env::temp_dir().join(format!("spotboard-site-list-{}", std::process::id()));
        std::fs::write(
            &list,
            "# the site\npkg/spotboard.wasm\npkg/__wasm_split_manifest.json\npkg/chunk_*.wasm\npkg/split_*.wasm\n",
        )
        .unwrap();
        let good = [
            "pkg/spotboard.wasm",
            "pkg/__wasm_split_manifest.json",
            "pkg/chunk_1.wasm",
            "pkg/split_pool.wasm",
        ];
        let dir = site(&good);
        check_site(&dir, &list, false).unwrap();
        // Not precompressed: every file's .br and .gz are named.
        let Err(Error::Check { differences, .. }) = check_site(&dir, &list, true) else {
            panic!("an uncompressed site passed as precompressed");
        };
        assert_eq!(differences.lines().count(), 8, "{differences}");
        assert!(differences.contains("missing pkg/spotboard.wasm.br"));
        std::fs::remove_dir_all(&dir).unwrap();

        // Not split: the parts and the manifest are missing.
        let dir = site(&["pkg/spotboard.wasm", "pkg/extra.txt"]);
        let Err(Error::Check { differences, .. }) = check_site(&dir, &list, false) else {
            panic!("an unsplit site passed");
        };
        assert!(differences.contains("missing pkg/__wasm_split_manifest.json"));
        assert!(differences.contains("missing pkg/split_*.wasm"));
        assert!(differences.contains("unexpected file pkg/extra.txt"));
        std::fs::remove_dir_all(&dir).unwrap();

        // A part the manifest names is not there.
        let dir = site(&good[..3]);
        std::fs::write(dir.join("pkg/split_other.wasm"), "x").unwrap();
        let Err(Error::Check { differences, .. }) = check_site(&dir, &list, false) else {
            panic!("a site without a manifest's part passed");
        };
        assert!(
            differences.contains("needs pkg/split_pool.wasm"),
            "{differences}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(&list).unwrap();
    }
}
