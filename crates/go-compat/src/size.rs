//! Byte sizes as nats-server's config reads them: an integer with a suffix in the config
//! lexer ([`suffix_multiplier`]: `1k` is 1000, `1kb`/`1ki`/`1kib` 1024, up to exa, any case),
//! and `getStorageSize`'s string form for JetStream's `max_memory_store`/`max_file_store`
//! ([`storage_size`]: `"1G"` with `K`, `M`, `G`, `T`, powers of 1024, upper case only).

/// The factor a config integer's suffix stands for; `None` when it is not a size suffix (then
/// the token is a string such as `10s`).
pub fn suffix_multiplier(suffix: &str) -> Option<i64> {
    Some(match suffix.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1000,
        "kb" | "ki" | "kib" => 1 << 10,
        "m" => 1_000_000,
        "mb" | "mi" | "mib" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" | "gi" | "gib" => 1 << 30,
        "t" => 1_000_000_000_000,
        "tb" | "ti" | "tib" => 1 << 40,
        "p" => 1_000_000_000_000_000,
        "pb" | "pi" | "pib" => 1 << 50,
        "e" => 1_000_000_000_000_000_000,
        "eb" | "ei" | "eib" => 1 << 60,
        _ => return None,
    })
}

/// `getStorageSize` of a string: digits and one of `K`, `M`, `G`, `T`; empty is 0. The error
/// text is Go's (`strconv.ParseInt: parsing "x": invalid syntax`, or the suffix rule).
pub fn storage_size(text: &str) -> Result<i64, String> {
    let Some(suffix) = text.chars().last() else {
        return Ok(0);
    };
    let number_text = &text[..text.len() - suffix.len_utf8()];
    let number: i64 = number_text.parse().map_err(|_| {
        let reason = if number_text.is_empty()
            || !number_text
                .trim_start_matches(['+', '-'])
                .bytes()
                .all(|byte| byte.is_ascii_digit())
            || number_text.trim_start_matches(['+', '-']).is_empty()
        {
            "invalid syntax"
        } else {
            "value out of range"
        };
        format!("strconv.ParseInt: parsing {number_text:?}: {reason}")
    })?;
    let shift = match suffix {
        'K' => 10,
        'M' => 20,
        'G' => 30,
        'T' => 40,
        _ => return Err("sizes defined as strings must end in K, M, G, T".to_string()),
    };
    // Go multiplies with wrap-around.
    Ok(number.wrapping_mul(1 << shift))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_suffixes() {
        assert_eq!(suffix_multiplier(""), Some(1));
        assert_eq!(suffix_multiplier("k"), Some(1000));
        assert_eq!(suffix_multiplier("KB"), Some(1024));
        assert_eq!(suffix_multiplier("Mi"), Some(1 << 20));
        assert_eq!(suffix_multiplier("gib"), Some(1 << 30));
        assert_eq!(suffix_multiplier("T"), Some(1_000_000_000_000));
        assert_eq!(suffix_multiplier("s"), None);
        assert_eq!(suffix_multiplier("ms"), None);
    }

    #[test]
    fn storage_sizes_as_nats_server() {
        assert_eq!(storage_size("1G"), Ok(1 << 30));
        assert_eq!(storage_size("512M"), Ok(512 << 20));
        assert_eq!(storage_size("10K"), Ok(10 << 10));
        assert_eq!(storage_size("2T"), Ok(2 << 40));
        assert_eq!(storage_size(""), Ok(0));
        assert_eq!(
            storage_size("512MB"),
            Err("strconv.ParseInt: parsing \"512M\": invalid syntax".to_string())
        );
        assert_eq!(
            storage_size("1g"),
            Err("sizes defined as strings must end in K, M, G, T".to_string())
        );
        assert_eq!(
            storage_size("G"),
            Err("strconv.ParseInt: parsing \"\": invalid syntax".to_string())
        );
    }
}
