//! The JSON encoding of every server function, decoded from text.
//!
//! Leptos' own `Json` encoding decodes a response with `serde_json::from_slice`, while a
//! resource hydrated from the page and the live stream decode with `serde_json::from_str`.
//! Each reader is a separate copy of every deserializer in the wasm, so the snapshot's row
//! types were compiled twice; with this encoding the browser has one reader (docs/performance.md,
//! "What dominates", P5: the wasm's size, measured 2026-11-26).

use leptos::server_fn::{Bytes, ContentType, Decodes, Encodes, Format, FormatType, codec::Post};
use serde::{Serialize, de::DeserializeOwned};

/// JSON in the body, written with `serde_json::to_vec`, read back with `serde_json::from_str`
/// (a body that is not UTF-8 is a decode error, as it is for `from_slice`).
pub struct JsonText;

impl ContentType for JsonText {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for JsonText {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: Serialize> Encodes<T> for JsonText {
    type Error = serde_json::Error;

    fn encode(output: &T) -> Result<Bytes, Self::Error> {
        serde_json::to_vec(output).map(Bytes::from)
    }
}

impl<T: DeserializeOwned> Decodes<T> for JsonText {
    type Error = serde_json::Error;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(|_| {
            <serde_json::Error as serde::de::Error>::custom("the body is not UTF-8")
        })?;
        serde_json::from_str(text)
    }
}

/// Arguments and answers as JSON in the body of a `POST`.
pub type Json = Post<JsonText>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scope;

    #[test]
    fn round_trips_and_refuses_what_is_not_json_text() {
        let scope = Scope::pools();
        let bytes = <JsonText as Encodes<Scope>>::encode(&scope).unwrap();
        let back: Scope = <JsonText as Decodes<Scope>>::decode(bytes).unwrap();
        assert_eq!(back, scope);
        let bad = <JsonText as Decodes<Scope>>::decode(Bytes::from_static(b"\xff\xfe{}"));
        assert!(bad.unwrap_err().to_string().contains("UTF-8"));
        assert!(<JsonText as Decodes<Scope>>::decode(Bytes::from_static(b"{")).is_err());
    }
}
