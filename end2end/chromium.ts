// Debian's Chromium (browsers cannot be downloaded here: shared/TOOLCHAIN.md), with the
// flags that keep it off the network. Shared by the config and specs that add flags.
export const executablePath = "/usr/bin/chromium";
export const chromiumArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];
