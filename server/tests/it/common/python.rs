//! Python libraries nobody here wrote, as independent judges: `prometheus_client` reads the
//! scrape, `lifelines` fits the survival curves. The interpreter is the project's virtualenv
//! (`.tools/py`, `SPOTBOARD_TEST_PYTHON`), where `./tasks.sh test` installs them.

use std::io::Write as _;
use std::process::{Command, Stdio};

/// Runs `script` with `input` on its standard input and returns its standard output.
///
/// Panics, naming `library` and the script's standard error, when `SPOTBOARD_TEST_PYTHON` is
/// not set or the script fails (an exception, the library missing).
pub fn run(library: &str, script: &str, input: &[u8]) -> Vec<u8> {
    let python = std::env::var("SPOTBOARD_TEST_PYTHON").unwrap_or_else(|_| {
        panic!(
            "SPOTBOARD_TEST_PYTHON is not set: run the tests through ./tasks.sh test, which \
             installs {library} into .tools/py"
        )
    });
    let mut child = Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{library} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
