//! Naming conventions of the Key/Value and Object stores (ADR-8, ADR-20), which clients build on
//! plain streams: the server only needs them to recognise such streams (e.g. in the CLI or
//! monitoring), never to behave differently.

/// Stream name prefix of a KV bucket: bucket `config` lives in stream `KV_config`.
pub const KV_STREAM_PREFIX: &str = "KV_";
/// Subject prefix of KV keys: `$KV.<bucket>.<key>`.
pub const KV_SUBJECT_PREFIX: &str = "$KV.";
/// Stream name prefix of an object store bucket.
pub const OBJECT_STREAM_PREFIX: &str = "OBJ_";
/// Subject prefix of object store chunks (`$O.<bucket>.C.<nuid>`) and metadata
/// (`$O.<bucket>.M.<encoded name>`).
pub const OBJECT_SUBJECT_PREFIX: &str = "$O.";

/// `KV-Operation` header values (absent means a put).
pub const KV_OPERATION_DELETE: &str = "DEL";
pub const KV_OPERATION_PURGE: &str = "PURGE";

pub fn kv_stream_name(bucket: &str) -> String {
    format!("{KV_STREAM_PREFIX}{bucket}")
}

/// The bucket of a KV stream name, if it is one.
pub fn kv_bucket_of_stream(stream: &str) -> Option<&str> {
    stream
        .strip_prefix(KV_STREAM_PREFIX)
        .filter(|bucket| is_valid_bucket_name(bucket))
}

pub fn kv_key_subject(bucket: &str, key: &str) -> String {
    format!("{KV_SUBJECT_PREFIX}{bucket}.{key}")
}

/// `$KV.<bucket>.>`, the subject a KV stream captures.
pub fn kv_stream_subject(bucket: &str) -> String {
    format!("{KV_SUBJECT_PREFIX}{bucket}.>")
}

pub fn object_stream_name(bucket: &str) -> String {
    format!("{OBJECT_STREAM_PREFIX}{bucket}")
}

/// The bucket of an object store stream name, if it is one.
pub fn object_bucket_of_stream(stream: &str) -> Option<&str> {
    stream
        .strip_prefix(OBJECT_STREAM_PREFIX)
        .filter(|bucket| is_valid_bucket_name(bucket))
}

/// Bucket names: `[a-zA-Z0-9_-]+`.
pub fn is_valid_bucket_name(bucket: &str) -> bool {
    !bucket.is_empty()
        && bucket
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// KV keys: `[-/_=.a-zA-Z0-9]+`, not starting or ending with `.`.
pub fn is_valid_key(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with('.')
        && !key.ends_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'/' | b'_' | b'=' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(kv_stream_name("config"), "KV_config");
        assert_eq!(kv_bucket_of_stream("KV_config"), Some("config"));
        assert_eq!(kv_bucket_of_stream("KV_"), None);
        assert_eq!(kv_bucket_of_stream("ORDERS"), None);
        assert_eq!(kv_key_subject("config", "a.b"), "$KV.config.a.b");
        assert_eq!(kv_stream_subject("config"), "$KV.config.>");
        assert_eq!(object_bucket_of_stream("OBJ_files"), Some("files"));
        assert!(is_valid_key("a/b=c.d-e_f"));
        for bad in ["", ".a", "a.", "a b", "a*", "a>"] {
            assert!(!is_valid_key(bad), "{bad}");
        }
        assert!(!is_valid_bucket_name("a.b"));
    }
}
