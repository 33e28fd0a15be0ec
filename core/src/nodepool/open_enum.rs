//! String enums that stay readable when a cluster sends a value this build does not know.
//!
//! CoreWeave adds reasons and classes over time; a dashboard that refused an object because
//! of one new word would hide exactly the pool a user needs to look at. Every enum made by
//! [`open_enum!`] keeps an unknown value verbatim in `Other(String)` and serializes it back
//! unchanged.

/// Declares a string enum with known variants plus `Other(String)`.
///
/// The generated type serializes as the plain string, implements `From<&str>`, `as_str()`,
/// `is_known()` and `known()` (the list of documented values, for forms and schemas), and
/// under `kube` a `schemars::JsonSchema` of `type: string` listing the known values.
#[macro_export]
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $name:ident, default = $default:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this build does not know, kept verbatim.
            Other(String),
        }

        impl $name {
            /// The wire form of the value.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )+
                    Self::Other(s) => s.as_str(),
                }
            }
            /// False for a value this build does not know.
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Other(_))
            }
            /// The documented values, in documentation order.
            pub fn known() -> &'static [&'static str] {
                &[$( $text ),+]
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::$default
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $( $text => Self::$variant, )+
                    other => Self::Other(other.to_string()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                Ok(Self::from(s.as_ref()))
            }
        }

        #[cfg(feature = "kube")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "enum": [$( $text ),+] })
            }
        }
    };
}
