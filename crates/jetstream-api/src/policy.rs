//! The string enums of the JetStream API, spelled as nats-server spells them, with nats-server's
//! decode errors (`can not unmarshal "\"bogus\""`), so an `invalid JSON` reply reads the same.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares a unit enum serialized as one of a fixed set of JSON strings. `aliases` are extra
/// accepted inputs (nats-server accepts `"undefined"` for deliver policy `all`, `""` for persist
/// mode `default`). `error` builds the decode error from the raw JSON text of the bad value.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident = $text:literal $(| $alias:literal)*,)+
        }
        default = $default:ident,
        error = $error:expr
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$variant_meta])* $variant,)+
        }

        impl $name {
            /// The JSON string nats-server writes for this value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// Parses the JSON string form (without quotes).
            pub fn from_name(text: &str) -> Option<Self> {
                match text {
                    $($text $(| $alias)* => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name::$default
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = serde_json::Value::deserialize(deserializer)?;
                value
                    .as_str()
                    .and_then($name::from_name)
                    .ok_or_else(|| {
                        let error: fn(&str) -> String = $error;
                        D::Error::custom(error(&value.to_string()))
                    })
            }
        }
    };
}

/// Go's `fmt.Errorf("can not unmarshal %q", data)` where `data` is the raw JSON of the value.
fn can_not_unmarshal(raw_json: &str) -> String {
    format!("can not unmarshal {}", go_quote(raw_json))
}

/// Go's name for the kind of a raw JSON value in "cannot unmarshal <kind>" errors.
fn json_kind(raw_json: &str) -> &'static str {
    match raw_json.as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b't') | Some(b'f') => "bool",
        Some(b'n') => "null",
        Some(b'"') => "string",
        _ => "number",
    }
}

/// Go's `%q` for the ASCII-and-quotes strings that show up here.
pub(crate) fn go_quote(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

string_enum! {
    /// How a stream decides a message may be removed.
    pub enum RetentionPolicy {
        Limits = "limits",
        Interest = "interest",
        WorkQueue = "workqueue",
    }
    default = Limits,
    error = can_not_unmarshal
}

string_enum! {
    /// What a stream does when a limit is hit: drop the oldest messages or refuse new ones.
    pub enum DiscardPolicy {
        Old = "old",
        New = "new",
    }
    default = Old,
    error = can_not_unmarshal
}

string_enum! {
    pub enum StorageType {
        File = "file",
        Memory = "memory",
    }
    default = File,
    error = can_not_unmarshal
}

string_enum! {
    /// Block compression of a file-stored stream.
    pub enum Compression {
        None = "none",
        S2 = "s2",
    }
    default = None,
    error = |raw| if raw.starts_with('"') {
        "unknown compression algorithm".to_string()
    } else {
        // nats-server decodes into a string first, so a non-string fails there.
        format!("json: cannot unmarshal {} into Go value of type string", json_kind(raw))
    }
}

string_enum! {
    /// `persist_mode`: `default` syncs per the server's policy before acking; `async` may ack first.
    pub enum PersistMode {
        Default = "default" | "",
        Async = "async",
    }
    default = Default,
    error = can_not_unmarshal
}

string_enum! {
    /// Where a new consumer starts reading.
    pub enum DeliverPolicy {
        All = "all" | "undefined",
        Last = "last",
        New = "new",
        ByStartSequence = "by_start_sequence",
        ByStartTime = "by_start_time",
        LastPerSubject = "last_per_subject",
    }
    default = All,
    error = can_not_unmarshal
}

string_enum! {
    /// How a consumer expects acknowledgements. `flow_control` is nats-server 2.14+'s
    /// ack-by-flow-control for sourcing consumers.
    pub enum AckPolicy {
        None = "none",
        All = "all",
        Explicit = "explicit",
        FlowControl = "flow_control",
    }
    default = None,
    error = can_not_unmarshal
}

string_enum! {
    /// Whether a consumer replays at full speed or at the original publish pace.
    pub enum ReplayPolicy {
        Instant = "instant",
        Original = "original",
    }
    default = Instant,
    error = can_not_unmarshal
}

string_enum! {
    /// Priority groups policy of a pull consumer.
    pub enum PriorityPolicy {
        None = "none",
        Overflow = "overflow",
        PinnedClient = "pinned_client",
        Prioritized = "prioritized",
    }
    default = None,
    error = |raw| format!("unknown priority policy: {raw}")
}

string_enum! {
    /// `action` of a consumer create request: create only, update only, or either (the empty
    /// string, which clients send for the old create-or-update behaviour).
    pub enum ConsumerAction {
        CreateOrUpdate = "",
        Create = "create",
        Update = "update",
    }
    default = CreateOrUpdate,
    error = |raw| format!("unknown consumer action: {raw}")
}

impl RetentionPolicy {
    /// Go's `String()` (used in some error texts and advisories): `Limits`, `Interest`, `WorkQueue`.
    pub const fn title(self) -> &'static str {
        match self {
            RetentionPolicy::Limits => "Limits",
            RetentionPolicy::Interest => "Interest",
            RetentionPolicy::WorkQueue => "WorkQueue",
        }
    }
}

impl StorageType {
    /// Go's `String()`: `File`, `Memory`.
    pub const fn title(self) -> &'static str {
        match self {
            StorageType::File => "File",
            StorageType::Memory => "Memory",
        }
    }
}

pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for policy in [
            DeliverPolicy::All,
            DeliverPolicy::Last,
            DeliverPolicy::New,
            DeliverPolicy::ByStartSequence,
            DeliverPolicy::ByStartTime,
            DeliverPolicy::LastPerSubject,
        ] {
            let json = serde_json::to_string(&policy).unwrap();
            assert_eq!(json, format!("\"{}\"", policy.as_str()));
            assert_eq!(
                serde_json::from_str::<DeliverPolicy>(&json).unwrap(),
                policy
            );
        }
        assert_eq!(
            serde_json::from_str::<DeliverPolicy>("\"undefined\"").unwrap(),
            DeliverPolicy::All
        );
        assert_eq!(
            serde_json::from_str::<PersistMode>("\"\"").unwrap(),
            PersistMode::Default
        );
    }

    #[test]
    fn go_error_texts() {
        let error = serde_json::from_value::<RetentionPolicy>(serde_json::json!("bogus"))
            .unwrap_err()
            .to_string();
        assert_eq!(error, r#"can not unmarshal "\"bogus\"""#);
        let error = serde_json::from_value::<Compression>(serde_json::json!("zstd"))
            .unwrap_err()
            .to_string();
        assert_eq!(error, "unknown compression algorithm");
        let error = serde_json::from_value::<StorageType>(serde_json::json!(1))
            .unwrap_err()
            .to_string();
        assert_eq!(error, r#"can not unmarshal "1""#);
    }
}
