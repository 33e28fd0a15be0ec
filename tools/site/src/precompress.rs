//! Brotli and gzip files beside each file of the site, written once at build time so the server
//! sends them by `Accept-Encoding` instead of compressing every response (the wasm is about a
//! third of its size in brotli).

use std::io::Write;
use std::path::Path;

use crate::error::{Result, io};

/// Brotli's highest quality: built once, downloaded by every visitor.
const BROTLI_QUALITY: i32 = 11;
/// Brotli's window, as log2 of its size in bytes (its default).
const BROTLI_WINDOW: i32 = 22;

/// Writes `F.br` and `F.gz` beside every file `F` under `dir` (recursively) that is not itself
/// one of those; returns how many files were compressed.
///
/// Errors: `Io` when a file or directory cannot be read or written.
pub fn precompress_dir(dir: &Path) -> Result<usize> {
    let mut count = 0;
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .collect::<std::io::Result<_>>()
        .map_err(io(dir))?;
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            count += precompress_dir(&path)?;
            continue;
        }
        if matches!(path.extension().and_then(|e| e.to_str()), Some("br" | "gz")) {
            continue;
        }
        let data = std::fs::read(&path).map_err(io(&path))?;
        write_beside(&path, "gz", &gzip(&data))?;
        write_beside(&path, "br", &brotli(&data))?;
        count += 1;
    }
    Ok(count)
}

fn write_beside(path: &Path, extension: &str, data: &[u8]) -> Result<()> {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(extension);
    std::fs::write(&name, data).map_err(io(name))
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder
        .write_all(data)
        .expect("writing to a Vec cannot fail");
    encoder.finish().expect("writing to a Vec cannot fail")
}

fn brotli(data: &[u8]) -> Vec<u8> {
    let params = brotli::enc::BrotliEncoderParams {
        quality: BROTLI_QUALITY,
        lgwin: BROTLI_WINDOW,
        ..Default::default()
    };
    let mut out = Vec::new();
    brotli::BrotliCompress(&mut &data[..], &mut out, &params)
        .expect("writing to a Vec cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn each_file_gets_a_brotli_and_a_gzip_that_decompress_to_it() {
        let dir = std::env::temp_dir().join(format!("spotboard-site-pc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        let text = "spotboard ".repeat(1000);
        std::fs::write(dir.join("pkg/a.js"), &text).unwrap();
        std::fs::write(dir.join("favicon.svg"), "<svg/>").unwrap();

        assert_eq!(precompress_dir(&dir).unwrap(), 2);
        // A second run compresses the same two files, not their .br and .gz.
        assert_eq!(precompress_dir(&dir).unwrap(), 2);

        let mut unzipped = String::new();
        flate2::read::GzDecoder::new(&std::fs::read(dir.join("pkg/a.js.gz")).unwrap()[..])
            .read_to_string(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, text);
        let mut unbrotli = Vec::new();
        brotli::BrotliDecompress(
            &mut &std::fs::read(dir.join("pkg/a.js.br")).unwrap()[..],
            &mut unbrotli,
        )
        .unwrap();
        assert_eq!(unbrotli, text.as_bytes());
        assert!(std::fs::metadata(dir.join("pkg/a.js.br")).unwrap().len() < 200);
        assert!(dir.join("favicon.svg.gz").is_file() && dir.join("favicon.svg.br").is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
