//! Which protocol a block is written in, and which the caller asks for.

use std::fmt;
use std::str::FromStr;

/// Which protocol a block is written in.
///
/// With feature `serde`: `"tam"` or `"action"` ([`Protocol::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Protocol {
    /// TAM (`<|[REQUEST_TOOL]|>` … `<|[END_TOOL]|>`, or the VCP dialect).
    Tam,
    /// ACTION XML (`<ACTION>` … `</ACTION>`).
    Action,
}

impl Protocol {
    /// Both protocols, in the order of [`Protocol::as_str`]'s names.
    pub const ALL: [Protocol; 2] = [Protocol::Tam, Protocol::Action];

    /// `"tam"` or `"action"` (what [`FromStr`] reads back).
    pub const fn as_str(self) -> &'static str {
        match self {
            Protocol::Tam => "tam",
            Protocol::Action => "action",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Protocol {
    type Err = UnknownProtocol;

    /// `tam` or `action`, ASCII case-insensitive (`auto` is a [`ProtocolChoice`], not a
    /// protocol).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim();
        Protocol::ALL
            .into_iter()
            .find(|p| name.eq_ignore_ascii_case(p.as_str()))
            .ok_or_else(|| UnknownProtocol(s.to_owned()))
    }
}

/// Looking for one protocol only.
impl From<Protocol> for ProtocolChoice {
    fn from(protocol: Protocol) -> Self {
        match protocol {
            Protocol::Tam => ProtocolChoice::Tam,
            Protocol::Action => ProtocolChoice::Action,
        }
    }
}

/// Which tool-call protocol(s) a [`Decoder`](crate::Decoder) looks for: the one name for that
/// choice in the workspace (tool-dispatch's agent and the CLI use it too).
///
/// With feature `serde`: its name, `"tam"`, `"action"` or `"auto"`; deserializing reads
/// what [`FromStr`] reads (any ASCII case, `both` for `auto`), like the CLI's flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum ProtocolChoice {
    /// TAM blocks only (`<|[REQUEST_TOOL]|>` … `<|[END_TOOL]|>`, or the VCP dialect);
    /// `<ACTION>` is prose.
    Tam,
    /// ACTION XML blocks only; TAM markers are prose.
    Action,
    /// Both, in one stream, in any order (one scanner for both: see the crate docs, "Both
    /// protocols in one stream"). The default.
    #[default]
    Auto,
}

impl ProtocolChoice {
    /// Every choice, in the order of [`ProtocolChoice::as_str`]'s names.
    pub const ALL: [ProtocolChoice; 3] = [
        ProtocolChoice::Tam,
        ProtocolChoice::Action,
        ProtocolChoice::Auto,
    ];

    /// `"tam"`, `"action"` or `"auto"` (what [`FromStr`] reads back).
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolChoice::Tam => "tam",
            ProtocolChoice::Action => "action",
            ProtocolChoice::Auto => "auto",
        }
    }
}

impl fmt::Display for ProtocolChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a protocol: not `tam` or `action` for a [`Protocol`], not `tam`,
/// `action`, `auto` or `both` for a [`ProtocolChoice`] (ASCII case-insensitive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProtocol(pub String);

impl fmt::Display for UnknownProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown protocol {:?}: expected tam or action (or auto, to read both)",
            self.0
        )
    }
}

impl std::error::Error for UnknownProtocol {}

impl FromStr for ProtocolChoice {
    type Err = UnknownProtocol;

    /// `tam`, `action` or `auto` (`both` is accepted for `auto`), ASCII case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim();
        ProtocolChoice::ALL
            .into_iter()
            .find(|p| name.eq_ignore_ascii_case(p.as_str()))
            .or_else(|| {
                name.eq_ignore_ascii_case("both")
                    .then_some(ProtocolChoice::Auto)
            })
            .ok_or_else(|| UnknownProtocol(s.to_owned()))
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for ProtocolChoice {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = ProtocolChoice;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a protocol choice: tam, action or auto")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<ProtocolChoice, E> {
                name.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Name)
    }
}
